"""Regenerate eebench/specs/checkpoints/text-games/*.yaml from the text-game logs and maps in ../shared/data/text-games.

    python scripts/textgames_checkpoints.py [DATA_DIR] [OUT_DIR]

Reproducible: the same data gives the same bytes (everything sorted, no time stamps). What each file holds:
- textworld.yaml: per TextWorld game an episode played (textworld-maps/episode_to_map.csv for BALROG's Llama runs;
  the AgentCC runs' own maps), the rooms of the game's map (`infos` entries of type `r`) as `room:<name>`, seen when
  the room's `-= Name =-` header is in an observation; treasure_hunter's treasure (the walkthrough's last `take X`)
  seen and taken. Then one set per task for every run of it (`textworld/<task>/*`): the header regex as the state,
  the coin seen and taken (coin_collector), the rooms seen in the logs and the recipe read (the_cooking_game, which
  has no map here).
- alfworld.yaml: per ALFWorld scene (the floor plan number ending a game's name, `...-Desk-308/trial_...`), the
  receptacles its episodes' problem text lists ("you see a bed 1, a desk 2, ...") as `state: <receptacle>`
  checkpoints: the places there are to go to (checked to be the same list in every episode of the scene).
- scienceworld.yaml: the rooms of the ScienceWorld house named in the logs ("This room is called the X", "A door to
  the X") as `state: <room>` checkpoints for every `scienceworld/*` episode.
The script checks what it relies on: every room header in a mapped episode is a room of its map, and every AgentCC
Room is a room of the map given it.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "text-games"
OUT = REPO / "eebench" / "specs" / "checkpoints" / "text-games"
HEADER = re.compile(r"-= (.+?) =-")
STATE = "'-= (.+?) =-'"
# AgentCC runs: the map each played (SOURCES.md: the L300 run on the 300-room map, the others on the 60-room one)
AGENTCC_MAPS = {"L300": "coin_collector_level300/level_300_seed_0.json", "": "coin_collector/level_220_seed_1171.json"}


class Refused(Exception):
    """Data the checkpoints cannot be made of (a room not on its map, a file that is not JSON): one line, exit 2."""


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except ValueError as exc:   # (UnicodeDecodeError is one)
        raise Refused(f"{path}: not JSON ({exc})") from None


def q(text: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one)."""
    return json.dumps(text, ensure_ascii=False)


def literal(text: str) -> str:
    """`text` as a regex matching itself (spaces left readable)."""
    return re.escape(text).replace("\\ ", " ")


def room_checkpoint(name: str) -> str:
    """A room is visited when its header is in an observation (TextWorld titles the name: `-= Cozy Chamber =-`)."""
    name = name.lower()
    return f"      - {{id: {q('room:' + name)}, field: observation, regex: {q('(?i)-= ' + literal(name) + ' =-')}}}"


def kind(value: Any) -> str:
    """How a JSON value is named in a message."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def game_rooms(path: Path) -> tuple[list[str], dict]:
    """The room names of a TextWorld game file (its `infos` entries of type `r`) and the game; a file of another
    shape is Refused naming it and the field (a mapping for `infos` was a traceback, a missing key a line naming no
    file)."""
    game = read_json(path)
    if not isinstance(game, dict):
        raise Refused(f"{path}: expected a TextWorld game (a JSON object), found {kind(game)}")
    infos = game.get("infos")
    if not isinstance(infos, list):
        found = "nothing" if "infos" not in game else kind(infos)
        raise Refused(f"{path}: infos: expected a list of [id, {{type, name}}] pairs, found {found}")
    rooms = []
    for i, item in enumerate(infos):
        info = item[1] if isinstance(item, list) and len(item) == 2 else None
        if not isinstance(info, dict):
            raise Refused(f"{path}: infos[{i}]: expected [id, {{type, name}}], found {kind(item)}")
        if info.get("type") == "r":
            if not isinstance(info.get("name"), str):
                raise Refused(f"{path}: infos[{i}]: expected [id, {{type, name}}], found a room without a name")
            rooms.append(info["name"])
    return sorted(rooms), game


def treasure(path: Path, game: dict) -> str:
    """The treasure of a treasure_hunter game: the object of its walkthrough's last `take X`."""
    metadata = game.get("metadata")
    walkthrough = metadata.get("walkthrough") if isinstance(metadata, dict) else None
    last = walkthrough[-1] if isinstance(walkthrough, list) and walkthrough else walkthrough
    found = re.fullmatch(r"take (.+?)(?: from .+)?", last) if isinstance(last, str) else None
    if found is None:
        raise Refused(f"{path}: metadata.walkthrough: expected a last action `take X` (the treasure), found "
                      f"{repr(last) if isinstance(last, str) else kind(last)}")
    return found.group(1)


