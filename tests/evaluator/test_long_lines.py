"""One long trajectory read compactly (`eebench.long_lines`): the same grade, and the same errors, as a line parsed
whole; the StepList behaves as the list of steps it stands for."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench import trajectories
from eebench.errors import InputError
from eebench.evaluator import Bench, grade_files
from eebench.instances import write_instances
from eebench.long_lines import Actions, StepList, loads_long
from eebench.trajectories import parse_record, read_raw_records
from tests.conftest import make_instance, rows

ROOM = make_instance(map_rows=["....", ".#..", "...."], start=[0, 0],
                     nodes=[("A", [3, 0], []), ("G", [3, 2], [["A"]])], goal="G", budget=400,
                     instance_id="t/long")
WHOLE = trajectories.LONG_LINE_BYTES   # (a hypothesis test's monkeypatch lasts across its examples)
TABLES = ("SELECT * EXCLUDE (graded_at) FROM trajectories ORDER BY ALL", "SELECT * FROM steps ORDER BY ALL",
          "SELECT * FROM checkpoints ORDER BY ALL")

words = st.sampled_from(["up", "down", "left", "right", "Left ", "jump", None])
steps_strategy = st.lists(st.one_of(
    words.map(lambda w: {"action": w}),
    st.tuples(words, st.sampled_from(["explore", "act"]), st.integers(0, 10 ** 6)).map(
        lambda t: {"action": t[0], "phase": t[1], "tokens_in": t[2], "observation": "a \"quoted\" [room]"})),
    max_size=120)


def grade_both_ways(tmp: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The tables (or the error) of grading JSON Lines `text` with lines read whole, then with every line read
    compactly."""
    write_instances([ROOM], tmp / "bench", {"kind": "t"})
    runs = tmp / "runs.jsonl"
    runs.write_text(text)
    out = []
    for long_from in (WHOLE, 16):
        monkeypatch.setattr(trajectories, "LONG_LINE_BYTES", long_from)
        db = tmp / f"{long_from}.duckdb"
        try:
            grade_files([runs], Bench(tmp / "bench"), db)
        except InputError as exc:
            out.append(str(exc))
            assert not db.exists()
            continue
        out.append([rows(db, sql) for sql in TABLES])
    return out[0], out[1]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(steps_strategy, min_size=1, max_size=4))
def test_a_long_line_grades_as_a_line_read_whole(tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                 runs: list[list[dict[str, Any]]]) -> None:
    docs = [{"eebench": "trajectory/1", "id": f"r{k}", "instance": "t/long", "agent": {"name": "a", "model": "m"},
             "steps": steps} for k, steps in enumerate(runs)]
    text = "".join(json.dumps(doc) + "\n" for doc in docs)
    whole, compact = grade_both_ways(tmp_path_factory.mktemp("long"), text, monkeypatch)
    assert whole == compact and isinstance(whole, list) and whole[0]


@pytest.mark.parametrize("line", [
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": "up"}, 3]}',
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": 7}]}',
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"act": "up"}]}',
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": "up", "n": 12345678901234567890123}]}',
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": "\\ud800"}]}',
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": "up", "x": NaN}]}',
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": "up"}' + "]" * 3,
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": "up"}',
    '{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": "up"}], "meta": '
    + "[" * 120 + "]" * 120 + "}",
    '["not", "a", "trajectory"]',
])
def test_a_long_line_fails_as_a_line_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str) -> None:
    # what the compact reader doubts goes back to the one JSON door: the same value, or the same one-line error
    whole, compact = grade_both_ways(tmp_path, line + "\n", monkeypatch)
    assert whole == compact
    assert "runs.jsonl:1" in whole if isinstance(whole, str) else "1234567890123" in line   # (a valid big integer)


def test_invalid_utf8_in_a_long_line_is_the_doors_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(b'{"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": "u\xffp"}]}\n')
    errors = []
    for long_from in (WHOLE, 16):
        monkeypatch.setattr(trajectories, "LONG_LINE_BYTES", long_from)
        with pytest.raises(InputError) as caught:
            parse_record(next(read_raw_records(runs)), compact=True)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "UTF-8" in errors[0]


