"""Limits on input (issue 9, "Tracebacks on bad input"): each damaged input found by fuzzing is one located line,
exit code 2, nothing written. The README's "Limits on input" lists the bounds tested here."""

from __future__ import annotations

import gzip
import io
import json
import re
import struct
import tarfile
import tracemalloc
import zipfile
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eebench.archives import archive_bytes, read_archive
from eebench.documents import (
    MAX_DEPTH,
    DepthGauge,
    JsonLimitError,
    instance_id_problem,
    loads_json,
    parse_text,
    too_deep,
    tree_problem,
)
from eebench.errors import InputError, Problem, quote
from eebench.instances import write_instances
from tests.conftest import instance_doc, make_instance, write_json, write_jsonl

CORRIDOR = dict(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])],
                goal="G", budget=30)


def trajectory(traj_id: str, actions: list, instance: str = "t/corridor", **extra) -> dict:
    return {"eebench": "trajectory/1", "id": traj_id, "instance": instance, "steps": [{"action": a} for a in actions],
            **extra}


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], folder, {"kind": "test"})
    return folder


def refused(result, file: Path | str, says: str) -> None:
    """Exit 2, one line on stderr naming the file and saying `says`, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {file}"), lines[0]
    assert says in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def instance_file(tmp_path: Path, name: str = "i.json", **changes) -> Path:
    return write_json(tmp_path / name, {**instance_doc(**CORRIDOR, instance_id="t/corridor"), **changes})


# -- the one door for JSON: worked cases --------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('[Infinity]', "Infinity is not a JSON number"),
    ('[-Infinity]', "-Infinity is not a JSON number"),
    ('[1e400]', "1e400 is out of the range of a 64-bit float"),
    ('"\\ud800"', "holds a lone surrogate"),
    ('{"\\udfff": 1}', "holds a lone surrogate"),
    ("[" + "1" * 4301 + "]", "an integer of more than 4300 digits"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} levels deep"),
    ("[" * 100_000 + "]" * 100_000, f"nested more than {MAX_DEPTH} levels deep"),
])
def test_json_the_door_refuses(text: str, message: str) -> None:
    with pytest.raises(JsonLimitError, match=re.escape(message)):
        loads_json(text)
    with pytest.raises(InputError, match=r"^f\.json: refused JSON: .*" + re.escape(message)):
        parse_text(text, "f.json", yaml_syntax=False)


def test_json_the_door_keeps_what_is_valid() -> None:
    assert loads_json('"\\ud83d\\ude00"') == "\U0001F600"  # a surrogate pair is one character
    assert loads_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert loads_json('{"a": "[[[[' + "[" * 500 + '"}') == {"a": "[[[[" + "[" * 500}  # brackets in a string
    assert loads_json(b"[1.5e308, " + b"9" * 4300 + b"]") == [1.5e308, int("9" * 4300)]


def test_a_line_of_nul_bytes_is_not_json_not_a_decoding_crash() -> None:
    with pytest.raises(json.JSONDecodeError, match="Expecting value"):
        loads_json(b"\x00\x00\x00\x00")


def depth_of(text: str) -> int:
    """The nesting depth of JSON text, by parsing it (the reference the gauge must agree with)."""
    def depth(value) -> int:
        if isinstance(value, dict):
            return 1 + max(map(depth, value.values()), default=0)
        if isinstance(value, list):
            return 1 + max(map(depth, value), default=0)
        return 0
    return depth(json.loads(text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a'), inner, max_size=3),
    max_leaves=30)


@given(json_values, st.integers(1, 7), st.integers(0, 12))
def test_the_depth_gauge_agrees_with_the_parser_however_the_text_is_cut(value, pieces: int, limit: int) -> None:
    data = json.dumps(value).encode()
    gauge = DepthGauge(limit)
    size = max(1, len(data) // pieces)
    verdicts = [gauge.feed(data[i:i + size]) for i in range(0, len(data), size)]
    assert all(verdicts) == (depth_of(data.decode()) <= limit)
    assert gauge.depth == 0 and not gauge.in_string


@given(json_values, st.integers(MAX_DEPTH - 8, MAX_DEPTH + 1), st.sampled_from(["[]", "{}"]))
def test_too_deep_agrees_with_the_parser_near_the_limit(value, wraps: int, brackets: str) -> None:
    inner = json.dumps(value)
    text = ('{"k":' * wraps + inner + "}" * wraps) if brackets == "{}" else ("[" * wraps + inner + "]" * wraps)
    assert too_deep(text.encode()) == (depth_of(text) > MAX_DEPTH)


documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=40)


@given(documents, st.booleans())
def test_loads_json_reads_every_document_json_writes(value, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert loads_json(text) == value
    assert loads_json(text.encode()) == value
    assert tree_problem(value) is None


def test_tree_problem_walks_without_recursion() -> None:
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    assert tree_problem(deep) == f"nested more than {MAX_DEPTH} levels deep"
    assert tree_problem({"a": [1.0, {"b": float("nan")}]}) == \
        "nan is not a JSON number (canonical documents hold finite numbers only)"
    assert tree_problem({"a": ["ok", "\U0001F600"]}) is None


# -- YAML: aliases, merge keys, depth --------------------------------------------------------------------

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
MERGES = "a0: &a0 {k: 1}\n" + "".join(f"a{i}: &a{i}\n  <<: [*a{i - 1}, *a{i - 1}]\n  k{i}: 1\n" for i in range(1, 45))


@pytest.mark.parametrize("text, message", [
    (LAUGHS, "refused YAML: expands to more than 200,000 values"),
    (MERGES, "refused YAML: expands to more than 200,000 values"),
    ("a: &a [1]\n" + "".join(f"b{i}: *a\n" for i in range(101)), "refused YAML: more than 100 aliases"),
    ("a: &a [*a]\n", "refused YAML: an alias refers to a value that contains it"),
    ("[" * 5000 + "]" * 5000, f"refused YAML: nested more than {MAX_DEPTH} levels deep"),
    ("".join(" " * i + "- \n" for i in range(200)), f"refused YAML: nested more than {MAX_DEPTH} levels deep"),
    ("a: .nan\n", "refused YAML: nan is not a JSON number"),
    ("a: -.inf\n", "refused YAML: -inf is not a JSON number"),
    ('a: "\\ud800"\n', "holds a lone surrogate"),
    ("a: " + "7" * 5000 + "\n", "refused YAML: an integer of more than 4300 digits"),
])
def test_yaml_the_door_refuses(text: str, message: str) -> None:
    with pytest.raises(InputError, match=r"^s\.yaml: .*" + re.escape(message)):
        parse_text(text, "s.yaml", yaml_syntax=True)


def test_yaml_aliases_and_merge_keys_within_the_limits_still_work() -> None:
    chain = "a0: &a0 {k: 1}\n" + "".join(f"a{i}: &a{i}\n  <<: *a{i - 1}\n  k{i}: 1\n" for i in range(1, 90))
    value = parse_text(chain, "s.yaml", yaml_syntax=True)
    assert value["a89"] == {"k": 1, **{f"k{i}": 1 for i in range(1, 90)}}
    shared = parse_text("a: &a [1, {x: 2}]\nb: [*a, *a, {c: *a}]\n", "s.yaml", yaml_syntax=True)
    assert shared["b"] == [[1, {"x": 2}], [1, {"x": 2}], {"c": [1, {"x": 2}]}]  # used twice is not a cycle


def test_a_suite_alias_bomb_is_refused_by_validate(cli, tmp_path: Path) -> None:
    spec = tmp_path / "bomb.yaml"
    spec.write_text("eebench: suite/1\nname: s\n" + LAUGHS, "utf-8")
    for command in (["validate", spec], ["generate", spec, "--out", tmp_path / "out"]):
        refused(cli(*command, code=None), spec, "refused YAML: expands to more than 200,000 values")
    assert not (tmp_path / "out").exists()


# -- documents through the commands ----------------------------------------------------------------------

@pytest.mark.parametrize("changes, says", [
    ({"meta": {"n": "NAN"}}, "refused JSON: NaN is not a JSON number"),
    ({"meta": {"n": "HUGE"}}, "refused JSON: an integer of more than 4300 digits"),
    ({"meta": {"n": "DEEP"}}, f"refused JSON: nested more than {MAX_DEPTH} levels deep"),
    ({"id": "t/\\ud800"}, "refused JSON: t/\\ud800 holds a lone surrogate"),
    ({"budget": 2 ** 31}, "budget: expected a number <= 2147483647, found 2147483648"),
    ({"id": "t/" + "x" * 251}, "id: expected an id of letters"),
])
@pytest.mark.parametrize("command", ["validate", "show", "play"])
def test_a_bad_instance_is_one_line_for_every_command(cli, tmp_path: Path, changes: dict, says: str,
                                                      command: str) -> None:
    text = json.dumps({**instance_doc(**CORRIDOR, instance_id="t/corridor"), **changes})
    text = text.replace('"NAN"', "NaN").replace('"HUGE"', "9" * 5000).replace('"DEEP"', "[" * 200 + "]" * 200)
    text = text.replace("\\\\ud800", "\\ud800")
    path = tmp_path / "i.json"
    path.write_text(text, "utf-8")
    out = tmp_path / "runs.jsonl"
    args = {"validate": [path], "show": [path], "play": [path, "--agent", "random", "--out", out]}[command]
    refused(cli(command, *args, code=None), path, says)
    assert not out.exists()


@pytest.mark.parametrize("line, says", [
    (b"\x00\x00\x00\x00\n", "malformed JSON: Expecting value"),
    (b'{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": [], "meta": NaN}\n',
     "refused JSON: NaN is not a JSON number"),
    (b'{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": [{"action": "\\udc00"}]}\n',
     "refused JSON: \\udc00 holds a lone surrogate"),
    (b'{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": [], "meta": '
     + b"[" * 40_000 + b"]" * 40_000 + b"}\n", f"refused JSON: nested more than {MAX_DEPTH} levels deep"),
    (b'{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": [], "n": ' + b"1" * 4301 + b"}\n",
     "refused JSON: an integer of more than 4300 digits"),
    (b'\xef\xbb\xbf{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": []}\n',
     "malformed JSON: starts with a UTF-8 byte order mark, which JSON does not allow (save it without one)"),
])
@pytest.mark.parametrize("command", ["validate", "grade"])
def test_a_bad_trajectory_line_is_one_line(cli, bench: Path, tmp_path: Path, line: bytes, says: str,
                                           command: str) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(line)
    db = tmp_path / "r.duckdb"
    args = [runs] if command == "validate" else [runs, "--bench", bench, "--db", db]
    result = cli(command, *args, code=None)
    refused(result, f"{runs}:1", says)
    # a first line that is not JSON may be an agent's log; JSON refused for what it holds, or a mark, is not
    assert ("(an agent's log? " in result.stderr) == says.startswith("malformed JSON: Expecting"), result.stderr
    assert not db.exists()


def test_an_instance_with_a_byte_order_mark_says_so(cli, tmp_path: Path) -> None:
    path = tmp_path / "i.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(instance_doc(**CORRIDOR, instance_id="t/corridor")).encode())
    refused(cli("validate", path, code=None), path, "malformed JSON: starts with a UTF-8 byte order mark")


def test_token_sums_beyond_bigint_are_refused_where_they_are_made(cli, bench: Path, tmp_path: Path) -> None:
    # each step at most the schema's 2^53 - 1; 1,024 of them and one of 1,024 sum to 2^63
    steps = [{"action": "left", "tokens_in": 2 ** 53 - 1}] * 1024 + [{"action": "left", "tokens_in": 1024}]
    runs = write_jsonl(tmp_path / "runs.jsonl", [{**trajectory("a", []), "steps": steps}])
    db = tmp_path / "r.duckdb"
    refused(cli("grade", runs, "--bench", bench, "--db", db, code=None), f"{runs}:1",
            "steps[].tokens_in: the steps' tokens_in sum to more than the results table holds")
    assert not db.exists()
    # one under the limit is graded, and the column holds it exactly
    steps[-1] = {"action": "left", "tokens_in": 1023}
    write_jsonl(runs, [{**trajectory("a", []), "steps": steps}])
    cli("grade", runs, "--bench", bench, "--db", db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT tokens_in FROM trajectories").fetchall() == [(2 ** 63 - 1,)]
    finally:
        con.close()
    # and the schema says so per step: validate names the step
    over = write_jsonl(tmp_path / "over.jsonl", [{**trajectory("b", []), "steps": [{"action": "up",
                                                                                      "tokens_in": 2 ** 53}]}])
    refused(cli("validate", over, code=None), f"{over}:1", "steps[0].tokens_in: expected a number <= 9007199254740991")
    refused(cli("grade", over, "--bench", bench, "--db", db, code=None), f"{over}:1",   # grade as validate
            "steps[0].tokens_in: expected a number <= 9007199254740991")


def test_a_budget_of_2_31_or_more_is_refused_by_validate_and_grade(cli, tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    path = instance_file(folder / "t", "corridor.json", budget=2 ** 31)
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["left"])])
    db = tmp_path / "r.duckdb"
    refused(cli("grade", runs, "--bench", folder, "--db", db, code=None), path, "budget: expected a number <= ")
    assert not db.exists()


def _many_nodes(n: int) -> dict:
    """A 100 x 100 open map with n - 1 primitive nodes, all required by the goal."""
    cells = [[x, y] for y in range(100) for x in range(100)][1:]
    nodes = [{"id": f"n{i}", "pos": cells[i], "requires": []} for i in range(n - 1)]
    nodes.append({"id": "G", "pos": cells[n - 1], "requires": [[f"n{i}" for i in range(n - 1)]]})
    return {"map": ["." * 100] * 100, "start": [0, 0], "nodes": nodes, "goal": "G", "budget": 100_000}


def test_an_instance_of_more_than_1000_nodes_is_refused_by_validate_and_grade(cli, tmp_path: Path) -> None:
    # grading prepares per-node tables of quadratic cost: 9,999 nodes took minutes to grade two steps
    folder = tmp_path / "bench"
    path = instance_file(folder / "t", "corridor.json", **_many_nodes(1001))
    refused(cli("validate", path, code=None), path, "nodes: expected at most 1000 item(s), found 1001")
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["right", "down"])])
    db = tmp_path / "r.duckdb"
    refused(cli("grade", runs, "--bench", folder, "--db", db, code=None), path, "nodes: expected at most 1000 item")
    assert not db.exists()
    instance_file(folder / "t", "corridor.json", **_many_nodes(1000))   # the limit itself is graded
    cli("grade", runs, "--bench", folder, "--db", db)


def _rooms_star(n_rooms: int, n_balls: int) -> dict:
    """A rooms instance: room R0 joined to every other room, n_balls balls in the last room."""
    rooms = [f"R{i}" for i in range(n_rooms)]
    return {"eebench": "instance/1", "id": "t/star", "env": "rooms", "rooms": rooms, "start": "R0",
            "doors": [{"name": f"d{i}", "between": ["R0", room]} for i, room in enumerate(rooms[1:], 1)],
            "balls": [{"name": f"b{i}", "room": rooms[-1], "reward": 1 + i % 10} for i in range(n_balls)],
            "episodes": 2, "door_budget": 2, "ball_limit": 3}


@pytest.mark.parametrize("rooms, balls, says", [(1001, 1, "rooms: expected at most 1000 item(s), found 1001"),
                                                (2, 1001, "balls: expected at most 1000 item(s), found 1001")])
def test_a_rooms_instance_of_more_than_1000_rooms_or_balls_is_refused_by_validate_and_grade(
        cli, tmp_path: Path, rooms: int, balls: int, says: str) -> None:
    # grading costs grow with the cube of both (door distances per knowledge state, the solver's shortest-path
    # closure over the balls): a chain of 2,000 rooms (114 KB) took 108 s to grade one short episode
    folder = tmp_path / "bench"
    path = write_json(folder / "star.json", _rooms_star(rooms, balls))
    refused(cli("validate", path, code=None), path, says)
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["d1 door"], instance="t/star")])
    db = tmp_path / "r.duckdb"
    refused(cli("grade", runs, "--bench", folder, "--db", db, code=None), path, says)
    assert not db.exists()


def test_a_rooms_instance_of_1000_rooms_grades(cli, tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    write_json(folder / "star.json", _rooms_star(1000, 3))   # the limit itself is graded
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["d999 door", "b0 ball"], instance="t/star")])
    cli("grade", runs, "--bench", folder, "--db", tmp_path / "r.duckdb")


def test_grade_skip_invalid_when_every_record_of_a_chunk_is_skipped(cli, bench: Path, tmp_path: Path) -> None:
    # trajectories of another bench: more than a chunk of them before the one that grades
    foreign = [trajectory(f"x{i}", ["up"], instance="other/bench") for i in range(300)]
    runs = write_jsonl(tmp_path / "runs.jsonl", foreign + [trajectory("ok", ["left"])])
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--bench", bench, "--db", db, "--skip-invalid")
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"skipped: {runs}:1: instance: no instance 'other/bench'")
    assert "graded 1 trajectories (1 steps)" in result.stdout and "skipped 300" in result.stdout
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT trajectory_id FROM trajectories").fetchall() == [("ok",)]
    finally:
        con.close()


# -- ids and file names ----------------------------------------------------------------------------------

def test_the_id_rule_and_file_names_agree() -> None:
    assert instance_id_problem("park2026-main/low-small/seed-0") is None
    assert instance_id_problem("a/" + "b" * 250) is None
    assert instance_id_problem("a/" + "b" * 251) is not None  # '<part>.json' would pass 255 bytes
    assert instance_id_problem("/".join(["a" * 200] * 5) + "/b") is not None  # 1000 characters in all
    assert instance_id_problem("../x") is not None
    assert instance_id_problem("x" * 5_000_000).endswith('found "' + "x" * 36 + '...')


def test_a_trajectory_naming_an_impossible_id_is_no_such_instance(cli, bench: Path, tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["left"], instance="t/" + "x" * 300)])
    db = tmp_path / "r.duckdb"
    refused(cli("grade", runs, "--bench", bench, "--db", db, code=None), f"{runs}:1", "instance: no instance")
    assert not db.exists()


def test_a_suite_making_too_long_ids_is_refused_before_writing(cli, tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(f"eebench: suite/1\nname: s\nmembers:\n  - {{presets: [low-small], seeds: [{'9' * 250}]}}\n",
                    "utf-8")
    for command in (["validate", spec], ["generate", spec, "--out", tmp_path / "out"],
                    ["publish", spec, "--version", "1.0.0", "--out", tmp_path / "b"]):
        result = cli(*command, code=None)
        assert result.exit_code == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.startswith(f"error: {spec}: members"), result.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "b").exists()


# -- endless and huge inputs, long messages ----------------------------------------------------------------

@pytest.mark.parametrize("command, says", [("validate", "is a device, expected a file"),
                                           ("show", "is a device, expected a file"),
                                           ("grade", "is not a file"), ("convert", "is not a file")])
def test_a_device_is_refused_not_read(cli, bench: Path, tmp_path: Path, command: str, says: str) -> None:
    zero = Path("/dev/zero")
    args = {"validate": [zero], "show": [zero], "grade": [zero, "--bench", bench, "--db", tmp_path / "r.duckdb"],
            "convert": [zero, "--from", "openai-chat", "--out", tmp_path / "o.jsonl"]}[command]
    refused(cli(command, *args, code=None), zero, says)


@pytest.mark.parametrize("command", ["show", "play"])
def test_a_pipe_that_show_and_play_refuse_is_called_a_pipe(cli, tmp_path: Path, command: str) -> None:
    # they never read a pipe as an instance, and said "is a device" of one
    import os

    fifo = tmp_path / "i.json"
    os.mkfifo(fifo)
    args = {"show": [], "play": ["--agent", "random", "--out", tmp_path / "o.jsonl"], "prompt": []}[command]
    refused(cli(command, fifo, *args, code=None), fifo, "is a pipe, expected a file")


def test_an_output_that_is_a_pipe_is_refused_not_replaced(cli, bench: Path, tmp_path: Path) -> None:
    """An output is written beside itself and renamed into place: over a pipe or a device that rename replaced the
    node with a regular file (as root, `play --out /dev/null` made /dev/null a file). Such an output is refused."""
    import os
    import stat

    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    refused(cli("play", bench, "--agent", "random", "--out", fifo, code=None), fifo,
            "is a pipe, expected a file to write")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    archive = tmp_path / "b.tar.gz"
    os.mkfifo(archive)
    suite = tmp_path / "s.yaml"
    suite.write_text("eebench: suite/1\nname: s\nmembers:\n  - {presets: [low-small], seeds: [0]}\n", "utf-8")
    refused(cli("publish", suite, "--version", "1.0.0", "--out", archive, code=None), archive,
            "is a pipe, expected an archive file")
    assert stat.S_ISFIFO(archive.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz", "bench", "out.jsonl", "s.yaml"]


def test_an_archive_that_is_a_pipe_is_refused_not_read(cli, tmp_path: Path) -> None:
    """Opening a pipe waits for a writer: `verify` of one named like an archive, and `bundles` of a folder holding
    one, waited forever."""
    import os

    archive = tmp_path / "b.zip"
    os.mkfifo(archive)
    verified = _eebench("verify", archive)
    assert (verified.returncode, verified.stderr) == (2, f"error: {archive}: is a pipe, expected an archive file\n")
    listed = _eebench("bundles", tmp_path)
    assert (listed.returncode, listed.stdout) == (0, f"no bundles in {tmp_path}\n")


def _eebench(*args: str | Path):
    """`eebench ARGS` in a process of its own, stopped after 60 s (what these tests refuse waited forever)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "eebench", *map(str, args)], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[1])


