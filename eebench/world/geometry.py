"""Shortest-path distances on a world's true traversable map: one source in Python, all pairs in NumPy."""

from __future__ import annotations

import numpy as np

from eebench.world.grid_dag import GridDagWorld

UNREACHABLE = -1


def distances_from(world: GridDagWorld, source: int) -> list[int]:
    """BFS distance from `source` to every cell (-1 for obstacles and unreachable cells).

    Level by level over the free neighbours' lists: half the time of a queue over the move table."""
    dist = [UNREACHABLE] * world.n_cells
    dist[source] = 0
    adjacent = world.adjacent
    frontier, d = [source], 0
    while frontier:
        d += 1
        reached = []
        for cell in frontier:
            for target in adjacent[cell]:
                if dist[target] < 0:
                    dist[target] = d
                    reached.append(target)
        frontier = reached
    return dist


def path_actions(world: GridDagWorld, source: int, target: int, dist_to_target: list[int]) -> list[int]:
    """Actions of one shortest path from `source` to `target`, given BFS distances from `target`.

    At each cell the first action (in up, down, left, right order) that gets one step closer is taken,
    so the path is deterministic.
    """
    actions = []
    cell = source
    while cell != target:
        d = dist_to_target[cell]
        for a in range(4):
            nxt = world.step_to[4 * cell + a]
            if nxt >= 0 and dist_to_target[nxt] == d - 1:
                actions.append(a)
                cell = nxt
                break
        else:
            raise ValueError(f"cell {cell} does not lead to {target}")
    return actions


def all_pairs_distances(world: GridDagWorld) -> np.ndarray:
    """Matrix D[a, b] of distances between all cells (-1 where either is an obstacle or unreachable).

    Level-synchronous BFS from every free cell at once, on the grid's shape: each level reaches the frontier's
    four shifted copies (slices, so whole-array byte operations) that are free and not reached before, so the
    cost is (diameter x cells^2) byte operations instead of a Python loop per pair.
    """
    n, width, height = world.n_cells, world.width, world.height
    free = np.asarray(world.free, dtype=bool).reshape(height, width)
    sources = np.flatnonzero(free)
    dist = np.full((n, n), UNREACHABLE, dtype=np.int32)
    if sources.size == 0:
        return dist
    rows = np.arange(sources.size)
    frontier = np.zeros((sources.size, height, width), dtype=bool)
    frontier.reshape(sources.size, n)[rows, sources] = True
    seen = frontier.copy()
    found = np.full((sources.size, n), UNREACHABLE, dtype=np.int32)  # the rows of the free cells
    found[rows, sources] = 0
    reached = np.empty_like(frontier)
    level = 0
    while True:
        level += 1
        reached[:] = False
        reached[:, :-1, :] |= frontier[:, 1:, :]  # up (y - 1) from the row below
        reached[:, 1:, :] |= frontier[:, :-1, :]  # down
        reached[:, :, :-1] |= frontier[:, :, 1:]  # left
        reached[:, :, 1:] |= frontier[:, :, :-1]  # right
        reached &= free
        reached &= ~seen
        if not reached.any():
            dist[sources] = found
            return dist
        np.putmask(found, reached.reshape(sources.size, n), level)
        seen |= reached
        frontier, reached = reached, frontier
