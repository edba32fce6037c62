"""Reading and writing eebench documents: syntax errors located by line, kinds and versions, canonical JSON, schema
messages, and atomic output."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.documents import (
    KNOWN_KINDS,
    atomic_directory,
    atomic_file,
    canonical_json,
    document_kind,
    field_path,
    json_type,
    load_checked,
    load_document,
    load_schema,
    schema_problems,
    sha256_hex,
)
from eebench.errors import InputError, Problem, did_you_mean, one_of


def exactly(*lines: str) -> str:
    return "^" + re.escape("\n".join(lines)) + "$"


# -- reading ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, message", [
    ("a.yaml", "a: 1\nb: [1, 2\nc: 3\n", "{f}:3: malformed YAML: expected ',' or ']', but got ':'"),
    ("a.yaml", "a: 1\n\tb: 2\n", "{f}:2: malformed YAML: found character '\\t' that cannot start any token"),
    ("a.json", '{"a": 1,\n "b": }\n', "{f}:2: malformed JSON: Expecting value (column 7)"),
    ("a.json", "", "{f}: is empty; expected a JSON document"),
    ("a.json", " \n", "{f}: is empty; expected a JSON document"),
    ("a.json", "[1, 2]", "{f}: expected a mapping at the top level, found a list"),
    ("a.json", '{"a": 1, "b": {"c": 2, "c": 3}}', "{f}: malformed JSON: duplicate key 'c' in an object"),
    ("a.yaml", "just words\n", "{f}: expected a mapping at the top level, found a string"),
    ("a.yaml", "", "{f}: is empty; expected a YAML document"),
    ("a.yaml", "# only a comment\n", "{f}: expected a mapping at the top level, found null"),
    ("a.yaml", "id: a\nname: x\nid: b\n", "{f}:3: malformed YAML: duplicate key 'id' (also at line 1)"),
    ("a.yaml", "sets:\n  - {id: a, id: b}\n", "{f}:2: malformed YAML: duplicate key 'id' (also at line 2)"),
    # keys written apart that are one key once read: as Python values, or as the text JSON makes of them
    ("a.yaml", "p: {0: 0.5, 1: 0.3, 01: 0.2}\n", "{f}:1: malformed YAML: duplicate key '01' (also at line 1)"),
    ("a.yaml", "m: {1: a, 1.0: b}\n", "{f}:1: malformed YAML: duplicate key '1.0' (also at line 1)"),
    ("a.yaml", "m: {1: a, '1': b}\n", "{f}:1: malformed YAML: duplicate key '1' (also at line 1)"),
    ("a.yaml", "m:\n  true: a\n  yes: b\n", "{f}:3: malformed YAML: duplicate key 'yes' (also at line 2)"),
    ("a.yaml", "a: 1\n---\nb: 2\n",
     "{f}:2: malformed YAML: expected a single document in the stream, but found another document"),
])
def test_syntax_errors_name_the_file_and_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    with pytest.raises(InputError, match=exactly(message.format(f=path))):
        load_document(path)


def test_bytes_that_are_not_utf8_are_located(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(InputError, match=exactly(f"{path}:2: not UTF-8 text (byte 0xe9)")):
        load_document(path)


def test_missing_files_and_folders(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=exactly(f"{tmp_path / 'x.json'}: no such file")):
        load_document(tmp_path / "x.json")
    with pytest.raises(InputError, match=exactly(f"{tmp_path}: is a folder, expected a file")):
        load_document(tmp_path)


def test_yaml_is_read_as_json_types(tmp_path: Path) -> None:
    path = tmp_path / "a.yml"
    path.write_text("probs: {1: 0.5, 2: 0.5}\nwhen: 2026-04-16\nflag: yes\nnone: ~\n", "utf-8")
    assert load_document(path) == {"probs": {"1": 0.5, "2": 0.5}, "when": "2026-04-16", "flag": True, "none": None}


def test_yaml_floats_with_an_exponent_are_numbers(tmp_path: Path) -> None:
    """YAML 1.2's floats (PyYAML reads YAML 1.1, where `1e-3` and `1.5e3` are strings: `p_drop: 1e-3` was refused
    as "expected number, found a string"); quoted or not a number, a string still."""
    path = tmp_path / "a.yaml"
    path.write_text("a: 1e-3\nb: -2E+2\nc: 1.5e3\nd: .5e1\ne: 1.e2\nf: '1e3'\ng: 1e3x\nh: e3\ni: 10\n", "utf-8")
    assert load_document(path) == {"a": 0.001, "b": -200.0, "c": 1500.0, "d": 5.0, "e": 100.0, "f": "1e3",
                                   "g": "1e3x", "h": "e3", "i": 10}


def test_yaml_an_exponent_after_a_dot_without_a_digit_is_a_string(tmp_path: Path) -> None:
    """`._e3` is no number (PyYAML drops the `_` and float('.e3') failed: a ValueError traceback)."""
    path = tmp_path / "a.yaml"
    path.write_text("a: ._e3\nb: -._1e3\nc: -.1_5e3\n", "utf-8")
    assert load_document(path) == {"a": "._e3", "b": "-._1e3", "c": -150.0}


def test_the_suffix_decides_the_syntax(tmp_path: Path) -> None:
    (tmp_path / "a.JSON").write_text('{"a": 1}', "utf-8")
    (tmp_path / "b.YAML").write_text("a: 1", "utf-8")
    assert load_document(tmp_path / "a.JSON") == load_document(tmp_path / "b.YAML") == {"a": 1}


# -- kinds and versions ------------------------------------------------------------------------------

def test_known_kinds() -> None:
    assert KNOWN_KINDS == {"instance": 1, "trajectory": 1, "generator": 1, "suite": 1, "index": 1, "manifest": 1,
                           "registry": 1, "checkpoints": 1}


@pytest.mark.parametrize("tag, kind", [("instance/1", ("instance", 1)), ("suite/01", ("suite", 1)),
                                       ("index/1", ("index", 1))])
def test_document_kind(tag: str, kind: tuple[str, int]) -> None:
    assert document_kind({"eebench": tag}, "f") == kind


@pytest.mark.parametrize("tag, message", [
    ("trajectory/3", "f:7: eebench: trajectory/3 is newer than this eebench reads (trajectory/1); upgrade eebench"),
    ("traectory/1", "f:7: eebench: unknown document kind 'traectory' (did you mean 'trajectory'?); "
                    "known: checkpoints, generator, index, instance, manifest, registry, suite or trajectory"),
    ("Instance/1", "f:7: eebench: expected 'kind/N' (e.g. 'instance/1'), found 'Instance/1'"),
    (1, "f:7: eebench: expected 'kind/N' (e.g. 'instance/1'), found 1"),
    ("suite/0", "f:7: eebench: there is no version 0 of suite"),
    # (a trailing line end: not taken as suite/1)
    ("suite/1\n", r"f:7: eebench: expected 'kind/N' (e.g. 'instance/1'), found 'suite/1\\n'"),
])
def test_document_kind_refusals(tag: object, message: str) -> None:
    with pytest.raises(InputError, match=exactly(message)):
        document_kind({"eebench": tag}, "f", line=7)


# -- canonical JSON ----------------------------------------------------------------------------------

def test_canonical_json_and_its_digest() -> None:
    doc = {"z": [3, {"b": 1, "a": 2}], "a": "naïve", "n": None, "f": 0.1}
    assert canonical_json(doc) == '{"a":"naïve","f":0.1,"n":null,"z":[3,{"a":2,"b":1}]}'.encode()
    assert sha256_hex(doc) == sha256_hex({"n": None, "f": 0.1, "a": "naïve", "z": [3, {"a": 2, "b": 1}]})
    assert sha256_hex({"a": 1}) == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    with pytest.raises(ValueError):
        canonical_json({"x": float("inf")})


# -- schema messages ---------------------------------------------------------------------------------

def test_field_paths_and_json_types() -> None:
    assert field_path(["nodes", 2, "requires", 0, 1]) == "nodes[2].requires[0][1]"
    assert field_path([0, "a"]) == "[0].a"
    assert field_path([]) == ""
    assert [json_type(v) for v in (None, True, 1, 1.5, "s", [], {})] == [
        "null", "a boolean", "an integer", "a number", "a string", "a list", "a mapping"]


def test_schema_problems_are_sorted_by_field_and_located() -> None:
    doc = {"eebench": "trajectory/1", "id": "", "steps": [{"action": 1}, {}]}
    assert [str(p) for p in schema_problems(doc, "trajectory", "t.jsonl", line=3)] == [
        "t.jsonl:3: instance: missing required field",  # an error of the top-level object sorts first
        "t.jsonl:3: id: expected a non-empty string",
        "t.jsonl:3: steps[0].action: expected string or null, found an integer 1",
        "t.jsonl:3: steps[1].action: missing required field",
    ]


def test_integers_written_as_floats_are_refused() -> None:
    # canonical JSON writes 1.0 as `1.0`: accepting it would make a digest depend on how a coordinate was typed
    doc = {"eebench": "instance/1", "id": "t", "env": "grid_dag", "map": ["..."], "start": [0.0, 0],
           "nodes": [{"id": "G", "pos": [2, 0], "requires": []}], "goal": "G", "budget": 5.0}
    assert [str(p) for p in schema_problems(doc, "instance.grid_dag", "t.json")] == [
        "t.json: budget: expected integer, found a number 5.0",
        "t.json: start[0]: expected integer, found a number 0.0",
    ]
    assert schema_problems({**doc, "start": [0, 0], "budget": 5}, "instance.grid_dag", "t.json") == []
    assert schema_problems({**doc, "start": [0, 0], "budget": True}, "instance.grid_dag", "t.json") != []


def test_unknown_schema_names_suggest_a_close_one() -> None:
    with pytest.raises(InputError, match=exactly(
            "unknown schema 'sute' (did you mean 'suite'?); "
            "known: checkpoints, generator.grid_dag, generator.rooms, index, instance.grid_dag, instance.rooms, manifest, "
            "registry, suite or trajectory")):
        load_schema("sute")


def test_error_helpers() -> None:
    assert str(Problem("f.json", 3, "a.b", "bad")) == "f.json:3: a.b: bad"
    assert str(Problem(None, None, None, "bad")) == "<input>: bad"
    assert did_you_mean("presest", ["presets", "seeds"]) == " (did you mean 'presets'?)"
    assert did_you_mean("zzz", ["presets"]) == ""
    assert did_you_mean("LOW-SMALL", ["low-small", "high-small"]) == " (did you mean 'low-small'?)"   # (said nothing)
    assert did_you_mean("Seed", ["seed", "Seeds"]) == " (did you mean 'Seeds'?)"   # (the case typed counts first)
    assert one_of(["b", "a", "c", "a"]) == "a, b or c" and one_of(["x"]) == "x"
    error = InputError([Problem("f", None, None, "one"), "two"])
    assert str(error) == "f: one\ntwo" and len(error.problems) == 2


def test_json_lines_where_one_document_is_read_say_so(tmp_path: Path) -> None:
    # `show runs.jsonl` said only "Extra data"; a second value on the same line keeps JSON's own words
    lines = tmp_path / "runs.jsonl"
    lines.write_text('{"eebench": "trajectory/1"}\n{"eebench": "trajectory/1"}\n', "utf-8")
    with pytest.raises(InputError, match=re.escape(f"{lines}:2: malformed JSON: a second document starts here; "
                                                   "one was expected (JSON lines")):
        load_document(lines)
    same_line = tmp_path / "two.json"
    same_line.write_text('{"a": 1} {"b": 2}', "utf-8")
    with pytest.raises(InputError, match=exactly(f"{same_line}:1: malformed JSON: Extra data (column 10)")):
        load_document(same_line)


# -- atomic output -----------------------------------------------------------------------------------

def test_atomic_file_replaces_only_on_success(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with atomic_file(path) as handle:
        handle.write("first\n")
    assert path.read_text("utf-8") == "first\n"
    with pytest.raises(RuntimeError, match="^boom$"), atomic_file(path) as handle:
        handle.write("second\n")
        raise RuntimeError("boom")
    assert path.read_text("utf-8") == "first\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left


def test_atomic_file_removes_the_folders_it_made_when_it_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="^boom$"), atomic_file(tmp_path / "a/b/out.jsonl"):
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with atomic_file(tmp_path / "a/b/out.jsonl") as handle:
        handle.write("x")
    assert (tmp_path / "a/b/out.jsonl").read_text("utf-8") == "x"


@pytest.mark.parametrize("name", ["a" * 250 + ".html", "\u00e9" * 124 + ".png"])   # 255 and 252 bytes
def test_an_output_whose_name_fills_a_file_name_is_written(cli, tmp_path: Path, name: str) -> None:
    """The temporary sibling `.NAME.<16 hex>.tmp` is 22 bytes longer than NAME: an --out of 234 to 255 bytes, which
    the file system takes, failed with "File name too long" naming that hidden file."""
    with atomic_file(tmp_path / name) as handle:
        handle.write("x")
    with atomic_directory(tmp_path / name.replace(".", "-"), marker="index.json") as tmp:
        (tmp / "index.json").write_text("1", "utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, name.replace(".", "-")])
    out = tmp_path / "cli" / name
    cli("play", "park2026-main/low-small/seed-0", "--agent", "random", "--out", out)
    assert out.read_text("utf-8").startswith('{"eebench":"trajectory/1"') and len(list(out.parent.iterdir())) == 1


@pytest.fixture
def read_only_folder(tmp_path: Path):
    """A folder nothing can be written in: mode 555, or as root (who passes modes by) a read-only bind mount."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", folder, folder], capture_output=True).returncode == 0
    if not mounted or subprocess.run(["mount", "-o", "remount,bind,ro", folder], capture_output=True).returncode:
        if mounted:
            subprocess.run(["umount", folder], check=True)
        pytest.skip("as root, a read-only folder needs a read-only bind mount, and mount refused it")
    yield folder
    subprocess.run(["umount", folder], check=True)


