"""Property tests over random presets and seeds: whatever the knobs, a generated instance is valid, its DAG keeps the
layer cap and depth order, every node leads to the goal, the budget follows alpha, and the oracle finishes in time."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.agents import play_episode
from eebench.generator import generate_instance
from eebench.generator.dag import sample_dag
from eebench.generator.params import Preset, parse_preset, preset_problems
from eebench.generator.rng import StableRng
from eebench.instances import check_instance_document
from eebench.suites import shipped_presets
from eebench.world import GridDagWorld, parse_action
from eebench.world.planning import shortest_completion

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def probs(draw: st.DrawFn, max_count: int) -> dict[str, float]:
    """A categorical distribution over counts 1..max_count as the YAML would give it ({"1": 0.25, ...})."""
    counts = draw(st.lists(st.integers(1, max_count), min_size=1, max_size=max_count, unique=True))
    weights = draw(st.lists(st.integers(1, 9), min_size=len(counts), max_size=len(counts)))
    total = sum(weights)
    return {str(c): w / total for c, w in zip(counts, weights)}


@st.composite
def presets(draw: st.DrawFn) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, 12))
    dag = {
        "n_nodes": n_nodes,
        "max_nodes_per_layer": draw(st.integers(1, 4)),
        "option_count_probs": draw(probs(3)),
        "dependency_count_probs": draw(probs(4)),
        "goal_dependency_count_probs": draw(probs(4)),
        "parent_depth_bias": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0])),
    }
    low = draw(st.integers(1, 3))
    map_: dict[str, Any] = {"corridor_width": [low, draw(st.integers(low, 3))]}
    if draw(st.booleans()):
        map_["density"] = draw(st.sampled_from([0.05, 0.1, 0.2, 0.25, 0.4, 0.6]))
        map_["aspect_ratio"] = draw(st.sampled_from([0.5, 1.0, 1.5, 2.0]))
    else:
        width = draw(st.integers(2, 12))
        height = draw(st.integers(max(1, math.ceil((n_nodes + 1) / width)), 12))
        map_["size"] = [width, height]
    return {"dag": dag, "map": map_, "budget_alpha": draw(st.sampled_from([3, 2.5, 4]))}


def parents_of(requires: tuple[tuple[tuple[int, ...], ...], ...], node: int) -> set[int]:
    return {p for alt in requires[node] for p in alt}


@SETTINGS
@given(doc=presets(), seed=st.integers(0, 10 ** 6))
def test_generated_instances_keep_every_promise(doc: dict[str, Any], seed: int) -> None:
    assert preset_problems("p", doc) == []
    preset = parse_preset("p", doc)
    instance = generate_instance(preset, seed, f"p/seed-{seed}")
    n = preset.dag.n_nodes

    # valid: schema and every semantic rule, and the document round-trips
    document = instance.to_document()
    assert check_instance_document(document, "generated") == instance
    assert len(instance.nodes) == n and len({node.id for node in instance.nodes}) == n

    # the DAG is sample_dag's on the seed's own stream, node i named by the i-th name
    dag = sample_dag(preset.dag, StableRng(seed, "dag"))
    index = {node.id: i for i, node in enumerate(instance.nodes)}
    assert [sorted(tuple(sorted(index[p] for p in alt)) for alt in node.requires) for node in instance.nodes] == \
        [sorted(alts) for alts in dag.requires]
    assert instance.nodes[dag.goal].id == instance.goal and dag.goal == n - 1

    # layers: at most max_nodes_per_layer non-goal nodes per depth, filled in order, the goal alone and last
    depth = dag.depth
    assert list(depth) == sorted(depth)
    layers = [depth[:-1].count(d) for d in range(depth[-1])]
    assert all(1 <= size <= preset.dag.max_nodes_per_layer for size in layers)
    assert depth[-1] == (depth[-2] + 1 if n > 1 else 0)
    # depth order: parents strictly shallower; primitive exactly at layer 0; the goal has one alternative
    for node in range(n):
        assert all(depth[p] < depth[node] for p in parents_of(dag.requires, node))
        assert (dag.requires[node] == ()) == (depth[node] == 0)
    if n > 1:
        assert len(dag.requires[dag.goal]) == 1
    # alternatives are minimal (no duplicates, none containing another) and within the drawn counts
    max_options = max(int(k) for k in doc["dag"]["option_count_probs"])
    max_parents = max(int(k) for k in doc["dag"]["dependency_count_probs"])
    for node, alternatives in enumerate(dag.requires):
        sets = [set(a) for a in alternatives]
        assert all(not a <= b for i, a in enumerate(sets) for j, b in enumerate(sets) if i != j)
        if node != dag.goal:
            assert len(alternatives) <= max_options and all(len(a) <= max_parents for a in sets)

    # every node is an ancestor of the goal, and the goal is the one sink
    ancestors: set[int] = set()
    todo = [dag.goal]
    while todo:
        for p in parents_of(dag.requires, todo.pop()):
            if p not in ancestors:
                ancestors.add(p)
                todo.append(p)
    assert ancestors == set(range(n - 1))
    sinks = [u for u in range(n) if not any(u in parents_of(dag.requires, v) for v in range(n))]
    assert sinks == [dag.goal]

    # the map has the preset's shape and the budget is ceil(alpha * free cells)
    assert (instance.width, instance.height) == preset.map.dimensions(n)
    free = len(instance.free_cells())
    assert instance.budget == math.ceil(preset.budget_alpha * free)

    # the oracle, replayed in the world's rules, achieves the goal within budget in the fewest possible steps
    world = GridDagWorld(instance)
    trajectory = play_episode(instance, "oracle", seed)
    state = world.initial_state()
    for step in trajectory["steps"]:
        result = world.step(state, parse_action(step["action"]))
        assert result.valid
        state = result.state
    assert world.goal_achieved(state)
    assert len(trajectory["steps"]) == shortest_completion(world).cost <= instance.budget


@settings(max_examples=15, deadline=None)
@given(n_nodes=st.integers(15, 40), seed=st.integers(0, 10 ** 6), width=st.sampled_from([[1, 1], [1, 3], [2, 3]]))
def test_large_dags_beyond_the_exact_planner_still_fit_their_budget(n_nodes: int, seed: int, width: list[int]) -> None:
    # above 14 nodes the planner (and so the oracle and the generator's budget check) is greedy
    preset = parse_preset("big", {"dag": {"n_nodes": n_nodes, "option_count_probs": {"1": 0.5, "2": 0.5},
                                          "dependency_count_probs": {"1": 0.5, "3": 0.5}},
                                  "map": {"density": 0.2, "corridor_width": width}})
    instance = generate_instance(preset, seed, "big/x")
    check_instance_document(instance.to_document(), "generated")
    world = GridDagWorld(instance)
    state = world.initial_state()
    for step in play_episode(instance, "oracle", seed)["steps"]:
        state = world.step(state, parse_action(step["action"])).state
    assert world.goal_achieved(state) and state.t <= instance.budget


@settings(max_examples=30, deadline=None)
@given(doc=presets(), seed=st.integers(0, 10 ** 6))
def test_generation_is_a_pure_function_of_preset_and_seed(doc: dict[str, Any], seed: int) -> None:
    preset = parse_preset("p", doc)
    first = generate_instance(preset, seed, "p/x")
    assert generate_instance(preset, seed, "p/x").to_document() == first.to_document()


@settings(max_examples=30, deadline=None)
@given(doc=presets(), seed=st.integers(0, 10 ** 6), size=st.tuples(st.integers(4, 10), st.integers(4, 10)))
def test_the_dag_and_names_do_not_depend_on_the_map_knobs(doc: dict[str, Any], seed: int,
                                                          size: tuple[int, int]) -> None:
    doc["dag"]["n_nodes"] = min(doc["dag"]["n_nodes"], size[0] * size[1] - 1)
    other = {**doc, "map": {"size": list(size), "corridor_width": [1, 1]}}
    a = generate_instance(parse_preset("p", doc), seed, "p/x")
    b = generate_instance(parse_preset("p", other), seed, "p/x")
    assert [(node.id, node.requires) for node in a.nodes] == [(node.id, node.requires) for node in b.nodes]


@pytest.mark.slow
def test_every_shipped_preset_at_200_seeds_validates_and_the_oracle_solves_it() -> None:
    for name, preset in shipped_presets().items():
        if not isinstance(preset, Preset):  # another world kind's preset (rooms): its own tests cover it
            continue
        for seed in range(200):
            instance = generate_instance(preset, seed, f"{name}/seed-{seed}")
            check_instance_document(instance.to_document(), "generated")
            world = GridDagWorld(instance)
            state = world.initial_state()
            for step in play_episode(instance, "oracle", seed)["steps"]:
                state = world.step(state, parse_action(step["action"])).state
            assert world.goal_achieved(state) and state.t <= instance.budget, instance.id
