"""`eebench`: canonical trajectories (trajectory/1, JSON Lines or JSON), validated and passed through unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from eebench.adapters.base import Adapter, Episode
from eebench.adapters.records import JsonRecord, json_records
from eebench.documents import schema_problems
from eebench.errors import InputError, Problem
from eebench.trajectories import CONVERT_HINT, Record, check_trajectory

# what a record that is no trajectory is, read by convert: grade's hint (run convert) would send the user in a circle
_MIXED_HINT = " (a log of another format mixed in? each file is read in one format: name it with --from)"


class CanonicalAdapter(Adapter):
    name = "eebench"
    summary = "eebench's own trajectory/1 records (JSON Lines, or a JSON list), validated and kept as they are"
    example = "eebench convert runs.jsonl --from eebench --out checked.jsonl"
    suffixes = (".jsonl", ".json")
    never_carries = frozenset()

    def handles(self, path: Path, head: bytes) -> bool:
        return b'"trajectory/' in head and b'"eebench"' in head

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        for item in json_records(path):
            if isinstance(item, InputError):
                yield item
                continue
            yield self._episode(path, item)

    def _episode(self, path: Path, item: JsonRecord) -> Episode | InputError:
        record = Record(str(path), item.line, item.index, item.value, in_list=item.in_array)
        try:
            doc = check_trajectory(record)
        except InputError as exc:
            return InputError([p._replace(message=p.message.replace(CONVERT_HINT, _MIXED_HINT))
                               if isinstance(p, Problem) else p for p in exc.problems])
        problems = schema_problems(doc, "trajectory", str(path), line=item.line)
        if problems:
            return InputError(problems)
        return Episode(id=doc["id"], record=item.index, line=item.line, steps=[], task=doc["instance"],
                       fields=doc, document=doc)
