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

Everything a step needs is precomputed once per instance (`ParkTables`), per cell and move, with Gain's
"closer to" sets as Python-int bit masks: T(t) only changes at progress events, so a non-progress step costs a
few list, set and integer operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from eebench.evaluator.families import FamilyColumns, Trajectory
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
    """Per-instance tables shared by every trajectory graded in it.

    The replay indexes them by slot = 5 * cell + code, where code 0-3 is a move (up, down, left, right) and 4 any
    word that is not a move, so an unreadable action is just a slot whose move is inadmissible everywhere.
    """

    def __init__(self, instance: GridDagInstance):
        self.world = world = GridDagWorld(instance)
        n = world.n_cells
        dist = all_pairs_distances(world)
        moves = np.asarray(world.step_to, dtype=np.int64)
        valid = np.flatnonzero(moves >= 0)
        cell_of, action_of, target_of = valid // 4, valid % 4, moves[valid]
        slots = (5 * cell_of + action_of).tolist()
        # to[slot]: the cell entered, or -1 when the move is inadmissible (always for code 4)
        self.to = [-1] * (5 * n)
        for slot, target in zip(slots, target_of.tolist()):
            self.to[slot] = target
        # closer[slot]: bit mask of the cells z with d(next, z) < d(cell, z); next itself is always one of them,
        # so `closer[slot] & T` is Gain (p(t+1) in T or strictly closer to some target)
        packed = np.packbits(dist[target_of] < dist[cell_of], axis=1, bitorder="little")
        self.closer = [0] * (5 * n)
        for slot, row in zip(slots, packed):
            self.closer[slot] = int.from_bytes(row.tobytes(), "little")
        # edge[slot]: the undirected edge used, as a key of the replay's segment set (cells are keys 0..2n-1:
        # c for a first visit and n + c for a second; edges are 2n + 2 * min end + vertical, and that + 2n)
        vertical = (action_of < 2).astype(np.int64)  # up, down
        edge_keys = 2 * n + 2 * np.minimum(cell_of, target_of) + vertical
        self.edge = [0] * (5 * n)
        for slot, key in zip(slots, edge_keys.tolist()):
            self.edge[slot] = key
        self.optimal_steps = shortest_completion(world).cost
        self.free_cells = sum(world.free)
        self.all_cells = (1 << n) - 1
        self.unset = [self.all_cells ^ 1 << cell for cell in range(n)]  # masks that clear one cell's bit
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

    codes = list(map(ACTION_INDEX.get, actions[:budget]))
    if None in codes:
        codes = [(4 if (parsed := parse_action(word)) is None else parsed) if code is None else code
                 for code, word in zip(codes, actions)]

    pos = world.start
    observed, unobserved, pending, goal_pending, (case, targets, n_targets) = tables.initial
    unseen = tables.all_cells ^ observed  # the cells not observed, kept instead of `observed`
    unset = tables.unset
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
            flag_append(_GAIN | _PROGRESS if closer[slot] & targets else _PROGRESS)
            stale_append(0)
            stale = 0
            segment = {target}
            fresh.discard(target)
            unseen &= unset[target]
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
            if closer[slot] & targets:
                flag_append(_GAIN | _ERROR if rise and n_targets != 1 else _GAIN)
            else:
                flag_append(_ERROR)
            stale += rise
            stale_append(stale)
        pos = target
        base = 5 * target

    end_reason = "goal" if reached_goal else "budget" if len(to_col) >= budget else "end_of_log"
    return Replay(world.start, to_col, flag_col, stale_col, changes, reached_goal, end_reason,
                  len(actions) - len(to_col), achieved.bit_count(), (tables.all_cells ^ unseen).bit_count())


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
    n_changes = np.fromiter(map(len, (r.changes for r in replays)), dtype=np.int64, count=len(replays))
    changes = np.fromiter(chain.from_iterable(chain.from_iterable(r.changes for r in replays)), dtype=np.int64,
                          count=3 * int(n_changes.sum())).reshape(-1, 3)  # rows: first step, case, |T|
    stretch_start = np.repeat(offsets, n_changes) + np.minimum(changes[:, 0], np.repeat(lengths, n_changes))
    stretch_length = np.diff(np.append(stretch_start, n))
    stretch_case, stretch_targets = changes[:, 1], changes[:, 2]
    width = np.repeat(np.asarray(widths, dtype=np.int32), lengths)
    return {
        "trajectory": trajectory,
        "t": (np.arange(n, dtype=np.int64) - np.repeat(offsets, lengths)).astype(np.int32),
        "from_x": (cells_from % width).astype(np.int16), "from_y": (cells_from // width).astype(np.int16),
        "to_x": (cells_to % width).astype(np.int16), "to_y": (cells_to // width).astype(np.int16),
        "valid": cells_to != cells_from,  # a valid move always changes cell, an inadmissible one never does
        "case_id": np.repeat(stretch_case.astype(np.int8), stretch_length),
        "n_targets": np.repeat(stretch_targets.astype(np.int32), stretch_length),
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

    def per_trajectory(where: np.ndarray) -> np.ndarray:
        return np.bincount(owner[where], minlength=n_trajectories).astype(np.int64)

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


_ACTION = itemgetter("action")


class ParkReplay(NamedTuple):
    """One trajectory as the Park family graded it: the replay, the map width and the graded actions."""

    replay: Replay
    tables: ParkTables
    actions: list[str | None]


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

    def tables(self, instance: GridDagInstance) -> ParkTables:
        return ParkTables(instance)

    def replay(self, tables: ParkTables, instance: GridDagInstance, trajectory: Trajectory) -> ParkReplay:
        actions = list(map(_ACTION, trajectory.doc["steps"]))
        replayed = replay(tables, actions)
        return ParkReplay(replayed, tables, actions[:len(replayed.cells_to)])

    def columns(self, replays: Sequence[ParkReplay]) -> FamilyColumns:
        runs = [r.replay for r in replays]
        steps = step_columns(runs, [r.tables.world.width for r in replays])
        n = len(steps["t"])
        steps["action"] = np.fromiter(chain.from_iterable(r.actions for r in replays), dtype=object, count=n)
        counts = error_counts(steps, len(runs))
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
            "budget": [r.tables.world.budget for r in replays],
            "optimal_steps": [r.tables.optimal_steps for r in replays],
            "nodes_total": [len(r.tables.world.node_cell) for r in replays],
            "nodes_achieved": [r.nodes_achieved for r in runs],
            "free_cells": [r.tables.free_cells for r in replays],
            "cells_observed": [r.cells_observed for r in runs],
        }
        return FamilyColumns(trajectories, steps)


FAMILY = ParkFamily()
