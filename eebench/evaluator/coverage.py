"""Exploration coverage and revisits for every world kind: ECC (Look Before You Leap, Section 3.2) and EAPO's
visitation depth and exploration degree (Eq. 12, Appendix D.7.5).

The state of a step is where it leaves the agent: grid_dag the cell (`x,y`), rooms the room, a logged trajectory
the step's `state` field, else the first group (or the whole match) of its checkpoint set's state regex, else the
previous step's state (none before the first). The initial state (grid_dag's start cell; the start room at the
beginning of each rooms episode) is one visit before the first step; a logged trajectory has none.
- visit_depth of a step: earlier visits of its state (0 on the first; a step that stays put is a visit too).
- distinct_states: states visited, the initial one included; exploration_degree: states visited twice or more /
  distinct_states.
- A checkpoint is hit after k steps when its predicate first holds for step k (1-based), after 0 when it holds
  in the initial state. ECC = checkpoints hit / checkpoints of the trajectory (NULL when none apply); the curve
  is the ECC after each step.
"""

from __future__ import annotations

import functools
import graphlib
from collections.abc import Hashable, Sequence
from itertools import chain, groupby
from typing import Any, NamedTuple

import numpy as np

from eebench.checkpoints import CheckpointLibrary, CheckpointSet, Field, Rule, StateReader
from eebench.documents import json_type, load_schema, scalar_problem
from eebench.errors import InputError, Problem, did_you_mean, quoted
from eebench.evaluator.families import FamilyColumns, Trajectory, WordList, step_columns_of
from eebench.long_lines import StepList
from eebench.world.grid_dag import GridDagInstance, GridDagWorld

METRIC_VERSION = "coverage/1"  # bump when any graded value for the same input would change
LOGGED = "logged"
PHASES = ("explore", "act")    # of a step's `phase` (Explore-then-Act)
NEVER = 2 ** 62                # hit after this many steps: never (larger than any step, so min and max just work)


class LoggedInstance(NamedTuple):
    """What a logged trajectory is graded in: no world, only the id its checkpoints are matched against."""

    id: str
    meta: dict[str, Any] | None = None


class Plan(NamedTuple):
    """The checkpoints of one instance, compiled to lookups. A checkpoint defined by several matching sets (the
    same id) is hit when the first of its definitions holds."""

    ids: tuple[str, ...]
    by_state: dict[Hashable, tuple[int, ...]]           # hit at the first visit of the state
    state_regex: tuple[tuple[int, Any], ...]             # logged: searched in a state's text at its first visit
    by_field: tuple[tuple[str, tuple[tuple[int, Any], ...]], ...]   # searched in a step's field
    achieved: dict[int, tuple[int, ...]]                 # grid_dag node index -> its `achieved` checkpoints
    balls: dict[str, tuple[int, ...]]                    # rooms ball name -> its `collected` checkpoints
    alls: tuple[tuple[int, tuple[int, ...]], ...]        # members before the checkpoints that need them
    reader: StateReader | None                           # logged: how a state is read from a step
    seen: SeenTexts | None                               # logged: what by_field's regexes found in texts searched


class SeenTexts:
    """What each field's regexes found in the texts already searched, up to LIMIT characters (then forgotten): a
    text game shows a room's description at every visit, in every episode of the game, and its rooms' regexes, 60
    on a CoinCollector map, were half of grading such a log. A logged world's plan, one per combination of sets,
    keeps it across its trajectories; a simulated world's plans (one per instance, up to hundreds held) keep it
    for one trajectory, so what they hold stays what one trajectory shows."""

    LIMIT = 8_000_000   # characters held: the texts stay alive while they are keys

    __slots__ = ("found", "chars")

    def __init__(self) -> None:
        self.found: dict[str, dict[str, tuple[int, ...]]] = {}   # field -> text -> the checkpoints found there
        self.chars = 0

    def search(self, field: str, text: str, checkpoints: tuple[tuple[int, Any], ...]) -> tuple[int, ...]:
        """Search a text not seen before, and keep what was found (`found[field]` may be a new dict after)."""
        found = tuple(i for i, regex in checkpoints if regex.search(text))
        if self.chars + len(text) > self.LIMIT:
            self.found, self.chars = {}, 0
        self.found.setdefault(field, {})[text] = found
        self.chars += len(text)
        return found


