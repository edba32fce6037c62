"""Orienteering solver speed: the exhaustive search against CP-SAT on the same room-world knowledge states.

Room-world-like problems (Grams et al.): a 7x7 grid of rooms joined by doors (1% dropped, the graph kept connected),
20 balls with rewards 1..10 in random rooms, door budget 12, ball_limit 3, 4 and 5. Each of 10 layouts is seen at
4 knowledge states, as an explorer's would grow (the first 10, 20, 30 and all 49 rooms in breadth-first order from
the start, with the doors between them): costs are door distances in the known graph. Both methods solve every
problem (median of 3 passes) and must agree on every value. The cache figure replays 20 episodes of such growth per
layout (knowledge grows for five episodes, then stays) plus R_max, through one SolverCache.
"""

from __future__ import annotations

import random
import statistics
from collections import deque

import numpy as np

from benchmarks import Result, timed
from eebench.evaluator.orienteering import Method, OrienteeringProblem, SolverCache, choose_method, solve

SIDE, BALLS, BUDGET, LAYOUTS, P_DROP = 7, 20, 12, 10, 0.01
KNOWN_ROOMS = (10, 20, 30, SIDE * SIDE)


def _layout(seed: int) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """Adjacency of a SIDE x SIDE grid with doors dropped (never disconnecting it), and balls as (room, reward)."""
    rng = random.Random(seed)
    doors = {(r, r + 1) for r in range(SIDE * SIDE) if r % SIDE < SIDE - 1}
    doors |= {(r, r + SIDE) for r in range(SIDE * (SIDE - 1))}
    for door in sorted(doors):
        if rng.random() < P_DROP and len(_bfs(0, _adjacency(doors - {door}))) == SIDE * SIDE:
            doors.discard(door)
    balls = [(rng.randrange(SIDE * SIDE), rng.randint(1, 10)) for _ in range(BALLS)]
    return _adjacency(doors), balls


def _adjacency(doors: set[tuple[int, int]]) -> list[list[int]]:
    adj: list[list[int]] = [[] for _ in range(SIDE * SIDE)]
    for a, b in sorted(doors):
        adj[a].append(b)
        adj[b].append(a)
    return adj


def _bfs(source: int, adj: list[list[int]], allowed: set[int] | None = None) -> dict[int, int]:
    dist, queue = {source: 0}, deque([source])
    while queue:
        room = queue.popleft()
        for nxt in adj[room]:
            if nxt not in dist and (allowed is None or nxt in allowed):
                dist[nxt] = dist[room] + 1
                queue.append(nxt)
    return dist


def _problem(adj: list[list[int]], balls: list[tuple[int, int]], known: set[int], limit: int) -> OrienteeringProblem:
    """The best-episode problem on the known rooms: node 0 the start room, then the balls in known rooms."""
    seen = [(room, reward) for room, reward in balls if room in known]
    rooms = [0] + [room for room, _ in seen]
    dist = {room: _bfs(room, adj, known) for room in set(rooms)}
    cost = np.array([[dist[a].get(b, np.inf) for b in rooms] for a in rooms], dtype=float)
    return OrienteeringProblem(cost, (0, *(reward for _, reward in seen)), BUDGET, max_visits=limit)


def _problems(limit: int) -> list[OrienteeringProblem]:
    out = []
    for seed in range(LAYOUTS):
        adj, balls = _layout(seed)
        order = list(_bfs(0, adj))
        out += [_problem(adj, balls, set(order[:k]), limit) for k in KNOWN_ROOMS]
    return out


def _median_seconds(problems: list[OrienteeringProblem], method: Method | None) -> tuple[float, list[float]]:
    runs = [timed(lambda: [solve(p, method=method).value for p in problems]) for _ in range(3)]
    return statistics.median(seconds for seconds, _ in runs), runs[0][1]


def _cache_hit_rate(limit: int) -> float:
    cache = SolverCache()
    for seed in range(LAYOUTS):
        adj, balls = _layout(seed)
        order = list(_bfs(0, adj))
        cache.solve(_problem(adj, balls, set(order), limit))  # R_max
        for episode in range(20):
            cache.solve(_problem(adj, balls, set(order[:min(SIDE * SIDE, 10 * (episode + 1))]), limit))
    return cache.hit_rate or 0.0


def run() -> list[Result]:
    results = []
    for limit in (3, 4, 5):
        problems = _problems(limit)
        exhaustive, values = _median_seconds(problems, Method.EXHAUSTIVE)
        cp_sat, cp_values = _median_seconds(problems, Method.CP_SAT)
        if values != cp_values:
            raise AssertionError(f"ball_limit {limit}: the methods disagree: {values} != {cp_values}")
        chosen = {choose_method(p).value for p in problems}
        results.append(Result(f"orienteering 7x7 ball_limit {limit}: exhaustive vs cp-sat", len(problems) / exhaustive,
                              "problems/s", len(problems) / cp_sat, "exhaustive faster (it is the one chosen)",
                              f"{len(problems)} problems, equal values, chosen: {', '.join(sorted(chosen))}"))
    results.append(Result("orienteering 7x7 ball_limit 3: SolverCache hit rate", 100 * _cache_hit_rate(3), "%",
                          note=f"{LAYOUTS} layouts x (20 episodes + R_max)"))
    return results
