"""One trajectory of millions of steps, read without a dict per step: its steps streamed into a compact StepList.

A JSON line of a trajectory parsed whole costs about 300 bytes of Python objects per step (a dict and a string
each): 1.5 GB for 5 million steps. The grader reads lines longer than LONG_LINE_BYTES here instead: msgspec splits
the top level without copying (each value a `Raw` view of the line), the small values go through the one JSON door
(`documents.loads_json`), and ijson (its C backend) streams the steps array one step at a time into a StepList:
the steps that hold only an action as the action's number in a table of the distinct actions (`Actions`: 2 bytes
a step while there are fewer than 65,536 of them, else 4), any other step kept as it is.

Whatever this path doubts (digits orjson would round, a lone surrogate escape, nesting past the limit, JSON that
msgspec or ijson refuses, a step of another shape) goes back to the door, which parses the line whole: its value
or its error is then exactly the one every other record gets.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from eebench.documents import DepthGauge, JsonLimitError, loads_json, orjson_reads_exactly

if TYPE_CHECKING:   # (imported when a long line is read: 75 ms that every other command need not pay)
    import numpy as np

_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SHARED_ACTIONS = 4096   # distinct short action strings that share one number in the table
_SHARED_LENGTH = 32      # (longer actions are rarely repeated word for word: each has a number of its own)
_BLOCK = 1 << 16         # numbers turned into Python ints a block at a time when iterating
PIECE_BYTES = 4 << 20    # the checks read the line this much at a time
_DIGITS_OVERLAP = 18     # a run of 19 digits across two pieces is whole in the first one's overlap


class Actions(Sequence[str | None]):
    """A long line's actions, read-only: action i is `words[codes[i]]` (one string per distinct action, so a step
    costs the size of its number). A slice is an Actions sharing the table."""

    __slots__ = ("words", "codes")

    def __init__(self, words: list[str | None], codes: np.ndarray):
        self.words = words
        self.codes = codes

    def __len__(self) -> int:
        return len(self.codes)

    @overload
    def __getitem__(self, i: int) -> str | None: ...

    @overload
    def __getitem__(self, i: slice) -> Actions: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return Actions(self.words, self.codes[i])
        return self.words[self.codes[i]]   # (IndexError as a list gives it)

    def __iter__(self) -> Iterator[str | None]:
        words = self.words
        for block in range(0, len(self.codes), _BLOCK):
            yield from map(words.__getitem__, self.codes[block:block + _BLOCK].tolist())

    @staticmethod
    def joined(parts: Sequence[Sequence[str | None]]) -> Actions | None:
        """Several Actions sharing one table as one (the lines of a chunk read by evaluator/bare_steps); None when
        they do not all share a table."""
        if not parts or not all(type(part) is Actions for part in parts):
            return None
        words = parts[0].words   # type: ignore[attr-defined]
        if any(part.words is not words for part in parts):   # type: ignore[attr-defined]
            return None
        import numpy as np

        return Actions(words, np.concatenate([part.codes for part in parts]))   # type: ignore[attr-defined]


class StepList(Sequence[dict[str, Any]]):
    """The steps of a long trajectory, read-only: steps that hold only an action, as the action (`actions[i]`, a
    list or the compact Actions); any other step as it was read (`others[i]`, the action slot then None).
    Iterating or indexing gives dicts equal to the parsed steps; a slice is a StepList."""

    __slots__ = ("actions", "others")

    def __init__(self, actions: Sequence[str | None], others: dict[int, Any]):
        self.actions = actions
        self.others = others

    def __len__(self) -> int:
        return len(self.actions)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> StepList: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            positions = range(len(self.actions))[i]
            others = {}
            if self.others:
                where = {k: j for j, k in enumerate(positions)} if positions.step != 1 else None
                for k, step in self.others.items():
                    if where is not None:
                        if k in where:
                            others[where[k]] = step
                    elif positions.start <= k < positions.stop:
                        others[k - positions.start] = step
            return StepList(self.actions[i], others)
        k = range(len(self.actions))[i]   # (IndexError as a list gives it)
        return self.others[k] if k in self.others else {"action": self.actions[k]}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        others = self.others
        if not others:
            return ({"action": a} for a in self.actions)
        return (others[k] if k in others else {"action": a} for k, a in enumerate(self.actions))

    def plain_actions(self) -> Sequence[str | None] | None:
        """The actions, when every step holds only its action (the sequence itself: not to be changed); else
        None."""
        return None if self.others else self.actions


def _plain(data: bytearray) -> bool:
    """Whether the line is one this path reads as the door would: no integer of 19 digits or more, no lone
    surrogate escape, nested at most MAX_DEPTH levels. Judged a piece at a time (the door's checks copy the line)."""
    if _LONE_SURROGATE.search(data):
        return False
    view = memoryview(data)
    gauge = DepthGauge()
    for at in range(0, len(data), PIECE_BYTES):
        piece = bytes(view[at:at + PIECE_BYTES + _DIGITS_OVERLAP])   # (overlapping: a run may cross the cut)
        if not orjson_reads_exactly(piece) or not gauge.feed(piece[:PIECE_BYTES]):
            return False
    return True


class _Reader:
    """A file-like view of a buffer for ijson, read a block at a time (no copy of the whole)."""

    def __init__(self, view: memoryview):
        self.view = view
        self.at = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.view) if size < 0 else self.at + size
        block = bytes(self.view[self.at:end])
        self.at += len(block)
        return block


