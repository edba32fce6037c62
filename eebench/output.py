"""Rows of a query as an aligned text table, CSV or JSON."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

FORMATS = ("table", "csv", "json")


def _plain(value: Any) -> Any:
    """A JSON-friendly value: dates as ISO text, decimals as floats, NaN and the infinities as null (strict JSON
    has neither)."""
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def json_keys(columns: Sequence[str]) -> list[str]:
    """The columns as keys of one JSON object: a name given again gets `_1` (`_2`, ... if that is taken), as DuckDB
    names repeats in a subquery; one key per name would keep only the last of the values (a join of steps and
    trajectories has two `ecc`)."""
    keys: list[str] = []
    for name in columns:
        key, n = name, 0
        while key in keys:
            n += 1
            key = f"{name}_{n}"
        keys.append(key)
    return keys


def _csv_field(value: Any) -> Any:
    """A CSV field: NULL empty, booleans as SQL and DuckDB's CSV write them (`true`, `false`), NaN and the
    infinities as it writes them too (`nan`, `inf`, `-inf`): JSON's null for them would read as a NULL here."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return value
    return _plain(value)


def _json_default(value: Any) -> str:
    """Values JSON has no type for (BLOB, INTERVAL, UUID, ...) as the text DuckDB shows for them."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in bytes(value))
    return str(value)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.6g}"
    return shown(str(_plain(value)))


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shown(text: str) -> str:
    """Text for a person to read in one line: control characters (a newline, a terminal's escape sequences) as
    escapes (`\\n`, `\\x1b`), so a label can neither break a table's layout nor drive the terminal."""
    return _CONTROL.sub(lambda m: _ESCAPES.get(m.group()) or _escape(ord(m.group())), text)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def format_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    if fmt == "json":
        keys = json_keys(columns)
        return json.dumps([{c: _plain(v) for c, v in zip(keys, row)} for row in rows], indent=2,
                          ensure_ascii=False, default=_json_default)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_csv_field(v) for v in row] for row in rows])
        return buffer.getvalue().rstrip("\n")
    widths, numeric = _layout(columns, rows)
    return "\n".join([*_table_head(columns, widths, numeric), *_table_rows(rows, widths, numeric), _count(len(rows))])


def _layout(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[list[int], list[bool]]:
    """Column widths, and which columns hold only numbers or NULL (aligned right), for a table of these rows."""
    widths = [max([len(shown(c))] + [len(_cell(row[i])) for row in rows]) for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(row[i] is None or (isinstance(row[i], (int, float)) and not isinstance(row[i], bool))
                                  for row in rows) for i in range(len(columns))]
    return widths, numeric


def _line(values: Sequence[str], widths: Sequence[int], numeric: Sequence[bool]) -> str:
    return "  ".join(v.rjust(w) if numeric[i] else v.ljust(w)
                     for i, (v, w) in enumerate(zip(values, widths))).rstrip()


def _table_head(columns: Sequence[str], widths: list[int], numeric: list[bool]) -> list[str]:
    return [_line([shown(c) for c in columns], widths, numeric), "  ".join("-" * w for w in widths)]


def _table_rows(rows: Iterable[Sequence[Any]], widths: list[int], numeric: list[bool]) -> Iterator[str]:
    """Table lines; a value wider than its column (a streamed row after the first batch) pushes the rest right."""
    return (_line([_cell(v) for v in row], widths, numeric) for row in rows)


def _count(n: int) -> str:
    return f"({n} row{'s' if n != 1 else ''})"


def stream_rows(columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]], fmt: str) -> Iterator[str]:
    """The text of format_rows in pieces, batch by batch, so a big result is never held whole.

    csv and json give the same text as format_rows (with a final newline). A table takes its column widths and
    alignment from the header and the first batch; a later value wider than its column pushes the row right.
    """
    batches = iter(batches)
    first = next(batches, [])
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for batch in chain([first], batches):
            writer.writerows([[_csv_field(v) for v in row] for row in batch])
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        return
    if fmt == "json":
        opened = False
        keys = json_keys(columns)
        for batch in chain([first], batches):
            for row in batch:
                item = json.dumps([{c: _plain(v) for c, v in zip(keys, row)}], indent=2, ensure_ascii=False,
                                  default=_json_default)
                yield ("[\n" if not opened else ",\n") + item[2:-2]
                opened = True
        yield "\n]\n" if opened else "[]\n"
        return
    widths, numeric = _layout(columns, first)  # from the first batch
    yield "".join(line + "\n" for line in _table_head(columns, widths, numeric))
    count = 0
    for batch in chain([first], batches):
        count += len(batch)
        yield "".join(line + "\n" for line in _table_rows(batch, widths, numeric))
    yield _count(count) + "\n"
