"""Dense per-step rewards: the graded step record of each action as it is played, one episode at a time or in batch.

`Scorer(instance)` keeps the replay's state between actions, so a trainer can turn any field of the record
(`-error`, `progress`, ...) into a reward without writing a trajectory. grid_dag: the per-instance tables are the
grader's own (`evaluator.park.ParkTables`); `Scorer.batch` runs the grader's replay over many trajectories of the
instance at once (compiled, as the grader runs it, for large batches), and `Scorer.step` follows the same rules one
action at a time (tests hold the three equal). rooms: steps by the world's rules, episode rows by the gaps family.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Sequence
from enum import Enum
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from eebench.errors import EebenchError
from eebench.evaluator.park import (
    COMPILED_FROM_STEPS,
    _ERROR,
    _GAIN,
    _PROGRESS,
    EXPLOIT_CASES,
    EXPLORE_CASES,
    ParkTables,
    _case,
    _pending,
    Replays,
    replay,
    replay_compiled_joined,
    step_columns,
)
from eebench.world.grid_dag import ACTION_INDEX, GridDagInstance, parse_action

if TYPE_CHECKING:
    from eebench.world.rooms import EpisodeEnd as RoomsEnd
    from eebench.world.rooms import EpisodeKnowledge, RoomsInstance, RoomsStep


class EndReason(str, Enum):
    """Why an episode ended, as the trajectories table's `end_reason` says it."""

    GOAL = "goal"
    BUDGET = "budget"


class StepRecord(NamedTuple):
    """One graded step of a grid_dag episode: the columns of the `steps` table, and whether the episode ended."""

    t: int
    action: str | None
    from_x: int
    from_y: int
    to_x: int
    to_y: int
    valid: bool
    case_id: int        # Park et al.'s case 1-4 of the state the action was taken in
    n_targets: int      # |T(t)|
    gain: int
    progress: int
    stale: int          # S(t)
    error: int          # err(t): 1 for an exploration or exploitation error
    visit_depth: int    # EAPO: earlier visits of the cell entered (the start counts one before the first step)
    end: EndReason | None = None   # set on the last step of the episode

    @property
    def explore_error(self) -> int:
        return self.error if self.case_id in EXPLORE_CASES else 0

    @property
    def exploit_error(self) -> int:
        return self.error if self.case_id in EXPLOIT_CASES else 0


class Scorer(abc.ABC):
    """`Scorer(instance)` makes the scorer of the instance's world kind (`GridDagScorer`, `RoomsScorer`)."""

    def __new__(cls, instance: Any = None, *args: Any, **kwargs: Any) -> Scorer:
        # (a world's scorer class is made without arguments too: a copy or an unpickled one, which sets its state)
        if cls is Scorer:
            from eebench.world.kinds import kind_of  # one kind at a time: grid_dag never imports the rooms world

            try:
                env = kind_of(instance).env
            except TypeError:
                env = None
            if env not in _SCORERS:
                raise EebenchError(f"no scorer for {type(instance).__name__}; expected an instance from eebench.load "
                                   f"(worlds: {', '.join(_SCORERS)})")
            cls = _SCORERS[env]
        return super().__new__(cls)

    @abc.abstractmethod
    def reset(self) -> None:
        """Start over (a new episode, or for rooms a new run)."""

    @abc.abstractmethod
    def step(self, action: Any) -> Any:
        """Grade one action and advance."""

    @property
    @abc.abstractmethod
    def done(self) -> bool:
        """Whether the episode (rooms: the run) has ended: `step` needs `reset()` first."""

    def play(self, actions: Sequence[Any]) -> list[Any]:
        """Reset, then grade `actions` one by one until the episode (rooms: the run) ends; later actions are not
        graded, as `eebench grade` does not grade them."""
        actions = _actions(actions)
        self.reset()
        records = []
        for action in actions:
            records.append(self.step(action))
            if self.done:
                break
        return records

    @abc.abstractmethod
    def batch(self, trajectories: Sequence[Sequence[Any]]) -> dict[str, np.ndarray]:
        """The step columns of many trajectories of this instance, each played as `play` does (`trajectory`: each
        one's position in `trajectories`)."""


