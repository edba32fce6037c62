"""instance/1 documents: the JSON Schema, the world's semantic rules, files on disk and the instance library."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from eebench.documents import canonical_json, sha256_hex
from eebench.errors import InputError
from eebench.instances import InstanceLibrary, check_instance_document, load_instance, write_instances
from eebench.world.grid_dag import GridDagInstance
from tests.conftest import instance_doc, make_instance, write_json


def base() -> dict[str, Any]:
    """A valid 4x2 instance: A primitive at [1, 0], goal G at [3, 1] requires A, start [0, 0]."""
    return instance_doc(["....", "...."], [0, 0], [("A", [1, 0], []), ("G", [3, 1], [["A"]])], "G")


def problems(*lines: str) -> str:
    """A `match` pattern for exactly these problem lines, in this order."""
    return "^" + re.escape("\n".join(lines)) + "$"


def check(doc: dict[str, Any]) -> GridDagInstance:
    return check_instance_document(doc, "x.json")


def test_a_valid_instance_round_trips_through_its_document() -> None:
    doc = base()
    instance = check(doc)
    assert instance.to_document() == doc
    assert (instance.width, instance.height, instance.start, instance.goal) == (4, 2, (0, 0), "G")
    assert instance.free_cells() == [(x, y) for y in range(2) for x in range(4)]


# -- semantic rules ---------------------------------------------------------------------------------

def test_node_ids_are_unique() -> None:
    doc = base()
    doc["nodes"].append({"id": "A", "pos": [2, 0], "requires": []})
    with pytest.raises(InputError, match=problems("x.json: nodes[2].id: duplicate id 'A' (also nodes[0])")):
        check(doc)


@pytest.mark.parametrize("pos, reason", [
    ([1, 0], "nodes[1].pos: [1, 0] already holds nodes[0]"),
    ([0, 0], "nodes[1].pos: [0, 0] is the start cell, which carries no node"),
    ([4, 1], "nodes[1].pos: [4, 1] is outside the map; nodes sit on free cells"),
    ([3, 2], "nodes[1].pos: [3, 2] is outside the map; nodes sit on free cells"),
    ([2, 0], "nodes[1].pos: [2, 0] is on an obstacle; nodes sit on free cells"),
])
def test_nodes_sit_on_distinct_free_cells_never_the_start(pos: list[int], reason: str) -> None:
    doc = base()
    doc["map"] = ["..#.", "...."]
    doc["nodes"][1]["pos"] = pos
    with pytest.raises(InputError, match=problems(f"x.json: {reason}")):
        check(doc)


def test_unknown_prerequisite_names_suggest_a_close_one() -> None:
    doc = base()
    doc["nodes"][1]["requires"] = [["A"], ["AA", "Qz"]]
    with pytest.raises(InputError, match=problems(
            "x.json: nodes[1].requires[1][0]: names unknown node 'AA' (did you mean 'A'?)",
            "x.json: nodes[1].requires[1][1]: names unknown node 'Qz'")):
        check(doc)


def test_an_unknown_goal_suggests_a_close_one() -> None:
    doc = base()
    doc["goal"] = "GG"
    with pytest.raises(InputError, match=problems("x.json: goal: names unknown node 'GG' (did you mean 'G'?)")):
        check(doc)


def test_a_node_cannot_require_itself_or_name_a_parent_twice() -> None:
    doc = base()
    doc["nodes"][1]["requires"] = [["G"], ["A", "A"]]
    with pytest.raises(InputError, match=problems(
            "x.json: nodes[1].requires[0][0]: node 'G' requires itself",
            "x.json: nodes[1].requires[1][1]: 'A' appears twice in one alternative")):
        check(doc)


@pytest.mark.parametrize("nodes, cycle", [
    ([("A", [1, 0], [["G"]]), ("G", [3, 1], [["A"]])], "A -> G -> A"),
    ([("A", [1, 0], []), ("B", [2, 0], [["C"]]), ("C", [3, 0], [["A"], ["B"]]), ("G", [3, 1], [["C"]])],
     "B -> C -> B"),
    ([("A", [1, 0], [["D"]]), ("B", [2, 0], [["A"]]), ("C", [3, 0], [["B"]]), ("D", [0, 1], [["C"]]),
      ("G", [3, 1], [["A"]])], "A -> D -> C -> B -> A"),
])
def test_prerequisites_must_not_form_a_cycle(nodes: list, cycle: str) -> None:
    doc = instance_doc(["....", "...."], [2, 1], nodes, "G")
    with pytest.raises(InputError, match=problems(f"x.json: nodes: prerequisites form a cycle: {cycle}")):
        check(doc)


def test_a_long_chain_of_prerequisites_validates_and_its_cycle_is_found() -> None:
    # 1000 nodes (the most an instance may have, beyond Python's recursion limit) in a chain, named so that the
    # depth-first search starts from the goal at the far end
    n = 1000
    name = [f"N{n - 1 - i:04d}" for i in range(n)]
    nodes = [(name[i], [i % 100, 1 + i // 100], [[name[i - 1]]] if i else []) for i in range(n)]
    doc = instance_doc(["." * 100] * 16, [0, 0], nodes, name[-1])
    assert len(check(doc).nodes) == n
    doc["nodes"][0]["requires"] = [[name[-1]]]
    cycle = " -> ".join(sorted(name)) + " -> N0000"
    with pytest.raises(InputError, match=problems(f"x.json: nodes: prerequisites form a cycle: {cycle}")):
        check(doc)


def test_the_goal_is_the_one_sink() -> None:
    doc = instance_doc(["....", "...."], [0, 0], [("A", [1, 0], []), ("B", [2, 0], []), ("G", [3, 1], [["A"]])],
                       "G")
    with pytest.raises(InputError, match=problems(
            "x.json: nodes[1]: 'B' is a sink but not the goal; the goal must be the one sink")):
        check(doc)


def test_the_goal_must_not_be_required() -> None:
    doc = base()
    doc["goal"] = "A"
    with pytest.raises(InputError, match=problems(
            "x.json: nodes[1]: 'G' is a sink but not the goal; the goal must be the one sink",
            "x.json: goal: 'A' is required by ['G']; the goal must be a sink")):
        check(doc)


def test_every_node_is_an_ancestor_of_the_goal() -> None:
    # A -> B is a branch of its own that never leads to the goal
    doc = instance_doc(["....", "...."], [0, 0],
                       [("A", [1, 0], []), ("B", [2, 0], [["A"]]), ("C", [3, 0], []), ("G", [3, 1], [["C"]])], "G")
    with pytest.raises(InputError, match=problems(
            "x.json: nodes[1]: 'B' is a sink but not the goal; the goal must be the one sink",
            "x.json: nodes[0]: 'A' is not an ancestor of the goal 'G'")):
        check(doc)


@pytest.mark.parametrize("rows, where", [
    (["...#", "..#."], "free cell [3, 1] cannot be reached from the start"),
    (["..#.", "..#."], "free cell [3, 0] and 1 more cannot be reached from the start"),
])
def test_every_free_cell_is_reachable_from_the_start(rows: list[str], where: str) -> None:
    doc = instance_doc(rows, [0, 0], [("A", [1, 0], []), ("G", [1, 1], [["A"]])], "G")
    with pytest.raises(InputError, match=problems(f"x.json: map: {where}")):
        check(doc)


def test_map_rows_have_one_length() -> None:
    doc = base()
    doc["map"] = ["....", "...", "....."]
    with pytest.raises(InputError, match=problems(
            "x.json: map[1]: expected 4 cells like map[0], found 3",
            "x.json: map[2]: expected 4 cells like map[0], found 5")):
        check(doc)


@pytest.mark.parametrize("start, reason", [
    ([1, 1], "[1, 1] is on an obstacle"), ([4, 0], "[4, 0] is outside the map"), ([0, 2], "[0, 2] is outside the map"),
])
def test_the_start_is_a_free_cell(start: list[int], reason: str) -> None:
    doc = base()
    doc["map"] = ["....", ".#.."]
    doc["start"] = start
    with pytest.raises(InputError, match=problems(f"x.json: start: {reason}; the start must be a free cell")):
        check(doc)


def test_every_problem_is_reported_at_once() -> None:
    doc = instance_doc(["....", "...."], [1, 0],
                       [("A", [1, 0], []), ("A", [5, 5], []), ("G", [3, 1], [["B"]])], "G")
    with pytest.raises(InputError, match=problems(
            "x.json: nodes[0].pos: [1, 0] is the start cell, which carries no node",
            "x.json: nodes[1].id: duplicate id 'A' (also nodes[0])",
            "x.json: nodes[1].pos: [5, 5] is outside the map; nodes sit on free cells",
            "x.json: nodes[2].requires[0][0]: names unknown node 'B'")):
        check(doc)


# -- the schema -------------------------------------------------------------------------------------

def edited(**changes: Any) -> dict[str, Any]:
    doc = base()
    for key, value in changes.items():
        if value is KeyError:
            del doc[key]
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize("doc, line", [
    (edited(budget=KeyError), "budget: missing required field"),
    (edited(map=KeyError, start=KeyError), "map: missing required field\nx.json: start: missing required field"),
    (edited(budget="5"), 'budget: expected integer, found a string "5"'),
    (edited(budget=0), "budget: expected a number >= 1, found 0"),
    (edited(budget=2.5), "budget: expected integer, found a number 2.5"),
    (edited(budgte=3), "budgte: unknown field (did you mean 'budget'?)"),
    (edited(map=["..x."]), "map[0]: expected a map row of '.' (free) and '#' (obstacle), 1 to 100 long, "
                           'found "..x."'),
    (edited(map=[]), "map: expected at least 1 item(s), found 0"),
    (edited(start=[0]), "start: expected a position [x, y] of two integers >= 0, found [0]"),
    (edited(start=[-1, 0]), "start[0]: expected a number >= 0, found -1"),
    (edited(id="a b"), "id: expected an id of letters, digits, '.', '_', '-' in '/'-separated parts "
                       "(e.g. 'park2026-main/low-small/seed-0'), a part at most 250 characters, 1000 in all, found \"a b\""),
    (edited(nodes=[]), "nodes: expected at least 1 item(s), found 0"),
    (edited(names="semantc"),
     "names: expected one of symbolic, semantic, found \"semantc\" (did you mean 'semantic'?)"),
    (edited(meta=[]), "meta: expected object, found a list []"),
    (edited(env="grid-dag"), "env: expected one of grid_dag or rooms, found 'grid-dag' (did you mean 'grid_dag'?)"),
    (edited(env=KeyError), "env: missing required field (expected grid_dag or rooms)"),
    (edited(eebench="instance/2"),
     "eebench: instance/2 is newer than this eebench reads (instance/1); upgrade eebench"),
    (edited(eebench="instance/0"), "eebench: there is no version 0 of instance"),
    (edited(eebench="instanse/1"), "eebench: unknown document kind 'instanse' (did you mean 'instance'?); "
                                   "known: checkpoints, generator, index, instance, manifest, registry, suite or "
                                   "trajectory"),
    (edited(eebench="trajectory/1"), "eebench: expected an instance document, found trajectory/1"),
    (edited(eebench="instance"), "eebench: expected 'kind/N' (e.g. 'instance/1'), found 'instance'"),
    (edited(eebench=KeyError), "eebench: missing required field (expected e.g. 'instance/1')"),
])
def test_schema_and_version_problems(doc: dict[str, Any], line: str) -> None:
    with pytest.raises(InputError, match=problems(f"x.json: {line}")):
        check(doc)


@pytest.mark.parametrize("node, line", [
    ({"id": "G", "pos": [3, 1], "requires": [["A"]], "requirs": []},
     "nodes[1].requirs: unknown field (did you mean 'requires'?)"),
    ({"id": "G", "pos": [3, 1]}, "nodes[1].requires: missing required field"),
    ({"id": "G", "pos": [3, 1], "requires": [[]]}, "nodes[1].requires[0]: expected at least 1 item(s), found 0"),
    ({"id": "G", "pos": [3, 1], "requires": "A"}, 'nodes[1].requires: expected array, found a string "A"'),
    ({"id": "G", "pos": [3, 1], "requires": [["A", 3]]},
     "nodes[1].requires[0][1]: expected string, found an integer 3"),
    ({"id": "", "pos": [3, 1], "requires": []}, "nodes[1].id: expected a non-empty string"),
])
def test_schema_problems_inside_nodes(node: dict[str, Any], line: str) -> None:
    doc = base()
    doc["nodes"][1] = node
    with pytest.raises(InputError, match=problems(f"x.json: {line}")):
        check(doc)


def test_schema_problems_come_in_document_order() -> None:
    doc = instance_doc(["..."] * 12, [0, 0], [("G", [1, 1], [])], "G")
    for y in (2, 10, 11):
        doc["map"][y] = "..x"
    doc["bugdet"] = 1
    row = "expected a map row of '.' (free) and '#' (obstacle), 1 to 100 long, found \"..x\""
    with pytest.raises(InputError, match=problems(
            "x.json: bugdet: unknown field (did you mean 'budget'?)",
            f"x.json: map[2]: {row}", f"x.json: map[10]: {row}", f"x.json: map[11]: {row}")):
        check(doc)


def test_schema_problems_come_before_semantic_checks() -> None:
    doc = base()
    doc["budget"] = 0
    doc["nodes"][1]["pos"] = [0, 0]  # also on the start, which is not reported until the schema is satisfied
    with pytest.raises(InputError, match=problems("x.json: budget: expected a number >= 1, found 0")):
        check(doc)


# -- files --------------------------------------------------------------------------------------------

def test_load_instance_from_json_and_yaml_with_the_same_digest(tmp_path: Path) -> None:
    doc = base()
    json_file = write_json(tmp_path / "a.json", doc)
    yaml_file = tmp_path / "a.yaml"
    yaml_file.write_text(yaml.safe_dump(doc), "utf-8")
    from_json, from_yaml = load_instance(json_file), load_instance(yaml_file)
    assert from_json.instance == from_yaml.instance == make_instance(
        ["....", "...."], [0, 0], [("A", [1, 0], []), ("G", [3, 1], [["A"]])], "G")
    assert from_json.sha256 == from_yaml.sha256 == sha256_hex(doc)
    assert from_json.file == str(json_file)


def test_write_instances_writes_canonical_bytes_and_an_index(tmp_path: Path) -> None:
    a = make_instance(["...."], [0, 0], [("G", [3, 0], [])], "G", instance_id="s/one/seed-0")
    b = make_instance(["...."], [3, 0], [("G", [0, 0], [])], "G", instance_id="s/two")
    entries = write_instances([a, b], tmp_path / "out", {"kind": "test"})
    assert entries == [
        {"id": "s/one/seed-0", "path": "s/one/seed-0.json", "sha256": sha256_hex(a.to_document())},
        {"id": "s/two", "path": "s/two.json", "sha256": sha256_hex(b.to_document())},
    ]
    assert (tmp_path / "out/s/one/seed-0.json").read_bytes() == canonical_json(a.to_document())
    index = json.loads((tmp_path / "out/index.json").read_text("utf-8"))
    assert index == {"eebench": "index/1", "source": {"kind": "test"}, "instances": entries}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left behind


def test_write_instances_refuses_a_repeated_id_and_leaves_nothing(tmp_path: Path) -> None:
    a = make_instance(["...."], [0, 0], [("G", [3, 0], [])], "G", instance_id="s/a")
    with pytest.raises(InputError, match=problems("two instances share the id 's/a'")):
        write_instances([a, a], tmp_path / "out", {})
    assert list(tmp_path.iterdir()) == []


def test_write_instances_refuses_a_folder_that_is_not_its_own(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("precious", "utf-8")
    a = make_instance(["...."], [0, 0], [("G", [3, 0], [])], "G", instance_id="s/a")
    with pytest.raises(InputError, match=problems(
            f"{out}: exists and is not an eebench output folder (no index.json); choose an empty or new folder")):
        write_instances([a], out, {})
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]


def test_write_instances_replaces_an_earlier_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    a = make_instance(["...."], [0, 0], [("G", [3, 0], [])], "G", instance_id="s/a")
    b = make_instance(["...."], [0, 0], [("G", [3, 0], [])], "G", instance_id="s/b")
    write_instances([a], out, {})
    write_instances([b], out, {})
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.json")) == ["index.json", "s/b.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_library_finds_instances_by_id(tmp_path: Path) -> None:
    a = make_instance(["...."], [0, 0], [("G", [3, 0], [])], "G", instance_id="s/a")
    write_instances([a], tmp_path / "gen", {})
    write_json(tmp_path / "loose/elsewhere.json", instance_doc(["..."], [0, 0], [("G", [2, 0], [])], "G",
                                                               instance_id="hand/made"))
    write_json(tmp_path / "loose/notes.json", {"not": "an instance"})
    write_json(tmp_path / "loose/odd.json", {"eebench": 5})  # not a kind tag at all: skipped, not a crash
    write_json(tmp_path / "loose/odder.json", {"eebench": None, "id": "x"})
    library = InstanceLibrary(tmp_path)
    assert library.ids() == ["hand/made", "s/a"]
    assert library.get("s/a").instance == a
    assert library.get("hand/made").file == str(tmp_path / "loose/elsewhere.json")
    with pytest.raises(InputError, match=problems(f"no instance 's/b' under {tmp_path} (did you mean 's/a'?)")):
        library.get("s/b")
    assert library.unreadable == []


def test_the_library_keeps_the_files_it_could_not_read(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", instance_doc(["..."], [0, 0], [("G", [2, 0], [])], "G", instance_id="a"))
    (tmp_path / "b.json").write_text('{"eebench": ', "utf-8")
    library = InstanceLibrary(tmp_path)
    assert library.ids() == ["a"]
    assert [str(p) for p in library.unreadable] == [
        f"{tmp_path / 'b.json'}:1: malformed JSON: Expecting value (column 13)"]


def test_a_library_of_one_file_reports_what_is_wrong_with_it(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a.json", {"eebench": "suite/1", "name": "s", "members": []})
    with pytest.raises(InputError, match=problems(f"{path}: eebench: expected an instance document, found suite/1")):
        InstanceLibrary(path).ids()
    good = write_json(tmp_path / "g.json", base())
    assert InstanceLibrary(good).ids() == ["test/tiny"]


# -- the record of documents that passed their schema (documents.schema_problems_unless_passed) --------------------

@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A record of its own for the test (not the package's)."""
    from eebench import documents

    path = tmp_path / "__pycache__" / "passed.test.txt"
    monkeypatch.setattr(documents, "_passed_record_path", lambda: path)
    documents._passed_record.cache_clear()
    yield path
    documents._passed_record.cache_clear()


