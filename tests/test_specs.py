"""Conformance of everything shipped in eebench/specs and eebench/schemas, and of user suites and presets."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eebench.bundles import REGISTRY_FILE
from eebench.documents import load_checked, load_document, load_schema, load_shipped, schema_names
from eebench.errors import InputError
from eebench.instances import load_instance
from eebench.suites import (
    load_presets,
    load_suite,
    resolve_spec,
    shipped_instances,
    shipped_presets,
    shipped_suites,
    specs_root,
)
from eebench.world import GridDagWorld
from eebench.world.planning import shortest_completion
from tests.conftest import instance_doc, write_json

PASTA = sorted(shipped_instances())


def problems(*lines: str) -> str:
    return "^" + re.escape("\n".join(lines)) + "$"


def test_every_shipped_suite_and_preset_file_passes_the_full_door_and_reads_the_same_fast() -> None:
    # the shipped suites and presets are read with libyaml and no schema pass (shipped=True); this is the check
    # that read skips
    presets = sorted((specs_root() / "presets").glob("*.yaml"))
    suites = sorted((specs_root() / "suites").glob("*.yaml"))
    assert len(presets) >= 2 and len(suites) >= 3
    for path in presets:
        assert load_shipped(path) == load_document(path), path
        assert load_presets(path, shipped=True) == load_presets(path), path
    for path in suites:
        assert load_shipped(path) == load_document(path), path
        assert load_suite(path, shipped=True) == load_suite(path), path
    assert shipped_suites() == {load_document(path)["name"]: path for path in suites}
    registry = specs_root() / REGISTRY_FILE   # the registry of shipped bundles, read the same way
    assert load_shipped(registry) == load_checked(registry, "registry")


@pytest.mark.parametrize("name", schema_names())
def test_every_shipped_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"https://eebench.org/schemas/{name}.json"
    text = resources.files("eebench").joinpath("schemas", f"{name}.json").read_text("utf-8")
    assert json.loads(text) == schema


def test_every_shipped_spec_file_is_found_and_valid() -> None:
    root = specs_root()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml")
                  if p.relative_to(root).parts[0] != "checkpoints") == [   # checkpoints: tests/test_checkpoints.py
        "bundles.yaml", "instances/pasta/custom-201.yaml", "instances/pasta/custom-202.yaml", "instances/pasta/custom-203.yaml",
        "instances/pasta/custom-204.yaml", "presets/grams2025.yaml", "presets/park2026.yaml",
        "suites/grams2025-maze.yaml", "suites/grams2025-rooms.yaml", "suites/park2026-8x8.yaml",
        "suites/park2026-main.yaml", "suites/park2026-pasta.yaml"]
    assert len(load_presets(root / "presets/park2026.yaml")) == 18
    assert len(load_presets(root / "presets/grams2025.yaml")) == 5
    assert len(shipped_presets()) == 23
    assert {name: len(load_suite(path)) for name, path in shipped_suites().items()} == {
        "grams2025-maze": 6, "grams2025-rooms": 9, "park2026-8x8": 27, "park2026-main": 27, "park2026-pasta": 8}
    assert PASTA == ["pasta/custom-201", "pasta/custom-202", "pasta/custom-203", "pasta/custom-204"]


def test_the_main_suite_is_nine_presets_at_seeds_0_1_2() -> None:
    ids = resolve_spec("park2026-main").instance_ids()
    assert ids == [f"park2026-main/{d}-{s}/seed-{k}" for d in ("low", "medium", "high")
                   for s in ("small", "medium", "large") for k in range(3)]


@pytest.mark.parametrize("suite", ["park2026-main", "park2026-8x8", "park2026-pasta"])
def test_every_instance_of_every_shipped_suite_is_valid_and_solvable(suite: str, tmp_path: Path) -> None:
    spec = resolve_spec(suite)
    instances = list(spec.instances())
    assert [i.id for i in instances] == spec.instance_ids()
    for instance in instances:
        path = write_json(tmp_path / f"{instance.id}.json", instance.to_document())
        assert load_instance(path).instance == instance
        assert shortest_completion(GridDagWorld(instance)).cost <= instance.budget


@pytest.mark.parametrize("name", PASTA)
def test_pasta_maps_are_semantic_with_budget_three_times_the_free_cells(name: str) -> None:
    instance = load_instance(shipped_instances()[name]).instance
    assert instance.id == name.split("/")[1] and instance.names == "semantic"
    assert instance.budget == 3 * len(instance.free_cells())
    assert all(re.fullmatch(r"[A-Z][a-z]+( [A-Za-z]+)*", node.id) for node in instance.nodes)


def test_pasta_maps_have_and_and_or_prerequisites() -> None:
    nodes = [node for name in PASTA for node in load_instance(shipped_instances()[name]).instance.nodes]
    assert any(len(node.requires) > 1 for node in nodes)  # an OR
    assert any(len(alt) > 1 for node in nodes for alt in node.requires)  # an AND


@pytest.mark.parametrize("name", PASTA)
def test_the_symbolic_twin_is_the_same_task_under_random_tokens(name: str) -> None:
    base = name.split("/")[1]
    twins = {i.id.rsplit("/", 1)[1]: i for i in resolve_spec("park2026-pasta").instances()
             if i.id.startswith(f"park2026-pasta/{base}/")}
    semantic, symbolic = twins["semantic"], twins["symbolic"]
    assert (semantic.map, semantic.start, semantic.budget) == (symbolic.map, symbolic.start, symbolic.budget)
    assert semantic.names == "semantic" and symbolic.names == "symbolic"
    rename = {a.id: b.id for a, b in zip(semantic.nodes, symbolic.nodes)}
    assert all(re.fullmatch(r"[A-Z0-9]{4}", token) for token in rename.values())
    assert len(set(rename.values())) == len(rename)
    assert rename[semantic.goal] == symbolic.goal
    for a, b in zip(semantic.nodes, symbolic.nodes):
        assert a.pos == b.pos and tuple(tuple(rename[p] for p in alt) for alt in a.requires) == b.requires
    assert symbolic.meta is not None and symbolic.meta["twin_of"] == base


# -- user suites and presets ---------------------------------------------------------------------------

def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def test_inline_presets_take_precedence_over_shipped_ones(tmp_path: Path) -> None:
    spec = write(tmp_path / "s.yaml", """\
