"""Statistics of the shipped presets over many seeds match what the specs ask: node counts, map size from the
density, corridor widths, names, and the DAG knobs (option, dependency and goal-dependency counts)."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterator
import pytest

import eebench.generator.dag as dag_module
from eebench.generator import generate_instance
from eebench.generator.dag import sample_dag
from eebench.generator.params import DagParams, Preset, Probs
from eebench.generator.rng import StableRng
from eebench.suites import shipped_presets
from eebench.world.grid_dag import GridDagInstance

SEEDS = range(50)
MAIN = [f"{demand}-{size}" for demand in ("low", "medium", "high") for size in ("small", "medium", "large")]
FIXED = [f"8x8-{name}" for name in MAIN]


@functools.cache
def instances(name: str) -> tuple[GridDagInstance, ...]:
    preset = shipped_presets()[name]
    return tuple(generate_instance(preset, seed, f"{name}/seed-{seed}") for seed in SEEDS)


def in_free_block(rows: tuple[str, ...], x: int, y: int, k: int) -> bool:
    """Whether some k x k block of free cells contains (x, y)."""
    height, width = len(rows), len(rows[0])
    return any(all(rows[yy][xx] == "." for yy in range(y0, y0 + k) for xx in range(x0, x0 + k))
               for x0 in range(max(0, x - k + 1), min(x, width - k) + 1)
               for y0 in range(max(0, y - k + 1), min(y, height - k) + 1))


def manhattan(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def test_the_shipped_presets_are_the_papers() -> None:
    presets = {name: p for name, p in shipped_presets().items() if isinstance(p, Preset)}  # grid_dag's
    assert sorted(presets) == sorted(MAIN + FIXED)
    dags = {"small": (4, ((1, 1.0),), ((1, 0.5), (2, 0.5))),
            "medium": (6, ((1, 0.8), (2, 0.2)), ((1, 0.5), (2, 0.5))),
            "large": (8, ((1, 0.6), (2, 0.4)), tuple((k, 1 / 3) for k in (1, 2, 3)))}
    maps = {"low": (0.1, (2, 3)), "medium": (0.25, (1, 3)), "high": (0.4, (1, 1))}
    for name, preset in presets.items():
        demand, size = name.removeprefix("8x8-").split("-")
        n, options, dependencies = dags[size]
        assert preset.dag == DagParams(n, 3, options, dependencies, dependencies, 1.0), name
        density, widths = maps[demand]
        assert preset.map.corridor_width == widths and preset.budget_alpha == 3 and preset.names == "symbolic"
        if name.startswith("8x8-"):
            assert (preset.map.size, preset.map.density) == ((8, 8), None)
        else:
            assert (preset.map.size, preset.map.density, preset.map.aspect_ratio) == (None, density, 1.0)


@pytest.mark.parametrize("name", MAIN + FIXED)
def test_node_count_shape_budget_and_names(name: str) -> None:
    preset = shipped_presets()[name]
    n = preset.dag.n_nodes
    for instance in instances(name):
        assert len(instance.nodes) == n
        assert all(re.fullmatch(r"[A-Z0-9]{4}", node.id) for node in instance.nodes)
        assert len({node.id for node in instance.nodes}) == n
        assert instance.start not in {node.pos for node in instance.nodes}
        assert instance.budget == 3 * len(instance.free_cells())
        assert instance.meta is not None and instance.meta["map_attempt"] == 1  # alpha = 3 never binds here
        if preset.map.size is not None:
            assert (instance.width, instance.height) == (8, 8)
            continue
        # cells = ceil(n / density), height = round(sqrt(cells / aspect)), width = ceil(cells / height)
        cells = math.ceil(n / preset.map.density - 1e-9)
        assert instance.height == round(math.sqrt(cells))
        assert instance.width == math.ceil(cells / instance.height)
        area = instance.width * instance.height
        assert cells <= area < cells + instance.height
        assert 0.8 * preset.map.density < n / area <= preset.map.density


def test_map_sizes_of_the_main_presets() -> None:
    sizes = {name: (instances(name)[0].width, instances(name)[0].height) for name in MAIN}
    assert sizes == {
        "low-small": (7, 6), "low-medium": (8, 8), "low-large": (9, 9),
        "medium-small": (4, 4), "medium-medium": (5, 5), "medium-large": (6, 6),
        "high-small": (4, 3), "high-medium": (4, 4), "high-large": (5, 4),
    }


@pytest.mark.parametrize("name", [n for n in MAIN + FIXED if n.removeprefix("8x8-").startswith("low")])
def test_corridors_two_or_three_wide_leave_no_cell_outside_a_2x2_block(name: str) -> None:
    for instance in instances(name):
        assert all(in_free_block(instance.map, x, y, 2) for x, y in instance.free_cells()), instance.id


@pytest.mark.parametrize("name", [n for n in MAIN + FIXED if n.removeprefix("8x8-").startswith("high")])
def test_corridors_one_wide_are_monotone_paths_from_the_start(name: str) -> None:
    # each corridor is a monotone path of manhattan + 1 cells, so the union can hold no more than this
    narrow = 0
    for instance in instances(name):
        free = len(instance.free_cells())
        assert free <= 1 + sum(manhattan(instance.start, node.pos) for node in instance.nodes), instance.id
        narrow += any(not in_free_block(instance.map, x, y, 2) for x, y in instance.free_cells())
    assert narrow >= 35  # most maps have some cell a 1-wide corridor leaves outside every 2x2 block


@pytest.mark.parametrize("name", [n for n in MAIN + FIXED if n.removeprefix("8x8-").startswith("medium")])
def test_corridors_one_to_three_wide_use_the_whole_range(name: str) -> None:
    maps = instances(name)
    narrow = sum(any(not in_free_block(i.map, x, y, 2) for x, y in i.free_cells()) for i in maps)
    wide = sum(any(in_free_block(i.map, x, y, 3) for x, y in i.free_cells()) for i in maps)
    assert narrow >= 5 and wide >= 40, (narrow, wide)
    for instance in maps:  # a corridor is never wider than 3: each path cell frees at most a 3 x 3 block
        bound = sum((manhattan(instance.start, node.pos) + 1) * 9 for node in instance.nodes)
        assert len(instance.free_cells()) <= bound


def test_lower_exploitation_demand_means_larger_maps() -> None:
    for size in ("small", "medium", "large"):
        areas = [instances(f"{demand}-{size}")[0].width * instances(f"{demand}-{size}")[0].height
                 for demand in ("low", "medium", "high")]
        assert areas == sorted(areas, reverse=True) and len(set(areas)) == 3


def test_a_seed_gives_the_same_dag_and_names_under_every_preset_with_the_same_dag_knobs() -> None:
    for size in ("small", "medium", "large"):
        names = [f"{demand}-{size}" for demand in ("low", "medium", "high")] + [f"8x8-high-{size}"]
        for seed in range(10):
            dags = {tuple((n.id, n.requires) for n in instances(name)[seed].nodes) for name in names}
            maps = {instances(name)[seed].map for name in names}
            assert len(dags) == 1 and len(maps) == len(names)
    # and the map depends on the map knobs only: low-medium is 8 x 8 with corridors 2-3 wide, like 8x8-low-medium
    assert [i.map for i in instances("low-medium")] == [i.map for i in instances("8x8-low-medium")]


# -- DAG knobs, counted as they are drawn ----------------------------------------------------------------

class Draws:
    """Every count `sample_dag` draws, by the distribution it was drawn from."""

    def __init__(self) -> None:
        self.by_probs: dict[Probs, list[int]] = {}

    def __call__(self, probs: Probs, rng: StableRng) -> int:
        value = ORIGINAL_DRAW(probs, rng)
        self.by_probs.setdefault(probs, []).append(value)
        return value


ORIGINAL_DRAW = dag_module._draw


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Draws]:
    spy = Draws()
    monkeypatch.setattr(dag_module, "_draw", spy)
    yield spy


def frequencies(values: list[int]) -> dict[int, float]:
    counts = Counter(values)
    return {k: counts[k] / len(values) for k in sorted(counts)}


DAG_SIZES = {"small": "low-small", "medium": "low-medium", "large": "low-large"}


@pytest.mark.parametrize("size", DAG_SIZES)
def test_drawn_counts_follow_the_preset_probabilities(size: str, draws: Draws) -> None:
    params = shipped_presets()[DAG_SIZES[size]].dag
    for seed in range(300):
        sample_dag(params, StableRng(seed, "dag"))
    # option counts and (shared) dependency / goal-dependency counts, each within 0.06 of what is asked
    asked_options = dict(params.option_count_probs)
    got = frequencies(draws.by_probs.get(params.option_count_probs, [1]))
    assert set(got) <= set(asked_options)
    assert all(abs(got.get(k, 0.0) - p) < 0.06 for k, p in asked_options.items()), got
    assert params.dependency_count_probs == params.goal_dependency_count_probs
    got = frequencies(draws.by_probs[params.dependency_count_probs])
    assert set(got) == set(dict(params.dependency_count_probs))
    assert all(abs(got[k] - p) < 0.06 for k, p in params.dependency_count_probs), got


@pytest.mark.parametrize("size", DAG_SIZES)
def test_the_goal_gets_its_drawn_parents_plus_the_repaired_orphans(size: str, monkeypatch: pytest.MonkeyPatch) -> None:
    params = shipped_presets()[DAG_SIZES[size]].dag
    allowed = {k for k, _ in params.goal_dependency_count_probs}
    for seed in range(200):
        goal_draws: list[int] = []

        def spy(probs: Probs, rng: StableRng) -> int:
            value = ORIGINAL_DRAW(probs, rng)
            goal_draws.append(value)  # the goal is sampled last: its count is the last draw
            return value

        monkeypatch.setattr(dag_module, "_draw", spy)
        dag = sample_dag(params, StableRng(seed, "dag"))
        n = params.n_nodes
        drawn = min(goal_draws[-1], n - 1)
        assert goal_draws[-1] in allowed
        (alternative,) = dag.requires[dag.goal]
        has_child = {p for node in range(n - 1) for alt in dag.requires[node] for p in alt}
        orphans = {v for v in range(n - 1) if v not in has_child}
        assert orphans <= set(alternative)
        assert len(set(alternative) - orphans) <= drawn <= len(alternative)


@pytest.mark.parametrize("size", DAG_SIZES)
def test_alternatives_and_parents_per_node_stay_within_the_allowed_counts(size: str) -> None:
    params = shipped_presets()[DAG_SIZES[size]].dag
    max_options = max(k for k, _ in params.option_count_probs)
    max_parents = max(k for k, _ in params.dependency_count_probs)
    for seed in range(300):
        dag = sample_dag(params, StableRng(seed, "dag"))
        for node in range(params.n_nodes - 1):
            assert len(dag.requires[node]) <= max_options
            assert all(1 <= len(alt) <= max_parents for alt in dag.requires[node])


def effective_or_frequency(params: DagParams, seeds: range) -> float:
    """Among non-goal nodes with prerequisites, the share with more than one alternative in the instance."""
    counts: Counter[bool] = Counter()
    for seed in seeds:
        dag = sample_dag(params, StableRng(seed, "dag"))
        counts.update(len(dag.requires[node]) > 1 for node in range(params.n_nodes - 1) if dag.depth[node] > 0)
    return counts[True] / sum(counts.values())


def test_or_branching_happens_in_the_large_presets() -> None:
    large = effective_or_frequency(shipped_presets()["low-large"].dag, range(300))
    medium = effective_or_frequency(shipped_presets()["low-medium"].dag, range(300))
    small = effective_or_frequency(shipped_presets()["low-small"].dag, range(300))
    assert small == 0.0 < medium < large <= 0.4


@pytest.mark.parametrize("preset, asked", [("low-large", 0.4), ("low-medium", 0.2)])
def test_or_branching_frequency_is_what_option_count_probs_ask(preset: str, asked: float) -> None:
    # A node whose shallower nodes are a single one cannot have two incomparable alternatives; among the others
    # the share with a real OR is what option_count_probs asks for two alternatives.
    params = shipped_presets()[preset].dag
    branching: Counter[bool] = Counter()
    for seed in range(600):
        dag = sample_dag(params, StableRng(seed, "dag"))
        for node in range(params.n_nodes - 1):
            if sum(dag.depth[v] < dag.depth[node] for v in range(params.n_nodes)) >= 2:
                branching[len(dag.requires[node]) > 1] += 1
    share = branching[True] / sum(branching.values())
    assert abs(share - asked) < 0.05, share


def test_a_hand_made_preset_with_semantic_names_draws_them_without_replacement() -> None:
    names = ("Flour", "Eggs", "Milk", "Butter", "Sugar", "Salt", "Dough", "Batter")
    from eebench.generator.params import parse_preset
    preset: Preset = parse_preset("bakery", {"dag": {"n_nodes": 5}, "map": {"size": [6, 6], "corridor_width": [1, 2]},
                                             "names": list(names)})
    seen: Counter[str] = Counter()
    for seed in range(40):
        instance = generate_instance(preset, seed, "bakery/x")
        ids = [node.id for node in instance.nodes]
        assert len(set(ids)) == 5 and set(ids) <= set(names) and instance.names == "semantic"
        seen.update(ids)
    assert set(seen) == set(names)  # every name gets used over the seeds


def test_symbolic_tokens_carry_no_order() -> None:
    # across many instances, the first token is not alphabetically first more often than chance (1 / n)
    preset = shipped_presets()["high-large"]
    firsts = sum(min(n.id for n in i.nodes) == i.nodes[0].id
                 for i in (generate_instance(preset, seed, "x") for seed in range(200)))
    assert firsts < 200 * (1 / 8) * 2
