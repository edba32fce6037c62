"""`mini-swe-agent`: mini-swe-agent trajectories (`trajectory_format: mini-swe-agent-1`); one file is one episode.

Each assistant message is a step: its one ```bash block is the action, the text around it ("THOUGHT: …") the
reasoning, the whole content the raw output; the next user message is the observation (`<returncode>…`, or the
harness's format-error message when the output did not hold exactly one bash block, in which case the step has
no action). Per-step tokens and the time come from the raw completion kept in `extra.response`. The file names
no instance: mini-swe-agent saves a run as `<instance>.traj.json`, so the task is the file name without it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.base import (HEAD_BYTES, Adapter, Episode, LoggedStep, bad_record, dig, iso_utc, number,
                                  text_of)
from eebench.adapters.chat import message_problem, usage_of, usage_problem
from eebench.adapters.records import document_episode, head_value, object_with_list
from eebench.documents import json_type
from eebench.errors import InputError

# mini-swe-agent's own rule: the action is the one ```bash block; none or several is a format error
_BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
_THOUGHT = re.compile(r"^\s*THOUGHT:\s*")
_FORMAT = re.compile(rb'"trajectory_format"\s*:\s*"mini-swe-agent')
# `info` (exit status, then a submission that may be a long diff) is written first: a long file shows only that
_OPENING = re.compile(rb'^\s*\{\s*"info"\s*:\s*\{\s*"exit_status"\s*:')


class MiniSweAgentAdapter(Adapter):
    name = "mini-swe-agent"
    summary = ("mini-swe-agent trajectories (trajectory_format mini-swe-agent-1): the ```bash block of each "
               "assistant message is the action, the next user message the observation; tokens per step")
    example = "eebench convert runs/*/*.traj.json --from mini-swe-agent --out mini.jsonl"
    suffixes = (".json",)
    never_carries = frozenset({"latency_ms"})

    def handles(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".json" or head_value(head) != "{":
            return False
        return (_FORMAT.search(head) is not None or b'"mini_version"' in head
                or (len(head) == HEAD_BYTES and _OPENING.match(head) is not None))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        return document_episode(path, _episode)


def _episode(path: Path, value: Any) -> Episode:
    document = object_with_list(path, value, "messages", "a mini-swe-agent trajectory")
    steps: list[LoggedStep] = []
    model = None
    for index, message in enumerate(document["messages"]):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            found = "an object without a `role` string" if isinstance(message, Mapping) else json_type(message)
            raise bad_record(path, f"expected a chat message with a `role`, found {found}", record=0,
                             field=f"messages[{index}]")
        shape = message_problem(message)
        if shape is not None:   # (a content of another type was a step with no action and no output, silently)
            raise bad_record(path, shape[1], record=0, field=f"messages[{index}].{shape[0]}")
        response = dig(message, "extra.response")
        counts = usage_problem(response) if isinstance(response, Mapping) else None
        if counts is not None:   # (a count of another type was no count, silently)
            raise bad_record(path, counts[1], record=0, field=f"messages[{index}].extra.response.{counts[0]}")
        role = message["role"]
        if role == "assistant":
            steps.append(_step(message))
            model = model or dig(message, "extra.response.model")
        elif role == "user" and steps and steps[-1].observation is None:
            steps[-1].observation = text_of(message.get("content"))
    info = document.get("info") if isinstance(document.get("info"), Mapping) else {}
    meta: dict[str, Any] = {key: info[key] for key in ("exit_status", "mini_version")
                            if isinstance(info.get(key), str)}
    for key in ("instance_cost", "api_calls"):
        if number(dig(info, f"model_stats.{key}")) is not None:
            meta[key] = dig(info, f"model_stats.{key}")
    agent_class = dig(info, "config.agent_type")
    configured = dig(info, "config.model.model_name")
    task = path.name.removesuffix(".json").removesuffix(".traj")
    return Episode(id=task, record=0, steps=steps, task=task, fields=document,
                   agent={"name": agent_class.rsplit(".", 1)[-1] if isinstance(agent_class, str) else None,
                          "model": configured if isinstance(configured, str) else
                          model if isinstance(model, str) else None,
                          "harness": "mini-swe-agent"},
                   meta=meta)


def _step(message: Mapping[str, Any]) -> LoggedStep:
    content = text_of(message.get("content"))
    blocks = list(_BASH.finditer(content or ""))
    action = blocks[0].group(1).strip() if len(blocks) == 1 else None
    thought = _BASH.sub("", content or "") if len(blocks) == 1 else ""
    response = dig(message, "extra.response")
    tokens_in, tokens_out = usage_of(response) if isinstance(response, Mapping) else (None, None)
    return LoggedStep(action=action, raw=content, reasoning=_THOUGHT.sub("", thought).strip() or None,
                      tokens_in=tokens_in, tokens_out=tokens_out,
                      # the completion's `created` (epoch seconds) is the only clock mini-swe-agent keeps
                      timestamp=iso_utc(dig(response, "created")))