def _check_action(action: Any) -> None:
    """An action is text as a log holds it, or None (none read), as in a trajectory; a Gymnasium action index
    would otherwise be graded as a word no world knows."""
    if action is not None and not isinstance(action, str):
        raise TypeError(f"action {action!r}: expected the action's text or None, as a trajectory holds it (an "
                        "eebench.gym action index is env.unwrapped.action_word(index))")


def _trajectories(trajectories: Any) -> list[list[Any]]:
    if not isinstance(trajectories, (list, tuple)):
        raise TypeError(f"trajectories: expected a list of action lists, found {type(trajectories).__name__}")
    return [_actions(actions, f"trajectories[{k}]") for k, actions in enumerate(trajectories)]


def _actions(actions: Any, where: str = "actions") -> list[Any]:
    """A list of actions as a trajectory holds them (each its text or None); a string would be read a letter an
    action, so it is refused, as is anything not a list or tuple."""
    if not isinstance(actions, (list, tuple)):
        raise TypeError(f"{where}: expected a list of actions (each its text or None), found "
                        f"{type(actions).__name__}")
    if not set(map(type, actions)) <= _ACTION_TYPES:   # (the types at C speed: batch grades millions of actions)
        for action in actions:
            _check_action(action)
    return actions if isinstance(actions, list) else list(actions)


_ACTION_TYPES = {str, type(None)}