def run_id(data: Path, csv_path: str) -> str:
    """The instance id the adapters write for a BALROG TextWorld run: its summary's seed makes it this run's (see
    eebench/adapters/formats/balrog.py)."""
    path = Path(csv_path)
    summary = read_json(data / path.with_suffix(".json"))
    seed = summary.get("seed") if isinstance(summary, dict) else None
    if type(seed) is not int:
        raise Refused(f"{data / path.with_suffix('.json')}: seed: expected an integer, found {kind(seed)}")
    return f"textworld/{path.parent.name}/{path.stem}/seed-{seed}"


def column(csv_path: Path, name: str, **dialect: str) -> list[str]:
    """The values of one column of a CSV log; Refused naming the file (and line) when it cannot be read so (bytes
    that are not UTF-8 were a traceback, a missing column a line naming no file)."""
    reader = None
    try:
        with csv_path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle, **dialect)
            if name not in (reader.fieldnames or ()):
                raise Refused(f"{csv_path}: expected a column {name}, found "
                              f"{', '.join(reader.fieldnames) if reader.fieldnames else 'no header'}")
            values = []
            for row in reader:
                if row[name] is None:
                    raise Refused(f"{csv_path}:{reader.line_num}: {name}: expected a value, found a short row")
                values.append(row[name])
            return values
    except UnicodeDecodeError as exc:
        raise Refused(f"{csv_path}: not UTF-8 text (byte {exc.object[exc.start]:#04x})") from None
    except csv.Error as exc:
        raise Refused(f"{csv_path}:{reader.line_num if reader else 1}: not CSV ({exc})") from None


def headers(csv_path: Path, name: str) -> set[str]:
    return {h for text in column(csv_path, name, escapechar="˘") for h in HEADER.findall(text)}


def textworld(data: Path) -> str:
    maps = data / "textworld-maps"
    played: dict[str, list[str]] = {}   # map file (relative to a maps folder) -> instance ids
    where: dict[str, Path] = {}
    with (maps / "episode_to_map.csv").open(newline="", encoding="utf-8") as handle:
        table = csv.DictReader(handle)
        wanted = ("task", "matching_maps", "episode_csv")
        if not set(wanted) <= set(table.fieldnames or ()):
            raise Refused(f"{maps / 'episode_to_map.csv'}: expected columns {', '.join(wanted)}, found "
                          f"{', '.join(table.fieldnames) if table.fieldnames else 'no header'}")
        for row in table:
            key = f"{row['task']}/{row['matching_maps']}"
            played.setdefault(key, []).append(run_id(data, row["episode_csv"]))
            where[key] = maps / key
            rooms = {r.lower() for r in game_rooms(where[key])[0]}
            seen = {h.lower() for h in headers(data / row["episode_csv"], "Observation")}
            if not seen <= rooms:
                raise Refused(f"{row['episode_csv']}: rooms {sorted(seen - rooms)} are not in {key}")
    agentcc = data / "balrog-expt-coincollector" / "AgentCC"
    for run in sorted((agentcc / "results").glob("*.csv")):
        key = AGENTCC_MAPS["L300" if "_L300_" in run.name else ""]
        played.setdefault(key, []).append(f"textworld/coin_collector/{run.stem}")
        where.setdefault(key, agentcc / "tw_games" / key)
        rooms = {r.lower() for r in game_rooms(where[key])[0]}
        seen = {room.lower() for room in column(run, "Room")}
        if not seen <= rooms:
            raise Refused(f"{run}: rooms {sorted(seen - rooms)} are not in {key}")
    lines = ["eebench: checkpoints/1", "name: text-games-textworld",
             "description: >-",
             "  TextWorld games of the BALROG logs in shared/data/text-games: the rooms of each game's map,",
             "  the coin or treasure; generated by scripts/textgames_checkpoints.py (do not edit by hand).", "sets:"]
    for key in sorted(played):
        names, game = game_rooms(where[key])
        lines.append(f"  # {key}: {len(names)} rooms")
        lines.append(f"  - instances: [{', '.join(q(i) for i in sorted(played[key]))}]")
        lines.append(f"    state: {{field: observation, regex: {STATE}}}")
        lines.append("    checkpoints:")
        lines.extend(room_checkpoint(name) for name in names)
        if key.startswith("treasure_hunter/"):
            found = treasure(where[key], game)
            seen, taken = r"(?i)\b" + literal(found) + r"\b", "(?i)You (?:pick up|take) the " + literal(found)
            lines.append(f"      - {{id: treasure-seen, field: observation, regex: {q(seen)}}}")
            lines.append(f"      - {{id: treasure-taken, field: observation, regex: {q(taken)}}}")
    cooking = sorted({h for run in sorted((data / "balrog-textworld-llama-3.1-8b" / "the_cooking_game").glob("*.csv"))
                      for h in headers(run, "Observation")})
    lines += ["  # every run of a task, mapped or not: how the state reads, and the task's own objects",
              '  - instances: ["textworld/coin_collector/*"]', f"    state: {{field: observation, regex: {STATE}}}",
              "    checkpoints:",
              "      - {id: coin-seen, field: observation, regex: '(?i)\\ba coin\\b'}",
              "      - {id: coin-taken, field: observation, regex: '(?i)You pick up the coin'}",
              '  - instances: ["textworld/treasure_hunter/*"]', f"    state: {{field: observation, regex: {STATE}}}",
              "    checkpoints:",
              "      - {id: key-taken, field: observation, "
              "regex: '(?i)You (?:pick up|take) the \\S*\\s?(?:key|passkey)\\b'}",
              '  - instances: ["textworld/the_cooking_game/*"]', f"    state: {{field: observation, regex: {STATE}}}",
              "    checkpoints:"]
    lines.extend(room_checkpoint(name) for name in cooking)
    lines.append("      - {id: recipe-read, field: observation, regex: 'Recipe #1'}")
    return "\n".join(lines) + "\n"


