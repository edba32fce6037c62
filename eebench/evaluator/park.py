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

Everything a step needs is precomputed once per instance (`ParkTables`) as Python-int bit masks: T(t) only
changes at progress events, so a non-progress step costs a few integer operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import NamedTuple

import numpy as np

from eebench.world.geometry import all_pairs_distances
from eebench.world.grid_dag import ACTION_INDEX, GridDagInstance, GridDagWorld, parse_action
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
    """Per-instance tables shared by every trajectory graded in it."""

    def __init__(self, instance: GridDagInstance):
        self.world = world = GridDagWorld(instance)
        dist = all_pairs_distances(world)
        # closer[4 * c + a]: bit mask of the cells z with d(next, z) < d(c, z) for the move a from c
        moves = np.asarray(world.step_to, dtype=np.int64)
        valid = np.flatnonzero(moves >= 0)
        closer_rows = dist[moves[valid]] < dist[valid // 4]
        packed = np.packbits(closer_rows, axis=1, bitorder="little")
        self.closer = [0] * len(world.step_to)
        for slot, row in zip(valid.tolist(), packed):
            self.closer[slot] = int.from_bytes(row.tobytes(), "little")
        self.optimal_steps = shortest_completion(world).cost
        self.free_cells = sum(world.free)


class Replay(NamedTuple):
    """One trajectory replayed: three values per graded step, the case changes, and the episode's summary."""

    start: int                              # p(0), the start cell
    cells_to: list[int]                     # p(t+1) for each graded step t
    flags: list[int]                        # per step: _GAIN | _PROGRESS | _ERROR bits
    stale: list[int]                        # S(t)
    changes: list[tuple[int, int, int]]     # (first step, case, |T|) of each stretch between progress events
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
    """
    world = tables.world
    step_to, closer, neighbours = world.step_to, tables.closer, world.neighbours
    node_at, goal, budget = world.node_at, world.goal, world.budget
    prerequisites_met = world.prerequisites_met
    action_index = ACTION_INDEX

    pos = world.start
    observed = 1 << pos
    unobserved = neighbours[pos] & ~observed
    achieved = 0
    goal_cell = world.node_cell[goal]
    pending, goal_pending = _pending(world, observed, achieved)
    case, targets, n_targets = _case(pending, goal_pending, goal_cell, unobserved)
    changes = [(0, case, n_targets)]  # (first step, case, |T|) of each stretch between progress events
    segment = Segment(pos)
    stale_before = 0
    to_col: list[int] = []
    flag_col: list[int] = []
    stale_col: list[int] = []

    end_reason = "end_of_log"
    t = 0
    for word in actions:
        if t >= budget:
            end_reason = "budget"
            break
        action = action_index.get(word)
        if action is None:
            action = parse_action(word)
        target = -1 if action is None else step_to[4 * pos + action]
        t += 1
        if target < 0:  # inadmissible: stays in place, Gain = 0, nothing added to the segment
            to_col.append(pos)
            flag_col.append(_ERROR)
            stale_col.append(stale_before)
            continue
        bit = 1 << target
        gain = _GAIN if targets & bit or closer[4 * pos + action] & targets else 0
        node = node_at[target]
        achieves = node >= 0 and not achieved >> node & 1 and prerequisites_met(node, achieved)
        to_col.append(target)
        if achieves or not observed & bit:  # a progress event: the segment restarts here
            flag_col.append(gain | _PROGRESS)
            stale_col.append(0)
            stale_before = 0
            segment = Segment(target)
            observed |= bit
            unobserved = (unobserved | neighbours[target]) & ~observed
            if achieves:
                achieved |= 1 << node
            if node >= 0:  # a node discovered or achieved: P(t) may change; an empty cell changes only U(t)
                pending, goal_pending = _pending(world, observed, achieved)
            case, targets, n_targets = _case(pending, goal_pending, goal_cell, unobserved)
            changes.append((t, case, n_targets))
        else:
            stale = segment.move(pos, target)
            flag_col.append(gain if gain and (n_targets == 1 or stale <= stale_before) else gain | _ERROR)
            stale_col.append(stale)
            stale_before = stale
        pos = target
        if achieved >> goal & 1:
            end_reason = "goal"
            break
    else:
        if t >= budget:
            end_reason = "budget"

    return Replay(world.start, to_col, flag_col, stale_col, changes, end_reason == "goal", end_reason,
                  len(actions) - len(to_col), achieved.bit_count(), observed.bit_count())


def step_columns(replays: Sequence[Replay], widths: Sequence[int]) -> dict[str, np.ndarray]:
    """Per-step columns of many replays at once (`widths`: each one's map width).

    `trajectory` is the replay's position in `replays`; `t` counts from 0 within each trajectory.
    """
    lengths = np.array([len(r.cells_to) for r in replays], dtype=np.int64)
    n = int(lengths.sum())
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    trajectory = np.repeat(np.arange(len(replays), dtype=np.int32), lengths)
    cells_to = np.fromiter(chain.from_iterable(r.cells_to for r in replays), dtype=np.int32, count=n)
    cells_from = np.empty(n, dtype=np.int32)
    cells_from[1:] = cells_to[:-1]
    played = lengths > 0
    cells_from[offsets[played]] = [r.start for r, p in zip(replays, played) if p]
    flags = np.fromiter(chain.from_iterable(r.flags for r in replays), dtype=np.int8, count=n)
    stretch_start, stretch_case, stretch_targets = [], [], []
    for replay_, offset, length in zip(replays, offsets.tolist(), lengths.tolist()):
        for first, case, n_targets in replay_.changes:
            stretch_start.append(offset + min(first, length))
            stretch_case.append(case)
            stretch_targets.append(n_targets)
    stretch_length = np.diff(np.array(stretch_start + [n], dtype=np.int64))
    width = np.repeat(np.asarray(widths, dtype=np.int32), lengths)
    return {
        "trajectory": trajectory,
        "t": (np.arange(n, dtype=np.int64) - np.repeat(offsets, lengths)).astype(np.int32),
        "from_x": (cells_from % width).astype(np.int16), "from_y": (cells_from // width).astype(np.int16),
        "to_x": (cells_to % width).astype(np.int16), "to_y": (cells_to // width).astype(np.int16),
        "valid": cells_to != cells_from,  # a valid move always changes cell, an inadmissible one never does
        "case_id": np.repeat(np.array(stretch_case, dtype=np.int8), stretch_length),
        "n_targets": np.repeat(np.array(stretch_targets, dtype=np.int32), stretch_length),
        "gain": flags & _GAIN,
        "progress": (flags & _PROGRESS) >> 1,
        "stale": np.fromiter(chain.from_iterable(r.stale for r in replays), dtype=np.int32, count=n),
        "error": (flags & _ERROR) >> 2,
    }


def error_counts(columns: dict[str, np.ndarray], n_trajectories: int) -> dict[str, np.ndarray]:
    """Per trajectory: explore_steps (cases 1, 4), exploit_steps (cases 2, 3, 4), their errors, invalid moves."""
    owner, error = columns["trajectory"], columns["error"] == 1
    explore = np.isin(columns["case_id"], EXPLORE_CASES)
    exploit = np.isin(columns["case_id"], EXPLOIT_CASES)

    def per_trajectory(values: np.ndarray) -> np.ndarray:
        return np.bincount(owner, weights=values, minlength=n_trajectories).astype(np.int64)

    return {
        "explore_steps": per_trajectory(explore),
        "exploit_steps": per_trajectory(exploit),
        "explore_errors": per_trajectory(explore & error),
        "exploit_errors": per_trajectory(exploit & error),
        "invalid_moves": per_trajectory(~columns["valid"]),
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