def _plan(sets: Sequence[CheckpointSet], states: dict[str, Hashable] | None,
          rules: dict[Rule, list[tuple[str, str, Hashable]]], seen: SeenTexts | None = None) -> Plan:
    """Compile `sets` for one instance. `states`: the world's state texts -> state keys (None: logged, open);
    `rules`: per rule, (checkpoint id, kind, key) with kind `state`, `achieved` or `ball`."""
    index: dict[str, int] = {}
    by_state: dict[Hashable, list[int]] = {}
    state_regex: list[tuple[int, Any]] = []
    by_field: dict[str, list[tuple[int, Any]]] = {}
    achieved: dict[int, list[int]] = {}
    balls: dict[str, list[int]] = {}
    named_alls: list[tuple[int, tuple[str, ...]]] = []
    reader = next((s.state for s in sets if s.state is not None), None)

    def add(cid: str) -> int:
        return index.setdefault(cid, len(index))

    for checkpoint_set in sets:
        for rule in checkpoint_set.rules:
            for cid, kind, key in rules.get(rule, ()):
                i = add(cid)
                target = by_state if kind == "state" else achieved if kind == "achieved" else balls
                target.setdefault(key, []).append(i)  # type: ignore[attr-defined]
        for checkpoint in checkpoint_set.checkpoints:
            i = add(checkpoint.id)
            if checkpoint.all is not None:
                named_alls.append((i, checkpoint.all))
            elif checkpoint.state is not None:
                if states is None:
                    by_state.setdefault(checkpoint.state, []).append(i)
                elif checkpoint.state in states:  # a state the world does not have is never hit
                    by_state.setdefault(states[checkpoint.state], []).append(i)
            elif checkpoint.field is Field.STATE:
                if states is None:
                    state_regex.append((i, checkpoint.regex))
                else:  # a simulated world's states are finite: decided once per instance
                    for text, key in states.items():
                        if checkpoint.regex.search(text):  # type: ignore[union-attr]
                            by_state.setdefault(key, []).append(i)
            else:
                field = checkpoint.field.value  # type: ignore[union-attr]
                by_field.setdefault(field, []).append((i, checkpoint.regex))
    alls = [(i, tuple(index.get(m, -1) for m in members)) for i, members in named_alls]
    alls = [(i, members) for i, members in alls if -1 not in members]  # a rule's id this instance lacks: never hit
    return Plan(tuple(index), {k: tuple(v) for k, v in by_state.items()}, tuple(state_regex),
                tuple((f, tuple(v)) for f, v in by_field.items()), {k: tuple(v) for k, v in achieved.items()},
                {k: tuple(v) for k, v in balls.items()}, _members_first(alls), reader, seen)


