"""The `langsmith` adapter on LangSmith's real ingest payload (one o1-mini llm run), on hand-made run exports
(flat and interleaved, nested child_runs, LangChain generations), and on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eebench.adapters import detect
from tests.adapters.conftest import assert_refused, convert, damaged, files_claimed
from tests.conftest import write_json, write_jsonl

PAYLOAD = "langsmith/langsmith_py_wrap_openai_reasoning.json"


def run(run_id: str, trace: str, order: str, run_type: str, name: str, parent: str | None = None,
        **fields: Any) -> dict[str, Any]:
    """A run as LangSmith exports it; `order` is the time part of its dotted_order segment (HHMMSS)."""
    start = f"2025-01-01T{order[:2]}:{order[2:4]}:{order[4:]}.000000+00:00"
    return {"id": run_id, "trace_id": trace, "parent_run_id": parent, "run_type": run_type, "name": name,
            "dotted_order": f"20250101T{order}000000Z{trace}" + (f".20250101T{order}000000Z{run_id}" if parent else ""),
            "start_time": start, "end_time": start.replace(".000000", ".250000"), **fields}


def agent_trace(trace: str, example: str) -> list[dict[str, Any]]:
    """An agent trace: a chain around an llm run that calls a tool, the tool, and an llm run that answers."""
    call = {"role": "assistant", "content": "Looking north first.",
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "look", "arguments": '{"direction": "north"}'}}]}
    return [
        run(trace, trace, "100000", "chain", "AgentExecutor", reference_example_id=example,
            outputs={"output": "a door"}),
        run(f"{trace}-llm1", trace, "100001", "llm", "ChatOpenAI", trace,
            outputs={"choices": [{"message": call}], "model": "gpt-test",
                     "usage_metadata": {"input_tokens": 80, "output_tokens": 12}}),
        run(f"{trace}-tool", trace, "100002", "tool", "look", trace,
            inputs={"input": '{"direction": "north"}'}, outputs={"output": "a door"}),
        run(f"{trace}-llm2", trace, "100003", "llm", "ChatOpenAI", trace,
            outputs={"generations": [[{"text": "A door is north.", "message": {
                "kwargs": {"content": "A door is north.", "usage_metadata": {"input_tokens": 95,
                                                                             "output_tokens": 5}}}}]]}),
    ]


def test_one_llm_run_is_one_step_with_usage_and_timing(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / PAYLOAD, tmp_path / "out.jsonl", instance="transpose", env="logged")
    assert trajectory["id"] == "a8b34ded-ccd2-4fb7-bccb-9cd625066a14"
    assert trajectory["agent"] == {"name": "ChatOpenAI", "model": "o1-mini-2024-09-12"}
    assert trajectory["source"]["record"] == "a8b34ded-ccd2-4fb7-bccb-9cd625066a14"
    [step] = trajectory["steps"]
    assert step["raw"].startswith("Certainly! Below is a **Bash script** that takes a matrix represented as a string")
    assert step["raw"].endswith("Feel free to modify and enhance the script based on your specific needs!")
    assert (step["tokens_in"], step["tokens_out"], step["latency_ms"]) == (43, 2497, 15138.093)
    assert step["timestamp"] == "2024-10-11T20:58:24.544431+00:00"
    assert "observation" not in step and "reasoning" not in step   # o1 reasons in hidden tokens only
    assert trajectory["meta"] == {"trace_id": "a8b34ded-ccd2-4fb7-bccb-9cd625066a14", "root_run_type": "llm",
                                  "root_name": "ChatOpenAI", "session_name": "default",
                                  "start_time": "2024-10-11T20:58:24.544431+00:00",
                                  "end_time": "2024-10-11T20:58:39.682524+00:00", "reasoning_tokens_total": 1408}


def test_flat_exports_of_interleaved_traces_in_dotted_order(tmp_path: Path) -> None:
    first, second = agent_trace("t1", "example-1"), agent_trace("t2", "example-2")
    shuffled = [first[3], second[0], first[0], second[2], first[2], second[1], first[1], second[3]]
    log = write_jsonl(tmp_path / "runs.jsonl", shuffled)
    one, two = convert(log, tmp_path / "out.jsonl")
    assert (one["id"], one["instance"], two["id"], two["instance"]) == ("t1", "example-1", "t2", "example-2")
    assert one["agent"] == {"name": "AgentExecutor", "model": "gpt-test"}
    look, answer = one["steps"]
    assert look == {"action": 'look({"direction": "north"})', "raw": 'look({"direction": "north"})',
                    "reasoning": "Looking north first.", "observation": "a door", "tokens_in": 80, "tokens_out": 12,
                    "latency_ms": 250.0, "timestamp": "2025-01-01T10:00:02.000000+00:00"}
    assert answer == {"action": "A door is north.", "raw": "A door is north.", "tokens_in": 95, "tokens_out": 5,
                      "latency_ms": 250.0, "timestamp": "2025-01-01T10:00:03.000000+00:00"}
    assert one["source"]["record"] == "t1" and one["meta"]["root_run_type"] == "chain"


def test_nested_child_runs_and_a_failed_tool(tmp_path: Path) -> None:
    root, llm, tool, final = agent_trace("t3", "example-3")
    tool = {**tool, "outputs": None, "error": "ToolException: no such direction"}
    log = write_json(tmp_path / "tree.json", [{**root, "child_runs": [llm, tool, final]}])
    [trajectory] = convert(log, tmp_path / "out.jsonl")
    assert [s["raw"] for s in trajectory["steps"]] == ['look({"direction": "north"})', "A door is north."]
    assert trajectory["steps"][0]["observation"] == "ToolException: no such direction"


def test_a_langgraph_tool_run_traced_with_its_python_input_and_its_tool_message(tmp_path: Path) -> None:
    """LangChain traces a tool's input as str() of its arguments and LangGraph's output as a serialized
    ToolMessage: the call read as a Python repr and the observation as the message's JSON."""
    root, llm, tool, final = agent_trace("t4", "example-4")
    tool = {**tool, "inputs": {"input": "{'direction': 'north', 'far': True}"}, "outputs": {"output": {
        "lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"content": "a door", "type": "tool", "name": "look", "tool_call_id": "c1", "status": "success"}}}}
    log = write_jsonl(tmp_path / "runs.jsonl", [root, llm, tool, final])
    look, _ = convert(log, tmp_path / "out.jsonl")[0]["steps"]
    assert (look["action"], look["observation"]) == ('look({"direction": "north", "far": true})', "a door")


def test_a_run_whose_inputs_fill_the_head_is_still_detected(tmp_path: Path) -> None:
    """`trace_id` and `dotted_order` come after a run's inputs, which a long message history makes long."""
    root, *rest = agent_trace("t5", "example-5")
    first = {"id": root["id"], "name": root["name"], "start_time": root["start_time"], "run_type": "chain",
             "inputs": {"messages": [{"role": "user", "content": "x" * 70_000}]}, **root}
    log = write_jsonl(tmp_path / "runs.jsonl", [first, *rest])
    assert b"trace_id" not in log.read_bytes()[:65536]
    assert detect(log).name == "langsmith"


def test_the_sample_is_detected_as_langsmith(agent_logs: Path, tmp_path: Path) -> None:
    assert files_claimed(agent_logs, "langsmith") == [PAYLOAD]
    exported = write_jsonl(tmp_path / "runs.jsonl", agent_trace("t1", "e"))
    assert {detect(path).name for path in (agent_logs / PAYLOAD, exported)} == {"langsmith"}


def test_payloads_and_runs_of_the_wrong_shape_are_located(agent_logs: Path, tmp_path: Path) -> None:
    payload = json.loads((agent_logs / PAYLOAD).read_text("utf-8"))
    log = write_json(tmp_path / "payload.json", {**payload, "patch": {"id": "x"}})
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 0: patch: expected a list of runs, found a mapping", instance="x", env="logged")
    log = write_json(tmp_path / "noid.json", {**payload, "post": [{**payload["post"][0], "id": 7}]})
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 0: post\[0\]: expected a run `id` string, found an integer", instance="x", env="logged")
    runs = agent_trace("t1", "e")
    log = write_jsonl(tmp_path / "mixed.jsonl", runs[:2] + ["not a run"] + runs[2:])
    assert_refused(log, tmp_path / "out.jsonl",
                   r":3: expected a LangSmith run or a \{post, patch\} payload, found a string", fmt="langsmith")
    [kept] = convert(log, tmp_path / "out.jsonl", fmt="langsmith", skip_invalid=True)
    assert len(kept["steps"]) == 2


def test_truncated_and_non_utf8_payloads(agent_logs: Path, tmp_path: Path) -> None:
    cut, latin = damaged(agent_logs / PAYLOAD, tmp_path, b'"patch"', (b"a bash script", b"a b\xe2sh script"))
    assert_refused(cut, tmp_path / "out.jsonl", r":\d+: truncated JSON", instance="x", env="logged")
    assert_refused(latin, tmp_path / "out.jsonl", r":\d+: not UTF-8 text \(byte 0xe2\)", instance="x", env="logged")
