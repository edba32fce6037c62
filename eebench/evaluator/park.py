"""Park et al. (2026) per-step exploration and exploitation errors (Section 4, Appendix B), by replay.

For the action at step t, moving the agent from p(t) to p(t+1):
- the state at t gives the unobserved cells U(t) and the pending nodes P(t) (discovered, prerequisites hold);
- case and target set T(t): 2 if the goal is pending (T = its cell); else 1 if P is empty (T = U); 3 if U is
  empty (T = cells of P); 4 otherwise (T = U and the cells of P);
- a progress event enters an unobserved cell or achieves a pending node;
- Gain = 1 iff p(t+1) is in T or gets strictly closer to some target (distances on the true map);
- the stale score S = c + e + n of the no-progress segment (cyclomatic number, edge and cell reuse beyond two);
- err = 0 on progress; else 1 if Gain = 0; else 0 if |T| = 1; else 1 iff S(t) > S(t-1).
An inadmissible move stays in place, costs a step, has Gain = 0 and adds nothing to the segment. An error in
case 1 or 4 is an exploration error, in case 2, 3 or 4 an exploitation error.

Everything a step needs is kept per instance (`ParkTables`), per cell and move, with Gain's "closer to" sets as
bit masks computed for the moves trajectories make: T(t) only changes at progress events, so a non-progress step
costs a few list, set and integer operations. `replay` is the readable reference of these rules; `replay_compiled`
runs the same rules compiled (park_compiled.py) for large runs, and property tests hold the two equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from eebench.evaluator.families import (WINDOW_STEPS, Coded, FamilyColumns, StepWindows, Trajectory,
                                       step_columns_of, step_parts)
from eebench.long_lines import Actions, StepList
from eebench.world.geometry import distances_from
from eebench.world.grid_dag import ACTION_INDEX, ACTIONS, GridDagInstance, GridDagWorld, parse_action
from eebench.world.planning import shortest_completion

METRIC_VERSION = "park/1"  # bump when any graded value for the same input would change

EXPLORE_CASES = (1, 4)     # an error in these cases is an exploration error
EXPLOIT_CASES = (2, 3, 4)  # and in these an exploitation error (case 4 counts as both)


class Segment:
    """The no-progress segment behind the stale score S = c + e + n.

    It starts at the cell where the last progress event landed (one visit); every later valid move that is not a
    progress event adds a visit to the cell entered and a traversal to the undirected edge used.
    c = |E| - |V| + 1, e = sum over edges of max(m(e) - 2, 0), n = sum over cells of max(m(v) - 2, 0).
    """

    __slots__ = ("visits", "edges", "excess")

    def __init__(self, cell: int):
        self.visits = {cell: 1}
        self.edges: dict[int, int] = {}
        self.excess = 0  # e + n, kept as the counts cross two

    def move(self, a: int, b: int) -> int:
        """Record a move from cell a to cell b; return the new stale score."""
        visits = self.visits
        seen = visits.get(b, 0) + 1
        visits[b] = seen
        edge = (a << 32 | b) if a < b else (b << 32 | a)  # the undirected edge as one int key
        used = self.edges.get(edge, 0) + 1
        self.edges[edge] = used
        self.excess += (seen > 2) + (used > 2)
        return len(self.edges) - len(visits) + 1 + self.excess

    @property
    def stale(self) -> int:
        return len(self.edges) - len(self.visits) + 1 + self.excess


class ParkTables:
    """Per-instance tables shared by every trajectory graded in it, linear in the map's cells.

    The replay indexes them by slot = 5 * cell + code, where code 0-3 is a move (up, down, left, right) and 4 any
    word that is not a move, so an unreadable action is just a slot whose move is inadmissible everywhere.
    Gain's "closer to" set of a slot needs two distance rows; those are computed only for the slots a trajectory
    uses and kept (for the reference replay as Python ints, `closer`; for the compiled one as uint64 words,
    `prepare`), so preparing a map costs O(cells) and grading costs O(cells) per distinct move made.
    """

    def __init__(self, instance: GridDagInstance):
        self.world = world = GridDagWorld(instance)
        self.n_cells = n = world.n_cells
        moves = np.full((n, 5), -1, dtype=np.int32)
        moves[:, :4] = np.asarray(world.step_to, dtype=np.int32).reshape(n, 4)
        # to[slot]: the cell entered, or -1 when the move is inadmissible (always for code 4)
        self.to_array = moves.ravel()
        self.to = self.to_array.tolist()
        # edge[slot]: the undirected edge used, 2 * lower cell + vertical (up, down); -1 for no move
        vertical = np.array([1, 1, 0, 0, 0], dtype=np.int32)
        cells = np.arange(n, dtype=np.int32)[:, None]
        self.edge_array = np.where(moves >= 0, 2 * np.minimum(cells, moves) + vertical, -1).astype(np.int32).ravel()
        # the reference replay's keys in its segment set: cells are 0..2n-1 (c for a first visit and n + c for a
        # second), edges 2n + edge and, used twice, that + 2n
        self.edge = (self.edge_array + 2 * n).tolist()
        self.free_cells = sum(world.free)
        self.optimal_steps = shortest_completion(world, self._node_distances()).cost
        self.all_cells = (1 << n) - 1
        # the cell of each node as the replay sees it (node_at), for the cells where entering achieves a node
        self.node_cells = tuple((node, cell) for node, cell in enumerate(world.node_cell)
                                if world.node_at[cell] == node)
        # the state at t = 0, the same for every trajectory: observed, U, P (and whether the goal is in it), case
        start = world.start
        observed = 1 << start
        unobserved = world.neighbours[start] & ~observed
        pending, goal_pending = _pending(world, observed, 0)
        self.initial = (observed, unobserved, pending, goal_pending,
                        _case(pending, goal_pending, world.node_cell[world.goal], unobserved))
        # the cells whose entry is a progress event at t = 0: unobserved, or a node with no prerequisites
        self.initial_fresh = frozenset(
            {cell for cell in range(n) if world.free[cell] and cell != start}
            | {cell for node, cell in self.node_cells if world.prerequisites_met(node, 0)})
        self._distances: dict[int, list[int]] = {}   # reference: BFS rows by source cell
        self._closer: dict[int, int] = {}             # reference: closer masks by slot
        self._compiled: _CompiledTables | None = None

    def _node_distances(self) -> list[dict[int, int]] | None:
        """The distances shortest_completion reads (from each node and the start to each node), compiled when their
        BFS visits COMPILED_PLAN_FROM_VISITS cells or more (from each of 1,000 nodes of a 100 x 100 map, Python's
        took 4-8 s); None: planning's own BFS, where numba's import would cost more than it saves."""
        if (len(self.world.node_cell) + 1) * self.free_cells < COMPILED_PLAN_FROM_VISITS:
            return None
        from eebench.evaluator import park_compiled

        world = self.world
        sources = np.asarray([*world.node_cell, world.start], dtype=np.int32)
        rows = park_compiled.bfs_rows(self.to_array, sources, self.n_cells)[:, world.node_cell].tolist()
        return [dict(zip(world.node_cell, row)) for row in rows]

    def closer(self, slot: int) -> int:
        """Bit mask of the cells z with d(next, z) < d(cell, z) for the admissible move `slot` (next itself is
        always one of them), so `closer(slot) & T` is Gain: p(t+1) in T or strictly closer to some target."""
        mask = self._closer.get(slot)
        if mask is None:
            here, there = self._row(slot // 5), self._row(self.to[slot])
            closer = np.asarray(there) < np.asarray(here)
            mask = int.from_bytes(np.packbits(closer, bitorder="little").tobytes(), "little")
            self._closer[slot] = mask
        return mask

    def _row(self, cell: int) -> list[int]:
        row = self._distances.get(cell)
        if row is None:
            row = self._distances[cell] = distances_from(self.world, cell)
        return row

    def compiled(self) -> _CompiledTables:
        """The flat arrays of the compiled replay (made on first use)."""
        if self._compiled is None:
            self._compiled = _CompiledTables(self)
        return self._compiled


class _CompiledTables:
    """ParkTables as flat arrays for `park_compiled`, with the closer sets as rows of uint64 words, filled for the
    slots trajectories use (`prepare`)."""

    ROWS_PER_BATCH = 256  # distance rows computed at once (memory: this x cells x 4 bytes)
    DENSE_CELLS = 1024    # maps up to this many cells get every move's closer row when first used

    def __init__(self, tables: ParkTables):
        world = tables.world
        n = tables.n_cells
        self.n = n
        self.start = world.start
        self.goal = world.goal
        self.to = tables.to_array
        self.edge = tables.edge_array
        self.free = np.asarray(world.free, dtype=np.uint8)
        self.node_cell = np.asarray(world.node_cell, dtype=np.int32)
        self.node_at = np.asarray(world.node_at, dtype=np.int32)
        self.node_cells = np.asarray(tables.node_cells, dtype=np.int32).reshape(-1, 2)
        alternatives = [alt for node in world.instance.nodes for alt in node.requires]
        self.alt_ptr = np.cumsum([0] + [len(node.requires) for node in world.instance.nodes]).astype(np.int32)
        self.member_ptr = np.cumsum([0] + [len(alt) for alt in alternatives]).astype(np.int32)
        self.members = np.asarray([world.node_index[p] for alt in alternatives for p in alt], dtype=np.int32)
        self.words = (n + 63) // 64
        self.slot_row = np.zeros(5 * n, dtype=np.int32)  # row 0 stays empty: slots not prepared (never read)
        self.seen = np.zeros(5 * n, dtype=bool)
        self.closer = np.zeros((1, self.words), dtype=np.uint64)
        self.rows = 1
        self.valid_slots = int((self.to >= 0).sum())
        if n <= self.DENSE_CELLS:  # a small map: every move's row at once (at most 4 x 1024 x 128 bytes)
            self._fill(np.flatnonzero(self.to >= 0))
            self.seen[:] = True

    def prepare(self, codes: np.ndarray, offsets: np.ndarray, which: np.ndarray) -> None:
        """Fill the closer rows of the admissible slots that trajectories `which` of move codes pass through
        (trajectory j is codes[offsets[j]:offsets[j + 1]])."""
        from eebench.evaluator import park_compiled

        if self.rows <= self.valid_slots:  # (else every row is there)
            # in cell order, so a batch of rows shares its sources (a cell and its neighbours)
            self._fill(np.sort(park_compiled.used_slots(self.to, self.start, codes, offsets, which, self.seen)))

    def _fill(self, slots: np.ndarray) -> None:
        from eebench.evaluator import park_compiled

        if not slots.size:
            return
        need = self.rows + slots.size
        if need > self.closer.shape[0]:
            grown = np.zeros((max(need, 2 * self.closer.shape[0]), self.words), dtype=np.uint64)
            grown[:self.rows] = self.closer[:self.rows]
            self.closer = grown
        for part in range(0, slots.size, self.ROWS_PER_BATCH // 2):
            chunk = slots[part:part + self.ROWS_PER_BATCH // 2]
            here, there = chunk // 5, self.to[chunk]
            sources, index = np.unique(np.concatenate([here, there]), return_inverse=True)
            dist = park_compiled.bfs_rows(self.to, sources.astype(np.int32), self.n)
            closer = dist[index[chunk.size:]] < dist[index[:chunk.size]]
            packed = np.zeros((chunk.size, 8 * self.words), dtype=np.uint8)
            bits = np.packbits(closer, axis=1, bitorder="little")
            packed[:, :bits.shape[1]] = bits
            rows = np.arange(self.rows, self.rows + chunk.size, dtype=np.int32)
            self.closer[rows] = packed.view("<u8")
            self.slot_row[chunk] = rows
            self.rows += chunk.size


class Replay(NamedTuple):
    """One trajectory replayed: three values per graded step, the case changes, and the episode's summary."""

    start: int                              # p(0), the start cell
    cells_to: np.ndarray                    # p(t+1) for each graded step t (int32)
    flags: np.ndarray                       # per step: _GAIN | _PROGRESS | _ERROR bits (int8)
    stale: np.ndarray                       # S(t) (int32)
    changes: np.ndarray                     # rows (first step, case, |T|) of each stretch between progress events
    success: bool
    end_reason: str                         # goal, budget or end_of_log
    ignored_actions: int                    # actions after the goal or the budget, not graded
    nodes_achieved: int
    cells_observed: int


