"""The Park et al. replay compiled with numba over flat arrays; `park.replay` is the readable reference it matches.

Imported only when a run has enough steps to pay for numba's import (see park.COMPILED_FROM_STEPS). The kernels
are compiled once and cached on disk (`cache=True`): next to this file, or, where the package folder is
read-only, in numba's per-user cache folder (NUMBA_CACHE_DIR overrides both).

Bit sets over cells (targets T(t), U(t), the "closer" sets of Gain) are rows of uint64 words, bit z of word z//64.
The no-progress segment is kept as per-cell and per-edge use counts (saturating at 2) stamped with the segment's
number, so a progress event starts a new segment without clearing anything.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_folder(package: Path, environ: dict[str, str]) -> str | None:
    """The folder numba should cache the kernels in when it cannot write next to them (`package`) and none is
    given (NUMBA_CACHE_DIR): the user's cache folder, else a per-user temporary one; None to leave numba's
    default (numba's own per-user fallback fails outright where the home folder cannot be written)."""
    if "NUMBA_CACHE_DIR" in environ or os.access(package, os.W_OK):
        return None
    home = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for folder in (os.path.join(home, "eebench", "numba"),
                   os.path.join(tempfile.gettempdir(), f"eebench-numba-{os.getuid()}")):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    return None


_folder = cache_folder(Path(__file__).parent, dict(os.environ))
if _folder is not None:  # read before numba's first import
    os.environ["NUMBA_CACHE_DIR"] = _folder

import numpy as np  # noqa: E402  (after the cache folder is chosen)
from numba import njit  # noqa: E402

_GAIN, _PROGRESS, _ERROR = 1, 2, 4  # as in park.py


@njit(cache=True, nogil=True)
def bfs_rows(to: np.ndarray, sources: np.ndarray, n: int) -> np.ndarray:
    """Distances from each source to every cell (-1: obstacle or unreachable); `to[5 * cell + a]` is the move
    table (-1 inadmissible)."""
    out = np.full((sources.size, n), -1, dtype=np.int32)
    queue = np.empty(n, dtype=np.int32)
    for k in range(sources.size):
        row = out[k]
        row[sources[k]] = 0
        queue[0] = sources[k]
        head, tail = 0, 1
        while head < tail:
            cell = queue[head]
            head += 1
            d = row[cell] + 1
            for a in range(4):
                nxt = to[5 * cell + a]
                if nxt >= 0 and row[nxt] < 0:
                    row[nxt] = d
                    queue[tail] = nxt
                    tail += 1
    return out


@njit(cache=True, nogil=True)
def used_slots(to: np.ndarray, start: int, codes: np.ndarray, offsets: np.ndarray, which: np.ndarray,
               seen: np.ndarray) -> np.ndarray:
    """The admissible slots (5 * cell + code) that trajectories `which` of move codes (trajectory j is
    codes[offsets[j]:offsets[j + 1]]) pass through, once each, that are not marked in `seen` (which this marks).
    Moves do not depend on anything Gain needs, so this is a cheap pre-pass."""
    out = np.empty(codes.size, dtype=np.int64)
    count = 0
    for j in which:
        pos = start
        for i in range(offsets[j], offsets[j + 1]):
            slot = 5 * pos + codes[i]
            target = to[slot]
            if target >= 0:
                if not seen[slot]:
                    seen[slot] = True
                    out[count] = slot
                    count += 1
                pos = target
    return out[:count]


@njit(cache=True, inline="always")
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, inline="always")
def _set(words: np.ndarray, cell: int) -> None:
    words[cell >> 6] |= np.uint64(1) << np.uint64(cell & 63)


@njit(cache=True, inline="always")
def _clear(words: np.ndarray, cell: int) -> None:
    words[cell >> 6] &= ~(np.uint64(1) << np.uint64(cell & 63))