eebench: suite/1
name: s
members: [{presets: [low-small], seeds: [0]}]
presets:
  low-small: {dag: {n_nodes: 2}, map: {size: [3, 3], corridor_width: [1, 1]}}
""")
    (instance,) = resolve_spec(str(spec)).instances()
    assert (len(instance.nodes), instance.width, instance.id) == (2, 3, "s/low-small/seed-0")


def test_a_suite_whose_ids_repeat_is_refused(tmp_path: Path) -> None:
    spec = write(tmp_path / "s.yaml", """\
eebench: suite/1
name: s
members:
  - {instance: hand.yaml}
  - {instance: hand.json}
""")
    doc = instance_doc(["..."], [0, 0], [("G", [2, 0], [])], "G")
    write_json(tmp_path / "hand.yaml", doc)
    write_json(tmp_path / "hand.json", doc)
    with pytest.raises(InputError, match=problems(f"{spec}: members: instance ids repeat: s/hand")):
        load_suite(spec)


@pytest.mark.parametrize("variants", ["", ", variants: [semantic, symbolic]"])
def test_an_invalid_hand_made_instance_in_a_suite_is_refused_by_validate_as_by_generate(
        cli: Any, tmp_path: Path, variants: str) -> None:
    """validate passed the suite (it read the member's file only for a symbolic twin); generate refused it."""
    spec = write(tmp_path / "s.yaml", f"eebench: suite/1\nname: s\nmembers: [{{instance: hand.yaml{variants}}}]\n")
    write_json(tmp_path / "hand.yaml", instance_doc(["..."], [0, 0], [("G", [0, 0], [])], "G"))
    line = f"error: {tmp_path / 'hand.yaml'}: nodes[0].pos: [0, 0] is the start cell, which carries no node\n"
    assert cli("validate", spec, code=2).stderr == line
    assert cli("generate", spec, "--out", tmp_path / "out", code=2).stderr == line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, line", [
    ("eebench: suite/1\nname: s\nmembers: []\n", "members: expected at least 1 item(s), found 0"),
    ("eebench: suite/1\nname: s\nmembers: [{presets: [low-small]}]\n", "members[0].seeds: missing required field"),
    ("eebench: suite/1\nname: s\nmembers: [{presets: [low-small], seeds: [-1]}]\n",
     "members[0].seeds[0]: expected a number >= 0, found -1"),
    ("eebench: suite/1\nname: s t\nmembers: [{instance: pasta/custom-201}]\n",
     "name: expected a name of letters, digits, '.', '_', '-' (at most 250: it becomes a folder name), found \"s t\""),
    ("eebench: suite/1\nname: s\nmembers: [{instance: pasta/custom-201, variants: [semantc]}]\n",
     "members[0].variants[0]: expected one of semantic, symbolic, found \"semantc\" (did you mean 'semantic'?)"),
    ("eebench: suite/1\nname: s\nmembers: [{foo: 1}]\n",
     "members[0].instance: missing required field\n{file}: members[0].foo: unknown field (expected instance or variants)"),
    ("eebench: suite/1\nname: s\nmembrs: []\n",
     "members: missing required field\n{file}: membrs: unknown field (did you mean 'members'?)"),
])
def test_suite_schema_problems(tmp_path: Path, text: str, line: str) -> None:
    spec = write(tmp_path / "s.yaml", text)
    with pytest.raises(InputError, match=problems(f"{spec}: {line.format(file=spec)}")):
        load_suite(spec)


