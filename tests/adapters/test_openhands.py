"""The `openhands` adapter on a real OpenHands event stream and on hand-made ones."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eebench.adapters import detect
from eebench.adapters.base import HEAD_BYTES
from eebench.errors import InputError
from tests.adapters.conftest import assert_refused, convert, files_claimed

COMMAND = ("printf 'Hello, world!\\n' > hello.txt && echo \"Created $(pwd)/hello.txt\" && echo \"Size: $(wc -c < "
           "hello.txt) bytes\" && printf 'Content: ' && cat hello.txt")
FINAL = ('Created /app/hello.txt with the requested content: "Hello, world!". Let me know if you want it moved or '
         "modified.")


def test_the_real_event_stream(agent_logs: Path, tmp_path: Path) -> None:
    [run] = convert(agent_logs / "openhands_events" / "openhands_trajectory.json", tmp_path / "out.jsonl")
    assert run["id"] == run["instance"] == "openhands_trajectory"
    assert run["env"] == "logged"
    assert run["agent"] == {"name": "CodeActAgent", "model": "gpt-5-2025-08-07", "harness": "openhands"}
    run_step, finish = run["steps"]   # system, user message and recall events are not steps
    assert run_step == {
        "action": "run(" + json.dumps({"command": COMMAND}) + ")",
        # the model's own call, its arguments string as it wrote them
        "raw": r"""execute_bash({"command":"printf 'Hello, world!\\n' > hello.txt && echo \"Created """
               r"""$(pwd)/hello.txt\" && echo \"Size: $(wc -c < hello.txt) bytes\" && printf 'Content: ' && cat """
               r"""hello.txt","timeout": 120,"security_risk":"MEDIUM"})""",
        "observation": "Created /app/hello.txt\nSize: 14 bytes\nContent: Hello, world!",
        "tokens_in": 5863, "tokens_out": 1042, "timestamp": "2025-10-10T06:10:38.391633"}
    assert finish == {"action": "finish(" + json.dumps({"final_thought": FINAL}) + ")",
                      "raw": "finish(" + json.dumps({"message": FINAL}, separators=(",", ":")) + ")",
                      "tokens_in": 5996, "tokens_out": 44, "timestamp": "2025-10-10T06:10:41.015583"}
    assert run["meta"] == {"openhands_version": "0.58.0",
                           "instruction": 'Create a file called hello.txt with "Hello, world!" as the content.\n',
                           "accumulated_cost": 0.01934775, "tokens_in_total": 11859, "tokens_out_total": 1086,
                           "finished": True}
    assert run["source"]["missing_fields"] == []


def test_completions_with_an_empty_id_are_each_counted(agent_logs: Path, tmp_path: Path) -> None:
    """An empty `model_response.id` names no completion: the second step lost its tokens and text when "" was taken
    for an id already counted."""
    events = json.loads((agent_logs / "openhands_events" / "openhands_trajectory.json").read_text())
    for event in events:
        response = (event.get("tool_call_metadata") or {}).get("model_response")
        if response is not None:
            response["id"] = ""
    log = tmp_path / "empty_ids.json"
    log.write_text(json.dumps(events))
    [run] = convert(log, tmp_path / "out.jsonl")
    assert [(s["tokens_in"], s["tokens_out"]) for s in run["steps"]] == [(5863, 1042), (5996, 44)]


def test_the_real_stream_is_detected_as_openhands_only(agent_logs: Path) -> None:
    # it embeds chat completions ("role": "assistant"), yet is not an openai-chat transcript
    assert detect(agent_logs / "openhands_events" / "openhands_trajectory.json").name == "openhands"
    # nor is ATIF's OpenHands export an event stream
    assert files_claimed(agent_logs, "openhands") == ["openhands_events/openhands_trajectory.json"]


def response(response_id: str, calls: list[tuple[str, str, str]], content: str | None = None,
             prompt: int = 100, completion: int = 10) -> dict[str, Any]:
    return {"id": response_id, "model": "m-1", "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
            "choices": [{"message": {"role": "assistant", "content": content, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]}}]}


