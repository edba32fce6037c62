"""Gymnasium environments over eebench's worlds: `import eebench.gym` registers eebench/GridDag-v0.

The rules stay in the worlds (`world.grid_dag.GridDagEnv`); this module only translates: integer actions to move
words, the world's observation dict to a fixed Gymnasium space, and `render_mode="ansi"` to the text the LLM
agent reads. The full observation dict is in `info["observation"]` at every step.

    import gymnasium, eebench, eebench.gym
    env = gymnasium.make("eebench/GridDag-v0", instance=eebench.load("park2026-main/low-small/seed-0"))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from eebench.world.grid_dag import ACTIONS, GridDagEnv, GridDagInstance, NodeStatus, render_observation

NODE_STATUS = (None, *NodeStatus)  # code 0: no node on the agent's cell


class GridDag(gymnasium.Env):
    """Park et al.'s grid map + task DAG as a Gymnasium environment.

    Actions: Discrete(4), the moves up, down, left, right (a move word is accepted too).
    Observation (what the agent is told, nothing more): `t`, `position` [x, y], `moves` (admissible moves as
    four 0/1 flags), `node` (0 for none, else 1 + the index of the node on the agent's cell), `node_status`
    (0 none, 1 undiscovered, 2 discovered, 3 achieved), `goal` (1 if that node is the goal).
    Reward: 1 when the goal is achieved, else 0 (`eebench.Scorer` gives the dense per-step record).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # fps: only for recorders; an episode is text

    def __init__(self, instance: GridDagInstance, render_mode: str | None = None):
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: expected 'ansi' or None")
        self.instance = instance
        self.render_mode = render_mode
        self._env = GridDagEnv(instance)
        world = self._env.world
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.observation_space = spaces.Dict({
            "t": spaces.Box(0, world.budget, shape=(), dtype=np.int64),
            "position": spaces.MultiDiscrete([world.width, world.height]),
            "moves": spaces.MultiBinary(len(ACTIONS)),
            "node": spaces.Discrete(len(instance.nodes) + 1),
            "node_status": spaces.Discrete(len(NODE_STATUS)),
            "goal": spaces.Discrete(2),
        })
        self._last: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        observation, info = self._env.reset(seed=seed, options=options)
        self._last = observation
        return self._encode(observation), {**info, "observation": observation}

    def step(self, action: int | np.integer | str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        word = action if isinstance(action, str) else ACTIONS[int(action)]
        observation, reward, terminated, truncated, info = self._env.step(word)
        self._last = observation
        return self._encode(observation), reward, terminated, truncated, {**info, "observation": observation}

    def render(self) -> str | None:
        """The observation as the text the LLM agent reads (Park et al., Appendix C.3)."""
        if self.render_mode != "ansi" or self._last is None:
            return None
        return render_observation(self._last) + "\n"

    def _encode(self, observation: dict[str, Any]) -> dict[str, Any]:
        world = self._env.world
        node = observation["node"]
        return {
            "t": np.asarray(observation["t"], dtype=np.int64),
            "position": np.asarray(observation["position"], dtype=np.int64),
            "moves": np.asarray([name in observation["moves"] for name in ACTIONS], dtype=np.int8),
            "node": 0 if node is None else 1 + world.node_index[node["id"]],
            "node_status": 0 if node is None else NODE_STATUS.index(NodeStatus(node["status"])),
            "goal": int(bool(node and node["goal"])),
        }


class ScoredReward(gymnasium.RewardWrapper):
    """Replace the environment's reward by a function of eebench's graded step record (default: minus the error).

    The record of each step is also in `info["step_record"]`; see `eebench.Scorer` for its fields.
    """

    def __init__(self, env: gymnasium.Env, reward: Callable[[Any], float] = lambda record: -record.error):
        super().__init__(env)
        from eebench.scorer import Scorer

        self.scorer = Scorer(env.unwrapped.instance)  # type: ignore[attr-defined]
        self._reward = reward
        self._record: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        self.scorer.reset()
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._record = self.scorer.step(action if isinstance(action, str) else ACTIONS[int(action)])
        observation, reward, terminated, truncated, info = super().step(action)
        return observation, reward, terminated, truncated, {**info, "step_record": self._record}

    def reward(self, reward: float) -> float:
        return float(self._reward(self._record))


gymnasium.register("eebench/GridDag-v0", entry_point=GridDag, disable_env_checker=False)
