"""`inspect`: UK AISI Inspect eval logs, the `.json` EvalLog and the `.eval` ZIP; one trajectory per sample x epoch.

The steps are the sample's chat transcript (`sample.messages`; when a log left it empty, the last `model` event's
input, resolved from `sample.message_pool` through `input_refs`, plus its output). Strings `attachment://<hash>`
are replaced by `sample.attachments[hash]`. Each assistant turn is joined to the `model` event that produced it
(by message id, else by order when the counts agree; a model-graded scorer's calls are no turn's) for its tokens
(`output.usage`), its latency (`output.time`) and its timestamp. A `.json` log's samples are streamed one at a
time; a `.eval` holds one sample per member.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import ijson

from eebench.adapters.base import (Adapter, Episode, as_int, as_label, bad_record, count_problem, dig, listed,
                                   scalars, text_of)
from eebench.adapters.chat import chat_turns, messages_problem, usage_problem
from eebench.adapters.records import (MAX_DOCUMENT_BYTES, DepthBoundedReader, head_value, json_array_items,
                                      skip_bom)
from eebench.documents import JsonLimitError, json_problem, json_type, loads_json, open_input
from eebench.errors import InputError

ATTACHMENT = "attachment://"
ZIP_MAGIC = b"PK\x03\x04"
_EVAL_SPEC = re.compile(rb'"eval"\s*:\s*\{')
_SAMPLE_MEMBER = re.compile(r"^samples/[^/]+\.json$")
_HEADER_MEMBERS = ("header.json", "_journal/start.json", "start.json")   # where a .eval keeps its eval spec


class InspectAdapter(Adapter):
    name = "inspect"
    summary = ("Inspect (inspect_ai) eval logs: the .json EvalLog or the .eval ZIP (also of a run still going: "
               "its _journal/start.json); one trajectory per sample and epoch, attachments and message-pool "
               "references resolved")
    example = "eebench convert logs/2025-05-12T20-27-36_browser.eval --from inspect --out runs.jsonl"
    suffixes = (".eval", ".json")
    never_carries = frozenset()

    def handles(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix == ".eval":
            return head.startswith(ZIP_MAGIC)
        return (suffix == ".json" and head_value(head) == "{" and _EVAL_SPEC.search(head) is not None
                and (b'"eval_id"' in head or b'"run_id"' in head) and b'"task"' in head)   # (no eval_id before 2025)

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        if path.suffix.lower() == ".eval" or _is_zip(path):
            yield from self._eval_zip(path)
        else:
            yield from self._eval_json(path)

    def _eval_json(self, path: Path) -> Iterator[Episode | InputError]:
        header = _json_header(path)
        spec = header.get("eval")
        if not isinstance(spec, Mapping):
            raise InputError.at(str(path), f"expected an Inspect EvalLog with an `eval` object, found "
                                           f"{json_type(spec)} there", field="eval")
        for item in json_array_items(path, "samples.item"):
            if isinstance(item, InputError):
                yield item
                continue
            yield self._episode(path, header, item.value, f"samples[{item.index}]")

    def _eval_zip(self, path: Path) -> Iterator[Episode | InputError]:
        try:
            with zipfile.ZipFile(path) as archive:
                names = set(archive.namelist())
                # header.json is written when the run ends; a run still going, or killed, has the start's record
                # (`_journal/start.json`; `start.json` in the first .eval layout), which holds the eval spec too
                member = next((m for m in _HEADER_MEMBERS if m in names), _HEADER_MEMBERS[0])
                header = _member_json(path, archive, member)
                if isinstance(header, InputError):
                    raise header
                spec = dig(header, "eval") if isinstance(header, Mapping) else header
                if not isinstance(spec, Mapping):
                    raise bad_record(path, f"expected an `eval` object, found {json_type(spec)}",
                                     record=member, field="eval")
                for member in archive.namelist():
                    if _SAMPLE_MEMBER.match(member):
                        sample = _member_json(path, archive, member)
                        yield sample if isinstance(sample, InputError) else \
                            self._episode(path, header, sample, member)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            raise InputError.at(str(path), f"not a readable .eval ZIP archive ({exc}); is the file cut short?") \
                from None

    def _episode(self, path: Path, header: Mapping[str, Any], sample: Any, record: str) -> Episode | InputError:
        def bad(message: str, field: str | None = None) -> InputError:
            return bad_record(path, message, record=record, field=field)

        if not isinstance(sample, Mapping):
            return bad(f"expected an Inspect sample object, found {json_type(sample)}")
        spec: Mapping[str, Any] = header["eval"]
        attachments = sample.get("attachments")
        resolve = _Resolver(attachments if isinstance(attachments, Mapping) else {})
        events = sample.get("events") or []
        if not isinstance(events, list):
            return bad(f"expected a list of events, found {json_type(events)}", "events")
        model_events = _solver_model_events(events)
        if isinstance(model_events, tuple):
            return bad(model_events[1], model_events[0])
        messages = sample.get("messages")
        if messages is not None and not isinstance(messages, list):
            return bad(f"expected a list of messages, found {json_type(messages)}", "messages")
        if not messages:
            messages = _transcript_from_events(model_events, events, sample.get("message_pool"))
            if isinstance(messages, str):
                return bad(messages, "events")
        odd = next((i for i, m in enumerate(messages) if not isinstance(m, Mapping)), None)
        if odd is not None:   # (it would be dropped unread, and with it the step)
            return bad(f"expected a message object, found {json_type(messages[odd])}", f"messages[{odd}]")
        shape = messages_problem(messages)
        if shape is not None:   # (a tool call named by a list would be named by its Python repr)
            return bad(shape[1], shape[0])
        counts = _counts_problem(events, sample.get("model_usage"))
        if counts is not None:   # (a count of another type was no count, silently)
            return bad(counts[1], counts[0])
        messages = [_with_error(resolve(m)) for m in messages]
        turns = chat_turns(messages)
        _add_model_calls(turns, model_events)
        sample_id, epoch = sample.get("id"), sample.get("epoch", 1)
        for name, value in (("id", sample_id), ("epoch", epoch)):   # they name the trajectory: text or an integer
            if as_label(value) is None:
                return bad(f"expected a string or an integer, found {json_type(value)}", name)
        run = next((spec[k] for k in ("eval_id", "run_id") if isinstance(spec.get(k), str)), path.stem)
        task = spec.get("task")
        if task is not None and as_label(task) is None:   # (it names the instance: the file's name stood in, silently)
            return bad(f"expected a string or an integer, found {json_type(task)}", "eval.task")
        return Episode(
            id=f"{run}/{sample_id}/epoch-{epoch}", record=record, steps=[s for _, steps in turns for s in steps],
            task=f"{as_label(task)}/{sample_id}" if task is not None else None, fields=sample,
            agent={"model": spec.get("model") if isinstance(spec.get("model"), str) else None,
                   "name": spec.get("solver") if isinstance(spec.get("solver"), str) else None,
                   "harness": "inspect_ai"},
            meta=_meta(header, spec, sample))


class _Resolver:
    """Replaces `attachment://<hash>` strings, at any depth, by the text the sample keeps for them."""

    def __init__(self, attachments: Mapping[str, Any]) -> None:
        self.attachments = attachments

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(ATTACHMENT):
                found = self.attachments.get(value[len(ATTACHMENT):])
                return found if isinstance(found, str) else value
            return value
        if isinstance(value, Mapping):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value


def _transcript_from_events(model_events: list[Mapping[str, Any]], events: list[Any],
                            pool: Any) -> list[Any] | str:
    """The transcript of a sample without `messages`: the last model call's input and output, then the tool
    results that came after it. The input is inline, or `input_refs` ranges into the sample's message pool."""
    if not model_events:
        return []
    last = model_events[-1]
    refs = last.get("input_refs")
    if refs:
        if not isinstance(pool, list):
            return f"a model event has input_refs but the sample has no message_pool list (found {json_type(pool)})"
        messages: list[Any] = []
        for ref in refs:
            if not (isinstance(ref, list) and len(ref) == 2 and all(isinstance(i, int) for i in ref)
                    and 0 <= ref[0] <= ref[1] <= len(pool)):
                return f"expected input_refs of [start, end] within the {len(pool)} pooled messages, found {ref!r}"
            messages.extend(pool[ref[0]:ref[1]])
    else:
        messages = list(listed(last.get("input")))
    choices = _choices(last)
    if choices:
        messages.append(choices[0]["message"])
    after = events[events.index(last) + 1:]
    messages.extend({"role": "tool", "tool_call_id": e.get("id"), "content": _tool_result(e)} for e in after
                    if isinstance(e, Mapping) and e.get("event") == "tool")
    return messages


