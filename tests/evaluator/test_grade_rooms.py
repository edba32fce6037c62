"""`eebench grade` of room worlds end to end: the gaps family's rows in DuckDB beside grid_dag's, the baseline agents'
sanity, and bad input (one line, exit 2, nothing written; or skipped and listed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eebench.agents.rooms import play_steps
from eebench.instances import write_instances
from eebench.suites import resolve_spec
from tests.conftest import make_instance, rows, write_json, write_jsonl
from tests.evaluator.test_gaps import LINE
from tests.evaluator.test_grade import CORRIDOR, SOLVE
from tests.evaluator.test_grade import trajectory as grid_trajectory

LINE_ACTIONS = ["x ball", "d1 door", "Y Ball ", "d1 door", "d2 door", "z ball", "d2 door", "extra"]


def rooms_trajectory(traj_id: str, actions: list[Any], episodes: list[int] | None = None, **extra: Any) -> dict:
    steps = [{"action": a} if episodes is None else {"action": a, "episode": e}
             for a, e in zip(actions, episodes or [0] * len(actions))]
    return {"eebench": "trajectory/1", "id": traj_id, "instance": "t/rooms",
            "agent": {"name": "agent-r", "model": "m", "prompt": "p"}, "steps": steps, **extra}


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], folder, {"kind": "test"})
    write_json(folder / "t" / "rooms.json", LINE)
    return folder


def test_rooms_and_grid_dag_in_one_run(cli, bench: Path, tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [grid_trajectory("grid", SOLVE),
                                                 rooms_trajectory("line", LINE_ACTIONS)])
    db = tmp_path / "r.duckdb"
    cli("grade", runs, "--bench", bench, "--db", db)
    assert rows(db, "SELECT trajectory_id, env, metric_version, success, budget, n_steps, ignored_actions, "
                    "invalid_moves, end_reason, n_episodes, max_return FROM trajectories ORDER BY 1") == [
        ("grid", "grid_dag", "park/1", True, 30, 9, 0, 0, "goal", None, None),
        ("line", "rooms", "gaps/2", None, None, 7, 1, 1, "episodes", 2, 14.0)]
    # the hand-worked episodes of tests/evaluator/test_gaps.py::test_hand_worked_line
    assert rows(db, "SELECT episode, n_steps, agent_return, exploit_return, max_return, explore_gap, solver_status "
                    "FROM episodes ORDER BY episode") == [(0, 3, 7.0, 7.0, 14.0, 0.5, "optimal"),
                                                          (1, 4, 9.0, 14.0, 14.0, 0.0, "optimal")]
    assert rows(db, "SELECT t, episode, action, state, valid, from_x, case_id FROM steps "
                    "WHERE trajectory_id = 'line' AND t IN (0, 6) ORDER BY t") == [
        (0, 0, "x ball", "A", True, None, None), (6, 1, "d2 door", "C", False, None, None)]
    assert rows(db, "SELECT episode, state FROM steps WHERE trajectory_id = 'grid' AND t = 0") == [(0, "2,0")]
    # grid_dag rows are exactly what a run of grid_dag alone writes
    alone = tmp_path / "alone.duckdb"
    cli("grade", write_jsonl(tmp_path / "grid.jsonl", [grid_trajectory("grid", SOLVE)]), "--bench", bench,
        "--db", alone)
    for sql in ("SELECT * EXCLUDE (graded_at, source_file, source_line) FROM trajectories WHERE env = 'grid_dag'",
                "SELECT * FROM steps WHERE trajectory_id = 'grid' ORDER BY t", "SELECT * FROM agent_summary",
                "SELECT * FROM case_summary"):
        assert rows(db, sql) == rows(alone, sql)
    [summary] = rows(db, "SELECT agent_name, trajectories, episodes, with_gaps, total_gap_last, explore_gap_last, "
                         "coverage, sample_efficiency, bound_episodes FROM gaps_summary")
    assert summary == ("agent-r", 1, 2, 1, pytest.approx(5 / 14), 0.0, 1.0, 7.0, 0)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name, *_ in rows(db, "DESCRIBE gaps_summary"):
        assert f"`{name}`" in readme, name


def test_regrading_a_rooms_trajectory_replaces_its_episodes(cli, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [rooms_trajectory("line", LINE_ACTIONS)]), "--bench", bench,
        "--db", db)
    cli("grade", write_jsonl(tmp_path / "b.jsonl", [rooms_trajectory("line", ["x ball"])]), "--bench", bench,
        "--db", db)
    assert rows(db, "SELECT trajectory_id, episode, n_steps FROM episodes") == [("line", 0, 1)]
    assert rows(db, "SELECT count(*) FROM steps") == [(1,)]


@pytest.mark.parametrize("record, message", [
    (rooms_trajectory("a", ["x ball", "d1 door"], [1, 0]),
     "steps[1].episode: episode 0 after episode 1; episode indices must not decrease"),
    (rooms_trajectory("a", ["x ball"], [2]),
     "steps[0].episode: episode 2 does not exist: the instance has 2 episodes (0 to 1)"),
    # some steps labelled, some not: one stream, but the labels there are must hold
    ({**rooms_trajectory("a", ["x ball", "d1 door"]), "steps": [{"action": "x ball", "episode": 99},
                                                               {"action": "d1 door"}]},
     "steps[0].episode: episode 99 does not exist: the instance has 2 episodes (0 to 1)"),
    ({**rooms_trajectory("a", ["x ball", "d1 door"]), "steps": [{"action": "x ball", "episode": 1},
                                                               {"action": "d1 door"}, {"action": "x ball",
                                                                                       "episode": 0}]},
     "steps[2].episode: episode 0 after episode 1; episode indices must not decrease"),
    (rooms_trajectory("a", ["x ball"], env="grid_dag"),
     "env: expected 'rooms' (the kind of instance 't/rooms') or no env, found 'grid_dag'"),
])
def test_bad_rooms_trajectories(cli, bench: Path, tmp_path: Path, record: dict, message: str) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [rooms_trajectory("ok", LINE_ACTIONS), record])
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--bench", bench, "--db", db, code=2)
    assert result.stderr == f"error: {runs}:2: {message}\n"
    assert not db.exists()
    result = cli("grade", runs, "--bench", bench, "--db", db, "--skip-invalid")
    assert f"{runs}:2: {message}" in result.stderr
    assert rows(db, "SELECT trajectory_id FROM trajectories") == [("ok",)]


def _suite_4x4() -> list:
    return [i for i in resolve_spec("grams2025-rooms").instances() if "/4x4/" in i.id]


def _mazes_7x7() -> list:
    return [i for i in resolve_spec("grams2025-maze").instances() if "/maze-7x7/" in i.id]


@pytest.mark.parametrize("agent, suite", [("oracle", _suite_4x4), ("explorer", _suite_4x4), ("oracle", _mazes_7x7)])
def test_baseline_agents(cli, agent: str, suite, tmp_path: Path) -> None:
    instances = suite()
    write_instances(instances, tmp_path / "bench", {"kind": "test"})
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        {"eebench": "trajectory/1", "id": f"{agent}/{i.id}", "instance": i.id, "agent": {"name": agent},
         "steps": play_steps(i, agent, 0)} for i in instances])
    db = tmp_path / "r.duckdb"
    cli("grade", runs, "--bench", tmp_path / "bench", "--db", db)
    assert rows(db, "SELECT DISTINCT n_episodes, end_reason FROM trajectories") == [(20, "episodes")]
    assert rows(db, "SELECT count(*) FROM episodes WHERE solver_status <> 'optimal'") == [(0,)]
    if agent == "oracle":
        # it walks the optimal path of the full map in every episode: no gap of any kind, ever
        assert rows(db, "SELECT max(total_gap), max(exploit_gap), min(agent_return = max_return) FROM episodes") \
            == [(0.0, 0.0, True)]
    else:
        # systematic coverage: by the last episode it has been everywhere and knows every ball, so nothing is
        # left to explore; the knowledge only grows
        assert rows(db, "SELECT min(coverage), max(explore_gap_last) FROM trajectories") == [(1.0, 0.0)]
        assert rows(db, "SELECT count(*) FROM episodes e JOIN episodes f ON e.trajectory_id = f.trajectory_id "
                        "AND f.episode = e.episode + 1 WHERE f.exploit_return < e.exploit_return "
                        "OR f.coverage < e.coverage") == [(0,)]


def test_the_gaps_summary_reads_like_the_papers_tables(cli, tmp_path: Path) -> None:
    instances = _suite_4x4()[:1]
    write_instances(instances, tmp_path / "bench", {"kind": "test"})
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        {"eebench": "trajectory/1", "id": f"{agent}/{seed}", "instance": instances[0].id, "agent": {"name": agent},
         "steps": play_steps(instances[0], agent, seed)} for agent in ("random", "oracle") for seed in (0, 1)])
    db = tmp_path / "r.duckdb"
    cli("grade", runs, "--bench", tmp_path / "bench", "--db", db)
    table = {r[0]: r[1:] for r in rows(db, "SELECT agent_name, trajectories, episodes, total_gap_last, "
                                           "exploit_gap_last + explore_gap_last, total_gap_mean, "
                                           "exploit_gap_mean + explore_gap_mean FROM gaps_summary")}
    assert set(table) == {"random", "oracle"}
    assert table["oracle"] == (2, 40, 0.0, 0.0, 0.0, 0.0)
    trajectories, episodes, last, last_parts, mean, mean_parts = table["random"]
    assert (trajectories, episodes) == (2, 40) and last == pytest.approx(last_parts) and mean == pytest.approx(
        mean_parts) and 0 < mean <= 1


def test_a_mixed_run_grades_each_world_as_a_run_of_its_own(cli, bench: Path, tmp_path: Path) -> None:
    rooms_runs = [rooms_trajectory(f"r{k}", LINE_ACTIONS[:k]) for k in range(9)]
    grid_runs = [grid_trajectory("grid", SOLVE)]
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [*rooms_runs[:4], *grid_runs, *rooms_runs[4:]])
    one, two = tmp_path / "one.duckdb", tmp_path / "two.duckdb"
    cli("grade", mixed, "--bench", bench, "--db", one)
    cli("grade", write_jsonl(tmp_path / "rooms.jsonl", rooms_runs), "--bench", bench, "--db", two)
    cli("grade", write_jsonl(tmp_path / "grid.jsonl", grid_runs), "--bench", bench, "--db", two)
    for sql in ("SELECT * EXCLUDE (graded_at, source_file, source_line) FROM trajectories ORDER BY trajectory_id",
                "SELECT * FROM steps ORDER BY trajectory_id, t",
                "SELECT * FROM episodes ORDER BY trajectory_id, episode"):
        assert rows(one, sql) == rows(two, sql)
    # prefixes of 1-3 actions play episode 0 only, of 4-8 actions both episodes: 3 + 5 x 2
    assert rows(one, "SELECT count(*) FROM episodes") == [(13,)]


@pytest.mark.parametrize("change, message", [
    ({"doors": [*LINE["doors"], {"name": "d3", "between": ["C", "C"]}]},
     "doors[2].between: joins room 'C' to itself; a door joins two distinct rooms"),
    ({"rooms": [*LINE["rooms"], "D"]}, "rooms[3]: room 'D' cannot be reached from the start 'A' through the doors"),
])
def test_a_bad_rooms_instance_is_one_line(cli, tmp_path: Path, change: dict, message: str) -> None:
    instance = write_json(tmp_path / "bench" / "t" / "rooms.json", {**LINE, **change})
    runs = write_jsonl(tmp_path / "runs.jsonl", [rooms_trajectory("a", LINE_ACTIONS)])
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--bench", tmp_path / "bench", "--db", db, code=2)
    assert result.stderr == f"error: {instance}: {message}\n"
    assert not db.exists()


@pytest.mark.parametrize("named, refused", [({"env": "rooms"}, True),   # the kind named
                                            ({"instance": "grams2025-rooms/7x7/seed-0"}, True),   # a shipped one
                                            ({"instance": "park2026-main/low-small/seed-0"}, False),   # grid_dag
                                            ({}, False)])   # an instance validate cannot look up
def test_validate_refuses_a_rooms_log_whose_episodes_go_back(cli, tmp_path: Path, named: dict, refused: bool
                                                             ) -> None:
    """grade's rule, where validate knows the world is rooms; grid_dag ignores `episode`."""
    record = {**rooms_trajectory("a", ["x ball", "d1 door"], [1, 0]), **named}
    runs = write_jsonl(tmp_path / "runs.jsonl", [record])
    result = cli("validate", runs, code=2 if refused else 0)
    assert result.stderr == (f"error: {runs}:1: steps[1].episode: episode 0 after episode 1; episode indices must "
                             "not decrease\n" if refused else "")