def top_level(line: bytes | bytearray | memoryview) -> dict[str, Any]:
    """A JSON object's members as msgspec.Raw (spans of the line, not copied); msgspec's DecodeError if it is not
    one, also where msgspec itself raises what its callers would not expect: RecursionError for text nested deeper
    than it reads, UnicodeDecodeError for a key that is not UTF-8 (the door says what is wrong with such a line).
    (msgspec is imported on first use: 10 ms that a run of short lines never needs.)"""
    decoder = _top_decoder()
    try:
        return decoder.decode(line)
    except (RecursionError, UnicodeDecodeError) as exc:
        import msgspec

        raise msgspec.DecodeError(type(exc).__name__) from None


@functools.cache
def _top_decoder() -> Any:
    import msgspec

    return msgspec.json.Decoder(dict[str, msgspec.Raw])


def loads_long(data: bytearray) -> dict[str, Any] | None:
    """The trajectory on a long line, its steps a StepList; None when the line must be read whole by the door (see
    the module's note), so that its value or its error is the door's."""
    if not _plain(data):
        return None
    import ijson
    import msgspec

    try:
        top = top_level(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    doc: dict[str, Any] = {}
    try:
        for key, raw in top.items():
            if key == "steps" and bytes(memoryview(raw)[:1]) == b"[":
                doc[key] = _steps(memoryview(raw))
            else:
                doc[key] = loads_json(bytes(memoryview(raw)))
    except (ValueError, JsonLimitError, ijson.JSONError, UnicodeDecodeError):
        return None
    return doc


def _steps(view: memoryview) -> StepList:
    import ijson
    import numpy as np

    words: list[str | None] = [None]   # number 0: a null action, or a step kept in `others`
    numbers: dict[str, int] = {}
    codes = array("H")
    others: dict[int, Any] = {}
    for k, step in enumerate(ijson.items(_Reader(view), "item", use_float=True)):
        if type(step) is dict and len(step) == 1 and "action" in step:
            action = step["action"]
            if action is None:
                codes.append(0)
                continue
            if type(action) is str:
                number = numbers.get(action)
                if number is None:
                    number = len(words)
                    words.append(action)
                    if len(action) <= _SHARED_LENGTH and len(numbers) < _SHARED_ACTIONS:
                        numbers[action] = number
                    if number > 0xFFFF and codes.typecode == "H":
                        codes = array("I", codes)
                codes.append(number)
                continue
        codes.append(0)
        others[k] = step
    return StepList(Actions(words, np.frombuffer(codes, dtype=np.uint16 if codes.typecode == "H" else np.uint32)),
                    others)
