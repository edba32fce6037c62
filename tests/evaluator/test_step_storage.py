"""Schema 4 stores steps and checkpoints narrower, under views (store.WORDS): whatever grades go into one results
file (new ids, ids graded again, duplicates dropped within a run), the views show the latest grade of each id
once, its rows in order, the trajectories in the order they were graded, with their ids, actions and checkpoint
ids as written; the keys they look them up by stay dense."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.checkpoints import CheckpointLibrary, load_checkpoints
from eebench.evaluator import Bench, grade_files
from eebench.instances import write_instances
from tests.conftest import make_instance, rows, write_jsonl
from tests.evaluator.test_grade import CORRIDOR, trajectory

WORDS = ["left", "right", "up", "down", "dance", None, "jump now"]
RUN = st.lists(st.tuples(st.sampled_from("abcd"), st.lists(st.sampled_from(WORDS), max_size=4)), min_size=1,
               max_size=5)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bench")
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], folder, {"kind": "test"})
    return folder


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> CheckpointLibrary:
    path = tmp_path_factory.mktemp("checkpoints") / "cp.yaml"
    path.write_text("eebench: checkpoints/1\nname: test\nsets:\n  - instances: ['t/*']\n"
                    "    rules: [cell_observed, node_discovered, node_achieved]\n")
    return CheckpointLibrary(load_checkpoints(path))


@settings(max_examples=8, deadline=None)
@given(st.lists(RUN, min_size=1, max_size=3))
def test_the_views_show_each_id_s_latest_grade_in_the_order_graded(bench: Path, library: CheckpointLibrary,
                                                                    runs: list) -> None:
    expected: dict[str, list] = {}   # id -> actions, in the order the file should show them
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "r.duckdb"
        for k, run in enumerate(runs):
            kept = {}
            for traj_id, actions in run:
                kept.setdefault(traj_id, actions)   # a later copy in the same run is dropped (skip_invalid)
            for traj_id, actions in kept.items():
                expected.pop(traj_id, None)
                expected[traj_id] = actions
            file = write_jsonl(Path(tmp) / f"run{k}.jsonl", [trajectory(i, a) for i, a in run])
            grade_files([file], Bench(bench), db, skip_invalid=True, checkpoints=library)
        assert rows(db, "SELECT trajectory_id, t, action FROM steps") == [
            (traj_id, t, action) for traj_id, actions in expected.items() for t, action in enumerate(actions)]
        first = next(iter(expected))   # every trajectory has the instance's checkpoints, in the same order
        ids = [row[0] for row in rows(db, f"SELECT checkpoint_id FROM checkpoints WHERE trajectory_id = '{first}'")]
        assert len(ids) == 11   # 7 cells, 2 nodes discovered and achieved
        assert rows(db, "SELECT trajectory_id, checkpoint_id FROM checkpoints") == [
            (traj_id, checkpoint) for traj_id in expected for checkpoint in ids]
        for lookup, key in (("trajectory_keys", "trajectory_key"), ("actions", "action_key"),
                            ("checkpoint_ids", "checkpoint_key")):
            assert rows(db, f"SELECT count(*) = coalesce(max({key}) + 1, 0) FROM storage.{lookup}") == [(True,)]