def test_long_lines_are_read_whole_from_files_and_pipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trajectories, "LONG_LINE_BYTES", 64)
    lines = [b'{"a": 1}', b"  ", b'{"steps": [' + b'{"action": "up"}, ' * 300 + b'{"action": null}]}', b'{"b": 2}',
             b'{"c": "' + b"x" * 500 + b'"}']
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(lines))   # (no line break at the end)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(path.read_bytes()))
    writer.start()
    piped = [(r.line, bytes(r.value)) for r in read_raw_records(fifo)]
    writer.join()
    filed = [(r.line, bytes(r.value)) for r in read_raw_records(path)]
    expected = [(1, lines[0] + b"\n"), (3, lines[2] + b"\n"), (4, lines[3] + b"\n"), (5, lines[4])]
    assert filed == piped == expected
    assert [type(r.value) for r in read_raw_records(path)] == [bytes, bytearray, bytes, bytearray]


def test_a_long_line_becomes_a_step_list_and_its_buffer_is_let_go() -> None:
    doc = {"eebench": "trajectory/1", "id": "x", "instance": "t/long",
           "steps": [{"action": "up"}, {"action": None}, {"action": "up", "phase": "act"}, {"action": "up"}]}
    data = bytearray(json.dumps(doc).encode())
    record = trajectories.Record("f.jsonl", 1, 0, data)
    parsed = parse_record(record, compact=True).value
    assert isinstance(parsed["steps"], StepList) and list(parsed["steps"]) == doc["steps"]
    assert parsed["steps"].actions[0] is parsed["steps"].actions[3]   # one string shared
    assert parsed["steps"].actions.codes.tolist() == [1, 0, 0, 1]   # (a null action, a step kept whole: 0)
    assert len(data) == 0
    assert {k: v for k, v in parsed.items() if k != "steps"} == {k: v for k, v in doc.items() if k != "steps"}
    assert loads_long(bytearray(b'{"id": 1e999}')) is None   # the door says what is wrong


@given(st.lists(st.one_of(words.map(lambda w: {"action": w}), st.just({"action": "up", "phase": "act"}),
                          st.just(3)), max_size=30),
       st.integers(-35, 35), st.integers(-35, 35), st.sampled_from([None, 1, 2, -1, -3]))
def test_a_step_list_is_the_list_it_stands_for(steps: list[Any], start: int, stop: int, step: int | None) -> None:
    others = {k: s for k, s in enumerate(steps) if not (type(s) is dict and s.keys() == {"action"})}
    compact = StepList([None if k in others else s["action"] for k, s in enumerate(steps)], others)
    assert list(compact) == steps and len(compact) == len(steps)
    assert list(compact[start:stop:step]) == steps[start:stop:step]
    for k in range(-len(steps), len(steps)):
        assert compact[k] == steps[k]
    with pytest.raises(IndexError):
        compact[len(steps)]
    assert compact.plain_actions() == (None if others else [s["action"] for s in steps])


def test_a_long_lines_actions_are_numbers_in_a_table_of_its_words() -> None:
    """2 bytes a step up to 65,536 table entries, then 4; every action, slice and index as the list gives it."""
    for distinct, width in ((300, 2), (70_000, 4)):
        actions = [None if k % 7 == 0 else f"w{k % distinct}" for k in range(2 * distinct)]
        doc = {"eebench": "trajectory/1", "id": "x", "instance": "t/long", "steps": [{"action": a} for a in actions]}
        steps = loads_long(bytearray(json.dumps(doc).encode()))["steps"]
        compact = steps.plain_actions()
        assert isinstance(compact, Actions) and compact.codes.itemsize == width
        assert list(compact) == actions and len(compact) == len(actions)
        assert list(compact[5:900:3]) == actions[5:900:3] and compact[-1] == actions[-1]
        assert list(steps) == doc["steps"]
        with pytest.raises(IndexError):
            compact[len(actions)]
