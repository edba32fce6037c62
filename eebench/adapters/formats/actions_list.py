"""`actions`: a plain list of actions, one per line or a JSON array of strings; one file is one episode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from eebench.adapters.actions import grid_move
from eebench.adapters.base import HEAD_BYTES, Adapter, Episode, LoggedStep, bad_record
from eebench.adapters.records import binary_lines, head_value, json_array_items
from eebench.documents import decode_utf8, json_type, loads_json, open_input
from eebench.errors import InputError

MAX_ACTION_CHARS = 200   # an action is a word or a short phrase; a longer line means this is not an actions list


class ActionsAdapter(Adapter):
    name = "actions"
    summary = ("a plain list of actions: one per line (text) or a JSON array of strings; the file is one episode, "
               "its id the file name (give --instance to grade it in an instance)")
    example = "eebench convert moves.txt --from actions --instance park2026-main/low-small/seed-0 --out run.jsonl"
    suffixes = (".txt", ".actions", ".json")
    # `raw` is written only where the vocabulary changed a word (`North` read as `up`)
    never_carries = frozenset({"reasoning", "observation", "tokens_in", "tokens_out", "latency_ms", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        """A JSON array of strings, or text whose lines are all grid moves (`up`, `North`, ...)."""
        if head_value(head) == "[":
            try:
                value = loads_json(head)
            except ValueError:  # also what is over the limits, e.g. nested too deeply
                return False
            return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
        try:
            lines = [line for line in head.decode("utf-8").splitlines() if line.strip()]
        except UnicodeDecodeError:
            return False
        complete = lines[:-1] if len(head) == HEAD_BYTES else lines   # the last line of a cut head may be partial
        return bool(complete) and all(grid_move(line) is not None for line in complete)

    def named_handles(self, path: Path, head: bytes) -> bool:
        """Named with --from, a list in which the agent sometimes answered something else is still one (those steps
        are kept unreadable, as when the file is given by name): most of its lines must be moves, so a README
        beside the logs is still left out."""
        if head_value(head) == "[" or path.suffix.lower() not in self.suffixes:
            return self.handles(path, head)
        try:
            lines = [line for line in head.decode("utf-8").splitlines() if line.strip()]
        except UnicodeDecodeError:
            return False
        return 2 * sum(grid_move(line) is not None for line in lines) > len(lines)

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        with open_input(path) as handle:
            opening = head_value(handle.read(256))
        actions: list[str] = []
        for item in (self._from_array(path) if opening == "[" else self._from_lines(path)):
            if isinstance(item, InputError):
                yield item   # one bad entry spoils the episode: its steps would no longer be the agent's
                return
            actions.append(item)
        if actions:
            yield Episode(id=path.stem, record=0, steps=[LoggedStep(action=a) for a in actions])

    def _from_array(self, path: Path) -> Iterator[str | InputError]:
        for item in json_array_items(path):
            if isinstance(item, InputError) or isinstance(item.value, str):
                yield item if isinstance(item, InputError) else item.value
            else:
                yield bad_record(path, f"expected an action string, found {json_type(item.value)}",
                                 record=item.index)

    def _from_lines(self, path: Path) -> Iterator[str | InputError]:
        for number, raw in binary_lines(path, limit=4 * MAX_ACTION_CHARS):
            text = decode_utf8(raw, str(path), line=number).strip()
            if not text:
                continue
            if len(text) > MAX_ACTION_CHARS or "\x00" in text or text[0] in "{[":
                shown = text[:40] + ("..." if len(text) > 40 else "")
                yield bad_record(path, f"expected one action per line, found {shown!r}; is this a log of another "
                                       "format? (see `eebench formats`)", line=number)
                return
            yield text
