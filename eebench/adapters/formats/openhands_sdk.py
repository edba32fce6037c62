"""`openhands-sdk` and `openhands-eval`: the OpenHands Software Agent SDK (V1) and OpenHands' evaluation output.

`openhands-sdk` reads a conversation as the SDK persists it: a folder `<conversation id>/` holding `base_state.json`
(the agent's configuration, its execution status and its LLM usage) and `events/event-NNNNN-<event id>.json`, one
event per file, each a JSON object with a `kind` (SystemPromptEvent, MessageEvent, ActionEvent, ObservationEvent,
AgentErrorEvent, UserRejectObservation, ...). Give the folder, `base_state.json` or any event file: the conversation
converts once (`primary_file`); the trajectory's id and task are the conversation folder's name.

`openhands-eval` reads the `output.jsonl` of OpenHands' evaluation harnesses, one instance per line
(`instance_id`, `test_result`, `instruction`, `metadata`, `history`, `metrics`, `error`): the V1 harness
(OpenHands/benchmarks) writes SDK events in `history`, the V0 one (OpenHands' `evaluation/`) writes V0 events, read
as the `openhands` adapter reads an event stream. The task is the line's `instance_id`.

SDK events become steps as the `openhands` adapter makes them of V0 events: each ActionEvent is a step whose action
is its tool and the arguments of the action it ran (`terminal({"command": "ls"})`; the model's own arguments string
when the SDK could not build the action), an agent's MessageEvent is a `message` step (talking to the user spent a
move; the user's reply is its observation), the user's first message is meta.instruction. A step's observation is
the ObservationEvent, AgentErrorEvent or UserRejectObservation answering it (by action id, else tool call id); its
raw output the model's text beside the call and the call as it wrote it; its reasoning the model's reasoning
(reasoning_content, else thinking blocks, else the Responses reasoning summary) then that text; its tokens and
latency those of the completion behind it (`llm_response_id` looked up in the metrics' `token_usages` and
`response_latencies`, counted once when one completion made several calls).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.actions import render_call
from eebench.adapters.base import (Adapter, Episode, LoggedStep, as_int, bad_record, count_problem, dig, number,
                                   text_of)
from eebench.adapters.formats.openhands import _empty, _Stream, user_said
from eebench.adapters.records import head_value, json_document, json_lines
from eebench.documents import json_type
from eebench.errors import InputError
from eebench.pieces import WHOLE, Span

# How the SDK names its files (openhands/sdk/conversation/persistence_const.py): the index has 5 digits or more.
EVENT_FILE = re.compile(r"event-(\d{5,})-([0-9a-fA-F-]{8,})\.json")
BASE_STATE = "base_state.json"
# an SDK event as pydantic writes it: `kind` first (SDK releases of 2025), or id, timestamp, source first
_EVENT_OPENING = re.compile(rb'^\s*\{\s*(?:"kind"\s*:\s*"[A-Za-z]+"|"id"\s*:\s*"[^"]*"\s*,\s*"timestamp"\s*:\s*"[^"]*"'
                            rb'\s*,\s*"source"\s*:\s*")')
_AGENT = re.compile(rb'"agent"\s*:\s*\{')
# an evaluation line as EvalOutput writes it (pydantic, or json.dumps with its spaces)
_EVAL_OPENING = re.compile(rb'^\s*\{\s*"instance_id"\s*:')
_TEST_RESULT = re.compile(rb'"test_result"\s*:')

# Fails is a callable making the located error of an event: (message, field) -> InputError.
Fails = Callable[[str, "str | None"], InputError]


class _SdkStream:
    """The episode being assembled from SDK events, in order."""

    def __init__(self) -> None:
        self.steps: list[LoggedStep] = []
        self.by_action: dict[str, LoggedStep] = {}     # ActionEvent id -> its step
        self.by_call: dict[str, LoggedStep] = {}       # tool call id -> its step
        self.counted: set[str] = set()                 # completions whose tokens a step already has
        self.talking: LoggedStep | None = None         # an agent message waiting for the user's reply
        self.usage: dict[str, tuple[int | None, int | None]] = {}   # response id -> (tokens in, tokens out)
        self.latency: dict[str, float] = {}            # response id -> milliseconds
        self.meta: dict[str, Any] = {}
        self.agent: dict[str, str | None] = {"harness": "openhands"}

    def metrics(self, metrics: Any, field: str, fails: Callable[[str, str], InputError]) -> None:
        """Per-completion tokens and latencies, and the totals, of an SDK `Metrics` object (at `field`)."""
        if metrics is None:
            return
        if not isinstance(metrics, Mapping):
            raise fails(f"expected an object or null, found {json_type(metrics)}", field)
        for name in ("token_usages", "response_latencies"):
            if metrics.get(name) is not None and not isinstance(metrics[name], list):
                raise fails(f"expected a list, found {json_type(metrics[name])}", f"{field}.{name}")
        for i, usage in enumerate(metrics.get("token_usages") or []):
            if not isinstance(usage, Mapping):
                continue
            counts = []
            for key in ("prompt_tokens", "completion_tokens"):
                problem = count_problem(usage.get(key))
                if problem is not None:
                    raise fails(problem, f"{field}.token_usages[{i}].{key}")
                counts.append(as_int(usage.get(key)))
            if isinstance(usage.get("response_id"), str) and usage["response_id"]:
                self.usage[usage["response_id"]] = (counts[0], counts[1])
        for entry in metrics.get("response_latencies") or []:
            seconds = number(entry.get("latency")) if isinstance(entry, Mapping) else None
            response = entry.get("response_id") if isinstance(entry, Mapping) else None
            if seconds is not None and seconds >= 0 and isinstance(response, str) and response:
                self.latency[response] = seconds * 1000
        totals = [("prompt_tokens", "tokens_in_total"), ("completion_tokens", "tokens_out_total")]
        for key, name in totals:
            value = dig(metrics, f"accumulated_token_usage.{key}")
            problem = count_problem(value)
            if problem is not None:
                raise fails(problem, f"{field}.accumulated_token_usage.{key}")
            if value is not None:
                self.meta[name] = self.meta.get(name, 0) + as_int(value)
        if number(metrics.get("accumulated_cost")) is not None:
            self.meta["accumulated_cost"] = self.meta.get("accumulated_cost", 0) + metrics["accumulated_cost"]

    def add(self, event: Any, fails: Fails) -> None:
        if not isinstance(event, Mapping):
            raise fails(f"expected an event object, found {json_type(event)}", None)
        kind = event.get("kind")
        if not isinstance(kind, str):
            keys = ", ".join(sorted(map(str, event))[:5]) or "no keys"
            raise fails(f"expected an OpenHands SDK event (an object with a `kind`), found "
                        f"{'an object with ' + keys if kind is None else 'a kind that is ' + json_type(kind)}",
                        None if kind is None else "kind")
        # the fields that make a step or join one are refused when of another type, never dropped unread
        _strings(event, ("timestamp", "id", "action_id", "tool_call_id", "tool_name", "llm_response_id",
                         "reasoning_content", "error", "rejection_reason"), fails)
        if kind == "ActionEvent":
            self._action(event, fails)
        elif kind == "MessageEvent":
            self._message(event, fails)
        elif kind == "ObservationEvent":
            observation = event.get("observation")
            if not isinstance(observation, Mapping):
                raise fails(f"expected the tool's observation (an object), found {json_type(observation)}",
                            "observation")
            _texts(observation, ("content", "output", "message"), fails, "observation.")
            self._answer(event, _observation_text(observation))
        elif kind == "UserRejectObservation":
            reason = event.get("rejection_reason")
            self._answer(event, f"Action rejected: {reason}" if isinstance(reason, str) else None)
        elif kind == "AgentErrorEvent":
            error = event.get("error")
            self._answer(event, error if isinstance(error, str) else None)
        elif kind == "ConversationErrorEvent" and isinstance(event.get("detail"), str):
            self.meta["conversation_error"] = event["detail"]
        # SystemPromptEvent, condensations, pauses, state updates, token streams, hooks: the harness's, no moves

    def _action(self, event: Mapping[str, Any], fails: Fails) -> None:
        call = event.get("tool_call")
        if not isinstance(call, Mapping):
            raise fails(f"expected the model's tool call (an object), found {json_type(call)}", "tool_call")
        name, arguments = call.get("name"), call.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, (str, type(None))):
            field = "tool_call.name" if not isinstance(name, str) else "tool_call.arguments"
            expected = "a string" if field.endswith("name") else "a JSON string of arguments"
            raise fails(f"expected {expected}, found {json_type(call.get(field.split('.')[1]))}", field)
        tool = event.get("tool_name") if isinstance(event.get("tool_name"), str) and event["tool_name"] else name
        action = event.get("action")
        if action is not None and not isinstance(action, Mapping):
            raise fails(f"expected the action the SDK ran (an object) or null, found {json_type(action)}", "action")
        _texts(event, ("thought",), fails)
        thought = event.get("thought")
        # the arguments of the action run (its schema's fields), else the model's own arguments when none was built
        defining: Mapping[str, Any] | str | None = (
            {k: v for k, v in action.items() if k != "kind" and not _empty(v)} if action is not None else arguments)
        text = text_of(thought or None)
        step = LoggedStep(call=(tool, defining), timestamp=event.get("timestamp"))
        first = self._completion(step, event.get("llm_response_id"))
        step.raw = "\n".join(p for p in (text if first else None, render_call(name, arguments, verbatim=True)) if p)
        step.reasoning = "\n".join(p for p in (_reasoning(event) if first else None, text) if p) or None
        self._add_step(step, event)
        self.talking = None
        if tool == "finish":
            self.meta["finished"] = True

    def _message(self, event: Mapping[str, Any], fails: Fails) -> None:
        message = event.get("llm_message")
        if not isinstance(message, Mapping):
            raise fails(f"expected the message (an object), found {json_type(message)}", "llm_message")
        _texts(message, ("content",), fails, "llm_message.")
        _strings(message, ("reasoning_content",), fails, "llm_message.")
        content = text_of(message.get("content"))
        source = event.get("source")
        if source == "user":
            user_said(self, content)
            return
        if source != "agent":
            return
        step = LoggedStep(call=("message", {"content": content} if content else None), raw=content,
                          timestamp=event.get("timestamp"))
        if self._completion(step, event.get("llm_response_id")):
            step.reasoning = _reasoning(message)
        self._add_step(step, event)
        self.talking = step

    def _completion(self, step: LoggedStep, response_id: Any) -> bool:
        """Give the step the tokens and latency of its completion, unless an earlier step of it has them; whether
        it is the completion's first step (an unnamed completion is a step's own)."""
        if not isinstance(response_id, str) or not response_id:
            return True
        if response_id in self.counted:
            return False
        self.counted.add(response_id)
        step.tokens_in, step.tokens_out = self.usage.get(response_id, (None, None))
        step.latency_ms = self.latency.get(response_id)
        return True

    def _add_step(self, step: LoggedStep, event: Mapping[str, Any]) -> None:
        self.steps.append(step)
        if isinstance(event.get("id"), str):
            self.by_action[event["id"]] = step
        if isinstance(event.get("tool_call_id"), str):
            self.by_call.setdefault(event["tool_call_id"], step)

    def _answer(self, event: Mapping[str, Any], text: str | None) -> None:
        """Attach a tool's answer to the step it answers (by action id, else tool call id)."""
        action_id, call_id = event.get("action_id"), event.get("tool_call_id")
        step = (self.by_action.get(action_id) if isinstance(action_id, str) else None) or (
            self.by_call.get(call_id) if isinstance(call_id, str) else None)
        if step is not None and text is not None:
            step.observation = text if step.observation is None else f"{step.observation}\n{text}"


