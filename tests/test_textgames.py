"""The real text-game logs end to end: the shipped checkpoint files are what the script makes from the data, map
every run to its game, and converting then grading gives the coverage worked out from the raw logs."""

from __future__ import annotations

import csv
import functools
import json
import shutil
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
import yaml

from tests.adapters.conftest import convert
from tests.textgames import REPO, text_games  # noqa: F401  (fixture)

SHIPPED = REPO / "eebench" / "specs" / "checkpoints" / "text-games"
AGENTCC = Path("balrog-expt-coincollector/AgentCC/results")


@functools.cache
def _shipped(name: str) -> dict:
    return yaml.safe_load((SHIPPED / f"{name}.yaml").read_text("utf-8"))   # (read once: each read took 0.1 s)


def sets_matching(name: str, instance: str) -> list[dict]:
    return [s for s in _shipped(name)["sets"] if any(fnmatchcase(instance, p) for p in s["instances"])]


def test_the_script_regenerates_the_shipped_files(text_games: Path, tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "scripts" / "textgames_checkpoints.py"), str(text_games),
                    str(tmp_path)], check=True, capture_output=True)
    for name in ("textworld", "alfworld", "scienceworld"):
        assert (tmp_path / f"{name}.yaml").read_bytes() == (SHIPPED / f"{name}.yaml").read_bytes(), name


def test_the_script_refuses_damaged_data_in_one_line(text_games: Path, tmp_path: Path) -> None:
    """A map cut short or missing was a traceback (exit 1)."""
    data = tmp_path / "data"
    maps = data / "textworld-maps"
    maps.mkdir(parents=True)
    (maps / "episode_to_map.csv").write_text("task,matching_maps,episode_csv\ncoin_collector,level_1.json,x.csv\n")
    (data / "x.json").write_text('{"seed": 1}')   # (the run's summary)
    script = [sys.executable, str(REPO / "scripts" / "textgames_checkpoints.py"), str(data), str(tmp_path / "out")]
    missing = subprocess.run(script, capture_output=True, text=True)
    assert (missing.returncode, missing.stderr) == (2, f"error: {maps / 'coin_collector' / 'level_1.json'}: No such "
                                                       "file or directory\n")
    (maps / "coin_collector").mkdir()
    (maps / "coin_collector" / "level_1.json").write_text('{"infos": [')
    cut = subprocess.run(script, capture_output=True, text=True)
    assert cut.returncode == 2 and cut.stderr.startswith(f"error: {maps / 'coin_collector' / 'level_1.json'}: not "
                                                         "JSON (") and cut.stderr.count("\n") == 1
    assert not (tmp_path / "out" / "textworld.yaml").exists()


@pytest.mark.parametrize("game, problem", [
    ('{"infos": {"r_0": {"type": "r", "name": "x"}}}', "infos: expected a list of [id, {type, name}] pairs, found "
                                                       "an object"),
    ("{}", "infos: expected a list of [id, {type, name}] pairs, found nothing"),
    ('{"infos": [["r_0", {"type": "r"}]]}', "infos[0]: expected [id, {type, name}], found a room without a name"),
    ('{"infos": [["r_0", {"type": "r", "name": "x"}], 7]}', "infos[1]: expected [id, {type, name}], found a number"),
    ("[]", "expected a TextWorld game (a JSON object), found a list"),
])
def test_the_script_names_the_map_and_field_of_a_map_of_another_shape(tmp_path: Path, game: str,
                                                                        problem: str) -> None:
    """A map whose `infos` was a mapping was a traceback (exit 1); other shapes were one line naming no file."""
    data = tmp_path / "data"
    maps = data / "textworld-maps"
    (maps / "coin_collector").mkdir(parents=True)
    (maps / "episode_to_map.csv").write_text("task,matching_maps,episode_csv\ncoin_collector,level_1.json,x.csv\n")
    (data / "x.json").write_text('{"seed": 1}')
    (maps / "coin_collector" / "level_1.json").write_text(game)
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "textgames_checkpoints.py"), str(data),
                             str(tmp_path / "out")], capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (2, f"error: {maps / 'coin_collector' / 'level_1.json'}: {problem}\n")


@pytest.mark.parametrize("table, problem", [
    (b"Step,Action,Observation\n0,go,\xff\n", ": not UTF-8 text (byte 0xff)"),
    (b"Step,Action\n0,go\n", ": expected a column Observation, found Step, Action"),
    (b"", ": expected a column Observation, found no header"),
    (b"Step,Action,Observation\n0,go\n", ":2: Observation: expected a value, found a short row"),
])
def test_the_script_names_a_log_it_cannot_read(tmp_path: Path, table: bytes, problem: str) -> None:
    """A run's table that is not UTF-8 was a traceback (exit 1); one without its column a line naming no file."""
    data = tmp_path / "data"
    maps = data / "textworld-maps"
    (maps / "coin_collector").mkdir(parents=True)
    (maps / "episode_to_map.csv").write_text("task,matching_maps,episode_csv\ncoin_collector,level_1.json,x.csv\n")
    (maps / "coin_collector" / "level_1.json").write_text('{"infos": [["r_0", {"type": "r", "name": "hall"}]]}')
    (data / "x.json").write_text('{"seed": 1}')
    (data / "x.csv").write_bytes(table)
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "textgames_checkpoints.py"), str(data),
                             str(tmp_path / "out")], capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (2, f"error: {data / 'x.csv'}{problem}\n")


