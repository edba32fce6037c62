"""The metric-family seam: every family grades registered world kinds and fills only columns the store defines."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.checkpoints import Checkpoint, CheckpointLibrary, CheckpointSet, Field, Rule
from eebench.evaluator.coverage import LoggedInstance
from eebench.evaluator.families import Coded, Trajectory, concatenated, families_for, metric_version, registered
from eebench.evaluator.store import TABLES
from eebench.instances import write_instances
from eebench.world.rooms import RoomsInstance
from tests.conftest import make_instance
from tests.evaluator.test_gaps import LINE
from tests.evaluator.test_grade import CORRIDOR, SOLVE, trajectory

INSTANCES = {"grid_dag": (make_instance(**CORRIDOR, instance_id="t/corridor"), SOLVE),
             "rooms": (RoomsInstance.from_document(LINE), ["x ball", "d1 door", "y ball", "d1 door"]),
             "logged": (LoggedInstance("t/log"), ["look", "go east"])}


def test_names_versions_and_kinds() -> None:
    assert [(f.name, f.version, sorted(f.envs)) for f in registered()] == [
        ("park", "park/1", ["grid_dag"]), ("gaps", "gaps/2", ["rooms"]),
        ("coverage", "coverage/1", ["grid_dag", "logged", "rooms"])]
    assert [f.name for f in families_for("logged")] == ["coverage"]
    assert metric_version(families_for("rooms")) == "gaps/2"   # coverage adds to the world's own family
    assert metric_version(families_for("logged")) == "coverage/1"


@pytest.mark.parametrize("family, env", [(f, env) for f in registered() for env in sorted(f.envs)],
                         ids=lambda v: getattr(v, "name", v))
def test_a_family_fills_exactly_the_columns_it_declares(family, env) -> None:
    defined = {table: {c.name for c in columns} for table, columns in TABLES.items()}
    extra = getattr(family, "logged_fills", {}) if env == "logged" else {}   # coverage grades logged alone
    fills = {table: (*names, *extra.get(table, ())) for table, names in family.fills.items()}
    for table, names in fills.items():
        assert set(names) <= defined[table] - {"trajectory_id"}, table
    if hasattr(family, "configure"):   # coverage: every rule and one explicit checkpoint, so each table has rows
        family = family.configure(CheckpointLibrary((CheckpointSet(
            "f", 0, "t", ("*",), None, tuple(Rule), (Checkpoint("a", Field.ACTION, re.compile("o")),)),)))
    instance, actions = INSTANCES[env]
    trajectory = Trajectory({"steps": [{"action": a, "phase": "explore"} for a in actions]}, "f", 1)
    columns = family.columns([family.replay(family.tables(instance), instance, trajectory)] * 2)
    assert set(columns.trajectories) == set(fills["trajectories"])
    assert all(len(values) == 2 for values in columns.trajectories.values())
    for table, part in (("steps", columns.steps), ("episodes", columns.episodes),
                        ("checkpoints", columns.checkpoints)):
        if table in fills:
            assert part is not None and set(part) == {"trajectory", *fills[table]}
            assert part["trajectory"].tolist() == sorted(part["trajectory"].tolist())  # in replay order
            assert set(part["trajectory"].tolist()) == {0, 1}
        else:
            assert part is None


def test_grading_grid_dag_never_loads_the_rooms_world(tmp_path) -> None:
    # in a fresh process, as a user's `eebench grade` of grid_dag logs runs
    write_instances([INSTANCES["grid_dag"][0]], tmp_path / "bench", {"kind": "test"})
    (tmp_path / "r.jsonl").write_text(json.dumps(trajectory("a", SOLVE)) + "\n")
    code = ("import sys; from pathlib import Path; from eebench.evaluator import Bench, grade_files; "
            f"grade_files([Path({str(tmp_path / 'r.jsonl')!r})], Bench(Path({str(tmp_path / 'bench')!r})), "
            f"Path({str(tmp_path / 'r.duckdb')!r})); "
            "print(sorted(m for m in ('networkx', 'ortools', 'eebench.world.rooms') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


WORD = st.one_of(st.none(), st.sampled_from(["up", "down", "run/1", "é", ""]), st.text(max_size=5))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(WORD, min_size=1, max_size=6).flatmap(
           lambda words: st.tuples(st.just(words), st.lists(st.integers(0, len(words) - 1), max_size=12))),
       min_size=1, max_size=4),
       st.integers(0, 40))
def test_coded_columns_keep_their_values_when_joined_cut_and_compacted(parts: list[tuple[list, list[int]]],
                                                                        cut: int) -> None:
    # a Coded column stands for words[codes]: joining parts, slicing rows and dropping unused words keep those values
    coded = [Coded(np.array(codes, dtype=np.int32), np.array(words + [None], dtype=object)[:-1])
             for words, codes in parts]
    expected = [words[code] for words, codes in parts for code in codes]
    joined = concatenated(coded)
    assert joined.values().tolist() == expected
    assert joined[cut:].values().tolist() == expected[cut:]
    rest = joined[cut:].compact()
    assert rest.values().tolist() == expected[cut:]
    assert len(rest.words) == len(set(map(int, joined.codes[cut:])))   # only the words its rows use