_GAIN, _PROGRESS, _ERROR = 1, 2, 4  # bits of a step's flag word


def replay(tables: ParkTables, actions: Sequence[str | None]) -> Replay:
    """Replay `actions` from the start and classify every step; see the module docstring for the rules.

    Per step only three values are recorded (the cell entered, a flag word, the stale score); the case and |T|
    change only at progress events and are recorded there. `step_columns` turns replays into columns.

    The cells whose entry is a progress event (unobserved, or holding a node that the entry would achieve) are
    kept as a set, so a step that is not one costs a set lookup, a bit-mask AND for Gain and a few set lookups
    for the stale score: the segment is a set of keys for "cell visited once / twice" and "edge used once /
    twice", and S rises by one for a third visit of a cell, a new edge into a visited cell or a third use of an
    edge (the same S = c + e + n as `Segment`, counted as it changes).
    """
    world = tables.world
    to, closer, edge = tables.to, tables.closer, tables.edge
    neighbours, node_at, goal, budget = world.neighbours, world.node_at, world.goal, world.budget
    prerequisites_met = world.prerequisites_met
    n_cells = world.n_cells
    twice = 2 * n_cells  # edge key -> its "used twice" key

    codes = action_codes(actions, budget).tolist()

    pos = world.start
    observed, unobserved, pending, goal_pending, (case, targets, n_targets) = tables.initial
    unseen = tables.all_cells ^ observed  # the cells not observed, kept instead of `observed`
    achieved = 0
    goal_cell = world.node_cell[goal]
    changes = [(0, case, n_targets)]  # (first step, case, |T|) of each stretch between progress events
    fresh = set(tables.initial_fresh)  # cells whose entry is a progress event
    segment = {pos}
    stale = 0  # S after the last step
    to_col: list[int] = []
    flag_col: list[int] = []
    stale_col: list[int] = []
    to_append, flag_append, stale_append = to_col.append, flag_col.append, stale_col.append

    reached_goal = False
    base = 5 * pos
    for code in codes:
        slot = base + code
        target = to[slot]
        if target < 0:  # inadmissible: stays in place, Gain = 0, nothing added to the segment
            to_append(pos)
            flag_append(_ERROR)
            stale_append(stale)
            continue
        to_append(target)
        if target in fresh:  # a progress event: the segment restarts here
            flag_append(_GAIN | _PROGRESS if closer(slot) & targets else _PROGRESS)
            stale_append(0)
            stale = 0
            segment = {target}
            fresh.discard(target)
            unseen &= ~(1 << target)
            unobserved = (unobserved | neighbours[target]) & unseen
            node = node_at[target]
            if node >= 0:  # a node discovered or achieved: P(t) may change; an empty cell changes only U(t)
                if not achieved >> node & 1 and prerequisites_met(node, achieved):
                    achieved |= 1 << node
                    reached_goal = node == goal
                    fresh.update(cell for other, cell in tables.node_cells
                                 if not achieved >> other & 1 and prerequisites_met(other, achieved))
                pending, goal_pending = _pending(world, tables.all_cells ^ unseen, achieved)
                case, targets, n_targets = _case(pending, goal_pending, goal_cell, unobserved)
            elif case == 1:  # _case inlined for the common progress event, an empty cell: only U(t) changed
                targets = unobserved
                n_targets = unobserved.bit_count()
            elif case != 2:
                case, targets, n_targets = _case(pending, goal_pending, goal_cell, unobserved)
            changes.append((len(to_col), case, n_targets))
            if reached_goal:
                break
        else:
            rise = 0  # S(t) - S(t-1)
            if target in segment:
                key = target + n_cells
                if key in segment:
                    rise = 1  # a third visit of the cell
                else:
                    segment.add(key)
                key = edge[slot]
                if key not in segment:
                    segment.add(key)
                    rise += 1  # a new edge into a visited cell closes a cycle
                elif key + twice in segment:
                    rise += 1  # a third use of the edge
                else:
                    segment.add(key + twice)
            else:  # a cell new to the segment, over a new edge: c, e and n stay
                segment.add(target)
                segment.add(edge[slot])
            if closer(slot) & targets:
                flag_append(_GAIN | _ERROR if rise and n_targets != 1 else _GAIN)
            else:
                flag_append(_ERROR)
            stale += rise
            stale_append(stale)
        pos = target
        base = 5 * target

    end_reason = "goal" if reached_goal else "budget" if len(to_col) >= budget else "end_of_log"
    return Replay(world.start, np.array(to_col, dtype=np.int32), np.array(flag_col, dtype=np.int8),
                  np.array(stale_col, dtype=np.int32), np.array(changes, dtype=np.int32).reshape(-1, 3),
                  reached_goal, end_reason, len(actions) - len(to_col), achieved.bit_count(),
                  (tables.all_cells ^ unseen).bit_count())