def test_the_script_names_a_treasure_hunter_walkthrough_it_cannot_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    maps = data / "textworld-maps"
    (maps / "treasure_hunter").mkdir(parents=True)
    (maps / "episode_to_map.csv").write_text("task,matching_maps,episode_csv\ntreasure_hunter,g.json,x.csv\n")
    (data / "x.json").write_text('{"seed": 1}')
    (data / "x.csv").write_text("Step,Action,Reasoning,Observation,Reward,Done\n")
    game = maps / "treasure_hunter" / "g.json"
    game.write_text(json.dumps({"infos": [["r_0", {"type": "r", "name": "hall"}]],
                                "metadata": {"walkthrough": ["go east", "open door"]}}))
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "textgames_checkpoints.py"), str(data),
                             str(tmp_path / "out")], capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (2, f"error: {game}: metadata.walkthrough: expected a last action "
                                                     "`take X` (the treasure), found 'open door'\n")


def test_the_script_reads_a_scienceworld_step_with_a_null_freelook(text_games: Path, tmp_path: Path) -> None:
    """`convert --from scienceworld` takes a null freelook or observation; the script refused the data (TypeError)."""
    data = tmp_path / "data"
    shutil.copytree(text_games, data)
    path = data / "scienceworld-oracle" / "task13-6-9.json"
    runs = json.loads(path.read_text("utf-8"))
    first = next(iter(runs.values()))["history"]["history"]
    first[1]["freelook"] = first[2]["observation"] = None
    path.write_text(json.dumps(runs), "utf-8")
    subprocess.run([sys.executable, str(REPO / "scripts" / "textgames_checkpoints.py"), str(data),
                    str(tmp_path / "out")], check=True, capture_output=True)
    assert (tmp_path / "out" / "scienceworld.yaml").read_bytes() == (SHIPPED / "scienceworld.yaml").read_bytes()


def _damaged_copy(text_games: Path, tmp_path: Path, name: str, text: str) -> tuple[Path, subprocess.CompletedProcess]:
    data = tmp_path / "data"
    shutil.copytree(text_games, data)
    (data / name).write_text(text, "utf-8")
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "textgames_checkpoints.py"), str(data),
                             str(tmp_path / "out")], capture_output=True, text=True)
    return data, result


@pytest.mark.parametrize("name, text, problem", [
    ("textworld-maps/episode_to_map.csv", "episode,task\n", "textworld-maps/episode_to_map.csv: expected columns "
                                                            "task, matching_maps, episode_csv, found episode, task"),
    ("balrog-textworld-llama-3.1-8b/coin_collector/coin_collector_run_00.json", "{}",
     "balrog-textworld-llama-3.1-8b/coin_collector/coin_collector_run_00.json: seed: expected an integer, found null"),
    ("alfworld-textcraft-adapt/results/ADaPT_maxd3_alfworld_text_davinci_003.json",
     '{"overall": 1, "clean": {"g-1/trial": {"trace": ""}}}',
     "alfworld-textcraft-adapt/results/ADaPT_maxd3_alfworld_text_davinci_003.json: clean/g-1/trial: problem: "
     "expected the episode's problem text"),
    ("scienceworld-oracle/task13-6-9.json", '{"6": {"history": {"history": ["look"]}}}',
     "scienceworld-oracle/task13-6-9.json: 6: history.history: expected a list of steps (objects)"),
    ("scienceworld-oracle/task13-6-9.json", "[]",
     "scienceworld-oracle/task13-6-9.json: expected run histories keyed by episode (a JSON object)"),
])
def test_the_script_names_the_file_and_field_of_data_of_another_shape(text_games: Path, tmp_path: Path, name: str,
                                                                       text: str, problem: str) -> None:
    """These were one line naming no file ("the data is not of the shape this script reads (KeyError: 'seed')")."""
    data, result = _damaged_copy(text_games, tmp_path, name, text)
    assert (result.returncode, result.stderr) == (2, f"error: {data}/{problem}\n")


def test_every_textworld_run_takes_the_rooms_of_the_game_it_played(text_games: Path, tmp_path: Path) -> None:
    runs = convert([text_games / "balrog-textworld-llama-3.1-8b", text_games / AGENTCC], tmp_path / "out.jsonl")
    with (text_games / "textworld-maps" / "episode_to_map.csv").open(newline="", encoding="utf-8") as handle:
        played = {Path(row["episode_csv"]).stem: row["matching_maps"] for row in csv.DictReader(handle)}
    for run in runs:
        sets = sets_matching("textworld", run["instance"])
        task = run["instance"].split("/")[1]
        generic = [s for s in sets if s["instances"] == [f"textworld/{task}/*"]]
        games = [s for s in sets if s not in generic]
        assert len(generic) == 1, run["instance"]
        stem = run["instance"].rsplit("/", 1)[1]
        if task == "the_cooking_game":   # no map of it here: the rooms its runs saw
            assert games == []
            continue
        assert len(games) == 1, run["instance"]
        rooms = [c for c in games[0]["checkpoints"] if c["id"].startswith("room:")]
        size = 300 if "_L300_" in stem else 60 if task == "coin_collector" else 20
        assert len(rooms) == size, (run["instance"], len(rooms))
        if stem in played:   # the replayed map names every room the run saw
            game = json.loads((text_games / "textworld-maps" / task / played[stem]).read_text("utf-8"))
            assert {c["id"] for c in rooms} == {f"room:{i['name']}" for _, i in game["infos"] if i["type"] == "r"}


def test_every_alfworld_and_scienceworld_episode_takes_one_set(text_games: Path, tmp_path: Path) -> None:
    episodes = convert([text_games / "alfworld-textcraft-adapt" / "results", text_games / "scienceworld-oracle"],
                       tmp_path / "out.jsonl")
    for episode in episodes:
        world = episode["instance"].split("/")[0]
        if world in ("alfworld", "scienceworld"):
            [taken] = sets_matching(world, episode["instance"])
            places = {c["state"] for c in taken["checkpoints"]}
            assert {s.get("state") for s in episode["steps"]} - {None} <= places, episode["id"]
