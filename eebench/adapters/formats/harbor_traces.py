"""`harbor-traces`: Harbor's traces export (`*.traces.json`), a JSON array of cumulative conversation prefixes.

Element k of a trial is its conversation after turn k, so only the fullest element of each trial (by `run_id`
and `trial_name`) is read: one trajectory per trial. Each assistant message is a step whose reasoning is its
inline `<think>…</think>` block and whose action is read from the text after it; the next user message is the
observation. Kept apart from `atif`: it is another file with other fields, and it never carries per-step tokens
or times, which ATIF trajectories do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.base import HEAD_BYTES, Adapter, Episode, as_label, scalars
from eebench.adapters.chat import chat_steps, messages_problem
from eebench.adapters.records import JsonRecord, bad_item, grouped_records, head_value
from eebench.documents import json_type
from eebench.errors import InputError

_EPISODE = re.compile(rb'"episode"\s*:\s*"episode-')
# Harbor writes `conversations` first and the trial's fields after it: a first element past the head (a whole trial,
# as `--episodes last` exports) is told by its opening, a conversation of content/role messages
_OPENING = re.compile(rb'^\s*\[?\s*\{\s*"conversations"\s*:\s*\[\s*\{\s*"(?:content|role)"\s*:\s*"')
_FIELDS = ("agent", "model", "model_provider", "date", "task", "episode", "run_id", "trial_name", "result")


class HarborTracesAdapter(Adapter):
    name = "harbor-traces"
    summary = ("Harbor traces export (traces.json): a JSON array of cumulative conversations per trial; the "
               "fullest one per trial, <think> reasoning split from the action")
    example = "eebench convert hello-world.traces.json --from harbor-traces --out runs.jsonl"
    suffixes = (".json", ".jsonl")
    never_carries = frozenset({"tokens_in", "tokens_out", "latency_ms", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        return (path.suffix.lower() in self.suffixes and head_value(head) in ("[", "{")
                and b'"conversations"' in head and (b'"trial_name"' in head or _EPISODE.search(head) is not None
                                                    or len(head) == HEAD_BYTES and _OPENING.match(head) is not None
                                                    and b'"role"' in head))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        for group in grouped_records(path, _trial):
            if isinstance(group, InputError):
                yield group
            elif _trial(group[0].value) is None:
                yield _bad_element(path, group[0])
            else:
                # the fullest prefix; the later one of equals
                yield self._episode(path, max(group, key=lambda r: (len(r.value["conversations"]), r.index)))

    def _episode(self, path: Path, item: JsonRecord) -> Episode | InputError:
        element = item.value
        messages = element["conversations"]
        bad = next((i for i, m in enumerate(messages) if not isinstance(m, Mapping) or "role" not in m), None)
        if bad is not None:
            return bad_item(path, item, "expected a message with a `role`", f"conversations[{bad}]")
        shape = messages_problem(messages, "conversations")
        if shape is not None:
            return bad_item(path, item, shape[1], shape[0])
        task = element.get("task")
        if task is not None and as_label(task) is None:   # (it names the instance: it was dropped unread)
            return bad_item(path, item, f"expected a string or an integer, found {json_type(task)}", "task")
        steps = chat_steps(messages)   # (an inline <think> block is the step's reasoning: chat's rule)
        run, trial = _trial(element) or ("", "")
        fields = {k: element.get(k) for k in _FIELDS}
        return Episode(id=f"{run}/{trial}", record=item.index, line=item.line, steps=steps,
                       task=as_label(task), fields=element,
                       agent={"name": _str(element.get("agent")), "model": _str(element.get("model"))},
                       meta={k: v for k, v in scalars(fields).items() if v is not None})


def _trial(element: Any) -> tuple[str, str] | None:
    """The trial an element belongs to, or None when it is not a traces element."""
    if not isinstance(element, Mapping) or not isinstance(element.get("conversations"), list):
        return None
    run, trial = element.get("run_id"), element.get("trial_name")
    if any(value is not None and as_label(value) is None for value in (run, trial)):
        return None   # (a mapping there would name the trial by its Python repr: refused by _bad_element)
    return (str(run or ""), str(trial or "")) if run or trial else None


def _bad_element(path: Path, item: JsonRecord) -> InputError:
    value = item.value
    if not isinstance(value, Mapping):
        message, field = f"expected a traces element object with `conversations`, found {json_type(value)}", None
    elif not isinstance(value.get("conversations"), list):
        message, field = f"expected a list of messages, found {json_type(value.get('conversations'))}", "conversations"
    else:
        message, field = "expected `run_id` or `trial_name` naming the trial (a string or an integer)", None
    return bad_item(path, item, message, field)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
