"""The return-gap family of Grams et al. (Section 3.1, Appendix A.6) for `env: rooms`, by replay and exact solves.

K(i), the knowledge after episode i: the rooms the agent was in during episodes 0..i (the start included), the
doors it went through, the balls it collected at least once. R_max is the best return of one episode on the full
instance, R_exploit(i) the best using K(i) only, R_agent(i) what the agent collected in episode i; both bests are
orienteering problems (an open path from the start, at most `door_budget` door traversals, at most `ball_limit`
balls; travel between two balls costs the door distance of their rooms). Normalized by R_max:
explore(i) = (R_max - R_exploit(i)) / R_max, exploit(i) = (R_exploit(i) - R_agent(i)) / R_max and
total(i) = explore(i) + exploit(i) (= (R_max - R_agent(i)) / R_max); all NULL when R_max = 0.
Also coverage(i) = |rooms of K(i)| / |rooms|, redundancy (steps whose (room before, action) pair occurred earlier /
steps) and sample efficiency (steps up to the end of the first episode whose R_exploit reaches 90% of the largest).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from itertools import accumulate, chain, groupby
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from eebench.errors import InputError, Problem
from eebench.evaluator.families import FamilyColumns, Trajectory
from eebench.evaluator.orienteering import OrienteeringProblem, Solution, SolverCache, Status

if TYPE_CHECKING:
    from eebench.world.rooms import EpisodeKnowledge, RoomsInstance, RoomsReplay

METRIC_VERSION = "gaps/2"      # bump when any graded value for the same input would change (2: actions exactly)
SAMPLE_EFFICIENCY_SHARE = (9, 10)   # 90% of the largest R_exploit, as a ratio of integers (compared exactly)
TIME_LIMIT = 10.0              # seconds per solve; a solve stopped by it is stored as `bound`, never as optimal
STATES_KEPT = 50_000           # knowledge states remembered per instance (least recently used go): memory stays flat


class GapsTables:
    """Per instance: R_max, and R_exploit by knowledge state (doors, balls), shared by every trajectory."""

    def __init__(self, instance: RoomsInstance):
        # the rooms world is imported when a rooms instance is first graded: grading grid_dag never loads it
        from eebench.world import rooms

        self.instance = instance
        self.world = rooms.world_of(instance)  # held here: looking it up hashes the whole instance every time
        self.n_rooms = len(instance.rooms)
        self.cache = SolverCache()   # by problem content: two knowledge states with the same problem share a solve
        self._by_knowledge: OrderedDict[tuple[frozenset[str], frozenset[str]], Solution] = OrderedDict()
        self.lookups = 0             # R_exploit lookups by knowledge state, and how many found it solved
        self.state_hits = 0
        self.max_solution = self.cache.solve(self.problem(None), time_limit=TIME_LIMIT)

    @property
    def rooms(self) -> Any:
        """The rooms world's module, looked up rather than held: a module cannot be pickled, and a Scorer holding
        these tables is pickled (Ray, multiprocessing) or deep-copied (a copied env)."""
        from eebench.world import rooms

        return rooms

    def problem(self, known: EpisodeKnowledge | None) -> OrienteeringProblem:
        """The orienteering problem of one episode with knowledge `known` (None: the full instance).

        Node 0 is the start room (no prize); then the known balls in instance order, each a node of its own (two
        balls in one room are 0 apart). Costs are door distances in the known graph: known rooms, known doors.
        """
        instance = self.instance
        if known is None:
            balls = instance.balls
            dist = self.rooms.door_distances(self.world, sources=[instance.start, *(b.room for b in balls)])
        else:
            balls = tuple(b for b in instance.balls if b.name in known.balls)
            dist = self.rooms.door_distances(self.world, known.doors, known.rooms,
                                  sources=[instance.start, *(b.room for b in balls)])
        index = self.world.room_index
        nodes = [index[instance.start], *(index[b.room] for b in balls)]
        cost = dist[np.ix_(nodes, nodes)]
        # a known ball was reached through known doors, so nothing is unreachable; kept unaffordable all the same
        cost[cost == self.rooms.UNREACHABLE] = instance.door_budget + 1
        return OrienteeringProblem(cost, (0, *(b.reward for b in balls)), instance.door_budget, start=0, end=None,
                                   max_visits=instance.ball_limit)

    def exploit(self, known: EpisodeKnowledge) -> Solution:
        """R_exploit for knowledge `known`, solved once per knowledge state (rooms follow from the doors)."""
        key = (known.doors, known.balls)
        self.lookups += 1
        found = self._by_knowledge.get(key)
        if found is not None:
            self.state_hits += 1
            self._by_knowledge.move_to_end(key)
            return found
        if len(self.cache) >= STATES_KEPT:  # the solver's cache has no limit of its own: start a new one
            fresh = SolverCache()
            fresh.hits, fresh.misses = self.cache.hits, self.cache.misses
            self.cache = fresh
        found = self._by_knowledge[key] = self.cache.solve(self.problem(known), time_limit=TIME_LIMIT)
        if len(self._by_knowledge) > STATES_KEPT:
            self._by_knowledge.popitem(last=False)
        return found


class GapsReplay(NamedTuple):
    """One trajectory graded by the gaps family."""

    tables: GapsTables
    replay: RoomsReplay
    actions: list[Any]                 # the graded actions, as written (one per step)
    exploit: list[Solution]            # R_exploit(i) per episode played


def _normalized(action: Any) -> Any:
    return action.strip().lower() if isinstance(action, str) else action


class GapsFamily:
    """The return-gap family for `env: rooms`: fills `episodes`, the gaps columns of `trajectories` and `steps`."""

    name = "gaps"
    version = METRIC_VERSION
    envs = frozenset({"rooms"})
    fills = {
        "trajectories": ("end_reason", "n_steps", "ignored_actions", "invalid_moves", "n_episodes", "max_return",
                         "total_gap_last", "explore_gap_last", "exploit_gap_last", "total_gap_mean",
                         "explore_gap_mean", "exploit_gap_mean", "coverage", "redundancy", "sample_efficiency"),
        "steps": ("t", "action", "episode", "room", "valid"),
        "episodes": ("episode", "n_steps", "agent_return", "exploit_return", "max_return", "total_gap",
                     "explore_gap", "exploit_gap", "coverage", "solver", "solver_status", "exploit_bound",
                     "max_bound"),
    }

    def tables(self, instance: RoomsInstance) -> GapsTables:
        return GapsTables(instance)

    def replay(self, tables: GapsTables, instance: RoomsInstance, trajectory: Trajectory) -> GapsReplay:
        steps = trajectory.doc["steps"]
        actions = [step["action"] for step in steps]
        # the log's episode boundaries are used only when every step carries its episode; the indices some steps
        # carry are checked all the same (the actions are then one stream)
        labels = [(i, step["episode"]) for i, step in enumerate(steps) if "episode" in step]
        logged = [episode for _, episode in labels] if steps and len(labels) == len(steps) else None
        try:
            if labels and logged is None:
                from eebench.world.rooms import check_episodes

                check_episodes(labels, instance.episodes)
            replayed = tables.rooms.replay(tables.world, actions, logged)
        except InputError as exc:  # the world names the step; the file and line are ours to add
            raise InputError([Problem(trajectory.file, trajectory.line, p.field, p.message)
                              if isinstance(p, Problem) else Problem(trajectory.file, trajectory.line, None, p)
                              for p in exc.problems]) from None
        if logged is None:
            graded = actions[:len(replayed.steps)]  # ignored actions come only after the last episode
        else:  # per logged episode, the actions after the world ended it are the ignored ones
            graded = list(chain.from_iterable(
                [action for action, _ in group][:replayed.episode_steps[episode]]
                for episode, group in groupby(zip(actions, logged), key=lambda pair: pair[1])))
        return GapsReplay(tables, replayed, graded, [tables.exploit(k) for k in replayed.knowledge])

    def columns(self, replays: Sequence[GapsReplay]) -> FamilyColumns:
        trajectories: dict[str, list[Any]] = {name: [] for name in self.fills["trajectories"]}
        episodes: dict[str, list[Any]] = {name: [] for name in ("trajectory", *self.fills["episodes"])}
        for position, graded in enumerate(replays):
            for name, value in _trajectory_values(graded, episodes, position).items():
                trajectories[name].append(value)
        lengths = [len(g.replay.steps) for g in replays]
        n = sum(lengths)
        all_steps = list(chain.from_iterable(g.replay.steps for g in replays))
        steps = {
            "trajectory": np.repeat(np.arange(len(replays), dtype=np.int32), lengths),
            "t": np.fromiter(chain.from_iterable(range(k) for k in lengths), dtype=np.int32, count=n),
            "action": np.fromiter(chain.from_iterable(g.actions for g in replays), dtype=object, count=n),
            "episode": np.fromiter((s.episode for s in all_steps), dtype=np.int16, count=n),
            "room": np.fromiter((s.room for s in all_steps), dtype=object, count=n),
            "valid": np.fromiter((s.valid for s in all_steps), dtype=bool, count=n),
        }
        return FamilyColumns(trajectories, steps, {name: _array(name, values) for name, values in episodes.items()})


def _array(name: str, values: list[Any]) -> np.ndarray:
    if name == "trajectory":
        return np.asarray(values, dtype=np.int32)
    if name == "episode":
        return np.asarray(values, dtype=np.int16)
    if name == "n_steps":
        return np.asarray(values, dtype=np.int32)
    return np.fromiter(values, dtype=object, count=len(values))  # nullable numbers and text keep NULL as None


def _trajectory_values(graded: GapsReplay, episodes: dict[str, list[Any]], position: int) -> dict[str, Any]:
    """The trajectory's columns; its episode rows are appended to `episodes`."""
    tables, run = graded.tables, graded.replay
    best = tables.max_solution
    # A solve the time limit stopped (status bound) may have found less than a path known to be feasible: the
    # agent's own episode in K(i), the best of K(i - 1) in K(i), and any K(i)'s in the whole map. So each value is
    # the best of those (a proven optimum already is), and R_max >= R_exploit(i) >= R_agent(i) always holds.
    r_exploits = list(accumulate((max(s.value, agent) for s, agent in zip(graded.exploit, run.returns)), max))
    r_max = max([best.value, *r_exploits])
    explore: list[float | None] = []
    exploit: list[float | None] = []
    for i, (solution, agent, r_exploit) in enumerate(zip(graded.exploit, run.returns, r_exploits)):
        explore_gap = (r_max - r_exploit) / r_max if r_max else None
        exploit_gap = (r_exploit - agent) / r_max if r_max else None
        explore.append(explore_gap)
        exploit.append(exploit_gap)
        exact = solution.status is Status.OPTIMAL and best.status is Status.OPTIMAL
        for name, value in (
                ("trajectory", position), ("episode", i), ("n_steps", run.episode_steps[i]),
                ("agent_return", agent), ("exploit_return", r_exploit), ("max_return", r_max),
                # the total is the sum of its parts, so total = explore + exploit holds exactly as stored
                ("total_gap", None if explore_gap is None else explore_gap + exploit_gap),  # type: ignore[operator]
                ("explore_gap", explore_gap), ("exploit_gap", exploit_gap),
                ("coverage", len(run.knowledge[i].rooms) / tables.n_rooms),
                ("solver", solution.method.value),
                ("solver_status", (Status.OPTIMAL if exact else Status.BOUND).value),
                ("exploit_bound", None if solution.status is Status.OPTIMAL else solution.bound),
                ("max_bound", None if best.status is Status.OPTIMAL else best.bound)):
            episodes[name].append(value)
    played = len(run.returns)
    gaps = played > 0 and r_max > 0
    explore_mean = sum(explore) / played if gaps else None  # type: ignore[arg-type]
    exploit_mean = sum(exploit) / played if gaps else None  # type: ignore[arg-type]
    seen: set[tuple[str, Any]] = set()
    repeats = 0
    for step, action in zip(run.steps, graded.actions):
        pair = (step.room_before, _normalized(action))
        repeats += pair in seen
        seen.add(pair)
    ended = played == tables.instance.episodes and bool(run.steps) and run.steps[-1].ends_episode
    return {
        "end_reason": "episodes" if ended else "end_of_log",
        "n_steps": len(run.steps),
        "ignored_actions": run.ignored,
        "invalid_moves": sum(not step.valid for step in run.steps),
        "n_episodes": played,
        "max_return": r_max,
        "total_gap_last": explore[-1] + exploit[-1] if gaps else None,  # type: ignore[operator]
        "explore_gap_last": explore[-1] if gaps else None,
        "exploit_gap_last": exploit[-1] if gaps else None,
        "total_gap_mean": explore_mean + exploit_mean if gaps else None,  # type: ignore[operator]
        "explore_gap_mean": explore_mean,
        "exploit_gap_mean": exploit_mean,
        "coverage": len(run.knowledge[-1].rooms) / tables.n_rooms if played else None,
        "redundancy": repeats / len(run.steps) if run.steps else None,
        "sample_efficiency": _sample_efficiency(r_exploits, run.episode_steps),
    }


def _sample_efficiency(exploit: Sequence[float], episode_steps: Sequence[int]) -> int | None:
    """Steps up to the end of the first episode whose R_exploit reaches 90% of the largest; None if that is 0."""
    largest = max(exploit, default=0)
    if not largest:
        return None
    share, whole = SAMPLE_EFFICIENCY_SHARE
    first = next(i for i, value in enumerate(exploit) if whole * value >= share * largest)
    return sum(episode_steps[:first + 1])


FAMILY = GapsFamily()