class GridDagScorer(Scorer):
    """Park et al.'s step record of each action of a grid_dag episode, as the action is played."""

    def __init__(self, instance: GridDagInstance, tables: ParkTables | None = None):
        self.tables = tables if tables is not None else ParkTables(instance)
        self.instance = instance
        world = self.tables.world
        self._width = world.width
        closer = self.tables.closer
        self._closer = closer.__getitem__ if isinstance(closer, list) else closer
        self.reset()

    def reset(self) -> None:
        """Start a new episode at t = 0."""
        tables = self.tables
        world = tables.world
        observed, self._unobserved, self._pending, self._goal_pending, case = tables.initial
        self._case, self._targets, self._n_targets = case
        self._unseen = tables.all_cells ^ observed
        self._achieved = 0
        self._fresh = set(tables.initial_fresh)
        self._pos = world.start
        self._segment = {world.start}
        self._stale = 0
        self._visits = {world.start: 1}   # visits per cell, the start counted as one before the first step
        self.t = 0
        self.end: EndReason | None = None

    @property
    def done(self) -> bool:
        return self.end is not None

    @property
    def position(self) -> tuple[int, int]:
        return self._pos % self._width, self._pos // self._width

    def step(self, action: str | None) -> StepRecord:
        """Grade one action (a move word; anything else is an inadmissible move) and advance the episode."""
        if self.end is not None:
            raise EebenchError(f"the episode ended ({self.end.value}) at t = {self.t}; call reset() first")
        tables = self.tables
        world = tables.world
        code = ACTION_INDEX.get(action) if action.__class__ is str else None
        if code is None:
            _check_action(action)
            parsed = parse_action(action)
            code = 4 if parsed is None else parsed
        pos = self._pos
        slot = 5 * pos + code
        target = tables.to[slot]
        case, n_targets, t = self._case, self._n_targets, self.t
        width = self._width
        self.t = t + 1
        if target < 0:  # inadmissible: stays in place, Gain = 0, nothing added to the segment
            flags, stale, target = _ERROR, self._stale, pos
        elif target in self._fresh:  # a progress event: the segment restarts here
            flags = _GAIN | _PROGRESS if self._closer(slot) & self._targets else _PROGRESS
            stale = self._stale = 0
            self._segment = {target}
            self._progress(target)
        else:
            rise = 0  # S(t) - S(t-1), counted as `park.replay` counts it
            segment, n_cells = self._segment, world.n_cells
            if target in segment:
                key = target + n_cells
                if key in segment:
                    rise = 1
                else:
                    segment.add(key)
                key = tables.edge[slot]
                if key not in segment:
                    segment.add(key)
                    rise += 1
                elif key + 2 * n_cells in segment:
                    rise += 1
                else:
                    segment.add(key + 2 * n_cells)
            else:
                segment.add(target)
                segment.add(tables.edge[slot])
            if self._closer(slot) & self._targets:
                flags = _GAIN | _ERROR if rise and n_targets != 1 else _GAIN
            else:
                flags = _ERROR
            stale = self._stale = self._stale + rise
        self._pos = target
        if self._achieved >> world.goal & 1:
            self.end = EndReason.GOAL
        elif self.t >= world.budget:
            self.end = EndReason.BUDGET
        visits = self._visits
        depth = visits.get(target, 0)
        visits[target] = depth + 1
        return StepRecord(t, action, pos % width, pos // width, target % width, target // width, target != pos,
                          case, n_targets, flags & _GAIN, (flags & _PROGRESS) >> 1, stale, (flags & _ERROR) >> 2,
                          depth, self.end)

    def _progress(self, target: int) -> None:
        """Update U(t), P(t), the case and T(t) after a progress event at `target` (as `park.replay` does)."""
        tables = self.tables
        world = tables.world
        self._fresh.discard(target)
        self._unseen &= ~(1 << target)
        self._unobserved = (self._unobserved | world.neighbours[target]) & self._unseen
        node = world.node_at[target]
        if node >= 0:
            achieved = self._achieved
            if not achieved >> node & 1 and world.prerequisites_met(node, achieved):
                achieved |= 1 << node
                self._achieved = achieved
                self._fresh.update(cell for other, cell in tables.node_cells
                                   if not achieved >> other & 1 and world.prerequisites_met(other, achieved))
            self._pending, self._goal_pending = _pending(world, tables.all_cells ^ self._unseen, self._achieved)
            self._case, self._targets, self._n_targets = _case(
                self._pending, self._goal_pending, world.node_cell[world.goal], self._unobserved)
        elif self._case == 1:
            self._targets = self._unobserved
            self._n_targets = self._unobserved.bit_count()
        elif self._case != 2:
            self._case, self._targets, self._n_targets = _case(
                self._pending, self._goal_pending, world.node_cell[world.goal], self._unobserved)

    def batch(self, trajectories: Sequence[Sequence[str | None]]) -> dict[str, np.ndarray]:
        """The step columns of many trajectories of this instance at once, as `eebench grade` writes them: replayed
        together over flat arrays, not a record at a time.

        `trajectory` is each one's position in `trajectories`; the other columns are the `steps` table's.
        """
        trajectories = _trajectories(trajectories)
        if _compiled_batch(sum(map(len, trajectories))):
            replays = replay_compiled_joined(self.tables, trajectories)
        else:
            replays = Replays.of([replay(self.tables, actions) for actions in trajectories])
        columns = step_columns(replays, [self._width] * len(trajectories))
        columns["action"] = np.fromiter(chain.from_iterable(a[:n] for a, n in zip(trajectories,
                                                                                  replays.lengths.tolist())),
                                        dtype=object, count=len(columns["t"]))
        columns["visit_depth"] = _visit_depths(self.tables.world.start, self.tables.n_cells, replays.cells_to,
                                               replays.lengths)
        for name, cases in (("explore_error", EXPLORE_CASES), ("exploit_error", EXPLOIT_CASES)):   # as the record's
            columns[name] = np.where(np.isin(columns["case_id"], list(cases)), columns["error"], 0
                                     ).astype(columns["error"].dtype)
        return columns


_batched_steps = 0   # actions given to GridDagScorer.batch in this process


def _compiled_batch(actions: int) -> bool:
    """Whether a batch of this many actions is replayed compiled (numba): once the batches of this process pay for
    its import, as the grader decides it, or at once when it is loaded already (a batch of 1,000 rollouts of a
    40-step budget replayed in Python ran at a tenth of the compiled speed). Either way the columns are the same."""
    global _batched_steps
    _batched_steps += actions
    return _batched_steps >= COMPILED_FROM_STEPS or "eebench.evaluator.park_compiled" in sys.modules