def _strings(holder: Mapping[str, Any], keys: tuple[str, ...], fails: Fails, prefix: str = "") -> None:
    for key in keys:
        if not isinstance(holder.get(key), (str, type(None))):
            raise fails(f"expected a string or null, found {json_type(holder[key])}", prefix + key)


def _texts(holder: Mapping[str, Any], keys: tuple[str, ...], fails: Fails, prefix: str = "") -> None:
    """Text as the SDK writes it: a string, or a list of content parts whose text parts are strings."""
    for key in keys:
        value = holder.get(key)
        if value is None or isinstance(value, str):
            continue
        bad = not isinstance(value, list) or any(
            not isinstance(p, Mapping) or p.get("type", "text") == "text" and not isinstance(p.get("text"), str)
            for p in value)
        if bad:
            raise fails(f"expected a string or a list of content parts with their text, found {json_type(value)}",
                        prefix + key)


def _observation_text(observation: Mapping[str, Any]) -> str | None:
    """What a tool answered: its `content` parts (SDK releases from late 2025), else the `output` or `message` of
    earlier releases (ExecuteBashObservation, FinishObservation), else an error text."""
    for key in ("content", "output", "message", "error"):
        text = text_of(observation.get(key))
        if text is not None:
            return text
    return None


def _reasoning(holder: Mapping[str, Any]) -> str | None:
    """The model's own reasoning kept on an ActionEvent or an LLM message."""
    if isinstance(holder.get("reasoning_content"), str) and holder["reasoning_content"]:
        return holder["reasoning_content"]
    blocks = holder.get("thinking_blocks")
    texts = [b["thinking"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("thinking"), str)
             and b["thinking"]] if isinstance(blocks, list) else []
    if texts:
        return "\n".join(texts)
    item = holder.get("responses_reasoning_item")
    if isinstance(item, Mapping):
        parts = [p for key in ("summary", "content") if isinstance(item.get(key), list)
                 for p in item[key] if isinstance(p, str) and p]
        if parts:
            return "\n".join(parts)
    return None


