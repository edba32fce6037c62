"""Cutting JSON Lines files into pieces that processes work on in parallel (`grade --workers`, `convert --workers`).

A piece is a byte span that starts and ends at line starts and knows the true line and record number it starts at,
so the messages of whoever reads it name the lines one process would. Counting those numbers reads the file once, at
memory speed, and the spans come as they are found: the first piece's work starts before the file is read to the end.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from eebench.documents import BOM
from eebench.errors import InputError

LONG_LINE = 4 << 20     # a line longer than this across a cut ends the cutting of its file (the rest is one piece)


class Span(NamedTuple):
    """Bytes [start, end) of a file (end None: to its end), starting at line `line` and record `record`."""

    start: int
    end: int | None
    line: int     # the true (1-based) line number at `start`
    record: int   # the true record number (non-blank lines before) at `start`


WHOLE = Span(0, None, 1, 0)

_BLANK = re.compile(rb"^[ \t\r\x0b\x0c]*\n", re.MULTILINE)   # a line `bytes.strip` leaves empty (not a record)
_BLANK_AFTER_FIRST = re.compile(rb"\n[ \t\r\x0b\x0c]*\n")    # one after the first line: found fast, if any


def _lines(data: bytes) -> tuple[int, int]:
    """Lines and non-blank lines (records) of whole lines `data`, counted at memory speed (blank lines are
    counted only where there are some)."""
    lines = data.count(b"\n")
    blank = len(_BLANK.findall(data)) if data[:1].isspace() or _BLANK_AFTER_FIRST.search(data) else 0
    return lines, lines - blank


def line_spans(path: Path, piece_bytes: int) -> Iterator[Span]:
    """The pieces of a JSON Lines file, in order: cut at the first line start at or after every `piece_bytes`; the
    last runs to the end of the file (end None). A line longer than LONG_LINE across a cut ends the cutting: the
    rest is one piece, and its reader judges that line where one process would. A file that cannot be opened is
    one piece (its reader says what is wrong, in its place in input order).

    Each piece is read as one block (and the rest of its last line) and its lines counted in that block."""
    start, line, record = 0, 1, 0
    try:
        handle = path.open("rb")
    except OSError:
        yield WHOLE
        return
    with handle:
        while len(block := handle.read(piece_bytes)) == piece_bytes:
            if block[-1:] != b"\n":
                rest = handle.readline(LONG_LINE + 1)
                if len(rest) > LONG_LINE and not rest.endswith(b"\n"):
                    break
                block += rest
            # a byte order mark before the first line is read past by the readers: not part of a record
            lines, records = _lines(block[len(BOM):] if start == 0 and block.startswith(BOM) else block)
            yield Span(start, start + len(block), line, record)
            start, line, record = start + len(block), line + lines, record + records
    yield Span(start, None, line, record)


def resolve_workers(workers: int) -> int:
    """The worker processes of `workers`: itself when positive, 0 for one per core this process may use."""
    if workers < 0:
        raise InputError(f"workers: expected 0 (one per core) or more, found {workers}")
    if workers:
        return workers
    if counted := getattr(os, "process_cpu_count", None):  # Python 3.13
        return counted() or 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (no affinity on this platform)
        return os.cpu_count() or 1