_AROUND = re.compile(r"Looking quickly around you, you see (.+?)\.\s*(?:\n|$)")


def alfworld(data: Path) -> str:
    results = read_json(data / "alfworld-textcraft-adapt" / "results" / "ADaPT_maxd3_alfworld_text_davinci_003.json")
    scenes: dict[str, tuple[str, str]] = {}   # ALFWorld scene number -> (receptacles text, first game)
    where = data / "alfworld-textcraft-adapt" / "results" / "ADaPT_maxd3_alfworld_text_davinci_003.json"
    for kind in sorted(k for k in results if k != "overall"):
        for game in sorted(results[kind]):
            entry = results[kind][game]
            problem = entry.get("problem") if isinstance(entry, dict) else None
            if not isinstance(problem, str):
                raise Refused(f"{where}: {kind}/{game}: problem: expected the episode's problem text")
            found = _AROUND.search(problem)
            if found is None:
                raise Refused(f"alfworld {game}: no 'Looking quickly around you, you see ...' in its problem")
            scene = game.split("/")[0].rsplit("-", 1)[1]   # pick_and_place_simple-Mug-None-Desk-308/trial_...
            listed, first = scenes.setdefault(scene, (found.group(1), game))
            if listed != found.group(1):
                raise Refused(f"alfworld scene {scene}: {game} lists other receptacles than {first}")
    lines = ["eebench: checkpoints/1", "name: text-games-alfworld",
             "description: >-",
             "  ADaPT's ALFWorld episodes, per scene (floor plan): the receptacles its first look lists,",
             "  the places to go to; generated by scripts/textgames_checkpoints.py (do not edit by hand).", "sets:"]
    for scene in sorted(scenes, key=int):
        places = sorted({re.sub(r"^(?:and )?an? ", "", p.strip()) for p in scenes[scene][0].split(",")})
        lines.append(f"  # scene {scene}: {len(places)} receptacles")
        lines.append(f"  - instances: [{q('alfworld/*-' + scene + '/*')}]")
        lines.append("    checkpoints:")
        lines.extend(f"      - {{id: {q('at:' + p)}, state: {q(p)}}}" for p in places)
    return "\n".join(lines) + "\n"


_SW_ROOM = re.compile(r"This (?:room|outside location) is called the (.+?)\.|A door to the (.+?) \(")


def scienceworld(data: Path) -> str:
    rooms: set[str] = set()
    for path in sorted((data / "scienceworld-oracle").glob("*.json")):
        episodes = read_json(path)
        for key, episode in episodes.items() if isinstance(episodes, dict) else [("", episodes)]:
            run = episode.get("history") if isinstance(episode, dict) else None
            steps = run.get("history") if isinstance(run, dict) else None
            if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
                raise Refused(f"{path}: {key}: history.history: expected a list of steps (objects)"
                              if key else f"{path}: expected run histories keyed by episode (a JSON object)")
            for step in steps:
                for text in (step.get("freelook"), step.get("observation")):
                    if isinstance(text, str):   # (null, as `convert --from scienceworld` takes it: no text)
                        rooms.update(a or b for a, b in _SW_ROOM.findall(text))
    lines = ["eebench: checkpoints/1", "name: text-games-scienceworld",
             "description: >-", "  The rooms of the ScienceWorld house named in the oracle logs; generated by",
             "  scripts/textgames_checkpoints.py (do not edit by hand).", "sets:",
             '  - instances: ["scienceworld/*"]', "    checkpoints:"]
    lines.extend(f"      - {{id: {q('room:' + r)}, state: {q(r)}}}" for r in sorted(rooms))
    return "\n".join(lines) + "\n"


def main(argv: Iterable[str]) -> None:
    args = list(argv)
    data = Path(args[0]) if args else DATA
    out = Path(args[1]) if len(args) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("textworld", textworld(data)), ("alfworld", alfworld(data)),
                       ("scienceworld", scienceworld(data))):
        (out / f"{name}.yaml").write_text(text, "utf-8")
        print(f"wrote {out / name}.yaml")


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Refused as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except (KeyError, TypeError, AttributeError) as exc:   # a field, a column or a shape the data is read by
        fail(f"the data is not of the shape this script reads ({type(exc).__name__}: {exc})")
