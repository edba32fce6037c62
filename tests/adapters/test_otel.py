"""The `otel` adapter on any-agent's real AgentTrace dumps (LangChain and OpenAI Agents frameworks), on a
hand-made OTLP JSON export (the standard envelope, batches split across lines), and on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eebench.adapters import detect
from tests.adapters.conftest import assert_refused, convert, damaged, files_claimed
from tests.conftest import write_json, write_jsonl

LANGCHAIN = "otel_genai/any-agent_LANGCHAIN_trace.json"
OPENAI = "otel_genai/any-agent_OPENAI_trace.json"
TRACE = "5b8efff798038103d269b633813fc60c"
T0 = 1_700_000_000_000_000_000   # 2023-11-14T22:13:20Z in nanoseconds


def attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}   # OTLP JSON writes 64-bit integers as strings
    return {"key": key, "value": {"stringValue": value}}


def span(span_id: str, parent: str, name: str, start_ms: int, end_ms: int, **attributes: Any) -> dict[str, Any]:
    return {"traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": name, "kind": 1,
            "startTimeUnixNano": str(T0 + start_ms * 1_000_000), "endTimeUnixNano": str(T0 + end_ms * 1_000_000),
            "attributes": [attribute(k.replace("__", "."), v) for k, v in attributes.items()],
            "status": {"code": 1}}


def otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{
        "resource": {"attributes": [attribute("service.name", "maze-agent")]},
        "scopeSpans": [{"scope": {"name": "agent"}, "spans": list(spans)}]}]}


def model_call(span_id: str, start_ms: int, end_ms: int, parts: list[dict[str, Any]], tokens: tuple[int, int]
               ) -> dict[str, Any]:
    return span(span_id, "a0", "chat gpt-test", start_ms, end_ms, **{
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-test",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
        "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1]})


OTLP_SPANS = [
    model_call("b1", 0, 400, [{"type": "reasoning", "content": "The exit is probably north."},
                              {"type": "tool_call", "id": "c1", "name": "move",
                               "arguments": {"direction": "north"}}], (120, 9)),
    span("b2", "a0", "execute_tool move", 410, 430, **{
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "move",
        "gen_ai.tool.call.arguments": '{"direction": "north"}', "gen_ai.tool.output": "You see a door."}),
    model_call("b3", 440, 700, [{"type": "text", "content": "I found the door."}], (150, 6)),
    span("a0", "", "invoke_agent maze-agent", 0, 710, **{
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "maze-agent"}),
]


def test_langchain_trace_tool_steps_with_model_tokens(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / LANGCHAIN, tmp_path / "out.jsonl", instance="what-year", env="logged")
    assert trajectory["id"] == "572318454595034fe5076610d6400542"
    assert trajectory["agent"] == {"name": "any_agent", "model": "mistral/mistral-small-latest"}
    assert trajectory["source"]["missing_fields"] == [] and trajectory["source"]["record"] == 0
    time, write, summary, structured = trajectory["steps"]
    assert time == {"action": 'get_current_time({"timezone": "America/New_York"})',
                    "raw": 'get_current_time({"timezone": "America/New_York"})',
                    "observation": '{\n  "timezone": "America/New_York",\n  "datetime": "2025-09-16T09:16:41-04:00",'
                                   '\n  "is_dst": true\n}',
                    "tokens_in": 245, "tokens_out": 16, "latency_ms": 310.395,
                    "timestamp": "2025-09-16T13:16:41.277Z"}
    assert write["action"] == 'write_file({"text": "2025"})' and write["observation"] == "null"
    assert (write["tokens_in"], write["tokens_out"]) == (331, 14)
    assert summary["raw"].startswith("Here are the steps I have taken:\n\n1. Found the current time")
    assert (summary["tokens_in"], summary["tokens_out"], summary["latency_ms"]) == (366, 33, 593.255)
    assert json.loads(structured["raw"])["steps"][1] == {"number": 2, "description": "Wrote the year to a file."}
    assert trajectory["meta"] == {"trace_id": "572318454595034fe5076610d6400542", "status": "unset",
                                  "cost_total": 0.0001637, "service_name": "unknown_service"}


def test_openai_agents_trace(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / OPENAI, tmp_path / "out.jsonl", instance="what-year", env="logged")
    assert trajectory["id"] == "4bedea77bb33b9c5f280371eae21ea97"
    assert [s["action"] for s in trajectory["steps"][:2]] == [
        'get_current_time({"timezone": "America/New_York"})', 'write_file({"text": "2025"})']
    assert [s["tokens_in"] for s in trajectory["steps"]] == [269, 359, 392]
    assert trajectory["steps"][1]["observation"] == "{}"


def test_otlp_json_envelope(tmp_path: Path) -> None:
    log = write_json(tmp_path / "export.json", otlp(*OTLP_SPANS))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert trajectory["id"] == TRACE and trajectory["agent"] == {"name": "maze-agent", "model": "gpt-test"}
    move, answer = trajectory["steps"]
    assert move == {"action": 'move({"direction": "north"})', "raw": 'move({"direction": "north"})',
                    "reasoning": "The exit is probably north.", "observation": "You see a door.",
                    "tokens_in": 120, "tokens_out": 9, "latency_ms": 400.0,
                    "timestamp": "2023-11-14T22:13:20.410Z"}
    assert answer == {"action": "I found the door.", "raw": "I found the door.", "tokens_in": 150, "tokens_out": 6,
                      "latency_ms": 260.0, "timestamp": "2023-11-14T22:13:20.440Z"}
    assert trajectory["meta"] == {"trace_id": TRACE, "status": "ok", "service_name": "maze-agent"}


def test_the_conventions_tool_result_attribute_is_the_observation(tmp_path: Path) -> None:
    """`gen_ai.tool.call.result` (the semantic conventions' name, pydantic-ai's) was never read."""
    spans = [dict(s) for s in OTLP_SPANS]
    spans[1]["attributes"] = [a if a["key"] != "gen_ai.tool.output" else attribute("gen_ai.tool.call.result",
                                                                                   "You see a door.")
                              for a in spans[1]["attributes"]]
    log = write_json(tmp_path / "export.json", otlp(*spans))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert trajectory["steps"][0]["observation"] == "You see a door."


def test_otlp_batches_on_several_lines_make_one_trace(tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "export.jsonl", [otlp(*OTLP_SPANS[:2]), otlp(*OTLP_SPANS[2:])])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert trajectory["source"]["record"] == 1   # given when its root span, in the second batch, was read
    assert [s["raw"] for s in trajectory["steps"]] == ['move({"direction": "north"})', "I found the door."]


def test_a_model_call_whose_tool_never_ran_is_still_a_step(tmp_path: Path) -> None:
    log = write_json(tmp_path / "cut.json", otlp(OTLP_SPANS[0], OTLP_SPANS[3]))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    [move] = trajectory["steps"]
    assert move["action"] == 'move({"direction": "north"})' and "observation" not in move
    assert move["tokens_in"] == 120 and move["timestamp"] == "2023-11-14T22:13:20Z"


def test_the_token_names_before_conventions_1_27_are_read(tmp_path: Path) -> None:
    spans = [dict(s) for s in OTLP_SPANS]
    renamed = {"gen_ai.usage.input_tokens": "gen_ai.usage.prompt_tokens",
               "gen_ai.usage.output_tokens": "gen_ai.usage.completion_tokens"}
    spans[0]["attributes"] = [{**a, "key": renamed.get(a["key"], a["key"])} for a in spans[0]["attributes"]]
    log = write_json(tmp_path / "export.json", otlp(*spans))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert (trajectory["steps"][0]["tokens_in"], trajectory["steps"][0]["tokens_out"]) == (120, 9)


def openllmetry_chat(span_id: str, start_ms: int, end_ms: int, tokens: tuple[int, int], **answer: Any
                     ) -> dict[str, Any]:
    """A model call as OpenLLMetry (traceloop) records it: `openai.chat`, no operation name, the prompt and the
    first choice flattened into indexed attributes, the token names before conventions 1.27."""
    fields = {f"gen_ai.completion.0.{k.replace('__', '.')}": v for k, v in answer.items()}
    return span(span_id, "a0", "openai.chat", start_ms, end_ms, **{
        "llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "You are at the start. Move.",
        "gen_ai.completion.0.role": "assistant", **fields,
        "gen_ai.usage.prompt_tokens": tokens[0], "gen_ai.usage.completion_tokens": tokens[1]})


def test_openllmetry_model_calls(tmp_path: Path) -> None:
    log = write_json(tmp_path / "export.json", otlp(
        openllmetry_chat("b1", 0, 2500, (1200, 300), content="Action: up"),
        openllmetry_chat("b2", 2600, 3000, (1300, 20), content="Going left.", tool_calls__0__id="c1",
                         tool_calls__0__name="move", tool_calls__0__arguments='{"direction": "left"}'),
        openllmetry_chat("b3", 3100, 3200, (1400, 10), function_call__name="move",
                         function_call__arguments='{"direction": "down"}'),
        span("a0", "", "agent.workflow", 0, 3300)))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert trajectory["agent"] == {"model": "gpt-4o"}
    assert trajectory["steps"] == [
        {"action": "up", "raw": "Action: up", "tokens_in": 1200, "tokens_out": 300, "latency_ms": 2500.0,
         "timestamp": "2023-11-14T22:13:20Z"},
        {"action": 'move({"direction": "left"})', "raw": 'move({"direction": "left"})', "reasoning": "Going left.",
         "tokens_in": 1300, "tokens_out": 20, "latency_ms": 400.0, "timestamp": "2023-11-14T22:13:22.600Z"},
        {"action": 'move({"direction": "down"})', "raw": 'move({"direction": "down"})', "tokens_in": 1400,
         "tokens_out": 10, "latency_ms": 100.0, "timestamp": "2023-11-14T22:13:23.100Z"}]


def test_the_samples_are_detected_as_otel(agent_logs: Path, tmp_path: Path) -> None:
    assert files_claimed(agent_logs, "otel") == [LANGCHAIN, OPENAI]
    exported = write_json(tmp_path / "export.json", otlp(*OTLP_SPANS))
    assert {detect(path).name for path in (agent_logs / LANGCHAIN, agent_logs / OPENAI, exported)} == {"otel"}


def test_spans_of_the_wrong_shape_are_located(tmp_path: Path) -> None:
    log = write_json(tmp_path / "spans.json", {"spans": {"name": "call_llm"}})
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 0: spans: expected a list of spans, found a mapping",
                   fmt="otel", instance="x", env="logged")
    no_trace = {**OTLP_SPANS[1], "traceId": None}
    log = write_json(tmp_path / "otlp.json", otlp(no_trace))
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 0: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]: expected a traceId string, found "
                   r"null", instance="x", env="logged")


def test_truncated_and_non_utf8_traces(agent_logs: Path, tmp_path: Path) -> None:
    cut, latin = damaged(agent_logs / LANGCHAIN, tmp_path, b'"name": "execute_tool write_file"',
                         (b"America/New_York", b"Am\xe9rica"))
    assert_refused(cut, tmp_path / "out.jsonl", r":\d+: truncated JSON", instance="x", env="logged")
    assert_refused(latin, tmp_path / "out.jsonl", r":\d+: not UTF-8 text \(byte 0xe9\)", instance="x", env="logged")


def test_calls_that_never_ran_stay_steps_after_one_that_did() -> None:
    from eebench.adapters.chat import ModelTurn, ToolRun, traced_steps
    steps = traced_steps([ModelTurn("plan", calls=[("a", {}), ("b", {}), ("c", {})], tokens_in=5),
                          ToolRun("a", {}, "seen a"), ModelTurn("done")])
    assert [(s.call, s.text, s.observation, s.tokens_in) for s in steps] == [
        (("a", {}), None, "seen a", 5), (("b", {}), None, None, None), (("c", {}), None, None, None),
        (None, "done", None, None)]


def test_a_tool_run_after_a_model_call_that_answered_in_text_is_one_step_with_it() -> None:
    # a ReAct agent's model writes `Action: Search` as text and the framework runs the tool: one action, which
    # was two steps (the text without observation, then the run without tokens or reasoning)
    from eebench.adapters.chat import ModelTurn, ToolRun, traced_steps
    steps = traced_steps([ModelTurn(" I should search\nAction: Search\nAction Input: foo", tokens_in=7, tokens_out=3),
                          ToolRun("Search", "foo", "bar"), ModelTurn("Final Answer: bar", tokens_in=9),
                          ModelTurn("Thought: more\nAction: Look", reasoning="r")])
    assert [(s.call, s.text, s.observation, s.tokens_in, s.tokens_out, s.reasoning) for s in steps] == [
        (("Search", "foo"), None, "bar", 7, 3, " I should search\nAction: Search\nAction Input: foo"),
        (None, "Final Answer: bar", None, 9, None, None),
        (None, "Thought: more\nAction: Look", None, None, None, "r")]   # (no run followed: a step of its own)


def test_openinference_spans(tmp_path: Path) -> None:
    # Arize's OpenInference conventions (smolagents, LlamaIndex, Phoenix): LLM and TOOL spans by
    # `openinference.span.kind`, the answer flattened under llm.output_messages; such a trace was 0 steps, exit 0
    def llm(span_id: str, start_ms: int, tokens: tuple[int, int], **message: Any) -> dict[str, Any]:
        return span(span_id, "a0", "LiteLLMModel.__call__", start_ms, start_ms + 100, **{
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.token_count.prompt": tokens[0],
            "llm.token_count.completion": tokens[1], "llm.output_messages.0.message.role": "assistant",
            **{f"llm.output_messages.0.message.{k.replace('__', '.')}": v for k, v in message.items()}})

    log = write_json(tmp_path / "export.json", otlp(
        llm("b1", 0, (100, 12), tool_calls__0__tool_call__function__name="move",
            tool_calls__0__tool_call__function__arguments='{"direction": "up"}'),
        span("b2", "a0", "move", 200, 210, **{"openinference.span.kind": "TOOL", "tool.name": "move",
                                               "input.value": '{"direction": "up"}', "output.value": "moved up"}),
        llm("b3", 300, (120, 5), content="left"),
        span("a0", "", "Agent.run", 0, 500, **{"openinference.span.kind": "AGENT"})))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert trajectory["agent"] == {"model": "gpt-4o"}
    assert [(s["action"], s.get("observation"), s.get("tokens_in")) for s in trajectory["steps"]] == [
        ('move({"direction": "up"})', "moved up", 100), ("left", None, 120)]


def test_an_answer_in_span_events_is_read(tmp_path: Path) -> None:
    # the conventions before their attributes: the completion as a `gen_ai.content.completion` event, or a
    # `gen_ai.choice` event's message; both answers were dropped (steps of no action and no raw)
    def chat(span_id: str, start_ms: int, event: str, key: str, value: str) -> dict[str, Any]:
        made = span(span_id, "a0", "chat gpt-4o", start_ms, start_ms + 100, **{
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 2})
        made["events"] = [{"name": event, "timeUnixNano": str(T0), "attributes": [attribute(key, value)]}]
        return made

    log = write_json(tmp_path / "export.json", otlp(
        chat("b1", 0, "gen_ai.content.completion", "gen_ai.completion",
             json.dumps([{"role": "assistant", "content": "up"}])),
        chat("b2", 200, "gen_ai.choice", "message", json.dumps({"role": "assistant", "content": "left"})),
        chat("b3", 400, "gen_ai.content.completion", "gen_ai.completion", "down"),
        span("a0", "", "invoke_agent", 0, 600, **{"gen_ai.operation.name": "invoke_agent"})))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert [(s["action"], s.get("raw")) for s in trajectory["steps"]] == [("up", "up"), ("left", "left"),
                                                                         ("down", "down")]


def test_a_trace_of_spans_no_convention_names_is_refused_not_empty(tmp_path: Path) -> None:
    log = write_json(tmp_path / "export.json", otlp(
        span("b1", "a0", "http.request", 0, 10, **{"http.method": "GET"}),
        span("a0", "", "main", 0, 20)))
    assert_refused(log, tmp_path / "out.jsonl", r".*none of its 2 spans is a model call or a tool run", "otel")
