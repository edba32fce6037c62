"""`mini-swe-agent`: mini-swe-agent trajectories (`trajectory_format: mini-swe-agent-1` and `-1.1`); one file is one
episode.

Version 1 (and 2's text-based models): each assistant message is a step: the one command the harness recorded
as run (2.x's `extra.actions`), else its one ```bash block (```mswea_bash_command in 2.x), is the action, the
text around it ("THOUGHT: …") the reasoning, the whole content the raw output; the next user message is the
observation (`<returncode>…`, or the harness's format-error message when the output did not hold exactly one
block, in which case the step has no action; 2.x keeps no assistant message then, and its format-error message
is that step, with the answer from `extra.model_response`). Version 2 (tool-calling models, mini-swe-agent 2.x):
each tool call of an assistant message is a step, its `command` argument the action, the call as the model wrote it the raw
output and the text beside it the reasoning (on the first call); the `tool` message answering the call is the
observation. Per-step tokens and the time come from the raw completion kept in `extra.response`. The closing
`exit` message (the submission, also in `info`) is no step. The task is the file's `instance_id` (2.x), else the
file name without `.traj.json` (mini-swe-agent saves a run as `<instance>.traj.json`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.actions import decoded_arguments, render_call
from eebench.adapters.base import (HEAD_BYTES, Adapter, Episode, LoggedStep, bad_record, dig, iso_utc, listed,
                                  number, text_of)
from eebench.adapters.chat import call_parts, message_problem, usage_of, usage_problem
from eebench.adapters.records import document_episode, head_value, object_with_list
from eebench.documents import json_type
from eebench.errors import InputError

# mini-swe-agent's own rule: the action is the one ```bash block (```mswea_bash_command in 2.x's text-based
# models); none or several is a format error
_BASH = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)
_THOUGHT = re.compile(r"^\s*THOUGHT:\s*")
_FORMAT = re.compile(rb'"trajectory_format"\s*:\s*"mini-swe-agent')
# `info` is written first: in 1.x its exit status, then a submission that may be a long diff; in 2.x its config,
# the agent's templates (which may be long) before the classes that name the package. A long file shows only that.
_OPENING = re.compile(rb'^\s*\{\s*"info"\s*:\s*\{\s*(?:"exit_status"\s*:|"config"\s*:\s*\{\s*"agent"\s*:\s*\{\s*'
                      rb'"system_template"\s*:)')
_CLASSES = re.compile(rb'"(?:agent|model|environment)_type"\s*:\s*"minisweagent\.')


class MiniSweAgentAdapter(Adapter):
    name = "mini-swe-agent"
    summary = ("mini-swe-agent trajectories (trajectory_format mini-swe-agent-1, 1.x and 2.x): the ```bash block "
               "of each assistant message, or each `bash` tool call's command, is the action, the next user or "
               "tool message the observation; tokens per step")
    example = "eebench convert runs/*/*.traj.json --from mini-swe-agent --out mini.jsonl"
    suffixes = (".json",)
    never_carries = frozenset({"latency_ms"})

    def handles(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".json" or head_value(head) != "{":
            return False
        return (_FORMAT.search(head) is not None or b'"mini_version"' in head or _CLASSES.search(head) is not None
                or (len(head) == HEAD_BYTES and _OPENING.match(head) is not None))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        return document_episode(path, _episode)


def _episode(path: Path, value: Any) -> Episode:
    document = object_with_list(path, value, "messages", "a mini-swe-agent trajectory")
    steps: list[LoggedStep] = []
    by_call: dict[str, LoggedStep] = {}   # 2.x: each tool call's step, by the call's id
    model = None
    last_role = None
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
            steps.extend(_steps(message, by_call))
            model = model or dig(message, "extra.response.model")
        elif role == "tool" and steps:
            step = by_call.get(str(message.get("tool_call_id"))) or steps[-1]
            text = text_of(message.get("content"))
            if text is not None:
                step.observation = text if step.observation is None else f"{step.observation}\n{text}"
        elif role == "user" and last_role != "assistant" and dig(message, "extra.interrupt_type") == "FormatError":
            # 2.x keeps no assistant message for an answer it could not parse: its format error stands for the
            # turn, with the answer in `extra.model_response` when kept (a step with no action, as in 1.x)
            answer = dig(message, "extra.model_response")
            steps.append(LoggedStep(action=None, raw=answer if isinstance(answer, str) else None,
                                    observation=text_of(message.get("content"))))
        elif role == "user" and steps and steps[-1].observation is None:
            steps[-1].observation = text_of(message.get("content"))
        last_role = role
    info = document.get("info") if isinstance(document.get("info"), Mapping) else {}
    meta: dict[str, Any] = {key: info[key] for key in ("exit_status", "mini_version")
                            if isinstance(info.get(key), str)}
    for key in ("instance_cost", "api_calls"):
        if number(dig(info, f"model_stats.{key}")) is not None:
            meta[key] = dig(info, f"model_stats.{key}")
    agent_class = dig(info, "config.agent_type")
    configured = dig(info, "config.model.model_name")
    task = document.get("instance_id")
    if not isinstance(task, str) or not task:
        task = path.name.removesuffix(".json").removesuffix(".traj")
    return Episode(id=task, record=0, steps=steps, task=task, fields=document,
                   agent={"name": agent_class.rsplit(".", 1)[-1] if isinstance(agent_class, str) else None,
                          "model": configured if isinstance(configured, str) else
                          model if isinstance(model, str) else None,
                          "harness": "mini-swe-agent"},
                   meta=meta)


def _steps(message: Mapping[str, Any], by_call: dict[str, LoggedStep]) -> list[LoggedStep]:
    """The steps of an assistant message: one per tool call (2.x), else the one of its ```bash block."""
    content = text_of(message.get("content"))
    response = dig(message, "extra.response")
    tokens_in, tokens_out = usage_of(response) if isinstance(response, Mapping) else (None, None)
    # the completion's `created` (epoch seconds); 2.x also stamps the message when it was received
    timestamp = iso_utc(dig(response, "created")) or iso_utc(dig(message, "extra.timestamp"))
    calls = [call for call in listed(message.get("tool_calls")) if isinstance(call, Mapping)]
    if not calls:
        blocks = list(_BASH.finditer(content or ""))
        executed = _executed(message)   # (what the harness ran wins: a config may read other blocks than ours)
        action = executed if executed is not None else blocks[0].group(1).strip() if len(blocks) == 1 else None
        thought = (_BASH.sub("", content or "") if len(blocks) == 1 else content or "") if action is not None else ""
        return [LoggedStep(action=action, raw=content, reasoning=_THOUGHT.sub("", thought).strip() or None,
                           tokens_in=tokens_in, tokens_out=tokens_out, timestamp=timestamp)]
    steps = []
    for i, call in enumerate(calls):
        name, arguments, call_id = call_parts(call)
        first = i == 0
        step = LoggedStep(action=_command(arguments), raw=render_call(name, arguments, verbatim=True),
                          reasoning=(content or None) if first else None, tokens_in=tokens_in if first else None,
                          tokens_out=tokens_out if first else None, timestamp=timestamp)
        if call_id is not None:
            by_call[str(call_id)] = step
        steps.append(step)
    return steps


def _executed(message: Mapping[str, Any]) -> str | None:
    """The one command 2.x recorded as run for a text answer (`extra.actions`: [{"command": ...}]), else None."""
    actions = [a for a in listed(dig(message, "extra.actions")) if isinstance(a, Mapping)]
    return _command(actions[0]) if len(actions) == 1 else None


def _command(arguments: Any) -> str | None:
    """The shell command of a 2.x `bash` tool call (`{"command": "ls"}`, JSON-encoded or not); None when the call
    holds none (mini-swe-agent answers such a call with a format error, as it does a text without one bash
    block)."""
    arguments = decoded_arguments(arguments)
    command = arguments.get("command") if isinstance(arguments, Mapping) else None
    return command if isinstance(command, str) else None
