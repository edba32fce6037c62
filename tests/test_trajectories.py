"""trajectory/1 records: streaming JSONL with located errors, and the grader's fast check of the fields it needs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from eebench.errors import InputError, Problem
from eebench.trajectories import Record, check_trajectory, iter_trajectories, read_records
from tests.conftest import write_json, write_jsonl

GOOD = {"eebench": "trajectory/1", "id": "run/1", "instance": "i/1", "steps": [{"action": "up"}, {"action": None}]}


def exactly(*lines: str) -> str:
    return "^" + re.escape("\n".join(lines)) + "$"


def test_read_records_streams_a_jsonl_file_skipping_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n   \n[2]\n"three"\n', "utf-8")
    assert list(read_records(path)) == [Record(str(path), 1, 0, {"a": 1}), Record(str(path), 4, 1, [2]),
                                        Record(str(path), 5, 2, "three")]


def test_read_records_of_a_json_file_holding_one_object_or_a_list(tmp_path: Path) -> None:
    one = write_json(tmp_path / "one.json", GOOD)
    many = write_json(tmp_path / "many.json", [GOOD, GOOD])
    assert list(read_records(one)) == [Record(str(one), None, 0, GOOD)]
    assert list(read_records(many)) == [Record(str(many), None, i, GOOD, in_list=True) for i in range(2)]


def test_a_malformed_line_raises_or_is_collected(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": \n{"b": 2}\n"caf\xe9"\n[3]\n')
    with pytest.raises(InputError, match=exactly(f"{path}:2: malformed JSON: Expecting value (column 7)")):
        list(read_records(path))
    errors: list[Problem] = []
    assert [r.value for r in read_records(path, errors=errors)] == [{"a": 1}, {"b": 2}, [3]]
    assert [str(p) for p in errors] == [f"{path}:2: malformed JSON: Expecting value (column 7)",
                                        f"{path}:4: not UTF-8 text (byte 0xe9)"]


def test_missing_trajectory_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=exactly(f"{tmp_path / 'x.jsonl'}: no such file")):
        list(read_records(tmp_path / "x.jsonl"))
    (tmp_path / "d.jsonl").mkdir()
    with pytest.raises(InputError, match=exactly(f"{tmp_path / 'd.jsonl'}: is a folder, expected a file")):
        list(read_records(tmp_path / "d.jsonl"))


def test_check_trajectory_accepts_the_minimal_and_the_full_form(tmp_path: Path) -> None:
    full = {**GOOD, "instance_sha256": "a" * 64, "env": "grid_dag",
            "agent": {"name": "gpt-x", "model": "m", "prompt": "exploration", "harness": None},
            "steps": [{"action": "up", "raw": "...", "reasoning": "r", "tokens_in": 812, "tokens_out": 40,
                       "latency_ms": 900}], "extra": {"kept": True}}
    path = write_jsonl(tmp_path / "t.jsonl", [GOOD, full])
    assert [doc for _, doc in iter_trajectories(path)] == [GOOD, full]


def change(**changes: Any) -> dict[str, Any]:
    doc = {**GOOD}
    for key, value in changes.items():
        if value is KeyError:
            del doc[key]
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize("value, field, message", [
    ([1], None, "expected a trajectory/1 record, found a list (an agent's log? `eebench convert` makes trajectories from it)"),
    (change(eebench="trajectory/2"), "eebench",
     "trajectory/2 is newer than this eebench reads (trajectory/1); upgrade eebench"),
    (change(eebench="instance/1"), "eebench", "expected trajectory/1, found instance/1"),
    # the same kind and version written otherwise: shown as written (quoted), not "found trajectory/1"
    (change(eebench="trajectory/01"), "eebench", "expected trajectory/1, found 'trajectory/01'"),
    (change(eebench="trajectory/1\n"), "eebench", r"expected 'kind/N' (e.g. 'instance/1'), found 'trajectory/1\\n'"),
    (change(eebench=KeyError), "eebench", "missing; expected a trajectory/1 record (an agent's log? `eebench "
                                          "convert` makes trajectories from it)"),
    (change(eebench=None), "eebench", "null; expected a trajectory/1 record (an agent's log? `eebench convert` "
                                      "makes trajectories from it)"),
    (change(id=KeyError), "id", "missing required field"),
    (change(instance=""), "instance", "expected a non-empty string, found an empty string"),
    (change(id=""), "id", "expected a non-empty string, found an empty string"),
    (change(instance=7), "instance", "expected a non-empty string, found an integer"),
    (change(instance_sha256="abc"), "instance_sha256", "expected 64 lowercase hex digits, found 'abc'"),
    (change(instance_sha256="A" * 64), "instance_sha256", "expected 64 lowercase hex digits, found '" + "A" * 64 + "'"),
    (change(agent="gpt"), "agent", "expected a mapping, found a string"),
    (change(agent={"model": 4}), "agent.model", "expected a string, found an integer"),
    # given as null, the fields the grader reads are refused as validate refuses them (it graded them as absent)
    (change(agent=None), "agent", "expected a mapping, found null"),
    (change(env=None), "env", "expected a world kind (`eebench list`), or no env, found null"),
    (change(instance_sha256=None), "instance_sha256", "expected 64 lowercase hex digits, found null"),
    (change(steps=KeyError), "steps", "missing required field"),
    # present but null is not missing (validate: "expected ..., found null")
    (change(id=None), "id", "expected a non-empty string, found null"),
    (change(instance=None), "instance", "expected a non-empty string, found null"),
    (change(steps=None), "steps", "expected a list, found null"),
    (change(steps={"action": "up"}), "steps", "expected a list, found a mapping"),
    (change(steps=[{"action": "up"}, "up"]), "steps[1]", "expected a mapping with an action, found a string"),
    (change(steps=[{"raw": "up"}]), "steps[0].action", "missing required field"),
    (change(steps=[{"action": ["up"]}]), "steps[0].action", "expected a string or null, found a list"),
])
def test_check_trajectory_names_line_field_and_reason(value: Any, field: str | None, message: str) -> None:
    where = f"t.jsonl:4: {field}: " if field else "t.jsonl:4: "
    with pytest.raises(InputError, match=exactly(where + message)):
        check_trajectory(Record("t.jsonl", 4, 3, value))


def test_check_trajectory_in_a_json_list_names_the_item() -> None:
    with pytest.raises(InputError, match=exactly("t.json: [2].steps: missing required field")):
        check_trajectory(Record("t.json", None, 2, change(steps=KeyError), in_list=True))