def test_a_read_only_folder_is_named_as_the_output_not_its_temporary_file(read_only_folder: Path) -> None:
    # removing the temporary file that was never made raised EROFS (or EACCES), and that error, naming
    # `.out.jsonl.<hex>.tmp` without "cannot write", replaced the output's own one line
    path = read_only_folder / "out.jsonl"
    with pytest.raises(InputError, match="^" + re.escape(f"{path}: cannot write: ")), atomic_file(path) as handle:
        handle.write("x")
    assert list(read_only_folder.iterdir()) == []


def test_atomic_directory_swaps_in_a_complete_folder(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    with atomic_directory(dest, marker="index.json") as tmp:
        (tmp / "index.json").write_text("1", "utf-8")
        assert not dest.exists()  # nothing is visible until the block is done
    assert (dest / "index.json").read_text("utf-8") == "1"
    with pytest.raises(RuntimeError, match="^boom$"), atomic_directory(dest, marker="index.json") as tmp:
        (tmp / "index.json").write_text("2", "utf-8")
        raise RuntimeError("boom")
    assert (dest / "index.json").read_text("utf-8") == "1"
    with atomic_directory(dest, marker="index.json") as tmp:
        (tmp / "index.json").write_text("3", "utf-8")
    assert (dest / "index.json").read_text("utf-8") == "3"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize("call", ["mkdir", "open", "replace"])
def test_a_signal_just_after_the_temporary_output_is_made_leaves_nothing(tmp_path: Path, monkeypatch,
                                                                         call: str) -> None:
    # SIGTERM or Ctrl-C right after the folder or file is made, before its name is known to the cleanup (a
    # `generate` stopped so on a busy machine left `.out.xxxx.tmp` behind); or between moving the earlier output
    # aside and the new one in
    made = getattr(os, call)

    def then_stopped(*args: Any, **kwargs: Any) -> Any:
        made(*args, **kwargs)
        monkeypatch.setattr(os, call, made)   # (once)
        raise KeyboardInterrupt

    def over_an_earlier_output() -> None:   # stopped when the earlier output's `.old` folder is made, or moved
        with atomic_directory(tmp_path / "old", marker="index.json") as tmp:
            (tmp / "index.json").write_text("2", "utf-8")
            monkeypatch.setattr(os, call, then_stopped)

    with atomic_directory(tmp_path / "old", marker="index.json") as tmp:
        (tmp / "index.json").write_text("1", "utf-8")
    cases = {"mkdir": [lambda: atomic_directory(tmp_path / "new", marker="index.json").__enter__(),
                       over_an_earlier_output],
             "open": [lambda: atomic_file(tmp_path / "out.jsonl").__enter__()],
             "replace": [over_an_earlier_output]}[call]
    for case in cases:
        if case is not over_an_earlier_output:
            monkeypatch.setattr(os, call, then_stopped)
        with pytest.raises(KeyboardInterrupt):
            case()
        monkeypatch.setattr(os, call, made)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]
    assert (tmp_path / "old" / "index.json").read_text("utf-8") == "1"