def replay_compiled(tables: ParkTables, actions: Sequence[str | None]) -> Replay:
    """`replay` by the compiled kernel of `park_compiled` (same rules, same result; tests cross-check the two)."""
    return replay_compiled_many(tables, [actions])[0]


def _budget_codes(tables: ParkTables, runs: Sequence[Sequence[str | None]]) -> tuple[np.ndarray, np.ndarray]:
    """The move codes of the runs' actions cut to the budget, run j's at codes[offsets[j]:offsets[j + 1]]."""
    budget = tables.world.budget
    lengths = [min(len(run), budget) for run in runs]
    codes, _ = word_codes(list(chain.from_iterable(run[:budget] for run in runs)))
    return codes, np.cumsum([0, *lengths], dtype=np.int64)


def replay_compiled_many(tables: ParkTables, runs: Sequence[Sequence[str | None]]) -> list[Replay]:
    """`replay_compiled` of several action lists in one instance, in one call of the compiled kernel."""
    codes, offsets = _budget_codes(tables, runs)
    return replay_codes_many(tables, codes, offsets, [len(run) for run in runs])


def replay_compiled_joined(tables: ParkTables, runs: Sequence[Sequence[str | None]]) -> Replays:
    """The steps of replay_compiled_many's replays as one Replays (for step_columns), without a Replay of each."""
    played = Played(*_budget_codes(tables, runs))
    played.run(tables, np.arange(len(runs), dtype=np.int64))
    return played.joined(np.full(len(runs), tables.world.start, dtype=np.int64))


