"""The task-DAG sampler of Park et al., Appendix C.1: layers, OR/AND prerequisites, depth-biased parents, repair."""

from __future__ import annotations

from typing import NamedTuple

from eebench.generator.params import DagParams, Probs
from eebench.generator.rng import StableRng, stable_exp


class SampledDag(NamedTuple):
    depth: tuple[int, ...]                           # layer of each node; the goal is last and alone
    requires: tuple[tuple[tuple[int, ...], ...], ...]  # per node: alternatives of parent indices (DNF)
    goal: int


def _draw(probs: Probs, rng: StableRng) -> int:
    return probs[rng.weighted_index([p for _, p in probs])][0]


MAX_REDRAWS = 20  # draws of a node's alternatives before settling for fewer


def _draw_alternatives(options: int, count_probs: Probs, candidates: list[int], weights: list[float],
                       rng: StableRng) -> list[tuple[int, ...]]:
    """`options` alternatives of which none equals, contains or lies inside another, drawn together.

    A comparable alternative would be absorbed ((A) or (A and B) is just A) and the node would branch less than
    option_count_probs asks, so the whole set is redrawn until its alternatives are pairwise incomparable. When
    the candidates do not allow that within MAX_REDRAWS draws (e.g. a single candidate parent), the last draw
    is kept with its absorbed alternatives removed: the node gets fewer alternatives.
    """
    for _ in range(MAX_REDRAWS):
        drawn = []
        for _ in range(options):
            k = min(_draw(count_probs, rng), len(candidates))
            drawn.append(frozenset(rng.weighted_sample(candidates, weights, k)))
        if all(not (a <= b or b <= a) for i, a in enumerate(drawn) for b in drawn[i + 1:]):
            break
    minimal = {a for a in drawn if not any(b < a for b in drawn)}
    return sorted((tuple(sorted(a)) for a in minimal), key=lambda a: (len(a), a))


def sample_dag(params: DagParams, rng: StableRng) -> SampledDag:
    """Sample a DAG whose nodes are indexed by depth order, the goal last.

    1. Non-goal nodes fill layers 0, 1, ... of 1..max_nodes_per_layer nodes each (uniform); the goal sits alone
       in the next layer. Layer-0 nodes are primitive (no prerequisites).
    2. Every other node draws a number of alternatives (option_count_probs; the goal has exactly one), and for
       each a number of parents (dependency_count_probs, goal_dependency_count_probs for the goal), capped by
       the candidates. Parents are drawn without replacement among all shallower nodes, a node at depth d
       weighing exp(-beta * ((D - 1) - d)) for a child at depth D. An alternative comparable to an earlier one
       of the same node is redrawn (see `_draw_alternatives`).
    3. Repair: every non-goal node left without a child joins the goal's prerequisites, so every node is an
       ancestor of the goal and the goal is the one sink.
    """
    n = params.n_nodes
    depth: list[int] = []
    layer = 0
    while len(depth) < n - 1:
        size = rng.integer(1, min(params.max_nodes_per_layer, n - 1 - len(depth)))
        depth.extend([layer] * size)
        layer += 1
    goal = n - 1
    depth.append(layer)

    requires: list[list[tuple[int, ...]]] = [[] for _ in range(n)]
    for node in range(n):
        d_node = depth[node]
        candidates = [v for v in range(n) if depth[v] < d_node]
        if not candidates:
            continue
        weights = [stable_exp(-params.parent_depth_bias * ((d_node - 1) - depth[v])) for v in candidates]
        if node == goal:
            options, count_probs = 1, params.goal_dependency_count_probs
        else:
            options, count_probs = _draw(params.option_count_probs, rng), params.dependency_count_probs
        requires[node] = _draw_alternatives(options, count_probs, candidates, weights, rng)

    has_child = {p for alternatives in requires for alt in alternatives for p in alt}
    orphans = [v for v in range(n - 1) if v not in has_child]
    if orphans:  # the goal has one alternative (or none when it is the only node, and then no orphans)
        requires[goal] = [tuple(sorted(set(requires[goal][0]) | set(orphans)))]
    return SampledDag(tuple(depth), tuple(tuple(alts) for alts in requires), goal)