def _counting_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from eebench import documents

    checked: list[str] = []
    real = documents.schema_problems

    def counted(document: Any, schema: str, file: str, **kwargs: Any) -> Any:
        checked.append(file)
        return real(document, schema, file, **kwargs)
    monkeypatch.setattr(documents, "schema_problems", counted)
    return checked


def test_a_document_that_passed_its_schema_is_not_checked_again(record: Path, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    from eebench import documents

    checked = _counting_checks(monkeypatch)
    doc = base()
    check_instance_document(doc, "a.json")
    assert record.read_text() == f"instance.grid_dag {sha256_hex(doc)}\n" and checked == ["a.json"]
    check_instance_document(json.loads(json.dumps(doc)), "b.json")   # the same content: the record answers
    documents._passed_record.cache_clear()                            # ... read again from the file, too
    check_instance_document(doc, "c.json")
    assert checked == ["a.json"]
    other = {**doc, "budget": doc["budget"] + 1}                       # other content is checked, and recorded
    check_instance_document(other, "d.json")
    assert checked == ["a.json", "d.json"] and len(record.read_text().splitlines()) == 2
    bad = {**doc, "budget": "many"}                                    # a failing one is checked every time
    for _ in range(2):
        with pytest.raises(InputError, match="budget"):
            check_instance_document(bad, "e.json")
    assert checked == ["a.json", "d.json", "e.json", "e.json"] and len(record.read_text().splitlines()) == 2


def test_a_damaged_or_full_record_only_costs_the_check(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eebench import documents

    checked = _counting_checks(monkeypatch)
    record.parent.mkdir()
    record.write_bytes(b"\xff\x00garbage\ninstance.grid_dag 12")   # no line of it is a passed document
    check_instance_document(base(), "a.json")
    assert checked == ["a.json"] and record.read_bytes().endswith(f"instance.grid_dag {sha256_hex(base())}\n".encode())
    monkeypatch.setattr(documents, "PASSED_RECORD_BYTES", 10)          # past its size: it starts afresh
    documents._passed_record.cache_clear()
    other = {**base(), "budget": 7}
    check_instance_document(other, "b.json")
    assert record.read_text() == f"instance.grid_dag {sha256_hex(other)}\n"


def test_a_record_that_cannot_be_written_only_costs_the_check(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record.parent.write_text("a file where the record's folder would be")
    checked = _counting_checks(monkeypatch)
    for name in ("a.json", "b.json"):
        check_instance_document(base(), name)
    assert checked == ["a.json"]   # (remembered by this process all the same)


def test_a_document_json_cannot_hold_is_checked_as_ever(record: Path) -> None:
    # (its digest cannot be taken: canonical JSON refuses a NaN; the schema check names the field, as before)
    with pytest.raises(InputError, match="budget"):
        check_instance_document({**base(), "budget": float("nan")}, "a.json")
    assert not record.exists()


def test_one_id_in_two_files_is_refused_unless_they_are_the_same_instance(tmp_path: Path) -> None:
    """Two files of a bench defining one id: the first found was graded, silently (its budget, say)."""
    doc = instance_doc(["..", ".."], [0, 0], [("G", [1, 1], [])], "G", budget=24, instance_id="t/a")
    write_json(tmp_path / "a" / "x.json", doc)
    write_json(tmp_path / "b" / "y.json", doc)   # a copy: the same instance
    assert InstanceLibrary(tmp_path).get("t/a").instance.budget == 24
    write_json(tmp_path / "b" / "y.json", {**doc, "budget": 30})
    with pytest.raises(InputError, match=rf"^instance 't/a' under {re.escape(str(tmp_path))} is defined differently "
                                         rf"by {re.escape(str(tmp_path / 'a' / 'x.json'))} and "
                                         rf"{re.escape(str(tmp_path / 'b' / 'y.json'))}; keep one"):
        InstanceLibrary(tmp_path).get("t/a")
    write_json(tmp_path / "t" / "a.json", doc)   # the file at the id's own path is the one meant
    assert InstanceLibrary(tmp_path).get("t/a").instance.budget == 24