def _members_first(alls: list[tuple[int, tuple[int, ...]]]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The `all`s in an order that evaluates each after every `all` defining one of its members, so one pass
    gives each its first hit. An id defined in several sets is one checkpoint, so an `all` of one set may need
    an `all` of a later set, even in a cycle across sets: then the pass is repeated once per `all` (an `all` can
    only bring a hit earlier, from a member hit by another definition, and that runs through at most every `all`
    once; NEVER, where only the cycle would justify a hit, stays NEVER)."""
    needs: dict[int, set[int]] = {}
    for i, members in alls:   # (an id may be an `all` in several sets: it needs what any of them names)
        needs.setdefault(i, set()).update(members)
    try:
        order = {i: k for k, i in enumerate(graphlib.TopologicalSorter(needs).static_order())}
    except graphlib.CycleError:
        return tuple(alls) * len(alls)
    return tuple(sorted(alls, key=lambda entry: order[entry[0]]))


class GridTables:
    """grid_dag, per instance: the checkpoint plan, the node cells, and the cells whose node is achieved on entry
    at the start (no prerequisites). The moves are the Park family's: its replay is the one replay of the rules."""

    __slots__ = ("world", "plan", "node_cells", "achievable", "_park", "_lookups")

    def __init__(self, instance: GridDagInstance, sets: Sequence[CheckpointSet]):
        self.world = world = GridDagWorld(instance)
        width = world.width
        cells = [cell for cell in range(world.n_cells) if world.free[cell]]
        states = {f"{cell % width},{cell // width}": cell for cell in cells}
        rules: dict[Rule, list[tuple[str, str, Hashable]]] = {
            Rule.CELL_OBSERVED: [(f"cell:{text}", "state", cell) for text, cell in states.items()],
            Rule.NODE_DISCOVERED: [(f"node:{node}:discovered", "state", world.node_cell[i])
                                   for i, node in enumerate(world.node_ids)],
            Rule.NODE_ACHIEVED: [(f"node:{node}:achieved", "achieved", i) for i, node in enumerate(world.node_ids)],
        }
        self.plan = _plan(sets, states, rules)
        self.node_cells = tuple((node, cell) for node, cell in enumerate(world.node_cell)
                                if world.node_at[cell] == node)
        self.achievable = frozenset(cell for node, cell in self.node_cells if world.prerequisites_met(node, 0))
        self._park: Any = None
        self._lookups: GridLookups | None = None

    def lookups(self) -> GridLookups:
        """The plan as the compiled path reads it (made on first use)."""
        if self._lookups is None:
            plan, n_cells = self.plan, self.world.n_cells
            self._lookups = GridLookups(*_csr(plan.by_state, n_cells), *_csr(plan.achieved, len(self.world.node_cell)),
                                        np.array(plan.ids, dtype=object),
                                        tuple((i, np.array(members)) for i, members in plan.alls))
        return self._lookups

    def park_replay(self, instance: GridDagInstance, steps: list[dict[str, Any]]) -> Any:
        """The Park replay of a trajectory, when the grader did not run the Park family (a family used on its own)."""
        from eebench.evaluator.park import FAMILY as PARK
        from eebench.evaluator.park import replay

        if self._park is None:
            self._park = PARK.tables(instance)
        return replay(self._park, [step["action"] for step in steps])


class GridLookups(NamedTuple):
    """A grid_dag plan as flat arrays: a cell's first-visit checkpoints are state_ids[state_ptr[cell]:state_ptr[cell
    + 1]], a node's achievement checkpoints likewise; `ids` the checkpoint ids; `alls` each `all` and its members."""

    state_ptr: np.ndarray
    state_ids: np.ndarray
    achieved_ptr: np.ndarray
    achieved_ids: np.ndarray
    ids: np.ndarray
    alls: tuple[tuple[int, np.ndarray], ...]


def _csr(table: dict[Any, tuple[int, ...]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """`table` (key 0..size-1 -> checkpoint indices) as (pointers, indices)."""
    counts = np.zeros(size + 1, dtype=np.int64)
    for key, ids in table.items():
        counts[key + 1] = len(ids)
    order = sorted(table)
    return np.cumsum(counts), np.fromiter(chain.from_iterable(table[key] for key in order), dtype=np.int64)


class _PendingGrid(NamedTuple):
    """A grid_dag trajectory whose coverage waits for the Park family's replay: the Park family replays a whole
    chunk at once (compiled when it is large) in its `columns`, which the grader calls before this family's.
    It holds the steps, not the Trajectory: the Trajectory holds it (in `earlier`), and a cycle would keep every
    chunk's documents alive until Python's cycle collector ran."""

    tables: GridTables
    instance: GridDagInstance
    steps: list[dict[str, Any]]
    park: Any   # the Park family's ParkReplay (its `replay` is set by the Park columns), or None
    simple: bool   # every step holds only its action (no phase to read)

    def graded(self) -> Coverage:
        park = self.park.replay if self.park is not None and self.park.replay is not None \
            else self.tables.park_replay(self.instance, self.steps)
        return _grid(self.tables, park.start, park.cells_to, self.steps)


class RoomsTables(NamedTuple):
    world: Any       # RoomsWorld
    plan: Plan


def _rooms_tables(instance: Any, sets: Sequence[CheckpointSet]) -> RoomsTables:
    from eebench.world.rooms import RoomsWorld

    rules: dict[Rule, list[tuple[str, str, Hashable]]] = {
        Rule.ROOM_VISITED: [(f"room:{room}", "state", room) for room in instance.rooms],
        Rule.BALL_COLLECTED: [(f"ball:{ball.name}", "ball", ball.name) for ball in instance.balls],
    }
    return RoomsTables(RoomsWorld(instance), _plan(sets, {room: room for room in instance.rooms}, rules))


def _check_texts(plan: Plan, steps: Any, trajectory: Trajectory) -> None:
    """The step fields the plan reads as text (its regexes' fields, its state reader's) hold a string or null, as
    the trajectory schema says: a list or a number there is refused, not searched as if it were absent. (Fields
    no checkpoint reads are not checked; the action is checked with every record.)"""
    fields = {field for field, _ in plan.by_field} | ({plan.reader.field.value} if plan.reader else set())
    fields.discard(Field.ACTION.value)
    if not fields:
        return
    for i, step in sorted(steps.others.items()) if type(steps) is StepList else enumerate(steps):
        for field in fields:
            value = step.get(field)
            if value is not None and type(value) is not str:
                raise InputError(Problem(trajectory.file, trajectory.line, f"steps[{i}].{field}",
                                         f"expected a string or null, found {json_type(value)}"))


def _check_phase(phase: Any, i: int, trajectory: Trajectory) -> None:
    if phase is not None and phase not in PHASES:
        raise InputError(Problem(trajectory.file, trajectory.line, f"steps[{i}].phase",
                                 f"expected explore or act, found {quoted(phase)}{did_you_mean(phase, PHASES)}"))


def _check_episode(episode: Any, i: int, trajectory: Trajectory) -> None:
    if (problem := scalar_problem(episode, _episode_rule())) is not None:
        raise InputError(Problem(trajectory.file, trajectory.line, f"steps[{i}].episode", problem))


@functools.cache
def _episode_rule() -> dict[str, Any]:
    """The trajectory schema's rule of a step's `episode` (one place for it: validate applies the same)."""
    return load_schema("trajectory")["$defs"]["step"]["properties"]["episode"]


class Coverage(NamedTuple):
    """One trajectory graded: per graded step its state's visit depth, phase and (logged) state; the hits."""

    env: str
    n_steps: int
    depth: list[int | None]
    phases: list[Any] | None               # None: no step has a phase
    states: list[str | None] | None        # logged only: the state read for each step
    steps: list[dict[str, Any]] | None      # logged only: the steps (for t and action)
    ids: tuple[str, ...]
    hits: list[int]                        # per checkpoint: hit after this many steps, or NEVER
    distinct: int | None
    revisited: int                         # states visited two or more times


def _visits(keys: Sequence[Hashable | None], starts: dict[int, int], initial: Hashable | None
            ) -> tuple[list[int | None], list[tuple[Hashable, int]], dict[Hashable, int]]:
    """Visit depth per step, first visits as (state, steps before it + 1, or 0 for the initial state), counts.

    `starts`: step index -> how many visits of `initial` happen just before it (episode starts)."""
    counts: dict[Hashable, int] = {}
    first: list[tuple[Hashable, int]] = []
    depth: list[int | None] = []
    for k, key in enumerate(keys):
        if k in starts:
            if initial not in counts:
                first.append((initial, k))
                counts[initial] = 0
            counts[initial] += starts[k]
        if key is None:
            depth.append(None)
            continue
        seen = counts.get(key, 0)
        if not seen:
            first.append((key, k + 1))
        counts[key] = seen + 1
        depth.append(seen)
    return depth, first, counts


def _hits(plan: Plan, first: Sequence[tuple[Hashable, int]], steps: Sequence[dict[str, Any]],
          events: Sequence[tuple[dict[Any, tuple[int, ...]], Any, int]]) -> list[int]:
    """When each checkpoint of `plan` is first hit (steps taken), or NEVER."""
    hits = [NEVER] * len(plan.ids)
    by_state, state_regex = plan.by_state, plan.state_regex
    for key, k in first:   # first visits come in step order: the first one to set a checkpoint is the earliest
        for i in by_state.get(key, ()):
            if hits[i] == NEVER:
                hits[i] = k
        if state_regex and isinstance(key, str):
            for i, regex in state_regex:
                if hits[i] == NEVER and regex.search(key):
                    hits[i] = k
    for table, key, k in events:
        for i in table.get(key, ()):
            hits[i] = min(hits[i], k)
    _field_hits(plan, steps, hits)
    for i, members in plan.alls:   # members come first; NEVER is larger than any step, so it carries over
        hits[i] = min(hits[i], max(hits[m] for m in members))
    return hits


def _field_hits(plan: Plan, steps: Sequence[dict[str, Any]], hits: Any) -> None:
    """Lower `hits` (a list, or a row of the compiled path's array) to the first step whose field a checkpoint's
    regex finds (a text searched before is not searched again: `plan.seen`, or this trajectory's)."""
    seen = plan.seen if plan.seen is not None else SeenTexts()
    for field, checkpoints in plan.by_field:
        waiting = len(checkpoints)
        known = seen.found.setdefault(field, {})
        for k, step in enumerate(steps, start=1):
            text = step.get(field)
            if type(text) is not str:
                continue
            found = known.get(text)
            if found is None:
                found = seen.search(field, text, checkpoints)
                known = seen.found[field]
            for i in found:
                if hits[i] > k:
                    waiting -= hits[i] == NEVER
                    hits[i] = k
            if not waiting:
                break


def _phases(steps: Sequence[dict[str, Any]]) -> list[Any] | None:
    """Each step's phase; None when no step has one (the common case, seen in one C-level pass when every step
    holds only its action)."""
    if {1}.issuperset(map(len, steps)):
        return None
    phases = [step.get("phase") for step in steps]
    return phases if any(p is not None for p in phases) else None


class CoverageFamily:
    """Coverage and revisits on every world kind; a logged trajectory is graded by this family alone."""

    name = "coverage"
    version = METRIC_VERSION
    envs = frozenset({"grid_dag", "rooms", LOGGED})
    adds_to_others = True   # its version goes in `coverage_version`; a row's metric_version names the others
    fills = {
        "trajectories": ("checkpoints_total", "checkpoints_hit", "ecc", "distinct_states", "exploration_degree",
                         "coverage_version"),
        "steps": ("visit_depth", "ecc", "phase"),
        "checkpoints": ("checkpoint_id", "hit_after_steps"),
    }
    logged_fills = {   # for logged trajectories, which no other family grades
        "trajectories": ("end_reason", "n_steps", "ignored_actions"),
        "steps": ("t", "action", "episode", "logged_state"),
    }

    def __init__(self, checkpoints: CheckpointLibrary | None = None):
        self.checkpoints = checkpoints
        # a logged world's plan depends on its sets alone: a log of 20,000 games, each its own instance, compiled
        # the same sets 20,000 times (by the sets' identities, checked: the sets are kept so those stay theirs)
        self._logged_plans: dict[tuple[int, ...], tuple[tuple[CheckpointSet, ...], Plan]] = {}

    def configure(self, checkpoints: CheckpointLibrary) -> CoverageFamily:
        """The family as a grading run uses it: with the run's checkpoint sets."""
        return CoverageFamily(checkpoints)

    def _library(self) -> CheckpointLibrary:
        return self.checkpoints if self.checkpoints is not None else CheckpointLibrary(shipped=True)

    def tables(self, instance: Any) -> GridTables | RoomsTables | Plan:
        sets = self._library().sets_for(instance.id)
        if isinstance(instance, GridDagInstance):
            return GridTables(instance, sets)
        if isinstance(instance, LoggedInstance):
            key = tuple(map(id, sets))
            known, plan = self._logged_plans.get(key, ((), None))
            if plan is None or len(known) != len(sets) or any(a is not b for a, b in zip(known, sets)):
                plan = _plan(sets, None, {}, SeenTexts())
                self._logged_plans[key] = (sets, plan)
            return plan
        return _rooms_tables(instance, sets)

    def replay(self, tables: Any, instance: Any, trajectory: Trajectory) -> Coverage:
        steps = trajectory.doc["steps"]
        if isinstance(tables, GridTables):  # every step's phase is checked now, so a bad one skips this record
            simple = not steps.others if type(steps) is StepList else {1}.issuperset(map(len, steps))  # (one C pass)
            if not simple:
                _check_texts(tables.plan, steps, trajectory)
                for i, step in enumerate(steps):
                    _check_phase(step.get("phase"), i, trajectory)
                    if "episode" in step:   # ignored for grid_dag, but refused where validate refuses it
                        _check_episode(step["episode"], i, trajectory)
            return _PendingGrid(tables, instance, steps, (trajectory.earlier or {}).get("park"),  # type: ignore
                                simple)
        _check_texts(tables.plan if isinstance(tables, RoomsTables) else tables, steps, trajectory)
        if isinstance(tables, RoomsTables):
            graded = _rooms(tables, trajectory)
        else:
            graded = _logged(tables, steps, trajectory)
        for i, phase in enumerate(graded.phases or ()):
            _check_phase(phase, i, trajectory)
        return graded

    def columns(self, replays: Sequence[Coverage | _PendingGrid]) -> FamilyColumns:
        """Columns of a chunk at once: the curves of all its trajectories from one bincount and one cumsum.

        grid_dag trajectories replayed by the compiled Park replay are counted by the compiled kernel, a batch per
        instance; the others (and every one of a small run) by the plain code, one at a time."""
        compiled, fast = _compiled_groups(replays)
        graded = [r if isinstance(r, Coverage) or i in fast else r.graded() for i, r in enumerate(replays)]
        n_trajectories = len(graded)
        lengths = np.fromiter((len(r.park.replay.cells_to) if i in fast else r.n_steps  # type: ignore[union-attr]
                               for i, r in enumerate(graded)), dtype=np.int64, count=n_trajectories)
        n_ids = np.fromiter((len(r.tables.plan.ids) if i in fast else len(r.ids)  # type: ignore[union-attr]
                             for i, r in enumerate(graded)), dtype=np.int64, count=n_trajectories)
        n = int(lengths.sum())
        step_start = np.cumsum(lengths) - lengths
        id_start = np.cumsum(n_ids) - n_ids
        logged = bool(graded) and isinstance(graded[0], Coverage) and graded[0].env == LOGGED
        depth = np.empty(n, dtype=np.float64 if logged else np.int32)
        hit_after = np.empty(int(n_ids.sum()), dtype=np.int64)
        checkpoint_id = np.empty(len(hit_after), dtype=np.int32)   # codes into `checkpoint_words`
        checkpoint_words = WordList()
        distinct: list[int | None] = [None] * n_trajectories
        revisited = [0] * n_trajectories
        phases: list[list[Any] | None] = [None] * n_trajectories
        for group in compiled:  # one kernel call per instance
            _fill_compiled(group, graded, lengths, n_ids, step_start, id_start, depth, hit_after, checkpoint_id,
                           checkpoint_words, distinct, revisited, phases)
        for j, r in enumerate(graded):
            if isinstance(r, Coverage):
                a, b = step_start[j], step_start[j] + r.n_steps
                depth[a:b] = [np.nan if d is None else d for d in r.depth] if logged else r.depth
                a, b = id_start[j], id_start[j] + len(r.ids)
                hit_after[a:b] = r.hits
                checkpoint_id[a:b] = np.arange(b - a, dtype=np.int32) + checkpoint_words.add(r.ids)
                distinct[j], revisited[j], phases[j] = r.distinct, r.revisited, r.phases
        owner = np.repeat(np.arange(n_trajectories, dtype=np.int64), n_ids)   # each checkpoint's trajectory
        hit = hit_after != NEVER
        hit_counts = np.bincount(owner[hit], minlength=n_trajectories)
        # the curve: trajectory j's hits as marks in a segment of n_steps + 1 places (after 0 .. n steps), so the
        # hits within k steps are the marks up to its place k less the marks of the trajectories before
        segment = lengths + 1
        segment_start = np.cumsum(segment) - segment
        marks = np.sort(segment_start[owner[hit]] + hit_after[hit])
        before = np.searchsorted(marks, segment_start)
        totals = n_ids.astype(np.float64)
        totals[totals == 0] = np.nan   # no checkpoint: NULL, not 0
        whole: dict[str, np.ndarray] = {"visit_depth": depth}   # per-step columns kept whole (the others per window)
        if any(p is not None for p in phases):   # else the column is left NULL, at no cost
            whole["phase"] = np.fromiter(chain.from_iterable(p or [None] * int(k) for p, k in zip(phases, lengths)),
                                         dtype=object, count=n)
        eccs = hit_counts / totals
        trajectories: dict[str, list[Any]] = {
            "checkpoints_total": n_ids.tolist(),
            "checkpoints_hit": hit_counts.tolist(),
            "ecc": [None if e != e else e for e in eccs.tolist()],   # NaN (no checkpoint) -> NULL
            "distinct_states": distinct,
            "exploration_degree": [v / d if d else None for v, d in zip(revisited, distinct)],
            "coverage_version": [METRIC_VERSION] * n_trajectories,
        }
        if logged:
            trajectories.update({"end_reason": ["end_of_log"] * n_trajectories, "n_steps": lengths.tolist(),
                                 "ignored_actions": [0] * n_trajectories})
            all_steps = list(chain.from_iterable(r.steps for r in graded))  # type: ignore[union-attr, misc]
            whole.update({
                "action": np.fromiter((s["action"] for s in all_steps), dtype=object, count=n),
                "episode": np.zeros(n, dtype=np.int16),
                "logged_state": np.fromiter(chain.from_iterable(r.states for r in graded),  # type: ignore
                                            dtype=object, count=n),
            })

        def window(a: int, b: int) -> dict[str, np.ndarray]:
            rows = np.clip(step_start + lengths, a, b) - np.clip(step_start, a, b)
            trajectory = np.repeat(np.arange(n_trajectories, dtype=np.int32), rows)
            step_of = np.arange(a, b, dtype=np.int64) - np.repeat(step_start, rows) + 1
            curve = (np.searchsorted(marks, np.repeat(segment_start, rows) + step_of, side="right")
                     - before[trajectory]) / totals[trajectory]
            steps = {"trajectory": trajectory, **{name: values[a:b] for name, values in whole.items()}, "ecc": curve}
            if logged:
                steps["t"] = (step_of - 1).astype(np.int32)
            return steps
        checkpoints = {
            "trajectory": owner.astype(np.int32),
            "checkpoint_id": checkpoint_words.coded(checkpoint_id),
            "hit_after_steps": np.where(hit, hit_after, np.nan),   # NaN (never) reaches DuckDB as NULL
        }
        return FamilyColumns(trajectories, step_columns_of(n, window), checkpoints=checkpoints)


def _compiled_groups(replays: Sequence[Coverage | _PendingGrid]) -> tuple[list[list[int]], set[int]]:
    """The positions of the grid_dag trajectories the compiled kernel counts, by instance, and all of them: those
    the Park family replayed compiled (the same rule as its: a large run, or a large map)."""
    from eebench.evaluator import park

    groups: dict[int, list[int]] = {}
    for i, r in enumerate(replays):
        if isinstance(r, _PendingGrid) and r.park is not None and r.park.replay is not None and (
                park.FAMILY.steps_graded >= park.COMPILED_FROM_STEPS
                or r.tables.world.n_cells > park.COMPILED_FROM_CELLS):
            groups.setdefault(id(r.tables), []).append(i)
    return list(groups.values()), set(chain.from_iterable(groups.values()))


def _fill_compiled(group: list[int], graded: Sequence[Any], lengths: np.ndarray, n_ids: np.ndarray,
                   step_start: np.ndarray, id_start: np.ndarray, depth: np.ndarray, hit_after: np.ndarray,
                   checkpoint_id: np.ndarray, checkpoint_words: WordList, distinct: list[int | None],
                   revisited: list[int], phases: list[list[Any] | None]) -> None:
    """Count one instance's trajectories (positions `group` of the chunk) with the compiled kernel, into the
    chunk's columns at their places."""
    from eebench.evaluator.coverage_compiled import grid_batch

    first: _PendingGrid = graded[group[0]]
    tables, lookups = first.tables, first.tables.lookups()
    flat = first.park.tables.compiled()
    where = np.asarray(group, dtype=np.int64)
    own = lengths[where]
    offsets = np.zeros(len(group) + 1, dtype=np.int64)
    np.cumsum(own, out=offsets[1:])
    cells_to = [graded[i].park.replay.cells_to for i in group]
    cells = cells_to[0] if len(group) == 1 else np.concatenate(cells_to)
    hits = np.full((len(group), len(lookups.ids)), NEVER, dtype=np.int64)
    results = np.empty((len(group), 2), dtype=np.int64)
    in_place = group == list(range(group[0], group[0] + len(group)))   # (the usual case: the whole chunk, in order)
    group_depth = depth[step_start[group[0]]:step_start[group[0]] + len(cells)] if in_place \
        else np.empty(len(cells), dtype=np.int32)
    grid_batch(cells, offsets, flat.start, flat.n, flat.node_at, flat.alt_ptr, flat.member_ptr, flat.members,
               len(flat.node_cell), lookups.state_ptr, lookups.state_ids, lookups.achieved_ptr,
               lookups.achieved_ids, group_depth, hits, results)
    plan = tables.plan
    for row, i in enumerate(group):
        pending: _PendingGrid = graded[i]
        if plan.by_field or not pending.simple:
            played = pending.steps[:int(lengths[i])]
            _field_hits(plan, played, hits[row])
            phases[i] = _phases(played)
    for i, members in lookups.alls:   # members come first; NEVER is larger than any step, so it carries over
        np.minimum(hits[:, i], hits[:, members].max(axis=1, initial=0), out=hits[:, i])
    if not in_place:
        depth[np.repeat(step_start[where] - offsets[:-1], own) + np.arange(len(cells))] = group_depth
    width = len(lookups.ids)
    places = np.repeat(id_start[where], width) + np.tile(np.arange(width), len(group))
    hit_after[places] = hits.ravel()
    checkpoint_id[places] = np.tile(np.arange(width, dtype=np.int32), len(group)) + checkpoint_words.add(lookups.ids)
    for row, i in enumerate(group):
        distinct[i], revisited[i] = results[row].tolist()


def _grid(tables: GridTables, start: int, cells: Sequence[int], steps: list[dict[str, Any]]) -> Coverage:
    """Count the visits of the cells the Park replay entered (up to the goal or the budget); a node is achieved
    where the agent enters its cell with its prerequisites met: those cells are kept as a set, changed only when
    a node is achieved, so a step costs a few list operations."""
    plan, node_at, node_cells = tables.plan, tables.world.node_at, tables.node_cells
    prerequisites_met = tables.world.prerequisites_met
    counts = [0] * tables.world.n_cells
    counts[start] = 1
    first: list[tuple[Hashable, int]] = [(start, 0)]
    achievable = tables.achievable
    achieved = 0
    events: list[tuple[dict[Any, tuple[int, ...]], Any, int]] = []
    depth: list[int | None] = []
    append = depth.append
    k = 0
    for cell in cells:
        k += 1
        seen = counts[cell]
        if not seen:
            first.append((cell, k))
        counts[cell] = seen + 1
        append(seen)
        if cell in achievable:
            node = node_at[cell]
            achieved |= 1 << node
            events.append((plan.achieved, node, k))
            achievable = frozenset(other_cell for other, other_cell in node_cells
                                   if not achieved >> other & 1 and prerequisites_met(other, achieved))
    graded = steps[:k]
    hits = _hits(plan, first, graded, events) if plan.ids else []
    return Coverage("grid_dag", k, depth, _phases(graded), None, None, plan.ids, hits, len(first),
                    len(counts) - counts.count(0) - counts.count(1))   # states visited twice or more, in C


def _rooms(tables: RoomsTables, trajectory: Trajectory) -> Coverage:
    """The rooms steps as the gaps family replayed them (replayed here when it did not run before); the start
    room is visited at each episode's start."""
    from eebench.world.rooms import replay

    steps = trajectory.doc["steps"]
    logged = [step["episode"] for step in steps] if steps and all("episode" in s for s in steps) else None
    gaps = (trajectory.earlier or {}).get("gaps")
    if gaps is not None:
        replayed = gaps.replay
    else:
        try:
            replayed = replay(tables.world, [step["action"] for step in steps], logged)
        except InputError as exc:  # the world names the step; the file and line are ours to add
            raise InputError([Problem(trajectory.file, trajectory.line, p.field, p.message)
                              if isinstance(p, Problem) else Problem(trajectory.file, trajectory.line, None, p)
                              for p in exc.problems]) from None
    if logged is None:
        graded = steps[:len(replayed.steps)]
    else:  # per logged episode, the steps after the world ended it are not graded
        graded = list(chain.from_iterable(
            [step for step, _ in group][:replayed.episode_steps[episode]]
            for episode, group in groupby(zip(steps, logged), key=lambda pair: pair[1])))
    start = tables.world.instance.start
    starts: dict[int, int] = {}
    episode = -1
    for k, step in enumerate(replayed.steps):
        if step.episode != episode:  # an episode begins (and any the log skipped, played with no step)
            starts[k] = step.episode - episode
            episode = step.episode
    if not replayed.steps:
        starts[0] = max(len(replayed.returns), 1)
    keys = [step.room for step in replayed.steps]
    depth, first, counts = _visits(keys, starts, start)
    if not keys:  # no step: the initial visits only
        first, counts = [(start, 0)], {start: starts[0]}
    events: list[tuple[dict[Any, tuple[int, ...]], Any, int]] = [
        (tables.plan.balls, step.name, k) for k, step in enumerate(replayed.steps, start=1)
        if step.kind == "ball" and step.valid]
    plan = tables.plan
    hits = _hits(plan, first, graded, events) if plan.ids else []
    return Coverage("rooms", len(keys), depth, _phases(graded), None, None, plan.ids, hits, len(counts),
                    sum(c >= 2 for c in counts.values()))


def _logged(plan: Plan, steps: list[dict[str, Any]], trajectory: Trajectory) -> Coverage:
    """States read from the log; no initial state."""
    reader = plan.reader
    states: list[str | None] = []
    state: str | None = None
    for i, step in enumerate(steps):
        if "episode" in step:   # not read in a logged world, but refused where validate refuses it
            _check_episode(step["episode"], i, trajectory)
        own = step.get("state")
        if isinstance(own, str):
            state = own
        elif own is not None:
            raise InputError(Problem(trajectory.file, trajectory.line, f"steps[{i}].state",
                                     f"expected a string or null, found {json_type(own)}"))
        elif reader is not None and (read := reader.read(step)) is not None:
            state = read
        states.append(state)
    depth, first, counts = _visits(states, {}, None)
    hits = _hits(plan, first, steps, ()) if plan.ids else []
    return Coverage(LOGGED, len(steps), depth, _phases(steps), states, steps, plan.ids, hits,
                    len(counts) or None, sum(c >= 2 for c in counts.values()))


FAMILY = CoverageFamily()
