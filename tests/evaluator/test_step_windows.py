"""Step columns made a window at a time (a chunk of more than WINDOW_STEPS graded steps): every table holds exactly
what the whole columns give, wherever the windows cut (inside a trajectory, across trajectories, across
instances), with the plain-Python and the compiled replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench import trajectories
from eebench.checkpoints import library
from eebench.evaluator import Bench, families, grade_files, park
from eebench.evaluator import grade
from eebench.evaluator.families import StepWindows, joined_steps, step_columns_of, step_parts
from eebench.instances import write_instances
from tests.conftest import make_instance, rows

INSTANCES = [
    make_instance(map_rows=["....", ".#..", "...."], start=[0, 0],
                  nodes=[("A", [3, 0], []), ("G", [3, 2], [["A"]])], goal="G", budget=60, instance_id="t/small"),
    make_instance(map_rows=["......", "..#...", "......", "...#.."], start=[1, 1],
                  nodes=[("A", [5, 0], []), ("B", [0, 3], []), ("G", [5, 3], [["A", "B"]])], goal="G",
                  budget=90, instance_id="t/other"),
]
CHECKPOINTS = """eebench: checkpoints/1
name: windows
sets:
  - instances: ["t/*"]
    rules: [node_discovered, node_achieved, cell_observed]
"""
WHOLE_WINDOW, WHOLE_LINE = families.WINDOW_STEPS, trajectories.LONG_LINE_BYTES
TABLES = ("SELECT * EXCLUDE (graded_at) FROM trajectories ORDER BY ALL", "SELECT * FROM steps ORDER BY ALL",
          "SELECT * FROM checkpoints ORDER BY ALL")

words = st.sampled_from(["up", "down", "left", "right", "Up ", "wait", None])
runs_strategy = st.lists(st.tuples(st.sampled_from([i.id for i in INSTANCES]),
                                   st.lists(words.map(lambda w: {"action": w}), min_size=1, max_size=100)),
                         min_size=1, max_size=6)


def grade_tables(tmp: Path, runs: list[tuple[str, list[dict[str, Any]]]], name: str) -> list[list[tuple]]:
    import json

    text = "".join(json.dumps({"eebench": "trajectory/1", "id": f"run/{k}", "instance": instance, "steps": steps})
                   + "\n" for k, (instance, steps) in enumerate(runs))
    (tmp / "runs.jsonl").write_text(text)   # (one name: it is in the rows)
    db = tmp / f"{name}.duckdb"
    grade_files([tmp / "runs.jsonl"], Bench(tmp / "bench"), db, checkpoints=library([tmp / "cp.yaml"]))
    # each graded step's action as written (the four words by code, the others as words of their own)
    graded = dict(rows(db, "SELECT trajectory_id, n_steps FROM trajectories"))
    assert rows(db, "SELECT trajectory_id, t, action FROM steps ORDER BY trajectory_id, t") == sorted(
        (f"run/{k}", t, steps[t]["action"]) for k, (_, steps) in enumerate(runs) for t in range(graded[f"run/{k}"]))
    return [rows(db, sql) for sql in TABLES]


@pytest.mark.parametrize("chunk_records", [1, 4096], ids=["one-per-chunk", "together"])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=runs_strategy, window=st.integers(1, 40), compiled=st.booleans())
def test_windowed_columns_are_the_whole_columns(tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                chunk_records: int, runs: list[Any], window: int,
                                                compiled: bool) -> None:
    """One trajectory to a chunk, compiled: the windows are written from the replay carried window by window;
    lines compact: the windowed grade reads every line as a long one (its actions a table of words). Compiled or
    plain is drawn (each run of the tests draws both), and one whole grade is compared with both line readings."""
    tmp = tmp_path_factory.mktemp("windows")
    write_instances(INSTANCES, tmp / "bench", {"kind": "t"})
    (tmp / "cp.yaml").write_text(CHECKPOINTS)
    monkeypatch.setattr(park, "COMPILED_FROM_STEPS", 0 if compiled else 1 << 62)
    monkeypatch.setattr(grade, "CHUNK_RECORDS", chunk_records)
    # (a monkeypatch lasts across a hypothesis test's examples: each grade sets what it needs)
    monkeypatch.setattr(families, "WINDOW_STEPS", WHOLE_WINDOW)
    monkeypatch.setattr(trajectories, "LONG_LINE_BYTES", WHOLE_LINE)
    whole = grade_tables(tmp, runs, "whole")
    assert whole[1]   # (every run has a first step, and it is graded)
    monkeypatch.setattr(families, "WINDOW_STEPS", window)
    for compact in (False, True):
        monkeypatch.setattr(trajectories, "LONG_LINE_BYTES", 16 if compact else WHOLE_LINE)
        assert grade_tables(tmp, runs, f"windowed-{compact}") == whole, compact


def test_a_chunk_past_the_window_is_made_in_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(families, "WINDOW_STEPS", 4)
    column = np.arange(10)
    made = step_columns_of(10, lambda a, b: {"trajectory": column[a:b]})
    assert isinstance(made, StepWindows)
    assert [part["trajectory"].tolist() for part in step_parts(made)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    joined = joined_steps([made, {"trajectory": column, "other": -column}])
    assert [part["other"].tolist() for part in step_parts(joined)] == [[0, -1, -2, -3], [-4, -5, -6, -7], [-8, -9]]
    assert step_columns_of(4, lambda a, b: {"trajectory": column[a:b]})["trajectory"].tolist() == [0, 1, 2, 3]


@settings(max_examples=40, deadline=None)
@given(actions=st.lists(words, min_size=1, max_size=150),
       cuts=st.lists(st.tuples(st.integers(0, 150), st.integers(1, 30)), min_size=1, max_size=6))
def test_a_resumed_replay_gives_the_windows_of_the_whole_replay(actions: list[str | None],
                                                                cuts: list[tuple[int, int]]) -> None:
    """Windows asked in order and out of order (replayed from the start again) hold the rows of the whole
    replay's columns, the same for the state carried over any number of windows."""
    tables = park.ParkTables(INSTANCES[1])
    whole = park.replay(tables, actions)
    n = len(whole.cells_to)
    codes = park.action_codes(actions, tables.world.budget)[:n]
    resumed = park.ResumedReplay(tables, codes, lambda a, b: np.zeros(b - a))
    reference = park.step_columns([whole], [tables.world.width])
    in_order = [(a, min(a + 7, n)) for a in range(0, n, 7)]
    asked = [(min(a, n - 1), min(min(a, n - 1) + size, n)) for a, size in cuts]
    for a, b in [*in_order, *asked]:
        made = resumed.make(a, b)
        for name, values in reference.items():
            if name != "trajectory":
                assert made[name].tolist() == values[a:b].tolist(), (name, a, b)
