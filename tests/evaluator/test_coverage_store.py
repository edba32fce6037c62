"""Coverage through `eebench grade`: the checkpoints table, the new columns and views on every world kind in one
results file, the summary notes, logged trajectories without a bench, and the schema 2 -> 3 upgrade."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eebench.evaluator.store import SCHEMA_VERSION
from eebench.instances import write_instances
from eebench.world.kinds import envs
from eebench.world.rooms import RoomsInstance
from tests.conftest import make_instance, rows, write_jsonl
from tests.evaluator.test_gaps import LINE
from tests.evaluator.test_grade import CORRIDOR, SOLVE, trajectory

V2_FILE = Path(__file__).parent / "data" / "results-v2.duckdb.gz"
CHECKPOINTS = r"""eebench: checkpoints/1
name: test
sets:
  - instances: ["t/*"]
    rules: [cell_observed, node_achieved, room_visited, ball_collected]
  - instances: ["tw/*"]
    state: {field: observation, regex: '-= (.+?) =-'}
    checkpoints:
      - {id: kitchen, state: Kitchen}
      - {id: cellar, state: Cellar}
  - instances: ["nothing/*"]
    checkpoints: [{id: x, state: x}]
"""


ROOMS = "rooms" in envs()   # the rooms world kind is registered on another branch


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor"),
                     *([RoomsInstance.from_document(LINE)] if ROOMS else [])], folder, {"kind": "test"})
    return folder


def logged(traj_id: str, rooms: list[str], phases: list[str | None] | None = None) -> dict[str, Any]:
    return {"eebench": "trajectory/1", "id": traj_id, "instance": "tw/game-1", "env": "logged",
            "agent": {"name": "llm", "model": "m1", "prompt": "base"},
            "steps": [{"action": "go", "observation": f"-= {room} =-", **({"phase": p} if p else {})}
                      for room, p in zip(rooms, phases or [None] * len(rooms))]}


def test_the_never_hit_query_lists_what_the_note_names_when_the_file_holds_earlier_runs(cli: Any, bench: Path,
                                                                                         tmp_path: Path) -> None:
    # its query read every run of the file: after a run that hit every cell, it listed nothing of this run's
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory("all", SOLVE)]), "--bench", bench, "--checkpoints", cp,
        "--db", db)
    out = cli("grade", write_jsonl(tmp_path / "b.jsonl", [trajectory("left", ["left"] * 3)]), "--bench", bench,
              "--checkpoints", cp, "--db", db).stdout
    note = next(line for line in out.splitlines() if "hit by no graded trajectory" in line)
    named, sql = note.split(": ", 2)[2].split(" (all: ")
    assert named == "cell:4,0, cell:5,0, cell:6,0, node:G:achieved"
    listed = json.loads(cli("query", sql.removesuffix(")"), "--db", db, "--format", "json").stdout)
    assert sorted(row["checkpoint_id"] for row in listed) == named.split(", ")


def test_every_world_kind_in_one_results_file(cli: Any, bench: Path, tmp_path: Path) -> None:
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        trajectory("grid", SOLVE),
        logged("text", ["Kitchen", "Hall", "Kitchen"], ["explore", "explore", "act"]),
    ])
    db = tmp_path / "r.duckdb"
    out = cli("grade", runs, "--bench", bench, "--checkpoints", cp, "--db", db).stdout
    assert f"coverage: {cp}: sets[2] (test): matches no graded trajectory (instances nothing/*)" in out
    assert ("coverage: 1 checkpoint was hit by no graded trajectory: cellar (all: SELECT checkpoint_id "
            "FROM checkpoints GROUP BY ALL HAVING count(hit_after_steps) = 0)") in out
    assert rows(db, "SELECT trajectory_id, env, metric_version, coverage_version, checkpoints_total, checkpoints_hit, "
                    "ecc, distinct_states, exploration_degree, instance_sha256 IS NULL, invalid_moves "
                    "FROM trajectories ORDER BY 1") == [
        ("grid", "grid_dag", "park/1", "coverage/1", 9, 9, 1.0, 7, 3 / 7, False, 0),
        ("text", "logged", "coverage/1", "coverage/1", 2, 1, 0.5, 2, 1 / 2, True, None)]
    assert rows(db, "SELECT t, state, visit_depth, ecc, phase, valid FROM steps WHERE trajectory_id = 'text' "
                    "ORDER BY t") == [(0, "Kitchen", 0, 0.5, "explore", None), (1, "Hall", 0, 0.5, "explore", None),
                                      (2, "Kitchen", 1, 0.5, "act", None)]
    # the curve from t = 0 (the initial state) to the last step, consistent with hit_after_steps
    curve = rows(db, "SELECT t, ecc FROM ecc_curve WHERE trajectory_id = 'grid' ORDER BY t")
    assert [t for t, _ in curve] == list(range(10))
    # in order as it stands (its t = 0 rows come from a GROUP BY: without the view's ORDER BY, first and in any order)
    assert rows(db, "SELECT trajectory_id, t FROM ecc_curve") == rows(db, "SELECT trajectory_id, t FROM ecc_curve "
                                                                          "ORDER BY ALL")
    assert curve == rows(db, "SELECT t, avg((hit_after_steps <= t)::INTEGER) FROM checkpoints, range(10) r(t) "
                             "WHERE trajectory_id = 'grid' GROUP BY t ORDER BY t")
    # a checkpoint never hit counts in the share from t = 0 on (cellar: 0 of 2 before the first step, then 1 of 2)
    assert rows(db, "SELECT t, ecc FROM ecc_curve WHERE trajectory_id = 'text' ORDER BY t") == [
        (0, 0.0), (1, 0.5), (2, 0.5), (3, 0.5)]
    assert rows(db, "SELECT env, trajectories, with_checkpoints, mean_ecc FROM coverage_summary ORDER BY env") == [
        ("grid_dag", 1, 1, 1.0), ("logged", 1, 1, 0.5)]
    assert rows(db, "SELECT trajectory_id, phase, steps, ecc_end, distinct_states, explore_error FROM phase_summary "
                    "ORDER BY trajectory_id, first_t") == [
        ("grid", None, 9, 1.0, 7, 0.0),
        ("text", "explore", 2, 0.5, 2, None), ("text", "act", 1, 0.5, 1, None)]


def test_ecc_curve_counts_the_checkpoints_never_hit_from_t_0(cli: Any, bench: Path, tmp_path: Path) -> None:
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "runs.jsonl", [trajectory("one", ["left"])]), "--bench", bench,
        "--checkpoints", cp, "--db", db)
    # from the start the agent sees some cells of the corridor (hit after 0 steps), not all; P and G are not reached
    at_start, total = rows(db, "SELECT count(*) FILTER (WHERE hit_after_steps = 0), count(*) FROM checkpoints")[0]
    assert 0 < at_start < total
    curve = rows(db, "SELECT t, ecc FROM ecc_curve ORDER BY t")
    assert curve[0] == (0, at_start / total)
    assert curve[-1] == (1, rows(db, "SELECT ecc FROM trajectories")[0][0])
    assert curve[0][1] <= curve[1][1] < 1


@pytest.mark.skipif(not ROOMS, reason="the rooms world kind is not registered on this branch yet")
def test_rooms_through_grade(cli: Any, bench: Path, tmp_path: Path) -> None:
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("rooms", ["x ball", "d1 door", "y ball"],
                                                            instance="t/rooms")])
    db = tmp_path / "r.duckdb"
    cli("grade", runs, "--bench", bench, "--checkpoints", cp, "--db", db)
    # A (start), x ball in A, d1 to B, y ball in B (the ball limit ends episode 0): A and B twice each
    assert rows(db, "SELECT env, metric_version, checkpoints_total, checkpoints_hit, ecc, distinct_states, "
                    "exploration_degree FROM trajectories") == [("rooms", "gaps/2", 6, 4, 4 / 6, 2, 1.0)]
    assert rows(db, "SELECT state, visit_depth FROM steps ORDER BY t") == [("A", 1), ("B", 0), ("B", 1)]
    assert rows(db, "SELECT checkpoint_id, hit_after_steps FROM checkpoints ORDER BY 1") == [
        ("ball:x", 1), ("ball:y", 3), ("ball:z", None), ("room:A", 0), ("room:B", 2), ("room:C", None)]
    assert rows(db, "SELECT steps, ecc_end, distinct_states FROM phase_summary") == [(3, 4 / 6, 2)]


def test_logged_trajectories_need_no_bench_but_others_do(cli: Any, tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [logged("a", ["Kitchen"])])
    db = tmp_path / "r.duckdb"
    assert cli("grade", runs, "--db", db).stdout.startswith("graded 1 trajectories (1 steps)")
    bad = write_jsonl(tmp_path / "bad.jsonl", [logged("b", ["Hall"]), trajectory("grid", SOLVE)])
    result = cli("grade", bad, "--db", db, code=2)
    assert result.stderr == (f"error: {bad}:2: instance: grading instance 't/corridor' needs --bench (only env "
                             "logged trajectories grade without one)\n")
    assert rows(db, "SELECT trajectory_id FROM trajectories") == [("a",)]


def test_shipped_checkpoints_apply_by_default(cli: Any, tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="park2026-main/corridor")], bench, {"kind": "test"})
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("g", SOLVE, instance="park2026-main/corridor")])
    db = tmp_path / "r.duckdb"
    assert "coverage:" not in cli("grade", runs, "--bench", bench, "--db", db).stdout
    # 7 cells, P and G discovered and achieved
    assert rows(db, "SELECT checkpoints_total, checkpoints_hit FROM trajectories") == [(11, 11)]


def test_the_next_grade_upgrades_a_schema_2_file(cli: Any, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "results.duckdb"
    with gzip.open(V2_FILE) as source, db.open("wb") as target:
        shutil.copyfileobj(source, target)
    assert rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("2",)]
    old = {table: rows(db, f"SELECT * FROM {table} ORDER BY ALL") for table in ("trajectories", "steps", "episodes")}
    old_state = rows(db, "SELECT trajectory_id, t, state FROM steps ORDER BY ALL")
    runs = write_jsonl(tmp_path / "new.jsonl", [trajectory("v3-solve", SOLVE), logged("v3-text", ["Kitchen"])])
    cli("grade", runs, "--bench", bench, "--db", db)
    assert rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    fresh = tmp_path / "fresh.duckdb"
    cli("grade", runs, "--bench", bench, "--db", fresh)
    layout = ("SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns "
              "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position")
    assert rows(db, layout) == rows(fresh, layout)   # the same tables, columns, types, NULLs and views
    new_trajectory_columns = ("checkpoints_total, checkpoints_hit, ecc, distinct_states, exploration_degree, "
                              "coverage_version")
    assert rows(db, f"SELECT * EXCLUDE ({new_trajectory_columns}) FROM trajectories WHERE trajectory_id LIKE 'v2-%' "
                    "ORDER BY ALL") == old["trajectories"]
    assert rows(db, f"SELECT DISTINCT {new_trajectory_columns} FROM trajectories WHERE trajectory_id LIKE 'v2-%'") \
        == [(None,) * 6]   # graded before coverage existed: NULL, not zero
    assert rows(db, "SELECT * EXCLUDE (state, visit_depth, ecc, phase, logged_state) FROM steps "
                    "WHERE trajectory_id LIKE 'v2-%' ORDER BY ALL") == [r[:-1] for r in old["steps"]]
    assert rows(db, "SELECT trajectory_id, t, state FROM steps WHERE trajectory_id LIKE 'v2-%' ORDER BY ALL") \
        == old_state
    assert rows(db, "SELECT * FROM episodes ORDER BY ALL") == old["episodes"]
    assert rows(db, "SELECT * EXCLUDE (graded_at, source_file) FROM trajectories WHERE trajectory_id LIKE 'v3-%' "
                    "ORDER BY 1") == rows(fresh, "SELECT * EXCLUDE (graded_at, source_file) FROM trajectories "
                                                 "ORDER BY 1")
    assert rows(db, "SELECT count(*) FROM checkpoints") == rows(fresh, "SELECT count(*) FROM checkpoints")


def test_a_failed_grade_leaves_a_schema_2_file_as_it_was(cli: Any, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "results.duckdb"
    with gzip.open(V2_FILE) as source, db.open("wb") as target:
        shutil.copyfileobj(source, target)
    before = db.read_bytes()
    bad = write_jsonl(tmp_path / "bad.jsonl", [trajectory("ok", SOLVE), trajectory("z", ["up"], instance="nope")])
    cli("grade", bad, "--bench", bench, "--db", db, code=2)
    assert db.read_bytes() == before


@pytest.mark.parametrize("step, message", [
    ({"action": "go", "phase": "Explore"}, "steps[1].phase: expected explore or act, found 'Explore' (did you mean "
                                           "'explore'?)"),
    ({"action": "go", "state": 3}, "steps[1].state: expected a string or null, found an integer"),
])
def test_a_bad_phase_or_state_is_one_line_exit_2(cli: Any, tmp_path: Path, step: dict[str, Any],
                                                 message: str) -> None:
    doc = logged("a", ["Kitchen"])
    doc["steps"].append(step)
    runs = write_jsonl(tmp_path / "runs.jsonl", [logged("ok", ["Hall"]), doc])
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--db", db, code=2)
    assert result.stderr == f"error: {runs}:2: {message}\n" and not db.exists()
    assert "skipped 1" in cli("grade", runs, "--db", db, "--skip-invalid").stdout
    assert rows(db, "SELECT trajectory_id FROM trajectories") == [("ok",)]


def test_regrading_replaces_checkpoint_rows(cli: Any, bench: Path, tmp_path: Path) -> None:
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory("g", SOLVE), logged("l", ["Kitchen"])]),
        "--bench", bench, "--checkpoints", cp, "--db", db)
    cli("grade", write_jsonl(tmp_path / "b.jsonl", [trajectory("g", ["left"])]), "--bench", bench,
        "--checkpoints", cp, "--db", db)
    assert rows(db, "SELECT trajectory_id, count(*), count(hit_after_steps) FROM checkpoints GROUP BY 1 "
                    "ORDER BY 1") == [("g", 9, 2), ("l", 2, 1)]
    assert rows(db, "SELECT trajectory_id, max(t) FROM ecc_curve GROUP BY 1 ORDER BY 1") == [("g", 1), ("l", 1)]


def test_a_logged_trajectory_may_name_an_instance_of_the_bench(cli: Any, bench: Path, tmp_path: Path) -> None:
    # the same id as a log of another run, and as a grid_dag instance: each is graded as what it is
    text = {**logged("text", ["Kitchen", "Hall"]), "instance": "t/corridor"}
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("grid", SOLVE), text, trajectory("grid2", SOLVE)])
    db = tmp_path / "r.duckdb"
    cli("grade", runs, "--bench", bench, "--db", db)
    assert rows(db, "SELECT trajectory_id, env, n_steps, distinct_states FROM trajectories ORDER BY 1") == [
        ("grid", "grid_dag", 9, 7), ("grid2", "grid_dag", 9, 7), ("text", "logged", 2, None)]   # no state reader


def test_a_step_field_a_checkpoint_reads_must_be_text(cli: Any, tmp_path: Path) -> None:
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    good, bad = logged("good", ["Kitchen"]), logged("bad", ["Kitchen", "Hall"])
    bad["steps"][1]["observation"] = ["-= Hall =-"]   # the state reader's field
    good["steps"][0]["reasoning"] = {"t": "x"}         # read by no checkpoint of the set: not looked at
    runs = write_jsonl(tmp_path / "runs.jsonl", [good, bad])
    db = tmp_path / "r.duckdb"
    failed = cli("grade", runs, "--checkpoints", cp, "--db", db, code=2)
    assert failed.stderr == f"error: {runs}:2: steps[1].observation: expected a string or null, found a list\n"
    assert not db.exists()
    skipped = cli("grade", runs, "--checkpoints", cp, "--db", db, "--skip-invalid")
    assert "steps[1].observation" in skipped.stdout + skipped.stderr
    assert rows(db, "SELECT trajectory_id, ecc FROM trajectories") == [("good", 0.5)]


def test_coverage_notes_stay_one_line_each(cli, tmp_path: Path) -> None:
    cp = tmp_path / "cp.yaml"
    cp.write_text('eebench: checkpoints/1\nname: nl\nsets:\n  - instances: ["tw/*"]\n    checkpoints:\n'
                  '      - {id: "a\\nb", field: observation, regex: zzz}\n  - instances: ["q\\nw"]\n'
                  '    checkpoints: [{id: x, state: x}]\n')
    out = cli("grade", write_jsonl(tmp_path / "runs.jsonl", [logged("t", ["Kitchen"])]), "--checkpoints", cp,
              "--db", tmp_path / "r.duckdb").stdout
    notes = [line for line in out.splitlines() if line.startswith("coverage: ")]
    assert len(notes) == 2 and all(line.startswith("coverage: ") for line in out.splitlines()[:2])
    assert "(instances q\\nw)" in notes[0] and "hit by no graded trajectory: a\\nb (all:" in notes[1]


@pytest.mark.parametrize("episode, message", [
    ("x", 'expected integer, found a string "x"'), (1.0, "expected integer, found a number 1.0"),
    (-1, "expected a number >= 0, found -1"), (32767, "expected a number <= 32766, found 32767"),
    (None, "expected integer, found null"),
])
def test_grid_dag_ignores_a_step_episode_but_refuses_what_validate_refuses(cli: Any, bench: Path, tmp_path: Path,
                                                                         episode: Any, message: str) -> None:
    """A grid_dag step's `episode` was stored as 0 whatever it held, where validate refuses it."""
    doc = trajectory("g", SOLVE)
    doc["steps"][1]["episode"] = episode
    runs = write_jsonl(tmp_path / "runs.jsonl", [doc])
    for command in (("validate", runs), ("grade", runs, "--bench", bench, "--db", tmp_path / "r.duckdb")):
        assert cli(*command, code=2).stderr == f"error: {runs}:1: steps[1].episode: {message}\n"
    doc["steps"][1]["episode"] = 3   # an index: ignored
    cli("grade", write_jsonl(runs, [doc]), "--bench", bench, "--db", tmp_path / "r.duckdb")
    assert rows(tmp_path / "r.duckdb", "SELECT count(*) FROM steps") == [(len(SOLVE),)]