def _event_index(name: str) -> int | None:
    match = EVENT_FILE.fullmatch(name)
    return int(match.group(1)) if match else None


class OpenHandsSdkAdapter(Adapter):
    name = "openhands-sdk"
    summary = ("OpenHands Software Agent SDK (V1) conversations: a folder with base_state.json and "
               "events/event-NNNNN-<id>.json; ActionEvents are steps, observations joined by action id; tokens and "
               "latency per step from base_state's usage metrics")
    example = "eebench convert conversations/0f3c.../ --from openhands-sdk --out openhands.jsonl"
    suffixes = (".json",)
    never_carries = frozenset()

    def handles(self, path: Path, head: bytes) -> bool:
        if head_value(head) != "{":
            return False
        if path.name == BASE_STATE:
            return _AGENT.search(head) is not None
        return (path.parent.name == "events" and _event_index(path.name) is not None
                and _EVENT_OPENING.match(head.removeprefix(b"\xef\xbb\xbf")) is not None)

    def primary_file(self, path: Path) -> Path:
        """Every file of a conversation reads as one: its base_state.json, else its first event file."""
        if path.name == BASE_STATE or _event_index(path.name) is None:
            return path
        state = path.parent.parent / BASE_STATE
        if state.is_file():
            return state
        first = _first_event_file(path.parent, path.parent.stat().st_mtime_ns)
        return path.parent / first if first else path

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        try:
            yield self._conversation(path)
        except InputError as exc:
            yield exc

    def _conversation(self, path: Path) -> Episode:
        stream = _SdkStream()
        state: Mapping[str, Any] = {}
        if path.name == BASE_STATE:
            value = json_document(path)
            if not isinstance(value, Mapping):
                raise bad_record(path, f"expected the SDK's conversation state (a JSON object), found "
                                       f"{json_type(value)}")
            state = value
            _read_state(path, state, stream)
            events = path.parent / "events"
        else:
            events = path.parent
        files = _event_files(events) if events.is_dir() else []
        if not files:
            raise bad_record(path, f"expected the conversation's events in {events} (event-NNNNN-<id>.json files, "
                                   "as the OpenHands SDK persists them), found none")
        for expected, (index, name) in enumerate(files):
            if index != expected:   # (the SDK itself stops reading at a gap: the rest would be lost unsaid)
                raise bad_record(events / name, f"expected event {expected} next, found event {index} (event "
                                                f"files numbered from 0 without a gap or a repeat)")
        for _index, name in files:
            event_path = events / name
            event = json_document(event_path)
            stream.add(event, lambda message, field, at=event_path: bad_record(at, message, field=field))
        conversation = events.parent.name
        return Episode(id=conversation, record=0, steps=stream.steps, task=conversation, fields=state,
                       agent=stream.agent, meta=stream.meta)


