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


def _minimal(alternatives: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Drop duplicate alternatives and those absorbed by a subset ((A) or (A and B) is just A)."""
    kept: list[tuple[int, ...]] = []
    for alt in sorted(set(alternatives), key=lambda a: (len(a), a)):
        if not any(set(k) <= set(alt) for k in kept):
            kept.append(alt)
    return kept


def sample_dag(params: DagParams, rng: StableRng) -> SampledDag:
    """Sample a DAG whose nodes are indexed by depth order, the goal last.

    1. Non-goal nodes fill layers 0, 1, ... of 1..max_nodes_per_layer nodes each (uniform); the goal sits alone
       in the next layer. Layer-0 nodes are primitive (no prerequisites).
    2. Every other node draws a number of alternatives (option_count_probs; the goal has exactly one), and for
       each a number of parents (dependency_count_probs, goal_dependency_count_probs for the goal), capped by
       the candidates. Parents are drawn without replacement among all shallower nodes, a node at depth d
       weighing exp(-beta * ((D - 1) - d)) for a child at depth D.
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
        alternatives = []
        for _ in range(options):
            k = min(_draw(count_probs, rng), len(candidates))
            alternatives.append(tuple(sorted(rng.weighted_sample(candidates, weights, k))))
        requires[node] = _minimal(alternatives)

    has_child = {p for alternatives in requires for alt in alternatives for p in alt}
    orphans = [v for v in range(n - 1) if v not in has_child]
    if orphans:
        requires[goal] = _minimal([tuple(sorted(set(alt) | set(orphans))) for alt in requires[goal]] or
                                  [tuple(orphans)])
    return SampledDag(tuple(depth), tuple(tuple(alts) for alts in requires), goal)
