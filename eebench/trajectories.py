"""Canonical trajectories (trajectory/1): stream them from JSONL with located errors, and check the fields that
grading relies on. `eebench validate` checks the full JSON Schema; the grader's check is the fast subset below,
so a file `validate` accepts always grades.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from eebench.documents import (
    BOM,
    LONG_LINE_BYTES,
    MAX_LINE_BYTES,
    JsonLimitError,
    decode_utf8,
    document_kind,
    enum_problem,
    json_problem,
    json_type,
    loads_json,
    open_input,
    parse_text,
    read_text,
    scalar_problem,
)
from eebench.errors import InputError, Problem, quoted
from eebench.long_lines import StepList, loads_long

KIND = "trajectory/1"
# the fields the grader reads that the schema types without null, and what they expect
_NOT_NULL = {"instance_sha256": "64 lowercase hex digits", "env": "a world kind (`eebench list`), or no env",
             "agent": "a mapping"}
EMPTY_EXPECTED = "trajectory/1 records (`eebench convert` makes them from agents' logs)"
AGENT_LABELS = ("name", "model", "prompt", "harness")
_STEP_TYPES = frozenset({dict})
_ACTION_TYPES = frozenset({str, type(None)})
_ACTION = itemgetter("action")
_SHA256 = re.compile("[0-9a-f]{64}")
CONVERT_HINT = " (an agent's log? `eebench convert` makes trajectories from it)"


class Record(NamedTuple):
    """One parsed JSON value and where it came from."""

    file: str
    line: int | None   # 1-based line in a .jsonl file; None for a .json document
    index: int         # 0-based position of the record in its file
    value: Any
    in_list: bool = False  # one item of a .json list: fields are named "[index].field"


def read_raw_records(path: Path | str, *, start: int = 0, end: int | None = None, line: int = 1,
                     index: int = 0) -> Iterator[Record]:
    """Stream records without parsing JSON lines yet (`parse_record` does, possibly in another process).

    A .jsonl file yields one record per non-blank line, its value the line's bytes, so memory does not grow with
    the file. A .json file holds one trajectory object or a list of them and is parsed whole. `start` and `end`
    read only the lines of a .jsonl file from byte `start` (a line start: line `line`, record `index`) to byte
    `end`, a piece of the file (grade --workers).
    """
    path = Path(path)
    file = str(path)
    if path.suffix.lower() == ".json":
        value = parse_text(read_text(path), file, yaml_syntax=False)
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield Record(file, None, i, item, in_list=True)
        else:
            yield Record(file, None, 0, value)
        return
    handle = sys.stdin.buffer if file == "-" else open_input(path)  # `-`: standard input, as JSON Lines
    with handle:
        if start:
            handle.seek(start)
        position = start
        # readline with a bound: a file without line breaks (/dev/zero through a pipe) is refused, not loaded
        for number, raw in enumerate(iter(lambda: b"" if end is not None and position >= end
                                          else _read_line(handle), b""), start=line):
            position += len(raw)
            if len(raw) > MAX_LINE_BYTES:
                raise InputError.at(file, f"a line longer than {MAX_LINE_BYTES >> 20} MiB; expected one "
                                          "trajectory per line", line=number)
            if not raw.isspace():  # (not strip: it would copy a long line)
                yield Record(file, number, index, raw)
                index += 1


def _read_line(handle: Any) -> bytes | bytearray:
    """The next line (b"" at the end), at most MAX_LINE_BYTES + 1 bytes. A line longer than LONG_LINE_BYTES (one
    trajectory of hundreds of thousands of steps) comes as a bytearray holding it once: in a file, its end is found
    first and it is read into place (a readline of it would hold it twice); from a pipe, it is gathered a mebibyte
    at a time."""
    raw = handle.readline(LONG_LINE_BYTES + 1)
    if len(raw) <= LONG_LINE_BYTES or raw.endswith(b"\n"):
        return raw
    if not handle.seekable():
        line = bytearray(raw)
        while len(line) <= MAX_LINE_BYTES and not line.endswith(b"\n"):
            more = handle.readline(min(1 << 20, MAX_LINE_BYTES + 1 - len(line)))
            if not more:
                break
            line += more
        return line
    start = handle.tell() - len(raw)
    length = len(raw)
    while length <= MAX_LINE_BYTES:
        more = handle.readline(min(1 << 20, MAX_LINE_BYTES + 1 - length))
        length += len(more)
        if not more or more.endswith(b"\n"):
            break
    handle.seek(start)
    line = bytearray(length)
    view, got = memoryview(line), 0
    while got < length and (n := handle.readinto(view[got:])):
        got += n
    view.release()
    del line[got:]   # (a file cut short meanwhile)
    return line


def parse_record(record: Record, *, compact: bool = False) -> Record:
    """The record with its JSON line parsed; InputError at file:line when it is not UTF-8 JSON.

    `compact` (the grader): the steps of a line longer than LONG_LINE_BYTES are read as a StepList (see
    `long_lines`), so one trajectory of millions of steps does not become millions of dicts at once; the line's
    buffer is then emptied (a record is parsed once), so it is not held while the trajectory is graded."""
    if isinstance(record.value, bytearray):
        if compact:
            parsed = loads_long(record.value)
            if parsed is not None:
                record.value.clear()
                return record._replace(value=parsed)
        record = record._replace(value=bytes(record.value))
    if not isinstance(record.value, bytes):
        return record
    try:
        # without its line break, so an error at the end of the line gets its own column, not "1"
        return record._replace(value=loads_json(record.value.rstrip(b"\r\n")))
    except UnicodeDecodeError:
        decode_utf8(record.value, record.file, line=record.line)  # raises, locating the first bad byte
        raise
    except json.JSONDecodeError as exc:
        # a first line that is not JSON: a log, not trajectories (JSON refused for its content, or a byte order
        # mark, is not that)
        log = record.index == 0 and not isinstance(exc, JsonLimitError) and not record.value.startswith(BOM)
        hint = CONVERT_HINT if log else ""
        raise InputError.at(record.file, json_problem(exc) + hint, line=record.line) from None


def read_records(path: Path | str, errors: list[Problem] | None = None) -> Iterator[Record]:
    """Stream parsed JSON values: one per non-blank line of a .jsonl file, or the value(s) of a .json file.

    A line that is not JSON raises InputError, or, when an `errors` list is given, is added to it and skipped so
    the rest can still be read.
    """
    for record in read_raw_records(path):
        try:
            parsed = parse_record(record)
        except InputError as exc:
            if errors is None:
                raise
            errors.extend(p for p in exc.problems if isinstance(p, Problem))
            continue
        yield parsed


def check_trajectory(record: Record) -> dict[str, Any]:
    """The record as a trajectory document, or InputError naming file, line, field and what was expected."""
    doc = record.value
    file, line = record.file, record.line

    def fail(field: str | None, message: str) -> InputError:
        if record.in_list:
            field = f"[{record.index}]" + (f".{field}" if field else "")
        return InputError(Problem(file, line, field, message))

    if not isinstance(doc, dict):
        raise fail(None, f"expected a {KIND} record, found {json_type(doc)}{CONVERT_HINT}")
    if doc.get("eebench") is None:
        found = "missing" if "eebench" not in doc else "null"
        raise fail("eebench", f"{found}; expected a {KIND} record{CONVERT_HINT}")
    if doc.get("eebench") != KIND:
        kind, version = document_kind(doc, file, line=line)
        found = f"{kind}/{version}"
        if found == KIND:   # the same kind and version written otherwise: shown as written (not a contradiction)
            found = quoted(doc["eebench"])
        raise fail("eebench", f"expected {KIND}, found {found}")
    for name in ("id", "instance"):
        value = doc.get(name)
        if name not in doc:   # (given as null it is not missing: the check below names the null)
            raise fail(name, "missing required field")
        if not isinstance(value, str) or not value:
            found = "an empty string" if value == "" else json_type(value)  # ("found a string" read as a contradiction)
            raise fail(name, f"expected a non-empty string, found {found}")
    for name, expected in _NOT_NULL.items():   # read by the grader: given, the schema allows no null (validate)
        if name in doc and doc[name] is None:
            raise fail(name, f"expected {expected}, found null")
    env = doc.get("env")
    if env is not None and (type(env) is not str or env not in _env_rule()["enum"]):   # before any --bench lookup
        raise fail("env", enum_problem(env, _env_rule()["enum"]))
    sha = doc.get("instance_sha256")
    if sha is not None and (not isinstance(sha, str) or not _SHA256.fullmatch(sha)):   # (as the schema's pattern)
        raise fail("instance_sha256", f"expected {_NOT_NULL['instance_sha256']}, found {quoted(sha)}")
    agent = doc.get("agent")
    if agent is not None:
        if not isinstance(agent, dict):
            raise fail("agent", f"expected a mapping, found {json_type(agent)}")
        for label in AGENT_LABELS:
            if agent.get(label) is not None and not isinstance(agent[label], str):
                raise fail(f"agent.{label}", f"expected a string, found {json_type(agent[label])}")
    steps = doc.get("steps")
    if "steps" not in doc:
        raise fail("steps", "missing required field")
    if type(steps) is StepList:   # a long line's: only the steps kept as read can be wrong
        _check_steps(sorted(steps.others.items()), fail)
        return doc
    if not isinstance(steps, list):
        raise fail("steps", f"expected a list, found {json_type(steps)}")
    # the common case checked in two C-level passes; any doubt goes to the loop below, which locates the problem
    if _STEP_TYPES.issuperset(map(type, steps)):
        with contextlib.suppress(KeyError):  # a step without an action
            if _ACTION_TYPES.issuperset(map(type, map(_ACTION, steps))):
                return doc
    _check_steps(enumerate(steps), fail)
    return doc


def _check_steps(steps: Iterable[tuple[int, Any]], fail: Callable[[str, str], InputError]) -> None:
    """Each (position, step), in order: a mapping with an action, a string or null."""
    for i, step in steps:
        if type(step) is not dict:
            raise fail(f"steps[{i}]", f"expected a mapping with an action, found {json_type(step)}")
        if "action" not in step:
            raise fail(f"steps[{i}].action", "missing required field")
        action = step["action"]
        if action is not None and type(action) is not str:
            raise fail(f"steps[{i}].action", f"expected a string or null, found {json_type(action)}")


def iter_trajectories(path: Path | str) -> Iterator[tuple[Record, dict[str, Any]]]:
    for record in read_records(path):
        yield record, check_trajectory(record)


USAGE_FIELDS = ("tokens_in", "tokens_out", "latency_ms")


@functools.cache
def _env_rule() -> dict[str, Any]:
    """The trajectory schema's rule of `env` (its enum of world kinds)."""
    from eebench.documents import load_schema

    return load_schema("trajectory")["properties"]["env"]