@pytest.mark.parametrize("command", ["grade", "query", "export", "report", "plot", "ingest"])
def test_a_results_file_that_is_a_pipe_is_refused_not_opened(bench: Path, tmp_path: Path, command: str) -> None:
    """DuckDB opening a pipe as --db waits for a writer forever: refused before it is opened."""
    import os

    fifo = tmp_path / "r.duckdb"
    os.mkfifo(fifo)
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["left"])])
    args = {"grade": [runs, "--bench", bench], "query": ["SELECT 1"], "export": ["--out", tmp_path / "e"],
            "report": ["--out", tmp_path / "r.html"], "plot": ["figure1", "--out", tmp_path / "p.png"],
            "ingest": [tmp_path]}[command]
    done = _eebench(command, *args, "--db", fifo)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: Invalid value for '--db': {fifo} is a pipe, expected a DuckDB file; see " \
                          f"`eebench {command} --help`\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "r.duckdb", "runs.jsonl"]


def test_a_results_file_that_is_a_pipe_is_refused_from_python_too(bench: Path, tmp_path: Path) -> None:
    """The library calls under the commands refuse it as well (a notebook's grade_files, query, load_results)."""
    code = f"""
import os
from pathlib import Path
from eebench.errors import InputError
from eebench.evaluator import Bench, grade_files, query
from eebench.report.data import load_results
fifo = Path({str(tmp_path / "r.duckdb")!r})
os.mkfifo(fifo)
for call in (lambda: grade_files([Path({str(write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["left"])]))!r})],
                                 Bench(Path({str(bench)!r})), fifo),
             lambda: query(fifo, "SELECT 1"), lambda: load_results(fifo)):
    try:
        call()
    except InputError as exc:
        print(exc)
"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout == f"{tmp_path / 'r.duckdb'}: is a pipe, expected a DuckDB file\n" * 3, done.stderr


def test_a_bench_that_is_a_pipe_or_a_device_is_named_not_the_trajectory(cli, bench: Path, tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["left"])])
    graded = tmp_path / "graded.duckdb"
    cli("grade", runs, "--bench", bench, "--db", graded)
    for given, kind in ((fifo, "a pipe"), (Path("/dev/null"), "a device")):
        for args in (["grade", runs, "--db", tmp_path / "r.duckdb"], ["report", "--db", graded, "--out",
                                                                      tmp_path / "r.html"]):
            refused(cli(*args, "--bench", given, code=None), given,
                    f"is {kind}, expected a folder of instances, a bundle or an instance file")
    assert not (tmp_path / "r.duckdb").exists() and not (tmp_path / "r.html").exists()


def test_grade_reads_a_pipe_as_it_reads_standard_input(cli, bench: Path, tmp_path: Path) -> None:
    # `eebench grade <(zcat runs.jsonl.gz)`: a pipe is read once, in order, by one process (refused before as
    # "is not a file")
    import os
    import threading

    runs = [trajectory(f"t{i}", ["left", "right"][: i % 3]) for i in range(5)]
    fifo = tmp_path / "runs.pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("".join(json.dumps(r) + "\n" for r in runs)))
    writer.start()
    try:
        piped = cli("grade", fifo, "--bench", bench, "--db", tmp_path / "piped.duckdb", "--workers", "2")
    finally:
        writer.join(timeout=60)
    cli("grade", write_jsonl(tmp_path / "runs.jsonl", runs), "--bench", bench, "--db", tmp_path / "file.duckdb")
    assert piped.stdout.startswith("graded 5 trajectories (")
    query = "SELECT * EXCLUDE (graded_at, source_file) FROM trajectories ORDER BY ALL"
    with duckdb.connect(str(tmp_path / "piped.duckdb"), read_only=True) as a, \
            duckdb.connect(str(tmp_path / "file.duckdb"), read_only=True) as b:
        assert a.execute(query).fetchall() == b.execute(query).fetchall()


def test_a_huge_unknown_key_is_not_echoed_whole(cli, tmp_path: Path) -> None:
    key = "k" * 5_000_000
    path = instance_file(tmp_path, **{key: 1})
    result = cli("validate", path, code=2)
    assert result.stderr.startswith(f"error: {path}: {quote(key)}: unknown field (expected ")   # (the fields)
    assert len(result.stderr) < 1_000


@pytest.mark.parametrize("field, change", [
    ("goal", {"goal": "G" * 900}), ("env", {"env": "r" * 900}),
    ("nodes[0].requires[0][0]", {"nodes": [{"id": "A", "pos": [1, 0], "requires": [["Z" * 900]]}]}),
])
def test_a_long_value_is_quoted_cut_to_the_limit(cli, tmp_path: Path, field: str, change: dict) -> None:
    """Unknown ids and kinds were quoted whole (900 characters), where messages quote at most 100."""
    path = instance_file(tmp_path, **change)
    line = cli("validate", path, code=2).stderr
    value = next(iter(re.findall(r"'([A-Za-z.]{90,})'", line)))
    assert f": {field}: " in line and len(value) == 100 and value.endswith("...")


def test_a_long_phase_is_quoted_cut_to_the_limit(cli, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", [{**trajectory("t", ["left"]), "env": "logged",
                                                   "steps": [{"action": "go", "phase": "x" * 900}]}])
    line = cli("grade", path, "--db", tmp_path / "r.duckdb", code=2).stderr
    assert "steps[0].phase: expected explore or act, found '" + "x" * 97 + "...'" in line


def test_quote_cuts_to_the_limit() -> None:
    assert quote("abc") == "abc"
    assert quote("x" * 101) == "x" * 97 + "..."
    assert str(Problem("f", 1, "k" * 500, "m")) == f"f:1: {'k' * 97}...: m"


# -- archives --------------------------------------------------------------------------------------------

def _zip_declaring(size: int, real: bytes) -> bytes:
    """A zip whose one member declares `size` bytes but inflates to `real`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("manifest.json"), real, compress_type=zipfile.ZIP_DEFLATED)
    data = bytearray(buffer.getvalue())
    struct.pack_into("<I", data, 22, size)  # the local header's uncompressed size
    struct.pack_into("<I", data, data.rfind(b"PK\x01\x02") + 24, size)  # and the central directory's
    return bytes(data)


