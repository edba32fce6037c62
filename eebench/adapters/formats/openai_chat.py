"""`openai-chat`: chat-completions message arrays (JSON or JSON Lines), with tool calls or text actions.

Reads a list of messages (one episode), an object holding one under `messages`, `traj` or `conversation`
(tau-bench's results files are a list of these), or JSON Lines of either.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import orjson

from eebench.adapters.base import Adapter, Deferred, Episode, as_label, bad_record
from eebench.adapters.chat import ChatMessage, chat_steps, messages_problem, typed_chat_documents
from eebench.adapters.records import FastReader, JsonRecord, json_lines, json_records
from eebench.documents import json_type, orjson_reads_exactly, too_deep
from eebench.errors import InputError
from eebench.long_lines import top_level
from eebench.pieces import Span

MESSAGE_KEYS = ("messages", "traj", "conversation")
# Keys that mark other formats which also embed chat messages; their own adapters read them.
OTHER_FORMATS = (b'"responses_create_params"', b'"schema_version"', b'"conversations"',
                 b'"trajectory_format"', b'"mini_version"', b'_type": "minisweagent.', b'_type":"minisweagent.',
                 # mini-swe-agent (2.x: the first two at its end, its config's classes early)
                 b'"samples"', b'"spans"', b'"dotted_order"', b'"history"', b'"eebench"', b'"message_pool"',
                 b'"tool_call_metadata"', b'"extras"',   # OpenHands event streams
                 b'"llm_message"',   # an OpenHands SDK conversation's MessageEvent file
                 b'"output_text"', b'"object": "response"', b'"object":"response"')   # Responses-API objects


def read_fast(raw: bytes) -> tuple[dict[str, Any], list[ChatMessage]] | None:
    """A JSON line that is a record of messages in the common shape: its value, the messages in it left as their
    text (`Deferred`), and the messages typed; None leaves the line to the exact path.

    msgspec splits the line's top level and types the messages straight from their text, with no Python object
    per JSON value (orjson's parse and msgspec's typing of its objects took twice as long); each other value is read
    by orjson. It answers only where the door gives the same value: msgspec and orjson refuse NaN, lone surrogates
    and bytes that are not UTF-8, as the door does; two of the door's checks are needed only when a field beside the
    messages is not a scalar, or is a float: the depth count (the messages' types nest six levels at most), and the
    one for integers orjson cannot read exactly (beyond 64 bits it reads them as floats; every integer it returns is
    exact, and the messages' types hold no float).
    """
    try:
        top = top_level(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    key = next((k for k in MESSAGE_KEYS if k in top and bytes(memoryview(top[k])[:1]) == b"["), None)
    if key is None:
        return None
    value: dict[str, Any] = {}
    nested = floats = False
    try:
        for name, text in top.items():
            if name == key:
                value[name] = Deferred(text)
                continue
            other = value[name] = orjson.loads(memoryview(text))
            kind = type(other)
            nested |= kind is dict or kind is list
            floats |= kind is float
    except orjson.JSONDecodeError:
        return None
    if (nested or floats) and not orjson_reads_exactly(raw) or nested and too_deep(raw):
        return None
    try:
        return value, _typed_messages(top[key])
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        return None


_typed_messages = msgspec.json.Decoder(list[ChatMessage]).decode


class OpenAIChatAdapter(Adapter):
    name = "openai-chat"
    summary = ("OpenAI chat-completions transcripts: a JSON list of messages, objects with `messages`/`traj` "
               "(tau-bench results), or JSON Lines of those; tool calls (also a legacy `function_call`, and "
               "Anthropic's `tool_use`/`tool_result`/`thinking` content parts) or text actions")
    example = "eebench convert episodes.jsonl --from openai-chat --instance-field task_id --out runs.jsonl"
    suffixes = (".json", ".jsonl")
    never_carries = frozenset({"latency_ms", "timestamp"})
    # JSON Lines records of the common shape are read by the fast path; None reads every record the exact way
    fast_reader: FastReader | None = staticmethod(read_fast)
    lines_are_episodes = True

    def handles(self, path: Path, head: bytes) -> bool:
        return (path.suffix.lower() in self.suffixes and b'"role"' in head and b'"assistant"' in head
                and not any(marker in head for marker in OTHER_FORMATS))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        records = json_records(path, fast=self.fast_reader)
        for item in records:
            if isinstance(item, InputError):
                yield item
                continue
            if item.in_array and isinstance(item.value, dict) and "role" in item.value:
                # a top-level list of messages: the whole file is one episode
                messages = [item.value] + [r.value for r in records if not _raise(r)]
                yield self._episode(path, JsonRecord(None, 0, messages))
                return
            yield self._episode(path, item)

    def line_episodes(self, path: Path, span: Span) -> Iterator[Episode | InputError]:
        for item in json_lines(path, self.fast_reader, span):
            yield item if isinstance(item, InputError) else self._episode(path, item)

    def _episode(self, path: Path, item: JsonRecord) -> Episode | InputError:
        value = item.value
        fields: Mapping[str, Any] = {}
        if isinstance(value, dict):
            fields = value
            key = next((k for k in MESSAGE_KEYS if isinstance(value.get(k), (list, Deferred))), None)
            if key is None:
                return bad_record(path, f"expected a list of messages under {', '.join(MESSAGE_KEYS)}",
                                  line=item.line, record=item.index)
            messages = value[key]
        elif isinstance(value, list):
            messages = value
        else:
            return bad_record(path, f"expected a list of chat messages or an object holding one, found "
                                    f"{json_type(value)}", line=item.line, record=item.index)
        typed: list[ChatMessage] | None = item.typed   # every message has a role: its type says so
        bad = None if typed is not None else next(
            (i for i, m in enumerate(messages) if not isinstance(m, dict) or "role" not in m), None)
        if bad is not None:
            return bad_record(path, "expected a chat message with a `role`", line=item.line, record=item.index,
                              field=f"messages[{bad}]")
        shape = None if typed is not None else messages_problem(messages)
        if shape is not None:
            return bad_record(path, shape[1], line=item.line, record=item.index, field=shape[0])
        for name in ("task_id", "task", "trial"):   # what names the episode in its id: text or an integer
            if fields.get(name) is not None and as_label(fields[name]) is None:
                return bad_record(path, f"expected a string or an integer, found {json_type(fields[name])}",
                                  line=item.line, record=item.index, field=name)
        task = as_label(fields.get("task_id", fields.get("task")))
        record_id: str | int = item.index
        if fields.get("trial") is not None and task is not None:   # (a null trial is none, not trial-None)
            record_id = f"task-{task}/trial-{fields['trial']}"
        elif isinstance(fields.get("id"), (str, int)):
            record_id = str(fields["id"])
        model = fields.get("model") or next(
            (m.get("model") for m in messages if m.get("role") == "assistant" and isinstance(m.get("model"), str))
            if typed is None else (m.model for m in typed if m.role == "assistant" and m.model is not None), None)
        steps = chat_steps(messages) if typed is None else []
        documents = None if typed is None else functools.partial(typed_chat_documents, typed)
        meta = {k: v for k, v in fields.items()
                if k not in MESSAGE_KEYS and (v is None or isinstance(v, (str, int, float, bool)))}
        return Episode(id=f"{path.stem}/{record_id}", record=record_id,
                       line=item.line, steps=steps, step_documents=documents, task=task, fields=fields,
                       agent={"model": model if isinstance(model, str) else None}, meta=meta)


def _raise(item: JsonRecord | InputError) -> bool:
    if isinstance(item, InputError):
        raise item
    return False
