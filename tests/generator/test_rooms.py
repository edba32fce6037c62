"""The room-world generators (Grams et al., issue 10): byte-determinism, pinned digests, graph properties."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.documents import canonical_json, load_checked, schema_problems, sha256_hex
from eebench.generator.rooms import (
    Graph,
    RoomsPreset,
    Start,
    generate_instance,
    grid_edges,
    palette,
    parse_preset,
    preset_problems,
)
from eebench.suites import resolve_spec, shipped_presets, specs_root
from eebench.world.rooms import RoomsInstance, door_graph, semantic_problems

PINNED = [
    ("4x4", 0, "grams2025-rooms/4x4/seed-0", "6e656c1c9de0adac0c94ce0d06095ec249d2ecc09d4e060709f3fc389ef8e251"),
    ("7x7", 2, "grams2025-rooms/7x7/seed-2", "a68539afde752526c57ef74ac0792b4c9d9292d11c560d4eae0da65c8f616ba9"),
    ("maze-9x9", 1, "grams2025-maze/maze-9x9/seed-1",
     "d80aa6affa736fd12c327725fd6a51ccc69f8ef29ccc405f993448f87f75c0d1"),
]


@pytest.mark.parametrize("preset, seed, instance_id, digest", PINNED)
def test_pinned_digests(preset: str, seed: int, instance_id: str, digest: str) -> None:
    assert sha256_hex(generate_instance(shipped_presets()[preset], seed, instance_id).to_document()) == digest


def test_the_same_preset_and_seed_give_the_same_bytes_in_another_process() -> None:
    preset, seed, instance_id, digest = PINNED[1]
    code = ("from eebench.suites import shipped_presets; from eebench.generator.rooms import generate_instance; "
            "from eebench.documents import sha256_hex; "
            f"print(sha256_hex(generate_instance(shipped_presets()[{preset!r}], {seed}, {instance_id!r}).to_document()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == digest


def test_the_suites_are_three_layouts_per_size() -> None:
    rooms = resolve_spec("grams2025-rooms")
    assert rooms.instance_ids() == [f"grams2025-rooms/{size}/seed-{k}" for size in ("4x4", "5x5", "7x7")
                                    for k in range(3)]
    maze = resolve_spec("grams2025-maze")
    assert maze.instance_ids() == [f"grams2025-maze/maze-{n}x{n}/seed-{k}" for n in (7, 9) for k in range(3)]
    for suite in (rooms, maze):
        for instance in suite.instances():
            doc = instance.to_document()
            assert schema_problems(doc, "instance.rooms", instance.id) == [] and semantic_problems(doc) == []
            assert RoomsInstance.from_document(doc) == instance
            assert instance.episodes == 20 and instance.ball_limit == 3


def test_the_shipped_presets_are_the_papers() -> None:
    doc = load_checked(specs_root() / "presets/grams2025.yaml", "generator", "generator.rooms")
    presets = {name: parse_preset(name, p) for name, p in doc["presets"].items()}
    rooms = RoomsPreset("", Graph.GRID, (0, 0), 0.01, Start.CORNER, None, ((0, 0.4), (1, 0.4), (2, 0.2)), (1, 10), 20, 3)
    maze = RoomsPreset("", Graph.MAZE, (0, 0), 0.0, Start.CENTRE, 15, ((0, 0.8), (1, 0.2)), (1, 10), 20, 3)
    assert presets == {
        "4x4": replace(rooms, name="4x4", size=(4, 4)),
        "5x5": replace(rooms, name="5x5", size=(5, 5)),
        "7x7": replace(rooms, name="7x7", size=(7, 7)),
        "maze-7x7": replace(maze, name="maze-7x7", size=(7, 7)),
        "maze-9x9": replace(maze, name="maze-9x9", size=(9, 9)),
    }
    assert all(shipped_presets()[name] == preset for name, preset in presets.items())


def test_the_papers_example_start_is_a_5x5_corner_with_two_doors_and_a_budget_of_8() -> None:
    preset = RoomsPreset("full", Graph.GRID, (5, 5), p_drop=0.0)
    instance = generate_instance(preset, 0, "t/full")
    assert len(instance.doors) == len(grid_edges(5, 5)) == 40
    assert instance.start == "R0-0" and instance.door_budget == 8
    assert sum(instance.start in d.between for d in instance.doors) == 2
    assert instance.layout is not None and instance.layout["R0-1"] == (1, 0)   # R<row>-<column>, layout [x, y]


def test_the_palette_is_shipped_data_with_distinct_names() -> None:
    names = palette()
    assert len(names) == len(set(names)) == 169
    assert {"tangerine", "dodger_blue", "khaki", "midnight_blue", "apricot"} <= set(names)
    assert all(n == n.strip().lower() and " " not in n for n in names)


# -- properties ------------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 8), height=st.integers(2, 8), p_drop=st.sampled_from([0.0, 0.01, 0.3, 0.9]),
       seed=st.integers(0, 10**6), start=st.sampled_from(list(Start)))
def test_dark_treasure_rooms_are_connected_and_the_budget_is_the_starts_eccentricity(
        width: int, height: int, p_drop: float, seed: int, start: Start) -> None:
    preset = RoomsPreset("p", Graph.GRID, (width, height), p_drop, start, balls_per_room=((0, 0.5), (1, 0.5)))
    instance = generate_instance(preset, seed, "t/p")
    check_common(instance, width, height)
    graph = door_graph(instance)
    assert nx.is_connected(graph)
    assert instance.door_budget == nx.eccentricity(graph, instance.start)
    if p_drop == 0:
        assert len(instance.doors) == width * (height - 1) + height * (width - 1)


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 9), height=st.integers(2, 9), seed=st.integers(0, 10**6))
def test_a_kruskal_maze_is_a_spanning_tree(width: int, height: int, seed: int) -> None:
    preset = RoomsPreset("m", Graph.MAZE, (width, height), start=Start.CENTRE, door_budget=15,
                         balls_per_room=((0, 0.8), (1, 0.2)))
    instance = generate_instance(preset, seed, "t/m")
    check_common(instance, width, height)
    assert len(instance.doors) == len(instance.rooms) - 1
    assert nx.is_tree(door_graph(instance))
    assert instance.start == f"R{height // 2}-{width // 2}" and instance.door_budget == 15


def check_common(instance: RoomsInstance, width: int, height: int) -> None:
    doc = instance.to_document()
    assert schema_problems(doc, "instance.rooms", "t") == [] and semantic_problems(doc) == []
    assert len(instance.rooms) == width * height
    names = [d.name for d in instance.doors]
    assert len(set(names)) == len(names) and set(names) <= set(palette())
    balls = [b.name for b in instance.balls]
    assert len(set(balls)) == len(balls) and set(balls) <= set(palette())
    assert all(1 <= b.reward <= 10 for b in instance.balls)
    # doors join grid neighbours only
    layout = instance.layout
    assert layout is not None
    for door in instance.doors:
        (ax, ay), (bx, by) = layout[door.between[0]], layout[door.between[1]]
        assert abs(ax - bx) + abs(ay - by) == 1
    # some ball worth a reward is within one episode's reach
    reach = nx.single_source_shortest_path_length(door_graph(instance), instance.start)
    assert any(b.reward > 0 and reach[b.room] <= instance.door_budget for b in instance.balls)
    assert canonical_json(generate_instance_again(instance)) == canonical_json(doc)


def generate_instance_again(instance: RoomsInstance) -> dict[str, Any]:
    meta = instance.meta or {}
    preset = parse_preset(meta["preset"], meta["params"])
    return generate_instance(preset, meta["seed"], instance.id).to_document()


# -- bad presets ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, expected", [
    ({"balls_per_room": {"0": 0.5, "1": 0.4}}, [("p.balls_per_room", "probabilities sum to 0.9, expected 1")]),
    ({"reward": [5, 2]}, [("p.reward", "min 5 is larger than max 2")]),
    ({"graph": "maze", "p_drop": 0.1}, [("p.p_drop", "a maze is a spanning tree: no door can be dropped; remove p_drop")]),
    ({"size": [10, 10]}, [("p.size", "a 10x10 grid has up to 180 doors but the colour palette has 169 names; doors "
                                     "need distinct names"),
                          ("p.balls_per_room", "up to 200 balls but the colour palette has 169 names; balls need "
                                               "distinct names")]),
    # what generate refused at every seed while validate passed it
    ({"size": [1, 1]}, [("p.door_budget", "a 1x1 grid is a single room, whose eccentricity is 0: it has no door to "
                                          "walk; give door_budget a number")]),
    ({"balls_per_room": {"0": 1.0, "3": 0.0}}, [("p.balls_per_room", "every room holds 0 balls, so no episode earns "
                                                 "a reward (the gaps divide by R_max); give a count above 0 a "
                                                 "probability")]),
    ({"reward": [0, 0]}, [("p.reward", "every ball is worth 0, so no episode earns a reward (the gaps divide by "
                                       "R_max); raise max above 0")]),
])
def test_preset_problems(changes: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    doc = {"graph": "grid", "size": [4, 4], "p_drop": 0.01, "balls_per_room": {"0": 0.4, "1": 0.4, "2": 0.2}}
    doc.update(changes)
    assert preset_problems("p", doc) == expected


@pytest.mark.parametrize("preset, field", [
    ("{graph: grid, size: [1, 1]}", "door_budget"),
    ("{graph: maze, size: [3, 3], balls_per_room: {0: 1.0}}", "balls_per_room"),
    ("{graph: grid, size: [3, 3], reward: [0, 0]}", "reward"),
])
def test_validate_refuses_what_generate_refuses_at_every_seed_in_the_same_line(cli: Any, tmp_path: Path, preset: str,
                                                                              field: str) -> None:
    spec = tmp_path / "g.yaml"
    spec.write_text(f"eebench: generator/1\nenv: rooms\npresets:\n  p: {preset}\n", "utf-8")
    validated = cli("validate", spec, code=2)
    generated = cli("generate", spec, "--out", tmp_path / "out", code=2)
    assert validated.stderr == generated.stderr and validated.stderr.startswith(f"error: {spec}: presets.p.{field}: ")
    assert validated.stderr.count("\n") == 1 and not (tmp_path / "out").exists()


def test_the_generator_schema_bounds_what_an_instance_bounds() -> None:
    """A preset of rewards past 2^31 - 1 or 40,000 episodes made instances validate refused (episodes 2^40: play ran
    without end)."""
    preset = {"graph": "grid", "size": [3, 3], "reward": [1, 2 ** 32], "episodes": 40000, "door_budget": 2 ** 63 - 1,
              "ball_limit": 2 ** 31, "max_actions": 2 ** 31}
    doc = {"eebench": "generator/1", "env": "rooms", "presets": {"p": preset}}
    assert sorted(p.field for p in schema_problems(doc, "generator.rooms", "g.yaml")) == [
        "presets.p.ball_limit", "presets.p.door_budget", "presets.p.episodes", "presets.p.max_actions",
        "presets.p.reward[1]"]


def test_a_word_one_branch_takes_is_suggested_when_the_value_fits_no_branch() -> None:
    """door_budget 'eccentrcity' was explained by the integer branch alone: `expected integer, found a string`."""
    doc = {"eebench": "generator/1", "env": "rooms", "presets": {"p": {"graph": "grid", "size": [4, 4],
                                                                       "door_budget": "eccentrcity"}}}
    assert [(p.field, p.message) for p in schema_problems(doc, "generator.rooms", "g.yaml")] == [
        ("presets.p.door_budget", "expected integer or \"eccentricity\", found a string \"eccentrcity\" (did you "
                                  "mean 'eccentricity'?)")]


def test_the_generator_schema_refuses_unknown_knobs() -> None:
    doc = {"eebench": "generator/1", "env": "rooms", "presets": {"p": {"graph": "tree", "size": [4, 4], "pdrop": 1}}}
    assert sorted((p.field, p.message) for p in schema_problems(doc, "generator.rooms", "g.yaml")) == [
        ("presets.p.graph", "expected one of grid, maze, found \"tree\""),
        ("presets.p.pdrop", "unknown field (did you mean 'p_drop'?)"),
    ]


@pytest.mark.parametrize("env", ["rooms", "grid_dag"])
def test_a_preset_name_is_at_most_250_characters_as_the_folder_it_becomes(env: str) -> None:
    """A rooms preset of 300 characters validated, then generate failed on a temporary path's name."""
    preset = {"graph": "grid", "size": [2, 2]} if env == "rooms" else \
        {"dag": {"n_nodes": 3}, "map": {"density": 0.5, "corridor_width": [1, 1]}}
    doc = {"eebench": "generator/1", "env": env, "presets": {"r" * 251: preset, "r" * 250: preset}}
    [problem] = schema_problems(doc, f"generator.{env}", "g.yaml")
    assert (problem.field, problem.message) == (
        "presets", "expected a preset name of letters, digits, '.', '_', '-' (at most 250: it becomes a folder "
                   f"name), found \"{'r' * 36}...")
