"""`openhands`: OpenHands event streams (a JSON list of action and observation events); one file is one episode.

Every action the agent takes is a step, including `think`, `finish` and `message` (talking to the user is a
move the episode spent; the user's reply, if any, is its observation). The step's action is the event's action
type with the arguments that define it (`run({"command": "ls"})`); its observation is the event whose `cause`
is the action's id; its reasoning the completion's `reasoning_content`, then `args.thought`; its raw output the
model's tool call, tokens and latency from the completion behind it (`tool_call_metadata.model_response`, counted
once when it made several calls). The system prompt and recall events are not steps; the user's first message
(the task) is kept as meta.instruction. The stream names no instance: the task is the file's stem.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.actions import render_call
from eebench.adapters.base import (HEAD_BYTES, Adapter, Episode, LoggedStep, as_int, bad_record, count_problem, dig,
                                   number, text_of)
from eebench.adapters.chat import call_parts, message_problem, reasoning_of, usage_of, usage_problem
from eebench.adapters.records import head_value, json_records
from eebench.documents import json_type
from eebench.errors import InputError

# Actions of the harness, not decisions of the agent.
NOT_STEPS = frozenset({"system", "recall", "change_agent_state", "null", "pause", "resume", "stop", "start",
                       "initialize", "condensation", "condensation_request"})
# The arguments that say what an action did; others (thought, security_risk, blocking, ...) are bookkeeping.
DEFINING = {
    "run": ("command",), "run_ipython": ("code",), "read": ("path", "view_range"), "write": ("path", "content"),
    "edit": ("path", "command", "file_text", "old_str", "new_str", "insert_line", "content", "view_range"),
    "browse": ("url",), "browse_interactive": ("browser_actions",), "message": ("content",),
    "finish": ("final_thought",), "think": ("thought",), "delegate": ("agent", "inputs"), "mcp": ("name", "arguments"),
}
_EVENT = re.compile(rb'"source"\s*:\s*"(?:agent|user|environment)"')
_KIND = re.compile(rb'"(?:action|observation)"\s*:\s*"')
# an event as OpenHands writes it (id, timestamp, source, message, ...): the first is the system prompt, whose message
# may fill the head before its "action"
_OPENING = re.compile(rb'^\s*\[\s*\{\s*"id"\s*:\s*\d+\s*,\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"source"\s*:\s*'
                      rb'"(?:agent|user|environment)"\s*,\s*"message"\s*:')


class OpenHandsAdapter(Adapter):
    name = "openhands"
    summary = ("OpenHands event streams (JSON list of action/observation events): agent actions are steps, "
               "observations joined by `cause`; reasoning, tool call, tokens and time per step")
    example = "eebench convert trajectory.json --from openhands --out openhands.jsonl"
    suffixes = (".json",)
    never_carries = frozenset()

    def handles(self, path: Path, head: bytes) -> bool:
        return (path.suffix.lower() == ".json" and head_value(head) == "["
                and (_EVENT.search(head) is not None and _KIND.search(head) is not None
                     or len(head) == HEAD_BYTES and _OPENING.match(head) is not None))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        stream = _Stream(path)
        events = 0   # an empty list is no episode (as an empty log of any format), not one of no steps
        try:
            for events, item in enumerate(json_records(path), start=1):
                if isinstance(item, InputError):
                    raise item
                if not item.in_array:
                    raise bad_record(path, f"expected a JSON list of OpenHands events, found "
                                           f"{json_type(item.value)}", line=item.line, record=item.index)
                stream.add(item.index, item.value)
        except InputError as exc:
            yield exc
            return
        if events:
            yield stream.episode()


class _Stream:
    """The episode being assembled from its events, in order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.steps: list[LoggedStep] = []
        self.by_id: dict[Any, LoggedStep] = {}
        self.responses: set[str] = set()       # completions already counted (one may make several calls)
        self.talking: LoggedStep | None = None  # an agent message waiting for the user's reply
        self.meta: dict[str, Any] = {}
        self.agent: dict[str, str | None] = {"harness": "openhands"}

    def _bad(self, index: int, message: str, field: str | None = None) -> InputError:
        """The error of the event at `index`, located in the file (a subclass locates it in its own record)."""
        return bad_record(self.path, message, record=index, field=field)

    def add(self, index: int, event: Any) -> None:
        if not isinstance(event, Mapping):
            raise self._bad(index, f"expected an event object, found {json_type(event)}")
        if "action" in event:
            self._action(index, event)
        elif "observation" in event:
            self._observation(event)
        else:
            raise self._bad(index, f"expected an OpenHands event (with `action` or `observation`), found an "
                                   f"object with {', '.join(sorted(map(str, event))[:5]) or 'no keys'}")
        self._metrics(index, event)

    def _action(self, index: int, event: Mapping[str, Any]) -> None:
        kind, source, args = event.get("action"), event.get("source"), event.get("args") or {}
        if source is not None and not isinstance(source, str):   # (the step was dropped unread)
            raise self._bad(index, f"expected the event's source (agent, user or environment), found "
                                   f"{json_type(source)}", "source")
        if not isinstance(kind, str) or not isinstance(args, Mapping):
            found = json_type(kind) if not isinstance(kind, str) else f"args {json_type(args)}"
            raise self._bad(index, f"expected an action name and an args object, found {found}")
        if kind == "system":
            if isinstance(args.get("agent_class"), str):
                self.agent["name"] = args["agent_class"]
            if isinstance(args.get("openhands_version"), str):
                self.meta["openhands_version"] = args["openhands_version"]
            return
        if source == "user" and kind == "message":
            user_said(self, text_of(args.get("content")))
            return
        if source != "agent" or kind in NOT_STEPS:
            return
        step = self._step(index, kind, args, event)
        self.steps.append(step)
        if _is_key(event.get("id")):
            self.by_id[event["id"]] = step
        self.talking = step if kind == "message" else None
        if kind == "finish":
            self.meta["finished"] = True

    def _step(self, index: int, kind: str, args: Mapping[str, Any], event: Mapping[str, Any]) -> LoggedStep:
        keys = DEFINING.get(kind) or tuple(k for k in args if k != "thought")
        defining = {k: args[k] for k in keys if not _empty(args.get(k))}
        thought = args.get("thought") if isinstance(args.get("thought"), str) and args.get("thought") else None
        timestamp = event.get("timestamp")
        if not isinstance(timestamp, (str, type(None))):   # (the step's time was dropped unread)
            raise self._bad(index, f"expected a string or null, found {json_type(timestamp)}", "timestamp")
        step = LoggedStep(call=(kind, defining), reasoning=thought, timestamp=timestamp)
        metadata = event.get("tool_call_metadata")
        response = dig(metadata, "model_response")
        if not isinstance(response, Mapping):
            return step
        message = dig(response, "choices.0.message")
        message = message if isinstance(message, Mapping) else {}
        shape = message_problem(message)
        if shape is not None:   # (tool_calls of another type crashed; a call named by a list was named by its repr)
            raise self._bad(index, shape[1], f"tool_call_metadata.model_response.choices[0].message.{shape[0]}")
        counts = usage_problem(response)
        if counts is not None:   # (a count of another type was no count, silently)
            raise self._bad(index, counts[1], f"tool_call_metadata.model_response.{counts[0]}")
        # (an empty id names no completion: taken for one, it made later steps look counted already)
        response_id = response.get("id") if isinstance(response.get("id"), str) and response["id"] else None
        first = response_id is None or response_id not in self.responses
        calls = [call_parts(c) for c in message.get("tool_calls") or [] if isinstance(c, Mapping)]
        call = next((c for c in calls if c[2] == dig(metadata, "tool_call_id")), None)
        content = text_of(message.get("content")) if first else None
        parts = [content, render_call(call[0], call[1], verbatim=True) if call else None]
        step.raw = "\n".join(p for p in parts if p) or None
        if first:
            if response_id is not None:
                self.responses.add(response_id)
                step.latency_ms = self._latency(event, response_id)
            step.tokens_in, step.tokens_out = usage_of(response)
            # the model's own reasoning (reasoning_content) before the thought it wrote beside the call
            step.reasoning = "\n".join(t for t in (reasoning_of(message), step.reasoning) if t) or None
        if self.agent.get("model") is None and isinstance(response.get("model"), str):
            self.agent["model"] = response["model"]
        return step

    def _latency(self, event: Mapping[str, Any], response_id: str) -> float | None:
        latencies = dig(event, "llm_metrics.response_latencies")
        for entry in latencies if isinstance(latencies, list) else []:
            if isinstance(entry, Mapping) and entry.get("response_id") == response_id:
                seconds = number(entry.get("latency"))
                if seconds is not None and seconds >= 0:
                    return seconds * 1000
        return None

    def _observation(self, event: Mapping[str, Any]) -> None:
        if event.get("observation") == "agent_state_changed":
            state = dig(event, "extras.agent_state")
            if isinstance(state, str):
                self.meta["agent_state"] = state
            return
        cause = event.get("cause")
        step = self.by_id.get(cause) if _is_key(cause) else None
        content = text_of(event.get("content"))
        if step is not None and content is not None:
            step.observation = content if step.observation is None else f"{step.observation}\n{content}"

    def _metrics(self, index: int, event: Mapping[str, Any]) -> None:
        """Cumulative cost and tokens: the last event that has them holds the episode's totals."""
        metrics = event.get("llm_metrics")
        if not isinstance(metrics, Mapping):
            return
        if number(metrics.get("accumulated_cost")) is not None:
            self.meta["accumulated_cost"] = metrics["accumulated_cost"]
        for key, name in (("prompt_tokens", "tokens_in_total"), ("completion_tokens", "tokens_out_total")):
            value = dig(metrics, f"accumulated_token_usage.{key}")
            problem = count_problem(value)
            if problem is not None:
                raise self._bad(index, problem, f"llm_metrics.accumulated_token_usage.{key}")
            if value is not None:
                self.meta[name] = as_int(value)

    def episode(self) -> Episode:
        return Episode(id=self.path.stem, record=0, steps=self.steps, task=self.path.stem, fields=self.meta,
                       agent=self.agent, meta=self.meta)


def user_said(stream: Any, content: str | None) -> None:
    """A user's message in a stream (V0 or SDK): the first is the task (meta.instruction); a later one is the
    observation of the agent's message waiting for it (`talking`)."""
    if "instruction" not in stream.meta and content is not None:
        stream.meta["instruction"] = content
    elif stream.talking is not None:
        stream.talking.observation = content
        stream.talking = None


def _is_key(value: Any) -> bool:
    """An event id as OpenHands writes them (an integer, or a string in some exports)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _empty(value: Any) -> bool:
    """An argument left at nothing (None, False, "", [], {}); 0 is a value (`insert_line: 0`)."""
    return value is None or value is False or (isinstance(value, (str, list, dict)) and not value)
