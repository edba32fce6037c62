"""Play an agent in an instance through its world's Gymnasium-shaped env and record a canonical trajectory."""

from __future__ import annotations

from typing import Any

from eebench import __version__
from eebench.errors import InputError, did_you_mean, one_of
from eebench.world.kinds import WorldKind, kind_of, kinds


def check_agent(name: str, kind: WorldKind) -> None:
    """InputError unless `name` is a baseline agent of this world kind (naming the kinds it plays, if any)."""
    if name in kind.agents:
        return
    elsewhere = [k.env for k in kinds() if name in k.agents]
    where = f"; {name!r} plays {one_of(elsewhere)} worlds" if elsewhere else did_you_mean(name, kind.agents)
    raise InputError(f"--agent: {kind.env} worlds have the agents {one_of(kind.agents)}, not {name!r}{where}")


def play_episode(instance: Any, agent_name: str, seed: int, *, instance_sha256: str | None = None,
                 observations: bool = False) -> dict[str, Any]:
    """The agent's run in the instance until its world ends it, as a trajectory/1 document.

    The world's env decides when an episode is over (terminated or truncated). A world of several episodes is
    played episode after episode by the same agent, and each step records its 0-based `episode`, so the log's
    boundaries are the world's own.
    """
    kind = kind_of(instance)
    check_agent(agent_name, kind)
    env = kind.make_env(instance)
    agent = kind.make_agent(agent_name, instance, seed)  # one agent for the run: it remembers across episodes
    steps = []
    for episode in range(kind.episodes(instance) if kind.episodes else 1):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            action = agent.act(obs)
            obs, _, terminated, truncated, _ = env.step(action)
            step: dict[str, Any] = {"action": action}
            if kind.episodes:
                step["episode"] = episode
            phase = getattr(agent, "phase", None)   # an agent of phases (explore-then-act) says each step's
            if phase is not None:
                step["phase"] = phase
            if observations:
                step["observation"] = kind.render_observation(obs)
            steps.append(step)
            done = terminated or truncated
        observe = getattr(agent, "observe", None)   # an agent that learns sees how its episode ended
        if observe is not None:
            observe(obs)
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
