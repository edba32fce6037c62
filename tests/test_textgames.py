"""The real text-game logs end to end: the shipped checkpoint files are what the script makes from the data, map
every run to its game, and converting then grading gives the coverage worked out from the raw logs."""

from __future__ import annotations

import csv
import functools
import json
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path

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
