"""Results schemas 1 and 3 -> now: real files of those schemas (made by eebench at e940368 and 6e8f621) are
upgraded by the next grade, in its transaction; the old rows keep every value (and the steps their order), and the
upgraded file has exactly a fresh file's layout."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import duckdb
import pytest

from eebench.evaluator.store import SCHEMA_VERSION, V1_STEP_COLUMNS, V1_TRAJECTORY_COLUMNS
from eebench.instances import write_instances
from tests.conftest import make_instance, rows, write_jsonl
from eebench.world.rooms import RoomsInstance
from tests.evaluator.test_gaps import LINE
from tests.evaluator.test_grade import CORRIDOR, SOLVE, trajectory

DATA = Path(__file__).parent / "data"


def unzipped(name: str, db: Path) -> Path:
    with gzip.open(DATA / name) as source, db.open("wb") as target:
        shutil.copyfileobj(source, target)
    return db


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    return unzipped("results-v1.duckdb.gz", tmp_path / "results.duckdb")


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], folder, {"kind": "test"})
    return folder


def layout(db: Path) -> list[tuple]:
    """Every table's and view's columns with their types, nullability and defaults."""
    return rows(db, "SELECT table_name, column_name, data_type, is_nullable, column_default "
                    "FROM information_schema.columns WHERE table_schema = 'main' ORDER BY table_name, ordinal_position")


def test_the_fixture_is_schema_1(v1: Path) -> None:
    assert rows(v1, "SELECT value FROM meta WHERE key = 'schema_version'") == [("1",)]
    assert len(rows(v1, "DESCRIBE trajectories")) == V1_TRAJECTORY_COLUMNS
    assert len(rows(v1, "DESCRIBE steps")) == V1_STEP_COLUMNS


def test_the_next_grade_upgrades_a_schema_1_file(cli, v1: Path, bench: Path, tmp_path: Path) -> None:
    old_trajectories = rows(v1, "SELECT * FROM trajectories ORDER BY trajectory_id")
    old_steps = rows(v1, "SELECT * FROM steps ORDER BY trajectory_id, t")
    old_summary = rows(v1, "SELECT * FROM agent_summary")
    runs = write_jsonl(tmp_path / "new.jsonl", [trajectory("v2-solve", SOLVE)])
    cli("grade", runs, "--bench", bench, "--db", v1)

    assert rows(v1, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    fresh = tmp_path / "fresh.duckdb"
    cli("grade", runs, "--bench", bench, "--db", fresh)
    assert layout(v1) == layout(fresh)  # the same tables, columns, types, NOT NULLs and views as a new file
    # schema 1's rows: every old value kept, the new columns as a grid_dag row of schema 2 has them
    kept = rows(v1, f"SELECT * EXCLUDE (env, n_episodes, max_return, total_gap_last, explore_gap_last, "
                    "exploit_gap_last, total_gap_mean, explore_gap_mean, exploit_gap_mean, coverage, redundancy, "
                    "sample_efficiency, checkpoints_total, checkpoints_hit, ecc, distinct_states, exploration_degree, "
                    "coverage_version) FROM trajectories WHERE trajectory_id LIKE 'v1-%' ORDER BY trajectory_id")
    assert kept == old_trajectories
    assert rows(v1, "SELECT DISTINCT env, n_episodes, max_return, coverage FROM trajectories") == [
        ("grid_dag", None, None, None)]
    steps = rows(v1, "SELECT * EXCLUDE (episode, room, state, visit_depth, ecc, phase, logged_state) FROM steps WHERE trajectory_id LIKE 'v1-%' "
                     "ORDER BY trajectory_id, t")
    assert steps == old_steps
    assert rows(v1, "SELECT episode, room, state FROM steps WHERE trajectory_id = 'v1-solve' ORDER BY t LIMIT 2") \
        == [(0, None, "2,0"), (0, None, "1,0")]
    # the new grade lands beside them, graded exactly as into a new file
    assert rows(v1, "SELECT * EXCLUDE (graded_at, source_file) FROM trajectories WHERE trajectory_id = 'v2-solve'") \
        == rows(fresh, "SELECT * EXCLUDE (graded_at, source_file) FROM trajectories")
    assert rows(v1, "SELECT count(*) FROM episodes") == [(0,)]
    summary = rows(v1, "SELECT agent_name, episodes, successes FROM agent_summary")
    assert old_summary[0][:1] == summary[0][:1] and summary[0][1:] == (old_summary[0][5] + 1, old_summary[0][6] + 1)


def test_a_failed_grade_leaves_a_schema_1_file_as_it_was(cli, v1: Path, bench: Path, tmp_path: Path) -> None:
    before = v1.read_bytes()
    bad = write_jsonl(tmp_path / "bad.jsonl", [trajectory("ok", SOLVE), trajectory("z", ["up"], instance="nope")])
    cli("grade", bad, "--bench", bench, "--db", v1, code=2)
    assert v1.read_bytes() == before
    assert rows(v1, "SELECT value FROM meta WHERE key = 'schema_version'") == [("1",)]


STEP_TYPES = ("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' "
              "AND table_name = 'steps' ORDER BY ordinal_position")


def test_the_next_grade_moves_a_schema_3_file_s_steps_and_checkpoints_into_storage_in_order(cli, tmp_path: Path) -> None:
    v3 = unzipped("results-v3.duckdb.gz", tmp_path / "results.duckdb")
    assert rows(v3, "SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]
    old_steps = rows(v3, "SELECT * FROM steps")   # in the order stored: by grade, not by id
    old_checkpoints = rows(v3, "SELECT * FROM checkpoints")
    assert [r[0] for r in old_steps[-3:]] == ["v3-a-later"] * 3 and (None in [r[2] for r in old_steps])
    old_types = rows(v3, STEP_TYPES)
    bench = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor"), RoomsInstance.from_document(LINE)],
                    bench, {"kind": "test"})
    runs = write_jsonl(tmp_path / "new.jsonl", [trajectory("v4-new", ["left", "dance"])])
    sets = tmp_path / "cp.yaml"   # as the file's were graded (make_results_v3.py)
    sets.write_text("eebench: checkpoints/1\nname: v3\nsets:\n  - instances: ['t/*']\n    rules: "
                    "[cell_observed, node_discovered, node_achieved, room_visited, ball_collected]\n")
    cli("grade", runs, "--bench", bench, "--db", v3, "--checkpoints", sets)

    assert rows(v3, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    steps = rows(v3, "SELECT * FROM steps")
    assert steps[:len(old_steps)] == old_steps   # every old row, every value, in its order; then the new run's
    assert [(r[0], r[2]) for r in steps[len(old_steps):]] == [("v4-new", "left"), ("v4-new", "dance")]
    checkpoints = rows(v3, "SELECT * FROM checkpoints")
    assert checkpoints[:len(old_checkpoints)] == old_checkpoints and len(old_checkpoints) > 20
    assert {r[0] for r in checkpoints[len(old_checkpoints):]} == {"v4-new"}
    assert rows(v3, STEP_TYPES) == old_types
    fresh = tmp_path / "fresh.duckdb"
    cli("grade", runs, "--bench", bench, "--db", fresh, "--checkpoints", sets)
    assert layout(v3) == layout(fresh)
    assert rows(v3, "SELECT count(*), max(trajectory_key) FROM storage.trajectory_keys") == [(5, 4)]   # dense
    # a NULL action has its key, as in a file graded afresh ("declared nullable, never NULL")
    assert rows(v3, "SELECT count(*) FROM storage.steps WHERE action_key IS NULL") == [(0,)]
    assert rows(v3, "SELECT count(*) FROM storage.steps JOIN storage.actions USING (action_key)") == \
        rows(v3, "SELECT count(*) FROM storage.steps")