def action(event_id: int, kind: str, args: dict[str, Any], call_id: str | None = None,
           model_response: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    event = {"id": event_id, "timestamp": f"2025-01-01T00:00:{event_id:02d}", "source": "agent", "message": "",
             "action": kind, "args": args, **extra}
    if model_response is not None:
        event["tool_call_metadata"] = {"function_name": "f", "tool_call_id": call_id, "model_response": model_response,
                                       "total_calls_in_response": len(model_response["choices"][0]["message"]
                                                                      ["tool_calls"])}
    return event


def observation(event_id: int, cause: int, content: str, kind: str = "run", **extra: Any) -> dict[str, Any]:
    return {"id": event_id, "timestamp": "2025-01-01T00:00:09", "source": "environment", "message": "",
            "cause": cause, "observation": kind, "content": content, "extras": extra}


def test_a_hand_made_stream(tmp_path: Path) -> None:
    two = response("r1", [("c1", "execute_bash", '{"command": "ls"}'), ("c2", "str_replace_editor",
                                                                         '{"command": "view", "path": "/a"}')],
                   content="Looking around.", prompt=300, completion=30)
    latencies = {"response_latencies": [{"model": "m-1", "latency": 1.5, "response_id": "r1"}]}
    events = [
        {"id": 0, "timestamp": "t0", "source": "agent", "action": "system", "args": {"content": "You are ..."}},
        {"id": 1, "timestamp": "t1", "source": "user", "action": "message", "args": {"content": "Fix the bug."}},
        action(2, "run", {"command": "ls", "thought": "First look.", "blocking": False}, "c1", two,
               llm_metrics=latencies),
        action(3, "read", {"path": "/a", "thought": "", "impl_source": "oh_aci"}, "c2", two),
        observation(4, 2, "a b c"),
        observation(5, 3, "contents of a", kind="read"),
        action(6, "message", {"content": "Which bug?", "wait_for_response": True}),
        {"id": 7, "timestamp": "t7", "source": "user", "action": "message", "args": {"content": "The one in a."}},
        action(8, "think", {"thought": "It must be in a."}),
        observation(9, 8, "Your thought has been logged.", kind="think"),
        action(10, "mcp", {"name": "lint", "arguments": {"path": "/a"}, "thought": ""}),
        action(13, "edit", {"path": "/a", "command": "insert", "insert_line": 0, "new_str": "x", "old_str": None,
                            "thought": "", "impl_source": "oh_aci"}),
        observation(11, 99, "an observation of nothing we know"),
        observation(12, 10, "ok", kind="agent_state_changed", agent_state="finished"),
    ]
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(events), "utf-8")
    assert detect(path).name == "openhands"
    [run] = convert(path, tmp_path / "out.jsonl")
    assert run["steps"] == [
        {"action": 'run({"command": "ls"})', "raw": 'Looking around.\nexecute_bash({"command": "ls"})',
         "reasoning": "First look.", "observation": "a b c", "tokens_in": 300, "tokens_out": 30, "latency_ms": 1500.0,
         "timestamp": "2025-01-01T00:00:02"},
        # the second call of the same completion: its tokens are not counted twice
        {"action": 'read({"path": "/a"})', "raw": 'str_replace_editor({"command": "view", "path": "/a"})',
         "observation": "contents of a", "timestamp": "2025-01-01T00:00:03"},
        # no completion behind these: raw is the call as rendered
        {"action": 'message({"content": "Which bug?"})', "raw": 'message({"content": "Which bug?"})',
         "observation": "The one in a.", "timestamp": "2025-01-01T00:00:06"},
        {"action": 'think({"thought": "It must be in a."})', "raw": 'think({"thought": "It must be in a."})',
         "reasoning": "It must be in a.", "observation": "Your thought has been logged.",
         "timestamp": "2025-01-01T00:00:08"},
        {"action": 'mcp({"arguments": {"path": "/a"}, "name": "lint"})',
         "raw": 'mcp({"arguments": {"path": "/a"}, "name": "lint"})', "timestamp": "2025-01-01T00:00:10"},
        {"action": 'edit({"command": "insert", "insert_line": 0, "new_str": "x", "path": "/a"})',
         "raw": 'edit({"command": "insert", "insert_line": 0, "new_str": "x", "path": "/a"})',
         "timestamp": "2025-01-01T00:00:13"},
    ]
    assert run["meta"] == {"instruction": "Fix the bug.", "agent_state": "finished"}
    assert run["agent"] == {"model": "m-1", "harness": "openhands"}


def test_the_models_own_reasoning_is_kept_beside_the_thought(tmp_path: Path) -> None:
    """The completion's reasoning_content was dropped whenever the action's thought was set."""
    thinking = response("r1", [("c1", "execute_bash", '{"command": "ls"}')])
    thinking["choices"][0]["message"]["reasoning_content"] = "I should inspect the repo."
    path = tmp_path / "stream.json"
    path.write_text(json.dumps([action(2, "run", {"command": "ls", "thought": "First look."}, "c1", thinking)]),
                    "utf-8")
    [run] = convert(path, tmp_path / "out.jsonl", fmt="openhands")
    assert run["steps"][0]["reasoning"] == "I should inspect the repo.\nFirst look."


def test_a_stream_whose_system_prompt_fills_the_head_is_detected(tmp_path: Path) -> None:
    system = {"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "agent", "message": "You are ... " * 8000,
              "action": "system", "args": {"content": "You are ..."}}
    path = tmp_path / "stream.json"
    path.write_text(json.dumps([system, action(2, "run", {"command": "ls"})], indent=4), "utf-8")
    assert b'"action"' not in path.read_bytes()[:HEAD_BYTES]
    assert detect(path).name == "openhands"


@pytest.mark.parametrize("content, message", [
    (b'{"id": 0, "source": "agent", "action": "run"}', r": record 0: expected a JSON list of OpenHands events, found "
                                                       r"a mapping"),
    (b'[{"id": 0, "source": "agent", "action": "run", "args": {}}, 7]', r": record 1: expected an event object, "
                                                                        r"found an integer"),
    (b'[{"id": 0, "source": "agent", "action": "run", "args": "ls"}]', r": record 0: expected an action name and an "
                                                                       r"args object, found args a string"),
    (b'[{"id": 0, "source": "agent", "action": "run", "args": {"command": "ls"}}, {"id": 1, "source"',
     r": record 1: truncated JSON; 1 records before it were read"),
    (b'[{"id": 0, "source": "agent", "action": "run", "args": {"command": "l\xff"}}]', r": record 0: not UTF-8 text"),
    (b'[]', r": holds no openhands episode$"),   # (was a trajectory of no steps, exit 0)
])
def test_a_broken_stream_is_one_located_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "stream.json"
    path.write_bytes(content)
    assert_refused(path, tmp_path / "out.jsonl", message, fmt="openhands")


def test_a_wrong_from_is_refused(agent_logs: Path, tmp_path: Path) -> None:
    tau = agent_logs / "openai_chat" / "tau-bench_gpt-4o-airline.first7.json"
    with pytest.raises(InputError, match=re.escape(str(tau)) + r": record 0: expected an OpenHands event \(with "
                                                               r"`action` or `observation`\), found an object with "
                                                               r"info, reward, task_id, traj, trial"):
        convert(tau, tmp_path / "out.jsonl", fmt="openhands")