def test_atomic_directory_refuses_what_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", "utf-8")
    with pytest.raises(InputError, match=exactly(f"{tmp_path / 'file'}: exists and is not a folder")):
        with atomic_directory(tmp_path / "file", marker="index.json"):
            pass
    (tmp_path / "empty").mkdir()
    with atomic_directory(tmp_path / "empty", marker="index.json") as tmp:  # an empty folder is fine
        (tmp / "index.json").write_text("1", "utf-8")
    assert (tmp_path / "empty/index.json").is_file()


def test_a_file_where_an_outputs_folder_must_be_is_named(cli, tmp_path: Path) -> None:
    """mkdir's "File exists" was the whole reason for `--out FILE/x.jsonl`, though the file is what stands in the
    way and nothing at x.jsonl exists."""
    (tmp_path / "runs.jsonl").write_text("x", "utf-8")
    out = tmp_path / "runs.jsonl" / "x.jsonl"
    r = cli("play", "park2026-main/low-small/seed-0", "--agent", "random", "--out", out, code=2)
    assert r.stderr == f"error: {out}: cannot write: Not a directory: {tmp_path / 'runs.jsonl'}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["runs.jsonl"]


def test_an_output_path_that_cannot_be_made_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", "utf-8")
    blocked = tmp_path / "file/sub/out.jsonl"  # a file stands where a folder should be made
    # the reason is the OS's words (e.g. "Not a directory" or "File exists"): one line, no traceback
    with pytest.raises(InputError, match="^" + re.escape(f"{blocked}: cannot write: ") + r"[A-Z][^\n]+$"):
        with atomic_file(blocked):
            pass
    with pytest.raises(InputError, match="^" + re.escape(f"{tmp_path / 'file/out'}: cannot write: ") + r"[A-Z][^\n]+$"):
        with atomic_directory(tmp_path / "file/out", marker="index.json"):
            pass
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


