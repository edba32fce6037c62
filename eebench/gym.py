"""Gymnasium environments over eebench's worlds: `import eebench.gym` registers eebench/GridDag-v0 and Rooms-v0.

The rules stay in the worlds (`world.grid_dag.GridDagEnv`); this module only translates: integer actions to move
words, the world's observation dict to a fixed Gymnasium space, and `render_mode="ansi"` to the text the LLM
agent reads. The full observation dict is in `info["observation"]` at every step (GridDag-v0: `node` is {} off a
node rather than None, so that vector envs can merge the infos).

    import gymnasium, eebench, eebench.gym
    env = gymnasium.make("eebench/GridDag-v0", instance=eebench.load("park2026-main/low-small/seed-0"))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from eebench.errors import EebenchError
from eebench.world.grid_dag import ACTIONS, GridDagEnv, GridDagInstance, NodeStatus, render_observation
from eebench.world.rooms import RoomsEnv, RoomsInstance, reset_options
from eebench.world.rooms import render_observation as render_rooms_observation

NODE_STATUS = (None, *NodeStatus)  # code 0: no node on the agent's cell


def _check_instance(instance: Any, kind: type, env_id: str) -> None:
    if not isinstance(instance, kind):
        other = {GridDagInstance: "eebench/GridDag-v0", RoomsInstance: "eebench/Rooms-v0"}.get(type(instance))
        raise ValueError(f"{env_id} plays {kind.__name__} instances, not {type(instance).__name__}"
                         + (f": make {other}" if other else ""))


def _flags(n: int) -> spaces.Space:
    """A 0/1 flag per object: MultiBinary, or an empty box when there is none (MultiBinary(0) is refused)."""
    return spaces.MultiBinary(n) if n else spaces.Box(0, 1, shape=(0,), dtype=np.int8)


class _WorldEnv(gymnasium.Env):
    """What both worlds' environments share: a world env behind them, the last observation, step and render."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # fps: only for recorders; an episode is text
    # each world's class sets: _render_text (its observation text), action_word and _encode (its spaces)

    def step(self, action: int | np.integer | str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        word = self.action_word(action)
        observation, reward, terminated, truncated, info = self._env.step(word)
        self._last = observation
        return self._encode(observation), reward, terminated, truncated, self._info(info, observation)

    def _info(self, info: dict[str, Any], observation: dict[str, Any]) -> dict[str, Any]:
        """The world's info, and its observation dict under `observation`."""
        return {**info, "observation": observation}

    def _index(self, action: Any) -> int:
        """An index of the action space; ValueError otherwise (-1 would count from the end, 1.7 be cut to 1)."""
        value = np.asarray(action)
        if value.shape != () or value.dtype.kind not in "iu" or not 0 <= int(value) < self.action_space.n:
            raise ValueError(f"action {action!r}: expected an index of {self.action_space} (0 to "
                             f"{self.action_space.n - 1}) or the action's text")
        return int(value)

    def render(self) -> str | None:
        """The observation as the text the LLM agent reads."""
        if self.render_mode != "ansi" or self._last is None:
            return None
        return self._render_text(self._last) + "\n"


class GridDag(_WorldEnv):
    """Park et al.'s grid map + task DAG as a Gymnasium environment.

    Actions: Discrete(4), the moves up, down, left, right (a move word is accepted too).
    Observation (what the agent is told, nothing more): `t`, `position` [x, y], `moves` (admissible moves as
    four 0/1 flags), `node` (0 for none, else 1 + the index of the node on the agent's cell), `node_status`
    (0 none, 1 undiscovered, 2 discovered, 3 achieved), `goal` (1 if that node is the goal).
    Reward: 1 when the goal is achieved, else 0 (`eebench.Scorer` gives the dense per-step record).
    """

    _render_text = staticmethod(render_observation)   # Park et al., Appendix C.3

    def __init__(self, instance: GridDagInstance, render_mode: str | None = None):
        _check_instance(instance, GridDagInstance, "eebench/GridDag-v0")
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
        return self._encode(observation), self._info(info, observation)

    def _info(self, info: dict[str, Any], observation: dict[str, Any]) -> dict[str, Any]:
        """As the world's, but `node` is {} off a node, not None: Gymnasium's vector envs merge the envs' infos
        key by key, into a dict's keys, and cannot merge a None of one env with a dict of another."""
        if observation["node"] is None:
            observation = {**observation, "node": {}}
        return {**info, "observation": observation}

    def action_word(self, action: int | np.integer | str) -> str:
        """The move word of an action index (a word is kept as it is)."""
        return action if isinstance(action, str) else ACTIONS[self._index(action)]

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


class Rooms(_WorldEnv):
    """Grams et al.'s room worlds as a Gymnasium environment: one Gymnasium episode per episode of the instance.

    Actions: Discrete(doors + balls): action k < doors is `<door k> door`, else `<ball k - doors> ball`, in the
    instance's order (a string such as 'khaki ball' is accepted too). Observation: `episode`, `doors` and `balls`
    (0/1 per door and ball of the instance: what the agent sees in its room), `doors_left`, `balls_left`,
    `actions_left`. Reward: the collected ball's. `reset()` starts the next episode of the run (the agent's memory
    of earlier ones is its own business); `reset(seed=...)` or a reset after the last episode starts the run over
    at episode 0, and `options={"episode": k}` picks one.
    """

    _render_text = staticmethod(render_rooms_observation)   # Grams et al., Appendix A.5

    def __init__(self, instance: RoomsInstance, render_mode: str | None = None):
        _check_instance(instance, RoomsInstance, "eebench/Rooms-v0")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: expected 'ansi' or None")
        self.instance = instance
        self.render_mode = render_mode
        self._env = RoomsEnv(instance)
        world = self._env.world
        self.actions = tuple(f"{name} door" for name in world.door_names) + \
            tuple(f"{name} ball" for name in world.ball_names)
        self._door_index = {name: i for i, name in enumerate(world.door_names)}
        self._ball_index = {name: i for i, name in enumerate(world.ball_names)}
        if not self.actions:
            raise ValueError(f"eebench/Rooms-v0: instance {instance.id!r} has no door and no ball, so no action")
        self.action_space = spaces.Discrete(len(self.actions))
        most = max(world.door_budget, world.ball_limit, world.max_actions)
        self.observation_space = spaces.Dict({
            "episode": spaces.Discrete(instance.episodes),
            "doors": _flags(len(world.door_names)),
            "balls": _flags(len(world.ball_names)),
            "doors_left": spaces.Box(0, most, shape=(), dtype=np.int64),
            "balls_left": spaces.Box(0, most, shape=(), dtype=np.int64),
            "actions_left": spaces.Box(0, most, shape=(), dtype=np.int64),
        })
        self._last: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        observation, info = self._env.reset(seed=seed, options=self._reset_options(seed, options))
        self._last = observation
        return self._encode(observation), self._info(info, observation)

    def episode_to_start(self, seed: int | None = None, options: dict[str, Any] | None = None) -> int:
        """The episode `reset(seed=seed, options=options)` starts; EebenchError for one the instance lacks."""
        return self._env.episode_to_start(self._reset_options(seed, options))

    def _reset_options(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        options = reset_options(options)
        if "episode" not in options and (seed is not None or self._env.next_episode >= self.instance.episodes):
            options["episode"] = 0   # a seed, or a reset after the last episode, starts the run over
        return options

    def action_word(self, action: int | np.integer | str) -> str:
        """The action text of an action index, `<name> door` or `<name> ball` (text is kept as it is)."""
        return action if isinstance(action, str) else self.actions[self._index(action)]

    def _encode(self, observation: dict[str, Any]) -> dict[str, Any]:
        doors = np.zeros(len(self._door_index), dtype=np.int8)
        doors[[self._door_index[name] for name in observation["doors"]]] = 1
        balls = np.zeros(len(self._ball_index), dtype=np.int8)
        balls[[self._ball_index[name] for name in observation["balls"]]] = 1
        return {"episode": observation["episode"], "doors": doors, "balls": balls,
                **{key: np.asarray(observation[key], dtype=np.int64)
                   for key in ("doors_left", "balls_left", "actions_left")}}


class ScoredReward(gymnasium.RewardWrapper):
    """Replace the environment's reward by a function of eebench's graded step record.

    The default is minus the error flag for grid_dag (Park et al.'s err(t)) and the ball's reward for rooms. The
    record of each step is in `info["step_record"]`; see `eebench.Scorer` for its fields. For rooms the scorer
    follows the run episode after episode (knowledge carries over): a reset to episode 0 starts it over.
    """

    def __init__(self, env: gymnasium.Env, reward: Callable[[Any], float] | None = None):
        super().__init__(env)
        from eebench.scorer import Scorer

        self.scorer = Scorer(env.unwrapped.instance)  # type: ignore[attr-defined]
        self._reward = reward or _default_reward
        self._record: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        starts = getattr(self.env.unwrapped, "episode_to_start", None)
        episode = starts(seed, options) if starts is not None else 0   # grid_dag: every episode is a run
        if episode != 0 and getattr(self.scorer, "next_episode", None) != episode:  # refused before the env moves
            raise EebenchError(f"ScoredReward scores a run episode after episode: episode {episode} follows an "
                               "episode that has not ended; reset to episode 0 to start over")
        observation, info = super().reset(seed=seed, options=options)
        if episode == 0:
            self.scorer.reset()
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        word = self.env.unwrapped.action_word(action)  # type: ignore[attr-defined]
        # the environment first: a step it refuses (the episode is over) must not move the scorer on
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._record = self.scorer.step(word)
        return observation, self.reward(reward), terminated, truncated, {**info, "step_record": self._record}

    def reward(self, reward: float) -> float:
        return float(self._reward(self._record))


def _default_reward(record: Any) -> float:
    return -record.error if hasattr(record, "error") else record.reward


gymnasium.register("eebench/GridDag-v0", entry_point=GridDag)
gymnasium.register("eebench/Rooms-v0", entry_point=Rooms)
