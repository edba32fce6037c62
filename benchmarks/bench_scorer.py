"""The dense-reward scorer's speed on the main suite's maps: batch form and one action at a time.

Targets (issue 14): >= 1,000,000 steps/s per core in batch form, >= 200,000 steps/s stepping one action at a
time. The baseline is the BFS-per-step reference grader (benchmarks/baseline_grader.py), run in this process.
"""

from __future__ import annotations

import random
import time

from benchmarks import Result
from benchmarks.baseline_grader import grade as baseline_grade
from eebench.scorer import GridDagScorer
from eebench.suites import resolve_spec

WORDS = ("up", "down", "left", "right")
PER_INSTANCE = 1000  # random-word trajectories of each instance, each as long as its budget: a rollout batch


def run() -> list[Result]:
    rng = random.Random(0)
    work = []
    for instance in resolve_spec("park2026-main").instances():
        trajectories = [[rng.choice(WORDS) for _ in range(instance.budget)] for _ in range(PER_INSTANCE)]
        work.append((GridDagScorer(instance), trajectories))
    work[0][0].batch(work[0][1])  # the compiled kernel's first call (loading it) is not a step's cost
    batch_steps, batch_seconds = 0, 0.0
    for scorer, trajectories in work:
        start = time.perf_counter()
        batch_steps += len(scorer.batch(trajectories)["t"])
        batch_seconds += time.perf_counter() - start
    step_steps, step_seconds = 0, 0.0
    for scorer, trajectories in work:
        start = time.perf_counter()
        for actions in trajectories[:PER_INSTANCE // 20]:
            scorer.reset()
            step = scorer.step
            for action in actions:
                step(action)
                step_steps += 1
                if scorer.end is not None:
                    break
        step_seconds += time.perf_counter() - start
    base_steps, start = 0, time.perf_counter()
    for scorer, trajectories in work:
        base_steps += len(baseline_grade(scorer.instance.to_document(), trajectories[0]))
    baseline = base_steps / (time.perf_counter() - start)
    return [
        Result("scorer batch, main suite maps (steps/s, one core)", batch_steps / batch_seconds, "steps/s", baseline,
               ">= 1,000,000 steps/s", f"{batch_steps:,} steps"),
        Result("scorer one action at a time, main suite maps", step_steps / step_seconds, "steps/s", baseline,
               ">= 200,000 steps/s", f"{step_steps:,} steps"),
    ]