@njit(cache=True)
def _prerequisites_met(node: int, achieved: np.ndarray, alt_ptr: np.ndarray, member_ptr: np.ndarray,
                       members: np.ndarray) -> bool:
    if alt_ptr[node] == alt_ptr[node + 1]:
        return True
    for alt in range(alt_ptr[node], alt_ptr[node + 1]):
        met = True
        for m in range(member_ptr[alt], member_ptr[alt + 1]):
            if not achieved[members[m]]:
                met = False
                break
        if met:
            return True
    return False


@njit(cache=True)
def _case(pending: np.ndarray, goal_pending: bool, goal_cell: int, unobserved: np.ndarray,
          targets: np.ndarray) -> tuple[int, int]:
    """Table 1 of the paper: fills `targets`, returns (case, |T|)."""
    if goal_pending:
        targets[:] = 0
        _set(targets, goal_cell)
        return 2, 1
    any_pending = False
    any_unobserved = False
    for w in range(pending.size):
        any_pending |= pending[w] != 0
        any_unobserved |= unobserved[w] != 0
    if not any_pending:
        case = 1
        targets[:] = unobserved
    elif not any_unobserved:
        case = 3
        targets[:] = pending
    else:
        case = 4
        for w in range(targets.size):
            targets[w] = unobserved[w] | pending[w]
    count = 0
    for w in range(targets.size):
        count += _popcount(targets[w])
    return case, count


@njit(cache=True)
def _pending(observed: np.ndarray, achieved: np.ndarray, node_cell: np.ndarray, goal: int, alt_ptr: np.ndarray,
             member_ptr: np.ndarray, members: np.ndarray, pending: np.ndarray) -> bool:
    """Fills `pending` with P(t)'s cells; returns whether the goal is in it."""
    pending[:] = 0
    goal_pending = False
    for node in range(node_cell.size):
        cell = node_cell[node]
        if observed[cell] and not achieved[node] and _prerequisites_met(node, achieved, alt_ptr, member_ptr,
                                                                        members):
            _set(pending, cell)
            goal_pending |= node == goal
    return goal_pending


@njit(cache=True, nogil=True)
def replay_batch(codes: np.ndarray, offsets: np.ndarray, which: np.ndarray, start: int, n: int, to: np.ndarray,
                 edge: np.ndarray, slot_row: np.ndarray, closer: np.ndarray, node_cell: np.ndarray,
                 node_at: np.ndarray, node_cells: np.ndarray, goal: int, alt_ptr: np.ndarray, member_ptr: np.ndarray,
                 members: np.ndarray, free: np.ndarray, to_col: np.ndarray, flag_col: np.ndarray,
                 stale_col: np.ndarray, changes: np.ndarray, results: np.ndarray) -> None:
    """`replay_codes` for trajectories `which` of one instance (trajectory j is codes[offsets[j]:offsets[j + 1]]),
    in one call: step columns at the codes' positions, change rows from offsets[j] + j, results[j] the returned
    values."""
    for j in which:
        a, b = offsets[j], offsets[j + 1]
        steps, n_changes, reached, achieved, observed = replay_codes(
            codes[a:b], start, n, to, edge, slot_row, closer, node_cell, node_at, node_cells, goal, alt_ptr,
            member_ptr, members, free, to_col[a:b], flag_col[a:b], stale_col[a:b], changes[a + j:b + j + 1])
        results[j, 0], results[j, 1], results[j, 2], results[j, 3], results[j, 4] = \
            steps, n_changes, reached, achieved, observed