@pytest.mark.parametrize("preset, line", [
    ("{dag: {n_nodes: 0}, map: {size: [3, 3], corridor_width: [1, 1]}}",
     "presets.p.dag.n_nodes: expected a number >= 1, found 0"),
    ("{dag: {n_nodes: 3, option_count_probs: {0: 1.0}}, map: {size: [3, 3], corridor_width: [1, 1]}}",
     "presets.p.dag.option_count_probs.0: unexpected key; a mapping {count: probability} with counts >= 1"),
    ("{dag: {n_nodes: 3}, map: {size: [3, 3], corridor_width: [0, 1]}}",
     "presets.p.map.corridor_width[0]: expected a number >= 1, found 0"),
    ("{dag: {n_nodes: 3}, map: {size: [3, 3], corridor_width: [1]}}",
     "presets.p.map.corridor_width: expected [min, max], two integers >= 1, found [1]"),
    ("{dag: {n_nodes: 3}, map: {size: [3, 3], corridor_width: [1, 1]}, names: [a, a, b]}",
     "presets.p.names: expected distinct items, found [\"a\", \"a\", \"b\"]"),
    ("{dag: {n_nodes: 3}, map: {density: 1.5, corridor_width: [1, 1]}}",
     "presets.p.map.density: expected a number <= 1, found 1.5"),
    ("{dag: {n_nodes: 3}, map: {size: [3, 3], corridor_width: [1, 1]}, names: symbolc}",
     "presets.p.names: expected \"symbolic\" or array, found a string \"symbolc\" (did you mean 'symbolic'?)"),
    ("{dag: {n_nodes: 3}, map: {size: [3, 3], corridor_width: [1, 1]}, budget_alpha: 0}",
     "presets.p.budget_alpha: expected a number > 0, found 0"),
])
def test_generator_schema_problems(tmp_path: Path, preset: str, line: str) -> None:
    spec = write(tmp_path / "g.yaml", f"eebench: generator/1\nenv: grid_dag\npresets:\n  p: {preset}\n")
    with pytest.raises(InputError, match=problems(f"{spec}: {line}")):
        load_presets(spec)


def test_shipped_specs_are_not_confused_with_local_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file of the same name in the working folder wins: names resolve as file, suite, preset, in that order
    monkeypatch.chdir(tmp_path)
    write_json(tmp_path / "low-small", {"eebench": "generator/1", "env": "grid_dag", "presets": {
        "mine": {"dag": {"n_nodes": 2}, "map": {"size": [3, 3], "corridor_width": [1, 1]}}}})  # no suffix: JSON
    assert resolve_spec("low-small").instance_ids() == ["mine/seed-0"]
    assert resolve_spec("high-small", [1]).instance_ids() == ["high-small/seed-1"]


def test_load_document_reads_the_shipped_yaml_with_integer_keys_as_strings() -> None:
    doc = load_document(specs_root() / "presets/park2026.yaml")
    assert doc["presets"]["low-large"]["dag"]["option_count_probs"] == {"1": 0.6, "2": 0.4}


def test_a_symbolic_twin_only_of_a_kind_with_names_to_hide(tmp_path: Path) -> None:
    room = {"eebench": "instance/1", "id": "hand/row", "env": "rooms", "rooms": ["A", "B"], "start": "A",
            "doors": [{"name": "red", "between": ["A", "B"]}], "balls": [{"name": "khaki", "room": "B", "reward": 1}],
            "episodes": 1, "door_budget": 1, "ball_limit": 1}
    (tmp_path / "row.yaml").write_text(json.dumps(room), "utf-8")
    spec = tmp_path / "s.yaml"
    spec.write_text("eebench: suite/1\nname: s\nmembers:\n  - {instance: row.yaml, variants: [semantic, symbolic]}\n",
                    "utf-8")
    with pytest.raises(InputError, match=re.escape(f"{spec}: members[0].variants: rooms instances have no symbolic "
                                                   "variant (only grid_dag instances do)")):
        resolve_spec(str(spec))
    spec.write_text("eebench: suite/1\nname: s\nmembers:\n  - {instance: row.yaml, variants: [semantic]}\n", "utf-8")
    (instance,) = resolve_spec(str(spec)).instances()
    assert instance.id == "s/row/semantic" and instance.doors == load_instance(tmp_path / "row.yaml").instance.doors