# -- the JSON cache of shipped YAML specs (load_shipped) ------------------------------------------------------------

def _shipped_copy(tmp_path: Path, text: str = "name: x\nsets: [{instances: ['a/*'], rules: [cell]}]\n") -> Path:
    path = tmp_path / "specs" / "spec.yaml"
    path.parent.mkdir()
    path.write_text(text)
    return path


def test_a_shipped_file_is_read_once_from_yaml_then_from_its_cache(tmp_path: Path) -> None:
    from eebench.documents import SHIPPED_CACHE, load_shipped

    path = _shipped_copy(tmp_path)
    first = load_shipped(path)
    cache = path.parent / "__pycache__" / "spec.yaml.json"
    stored = json.loads(cache.read_text())
    assert stored["cache"] == SHIPPED_CACHE and stored["document"] == first == load_document(path)
    stored["document"] = {"name": "from the cache"}   # the cache answers the next read, as long as its digest holds
    cache.write_text(json.dumps(stored))
    assert load_shipped(path) == {"name": "from the cache"}


@pytest.mark.parametrize("spoil", ["edit the file", "bad json", "another form", "not an object"])
def test_a_stale_or_damaged_cache_is_read_past(tmp_path: Path, spoil: str) -> None:
    from eebench.documents import load_shipped

    path = _shipped_copy(tmp_path)
    load_shipped(path)
    cache = path.parent / "__pycache__" / "spec.yaml.json"
    stored = json.loads(cache.read_text())
    if spoil == "edit the file":
        path.write_text("name: y\n")
    elif spoil == "bad json":
        cache.write_text('{"cache": ')
    elif spoil == "another form":
        cache.write_text(json.dumps({**stored, "cache": "shipped-cache/0", "document": {"name": "old"}}))
    else:
        cache.write_text("[1, 2]")
    assert load_shipped(path) == load_document(path)
    assert json.loads(cache.read_text())["document"] == load_document(path)   # written again, right


