"""The map carver: place the start and the nodes, join the start to every node with a corridor, wall the rest."""

from __future__ import annotations

from typing import NamedTuple

from eebench.generator.params import MapParams
from eebench.generator.rng import StableRng


class CarvedMap(NamedTuple):
    rows: tuple[str, ...]
    start: tuple[int, int]
    node_positions: tuple[tuple[int, int], ...]


def carve_map(n_nodes: int, params: MapParams, rng: StableRng) -> CarvedMap:
    """One random map for n_nodes nodes.

    The start and the nodes take distinct cells drawn uniformly (node i gets the i-th drawn cell). Then, in a
    random order, each node is joined to the start by a corridor: a random monotone lattice path (the x and y
    steps of the way shuffled together), every cell of it widened to a w x w block, w drawn uniformly from
    corridor_width (a block that would cross the map's edge is shifted back inside). Every cell not carved is
    an obstacle, and the free region is connected because every corridor starts at the start.
    """
    width, height = params.dimensions(n_nodes)
    cells = rng.sample(range(width * height), n_nodes + 1)
    points = [(c % width, c // width) for c in cells]
    start, nodes = points[0], points[1:]
    free = [[False] * width for _ in range(height)]
    for x, y in points:
        free[y][x] = True
    order = list(range(n_nodes))
    rng.shuffle(order)
    low, high = params.corridor_width
    for i in order:
        w = rng.integer(low, high)
        for x, y in _monotone_path(start, nodes[i], rng):
            x0, y0 = max(0, min(x, width - w)), max(0, min(y, height - w))
            for yy in range(y0, min(height, y0 + w)):
                for xx in range(x0, min(width, x0 + w)):
                    free[yy][xx] = True
    rows = tuple("".join("." if f else "#" for f in row) for row in free)
    return CarvedMap(rows, start, tuple(nodes))


def _monotone_path(a: tuple[int, int], b: tuple[int, int], rng: StableRng) -> list[tuple[int, int]]:
    (x, y), (tx, ty) = a, b
    steps = ["x"] * abs(tx - x) + ["y"] * abs(ty - y)
    rng.shuffle(steps)
    sx, sy = (1 if tx > x else -1), (1 if ty > y else -1)
    path = [(x, y)]
    for step in steps:
        if step == "x":
            x += sx
        else:
            y += sy
        path.append((x, y))
    return path