def test_a_zip_member_inflating_past_its_declared_size_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "b.zip"
    bomb.write_bytes(_zip_declaring(100, b"\0" * (64 << 20)))
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"b\.zip: not a readable zip archive \(Bad CRC-32 for file "):
            read_archive(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the 64 MiB it inflates to is never held (whole reads took 2.1 GB for 1 GiB)


def test_tar_data_after_the_end_of_archive_blocks_is_refused(cli, tmp_path: Path) -> None:
    raw = gzip.decompress(archive_bytes({"a.json": b"{}"}, ".tar.gz"))
    hidden = io.BytesIO()
    with tarfile.open(fileobj=hidden, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("hidden.json")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"{}"))
    path = tmp_path / "t.tar.gz"
    path.write_bytes(gzip.compress(raw + hidden.getvalue()))
    with pytest.raises(InputError, match=r"t\.tar\.gz: holds data after the end-of-archive blocks \(from byte 1,024"):
        read_archive(path)
    refused(cli("verify", path, code=None), path, "holds data after the end-of-archive blocks")
    path.write_bytes(gzip.compress(raw + b"\0" * 10240))  # zero padding after the end is what tar writes
    assert read_archive(path) == {"a.json": b"{}"}
    path.write_bytes(gzip.compress(raw[:1024] + b"garbage" + bytes(1017) + bytes(1024)))  # where the end was
    with pytest.raises(InputError, match=r"t\.tar\.gz: holds data after the end-of-archive blocks \(from byte 1,024"):
        read_archive(path)


