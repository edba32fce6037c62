"""Streaming the JSON values of a log file with their locations, for the adapters of JSON-based formats.

A file is read as JSON Lines (one value per line), as a JSON array whose items are streamed one at a time (so a
tau-bench results file of any size stays flat in memory), or as one JSON document (read whole, up to
MAX_DOCUMENT_BYTES). Errors are located: `file:line` for a line, `record N` for an array item.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import ijson
import orjson

from eebench.adapters.base import HEAD_BYTES, Episode, bad_record
from eebench.documents import (
    BOM,
    MAX_DEPTH,
    MAX_LINE_BYTES,
    DepthGauge,
    JsonLimitError,
    decode_utf8,
    json_problem,
    json_type,
    loads_json,
    open_input,
    read_bytes,
    tree_problem,
)
from eebench.errors import InputError, quote
from eebench.pieces import WHOLE, Span

MAX_DOCUMENT_BYTES = 1 << 30   # a whole-document log above this is refused, not loaded


# The one JSON door (orjson's speed, the standard library's words for errors, every limit of a document).
loads = loads_json


def dumps_line(document: Any) -> bytes:
    """One JSON Lines record: compact, UTF-8, key order as built."""
    try:
        return orjson.dumps(document, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # what orjson declines (integers beyond 64 bits): the standard library writes it
        return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class JsonRecord(NamedTuple):
    """One JSON value of a file: `line` (1-based) for JSON Lines, `index` (0-based) always."""

    line: int | None
    index: int
    value: Any
    in_array: bool = False   # an item of a top-level JSON array
    typed: Any = None        # what an adapter's fast reader made of the line beside its value (see json_lines)


# An adapter's fast reader of one JSON line: (the value, what it typed of it), or None to leave the line to the
# exact door. It may answer only where `loads` would give that very value.
FastReader = Callable[[bytes], tuple[Any, Any] | None]


def head_value(head: bytes) -> str:
    """The first non-space character of a file's head ('' when empty), to tell `[`, `{` and text apart."""
    stripped = head.removeprefix(BOM).lstrip()
    return chr(stripped[0]) if stripped else ""


