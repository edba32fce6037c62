"""checkpoints/1 files: the shipped ones load, every bad file is one clear line per problem with file and field
path (exit 2), and `eebench validate` and `eebench schema checkpoints` know the kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.checkpoints import Field, Rule, library, load_checkpoints, shipped_sets
from eebench.errors import InputError
from tests.conftest import write_jsonl

GOOD = """eebench: checkpoints/1
name: textworld-rooms
sets:
  - instances: ["tw-coin/*"]
    state: {field: observation, regex: '-= (.+?) =-'}
    checkpoints:
      - {id: kitchen, field: observation, regex: '-= Kitchen =-'}
      - {id: took-coin, field: action, regex: '^take coin$'}
      - {id: kitchen-and-coin, all: [kitchen, took-coin]}
      - {id: in-cellar, state: Cellar}
  - instances: ["park2026-main/*", "grams2025-*"]
    rules: [node_discovered, node_achieved, cell_observed, room_visited, ball_collected]
"""


def write(tmp_path: Path, text: str, name: str = "cp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_issue_example_compiles_once(tmp_path: Path) -> None:
    first, second = load_checkpoints(write(tmp_path, GOOD))
    assert first.state is not None and first.state.field is Field.OBSERVATION
    assert first.state.read({"observation": "-= Attic =-"}) == "Attic"
    assert [c.id for c in first.checkpoints] == ["kitchen", "took-coin", "kitchen-and-coin", "in-cellar"]
    assert first.checkpoints[0].regex.search("x -= Kitchen =- y")  # precompiled
    assert second.rules == tuple(Rule) and second.where.endswith("cp.yaml: sets[1]")


def test_an_all_comes_after_its_members(tmp_path: Path) -> None:
    (only,) = load_checkpoints(write(tmp_path, GOOD.split("  - instances: [\"park")[0].replace(
        "      - {id: kitchen, field", "      - {id: early, all: [kitchen-and-coin]}\n      - {id: kitchen, field")))
    ids = [c.id for c in only.checkpoints]
    assert ids.index("kitchen-and-coin") < ids.index("early")


def test_the_shipped_files_load() -> None:
    names = {s.name for s in shipped_sets()}
    assert {"park2026", "grams2025"} <= names


@pytest.mark.parametrize("edit, message", [
    (("rules: [node_discovered,", "rules: [node_discoverd,"),
     "sets[1].rules[0]: unknown rule 'node_discoverd' (did you mean 'node_discovered'?); expected ball_collected, "
     "cell_observed, node_achieved, node_discovered or room_visited"),
    (("regex: '^take coin$'", "regex: '^take (coin$'"),
     "sets[0].checkpoints[1].regex: invalid regular expression '^take (coin$': missing ), unterminated subpattern "
     "at position 6"),
    (("regex: '-= (.+?) =-'}", "regex: '-= (.+? =-'}"),
     "sets[0].state.regex: invalid regular expression '-= (.+? =-': missing ), unterminated subpattern at "
     "position 3"),
    (("all: [kitchen, took-coin]", "all: [kitchen, took-con]"),
     "sets[0].checkpoints[2].all[1]: unknown checkpoint 'took-con' of this set (did you mean 'took-coin'?)"),
    (("{id: in-cellar,", "{id: kitchen,"), "sets[0].checkpoints[3].id: duplicate id 'kitchen' (also checkpoints[0])"),
    (("all: [kitchen, took-coin]", "all: [kitchen, kitchen-and-coin]"),
     "sets[0].checkpoints[2].all: `all` forms a cycle: kitchen-and-coin -> kitchen-and-coin"),
    (("field: action", "field: actions"),
     "sets[0].checkpoints[1].field: expected one of observation, action, raw, reasoning, state, found \"actions\" "
     "(did you mean 'action'?)"),
    (("  - instances: [\"park2026-main/*\", \"grams2025-*\"]\n    rules", "  - rules"),
     "sets[1].instances: missing required field"),
    (("{id: in-cellar, state: Cellar}", "{id: in-cellar, state: Cellar, regex: x}"),
     "sets[0].checkpoints[3]: expected one of {field, regex}, {state} or {all}, found "
     "{\"id\": \"in-cellar\", \"state\": \"Cellar\"..."),
    (("field: action", "feild: action"), "sets[0].checkpoints[1].feild: unknown field (did you mean 'field'?)"),
    (("rules: [node_discovered,", "rules: [room_visited, node_discovered,"),
     "sets[1].rules[4]: 'room_visited' is listed twice (also rules[0])"),
    (("room_visited, ball_collected]\n", "room_visited, ball_collected]\n    checkpoints:\n"
                                         "      - {id: 'room:C', field: action, regex: x}\n"),
     "sets[1].checkpoints[0].id: 'room:C' is an id the set's rule room_visited derives; give this checkpoint "
     "another id"),
    (("regex: '^take coin$'", "regex: '" + "(" * 120 + "'"),   # quoted to 100 characters
     "sets[0].checkpoints[1].regex: invalid regular expression '" + "(" * 96 + "...: missing ), unterminated "
     "subpattern at position 119"),
    (("eebench: checkpoints/1", "eebench: checkpoints/2"),
     "eebench: checkpoints/2 is newer than this eebench reads (checkpoints/1); upgrade eebench"),
])
def test_a_bad_file_is_one_line_exit_2(cli: Any, tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    assert GOOD.count(edit[0]) == 1
    path = write(tmp_path, GOOD.replace(*edit))
    with pytest.raises(InputError) as raised:
        load_checkpoints(path)
    assert [str(p) for p in raised.value.problems] == [f"{path}: {message}"]
    result = cli("validate", path, code=2)
    assert result.stderr == f"error: {path}: {message}\n"
    runs = write_jsonl(tmp_path / "runs.jsonl", [{"eebench": "trajectory/1", "id": "a", "instance": "tw-coin/1",
                                                 "env": "logged", "steps": [{"action": "look"}]}])
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--checkpoints", path, "--db", db, code=2)
    assert result.stderr == f"error: {path}: {message}\n" and result.stdout == ""
    assert not db.exists()   # nothing written


def test_every_problem_of_every_file_is_listed(tmp_path: Path) -> None:
    one = write(tmp_path, GOOD.replace("node_discovered,", "nodes,").replace("took-coin]", "took]"), "a.yaml")
    two = write(tmp_path, GOOD.replace("regex: '^take coin$'", "regex: '*'"), "b.yaml")
    with pytest.raises(InputError) as raised:
        library([one, two])
    assert [p.field for p in raised.value.problems] == [  # type: ignore[union-attr]
        "sets[0].checkpoints[2].all[1]", "sets[1].rules[0]", "sets[0].checkpoints[1].regex"]


def test_validate_and_schema_know_the_kind(cli: Any, tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    assert cli("validate", path).stdout == f"ok {path}: checkpoints/1 textworld-rooms: 2 sets, 4 checkpoints\n"
    schema = json.loads(cli("schema", "checkpoints").stdout)
    assert schema["title"] == "eebench checkpoints/1"
    assert set(schema["$defs"]["field"]["enum"]) == {f.value for f in Field}


def test_an_all_may_name_the_ids_of_the_sets_rules(tmp_path: Path) -> None:
    text = ("eebench: checkpoints/1\nname: r\nsets:\n  - instances: ['*']\n    rules: [room_visited, cell_observed]\n"
            "    checkpoints:\n      - {id: both, all: ['room:A', 'cell:1,2']}\n")
    (only,) = load_checkpoints(write(tmp_path, text))
    assert only.checkpoints[0].all == ("room:A", "cell:1,2")
    with pytest.raises(InputError, match=r"checkpoints\[0\]\.all\[0\]: unknown checkpoint 'ball:x' of this set$"):
        load_checkpoints(write(tmp_path, text.replace("'room:A'", "'ball:x'")))


def test_every_shipped_file_passes_the_full_door_and_reads_the_same_fast() -> None:
    # grades read the shipped files with libyaml and no schema pass; this is the check they skip
    from importlib import resources

    root = Path(str(resources.files("eebench").joinpath("specs", "checkpoints")))
    files = sorted(root.rglob("*.yaml"))
    assert len(files) >= 5
    fast = shipped_sets()
    for path in files:
        assert load_checkpoints(path) == tuple(s for s in fast if s.file == str(path)), path
    assert len(fast) == sum(len(load_checkpoints(path)) for path in files)


def test_the_shipped_sets_an_instance_takes_are_compiled_when_first_matched() -> None:
    from eebench import checkpoints

    checkpoints._shipped_set.cache_clear()
    park = checkpoints.library().sets_for("park2026-main/low-small/seed-0")
    assert [s.name for s in park] == ["park2026"]
    assert checkpoints._shipped_set.cache_info().currsize == 1   # the text games' sets are not compiled
    assert checkpoints.library(shipped=False).sets_for("park2026-main/low-small/seed-0") == ()
    assert tuple(s for s in shipped_sets() if s.name == "park2026") == park


def test_a_valid_regex_python_warns_about_is_compiled_quietly(cli: Any, tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("regex: '^take coin$'", "regex: '[[a]'"))
    result = cli("validate", path)
    assert result.stderr == ""   # not Python's FutureWarning ("possible nested set") on a pattern that compiles


_PATTERN_CHARS = "ab/-*?[]!^\\."


@settings(max_examples=400, deadline=None)
@given(patterns=st.lists(st.text(_PATTERN_CHARS, max_size=8), max_size=4), instance_id=st.text("ab/-*?[]!.", max_size=8))
def test_a_pattern_is_passed_over_only_when_fnmatch_would_not_match(patterns: list[str], instance_id: str) -> None:
    # the literal-start check before fnmatch (checkpoints._matches) never changes what matches
    from fnmatch import fnmatchcase

    from eebench.checkpoints import _matches

    assert _matches(tuple(patterns), instance_id) == any(fnmatchcase(instance_id, p) for p in patterns)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_the_shipped_sets_of_an_id_are_those_fnmatch_finds(data: Any) -> None:
    """`_shipped_for` looks sets up by their patterns' literal starts: the same sets, in file order, as asking every
    shipped set's patterns with fnmatch."""
    from fnmatch import fnmatchcase

    from eebench.checkpoints import _shipped_for, _shipped_raw, _shipped_set

    patterns = [p for _, doc, i in _shipped_raw() for p in doc["sets"][i]["instances"]]
    base = data.draw(st.sampled_from(patterns))
    instance_id = data.draw(st.sampled_from([base, base.replace("*", ""), base.replace("*", "x/y"),
                                             base[:-1], base + "z", "z" + base]))
    expected = tuple(_shipped_set(n) for n, (_, doc, i) in enumerate(_shipped_raw())
                     if any(fnmatchcase(instance_id, p) for p in doc["sets"][i]["instances"]))
    assert _shipped_for(instance_id) == expected