class _Zeros:
    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, size: int) -> bytes:
        size = min(size, self.left)
        self.left -= size
        return bytes(size)


def test_a_tar_gz_bomb_is_refused_in_bounded_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A member of 32 MiB of zeros (32 KB packed) against a limit of 4 MiB: refused by its header, never unpacked
    (the whole limit was unpacked first: a 7 MB .tar.gz of 1.5 GiB took 1.08 GB)."""
    import eebench.archives
    monkeypatch.setattr(eebench.archives, "MAX_UNPACKED_BYTES", 4 << 20)
    bomb = tmp_path / "b.tar.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as packed, tarfile.open(fileobj=packed, mode="w|") as archive:
        info = tarfile.TarInfo("manifest.json")
        info.size = 32 << 20
        archive.addfile(info, _Zeros(info.size))
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"b\.tar\.gz: unpacks to more than 4 MiB; a bundle is far smaller"):
            read_archive(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("size, says", [
    ("-5000", "not a readable tar.gz archive (a member's size or place is out of range)"),  # was a traceback
    ("99999999999999", "unpacks to more than 256 MiB"),
])
def test_a_tar_member_size_from_a_pax_record_is_checked(size: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "t.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for name in ("manifest.json", "README.md"):
            info = tarfile.TarInfo(name)
            info.size, info.pax_headers = 2, {"size": size} if name == "manifest.json" else {}
            archive.addfile(info, io.BytesIO(b"{}"))
    with pytest.raises(InputError, match=f"^{re.escape(f'{path}: {says}')}"):
        read_archive(path)


def test_a_tar_extended_header_past_its_limit_is_refused(tmp_path: Path) -> None:
    """tarfile reads a pax header whole and makes a dict of its records, which can take many times its size."""
    path = tmp_path / "t.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("manifest.json")
        info.pax_headers = {f"k{i}": "v" for i in range(8000)}  # some 100 KB of records
        archive.addfile(info, io.BytesIO())
    with pytest.raises(InputError, match=r"t\.tar\.gz: not a readable tar\.gz archive \(an extended header of "
                                         r"[0-9,]+ bytes, where at most 65,536 are read\)$"):
        read_archive(path)


# -- agent logs: deep nesting in every streaming reader ----------------------------------------------------

DEEP = b"[" * 40_000 + b"]" * 40_000


@pytest.mark.parametrize("fmt, name, data", [
    ("openhands", "events.json", b'[{"id": 1, "source": "agent", "x": ' + DEEP + b"}]"),
    ("atif", "t.trajectory.json", b'{"schema_version": "ATIF-v1.2", "steps": ' + DEEP + b"}"),
    ("harbor-traces", "t.traces.json", b'[{"conversations": ' + DEEP + b"}]"),
    ("langsmith", "runs.json", b'[{"run_type": "llm", "inputs": ' + DEEP + b"}]"),
    ("openai-chat", "chat.json", b'[{"messages": ' + DEEP + b"}]"),
    ("openai-chat", "chat.jsonl", b'{"messages": ' + DEEP + b"}\n"),
    ("inspect", "log.json", b'{"version": 2, "eval": ' + DEEP + b', "samples": []}'),
    ("otel", "trace.json", b'{"resourceSpans": ' + DEEP + b"}"),
    ("actions", "a.json", DEEP),
])
def test_deep_nesting_in_a_log_is_one_line_in_bounded_memory(cli, tmp_path: Path, fmt: str, name: str,
                                                              data: bytes) -> None:
    log = tmp_path / name
    log.write_bytes(data)
    out = tmp_path / "out.jsonl"
    tracemalloc.start()
    try:
        result = cli("convert", log, "--from", fmt, "--out", out, code=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 2 and "Traceback" not in result.stderr, result.stderr
    assert str(log) in result.stderr.splitlines()[0]
    assert peak < 64 << 20  # 40,000 levels took 3.9 GB in a streaming reader
    assert not out.exists()


# -- manifests and bundles -----------------------------------------------------------------------------------

@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    from eebench.bundles import publish

    specs = tmp_path / "specs"
    write_json(specs / "corridor.json", instance_doc(**CORRIDOR))
    (specs / "t.yaml").write_text("eebench: suite/1\nname: t\nmembers:\n  - {instance: corridor.json}\n", "utf-8")
    publish(str(specs / "t.yaml"), "1.0.0", tmp_path / "b")
    return tmp_path / "b"


@pytest.mark.parametrize("value, says", [
    ("9" * 5000, "refused JSON: an integer of more than 4300 digits"),
    ("NaN", "refused JSON: NaN is not a JSON number"),
    ("[" * 40_000 + "]" * 40_000, f"refused JSON: nested more than {MAX_DEPTH} levels deep"),
    ('"\\udbff"', "holds a lone surrogate"),
])
def test_a_hostile_manifest_is_one_line_for_validate_verify_and_grade(cli, bundle: Path, tmp_path: Path,
                                                                      value: str, says: str) -> None:
    manifest = bundle / "manifest.json"
    text = manifest.read_text("utf-8")
    manifest.write_text(text.replace('"name": "t"', f'"name": {value}', 1), "utf-8")
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["left"])])
    db = tmp_path / "r.duckdb"
    refused(cli("validate", manifest, code=None), manifest, says)
    for command in (["verify", bundle], ["grade", runs, "--bench", bundle, "--db", db]):
        result = cli(*command, code=None)
        assert result.exit_code == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"error: {manifest}" in result.stderr and says in result.stderr, result.stderr
    assert not db.exists()


# -- what messages quote ---------------------------------------------------------------------------------------

def test_huge_ids_are_quoted_cut_in_messages(cli, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    unknown = write_jsonl(tmp_path / "u.jsonl", [trajectory("a", ["left"], instance="x" * 5_000_000)])
    result = cli("grade", unknown, "--bench", bench, "--db", db, code=2)
    assert result.stderr.startswith(f"error: {unknown}:1: instance: no instance '{'x' * 96}... under {bench};")
    assert len(result.stderr) < 500 and result.stderr.count("\n") == 1
    twice = write_jsonl(tmp_path / "d.jsonl", [trajectory("i" * 3_000_000, ["left"])] * 2)
    result = cli("grade", twice, "--bench", bench, "--db", db, code=2)
    assert result.stderr == (f"error: {twice}:2: id: trajectory id '{'i' * 96}... was already read at {twice}:1; "
                             "ids must be unique\n")
    assert not db.exists()


def test_a_suite_naming_an_impossible_file_is_one_line(cli, tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("eebench: suite/1\nname: s\nmembers:\n  - {instance: " + "x" * 300 + "}\n", "utf-8")
    result = cli("validate", spec, code=2)
    assert result.stderr.startswith(f"error: {spec}: members[0].instance: no file '")
    assert len(result.stderr) < 400 and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["play", "grade"])
def test_a_folder_holding_an_instance_with_a_too_long_id_names_that_file(cli, tmp_path: Path, command: str) -> None:
    long_id = "t/" + "x" * 300
    folder = tmp_path / "bench"
    path = instance_file(folder, "long.json", id=long_id)
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", ["left"], instance=long_id)])
    out, db = tmp_path / "out.jsonl", tmp_path / "r.duckdb"
    args = ["play", folder, "--agent", "random", "--out", out] if command == "play" else \
        ["grade", runs, "--bench", folder, "--db", db]
    refused(cli(*args, code=None), path, "id: expected an id of letters")
    assert not out.exists() and not db.exists()


def test_names_that_become_folders_are_bounded_like_id_parts(cli, tmp_path: Path) -> None:
    spec = tmp_path / "g.yaml"
    spec.write_text("eebench: generator/1\nenv: grid_dag\npresets:\n  " + "p" * 251
                    + ": {dag: {n_nodes: 3}, map: {size: [5, 5], corridor_width: [1, 1]}}\n", "utf-8")
    result = cli("generate", spec, "--seeds", "0", "--out", tmp_path / "out", code=2)
    assert result.stderr == (f"error: {spec}: presets: expected a preset name of letters, digits, '.', '_', '-' (at "
                             f"most 250: it becomes a folder name), found \"{'p' * 36}...\n")
    assert not (tmp_path / "out").exists()
    suite = tmp_path / "s.yaml"
    suite.write_text(f"eebench: suite/1\nname: {'s' * 251}\nmembers: [{{instance: pasta/custom-201}}]\n", "utf-8")
    refused(cli("validate", suite, code=None), suite, "name: expected a name of letters, digits, '.', '_', '-' "
                                                      "(at most 250: it becomes a folder name)")


def test_a_file_over_the_limit_is_refused_before_it_is_read(cli, tmp_path: Path) -> None:
    from eebench.documents import MAX_DOCUMENT_BYTES

    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: no disk used, and nothing may be read
    tracemalloc.start()
    try:
        result = cli("validate", huge, code=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    refused(result, huge, "larger than 256 MiB, the most one document may be")
    assert peak < 16 << 20


def test_a_pipe_is_read_up_to_the_limit_only(tmp_path: Path) -> None:
    import os
    import threading

    from eebench.documents import read_bytes

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)

    def write(size: int) -> None:
        try:
            with fifo.open("wb") as handle:
                handle.write(b" " * size)
        except BrokenPipeError:  # the reader stopped at the limit, as it should
            pass

    writer = threading.Thread(target=write, args=(8 << 20,))
    writer.start()
    with pytest.raises(InputError, match=r"pipe\.json: larger than 1 MiB, the most one document may be"):
        read_bytes(fifo, 1 << 20)
    writer.join()
    writer = threading.Thread(target=write, args=(1000,))
    writer.start()
    assert read_bytes(fifo, 1 << 20) == b" " * 1000
    writer.join()


def test_json_inside_a_string_meets_the_same_door(cli, tmp_path: Path) -> None:
    """Tool-call arguments arrive JSON-encoded; decoded, they may hold a lone surrogate, NaN or depth."""
    arguments = '{"direction": "\\ud800", "n": NaN, "deep": ' + "[" * 500 + "]" * 500 + "}"
    log = write_jsonl(tmp_path / "chat.jsonl", [{"task_id": "t", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "move", "arguments": arguments}}]}]}])
    out = tmp_path / "out.jsonl"
    cli("convert", log, "--from", "openai-chat", "--out", out)
    [step] = json.loads(out.read_text("utf-8"))["steps"]
    assert step["action"] == f"move({arguments})"  # kept as written: not decodable within the limits
    cli("validate", out)