def test_a_mistyped_env_is_named_before_any_instance_is_looked_up(cli: Any, tmp_path: Path) -> None:
    # "logd" is not refused as an instance that needs --bench (or one missing from it): its env is what is wrong
    bad = write_jsonl(tmp_path / "bad.jsonl", [logged("a", ["Kitchen"]), {**logged("b", ["Hall"]), "env": "logd"}])
    db = tmp_path / "r.duckdb"
    result = cli("grade", bad, "--db", db, code=2)
    assert result.stderr == (f"error: {bad}:2: env: expected one of grid_dag, rooms, logged, found \"logd\" "
                             "(did you mean 'logged'?)\n")
    assert not db.exists()


def test_phase_summary_counts_no_distinct_states_as_null_where_none_is_known(cli: Any, tmp_path: Path) -> None:
    """A phase whose steps have no known state (a TextCraft or WebShop log) has NULL distinct states, as its
    trajectory row has, not 0 states."""
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    stateless = {**logged("none", ["Kitchen", "Hall"], ["explore", "act"]), "instance": "other/game"}
    partly = logged("partly", ["Kitchen", "Hall"], ["explore", "act"])
    partly["steps"][1]["observation"] = "no header"   # the state stays Kitchen
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "runs.jsonl", [stateless, partly]), "--checkpoints", cp, "--db", db)
    assert rows(db, "SELECT trajectory_id, distinct_states FROM trajectories ORDER BY 1") == [
        ("none", None), ("partly", 1)]
    assert rows(db, "SELECT trajectory_id, phase, steps, distinct_states FROM phase_summary "
                    "ORDER BY trajectory_id, first_t") == [
        ("none", "explore", 1, None), ("none", "act", 1, None),
        ("partly", "explore", 1, 1), ("partly", "act", 1, 1)]