@njit(cache=True, nogil=True)
def replay_codes(codes: np.ndarray, start: int, n: int, to: np.ndarray, edge: np.ndarray, slot_row: np.ndarray,
                 closer: np.ndarray, node_cell: np.ndarray, node_at: np.ndarray, node_cells: np.ndarray, goal: int,
                 alt_ptr: np.ndarray, member_ptr: np.ndarray, members: np.ndarray, free: np.ndarray,
                 to_col: np.ndarray, flag_col: np.ndarray, stale_col: np.ndarray,
                 changes: np.ndarray) -> tuple[int, int, bool, int, int]:
    """Replay move codes (0-3 moves, 4 not a move; already cut to the budget) as `park.replay` does, into the
    given output arrays; returns (steps, case changes, reached goal, nodes achieved, cells observed)."""
    state = start_state(start, n, closer.shape[1], to, node_cell, node_cells, goal, alt_ptr, member_ptr, members,
                        free)
    scalars = state[-1]
    changes[0, 0], changes[0, 1], changes[0, 2] = 0, scalars[CASE], scalars[TARGETS]
    steps, n_changes = run_codes(codes, to, edge, slot_row, closer, node_cell, node_at, node_cells, goal, alt_ptr,
                                 member_ptr, members, state, to_col, flag_col, stale_col, changes[1:])
    observed, achieved = state[0], state[2]
    n_observed = 0
    for cell in range(n):
        n_observed += observed[cell]
    n_achieved = 0
    for node in range(achieved.size):
        n_achieved += achieved[node]
    return steps, n_changes + 1, scalars[REACHED] != 0, n_achieved, n_observed


# the scalars of a replay's state (the last array of `start_state`'s tuple)
POS, SEGMENT, STALE, REACHED, CASE, TARGETS, GOAL_PENDING = range(7)


@njit(cache=True, nogil=True)
def start_state(start: int, n: int, words: int, to: np.ndarray, node_cell: np.ndarray, node_cells: np.ndarray,
                goal: int, alt_ptr: np.ndarray, member_ptr: np.ndarray, members: np.ndarray, free: np.ndarray
                ) -> tuple[np.ndarray, ...]:
    """A replay's state at the start: (observed, fresh, achieved, unobserved, pending, targets, visits, visit_seg,
    uses, use_seg, scalars); `run_codes` carries it on, a window of codes at a time if need be."""
    observed = np.zeros(n, dtype=np.uint8)
    fresh = np.zeros(n, dtype=np.uint8)          # entering the cell is a progress event
    achieved = np.zeros(node_cell.size, dtype=np.uint8)
    unobserved = np.zeros(words, dtype=np.uint64)
    pending = np.zeros(words, dtype=np.uint64)
    targets = np.zeros(words, dtype=np.uint64)
    visits = np.zeros(n, dtype=np.uint8)         # uses in the current segment, saturating at 2 ...
    visit_seg = np.full(n, -1, dtype=np.int64)   # ... valid when stamped with its number
    uses = np.zeros(2 * n, dtype=np.uint8)
    use_seg = np.full(2 * n, -1, dtype=np.int64)
    scalars = np.zeros(7, dtype=np.int64)

    observed[start] = 1
    for cell in range(n):
        fresh[cell] = free[cell] and cell != start
    for k in range(node_cells.shape[0]):
        if _prerequisites_met(node_cells[k, 0], achieved, alt_ptr, member_ptr, members):
            fresh[node_cells[k, 1]] = 1
    for a in range(4):
        if to[5 * start + a] >= 0:
            _set(unobserved, to[5 * start + a])
    goal_pending = _pending(observed, achieved, node_cell, goal, alt_ptr, member_ptr, members, pending)
    case, n_targets = _case(pending, goal_pending, node_cell[goal], unobserved, targets)
    visits[start], visit_seg[start] = 1, 0
    scalars[POS], scalars[CASE], scalars[TARGETS], scalars[GOAL_PENDING] = start, case, n_targets, goal_pending
    return observed, fresh, achieved, unobserved, pending, targets, visits, visit_seg, uses, use_seg, scalars