@functools.lru_cache(maxsize=1)
def _first_event_file(folder: Path, mtime_ns: int) -> str | None:
    """The first event file's name: listed once for all the files of a folder given to `convert` (a listing per
    file made a folder of n events take n^2 steps); keyed by the folder's mtime, which changes with its files."""
    files = _event_files(folder)
    return files[0][1] if files else None


def _event_files(folder: Path) -> list[tuple[int, str]]:
    """The SDK's event files of a folder, in the order of their numbers."""
    named = ((_event_index(entry.name), entry.name) for entry in os.scandir(folder) if entry.is_file())
    return sorted((index, name) for index, name in named if index is not None)


def _read_state(path: Path, state: Mapping[str, Any], stream: _SdkStream) -> None:
    """The model, execution status and usage metrics of a conversation's base_state.json."""
    model = dig(state, "agent.llm.model")
    if isinstance(model, str) and model:
        stream.agent["model"] = model
    if isinstance(state.get("execution_status"), str):
        stream.meta["execution_status"] = state["execution_status"]
    usage = dig(state, "stats.usage_to_metrics")
    if usage is None:
        return
    if not isinstance(usage, Mapping):
        raise bad_record(path, f"expected an object of metrics by usage id, found {json_type(usage)}",
                         field="stats.usage_to_metrics")
    # every LLM of the conversation (agent, condenser, ...): the totals are the conversation's, as the SDK sums them
    for usage_id, metrics in usage.items():
        stream.metrics(metrics, f"stats.usage_to_metrics.{usage_id}",
                       lambda message, field: bad_record(path, message, field=field))