def replay_codes_many(tables: ParkTables, codes: np.ndarray, offsets: np.ndarray,
                      n_actions: Sequence[int]) -> list[Replay]:
    """The compiled replay of move codes (`word_codes`): run j is codes[offsets[j]:offsets[j + 1]], its actions
    cut to the budget, of n_actions[j] actions in all."""
    offsets = np.asarray(offsets, dtype=np.int64)
    played = Played(codes, offsets)
    everyone = np.arange(len(offsets) - 1, dtype=np.int64)
    played.run(tables, everyone)
    return played.replays(everyone, tables, n_actions)


class Played:
    """The compiled replay's outputs for trajectories j = codes[offsets[j]:offsets[j + 1]], run an instance at a
    time (`run`): each step's values at its code's place (a trajectory that ends early, at the goal, leaves the rest
    of its places unwritten), trajectory j's case changes from row offsets[j] + j, and results[j] = (graded steps,
    case changes, reached the goal, nodes achieved, cells observed)."""

    def __init__(self, codes: np.ndarray, offsets: np.ndarray):
        m, runs = codes.size, offsets.size - 1
        self.codes, self.offsets = codes, offsets
        self.to_col = np.empty(m, dtype=np.int32)
        self.flag_col = np.empty(m, dtype=np.int8)
        self.stale_col = np.empty(m, dtype=np.int32)
        self.changes = np.empty((m + runs, 3), dtype=np.int32)
        self.results = np.zeros((runs, 5), dtype=np.int64)

    def run(self, tables: ParkTables, which: np.ndarray) -> None:
        """Replay trajectories `which`, all of one instance's `tables`, in one call of the compiled kernel."""
        from eebench.evaluator import park_compiled

        flat = tables.compiled()
        flat.prepare(self.codes, self.offsets, which)
        park_compiled.replay_batch(
            self.codes, self.offsets, which, flat.start, flat.n, flat.to, flat.edge, flat.slot_row, flat.closer,
            flat.node_cell, flat.node_at, flat.node_cells, flat.goal, flat.alt_ptr, flat.member_ptr, flat.members,
            flat.free, self.to_col, self.flag_col, self.stale_col, self.changes, self.results)

    def replays(self, which: Sequence[int] | np.ndarray, tables: ParkTables, n_actions: Sequence[int]
                ) -> list[Replay]:
        """The Replay of each of trajectories `which` (run in `tables`, of n_actions actions), as views of the
        outputs."""
        out = []
        offsets = self.offsets.tolist()
        start, budget = tables.world.start, tables.world.budget
        for j, total, (steps, n_changes, reached_goal, achieved, observed) in zip(
                which, n_actions, self.results[which].tolist()):
            a = offsets[j]
            end_reason = "goal" if reached_goal else "budget" if steps >= budget else "end_of_log"
            out.append(Replay(start, self.to_col[a:a + steps], self.flag_col[a:a + steps],
                              self.stale_col[a:a + steps], self.changes[a + j:a + j + n_changes],
                              bool(reached_goal), end_reason, total - steps, achieved, observed))
        return out

    def joined(self, starts: np.ndarray) -> Replays:
        """Every trajectory's replay (all run) as one Replays, their steps side by side (`starts`: each one's
        start cell)."""
        steps, n_changes = self.results[:, 0], self.results[:, 1]
        lengths = np.diff(self.offsets)
        if np.array_equal(steps[:-1], lengths[:-1]):   # only the last may have ended early (one long trajectory)
            end = int(steps.sum())
            to_col, flag_col, stale_col = self.to_col[:end], self.flag_col[:end], self.stale_col[:end]
        else:   # one reached the goal early: its unwritten places left out
            rows = _rows_from(self.offsets[:-1], steps)
            to_col, flag_col, stale_col = self.to_col[rows], self.flag_col[rows], self.stale_col[rows]
        changes = self.changes[_rows_from(self.offsets[:-1] + np.arange(steps.size), n_changes)]
        return Replays(starts, steps, to_col, flag_col, stale_col, changes, n_changes)