def _visit_depths(start: int, n_cells: int, cells_to: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each step's earlier visits of the cell it enters, for runs of `lengths` steps one after another in
    `cells_to`: the cells of each run, its start first, sorted stably by (run, cell); a visit's depth is its rank
    within its (run, cell) group."""
    with_start = lengths.astype(np.int64) + 1
    is_start = np.zeros(int(with_start.sum()), dtype=bool)
    is_start[np.cumsum(with_start) - with_start] = True
    cells = np.full(is_start.size, start, dtype=np.int64)
    cells[~is_start] = cells_to
    key = np.repeat(np.arange(lengths.size, dtype=np.int64), with_start) * n_cells + cells
    order = np.argsort(key, kind="stable")   # visits in time order within a group
    sorted_key = key[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = sorted_key[1:] != sorted_key[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(key.size), 0))
    depth = np.empty(key.size, dtype=np.int32)
    depth[order] = np.arange(key.size) - group_start
    return depth[~is_start]   # the start's own visit is not a step


class EpisodeRecord(NamedTuple):
    """A rooms episode as the `episodes` table has it (Grams et al.'s return gaps), given when it ends."""

    episode: int
    n_steps: int
    agent_return: float
    exploit_return: float    # R_exploit(i): the best return of one episode with the knowledge K(i)
    max_return: float        # R_max
    total_gap: float | None
    explore_gap: float | None
    exploit_gap: float | None
    coverage: float
    solver: str
    solver_status: str
    exploit_bound: float | None
    max_bound: float | None


class RoomsStepRecord(NamedTuple):
    """One graded step of a rooms run: the `steps` table's columns, the reward and the episode's return so far;
    on the step that ends an episode, why (`end`) and the episode's graded row (`episode_record`)."""

    t: int
    action: Any
    episode: int
    room: str
    valid: bool
    reward: int
    return_so_far: int          # of this episode, this step's reward included
    visit_depth: int            # EAPO: earlier visits of the room it leaves the agent in (each episode's start
    #                             room counts one visit when the episode starts)
    end: RoomsEnd | None = None
    episode_record: EpisodeRecord | None = None


class RoomsScorer(Scorer):
    """Grams et al.'s records of each action of a rooms run (all the instance's episodes, one after another).

    Steps follow the world's rules (`world.rooms`); an episode's row is the gaps family's own (`evaluator.gaps`),
    computed over the run so far when the episode ends. After the world ends an episode the next action starts
    the next one, as `eebench grade` reads a log without episode indices; `reset()` starts the run over.
    """

    def __init__(self, instance: RoomsInstance, tables: Any = None):
        self.instance = instance
        from eebench.world.rooms import world_of

        self._tables = tables  # the gaps family's GapsTables, made when the first episode ends
        self.world = world_of(instance)
        self.reset()

    def reset(self) -> None:
        """Start the run over at episode 0, t = 0, with no knowledge."""
        world = self.world
        self.t = 0
        self._state = world.initial_state(0)
        self._steps: list[RoomsStep] = []
        self._actions: list[Any] = []
        self._returns: list[int] = []
        self._knowledge: list[EpisodeKnowledge] = []
        self._episode_steps: list[int] = []
        self._rooms = {world.start}
        self._doors: set[int] = set()
        self._balls: set[int] = set()
        self._return = 0
        self._n_steps = 0
        self._visits = {self.instance.start: 1}   # per room id, over the run; each episode's start is a visit
        self._over = False

    @property
    def done(self) -> bool:
        """Whether the run's last episode has ended."""
        return self._over

    def batch(self, trajectories: Sequence[Sequence[Any]]) -> dict[str, np.ndarray]:
        """The columns of `RoomsStepRecord` (`end` and `episode_record` aside) of many runs of this instance, each
        played as `play` does (`trajectory`: each one's position in `trajectories`); a run at a time."""
        # played by a scorer of their own, as grid_dag's batch leaves a run being stepped where it was; the gaps
        # tables (and their solved problems) are shared
        player = RoomsScorer(self.instance, self._tables)
        records = [(k, record) for k, actions in enumerate(_trajectories(trajectories))
                   for record in player.play(actions)]
        self._tables = player._tables
        columns = {"trajectory": np.fromiter((k for k, _ in records), dtype=np.int64, count=len(records))}
        for name, dtype in _ROOMS_COLUMNS.items():
            columns[name] = np.array([getattr(record, name) for _, record in records], dtype=dtype)
        return columns

    @property
    def episode(self) -> int:
        return self._state.episode

    @property
    def next_episode(self) -> int | None:
        """The episode the next action starts, or None in the middle of one."""
        return self._state.episode + 1 if self._state.over else None

    def step(self, action: Any) -> RoomsStepRecord:
        """Grade one action; it starts the next episode when the world ended the previous one."""
        if self.done:
            raise EebenchError(f"the run ended after its {self.instance.episodes} episodes at t = {self.t}; "
                               "call reset() first")
        _check_action(action)
        world = self.world
        if self._state.over:
            self._state = world.initial_state(self._state.episode + 1)
            self._return = self._n_steps = 0
            self._visits[self.instance.start] = self._visits.get(self.instance.start, 0) + 1
        before = self._state.room
        result = world.step(self._state, action)
        self._state = state = result.state
        outcome = result.outcome
        self._steps.append(outcome)
        self._actions.append(action)
        self._return += outcome.reward
        self._n_steps += 1
        if outcome.valid:
            if state.room != before:
                self._rooms.add(state.room)
                self._doors.add(world.door_lookup[world.parse(action)[1]])  # parse: (kind, the name's lookup key)
            elif outcome.kind == "ball":
                self._balls.add(world.ball_lookup[world.parse(action)[1]])
        record = None
        if result.end is not None:
            record = self._close()
            self._over = len(self._returns) >= self.instance.episodes
        t = self.t
        self.t += 1
        depth = self._visits.get(outcome.room, 0)
        self._visits[outcome.room] = depth + 1
        return RoomsStepRecord(t, action, outcome.episode, outcome.room, outcome.valid, outcome.reward, self._return,
                               depth, result.end, record)

    def _close(self) -> EpisodeRecord:
        """Close the ended episode: its knowledge K(i), and its row as the gaps family computes it for the run so
        far (the family is imported here: grid_dag users never load the rooms world or the solver)."""
        from eebench.world.rooms import EpisodeKnowledge, RoomsReplay

        world = self.world
        self._returns.append(self._return)
        self._episode_steps.append(self._n_steps)
        self._knowledge.append(EpisodeKnowledge(frozenset(world.room_ids[r] for r in self._rooms),
                                                frozenset(world.door_names[d] for d in self._doors),
                                                frozenset(world.ball_names[b] for b in self._balls)))
        from eebench.evaluator.gaps import FAMILY as GAPS
        from eebench.evaluator.gaps import GapsReplay

        if self._tables is None:
            self._tables = GAPS.tables(self.instance)
        tables = self._tables
        run = RoomsReplay(self._steps, self._returns, self._knowledge, self._episode_steps, 0)
        graded = GapsReplay(tables, run, self._actions, [tables.exploit(k) for k in self._knowledge])
        episodes = GAPS.columns([graded]).episodes
        assert episodes is not None  # the gaps family always fills its episodes
        return EpisodeRecord(*(_plain(episodes[name][-1]) for name in EpisodeRecord._fields))


_ROOMS_COLUMNS = {"t": np.int64, "action": object, "episode": np.int64, "room": object, "valid": np.bool_,
                  "reward": np.int64, "return_so_far": np.int64, "visit_depth": np.int64}
assert [*_ROOMS_COLUMNS, "end", "episode_record"] == list(RoomsStepRecord._fields)


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value a table row holds."""
    return value.item() if isinstance(value, np.generic) else value


_SCORERS: dict[str, type[Scorer]] = {"grid_dag": GridDagScorer, "rooms": RoomsScorer}  # by instance `env`