@functools.cache
def _usage_rules() -> dict[str, dict[str, Any]]:
    """The trajectory schema's rule of each usage field of a step (its type and bounds)."""
    from eebench.documents import load_schema

    step = load_schema("trajectory")["$defs"]["step"]["properties"]
    return {key: step[key] for key in USAGE_FIELDS}


@functools.cache
def _usage_bounds() -> dict[str, tuple[tuple[type, ...], float, float]]:
    """Each usage field's rule as the types and bounds a step's value is checked against fast."""
    return {key: ((int,) if "integer" in rule["type"] else (int, float), rule.get("minimum", -math.inf),
                  rule.get("maximum", math.inf)) for key, rule in _usage_rules().items()}


def usage_bound(key: str) -> float:
    """The trajectory schema's maximum of a step's usage field (`tokens_in`, `tokens_out`, `latency_ms`)."""
    return _usage_bounds()[key][2]


_BIGINT_LIMIT = 1 << 63
_USAGE_KEYS = frozenset(USAGE_FIELDS)


def usage_totals(steps: list[dict[str, Any]], file: str, line: int | None) -> dict[str, int | float | None]:
    """Totals of the steps' token and latency fields; None where no step carries the field (not zero)."""
    totals: dict[str, int | float | None] = dict.fromkeys(USAGE_FIELDS)
    if type(steps) is StepList:   # a long line's: only the steps kept as read hold more than an action
        if not steps.others:   # (each line of a large run read bare)
            return totals
        numbered: Iterable[tuple[int, dict[str, Any]]] = sorted(steps.others.items())
    elif {1}.issuperset(map(len, steps)):  # only actions, the common case: checked in one C-level pass
        return totals
    elif _USAGE_KEYS.isdisjoint(chain.from_iterable(steps)):   # no step says its usage: every key seen in C
        return totals
    else:
        numbered = enumerate(steps)
    bounds = _usage_bounds()
    for i, step in numbered:
        if len(step) == 1:  # just the action: the common case, skipped fast
            continue
        for key in USAGE_FIELDS:
            value = step.get(key)
            if value is None:
                continue
            kinds, low, high = bounds[key]
            if type(value) not in kinds or not low <= value <= high:   # the schema's rule, as validate applies it
                raise InputError(Problem(file, line, f"steps[{i}].{key}", scalar_problem(
                    value, _usage_rules()[key]) or f"expected a finite number, found {value!r}"))
            totals[key] = (totals[key] or 0) + value
    for key, total in totals.items():  # the sums go to BIGINT and DOUBLE columns: refused here, not at insert
        if total is not None and not (-_BIGINT_LIMIT <= total < _BIGINT_LIMIT and math.isfinite(total)):
            raise InputError(Problem(file, line, f"steps[].{key}", f"the steps' {key} sum to more than the results "
                                     "table holds (token counts below 2^63, a finite latency)"))
    return totals