SCORING = ("scorer", "scorers")   # the type of a step (older logs) or span (newer) that scores the sample


def _solver_model_events(events: list[Any]) -> list[Mapping[str, Any]] | tuple[str, str]:
    """The sample's `model` events made while it was solved: those within a scorer's step or span (a
    model-graded scorer's call) made no turn of the transcript. Or (field, what was expected and found) for a span
    id that cannot be one."""
    made: list[Mapping[str, Any]] = []
    scoring = 0              # scorer steps begun and not ended (older logs)
    spans: set[Any] = set()  # scorer spans open (newer logs)
    for i, event in enumerate(events):
        if not isinstance(event, Mapping):
            continue
        kind = event.get("event")
        if kind in ("span_begin", "span_end") and not isinstance(event.get("id"), (str, int, type(None))):
            # (a list or an object there ended in a TypeError, unhashable, as the span was looked up)
            return f"events[{i}].id", f"expected a span id (a string), found {json_type(event.get('id'))}"
        if kind == "model" and not scoring and not spans:
            made.append(event)
        elif kind == "step" and event.get("type") in SCORING:
            scoring = max(0, scoring + (1 if event.get("action") == "begin" else -1))
        elif kind == "span_begin" and event.get("type") in SCORING:
            spans.add(event.get("id"))
        elif kind == "span_end":
            spans.discard(event.get("id"))
    return made


