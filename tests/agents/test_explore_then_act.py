"""The explore-then-act baseline: a goal-free exploration phase for its share of the budget, then acting; every
step says its phase, and the phases reach the results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eebench.agents import play_episode
from eebench.agents.baselines import EXPLORE_SHARE
from eebench.evaluator.store import query
from eebench.instances import write_instances
from eebench.suites import resolve_spec
from tests.conftest import make_instance, write_jsonl

# x: 0 1 2 3 4 5 6 -- P (no prerequisites) left, the goal G right needs P; the start in the middle; 10 steps, so
# 5 of exploring: not enough to see both ends
CORRIDOR = make_instance(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])],
                         goal="G", budget=10, instance_id="t/corridor")


def phases(trajectory: dict[str, Any]) -> list[str]:
    return [step["phase"] for step in trajectory["steps"]]


def test_it_explores_then_acts() -> None:
    for seed in range(4):
        marks = phases(play_episode(CORRIDOR, "explore-then-act", seed))
        assert marks[:5] == ["explore"] * 5 and set(marks[5:]) == {"act"}


def test_phases_on_the_main_suite(cli: Any, tmp_path: Path) -> None:
    instances = list(resolve_spec("park2026-main").instances())[:6]
    write_instances(instances, tmp_path / "bench", {"kind": "test"})
    runs = [play_episode(instance, "explore-then-act", 0) for instance in instances]
    for instance, run in zip(instances, runs):
        marks = phases(run)
        assert set(marks) <= {"explore", "act"} and marks[0] == "explore"
        assert marks == sorted(marks, key=["explore", "act"].index)
        assert marks.count("explore") <= int(instance.budget * EXPLORE_SHARE)
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "runs.jsonl", runs), "--bench", tmp_path / "bench", "--db", db)
    _, found = query(db, "SELECT trajectory_id, phase, steps FROM phase_summary ORDER BY trajectory_id, first_t")
    expected = [(run["id"], phase, phases(run).count(phase)) for run in sorted(runs, key=lambda r: r["id"])
                for phase in ("explore", "act") if phase in phases(run)]
    assert found == expected
    # at the end of exploration the ECC is what the explore steps reached; acting only adds to it
    _, ecc = query(db, "SELECT trajectory_id, phase, ecc_end FROM phase_summary ORDER BY trajectory_id, first_t")
    ends: dict[str, list[float]] = {}
    for trajectory_id, _, value in ecc:
        ends.setdefault(trajectory_id, []).append(value)
    assert all(values == sorted(values) for values in ends.values())
