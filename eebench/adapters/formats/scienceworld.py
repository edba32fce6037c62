"""`scienceworld`: ScienceWorld run histories (`{episodeIdx: {history: {taskName, ..., history: [step, ...]}}}`).

Each step has `action`, `observation` (the text after it), `score`, `isCompleted`, `inventory` and `freelook`,
the "look around" text taken *before* the action ("This room is called the greenhouse."). So a step's state
(where it leaves the agent) is the room of the next step's freelook; for the last step, the target of "You move
to the X." (or "You teleport to the X.") in its observation, else its own freelook's room. Instances are
`scienceworld/<taskName>/<variation>`, trajectory ids `<file stem>/<instance>`; the agent is whatever wrote the
history (the files at hand are the rule-based oracle's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eebench.adapters.base import Adapter, Episode, LoggedStep, as_label, bad_record
from eebench.adapters.records import head_value, json_document
from eebench.documents import json_type
from eebench.errors import InputError

_ROOM = re.compile(r"This (?:room|outside location) is called the (.+?)\.")
_MOVED = re.compile(r"You (?:move|teleport) to the (.+?)\.")   # (`teleport to X`: the easy mode's)


class ScienceWorldAdapter(Adapter):
    name = "scienceworld"
    summary = ("ScienceWorld run histories (JSON keyed by episode, each step with action, observation and "
               "freelook): the room of the freelook read as each step's state")
    example = "eebench convert task13-6-9.json --from scienceworld --out sw.jsonl"
    suffixes = (".json",)
    never_carries = frozenset({"raw", "reasoning", "tokens_in", "tokens_out", "latency_ms", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        return (path.suffix.lower() == ".json" and head_value(head) == "{" and b'"episodeIdx"' in head
                and b'"freelook"' in head)

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        document = json_document(path)
        if not isinstance(document, dict):
            raise bad_record(path, f"expected ScienceWorld run histories (a JSON object), found "
                                   f"{json_type(document)}")
        for key, entry in document.items():
            run = entry.get("history") if isinstance(entry, dict) else None
            if not isinstance(run, dict) or not isinstance(run.get("history"), list):
                yield bad_record(path, "expected {history: {taskName, history: [steps]}}", record=key,
                                 field="history")
                continue
            rows = run["history"]
            problem = _row_problem(rows)
            if problem is not None:   # (an observation or a freelook of another type was dropped: no text, no state)
                yield bad_record(path, problem[1], record=key, field=f"history.history{problem[0]}")
                continue
            named = {name: run.get(name, default) for name, default in (("taskName", "task"), ("variationIdx", key))}
            wrong = next((name for name, value in named.items() if as_label(value) is None), None)
            if wrong is not None:   # (they name the instance: a mapping or null would be named by its repr)
                yield bad_record(path, f"expected a string or an integer, found {json_type(named[wrong])}",
                                 record=key, field=f"history.{wrong}")
                continue
            task = f"scienceworld/{named['taskName']}/{named['variationIdx']}"
            meta: dict[str, Any] = {k: run[k] for k in ("taskName", "taskDescription", "variationIdx", "fold")
                                    if isinstance(run.get(k), (str, int))}
            if rows:
                meta["final_score"] = rows[-1].get("score")
                meta["completed"] = rows[-1].get("isCompleted") in (True, "true")
            # the id names the file too: two runs of one task (another model's) convert together
            yield Episode(id=f"{path.stem}/{task}", record=key, steps=_steps(rows), task=task, fields=entry,
                          agent={"harness": "scienceworld"}, meta=meta)


# what each step of a history must be: the action, the text after it, and the look around that gives the rooms
_ROW_FIELDS = (("action", (str,), "a string"), ("observation", (str, type(None)), "a string or null"),
               ("freelook", (str, type(None)), "a string or null"))


def _row_problem(rows: list[Any]) -> tuple[str, str] | None:
    """(where in the history, what was expected and found) for the first step of the wrong shape, or None."""
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"[{i}]", f"expected a step object, found {json_type(row)}"
        for name, kinds, expected in _ROW_FIELDS:
            if not isinstance(row.get(name), kinds):
                return f"[{i}].{name}", f"expected {expected}, found {json_type(row.get(name))}"
    return None


def _room(text: Any, pattern: re.Pattern[str]) -> str | None:
    found = pattern.search(text) if isinstance(text, str) else None
    return found.group(1) if found else None


def _steps(rows: list[dict[str, Any]]) -> list[LoggedStep]:
    steps = []
    for i, row in enumerate(rows):
        if i + 1 < len(rows):
            state = _room(rows[i + 1].get("freelook"), _ROOM)
        else:
            state = _room(row.get("observation"), _MOVED) or _room(row.get("freelook"), _ROOM)
        observation = row.get("observation")
        steps.append(LoggedStep(action=row["action"], observation=observation if isinstance(observation, str)
                                else None, state=state))
    return steps