class OpenHandsEvalAdapter(Adapter):
    name = "openhands-eval"
    summary = ("OpenHands evaluation output.jsonl (V1 benchmarks harness: SDK events; V0 evaluation/: event "
               "stream) one instance per line: history read as openhands-sdk or openhands, tokens per step from "
               "metrics; instance_id the task, test_result kept in meta")
    example = "eebench convert output.jsonl --from openhands-eval --out openhands.jsonl"
    suffixes = (".jsonl",)
    never_carries = frozenset()

    def handles(self, path: Path, head: bytes) -> bool:
        first = head.removeprefix(b"\xef\xbb\xbf").lstrip().partition(b"\n")[0]
        return (path.suffix.lower() in (".jsonl", ".ndjson") and _EVAL_OPENING.match(first) is not None
                and _TEST_RESULT.search(first) is not None)

    lines_are_episodes = True

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        return self.line_episodes(path, WHOLE)

    def line_episodes(self, path: Path, span: Span) -> Iterator[Episode | InputError]:
        for item in json_lines(path, span=span):
            if isinstance(item, InputError):
                yield item
                continue
            try:
                yield self._line(path, item.line, item.value)
            except InputError as exc:
                yield exc

    def _line(self, path: Path, line: int | None, record: Any) -> Episode:
        def fails(message: str, field: str | None = None) -> InputError:
            return bad_record(path, message, line=line, field=field)

        if not isinstance(record, Mapping):
            raise fails(f"expected an evaluation output (a JSON object), found {json_type(record)}")
        instance = record.get("instance_id")
        if not isinstance(instance, str) or not instance:
            raise fails(f"expected the instance's id (a string), found {json_type(instance)}", "instance_id")
        history = record.get("history")
        if history is None and isinstance(record.get("error"), str):
            history = []   # a run that failed before its first event: V0 writes null, V1 an empty list
        if not isinstance(history, list):
            found = "none" if history is None else json_type(history)
            raise fails(f"expected the run's events (a list), found {found}"
                        + (" (an output.jsonl of results only keeps no steps)" if history is None else ""), "history")
        attempt = record.get("attempt")
        if attempt is not None and (type(attempt) is not int or attempt < 1):
            raise fails(f"expected an attempt number (an integer >= 1), found {json_type(attempt)}", "attempt")
        first = next((e for e in history if isinstance(e, Mapping)), None)
        if first is not None and "kind" in first:
            stream = _SdkStream()
            stream.metrics(record.get("metrics"), "metrics", fails)
            for index, event in enumerate(history):
                stream.add(event, lambda message, field, at=index: fails(
                    message, f"history[{at}]" + (f".{field}" if field else "")))
            steps, agent, meta = stream.steps, stream.agent, stream.meta
        else:
            v0 = _LineStream(path, line)
            for index, event in enumerate(history):
                v0.add(index, event)
            steps, agent, meta = v0.steps, v0.agent, v0.meta
            if isinstance(dig(record, "metadata.agent_class"), str):
                agent.setdefault("name", record["metadata"]["agent_class"])
            totals = _SdkStream()   # the run's totals, where its events carry none
            totals.metrics(record.get("metrics"), "metrics", fails)
            for key in ("accumulated_cost", "tokens_in_total", "tokens_out_total"):
                if key in totals.meta:
                    meta.setdefault(key, totals.meta[key])
        # the V1 harness's metadata names it `llm`, the V0 one's `llm_config` (either, whatever the history: a run
        # that failed before its first event has none to tell them apart)
        for model in (dig(record, "metadata.llm.model"), dig(record, "metadata.llm_config.model")):
            if agent.get("model") is None and isinstance(model, str) and model:
                agent["model"] = model
        instruction = record.get("instruction")
        if isinstance(instruction, str) and instruction:
            meta.setdefault("instruction", instruction)
        if isinstance(record.get("error"), str):
            meta["error"] = record["error"]
        if isinstance(record.get("test_result"), Mapping):
            meta["test_result"] = dict(record["test_result"])
        if attempt is not None:
            meta["attempt"] = attempt
        # named as openai-chat names a record of a results file: the file's stem, then the record's own id
        episode_id = f"{path.stem}/{instance}" + ("" if attempt in (None, 1) else f"/attempt-{attempt}")
        return Episode(id=episode_id, record=episode_id, line=line, steps=steps, task=instance, fields=record,
                       agent=agent, meta=meta)


class _LineStream(_Stream):
    """A V0 event stream kept in an evaluation line's `history`: its errors name the line and the event."""

    def __init__(self, path: Path, line: int | None) -> None:
        super().__init__(path)
        self.line = line

    def _bad(self, index: int, message: str, field: str | None = None) -> InputError:
        where = f"history[{index}]" + (f".{field}" if field else "")
        return bad_record(self.path, message, line=self.line, field=where)
