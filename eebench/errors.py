"""The error root of eebench: every bad input becomes an `InputError` made of located `Problem`s."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import NamedTuple


class Problem(NamedTuple):
    """One thing wrong with an input, located as precisely as the input allows."""

    file: str | None
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        if self.field:
            where = f"{where}: {quote(self.field, QUOTE_CHARS)}"  # a field path may hold a key of any length
        return f"{where}: {self.message}"


QUOTE_CHARS = 100  # the most of a value (or a key) a message quotes: a 5 MB key is not echoed whole


def one_line(text: str) -> str:
    """`text` with a newline or another control character written as its escape: a message is one line."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


LINE_CHARS = 1000   # the most one message line holds: a longer one (a huge value quoted whole) keeps its ends


def message_line(text: str) -> str:
    """A message as the one line the CLI prints: control characters escaped (one_line), and past LINE_CHARS its
    middle cut, so the start (file, line, field) and the end (what was expected, a hint) stay."""
    text = one_line(text)
    if len(text) <= LINE_CHARS:
        return text
    tail = LINE_CHARS // 4
    return f"{text[:LINE_CHARS - tail - 5]} ... {text[-tail:]}"


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` cut to `limit` characters ('...' marks the cut), on one line (one_line): the one way messages quote
    what an input holds."""
    text = one_line(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def quoted(value: Any, limit: int = QUOTE_CHARS) -> str:
    """A value an input holds, as a message shows it (its repr), cut as `quote` cuts text."""
    return repr(quote(value, limit)) if isinstance(value, str) else quote(repr(value), limit)


class EebenchError(Exception):
    """Root of every error eebench raises on purpose."""


class EebenchWarning(UserWarning):
    """Something the user should know of a run that went on: the CLI prints it as one `warning:` line."""


class InputError(EebenchError):
    """Bad input from the user: the CLI prints one line per problem and exits with code 2."""

    def __init__(self, problems: Iterable[Problem] | Problem | str):
        if isinstance(problems, (str, Problem)):
            problems = [problems]
        self.problems: list[Problem | str] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, file: str | None, message: str, *, line: int | None = None, field: str | None = None) -> InputError:
        return cls(Problem(file, line, field, message))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ' (did you mean X?)' suffix naming the closest choice, or '' when none is close."""
    if len(str(word)) > QUOTE_CHARS:  # no name is that long, and difflib's time grows with it
        return ""
    names = sorted(set(choices))
    close = difflib.get_close_matches(str(word), names, n=1, cutoff=0.6)
    if not close:   # a name typed in another case (`LOW-SMALL`, `--format TABLE`) is as close as can be
        folded = {name.casefold(): name for name in reversed(names)}
        close = [folded[c] for c in difflib.get_close_matches(str(word).casefold(), list(folded), n=1, cutoff=0.6)]
    return f" (did you mean {close[0]!r}?)" if close else ""


NEAR_NAMES = 10_000   # the most names of a folder read for a close one: a huge folder is not listed whole


def near_path(path: str | os.PathLike[str]) -> str:
    """A ' (did you mean X?)' suffix for a missing `path`: its first part that does not exist replaced by the name
    closest to it in its folder (`demo/results.duckdb` for `demo/result.duckdb`, `runs/low-small/a.json` for
    `runs/low-smal/a.json` when that file is there), written as the path was; '' when none is close."""
    text = os.fspath(path).rstrip("/") or os.fspath(path)
    parts = text.split("/")
    for i, part in enumerate(parts):
        here = "/".join(parts[:i + 1])   # ('' before a leading or a double /; a link to nothing is missing)
        if not part or (os.path.lexists(here) if i < len(parts) - 1 else os.path.exists(here)):
            continue
        close = _closest_name(part, "/".join(parts[:i]) or ("/" if i else "."))
        if close is None:
            return ""
        fixed = "/".join([*parts[:i], close, *parts[i + 1:]])
        return f" (did you mean {fixed!r}?)" if i == len(parts) - 1 or os.path.exists(fixed) else ""
    return ""


def _closest_name(name: str, folder: str) -> str | None:
    """The name in `folder` closest to `name` (not `name` itself: a link to nothing is there, and would be its own
    closest name), or None."""
    if len(name) > QUOTE_CHARS:
        return None
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for _, entry in zip(range(NEAR_NAMES), entries) if entry.name != name]
    except OSError:
        return None
    # (0.8, not the 0.6 of names: a shared ending such as `.duckdb` makes any two files 0.6 alike)
    close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.8)
    return close[0] if close else None


def one_of(choices: Iterable[str]) -> str:
    """'a, b or c' for messages that list what was expected."""
    items = sorted(set(choices))
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]