def _tool_result(event: Mapping[str, Any]) -> str | None:
    result = event.get("result")
    return result if isinstance(result, str) else text_of(result)


def _with_error(message: Any) -> Any:
    """A tool message whose call failed says so in its observation (Inspect keeps the error apart)."""
    if isinstance(message, Mapping) and message.get("role") == "tool" and isinstance(message.get("error"), Mapping):
        error = message["error"]
        note = f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
        content = text_of(message.get("content"))
        return {**message, "content": f"{content}\n{note}" if content else note}
    return message


def _choices(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    output = event.get("output")
    choices = output.get("choices") if isinstance(output, Mapping) else None
    return [c for c in listed(choices) if isinstance(c, Mapping) and isinstance(c.get("message"), Mapping)]


def _counts_problem(events: list[Any], model_usage: Any) -> tuple[str, str] | None:
    """(field, what was expected and found) for the first token count of the wrong type that the steps (a model
    event's `output.usage`) or the totals (`model_usage`) would read, or None."""
    for i, event in enumerate(events):
        output = event.get("output") if isinstance(event, Mapping) and event.get("event") == "model" else None
        problem = usage_problem(output) if isinstance(output, Mapping) else None
        if problem is not None:
            return f"events[{i}].output.{problem[0]}", problem[1]
    for model, usage in model_usage.items() if isinstance(model_usage, Mapping) else ():
        for key in ("input_tokens", "output_tokens") if isinstance(usage, Mapping) else ():
            problem = count_problem(usage.get(key))
            if problem is not None:
                return f"model_usage.{model}.{key}", problem
    return None


def _add_model_calls(turns: list[tuple[Mapping[str, Any], list[Any]]], model_events: list[Mapping[str, Any]]) -> None:
    """Tokens, latency and time of the model call behind each assistant turn, on the turn's steps."""
    by_message = {c["message"]["id"]: e for e in model_events for c in _choices(e)
                  if isinstance(c["message"].get("id"), str)}
    ids = [m.get("id") if isinstance(m.get("id"), str) else None for m, _ in turns]
    if all(i in by_message for i in ids):
        calls = [by_message[i] for i in ids]
    elif len(model_events) == len(turns):  # logs without message ids: the n-th call made the n-th turn
        calls = model_events
    else:
        return
    for (_, steps), call in zip(turns, calls):
        if not steps:
            continue
        output = call.get("output") if isinstance(call.get("output"), Mapping) else {}
        usage = output.get("usage") if isinstance(output.get("usage"), Mapping) else {}
        seconds = output.get("time", call.get("working_time"))
        first = steps[0]
        first.tokens_in = as_int(usage.get("input_tokens"))
        first.tokens_out = as_int(usage.get("output_tokens"))
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0:
            first.latency_ms = round(seconds * 1000, 3)
        for step in steps:
            step.timestamp = call.get("timestamp") if isinstance(call.get("timestamp"), str) else None


def _meta(header: Mapping[str, Any], spec: Mapping[str, Any], sample: Mapping[str, Any]) -> dict[str, Any]:
    meta = {"sample_id": sample.get("id"), "epoch": sample.get("epoch"), "uuid": sample.get("uuid"),
            "eval_id": spec.get("eval_id"), "run_id": spec.get("run_id"), "status": header.get("status"),
            "total_time": sample.get("total_time"), "working_time": sample.get("working_time"),
            "target": sample.get("target"), "inspect_ai": dig(spec, "packages.inspect_ai")}
    meta = {k: v for k, v in scalars(meta).items() if v is not None}
    scores = sample.get("scores")
    if isinstance(scores, Mapping):
        meta.update({f"score.{name}": score.get("value") for name, score in scores.items()
                     if isinstance(score, Mapping) and scalars({"v": score.get("value")})})
    error = sample.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        meta["error"] = error["message"]
    usage = sample.get("model_usage")
    if isinstance(usage, Mapping) and usage:
        per_model = [u for u in usage.values() if isinstance(u, Mapping)]
        for key, name in (("input_tokens", "tokens_in_total"), ("output_tokens", "tokens_out_total")):
            counts = [as_int(u.get(key)) for u in per_model]
            if counts and all(c is not None for c in counts):
                meta[name] = sum(c for c in counts if c is not None)
    return meta


def _is_zip(path: Path) -> bool:
    with open_input(path) as handle:
        return handle.read(4) == ZIP_MAGIC


def _json_header(path: Path) -> dict[str, Any]:
    """The top-level fields of a .json EvalLog before `samples`, read without building the samples."""
    header: dict[str, Any] = {}
    key: str | None = None
    builder: Any = None
    with open_input(path) as handle:
        skip_bom(handle)
        try:
            for prefix, event, value in ijson.parse(DepthBoundedReader(handle), use_float=True):
                if prefix != "":
                    if builder is not None:
                        builder.event(event, value)
                    continue
                if key is not None and builder is not None:   # a top-level field ended
                    header[key] = builder.value
                    key, builder = None, None
                if event == "end_map" or value == "samples":
                    break
                if event == "map_key":
                    key, builder = value, ijson.ObjectBuilder()
        except JsonLimitError as exc:
            raise InputError.at(str(path), f"not a readable Inspect .json log: {json_problem(exc)}") from None
        except (ijson.JSONError, UnicodeDecodeError, ValueError) as exc:  # ValueError: an int over 4300 digits
            raise InputError.at(str(path), f"not a readable Inspect .json log: malformed JSON "
                                           f"({str(exc).splitlines()[0][:80]})") from None
    return header


def _member_json(path: Path, archive: zipfile.ZipFile, member: str) -> Any:
    """One member of a .eval ZIP as JSON; a located InputError (returned) when it is missing or not JSON."""
    try:
        info = archive.getinfo(member)
    except KeyError:
        return bad_record(path, f"the .eval archive has no {member}; is it an Inspect log?", record=member)
    if info.file_size > MAX_DOCUMENT_BYTES:
        return bad_record(path, f"{info.file_size >> 20} MiB is more than a sample may be", record=member)
    parts, size = [], 0
    with archive.open(info) as stream:  # in pieces: zipfile's read() inflates up to 2 GiB before it checks anything
        while piece := stream.read(1 << 16):
            size += len(piece)
            if size > MAX_DOCUMENT_BYTES:
                return bad_record(path, f"more than the {MAX_DOCUMENT_BYTES >> 20} MiB a sample may be", record=member)
            parts.append(piece)
    data = b"".join(parts)
    try:
        return loads_json(data)
    except UnicodeDecodeError as exc:
        return bad_record(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x})", record=member)
    except JsonLimitError as exc:
        return bad_record(path, json_problem(exc), record=member)
    except json.JSONDecodeError as exc:
        return bad_record(path, f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", record=member)