def csv_table(path: Path, columns: tuple[str, ...], required: tuple[str, ...], *, table: str = "",
              escapechar: str | None = None, header_out: list[str] | None = None
              ) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of a CSV log with a header (read by column name), each with the line it starts at, decoded line
    by line; InputError at the first bad one. `table` names the format in messages (e.g. "BALROG ");
    `header_out`, when given, receives the header's names."""
    # Windows line ends read as `\n`, inside a quoted value too (csv keeps them there): a value reads as the
    # same text whichever system wrote the table
    lines = (decode_utf8(raw[:-2] + b"\n" if raw.endswith(b"\r\n") else raw, str(path), line=number)
             for number, raw in binary_lines(path))
    reader = csv.reader(lines, escapechar=escapechar, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise bad_record(path, f"empty file; expected a {table}step table with columns {', '.join(columns)}",
                             line=1)
        if header_out is not None:
            header_out[:] = header
        missing = [name for name in required if name not in header]
        if missing:
            raise bad_record(path, f"expected {table}columns {', '.join(columns)}; found {quote(', '.join(header))} "
                                   f"(no {', '.join(missing)})", line=1)
        twice = next((name for name in columns if header.count(name) > 1), None)
        if twice is not None:   # (one of the two columns would be read, silently; others are never read)
            raise bad_record(path, f"the column {twice!r} is named twice in the header", line=1)
        start = reader.line_num + 1
        for row in reader:
            if len(row) != len(header):
                raise bad_record(path, f"expected {len(header)} values ({', '.join(header)}), found {len(row)}",
                                 line=start)
            yield start, dict(zip(header, row, strict=True))
            start = reader.line_num + 1
    except csv.Error as exc:
        reason = "truncated: a quoted value is not closed" if "unexpected end of data" in str(exc) else str(exc)
        raise bad_record(path, f"malformed CSV ({reason})", line=reader.line_num) from None


def skip_bom(handle: io.BufferedReader) -> int:
    """Read past a UTF-8 byte order mark at the handle's start (some Windows tools write one first), as `documents`
    does for a document; the bytes read past. (`peek`: a pipe cannot seek back.)"""
    if handle.peek(len(BOM)).startswith(BOM):
        return len(handle.read(len(BOM)))
    return 0


def binary_lines(path: Path, limit: int = MAX_LINE_BYTES, span: Span = WHOLE) -> Iterator[tuple[int, bytes]]:
    """The file's lines (1-based number, bytes with their line end), one at a time, of the whole file or of a
    `span` of it (cut at line starts, see `eebench.pieces`); a line above `limit` bytes is refused, not loaded. A
    byte order mark before the first line is read past."""
    with open_input(path) as opened:
        # a 1 MiB buffer: lines of agent logs run to tens of KB, which the default 8 KiB one reads in pieces (4x slower)
        handle = io.BufferedReader(opened.raw, buffer_size=1 << 20) if isinstance(opened, io.BufferedReader) else opened
        if span.start:
            handle.seek(span.start)
        skipped = 0 if span.start else skip_bom(handle)
        left = span.end - span.start - skipped if span.end is not None else -1   # bytes of the span not read yet
        for number, raw in enumerate(iter(lambda: handle.readline(limit + 1), b""), start=span.line):
            if len(raw) > limit:
                size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"
                raise InputError.at(str(path), f"a line longer than {size}; expected a log of lines", line=number)
            yield number, raw
            if left >= 0:
                left -= len(raw)
                if left <= 0:
                    return


def json_lines(path: Path, fast: FastReader | None = None, span: Span = WHOLE) -> Iterator[JsonRecord | InputError]:
    """One value per non-blank line (of the file, or of a `span` of it); a line that is not UTF-8 JSON is yielded
    as its located InputError. A `fast` reader is asked first; a line it leaves goes through the one door."""
    index = span.record
    for number, raw in binary_lines(path, span=span):
        if raw.isspace():   # blank (a line from readline is never empty), without a stripped copy
            continue
        read = fast(raw) if fast is not None else None
        if read is not None:
            yield JsonRecord(number, index, read[0], typed=read[1])
            index += 1
            continue
        try:
            value = loads(raw)
        except UnicodeDecodeError:
            try:
                decode_utf8(raw, str(path), line=number)
            except InputError as exc:
                yield exc
        except json.JSONDecodeError as exc:
            yield bad_record(path, json_problem(exc), line=number)
        else:
            yield JsonRecord(number, index, value)
        index += 1


def json_document(path: Path) -> Any:
    """The one JSON value of a file, read whole; InputError (located) when it is too large or not JSON."""
    size = path.stat().st_size if path.is_file() else 0
    if size > MAX_DOCUMENT_BYTES:
        raise InputError.at(str(path), f"{size / (1 << 30):.1f} GiB is more than the {MAX_DOCUMENT_BYTES >> 30} GiB "
                                       "a single JSON document may be; write it as JSON Lines to stream it")
    data = read_bytes(path, MAX_DOCUMENT_BYTES)  # bounded again: a pipe has no size to check first
    text = decode_utf8(data.removeprefix(BOM), str(path))
    try:
        return loads_json(text)
    except JsonLimitError as exc:
        raise InputError.at(str(path), json_problem(exc)) from None
    except json.JSONDecodeError as exc:
        raise InputError.at(str(path), _why_not_json(text, exc), line=exc.lineno) from None


def _why_not_json(text: str, exc: json.JSONDecodeError) -> str:
    return f"{'truncated JSON' if _cut_short(text) else f'malformed JSON: {exc.msg}'} (column {exc.colno})"


def broken_json(data: bytes) -> tuple[int, str] | None:
    """Where a whole file that opens like JSON does not parse, as one document or as JSON Lines (whose first line
    parses alone): (line, reason); None when it parses, or does not open like JSON, or is not UTF-8."""
    try:
        text = data.removeprefix(BOM).decode()
    except UnicodeDecodeError:
        return None
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        loads_json(text)
        return None
    except json.JSONDecodeError as exc:
        whole = exc
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    for k, (number, line) in enumerate(lines):
        try:
            loads_json(line)
        except json.JSONDecodeError as exc:
            return (number, _why_not_json(line, exc)) if k else (whole.lineno, _why_not_json(text, whole))
    return None   # JSON Lines, every line whole


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _cut_short(text: str) -> bool:
    """Whether JSON text ends inside a string or with brackets still open: a file cut off, not a typo."""
    skeleton = _STRING.sub("", text)
    if '"' in skeleton:
        return True
    return skeleton.count("{") + skeleton.count("[") > skeleton.count("}") + skeleton.count("]")


def json_array_items(path: Path, prefix: str = "item") -> Iterator[JsonRecord | InputError]:
    """The items of a top-level JSON array, streamed; a syntax error ends the file with a located InputError.

    `prefix` names another array in ijson's notation (`samples.item`: the items of the top-level `samples`).
    """
    index = 0
    parser = ijson.get_backend("python") if _lone_surrogate_escapes(path) else ijson
    with open_input(path) as handle:
        skip_bom(handle)
        try:
            for value in parser.items(DepthBoundedReader(handle), prefix, use_float=True):
                problem = tree_problem(value)
                if problem:
                    raise JsonLimitError(problem)
                yield JsonRecord(None, index, value, in_array=True)
                index += 1
        except (ijson.JSONError, UnicodeDecodeError, ValueError) as exc:  # ValueError: an int over 4300 digits
            said = str(exc).lower()
            if isinstance(exc, JsonLimitError):
                reason = json_problem(exc)
            elif isinstance(exc, UnicodeDecodeError) or "utf8" in said or "utf-8" in said:
                reason = "not UTF-8 text"   # yajl reports bad bytes as a lexical error
            elif "digits" in said:
                reason = "refused JSON: an integer of more than 4300 digits"
            elif "incomplete" in said or "premature" in said:
                reason = "truncated JSON"
            else:
                reason = f"malformed JSON ({str(exc).splitlines()[0][:80]})"
            raise bad_record(path, f"{reason}; {index} records before it were read", record=index) from None


# A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or one of those not after one of the first: a lone
# surrogate, which ijson's C parser turns into '?' (its Python parser keeps it, and it is refused as in any document)
_LONE_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|"
                             rb"(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _lone_surrogate_escapes(path: Path) -> bool:
    """Whether a file may hold a lone surrogate escape (one pass of a regex; a false alarm costs only speed)."""
    tail = b""
    with open_input(path) as handle:
        while chunk := handle.read(1 << 20):
            data = tail + chunk
            if _LONE_SURROGATE.search(data):
                return True
            tail = data[-12:]
    return False


class DepthBoundedReader:
    """A binary file whose reads stop with JsonLimitError once the JSON in it nests deeper than MAX_DEPTH: ijson
    would otherwise build prefixes that grow with the square of the depth (40,000 levels took 3.9 GB)."""

    def __init__(self, handle: Any):
        self._handle = handle
        self._gauge = DepthGauge()
        self._too_deep = False

    def read(self, size: int = -1) -> bytes:
        if self._too_deep:
            raise JsonLimitError(f"nested more than {MAX_DEPTH} levels deep")
        data = self._handle.read(size)
        if not self._gauge.feed(data):   # the text before the place goes to the parser first: its items are read
            self._too_deep = True
            if self._gauge.too_deep_at > 0:   # (an empty read would end the text: refused now)
                return data[:self._gauge.too_deep_at]
            raise JsonLimitError(f"nested more than {MAX_DEPTH} levels deep")
        return data


def json_records(path: Path, fast: FastReader | None = None) -> Iterator[JsonRecord | InputError]:
    """The records of a JSON log however it is laid out: JSON Lines, a JSON array (streamed), or one document
    (see `is_json_lines`)."""
    if is_json_lines(path):
        yield from json_lines(path, fast)
        return
    with open_input(path) as handle:
        head = handle.read(HEAD_BYTES).removeprefix(BOM).lstrip()
    if head_value(head) == "[":
        yield from json_array_items(path)
    else:
        yield JsonRecord(None, 0, json_document(path))


def is_json_lines(path: Path) -> bool:
    """Whether a JSON log is JSON Lines: a .jsonl file, or a file whose first line is a complete JSON value with
    more lines after it (whatever its suffix). Judged from the first HEAD_BYTES, so a compact one-line array of any
    size starts streaming at once."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return True
    with open_input(path) as handle:
        head = handle.read(HEAD_BYTES).removeprefix(BOM).lstrip()
    first, newline, rest = head.partition(b"\n")
    return bool(newline and rest.strip()) and _is_json(first)


def _is_json(line: bytes) -> bool:
    try:
        loads(line)
    except ValueError:
        return False
    return True


def bad_item(path: Path, item: JsonRecord, message: str, field: str | None = None) -> InputError:
    """An InputError located at one record of a JSON log: its line in JSON Lines, else its index."""
    return bad_record(path, message, line=item.line, record=item.index, field=field)


def expect_mapping(path: Path, record: JsonRecord, what: str) -> dict[str, Any]:
    """The record's value when it is a JSON object; else a located InputError naming what was expected."""
    if isinstance(record.value, dict):
        return record.value
    raise bad_record(path, f"expected {what}, found {json_type(record.value)}", line=record.line,
                     record=record.index)


def document_episode(path: Path, read: Callable[[Path, Any], Episode]) -> Iterator[Episode | InputError]:
    """The one episode of a log that is one JSON document (`read` turns the document into it), or the located
    InputError that stops it."""
    try:
        yield read(path, json_document(path))
    except InputError as exc:
        yield exc


def object_with_list(path: Path, document: Any, key: str, what: str) -> dict[str, Any]:
    """The document when it is an object holding a list under `key`; else a located InputError naming `what`."""
    if isinstance(document, dict) and isinstance(document.get(key), list):
        return document
    found = f"an object without a `{key}` list" if isinstance(document, dict) else json_type(document)
    raise bad_record(path, f"expected {what} (an object with a `{key}` list), found {found}", record=0)


def grouped_records(path: Path, key: Callable[[Any], Hashable | None]) -> Iterator[list[JsonRecord] | InputError]:
    """The records of a JSON log grouped by `key` (a trace, a trial), each group given when its last record is read.

    Two passes: the first notes where each group ends, the second holds only the groups still open, so records of
    a group need not be adjacent (run exports interleave traces) and memory stays flat when they mostly are. A
    record whose key is None comes alone, for the adapter to report.
    """
    last: dict[Hashable, int] = {}
    try:
        for item in json_records(path):
            if isinstance(item, JsonRecord) and (group := key(item.value)) is not None:
                last[group] = item.index
    except InputError:
        pass  # the second pass meets the same error at the same place and raises it there
    open_groups: dict[Hashable, list[JsonRecord]] = {}
    for item in json_records(path):
        if isinstance(item, InputError):
            yield item
            continue
        group = key(item.value)
        if group is None:
            yield [item]
            continue
        open_groups.setdefault(group, []).append(item)
        if last.get(group) == item.index:
            yield open_groups.pop(group)