@njit(cache=True, nogil=True)
def run_codes(codes: np.ndarray, to: np.ndarray, edge: np.ndarray, slot_row: np.ndarray, closer: np.ndarray,
              node_cell: np.ndarray, node_at: np.ndarray, node_cells: np.ndarray, goal: int, alt_ptr: np.ndarray,
              member_ptr: np.ndarray, members: np.ndarray, state: tuple[np.ndarray, ...], to_col: np.ndarray,
              flag_col: np.ndarray, stale_col: np.ndarray, changes: np.ndarray) -> tuple[int, int]:
    """Carry a replay's state (`start_state`) over `codes`, until the codes end or the goal is reached: the step
    columns at the codes' positions, a row (first step after it, case, |T|) per case change; returns (steps,
    changes)."""
    observed, fresh, achieved, unobserved, pending, targets, visits, visit_seg, uses, use_seg, scalars = state
    words = closer.shape[1]
    pos, segment, stale = scalars[POS], scalars[SEGMENT], scalars[STALE]
    case, n_targets, goal_pending = scalars[CASE], scalars[TARGETS], scalars[GOAL_PENDING] != 0
    reached_goal = False
    n_changes = 0
    steps = 0

    for i in range(codes.size):
        slot = 5 * pos + codes[i]
        target = to[slot]
        steps += 1
        if target < 0:  # inadmissible: stays in place, Gain = 0, nothing added to the segment
            to_col[i] = pos
            flag_col[i] = _ERROR
            stale_col[i] = stale
            continue
        to_col[i] = target
        row = closer[slot_row[slot]]
        gain = False
        for w in range(words):
            if row[w] & targets[w]:
                gain = True
                break
        if fresh[target]:  # a progress event: a new segment starts here
            flag_col[i] = _GAIN | _PROGRESS if gain else _PROGRESS
            stale_col[i] = 0
            stale = 0
            segment += 1
            visits[target], visit_seg[target] = 1, segment
            fresh[target] = 0
            observed[target] = 1
            _clear(unobserved, target)
            for a in range(4):
                nxt = to[5 * target + a]
                if nxt >= 0 and not observed[nxt]:
                    _set(unobserved, nxt)
            node = node_at[target]
            if node >= 0:
                if not achieved[node] and _prerequisites_met(node, achieved, alt_ptr, member_ptr, members):
                    achieved[node] = 1
                    reached_goal = node == goal
                    for k in range(node_cells.shape[0]):
                        other = node_cells[k, 0]
                        if not achieved[other] and _prerequisites_met(other, achieved, alt_ptr, member_ptr,
                                                                      members):
                            fresh[node_cells[k, 1]] = 1
                goal_pending = _pending(observed, achieved, node_cell, goal, alt_ptr, member_ptr, members, pending)
            case, n_targets = _case(pending, goal_pending, node_cell[goal], unobserved, targets)
            changes[n_changes, 0], changes[n_changes, 1], changes[n_changes, 2] = i + 1, case, n_targets
            n_changes += 1
            if reached_goal:
                pos = target
                break
        else:
            rise = 0  # S(t) - S(t-1)
            key = edge[slot]
            if visit_seg[target] == segment:
                if visits[target] == 2:
                    rise = 1  # a third visit of the cell
                else:
                    visits[target] = 2
                if use_seg[key] != segment:
                    use_seg[key], uses[key] = segment, 1
                    rise += 1  # a new edge into a visited cell closes a cycle
                elif uses[key] == 2:
                    rise += 1  # a third use of the edge
                else:
                    uses[key] = 2
            else:  # a cell new to the segment, over a new edge: c, e and n stay
                visits[target], visit_seg[target] = 1, segment
                uses[key], use_seg[key] = 1, segment
            if gain:
                flag_col[i] = _GAIN | _ERROR if rise and n_targets != 1 else _GAIN
            else:
                flag_col[i] = _ERROR
            stale += rise
            stale_col[i] = stale
        pos = target

    scalars[POS], scalars[SEGMENT], scalars[STALE], scalars[REACHED] = pos, segment, stale, reached_goal
    scalars[CASE], scalars[TARGETS], scalars[GOAL_PENDING] = case, n_targets, goal_pending
    return steps, n_changes
