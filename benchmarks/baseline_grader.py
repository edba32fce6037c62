"""A straightforward grader of Park et al.'s metric: sets of (x, y) tuples, a BFS per step, the stale score
recounted from the whole segment. Written from the issue's wording, independently of eebench.evaluator.park.

It is the benchmark baseline, and the tests compare the fast grader against it step by step.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

MOVES = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


def _bfs(free: set[tuple[int, int]], source: tuple[int, int]) -> dict[tuple[int, int], int]:
    dist = {source: 0}
    queue = deque([source])
    while queue:
        x, y = queue.popleft()
        for dx, dy in MOVES.values():
            nxt = (x + dx, y + dy)
            if nxt in free and nxt not in dist:
                dist[nxt] = dist[(x, y)] + 1
                queue.append(nxt)
    return dist


def _stale(segment: list[tuple[int, int]]) -> int:
    """S = c + e + n of a segment given as its cells in order (the first is the cell it started on)."""
    visits = Counter(segment)
    edges = Counter(tuple(sorted(pair)) for pair in zip(segment, segment[1:]))
    c = len(edges) - len(visits) + 1
    e = sum(max(m - 2, 0) for m in edges.values())
    n = sum(max(m - 2, 0) for m in visits.values())
    return c + e + n


def grade(instance: dict[str, Any], actions: list[Any]) -> list[dict[str, Any]]:
    """One dict per graded step with case_id, n_targets, gain, progress, stale, error, valid, to (x, y)."""
    free = {(x, y) for y, row in enumerate(instance["map"]) for x, ch in enumerate(row) if ch == "."}
    nodes = {n["id"]: (tuple(n["pos"]), [set(a) for a in n["requires"]]) for n in instance["nodes"]}
    goal = instance["goal"]
    pos = tuple(instance["start"])
    observed = {pos}
    achieved: set[str] = set()
    segment = [pos]
    stale_before = 0
    rows = []

    def prec(node: str) -> bool:
        alternatives = nodes[node][1]
        return not alternatives or any(alt <= achieved for alt in alternatives)

    for t, word in enumerate(actions):
        if t >= instance["budget"] or goal in achieved:
            break
        unobserved = {(x + dx, y + dy) for (x, y) in observed for dx, dy in MOVES.values()} & free - observed
        pending = {u for u, (cell, _) in nodes.items() if cell in observed and u not in achieved and prec(u)}
        if goal in pending:
            case, targets = 2, {nodes[goal][0]}
        elif not pending:
            case, targets = 1, unobserved
        elif not unobserved:
            case, targets = 3, {nodes[u][0] for u in pending}
        else:
            case, targets = 4, unobserved | {nodes[u][0] for u in pending}
        delta = MOVES.get(word.strip().lower()) if isinstance(word, str) else None
        nxt = (pos[0] + delta[0], pos[1] + delta[1]) if delta else None
        if nxt is None or nxt not in free:
            rows.append({"case_id": case, "n_targets": len(targets), "gain": 0, "progress": 0,
                         "stale": stale_before, "error": 1, "valid": False, "to": pos})
            continue
        here, there = _bfs(free, pos), _bfs(free, nxt)
        gain = int(nxt in targets or any(there[z] < here[z] for z in targets))
        node_here = next((u for u, (cell, _) in nodes.items() if cell == nxt), None)
        achieves = node_here is not None and node_here not in achieved and prec(node_here)
        progress = nxt not in observed or achieves
        observed.add(nxt)
        if achieves:
            achieved.add(node_here)
        if progress:
            segment = [nxt]
            stale, error = 0, 0
        else:
            segment.append(nxt)
            stale = _stale(segment)
            error = 1 if not gain else 0 if len(targets) == 1 else int(stale > stale_before)
        stale_before = stale
        rows.append({"case_id": case, "n_targets": len(targets), "gain": gain, "progress": int(progress),
                     "stale": stale, "error": error, "valid": True, "to": nxt})
        pos = nxt
    return rows