def test_a_document_json_cannot_hold_exactly_is_not_cached(tmp_path: Path) -> None:
    from eebench.documents import load_shipped

    path = _shipped_copy(tmp_path, "value: .nan\nbig: 123456789012345678901234567890\n")
    document = load_shipped(path)
    assert document["big"] == 123456789012345678901234567890 and document["value"] != document["value"]
    assert not (path.parent / "__pycache__" / "spec.yaml.json").exists()


def test_a_folder_that_cannot_be_written_still_reads(tmp_path: Path) -> None:
    from eebench.documents import load_shipped

    path = _shipped_copy(tmp_path)
    (path.parent / "__pycache__").write_text("a file where the cache folder would be")
    assert load_shipped(path) == load_shipped(path) == load_document(path)


# -- the compiled check of long lists (a trajectory's steps) ----------------------------------------------------

_EDGES = [None, True, False, 0, -1, 3, 32766, 32767, 9007199254740991, 9007199254740992, 1.5, 2.0, -0.5, 1e15,
          1e15 + 1, "", "explore", "act", "up", [1], {"a": 1}]
_STEP_KEYS = ["action", "raw", "reasoning", "observation", "tokens_in", "tokens_out", "latency_ms", "timestamp",
              "phase", "episode", "state", "other"]
_STEPS = st.lists(st.dictionaries(st.sampled_from(_STEP_KEYS), st.sampled_from(_EDGES) | st.text(max_size=2)
                                  | st.integers() | st.floats(allow_nan=False), max_size=4)
                  .map(lambda d: {"action": "up", **d}) | st.sampled_from(_EDGES), max_size=3)


