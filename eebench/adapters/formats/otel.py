"""`otel`: OpenTelemetry GenAI spans: any-agent `AgentTrace` dumps and the standard OTLP JSON envelope.

Spans are grouped by trace (one trajectory per trace) and read in start-time order. An `execute_tool` span is a
step: the tool and its arguments are the action, its output the observation. A model-call span (`call_llm`,
`chat`, ...) gives its tokens, latency and reasoning to the tool step it led to; a model call that answered in
text (no tool call) is a step of its own. Times are epoch nanoseconds in OTel, written here as ISO UTC.
The answer is read from the conventions' `gen_ai.output.messages`, any-agent's `gen_ai.output`, or OpenLLMetry's
flattened `gen_ai.completion.0.*` (its spans, such as `openai.chat`, say `llm.request.type`); token counts from
`gen_ai.usage.input_tokens`/`output_tokens`, or the names before conventions 1.27 (`prompt_tokens`/
`completion_tokens`). OpenLLMetry records no tool runs: its calls are steps without observation. Older
instrumentations log the answer as span events (`gen_ai.content.completion`, `gen_ai.choice`): read when the span
has none of those attributes. OpenInference's spans (smolagents, LlamaIndex, Phoenix) are read by their
`openinference.span.kind`: LLM spans as model calls (`llm.output_messages.0.message.*`, `llm.token_count.*`),
TOOL spans as tool runs (`tool.name`, `input.value`, `output.value`). A trace of several spans none of which is a
model call or a tool run is refused (spans of another convention), not written as an empty trajectory.

Records may be JSON Lines of batches; a trace is given once its root span (no parent) has been read, which in
OTel comes last, so memory holds only traces still open.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eebench.adapters.base import Adapter, Episode, LoggedStep, as_int, count_problem, dig, iso_utc, listed, text_of
from eebench.adapters.chat import ModelTurn, ToolRun, call_parts, traced_steps, visible_text
from eebench.adapters.records import JsonRecord, bad_item, json_records
from eebench.documents import json_type, loads_json
from eebench.errors import InputError

MODEL_OPERATIONS = ("call_llm", "chat", "text_completion", "generate_content")
_OPENINFERENCE = {"LLM": "chat", "TOOL": "execute_tool"}   # its span kinds, as the GenAI conventions' operations


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str | None
    parent_id: str | None
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    status: str | None = None
    resource: dict[str, Any] = field(default_factory=dict)
    where: str = ""    # the span's place in its record (`spans[3]`), for errors
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)   # (name, attributes), in order

    @property
    def operation(self) -> str:
        operation = self.attributes.get("gen_ai.operation.name")
        if isinstance(operation, str):
            return operation
        if self.attributes.get("llm.request.type") in ("chat", "completion"):   # OpenLLMetry's spans (`openai.chat`)
            return "chat"
        kind = self.attributes.get("openinference.span.kind")   # OpenInference's (smolagents, LlamaIndex, Phoenix)
        if kind in _OPENINFERENCE:
            return _OPENINFERENCE[kind]
        return self.name.split(" ", 1)[0]

    @property
    def started(self) -> str | None:
        """The start as ISO UTC: OTel keeps only epoch nanoseconds."""
        return iso_utc(self.start_ns / 1e9) if self.start_ns is not None else None

    @property
    def latency_ms(self) -> float | None:
        if self.start_ns is None or self.end_ns is None or self.end_ns < self.start_ns:
            return None
        return (self.end_ns - self.start_ns) / 1e6


class OtelAdapter(Adapter):
    name = "otel"
    summary = ("OpenTelemetry GenAI spans: any-agent AgentTrace JSON ({spans, final_output}) or OTLP JSON "
               "(resourceSpans); execute_tool spans are actions, model-call spans give tokens (also OpenLLMetry's "
               "flattened gen_ai.completion.0.* answers, answers in span events, and OpenInference's LLM and TOOL "
               "spans)")
    example = "eebench convert trace.json --from otel --out runs.jsonl"
    suffixes = (".json", ".jsonl")
    never_carries = frozenset()

    def handles(self, path: Path, head: bytes) -> bool:
        return path.suffix.lower() in self.suffixes and (
            b'"resourceSpans"' in head or (b'"spans"' in head and b'"gen_ai.' in head))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        open_traces: dict[str, list[Span]] = {}
        last: JsonRecord | None = None
        for item in json_records(path):
            if isinstance(item, InputError):
                yield item
                continue
            spans = _record_spans(path, item)
            if isinstance(spans, InputError):
                yield spans
                continue
            last = item
            rooted: list[str] = []
            for span in spans:
                open_traces.setdefault(span.trace_id, []).append(span)
                if span.parent_id is None and span.trace_id not in rooted:
                    rooted.append(span.trace_id)
            for trace in rooted:
                yield _located(path, item, trace, open_traces.pop(trace), item.value.get("final_output"))
        for trace, spans in open_traces.items():   # traces whose root span was never exported
            if last is not None:
                yield _located(path, last, trace, spans, None)


def _located(path: Path, item: JsonRecord, trace: str, spans: list[Span], final: Any) -> Episode | InputError:
    """The episode of a trace, or the located InputError of a span that names a tool by something not a string
    (written as its Python repr before)."""
    try:
        return _episode(path, item, trace, spans, final)
    except _Refused as exc:
        span, name, message = exc.args
        return bad_item(path, item, message, f"{span.where}.attributes.{name}")
    except _Unread as exc:
        return bad_item(path, item, f"trace {exc.args[0]}: none of its {exc.args[1]} spans is a model call or a tool "
                                    "run (the GenAI conventions' gen_ai.operation.name chat or execute_tool, "
                                    "OpenLLMetry's llm.request.type, OpenInference's openinference.span.kind LLM or "
                                    "TOOL); expected spans of one of these")


class _Unread(Exception):
    """(trace id, spans): a trace of several spans none of which this adapter reads as a step."""


class _Refused(Exception):
    """(span, the attribute, what was expected and found): an attribute of the wrong type, which would have been
    written as its Python repr (a tool's name) or dropped unread (a count)."""


def _name(span: Span, field: str, value: Any) -> str:
    """A tool's name as the span's attribute `field` gives it ('' when it gives none)."""
    if value is not None and not isinstance(value, str):
        raise _Refused(span, field, f"expected the tool's name as a string, found {json_type(value)}")
    return value or ""


def _count(span: Span, *fields: str) -> int | None:
    """A token count as the first of the span's attributes `fields` it has gives it (None when it gives none)."""
    field = next((f for f in fields if span.attributes.get(f) is not None), fields[0])
    problem = count_problem(span.attributes.get(field))
    if problem is not None:
        raise _Refused(span, field, problem)
    return as_int(span.attributes.get(field))


def _text(span: Span, field: str) -> str | None:
    value = span.attributes.get(field)
    if value is not None and not isinstance(value, str):   # (it would be dropped unread)
        raise _Refused(span, field, f"expected the model's output as a string, found {json_type(value)}")
    return value


# Answers flattened into one attribute per field of the first choice: (the prefix of its fields, where its N-th tool
# call's `.name` and `.arguments` are). OpenLLMetry (traceloop): `.content`, `.tool_calls.N.name`, or the API's older
# `.function_call`; OpenInference: `.content`, `.tool_calls.N.tool_call.function.name`.
FLATTENED_ANSWERS = (("gen_ai.completion.0.", "tool_calls.{}"),
                     ("llm.output_messages.0.message.", "tool_calls.{}.tool_call.function"))


def _flattened_calls(span: Span, prefix: str, call: str) -> list[tuple[str, Any]]:
    attributes, calls = span.attributes, []
    while (name := attributes.get(f"{prefix}{call.format(len(calls))}.name")) is not None:
        field = prefix + call.format(len(calls))
        calls.append((_name(span, f"{field}.name", name), attributes.get(f"{field}.arguments")))
    if not calls and attributes.get(f"{prefix}function_call.name") is not None:
        field = f"{prefix}function_call"
        calls.append((_name(span, f"{field}.name", attributes[f"{field}.name"]), attributes.get(f"{field}.arguments")))
    return calls


def _event_answer(span: Span) -> Mapping[str, Any] | None:
    """The answer as the conventions logged it in span events before they moved it to attributes: the last
    `gen_ai.content.completion` event's `gen_ai.completion` (a JSON list of messages, or the text), or a
    `gen_ai.choice` event's `message`; as a chat message (role, content, tool_calls), or None."""
    for name, attributes in reversed(span.events):
        value = attributes.get("gen_ai.completion") if name == "gen_ai.content.completion" else \
            attributes.get("message") if name == "gen_ai.choice" else None
        if value is None:
            continue
        decoded = _json(value)
        if isinstance(decoded, list):   # the messages of the completion: the assistant's
            decoded = next((m for m in reversed(decoded) if isinstance(m, Mapping)
                            and m.get("role") in ("assistant", None)), None)
        if isinstance(decoded, Mapping):
            return decoded
        if isinstance(value, str):
            return {"content": value}
    return None


def _name_problem(span: Mapping[str, Any]) -> str | None:
    """What is wrong with a span's `name` as exported (it names a tool: never written as another type's repr)."""
    name = span.get("name")
    if name is None or isinstance(name, str):
        return None
    return f"expected the span's name as a string, found {json_type(name)}"


def _record_spans(path: Path, item: JsonRecord) -> list[Span] | InputError:
    bad = functools.partial(bad_item, path, item)
    value = item.value
    if not isinstance(value, Mapping):
        return bad(f"expected an object with `spans` or `resourceSpans`, found {json_type(value)}")
    if "resourceSpans" in value:
        return _otlp_spans(value["resourceSpans"], bad)
    raw = value.get("spans")
    if not isinstance(raw, list):
        return bad(f"expected a list of spans, found {json_type(raw)}", "spans")
    spans = []
    for i, span in enumerate(raw):
        if not isinstance(span, Mapping):
            return bad(f"expected a span object, found {json_type(span)}", f"spans[{i}]")
        context = span.get("context") if isinstance(span.get("context"), Mapping) else {}
        parent = span.get("parent") if isinstance(span.get("parent"), Mapping) else {}
        trace_id = _hex(context.get("trace_id"), 32)
        if trace_id is None:
            return bad(f"expected a trace id in context.trace_id, found {json_type(context.get('trace_id'))}",
                       f"spans[{i}]")
        attributes = span.get("attributes") if isinstance(span.get("attributes"), Mapping) else {}
        status = span.get("status")
        resource = dig(span, "resource.attributes")
        if (problem := _name_problem(span)) is not None:
            return bad(problem, f"spans[{i}].name")
        spans.append(Span(
            name=span.get("name") or "", trace_id=trace_id, span_id=_hex(context.get("span_id"), 16),
            parent_id=_hex(parent.get("span_id"), 16), start_ns=as_int(span.get("start_time")),
            end_ns=as_int(span.get("end_time")), attributes=dict(attributes),
            status=status.get("status_code") if isinstance(status, Mapping) else None,
            resource=dict(resource) if isinstance(resource, Mapping) else {}, where=f"spans[{i}]",
            events=[(e["name"], dict(e["attributes"]) if isinstance(e.get("attributes"), Mapping) else {})
                    for e in listed(span.get("events")) if isinstance(e, Mapping) and isinstance(e.get("name"), str)]))
    return spans


def _otlp_spans(resource_spans: Any, bad: Any) -> list[Span] | InputError:
    """Spans of the OTLP JSON envelope: resourceSpans[].scopeSpans[].spans[], attributes as key/value lists."""
    if not isinstance(resource_spans, list):
        return bad(f"expected a list, found {json_type(resource_spans)}", "resourceSpans")
    spans = []
    for r, group in enumerate(resource_spans):
        where = f"resourceSpans[{r}]"
        if not isinstance(group, Mapping):
            return bad(f"expected an object, found {json_type(group)}", where)
        resource = _otlp_attributes(group.get("resource", {}).get("attributes")
                                    if isinstance(group.get("resource"), Mapping) else None)
        scopes = group.get("scopeSpans", group.get("instrumentationLibrarySpans"))
        if not isinstance(scopes, list):
            return bad(f"expected a list of scopeSpans, found {json_type(scopes)}", f"{where}.scopeSpans")
        for s, scope in enumerate(scopes):
            raw = scope.get("spans") if isinstance(scope, Mapping) else None
            if not isinstance(raw, list):
                return bad(f"expected a list of spans, found {json_type(raw)}", f"{where}.scopeSpans[{s}].spans")
            for i, span in enumerate(raw):
                at = f"{where}.scopeSpans[{s}].spans[{i}]"
                if not isinstance(span, Mapping):
                    return bad(f"expected a span object, found {json_type(span)}", at)
                trace_id = span.get("traceId")
                if not isinstance(trace_id, str) or not trace_id:
                    return bad(f"expected a traceId string, found {json_type(trace_id)}", at)
                status = span.get("status")
                if (problem := _name_problem(span)) is not None:
                    return bad(problem, f"{at}.name")
                spans.append(Span(
                    name=span.get("name") or "", trace_id=trace_id.lower(),
                    span_id=_hex(span.get("spanId"), 16), parent_id=_hex(span.get("parentSpanId"), 16),
                    start_ns=_nanos(span.get("startTimeUnixNano")), end_ns=_nanos(span.get("endTimeUnixNano")),
                    attributes=_otlp_attributes(span.get("attributes")),
                    status=_otlp_status(status.get("code")) if isinstance(status, Mapping) else None,
                    resource=resource, where=at,
                    events=[(e["name"], _otlp_attributes(e.get("attributes"))) for e in listed(span.get("events"))
                            if isinstance(e, Mapping) and isinstance(e.get("name"), str)]))
    return spans


def _otlp_status(code: Any) -> str | None:
    """An OTLP status code in the SDK's words (unset, ok, error), as any-agent dumps write it."""
    if isinstance(code, str):
        return code.lower().removeprefix("status_code_")
    return {0: "unset", 1: "ok", 2: "error"}.get(code) if isinstance(code, int) else None


def _otlp_attributes(pairs: Any) -> dict[str, Any]:
    if not isinstance(pairs, list):
        return {}
    return {p["key"]: _otlp_value(p.get("value")) for p in pairs
            if isinstance(p, Mapping) and isinstance(p.get("key"), str)}


def _otlp_value(value: Any) -> Any:
    """An OTLP AnyValue as plain JSON (OTLP writes 64-bit integers as strings)."""
    if not isinstance(value, Mapping):
        return None
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return _nanos(value["intValue"])
    if isinstance(value.get("arrayValue"), Mapping):
        return [_otlp_value(v) for v in listed(value["arrayValue"].get("values"))]
    if isinstance(value.get("kvlistValue"), Mapping):
        return _otlp_attributes(value["kvlistValue"].get("values"))
    return None


def _nanos(value: Any) -> int | None:
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _hex(value: Any, digits: int) -> str | None:
    """An id as lowercase hex: the OTel SDK dumps them as integers, OTLP JSON as hex strings."""
    if isinstance(value, int) and not isinstance(value, bool):
        return format(value, f"0{digits}x")
    return value.lower() if isinstance(value, str) and value else None


def _model_turn(span: Span) -> ModelTurn:
    """What a model call answered: the semantic conventions' `gen_ai.output.messages` (parts), or any-agent's
    `gen_ai.output` (a JSON list of `tool.name`/`tool.args` calls, or text)."""
    attributes = span.attributes
    # (the conventions' names before 1.27, still written by OpenLLMetry and others: prompt and completion tokens)
    turn = ModelTurn(None, tokens_in=_count(span, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                                            "llm.token_count.prompt"),
                     tokens_out=_count(span, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                                       "llm.token_count.completion"),
                     latency_ms=span.latency_ms, timestamp=span.started)
    for prefix, call in FLATTENED_ANSWERS:
        if prefix + "role" in attributes or prefix + "content" in attributes:
            turn.text = _text(span, prefix + "content")
            turn.calls = _flattened_calls(span, prefix, call)
            return turn
    messages = _json(attributes.get("gen_ai.output.messages"))
    if isinstance(messages, list):
        texts, thoughts = [], []
        for message in messages:
            for part in listed(message.get("parts")) if isinstance(message, Mapping) else []:
                if not isinstance(part, Mapping):
                    continue
                if part.get("type") == "tool_call":
                    turn.calls.append((_name(span, "gen_ai.output.messages", part.get("name")),
                                       part.get("arguments")))
                elif part.get("type") == "reasoning":
                    thoughts.append(text_of(part.get("content")))
                elif part.get("type") == "text":
                    texts.append(text_of(part.get("content")))
        turn.text, turn.reasoning = _lines(texts), _lines(thoughts)
        return turn
    if "gen_ai.output" not in attributes and (message := _event_answer(span)) is not None:
        turn.text = visible_text(message.get("content"))
        turn.calls = [call_parts(call)[:2] for call in listed(message.get("tool_calls")) if isinstance(call, Mapping)]
        return turn
    output = attributes.get("gen_ai.output")
    decoded = _json(output) if attributes.get("gen_ai.output.type") == "json" else None
    if isinstance(decoded, list) and decoded and all(isinstance(c, Mapping) and "tool.name" in c for c in decoded):
        turn.calls = [(_name(span, "gen_ai.output", c["tool.name"]), c.get("tool.args")) for c in decoded]
    elif isinstance(output, (str, type(None))):
        turn.text = output
    else:   # (the model's answer was dropped unread: a step with no text, or none)
        raise _Refused(span, "gen_ai.output", f"expected the model's output as a string (or a list of tool calls), "
                                              f"found {json_type(output)}")
    return turn


def _tool_run(span: Span) -> ToolRun:
    attributes = span.attributes
    # (any-agent's names first; `gen_ai.tool.call.result` is the semantic conventions' own, pydantic-ai's)
    # (then OpenInference's: `tool.name`, and the span's `input.value`/`output.value`)
    output = next((attributes[key] for key in ("gen_ai.output", "gen_ai.tool.output", "gen_ai.tool.call.result",
                                               "output.value") if attributes.get(key) is not None), None)
    name_field = "gen_ai.tool.name" if "gen_ai.tool.name" in attributes or "tool.name" not in attributes else "tool.name"
    arguments = next((attributes[key] for key in ("gen_ai.tool.args", "gen_ai.tool.call.arguments", "input.value")
                      if key in attributes), None)
    return ToolRun(_name(span, name_field, attributes.get(name_field)) or span.name.removeprefix("execute_tool "),
                   arguments,
                   output if isinstance(output, str) or output is None else json.dumps(output, ensure_ascii=False),
                   span.started)


def _lines(texts: list[str | None]) -> str | None:
    present = [t for t in texts if t]
    return "\n".join(present) if present else None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return loads_json(value)  # within the limits of every document: depth, finite numbers
        except ValueError:
            return None
    return value


def _steps(spans: list[Span]) -> list[LoggedStep]:
    ordered = sorted(spans, key=lambda s: (s.start_ns is None, s.start_ns or 0))
    return traced_steps(_model_turn(s) if s.operation in MODEL_OPERATIONS else _tool_run(s) for s in ordered
                        if s.operation in MODEL_OPERATIONS or s.operation == "execute_tool")


def _episode(path: Path, item: JsonRecord, trace: str, spans: list[Span], final: Any) -> Episode:
    root = next((s for s in spans if s.parent_id is None), None)
    attributes = [s.attributes for s in ([root] if root else []) + spans]
    model = next((a[k] for a in attributes for k in ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
                  if isinstance(a.get(k), str)), None)
    agent_name = next((a["gen_ai.agent.name"] for a in attributes if isinstance(a.get("gen_ai.agent.name"), str)),
                      None)
    costs = [c for s in spans for k in ("gen_ai.usage.input_cost", "gen_ai.usage.output_cost")
             if isinstance(c := s.attributes.get(k), (int, float)) and not isinstance(c, bool)]
    meta: dict[str, Any] = {"trace_id": trace}
    if root is not None and root.status is not None:
        meta["status"] = root.status
    if costs:
        meta["cost_total"] = round(sum(costs), 10)
    if isinstance(final, str):
        meta["final_output"] = final
    service = (root or spans[0]).resource.get("service.name")
    if isinstance(service, str):
        meta["service_name"] = service
    steps = _steps(spans)
    if not steps and len(spans) > 1:   # spans of a convention not read here: refused, not an empty trajectory
        raise _Unread(trace, len(spans))
    return Episode(id=trace, record=item.index, line=item.line, steps=steps, fields=item.value,
                   agent={"name": agent_name, "model": model}, meta=meta)
