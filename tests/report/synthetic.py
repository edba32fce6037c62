"""Runs with several models and prompts for the report's tests, benchmark and screenshots.

A "model" is the frontier baseline that takes a uniformly random move instead with probability `noise`: more
noise, more errors and fewer successes, so Figure 1 has a real spread. Played in the world's own rules.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from eebench.agents.baselines import make_agent
from eebench.instances import InstanceLibrary
from eebench.world.grid_dag import GridDagEnv, GridDagInstance

MOVES = ("up", "down", "left", "right")
MODELS = {"model-a": 0.0, "model-b": 0.15, "model-c": 0.35, "model-d": 0.6, "model-e": 0.9}
PROMPTS = ("default", "explore-first")


def noisy_episode(instance: GridDagInstance, noise: float, seed: int, *, text: bool = False) -> list[dict]:
    """The steps of one episode of the noisy frontier agent."""
    rng = random.Random(seed)
    env = GridDagEnv(instance)
    agent = make_agent("frontier", instance, seed)
    obs, _ = env.reset(seed=seed)
    steps: list[dict] = []
    done = False
    while not done:
        action = agent.act(obs)
        if rng.random() < noise:
            action = rng.choice(MOVES)
        step: dict = {"action": action}
        if text:
            step["raw"] = f"I will move {action}. <action>{action}</action>"
            step["reasoning"] = f"step {len(steps)}: trying {action}"
        obs, _, terminated, truncated, _ = env.step(action)
        if text:
            step["observation"] = f"t={obs['t']}"
        steps.append(step)
        done = terminated or truncated
    return steps


def write_runs(bench: Path, out: Path, *, models: dict[str, float] | None = None, prompts: tuple[str, ...] = PROMPTS,
               seeds: range = range(1), text: bool = False, limit: int | None = None) -> int:
    """One trajectory per instance of `bench`, model, prompt and seed, as JSONL; returns how many."""
    library = InstanceLibrary(bench)
    ids = library.ids()[:limit]
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for model, noise in (models or MODELS).items():
            for p, prompt in enumerate(prompts):
                # the second prompt helps a little: a quarter less noise
                level = noise * (1 - 0.25 * p)
                for seed in seeds:
                    for instance_id in ids:
                        loaded = library.get(instance_id)
                        doc = {"eebench": "trajectory/1", "id": f"{model}/{prompt}/seed-{seed}/{instance_id}",
                               "instance": instance_id, "instance_sha256": loaded.sha256,
                               "agent": {"name": "noisy-frontier", "model": model, "prompt": prompt},
                               "steps": noisy_episode(loaded.instance, level, seed * 7919 + count, text=text)}
                        handle.write(json.dumps(doc) + "\n")
                        count += 1
    return count
