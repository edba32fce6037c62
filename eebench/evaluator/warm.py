"""`python -m eebench.evaluator.warm`: compile the numba kernels of grading once, into their disk cache.

A grade of 50,000 steps or more replays in compiled code (park.COMPILED_FROM_STEPS); the first such grade after
an install compiles every kernel first, 10-15 s on 2 cores, and every later one loads them from the cache in
about 0.5 s. `make demo` and `make test` run this module after installing, so the first real grade does not pay
that (nor both of the tests' workers, which compiled every kernel each). It grades a small run with every
compiled path forced (the replay, the lines read bare, the per-step planning, coverage) as a real grade calls
them, so the kernels are compiled for the types real runs use, and writes nothing but the cache.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path


def warm() -> float:
    """Grade a small run of main-suite and rooms trajectories with every compiled path forced; the seconds it took
    (about 0.5 s once the kernels are cached)."""
    from eebench.evaluator import Bench, grade, grade_files, park
    from eebench.instances import write_instances
    from eebench.scorer import Scorer
    from eebench.suites import resolve_spec

    start = time.perf_counter()
    rng = random.Random(0)
    grid = next(iter(resolve_spec("park2026-main").instances()))
    rooms = next(iter(resolve_spec("grams2025-rooms").instances()))
    saved = park.COMPILED_FROM_STEPS, park.COMPILED_PLAN_FROM_VISITS, grade.COMPACT_FROM_STEPS
    park.COMPILED_FROM_STEPS = park.COMPILED_PLAN_FROM_VISITS = grade.COMPACT_FROM_STEPS = 0
    try:
        with tempfile.TemporaryDirectory(prefix="eebench-warm-") as folder:
            tmp = Path(folder)
            write_instances([grid, rooms], tmp / "bench", {"kind": "warm"})
            words = {grid.id: ["up", "down", "left", "right", "wait"],
                     rooms.id: [f"{door.name} door" for door in rooms.doors] + [f"{b.name} ball" for b in rooms.balls]}
            runs = tmp / "runs.jsonl"
            runs.write_text("".join(json.dumps({"eebench": "trajectory/1", "id": f"warm/{k}", "instance": instance,
                                                "steps": [{"action": rng.choice(words[instance])} for _ in range(40)]})
                                    + "\n" for k, instance in enumerate([grid.id, rooms.id] * 2)))
            grade_files([runs], Bench(tmp / "bench"), tmp / "warm.duckdb")
        Scorer(grid).batch([[rng.choice(["up", "down", "left", "right"]) for _ in range(40)]] * 2)
    finally:
        park.COMPILED_FROM_STEPS, park.COMPILED_PLAN_FROM_VISITS, grade.COMPACT_FROM_STEPS = saved
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"eebench: grading's compiled kernels are ready ({warm():.1f} s)")
