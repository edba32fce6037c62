"""Play an agent in an instance through the Gymnasium-shaped env and record a canonical trajectory."""

from __future__ import annotations

from typing import Any

from eebench import __version__
from eebench.agents.baselines import make_agent
from eebench.world.grid_dag import GridDagEnv, GridDagInstance, render_observation


def play_episode(instance: GridDagInstance, agent_name: str, seed: int, *, instance_sha256: str | None = None,
                 observations: bool = False) -> dict[str, Any]:
    """One episode until the goal is achieved or the budget is spent, as a trajectory/1 document."""
    env = GridDagEnv(instance)
    agent = make_agent(agent_name, instance, seed)
    obs, _ = env.reset(seed=seed)
    steps = []
    done = False
    while not done:
        action = agent.act(obs)
        obs, _, terminated, truncated, _ = env.step(action)
        step: dict[str, Any] = {"action": action}
        if observations:
            step["observation"] = render_observation(obs)
        steps.append(step)
        done = terminated or truncated
    trajectory: dict[str, Any] = {
        "eebench": "trajectory/1",
        "id": f"{agent_name}/seed-{seed}/{instance.id}",
        "instance": instance.id,
        "agent": {"name": agent_name, "model": f"eebench-{agent_name}", "prompt": None, "harness": None},
        "steps": steps,
        "meta": {"seed": seed, "eebench_version": __version__},
    }
    if instance_sha256:
        trajectory["instance_sha256"] = instance_sha256
    return trajectory
