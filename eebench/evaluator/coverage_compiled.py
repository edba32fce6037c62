"""Coverage of grid_dag trajectories compiled with numba: visit depths, first visits and node achievements over the
cells the Park replay entered; `coverage._grid` is the readable reference it matches (tests cross-check the two).

Imported, like `park_compiled` (which chooses numba's cache folder), only when a run is large enough to pay for
numba's import.
"""

from __future__ import annotations

import numpy as np

from eebench.evaluator import park_compiled  # noqa: F401  (first: it sets numba's cache folder)
from eebench.evaluator.park_compiled import _prerequisites_met
from numba import njit  # noqa: E402


@njit(cache=True, nogil=True)
def grid_batch(cells: np.ndarray, offsets: np.ndarray, start: int, n: int, node_at: np.ndarray,
               alt_ptr: np.ndarray, member_ptr: np.ndarray, members: np.ndarray, n_nodes: int,
               state_ptr: np.ndarray, state_ids: np.ndarray, achieved_ptr: np.ndarray, achieved_ids: np.ndarray,
               depth: np.ndarray, hits: np.ndarray, results: np.ndarray) -> None:
    """Trajectory j entered cells[offsets[j]:offsets[j + 1]] from `start`. Fills, at the cells' positions, each
    step's visit depth; per trajectory, hits[j, i] the steps after which checkpoint i was first hit (left as given,
    NEVER, when it was not) and results[j] = (distinct cells visited, cells visited twice or more).

    A cell's checkpoints (hit at its first visit) are state_ids[state_ptr[cell]:state_ptr[cell + 1]]; a node's
    (hit when the agent enters its cell with its prerequisites met) achieved_ids[achieved_ptr[node]:...]."""
    counts = np.zeros(n, dtype=np.int64)
    stamp = np.full(n, -1, dtype=np.int64)   # counts[cell] holds for trajectory stamp[cell]: nothing is cleared
    achieved = np.zeros(n_nodes, dtype=np.uint8)
    for j in range(offsets.size - 1):
        achieved[:] = 0
        stamp[start], counts[start] = j, 1   # the initial state: one visit before the first step
        for s in range(state_ptr[start], state_ptr[start + 1]):
            hits[j, state_ids[s]] = 0
        distinct, revisited = 1, 0
        a = offsets[j]
        for i in range(a, offsets[j + 1]):
            k = i - a + 1
            cell = cells[i]
            if stamp[cell] != j:
                stamp[cell], counts[cell] = j, 0
            seen = counts[cell]
            depth[i] = seen
            counts[cell] = seen + 1
            if seen == 0:
                distinct += 1
                for s in range(state_ptr[cell], state_ptr[cell + 1]):
                    if hits[j, state_ids[s]] > k:
                        hits[j, state_ids[s]] = k
            elif seen == 1:
                revisited += 1
            node = node_at[cell]
            if node >= 0 and not achieved[node] and _prerequisites_met(node, achieved, alt_ptr, member_ptr,
                                                                        members):
                achieved[node] = 1
                for s in range(achieved_ptr[node], achieved_ptr[node + 1]):
                    if hits[j, achieved_ids[s]] > k:
                        hits[j, achieved_ids[s]] = k
        results[j, 0], results[j, 1] = distinct, revisited
