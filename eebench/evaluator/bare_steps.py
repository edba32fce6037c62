"""Lines whose steps hold only an action, read a chunk at a time without a dict per step (a large run's lines).

A trajectory line parsed whole makes a dict and a string per step, which the grader then reads back one by one
(the actions, their move codes, the checks) and frees: 40% of a grade's grading thread went there. Here the
top level is split by msgspec (each value a `Raw` view of the line); the steps array is read by a compiled
scanner that accepts only `[{"action": WORD}, ...]` (any JSON whitespace; WORD null or a string of printable
ASCII without escapes) and gives each step a number in the chunk's table of distinct actions; the rest of the
line, its steps array made `[]`, goes through the one JSON door (`documents.loads_json`). The steps become a
StepList of `Actions` sharing that table, which every family reads as the parsed steps (long_lines.py).

Whatever this path doubts (a line msgspec refuses, a steps array the scanner does not accept or that holds
no step, a rest the door refuses) is left to `parse_record`, so the value or the error of every line
is exactly the one it gets there. Imported, like park_compiled, only when a run is large (grade.COMPACT_FROM_STEPS).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from eebench.documents import JsonLimitError, loads_json
from eebench.evaluator import park_compiled  # noqa: F401  (first: it sets numba's cache folder)
from eebench.long_lines import Actions, StepList, top_level
from eebench.world.grid_dag import ACTIONS
from numba import njit  # noqa: E402

WORDS = (None, *ACTIONS)   # numbers 0-4 of every chunk's table (null, the four moves); other words follow
_OTHER = len(WORDS)   # the scanner's number for a word of another spelling (its bytes are located)

_ACTION_KEY = np.frombuffer(b'"action"', dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)
_UP, _DOWN, _LEFT, _RIGHT = (np.frombuffer(word.encode(), dtype=np.uint8) for word in ACTIONS)   # numbers 1-4


@njit(cache=True, inline="always")
def _space(text: np.ndarray, i: int, end: int) -> int:
    """The first position from i that is not JSON whitespace."""
    while i < end and (text[i] == 32 or text[i] == 10 or text[i] == 13 or text[i] == 9):
        i += 1
    return i


@njit(cache=True, inline="always")
def _is(text: np.ndarray, i: int, end: int, word: np.ndarray) -> bool:
    """Whether text[i:end] is exactly `word`."""
    if end - i != word.size:
        return False
    for k in range(word.size):
        if text[i + k] != word[k]:
            return False
    return True


@njit(cache=True, inline="always")
def _starts(text: np.ndarray, i: int, end: int, word: np.ndarray) -> bool:
    return end - i >= word.size and _is(text, i, i + word.size, word)


@njit(cache=True, nogil=True)
def scan(text: np.ndarray, starts: np.ndarray, ends: np.ndarray, kinds: np.ndarray, at: np.ndarray,
         until: np.ndarray, counts: np.ndarray) -> int:
    """Read each steps array text[starts[r]:ends[r]]: counts[r] its steps, or -1 when it is not a list of
    `{"action": WORD}` objects (see the module's note). Step k (numbered on through the arrays read) gets kinds[k]:
    its number in WORDS, or _OTHER for another word, whose bytes are text[at[k]:until[k]]. Returns the steps."""
    k = 0
    for r in range(starts.size):
        first = k
        end = ends[r]
        i = _space(text, starts[r], end)
        ok = i < end and text[i] == 91   # [
        if ok:
            i = _space(text, i + 1, end)
            ok = i < end
            if ok and text[i] == 93:   # ]
                i += 1
            elif ok:
                while True:
                    ok = text[i] == 123 and _starts(text, _space(text, i + 1, end), end, _ACTION_KEY)   # {"action"
                    if not ok:
                        break
                    i = _space(text, _space(text, i + 1, end) + _ACTION_KEY.size, end)
                    ok = i < end and text[i] == 58   # :
                    if not ok:
                        break
                    i = _space(text, i + 1, end)
                    if k >= kinds.size:   # (sized for the shortest steps: never, but a write past them is no error)
                        ok = False
                        break
                    if _starts(text, i, end, _NULL):
                        kinds[k] = 0
                        i += _NULL.size
                    elif i < end and text[i] == 34:   # "
                        a = i + 1
                        i = a
                        while i < end and 32 <= text[i] < 127 and text[i] != 34 and text[i] != 92:
                            i += 1
                        ok = i < end and text[i] == 34   # (a control byte, an escape, a byte past ASCII: no)
                        if not ok:
                            break
                        kind = _OTHER
                        if _is(text, a, i, _UP):
                            kind = 1
                        elif _is(text, a, i, _DOWN):
                            kind = 2
                        elif _is(text, a, i, _LEFT):
                            kind = 3
                        elif _is(text, a, i, _RIGHT):
                            kind = 4
                        kinds[k], at[k], until[k] = kind, a, i
                        i += 1
                    else:
                        ok = False
                        break
                    k += 1
                    i = _space(text, i, end)
                    ok = i < end and text[i] == 125   # }
                    if not ok:
                        break
                    i = _space(text, i + 1, end)
                    ok = i < end and (text[i] == 44 or text[i] == 93)   # , or ]
                    if not ok or text[i] == 93:
                        i += 1
                        break
                    i = _space(text, i + 1, end)
                    ok = i < end
                    if not ok:
                        break
        ok = ok and _space(text, i, end) == end
        counts[r] = k - first if ok else -1
        if not ok:
            k = first
    return k


def loads_bare(lines: Sequence[bytes]) -> list[dict[str, Any] | None]:
    """Each line's trajectory document, its steps a StepList of Actions (one table of words for them all); None
    for a line this path leaves to `parse_record` (see the module's note)."""
    docs: list[dict[str, Any] | None] = []
    arrays: list[bytes] = []
    for line in lines:
        doc = None
        try:
            steps = top_level(line).get("steps")
        except (msgspec.DecodeError, msgspec.ValidationError):
            steps = None
        array = b"" if steps is None else bytes(steps)
        # Where the steps stand: the line's last value (as most writers put them, eebench's own included), else
        # the first place of their text. A steps array that holds a quote is not inside a string (a string's quotes
        # are escaped), so a place that is not the steps' own is a value of the same text: then the door finds the
        # steps still there, not [], and the line is left to parse_record.
        if b'"' in array:
            end = len(line.rstrip())
            where = end - 1 - len(array)
            if not (where > 0 and line.startswith(array, where) and line.startswith(b"}", end - 1)):
                where = line.find(array)
            try:
                doc = loads_json(line[:where] + b"[]" + line[where + len(array):])
            except (ValueError, JsonLimitError, UnicodeDecodeError):
                doc = None
            if type(doc) is dict and doc.get("steps") == []:
                arrays.append(array)
            else:
                doc = None
        docs.append(doc)
    if not arrays:
        return docs
    text = np.frombuffer(b"".join(arrays), dtype=np.uint8)
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    del arrays
    ends = np.cumsum(lengths)
    most = text.size // 13 + 1   # the shortest step, {"action":""}, is 13 bytes
    kinds = np.empty(most, dtype=np.int8)
    at = np.empty(most, dtype=np.int32)   # (a chunk's lines are bytes: shorter than LONG_LINE_BYTES each)
    until = np.empty(most, dtype=np.int32)
    counts = np.empty(lengths.size, dtype=np.int64)
    total = scan(text, ends - lengths, ends, kinds, at, until, counts)
    codes = kinds[:total].astype(np.int32)
    words: list[str | None] = list(WORDS)
    other = np.flatnonzero(codes == _OTHER)
    if other.size:   # each other spelling once in the table, after the four
        numbers: dict[bytes, int] = {}
        data = text.tobytes()
        for k, a, b in zip(other.tolist(), at[other].tolist(), until[other].tolist()):
            word = data[a:b]
            number = numbers.get(word)
            if number is None:
                number = numbers[word] = len(words)
                words.append(word.decode("ascii"))
            codes[k] = number
    counts_list = counts.tolist()
    offset = 0
    r = 0
    for j, doc in enumerate(docs):
        if doc is None:
            continue
        count = counts_list[r]
        r += 1
        if count < 0:
            docs[j] = None
            continue
        doc["steps"] = StepList(Actions(words, codes[offset:offset + count]), {})
        offset += count
    return docs