@settings(max_examples=800, deadline=None)
@given(steps=_STEPS, agent=st.sampled_from([None, {}, {"name": "x"}, {"name": 1}, "x"]))
def test_the_compiled_step_check_agrees_with_jsonschema(steps: list[Any], agent: Any) -> None:
    """schema_problems finds no problem by the compiled predicates only when jsonschema finds none."""
    from eebench.documents import _validator

    doc = {"eebench": "trajectory/1", "id": "t", "instance": "i", "steps": steps}
    if agent is not None:
        doc["agent"] = agent
    full = next(_validator("trajectory").iter_errors(doc), None) is None
    assert (schema_problems(doc, "trajectory", "t.jsonl") == []) == full


@pytest.mark.parametrize("step", [{"action": "up", "episode": True}, {"action": "up", "tokens_in": 2**53},
                                  {"action": "up", "latency_ms": 1e15 + 1}, {"action": "up", "phase": "x"},
                                  {"action": 1}, {"raw": "x"}, {"action": "up", "episode": 2.0}, "up"])
def test_the_compiled_step_check_refuses_what_jsonschema_refuses(step: Any) -> None:
    assert schema_problems({"eebench": "trajectory/1", "id": "t", "instance": "i", "steps": [step]}, "trajectory",
                           "t.jsonl") != []


