"""Grading text-game logs end to end (convert, then grade with checkpoints): by hand on a tiny AgentCC run, and on
real runs against coverage worked out from the raw CSVs."""

from __future__ import annotations

import csv
import json
import shutil
import re
from collections import Counter
from pathlib import Path

import duckdb

from tests.adapters.test_agentcc import write_run
from tests.textgames import REPO, text_games  # noqa: F401  (fixture)

TEXTWORLD = REPO / "eebench" / "specs" / "checkpoints" / "text-games" / "textworld.yaml"
HEADER = re.compile(r"-= (.+?) =-")


def grade(cli, logs: list[Path], tmp_path: Path, *checkpoints: Path) -> duckdb.DuckDBPyConnection:
    cli("convert", *logs, "--out", tmp_path / "runs.jsonl")
    options = [a for c in checkpoints for a in ("--checkpoints", c)]
    cli("grade", tmp_path / "runs.jsonl", *options, "--db", tmp_path / "results.duckdb")
    return duckdb.connect(str(tmp_path / "results.duckdb"), read_only=True)


def test_a_tiny_run_by_hand(cli, tmp_path: Path) -> None:
    run = write_run(tmp_path, [
        ("0", "A", "write_memory(Notes)", "in A", ""),
        ("1", "A", "game_action(go east)", "-= B =-\nRoom B.", ""),
        ("2", "B", "game_action(go west)", "-= A =-\nRoom A.", ""),
        ("3", "A", "game_action(go east)", "-= B =-\nRoom B.", ""),
        ("4", "B", "game_action(take coin)", "You can't see any such thing.", "")], stem="play_x_t0_hintDFS_LOSS")
    (tmp_path / "cp.yaml").write_text(
        "eebench: checkpoints/1\nname: tiny\nsets:\n"
        "  - instances: ['textworld/coin_collector/*']\n"
        "    checkpoints:\n"
        "      - {id: 'room:a', field: observation, regex: '(?i)-= a =-'}\n"
        "      - {id: 'room:b', field: observation, regex: '(?i)-= b =-'}\n"
        "      - {id: 'room:c', field: observation, regex: '(?i)-= c =-'}\n"
        "      - {id: coin-taken, field: observation, regex: 'You pick up the coin'}\n", "utf-8")
    db = grade(cli, [run], tmp_path, tmp_path / "cp.yaml")
    # states after each step: B, A, B, B (take coin stays put); no initial state in a log
    assert db.sql("SELECT checkpoints_total, checkpoints_hit, ecc, distinct_states, exploration_degree "
                  "FROM trajectories").fetchall() == [(4, 2, 0.5, 2, 0.5)]   # B visited 3 times, A once
    assert db.sql("SELECT state, visit_depth FROM steps ORDER BY t").fetchall() == [
        ("B", 0), ("A", 0), ("B", 1), ("B", 2)]
    assert dict(db.sql("SELECT checkpoint_id, hit_after_steps FROM checkpoints").fetchall()) == {
        "room:a": 2, "room:b": 1, "room:c": None, "coin-taken": None}


def expected_from_csv(path: Path, state_column: str | None, rooms: int) -> tuple[float, int, float]:
    """ECC, distinct states and exploration degree of a run, read from its raw CSV with the textworld.yaml rules:
    a room is hit when its header shows; the coin when `a coin` shows and when it is picked up."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, escapechar="˘"))
    text = "Observation" if state_column is None else "Result"
    if state_column is not None:
        actions = [i for i, r in enumerate(rows) if r["Action"].startswith("game_action(")]
        states = [rows[i + 1]["Room"] if i + 1 < len(rows) else (HEADER.findall(rows[i][text]) or [rows[i]["Room"]])[0]
                  for i in actions]
        observations = [rows[i][text] for i in actions]
    else:
        observations = [r[text] for r in rows]
        states, current = [], None
        for observation in observations:
            current = (HEADER.findall(observation) or [current])[0]
            states.append(current)
    seen_rooms = {h.lower() for o in observations for h in HEADER.findall(o)}
    coin = [any(re.search(r"(?i)\ba coin\b", o) for o in observations),
            any(re.search(r"(?i)You pick up the coin", o) for o in observations)]
    visits = Counter(s for s in states if s is not None)
    degree = sum(v >= 2 for v in visits.values()) / len(visits)
    return (len(seen_rooms) + sum(coin)) / (rooms + 2), len(visits), degree


def test_real_coin_collector_runs(cli, text_games: Path, tmp_path: Path) -> None:
    llama = text_games / "balrog-textworld-llama-3.1-8b" / "coin_collector" / "coin_collector_run_00.csv"
    won = text_games / "balrog-expt-coincollector" / "AgentCC" / "results" / "play_dschat_t0_hintDFS_WIN.csv"
    db = grade(cli, [llama, llama.with_suffix(".json"), won], tmp_path, TEXTWORLD)
    rows = db.sql("SELECT instance_id, checkpoints_total, ecc, distinct_states, exploration_degree "
                  "FROM trajectories ORDER BY instance_id").fetchall()
    expected = [("textworld/coin_collector/coin_collector_run_00/seed-606616765", 62, *expected_from_csv(llama, None, 60)),
                ("textworld/coin_collector/play_dschat_t0_hintDFS_WIN", 62, *expected_from_csv(won, "Room", 60))]
    assert [r[:2] for r in rows] == [e[:2] for e in expected]
    for row, want in zip(rows, expected, strict=True):
        assert abs(row[2] - want[2]) < 1e-12 and row[3] == want[3] and abs(row[4] - want[4]) < 1e-12, (row, want)
    assert rows[1][2:4] == (42 / 62, 40)   # SOURCES.md: the winning run saw 40 rooms; it saw and took the coin


def test_another_labs_run_of_the_same_name_does_not_take_our_runs_map(cli, text_games: Path, tmp_path: Path) -> None:
    """BALROG names every run directory's episodes alike: a run_00 played elsewhere (another seed, here run_05's
    game) must not be scored against the map our run_00 played; it takes the task's set (the coin) alone."""
    ours = text_games / "balrog-textworld-llama-3.1-8b" / "coin_collector" / "coin_collector_run_05"
    theirs = tmp_path / "elsewhere" / "coin_collector_run_00"
    theirs.parent.mkdir()
    shutil.copy(ours.with_suffix(".csv"), theirs.with_suffix(".csv"))
    summary = json.loads(ours.with_suffix(".json").read_text())
    theirs.with_suffix(".json").write_text(json.dumps({**summary, "client": {"model_id": "other-model"}}))
    db = grade(cli, [theirs.with_suffix(".csv"), ours.with_suffix(".csv")], tmp_path)   # the shipped sets
    rows = db.sql("SELECT instance_id, checkpoints_total FROM trajectories ORDER BY model").fetchall()
    assert rows == [("textworld/coin_collector/coin_collector_run_05/seed-3004753821", 62),
                    ("textworld/coin_collector/coin_collector_run_00/seed-3004753821", 2)]
