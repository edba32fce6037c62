"""Lines read a chunk at a time without a dict per step (`evaluator.bare_steps`): the same document as the JSON door
gives, or None (left to the door); and the same grade, and the same errors, as lines parsed whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.documents import loads_json
from eebench.errors import InputError
from eebench.evaluator import Bench, grade, grade_files
from eebench.evaluator.bare_steps import loads_bare
from eebench.instances import write_instances
from eebench.long_lines import Actions, StepList
from tests.conftest import make_instance, rows

ROOM = make_instance(map_rows=["....", ".#..", "...."], start=[0, 0],
                     nodes=[("A", [3, 0], []), ("G", [3, 2], [["A"]])], goal="G", budget=60, instance_id="t/bare")
TABLES = ("SELECT * EXCLUDE (graded_at) FROM trajectories ORDER BY ALL", "SELECT * FROM steps ORDER BY ALL",
          "SELECT * FROM checkpoints ORDER BY ALL")
MOVES = ["up", "down", "left", "right"]

words = st.one_of(st.sampled_from([*MOVES, "Left ", "jump", "", None, 'say "hi"', "a\\b", "naïve", "tab\there"]),
                  st.text(max_size=6))
steps_strategy = st.lists(st.one_of(
    words.map(lambda w: {"action": w}),
    st.tuples(words, st.sampled_from(["explore", "act"])).map(lambda t: {"action": t[0], "phase": t[1]}),
    st.just({"act": "up"}), st.just(3)), max_size=40)
layouts = st.sampled_from(["orjson", "python", "spaced"])


def dumps(doc: Any, layout: str) -> bytes:
    """A line as common writers lay it out: orjson's compact text, Python's default separators, or extra
    whitespace everywhere JSON allows it."""
    if layout == "orjson":
        return orjson.dumps(doc)
    if layout == "python":
        return json.dumps(doc).encode()
    return json.dumps(doc, separators=(" , ", " :\t")).replace("{", "{ ").replace("]", " ]").encode()


def trajectory(k: int, steps: Any, **more: Any) -> dict[str, Any]:
    return {"eebench": "trajectory/1", "id": f"r{k}", "instance": "t/bare", "agent": {"name": "a"},
            "steps": steps, **more}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(steps_strategy, layouts), min_size=1, max_size=6))
def test_a_line_read_bare_is_the_doors_document_or_left_to_it(runs: list[tuple[list[Any], str]]) -> None:
    # (the steps last on odd lines, as most writers put them; a field after them on even ones)
    lines = [dumps(trajectory(k, steps, **({} if k % 2 else {"note": "n"})), layout) + b"\n"
             for k, (steps, layout) in enumerate(runs)]
    for line, doc, (steps, _) in zip(lines, loads_bare(lines), runs):
        plain = all(type(s) is dict and s.keys() == {"action"} and (s["action"] is None or (
            s["action"].isascii() and s["action"].isprintable() and not {'"', "\\"} & set(s["action"])))
            for s in steps)
        if not steps or not plain:   # (read whole by the door: an escape, a byte past ASCII, another shape)
            assert doc is None
            continue
        assert doc is not None and isinstance(doc["steps"], StepList)
        assert {**doc, "steps": list(doc["steps"])} == loads_json(line)


def test_the_lines_of_a_chunk_share_one_table_of_words() -> None:
    lines = [orjson.dumps(trajectory(k, [{"action": w} for w in ["up", "Up", None, "right", "Up"][k:]]))
             for k in range(3)]
    docs = loads_bare(lines)
    actions = [doc["steps"].actions for doc in docs]   # type: ignore[index]
    assert all(type(a) is Actions and a.words is actions[0].words for a in actions)
    assert actions[0].words == [None, "up", "down", "left", "right", "Up"]
    assert actions[0].codes.tolist() == [1, 5, 0, 4, 5]
    joined = Actions.joined(actions)
    assert joined is not None and list(joined) == [w for a in actions for w in a]
    assert Actions.joined([actions[0], ["up"]]) is None


@pytest.mark.parametrize("line", [
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"},]}',
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"}]',
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"}], "n": 1e999}',
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "n": 12345678901234567890123, '
    b'"steps": [{"action": "up"}]}',
    b'{"eebench": "trajectory/1", "id": "\\ud800", "instance": "t/bare", "steps": [{"action": "up"}]}',
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"}], "m": '
    + b"[" * 120 + b"]" * 120 + b"}",
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"}], "m": '
    + b"[" * 100_000 + b"]" * 100_000 + b"}",   # deeper than msgspec reads: its RecursionError is no crash
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"}], "\xff": 1}',
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "u\xffp"}]}',
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"}], "x": "\xff"}',
    b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "other": [{"action": "up"}], '
    b'"steps": [{"action": "up"}]}',
    b'{"steps": [{"action": "up"}], "eebench": "trajectory/1", "id": "x", "instance": "t/bare", '
    b'"steps": [{"action": "down"}]}',
    b'["not", "a", "trajectory"]',
])
def test_what_the_bare_reader_doubts_is_the_doors(line: bytes) -> None:
    # each line is refused by the door, or holds a value of the steps' text or a second steps key: never a
    # different document
    doc = loads_bare([line])[0]
    try:
        expected = loads_json(line)
    except (ValueError, UnicodeDecodeError):
        assert doc is None
        return
    assert doc is None or {**doc, "steps": list(doc["steps"])} == expected


def grade_both_ways(tmp: Path, text: bytes, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, Any]:
    """The tables (or the error) of grading JSON Lines `text` read whole, then with every line read bare."""
    write_instances([ROOM], tmp / "bench", {"kind": "t"})
    runs = tmp / "runs.jsonl"
    runs.write_bytes(text)
    out = []
    for compact_from in (10 ** 12, 0):
        monkeypatch.setattr(grade, "COMPACT_FROM_STEPS", compact_from)
        db = tmp / f"{compact_from}.duckdb"
        try:
            report = grade_files([runs], Bench(tmp / "bench"), db, **options)
        except InputError as exc:
            out.append(str(exc))
            assert not db.exists()
            continue
        out.append([[str(p) for p in report.skipped], *(rows(db, sql) for sql in TABLES)])
    return out[0], out[1]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(steps_strategy, layouts), min_size=1, max_size=5), st.booleans())
def test_a_run_read_bare_grades_as_lines_read_whole(tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                   runs: list[tuple[list[Any], str]], skip_invalid: bool) -> None:
    text = b"".join(dumps(trajectory(k, steps), layout) + b"\n" for k, (steps, layout) in enumerate(runs))
    whole, bare = grade_both_ways(tmp_path_factory.mktemp("bare"), text, monkeypatch, skip_invalid=skip_invalid)
    assert whole == bare


def test_a_bad_line_among_bare_ones_is_the_same_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = [orjson.dumps(trajectory(k, [{"action": MOVES[(k + i) % 4]} for i in range(30)])) for k in range(6)]
    text = b"\n".join([*good[:3], b'{"eebench": "trajectory/1", "id": "bad", "steps": [{"action": "up"}]}',
                       b'{"eebench": "trajectory/1", "id": "x", "instance": "t/bare", "steps": [{"action": "up"},]}',
                       *good[3:]]) + b"\n"
    whole, bare = grade_both_ways(tmp_path, text, monkeypatch)
    assert whole == bare and "runs.jsonl:4" in whole and "instance" in whole
    whole, bare = grade_both_ways(tmp_path, text, monkeypatch, skip_invalid=True)
    assert whole == bare and len(whole[0]) == 2 and len(whole[2]) == 6 * 30


def test_a_large_run_of_logged_steps_never_imports_the_scanner(tmp_path: Path) -> None:
    """Lines whose steps carry text are never read bare: counting them toward COMPACT_FROM_STEPS only paid for
    numba's import (a third of a second) in a run of text-game logs."""
    import subprocess
    import sys

    steps = [{"action": "go", "observation": f"-= Room {k % 7} =-"} for k in range(1000)]
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps({"eebench": "trajectory/1", "id": f"t{i}", "instance": "tw/x",
                                        "env": "logged", "steps": steps}) + "\n"
                            for i in range(2 * grade.COMPACT_FROM_STEPS // 1000)))
    code = ("import sys; from pathlib import Path; from eebench.evaluator import grade_files; "
            f"r = grade_files([Path({str(runs)!r})], None, Path({str(tmp_path / 'r.duckdb')!r})); "
            "print(r.steps, 'numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [str(2 * grade.COMPACT_FROM_STEPS), "False"]


@pytest.mark.parametrize("n", [30, 150, 2_000])
def test_steps_of_empty_actions_are_all_read(n: int) -> None:
    # {"action":""} is 13 bytes, under the 15 of {"action":null} the arrays were sized for: a chunk of mostly such
    # steps lost its last ones, or wrote past the arrays (a crash)
    lines = [orjson.dumps(trajectory(k, [{"action": ""}] * n)) + b"\n" for k in range(5)]
    for line, doc in zip(lines, loads_bare(lines)):
        assert doc is not None and {**doc, "steps": list(doc["steps"])} == loads_json(line)


def test_a_steps_array_longer_than_the_room_left_is_left_to_the_door() -> None:
    import numpy as np

    from eebench.evaluator.bare_steps import scan

    text = np.frombuffer(b'[{"action":"up"},{"action":""}][{"action":"up"},{"action":"up"}]', dtype=np.uint8)
    starts, ends = np.array([0, 31]), np.array([31, text.size])
    kinds, at, until, counts = (np.zeros(3, np.int8), np.zeros(3, np.int32), np.zeros(3, np.int32),
                                np.zeros(2, np.int64))
    assert scan(text, starts, ends, kinds, at, until, counts) == 2 and counts.tolist() == [2, -1]