def test_a_valid_trajectory_is_passed_by_the_compiled_check_alone() -> None:
    from eebench.documents import _passes_fast

    step = {"action": "up", "raw": "x", "reasoning": None, "observation": "o", "tokens_in": 3, "tokens_out": 0,
            "latency_ms": 1.5, "timestamp": "t", "phase": "act", "episode": 2, "state": "s", "mine": [1]}
    assert _passes_fast({"eebench": "trajectory/1", "id": "t", "instance": "i", "steps": [step] * 3}, "trajectory")
    assert not _passes_fast({"eebench": "trajectory/1", "id": "t", "instance": "i",
                             "steps": [{**step, "tokens_in": 3.0}]}, "trajectory")   # (integers are strict)


@pytest.mark.parametrize("umask, file_mode, folder_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_outputs_take_the_modes_the_umask_gives(tmp_path: Path, umask: int, file_mode: int, folder_mode: int) -> None:
    # (0644 and 0755 were forced: under umask 077 archives, reports and runs came out world-readable)
    code = ("import os, sys; os.umask(int(sys.argv[1])); from pathlib import Path\n"
            "from eebench.documents import atomic_directory, atomic_file\n"
            "with atomic_file(Path(sys.argv[2]) / 'f.txt') as out: out.write('x')\n"
            "with atomic_directory(Path(sys.argv[2]) / 'd', marker='m') as folder: (folder / 'g').write_text('y')\n")
    subprocess.run([sys.executable, "-c", code, str(umask), str(tmp_path)], check=True)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == file_mode
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == folder_mode
    # the umask as it is at each write: a program may tighten it after eebench's first output
    later = ("import os, sys; from pathlib import Path\n"
             "from eebench.documents import atomic_directory, atomic_file\n"
             "os.umask(0); out = Path(sys.argv[2])\n"
             "with atomic_file(out / 'e.txt') as f: f.write('x')\n"
             "os.umask(int(sys.argv[1]))\n"
             "with atomic_file(out / 'f2.txt') as f: f.write('x')\n"
             "with atomic_directory(out / 'd2', marker='m') as folder: (folder / 'g').write_text('y')\n")
    subprocess.run([sys.executable, "-c", later, str(umask), str(tmp_path)], check=True)
    assert stat.S_IMODE((tmp_path / "e.txt").stat().st_mode) == 0o666
    assert stat.S_IMODE((tmp_path / "f2.txt").stat().st_mode) == file_mode
    assert stat.S_IMODE((tmp_path / "d2").stat().st_mode) == folder_mode


def test_an_unknown_field_no_known_one_is_close_to_names_the_known_ones(tmp_path: Path) -> None:
    """`observation:` in a checkpoint (where `field: observation, regex: ...` is meant) read "unknown field" alone."""
    path = tmp_path / "c.yaml"
    path.write_text("eebench: checkpoints/1\nname: c\nsets:\n  - instances: ['*']\n    checkpoints:\n"
                    "      - {id: a, observation: 'Kitchen'}\n      - {id: b, regx: 'x', field: action}\n", "utf-8")
    with pytest.raises(InputError) as caught:
        load_checked(path, "checkpoints")
    assert [str(p) for p in caught.value.problems] == [
        f"{path}: sets[0].checkpoints[0].observation: unknown field (expected all, field, id, regex or state)",
        f"{path}: sets[0].checkpoints[1].regx: unknown field (did you mean 'regex'?)"]
    suite = tmp_path / "s.yaml"   # a spec's free `x-` keys are among what may stand there
    suite.write_text("eebench: suite/1\nname: s\nmembers: [{instance: a.json}]\nqqq: 1\n", "utf-8")
    with pytest.raises(InputError) as caught:
        load_checked(suite, "suite")
    assert str(caught.value.problems[0]).endswith("qqq: unknown field (expected citation, description, eebench, env, "
                                                  "members, name, presets or x-... (a note))")