def _rows_from(firsts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The rows counts[j] rows from firsts[j] on, for each j in turn."""
    before = np.cumsum(counts) - counts
    return np.repeat(firsts - before, counts) + np.arange(int(counts.sum()), dtype=np.int64)


class Replays(NamedTuple):
    """Replays of several trajectories as one set of arrays: trajectory j's graded steps are `lengths[j]` rows of
    `cells_to`, `flags` and `stale` (after those of the trajectories before it), its case changes `n_changes[j]`
    rows of `changes`. The compiled replay of a chunk makes it at once (`Played.joined`); `of` joins single Replay
    objects (the plain replay's, a resumed window's), so `step_columns` slices a window instead of joining a slice of
    each trajectory's arrays."""

    start: np.ndarray       # p(0) of each trajectory
    lengths: np.ndarray     # its graded steps (int64)
    cells_to: np.ndarray    # p(t+1) (int32)
    flags: np.ndarray       # the flag words (int8)
    stale: np.ndarray       # S(t) (int32)
    changes: np.ndarray     # (first step, case, |T|) rows (int32)
    n_changes: np.ndarray   # its rows of changes (int64)

    @classmethod
    def of(cls, replays: Sequence[Replay]) -> Replays:
        count = len(replays)

        def joined(values: list[np.ndarray], dtype: type) -> np.ndarray:
            return values[0] if len(values) == 1 else np.concatenate(values) if values else np.empty(0, dtype)
        return cls(np.fromiter((r.start for r in replays), dtype=np.int64, count=count),
                   np.fromiter((len(r.cells_to) for r in replays), dtype=np.int64, count=count),
                   joined([r.cells_to for r in replays], np.int32), joined([r.flags for r in replays], np.int8),
                   joined([r.stale for r in replays], np.int32),
                   np.concatenate([r.changes for r in replays]) if replays else np.empty((0, 3), np.int32),
                   np.fromiter((len(r.changes) for r in replays), dtype=np.int64, count=count))


def action_codes(actions: Sequence[str | None], budget: int | None) -> np.ndarray:
    """Move codes of the graded actions (the first `budget`, or all): 0-3 up, down, left, right; 4 anything else."""
    return word_codes(actions[:budget])[0]


def word_codes(words: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """Move codes of `words` (see action_codes), and a mask of the words that are not exactly one of ACTIONS
    (read by parse_action: other spellings, other words, None)."""
    if isinstance(words, Actions):   # a long line's: each distinct word read once
        codes, inexact = word_codes(words.words)
        return codes[words.codes], inexact[words.codes]
    # the canonical words in one C-level pass; the rest (-1 there) are read by parse_action
    codes = np.fromiter(map(ACTION_INDEX.get, words, repeat(-1)), dtype=np.int8, count=len(words))
    inexact = codes < 0
    for block in range(0, len(words), _BLOCK):   # positions as Python ints a block at a time (36 bytes each)
        for i in (np.flatnonzero(inexact[block:block + _BLOCK]) + block).tolist():
            parsed = parse_action(words[i])
            codes[i] = 4 if parsed is None else parsed
    return codes, inexact


_BLOCK = 1 << 16


def step_columns(replays: Sequence[Replay] | Replays, widths: Sequence[int] | np.ndarray,
                 window: tuple[int, int] | None = None) -> dict[str, np.ndarray]:
    """Per-step columns of many replays at once (`widths`: each one's map width); `window` (a, b): rows a..b-1 of
    them only (a long run's columns are made a window at a time).

    `trajectory` is the replay's position in `replays`; `t` counts from 0 within each trajectory.
    """
    batch = replays if isinstance(replays, Replays) else Replays.of(replays)
    lengths = batch.lengths
    starts = np.cumsum(lengths) - lengths
    a, b = window or (0, int(lengths.sum()))
    rows = np.clip(starts + lengths, a, b) - np.clip(starts, a, b)   # each replay's rows in the window
    trajectory = np.repeat(np.arange(lengths.size, dtype=np.int32), rows)
    cells_to = batch.cells_to[a:b]
    cells_from = np.empty(b - a, dtype=np.int32)
    cells_from[1:] = cells_to[:-1]
    if a < b:   # the row before the window: its replay's, unless one starts at the window (set below)
        cells_from[0] = batch.cells_to[a - 1] if a else 0
    begins = np.flatnonzero((starts >= a) & (starts < b) & (lengths > 0))   # replays starting in the window
    cells_from[starts[begins] - a] = batch.start[begins]   # ... came from their start cell
    flags = batch.flags[a:b]
    n_changes = batch.n_changes
    changes = batch.changes.astype(np.int64)  # rows: first step, case, |T|
    stretch_start = np.repeat(starts, n_changes) + np.minimum(changes[:, 0], np.repeat(lengths, n_changes))
    stretch_end = np.append(stretch_start, lengths.sum())[1:]
    stretch_rows = np.clip(stretch_end, a, b) - np.clip(stretch_start, a, b)
    stretch_case, stretch_targets = changes[:, 1], changes[:, 2]
    width = np.repeat(np.asarray(widths, dtype=np.int32), rows)
    return {
        "trajectory": trajectory,
        "t": (np.arange(a, b, dtype=np.int64) - np.repeat(starts, rows)).astype(np.int32),
        "from_x": (cells_from % width).astype(np.int16), "from_y": (cells_from // width).astype(np.int16),
        "to_x": (cells_to % width).astype(np.int16), "to_y": (cells_to // width).astype(np.int16),
        "valid": cells_to != cells_from,  # a valid move always changes cell, an inadmissible one never does
        "case_id": np.repeat(stretch_case.astype(np.int8), stretch_rows),
        "n_targets": np.repeat(stretch_targets.astype(np.int32), stretch_rows),
        "gain": flags & _GAIN,
        "progress": (flags & _PROGRESS) >> 1,
        "stale": batch.stale[a:b],
        "error": (flags & _ERROR) >> 2,
    }


_CASE_IDS = np.arange(5)   # case ids 1-4 (0 never occurs: it keeps the tables indexed by the id)
_EXPLORE, _EXPLOIT = np.isin(_CASE_IDS, EXPLORE_CASES), np.isin(_CASE_IDS, EXPLOIT_CASES)


def error_counts(columns: dict[str, np.ndarray], n_trajectories: int) -> dict[str, np.ndarray]:
    """Per trajectory: explore_steps (cases 1, 4), exploit_steps (cases 2, 3, 4), their errors, invalid moves.

    Each step is counted once, by trajectory, case, error and validity (one bincount), and the counts are summed by
    what they mean: a bincount of each masked column took five times as long (0.5 s of a 5M-step grade)."""
    key = ((columns["trajectory"].astype(np.int64) * _CASE_IDS.size + columns["case_id"]) * 2
           + (columns["error"] == 1)) * 2 + ~columns["valid"]
    counts = np.bincount(key, minlength=n_trajectories * _CASE_IDS.size * 4).reshape(n_trajectories,
                                                                                     _CASE_IDS.size, 2, 2)
    return {
        "explore_steps": counts[:, _EXPLORE].sum(axis=(1, 2, 3)),
        "exploit_steps": counts[:, _EXPLOIT].sum(axis=(1, 2, 3)),
        "explore_errors": counts[:, _EXPLORE, 1].sum(axis=(1, 2)),
        "exploit_errors": counts[:, _EXPLOIT, 1].sum(axis=(1, 2)),
        "invalid_moves": counts[..., 1].sum(axis=(1, 2)),
    }


def _pending(world: GridDagWorld, observed: int, achieved: int) -> tuple[int, bool]:
    """P(t) as a mask of node cells, and whether the goal is in it."""
    pending = 0
    goal_pending = False
    for node, cell in enumerate(world.node_cell):
        if observed >> cell & 1 and not achieved >> node & 1 and world.prerequisites_met(node, achieved):
            pending |= 1 << cell
            goal_pending |= node == world.goal
    return pending, goal_pending


def _case(pending: int, goal_pending: bool, goal_cell: int, unobserved: int) -> tuple[int, int, int]:
    """(case, target mask, |T|) following Table 1 of the paper."""
    if goal_pending:
        case, targets = 2, 1 << goal_cell
    elif not pending:
        case, targets = 1, unobserved
    elif not unobserved:
        case, targets = 3, pending
    else:
        case, targets = 4, unobserved | pending
    return case, targets, targets.bit_count()


_ACTION = itemgetter("action")


# The replay runs compiled (numba) once this process has graded this many steps, and always on maps of more
# cells: below, importing numba and loading its cached kernels (about 0.5 s) costs more than the plain-Python
# replay. Either way the values are the same (tests hold the two equal), only the time differs.
COMPILED_FROM_STEPS = 50_000
COMPILED_FROM_CELLS = 1024
# The distance rows of an instance's optimal steps are made compiled from this many cell visits (nodes + 1 times
# free cells): the Python BFS takes about 0.4 us a visit, numba's import about 0.5 s.
COMPILED_PLAN_FROM_VISITS = 1 << 20
_WORDS = np.array([*ACTIONS, None], dtype=object)  # the action column's value of each move code (4: as written)


@dataclass(slots=True)
class ParkReplay:
    """One trajectory for the Park family: its instance's tables and its actions. The replay itself runs in
    `columns`, for a whole chunk at once (compiled per instance when the run is large), and is kept here for the
    families after this one (coverage reads the cells entered)."""

    tables: ParkTables
    actions: Sequence[str | None]
    replay: Replay | None = None


class ParkFamily:
    """The metric family of Park et al. (2026) for `env: grid_dag`: fills `steps` and the Park columns of
    `trajectories`."""

    name = "park"
    version = METRIC_VERSION
    envs = frozenset({"grid_dag"})
    fills = {
        "trajectories": ("success", "end_reason", "n_steps", "ignored_actions", "invalid_moves", "explore_steps",
                         "exploit_steps", "explore_errors", "exploit_errors", "explore_error", "exploit_error",
                         "budget", "optimal_steps", "nodes_total", "nodes_achieved", "free_cells",
                         "cells_observed"),
        "steps": ("t", "action", "from_x", "from_y", "to_x", "to_y", "valid", "case_id", "n_targets",
                  "gain", "progress", "stale", "error"),
    }

    def __init__(self) -> None:
        self.steps_graded = 0  # by this process (see COMPILED_FROM_STEPS)

    def tables(self, instance: GridDagInstance) -> ParkTables:
        return ParkTables(instance)

    def replay(self, tables: ParkTables, instance: GridDagInstance, trajectory: Trajectory) -> ParkReplay:
        steps = trajectory.doc["steps"]
        plain = steps.plain_actions() if type(steps) is StepList else None   # a long line's: its actions, shared
        return ParkReplay(tables, plain if plain is not None else list(map(_ACTION, steps)))

    def compiled_for(self, tables: ParkTables) -> bool:
        """Whether the replay runs compiled now: once this process has graded COMPILED_FROM_STEPS steps, and
        always on maps of more than COMPILED_FROM_CELLS cells."""
        return self.steps_graded >= COMPILED_FROM_STEPS or tables.n_cells > COMPILED_FROM_CELLS

    def columns(self, graded: Sequence[ParkReplay]) -> FamilyColumns:
        runs, together, codes, action = self._replay(graded)
        widths = np.fromiter((g.tables.world.width for g in graded), dtype=np.int32, count=len(graded))
        n = int(together.lengths.sum())

        def window(a: int, b: int) -> dict[str, np.ndarray]:
            steps = step_columns(together, widths, (a, b) if (a, b) != (0, n) else None)
            steps["action"] = action(a, b)
            return steps
        steps = step_columns_of(n, window)
        counts: dict[str, np.ndarray] = {}
        for part in step_parts(steps):   # windows: counted one at a time now, made again to be written
            for name, values in error_counts(part, len(runs)).items():
                counts[name] = counts[name] + values if name in counts else values
        if isinstance(steps, StepWindows) and len(graded) == 1 and self.compiled_for(graded[0].tables):
            # one long trajectory: written from a replay carried window by window, so that once this chunk is
            # graded its per-step values (cell, flag word, stale score: 9 bytes a step) are not kept for the writing
            steps = StepWindows(n, ResumedReplay(graded[0].tables, codes[:n], action).make)
        explore_steps, exploit_steps = counts["explore_steps"].tolist(), counts["exploit_steps"].tolist()
        explore_errors, exploit_errors = counts["explore_errors"].tolist(), counts["exploit_errors"].tolist()
        trajectories: dict[str, list[Any]] = {
            "success": [r.success for r in runs],
            "end_reason": [r.end_reason for r in runs],
            "n_steps": [len(r.cells_to) for r in runs],
            "ignored_actions": [r.ignored_actions for r in runs],
            "invalid_moves": counts["invalid_moves"].tolist(),
            "explore_steps": explore_steps, "exploit_steps": exploit_steps,
            "explore_errors": explore_errors, "exploit_errors": exploit_errors,
            "explore_error": [e / s if s else None for e, s in zip(explore_errors, explore_steps)],
            "exploit_error": [e / s if s else None for e, s in zip(exploit_errors, exploit_steps)],
            "budget": [g.tables.world.budget for g in graded],
            "optimal_steps": [g.tables.optimal_steps for g in graded],
            "nodes_total": [len(g.tables.world.node_cell) for g in graded],
            "nodes_achieved": [r.nodes_achieved for r in runs],
            "free_cells": [g.tables.free_cells for g in graded],
            "cells_observed": [r.cells_observed for r in runs],
        }
        return FamilyColumns(trajectories, steps)

    def _replay(self, graded: Sequence[ParkReplay]
                ) -> tuple[list[Replay], Replays, np.ndarray, Callable[[int, int], np.ndarray]]:
        """Replay runs in their instances: each one's Replay, and all of them as one Replays; the move codes of
        their actions (cut to the budget), and the action column of the graded steps, rows a..b-1 by
        `action(a, b)`.

        Compiled, one call per instance, once the process has graded enough steps (COMPILED_FROM_STEPS) or the
        map is large; else by the plain-Python reference.
        """
        cut = [g.actions if len(g.actions) <= g.tables.world.budget else g.actions[:g.tables.world.budget]
               for g in graded]
        # (one long trajectory: no copy; a chunk read by bare_steps: one table of words)
        words = cut[0] if len(cut) == 1 else Actions.joined(cut) or list(chain.from_iterable(cut))
        codes, inexact = word_codes(words)
        offsets = np.zeros(len(graded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, cut), dtype=np.int64, count=len(graded)), out=offsets[1:])

        self.steps_graded += len(words)
        replays: list[Replay | None] = [None] * len(graded)
        by_instance: dict[int, list[int]] = {}
        plain = 0
        for i, g in enumerate(graded):
            if self.compiled_for(g.tables):
                by_instance.setdefault(id(g.tables), []).append(i)
            else:
                replays[i] = replay(g.tables, g.actions)
                plain += 1
        together = None
        if by_instance:
            compiled = Played(codes, offsets)
            for indices in by_instance.values():   # each instance's trajectories in one call, at their places
                tables = graded[indices[0]].tables
                compiled.run(tables, np.asarray(indices, dtype=np.int64))
                for i, replayed in zip(indices, compiled.replays(indices, tables,
                                                                 [len(graded[i].actions) for i in indices])):
                    replays[i] = replayed
            if not plain:   # all compiled (a large run): their steps are side by side already
                together = compiled.joined(np.fromiter((g.tables.world.start for g in graded), dtype=np.int64,
                                                       count=len(graded)))
        for g, replayed in zip(graded, replays):
            g.replay = replayed
        if together is None:
            together = Replays.of(replays)  # type: ignore[arg-type]  # (every replay made above)
        played = together.lengths
        played_starts = np.cumsum(played) - played
        table = np.fromiter(words.words, dtype=object, count=len(words.words)) if isinstance(words, Actions) \
            else None   # a long line's distinct words

        def action(a: int, b: int) -> Coded:
            """The graded steps' actions, rows a..b-1: the four words by their move codes, every other word as
            written (coded past them)."""
            rows = np.clip(played_starts + played, a, b) - np.clip(played_starts, a, b)
            kept = np.repeat(offsets[:-1] - played_starts, rows) + np.arange(a, b)   # the rows' places in `words`
            column = codes[kept].astype(np.int32)
            written = inexact[kept]
            if not written.any():
                return Coded(column, _WORDS)
            if table is not None:   # a long line's distinct words, coded after the four
                column[written] = len(_WORDS) + words.codes[kept[written]]   # type: ignore[union-attr]
                return Coded(column, np.concatenate([_WORDS, table]))
            at = kept[written].tolist()
            column[written] = np.arange(len(_WORDS), len(_WORDS) + len(at), dtype=np.int32)
            return Coded(column, np.concatenate([_WORDS, np.fromiter(map(words.__getitem__, at), dtype=object,
                                                                     count=len(at))]))
        return replays, together, codes, action  # type: ignore[return-value]


class ResumedReplay:
    """The step columns of one trajectory's graded steps, a window at a time, by the compiled replay carrying its
    state from one window to the next (so no per-step value of the trajectory is kept whole); `codes` are its
    graded steps' move codes, `action(a, b)` its action column. `make(a, b)` is StepWindows': in order, or from
    the start again when asked for another window."""

    def __init__(self, tables: ParkTables, codes: np.ndarray, action: Callable[[int, int], np.ndarray]):
        self.tables, self.codes, self.action = tables, codes, action
        self.state: tuple[np.ndarray, ...] | None = None
        self.done = 0   # the steps the state has replayed

    def make(self, a: int, b: int) -> dict[str, np.ndarray]:
        if self.state is None or a != self.done:
            self._start()
            while self.done < a:   # (a window out of order: replayed from the start up to it)
                self._replay(min(a, self.done + WINDOW_STEPS))
        replayed = self._replay(b)
        columns = step_columns([replayed], [self.tables.world.width])
        columns["t"] += np.int32(a)
        columns["action"] = self.action(a, b)
        return columns

    def _start(self) -> None:
        from eebench.evaluator import park_compiled

        flat = self.tables.compiled()
        self.state = park_compiled.start_state(flat.start, flat.n, flat.words, flat.to, flat.node_cell,
                                               flat.node_cells, flat.goal, flat.alt_ptr, flat.member_ptr,
                                               flat.members, flat.free)
        self.done = 0

    def _replay(self, b: int) -> Replay:
        """Steps done..b-1 replayed, as a Replay of their own (its start the cell they start from)."""
        from eebench.evaluator import park_compiled

        flat, state, a = self.tables.compiled(), self.state, self.done
        assert state is not None
        scalars = state[-1]
        start, case, n_targets = int(scalars[park_compiled.POS]), scalars[park_compiled.CASE], \
            scalars[park_compiled.TARGETS]
        m = b - a
        to_col, flag_col = np.empty(m, dtype=np.int32), np.empty(m, dtype=np.int8)
        stale_col, changes = np.empty(m, dtype=np.int32), np.empty((m + 1, 3), dtype=np.int32)
        changes[0] = 0, case, n_targets   # the case in force where the window starts
        steps, n_changes = park_compiled.run_codes(
            self.codes[a:b], flat.to, flat.edge, flat.slot_row, flat.closer, flat.node_cell, flat.node_at,
            flat.node_cells, flat.goal, flat.alt_ptr, flat.member_ptr, flat.members, state, to_col, flag_col,
            stale_col, changes[1:])
        assert steps == m, "a window past the graded steps"
        self.done = b
        return Replay(start, to_col, flag_col, stale_col, changes[:n_changes + 1], False, "", 0, 0, 0)


FAMILY = ParkFamily()
