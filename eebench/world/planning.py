"""Shortest completion of a task with full knowledge: the order of node visits that reaches the goal in fewest steps.

The generator uses it to refuse maps no agent could finish within budget; the oracle agent follows it.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from eebench.world.geometry import distances_from
from eebench.world.grid_dag import GridDagWorld

EXACT_LIMIT = 14  # nodes; above this the search over achieved-node sets gets too large and a greedy plan is used


class Plan(NamedTuple):
    cost: int                 # steps from the start until the goal is achieved
    order: tuple[int, ...]    # node indices in the order they are visited on purpose
    exact: bool               # cost is the optimum (False: a greedy upper bound)


def node_distances(world: GridDagWorld) -> list[list[int]]:
    """BFS distances from every node cell, then from the start (the last row)."""
    return [distances_from(world, cell) for cell in [*world.node_cell, world.start]]


def shortest_completion(world: GridDagWorld, dist: Sequence[Sequence[int] | Mapping[int, int]] | None = None) -> Plan:
    """The fewest steps to achieve the goal, by Dijkstra over (achieved nodes, last node visited).

    `dist` is node_distances' (computed when not given), or anything that gives the same values at the node cells
    (`dist[point][cell]`; only those are read): a faster BFS's rows, or mappings of the node cells.

    Any walk achieves nodes in some order, each feasible when visited, and pays at least the distance between
    consecutive visits; the search takes the minimum over all such orders, so it is exact. Walking a planned
    leg may achieve other nodes on the way; that only helps and never changes the planned cost.
    """
    dist = dist or node_distances(world)
    n = len(world.node_cell)
    if n > EXACT_LIMIT:
        return _greedy(world, dist)
    cells = world.node_cell
    start_point = n
    best: dict[tuple[int, int], int] = {(0, start_point): 0}
    parent: dict[tuple[int, int], tuple[int, int]] = {}
    heap = [(0, 0, start_point)]
    while heap:
        cost, mask, point = heapq.heappop(heap)
        if best[(mask, point)] < cost:
            continue
        if mask >> world.goal & 1:
            order = []
            key = (mask, point)
            while key[1] != start_point:
                order.append(key[1])
                key = parent[key]
            return Plan(cost, tuple(reversed(order)), True)
        row = dist[point]
        for node in range(n):
            if mask >> node & 1 or not world.prerequisites_met(node, mask):
                continue
            step = row[cells[node]]
            if step < 0:
                continue
            key = (mask | 1 << node, node)
            if cost + step < best.get(key, 1 << 62):
                best[key] = cost + step
                parent[key] = (mask, point)
                heapq.heappush(heap, (cost + step, key[0], node))
    raise ValueError(f"instance {world.instance.id}: the goal cannot be achieved")


def _greedy(world: GridDagWorld, dist: Sequence[Sequence[int] | Mapping[int, int]]) -> Plan:
    """Visit the nearest node whose prerequisites hold until the goal is achieved (an upper bound)."""
    n = len(world.node_cell)
    mask, point, cost, order = 0, n, 0, []
    while not mask >> world.goal & 1:
        ready = [u for u in range(n) if not mask >> u & 1 and world.prerequisites_met(u, mask)]
        node = min(ready, key=lambda u: (dist[point][world.node_cell[u]], u))
        cost += dist[point][world.node_cell[node]]
        mask |= 1 << node
        point = node
        order.append(node)
    return Plan(cost, tuple(order), False)
