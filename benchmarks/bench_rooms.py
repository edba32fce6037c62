"""Grading room worlds (the gaps family): one 7x7 Dark Treasure Rooms trajectory of 20 episodes from a cold start
(target < 1 s, a fresh process: imports, instance, R_max, every R_exploit, DuckDB), 1,000 explorer trajectories
on one core (target < 60 s), the solver cache's hit rate, and CP-SAT beside the exhaustive search on the same
knowledge states.

Baseline, in the same process: the same trajectories graded with nothing shared between them (fresh per-instance
tables, so a fresh solver cache, for every trajectory): the ratio is what sharing R_max and the knowledge-state
cache across trajectories of an instance buys.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from benchmarks import Result, timed
from eebench.agents.rooms import play_steps
from eebench.evaluator import Bench, grade_files
from eebench.evaluator.families import Trajectory
from eebench.evaluator.gaps import FAMILY, GapsTables
from eebench.evaluator.orienteering import Method, solve
from eebench.instances import write_instances
from eebench.suites import resolve_spec
from eebench.world.rooms import RoomsInstance

SUITE = "grams2025-rooms"
TRAJECTORIES = 1_000
BASELINE_TRAJECTORIES = 100


def _instances() -> list[RoomsInstance]:
    return [i for i in resolve_spec(SUITE).instances() if "/7x7/" in i.id]


def _play(instances: list[RoomsInstance], count: int) -> list[dict]:
    """`count` explorer trajectories, spread over the instances and seeds."""
    return [{"eebench": "trajectory/1", "id": f"explorer/seed-{k}/{instances[k % len(instances)].id}",
             "instance": instances[k % len(instances)].id, "agent": {"name": "explorer"},
             "steps": play_steps(instances[k % len(instances)], "explorer", k // len(instances))}
            for k in range(count)]


def _cold_start(tmp: Path) -> tuple[float, float]:
    """Median wall seconds of a fresh Python process that grades one trajectory into a new results file, and its
    CPU seconds (user + system: what it costs when the machine is not shared)."""
    code = ("from pathlib import Path; from eebench.evaluator import Bench, grade_files; "
            f"grade_files([Path({str(tmp / 'one.jsonl')!r})], Bench(Path({str(tmp / 'rooms')!r})), "
            f"Path({str(tmp / 'one.duckdb')!r}))")
    wall, cpu = [], []
    for _ in range(3):
        (tmp / "one.duckdb").unlink(missing_ok=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return median(wall), median(cpu)


def _family_rate(instances: dict[str, RoomsInstance], trajectories: list[dict],
                 shared: dict[str, GapsTables] | None) -> float:
    """Trajectories per second through the gaps family alone (replay, solves, columns): with per-instance tables
    `shared` by all trajectories, or (None) fresh tables, so R_max and empty caches, for each: the baseline."""
    start = time.perf_counter()
    for doc in trajectories:
        instance = instances[doc["instance"]]
        own = GapsTables(instance) if shared is None else shared[doc["instance"]]
        FAMILY.columns([FAMILY.replay(own, instance, Trajectory(doc, "bench", None))])
    return len(trajectories) / (time.perf_counter() - start)


def _side_by_side(instances: dict[str, RoomsInstance], trajectories: list[dict]) -> tuple[float, float, int]:
    """Median ms per solve of the exhaustive search and CP-SAT on the same distinct knowledge states."""
    problems = {}
    for doc in trajectories:
        instance = instances[doc["instance"]]
        tables = GapsTables(instance)
        for known in FAMILY.replay(tables, instance, Trajectory(doc, "bench", None)).replay.knowledge:
            problem = tables.problem(known)
            problems.setdefault(problem.key, problem)
    exhaustive, cp_sat = [], []
    for problem in list(problems.values())[:60]:
        a, ours = timed(lambda: solve(problem, method=Method.EXHAUSTIVE))
        b, theirs = timed(lambda: solve(problem, method=Method.CP_SAT))
        assert ours.value == theirs.value, (ours, theirs)
        exhaustive.append(1000 * a)
        cp_sat.append(1000 * b)
    return median(exhaustive), median(cp_sat), len(exhaustive)


def run() -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        suite = resolve_spec(SUITE)
        instances = _instances()
        write_instances(instances, tmp / "rooms", suite.source())
        trajectories = _play(instances, TRAJECTORIES)
        (tmp / "one.jsonl").write_text(json.dumps(trajectories[0]) + "\n")
        (tmp / "all.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajectories))
        episodes = len({s["episode"] for s in trajectories[0]["steps"]})

        wall, cpu = _cold_start(tmp)
        results.append(Result(f"grade one 7x7 trajectory ({episodes} episodes), fresh process", wall, "s",
                              target="< 1 s", note=f"wall time of the whole process, imports included; CPU "
                                                   f"{cpu:.2f} s"))

        by_id = {i.id: i for i in instances}
        seconds, report = timed(lambda: grade_files([tmp / "all.jsonl"], Bench(tmp / "rooms"), tmp / "all.duckdb"))
        results.append(Result(f"grade {TRAJECTORIES:,} explorer trajectories on 7x7 ({report.steps:,} steps), "
                              "end to end, 1 process", seconds, "s", target="< 60 s"))
        base = _family_rate(by_id, trajectories[:BASELINE_TRAJECTORIES], None)
        shared = {i.id: GapsTables(i) for i in instances}
        results.append(Result(f"gaps family alone, {TRAJECTORIES:,} trajectories, tables shared per instance",
                              _family_rate(by_id, trajectories, shared), "traj/s", base,
                              note="baseline: fresh tables (R_max, caches) for each trajectory"))
        lookups = sum(t.lookups for t in shared.values())
        state_hits = sum(t.state_hits for t in shared.values())
        solver_hits = sum(t.cache.hits for t in shared.values())
        solver_lookups = solver_hits + sum(t.cache.misses for t in shared.values())
        results.append(Result("knowledge-state cache hit rate (R_exploit lookups)", 100 * state_hits / lookups, "%",
                              note=f"{lookups:,} lookups, {lookups - state_hits:,} states solved"))
        results.append(Result("solver cache hit rate (by problem content)", 100 * solver_hits / solver_lookups, "%",
                              note=f"{solver_lookups:,} lookups"))

        exhaustive, cp_sat, n = _side_by_side(by_id, trajectories[:30])
        results.append(Result(f"exhaustive search, median of {n} distinct knowledge states", exhaustive, "ms",
                              cp_sat, note="baseline: CP-SAT on the same problems (values agree)"))
    return results
