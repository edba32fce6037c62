"""The `mini-swe-agent` adapter on a real mini-swe-agent-1 trajectory and on hand-made ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eebench.adapters import detect
from eebench.adapters.base import HEAD_BYTES, iso_utc
from tests.adapters.conftest import assert_refused, convert, files_claimed

FILE = "mini-swe-agent-trajectory"


def test_the_real_trajectory(agent_logs: Path, tmp_path: Path) -> None:
    [run] = convert(agent_logs / "mini_swe_agent" / f"{FILE}.json", tmp_path / "out.jsonl")
    assert run["id"] == run["instance"] == FILE
    assert run["env"] == "logged"
    assert run["agent"] == {"name": "InteractiveAgent", "model": "anthropic/claude-3-5-sonnet-20241022",
                            "harness": "mini-swe-agent"}
    steps = run["steps"]
    assert [s["action"] for s in steps] == ['echo "Hello, world!" > hello.txt', "cat hello.txt",
                                            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    assert [(s["tokens_in"], s["tokens_out"]) for s in steps] == [(752, 69), (841, 53), (919, 77)]
    # extra.response.created (epoch seconds 1760078127, ...) is the only clock: ISO UTC
    assert [s["timestamp"] for s in steps] == ["2025-10-10T06:35:27Z", "2025-10-10T06:35:28Z", "2025-10-10T06:35:30Z"]
    assert steps[0]["raw"] == ('THOUGHT: To create a file called hello.txt with "Hello, world!" as the content, I can '
                               "use the echo command and redirect its output to the file. This is a simple and direct "
                               'way to create a file with specific content.\n\n```bash\necho "Hello, world!" > '
                               "hello.txt\n```")
    assert steps[0]["reasoning"] == ('To create a file called hello.txt with "Hello, world!" as the content, I can use '
                                     "the echo command and redirect its output to the file. This is a simple and "
                                     "direct way to create a file with specific content.")
    assert [s["observation"] for s in steps] == ["<returncode>0</returncode>\n<output>\n</output>",
                                                 "<returncode>0</returncode>\n<output>\nHello, world!\n</output>", ""]
    assert run["meta"] == {"exit_status": "Submitted", "mini_version": "1.13.4", "instance_cost": 0.010520999999999999,
                           "api_calls": 3}
    assert run["source"]["missing_fields"] == ["latency_ms"]


def test_the_real_file_is_detected_as_mini_swe_agent_and_no_other_is_claimed(agent_logs: Path) -> None:
    assert detect(agent_logs / "mini_swe_agent" / f"{FILE}.json").name == "mini-swe-agent"
    assert files_claimed(agent_logs, "mini-swe-agent") == [f"mini_swe_agent/{FILE}.json"]


def trajectory(messages: list[Any], submission: str = "") -> dict[str, Any]:
    return {"info": {"exit_status": "Submitted", "submission": submission, "mini_version": "1.9.0"},
            "messages": messages, "trajectory_format": "mini-swe-agent-1"}


def test_an_output_without_exactly_one_bash_block_is_kept_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "astropy__astropy-12907.traj.json"
    path.write_text(json.dumps(trajectory([
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Please solve this issue: fix it"},
        {"role": "assistant", "content": "THOUGHT: two at once\n\n```bash\nls\n```\n\n```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        {"role": "assistant", "content": [{"type": "text", "text": "THOUGHT: one\n\n```bash\nls -la\n```"}]},
        {"role": "user", "content": [{"type": "text", "text": "<returncode>0</returncode>\n<output>\n.\n</output>"}]},
    ])), "utf-8")
    [run] = convert(path, tmp_path / "out.jsonl")
    assert run["id"] == run["instance"] == "astropy__astropy-12907"   # <instance>.traj.json
    assert run["steps"] == [
        {"action": None, "raw": "THOUGHT: two at once\n\n```bash\nls\n```\n\n```bash\npwd\n```",
         "observation": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        {"action": "ls -la", "raw": "THOUGHT: one\n\n```bash\nls -la\n```", "reasoning": "one",
         "observation": "<returncode>0</returncode>\n<output>\n.\n</output>"}]
    assert run["source"]["unreadable_actions"] == 1
    assert run["agent"] == {"harness": "mini-swe-agent"}


def test_a_long_trajectory_is_detected_by_its_opening(tmp_path: Path) -> None:
    # a long submission pushes `mini_version`, the messages and `trajectory_format` beyond what detection reads
    path = tmp_path / "long.traj.json"
    path.write_text(json.dumps(trajectory([{"role": "assistant", "content": "```bash\nls\n```"}],
                                          submission="diff --git a/x b/x\n" + "+x\n" * HEAD_BYTES)), "utf-8")
    assert b"mini_version" not in path.read_bytes()[:HEAD_BYTES]
    assert detect(path).name == "mini-swe-agent"
    assert convert(path, tmp_path / "out.jsonl")[0]["steps"] == [{"action": "ls", "raw": "```bash\nls\n```"}]


@pytest.mark.parametrize("doc, message", [
    ({"info": {}, "trajectory_format": "mini-swe-agent-1"}, r"record 0: expected a mini-swe-agent trajectory \(an "
                                                            r"object with a `messages` list\), found an object "
                                                            r"without a `messages` list"),
    ([], r"record 0: expected a mini-swe-agent trajectory \(an object with a `messages` list\), found a list"),
    ({"messages": [{"role": "user", "content": "x"}, {"content": "y"}], "trajectory_format": "mini-swe-agent-1"},
     r"record 0: messages\[1\]: expected a chat message with a `role`, found an object without a "
     r"`role` string"),
])
def test_a_wrong_shape_is_one_located_error(tmp_path: Path, doc: Any, message: str) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(doc), "utf-8")
    assert_refused(path, tmp_path / "out.jsonl", ": " + message, fmt="mini-swe-agent")


@pytest.mark.parametrize("content, message", [
    (b'{"info": {"mini_version": "1.0"}, "messages": [{"role": "assistant", "content": "x"}', r":1: truncated JSON"),
    (b'{"info": {"mini_version": "1.0"},\n "messages": [{"role": "user", "content": "\xff"}]}',
     r":2: not UTF-8 text \(byte 0xff\)"),
])
def test_unreadable_bytes_are_one_located_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "run.traj.json"
    path.write_bytes(content)
    assert_refused(path, tmp_path / "out.jsonl", message, fmt="mini-swe-agent")


@pytest.mark.parametrize("seconds, iso", [(1760078127, "2025-10-10T06:35:27Z"), (1760078127.25,
                                                                                  "2025-10-10T06:35:27.250Z"),
                                          (-5, None), ("1760078127", None), (True, None), (None, None)])
def test_iso_utc(seconds: Any, iso: str | None) -> None:
    assert iso_utc(seconds) == iso


def _call(command: str, call_id: str) -> dict[str, Any]:
    return {"index": 0, "id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def _v2_trajectory(messages: list[Any], instance_template: str = "<pr_description>[...]") -> dict[str, Any]:
    """mini-swe-agent 2.x's layout: `info.config` first (its classes name the package), `mini_version`,
    `trajectory_format` (mini-swe-agent-1.1) and `instance_id` last."""
    return {"info": {"config": {"agent": {"system_template": "You are a helpful assistant.",
                                          "instance_template": instance_template, "step_limit": 250},
                                "agent_type": "minisweagent.run.benchmarks.swebench.ProgressTrackingAgent",
                                "model": {"model_name": "deepseek/deepseek-chat"},
                                "model_type": "minisweagent.models.litellm_model.LitellmModel"},
                     "model_stats": {"instance_cost": 0.02, "api_calls": 3},
                     "mini_version": "2.2.7", "exit_status": "Submitted", "submission": "diff --git a/x b/x\n"},
            "messages": messages, "trajectory_format": "mini-swe-agent-1.1", "instance_id": "django__django-11099"}


V2_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "<pr_description>fix it</pr_description>"},
    {"role": "assistant", "content": "Let me look around first.",
     "tool_calls": [_call("ls", "call_1"), _call("cat setup.py", "call_2")],
     "extra": {"actions": [{"command": "ls", "tool_call_id": "call_1"},
                           {"command": "cat setup.py", "tool_call_id": "call_2"}],
               "response": {"created": 1775803316, "model": "deepseek-chat",
                            "usage": {"prompt_tokens": 1515, "completion_tokens": 83}},
               "timestamp": 1775803317.86}},
    # the answers, matched by call id (not by order)
    {"role": "tool", "tool_call_id": "call_2", "content": "<returncode>0</returncode>\n<output>\nsetup()\n</output>"},
    {"role": "tool", "tool_call_id": "call_1", "content": "<returncode>0</returncode>\n<output>\nsetup.py\n</output>"},
    {"role": "assistant", "content": "Done thinking, no call."},   # a tool-calling model's format error
    {"role": "user", "content": "Tool call error: no tool call found"},
    {"role": "assistant", "content": "", "tool_calls": [_call("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "c3")],
     "extra": {"timestamp": 1775803555.25}},
    {"role": "tool", "tool_call_id": "c3", "content": "<returncode>0</returncode>\n<output>\n</output>"},
    {"role": "exit", "content": "diff --git a/x b/x\n", "extra": {"exit_status": "Submitted"}},
]


def test_a_tool_calling_trajectory_of_mini_swe_agent_2(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(_v2_trajectory(V2_MESSAGES), indent=2), "utf-8")
    assert detect(path).name == "mini-swe-agent"
    [run] = convert(path, tmp_path / "out.jsonl")
    assert run["id"] == run["instance"] == "django__django-11099"   # the file's instance_id
    assert run["agent"] == {"name": "ProgressTrackingAgent", "model": "deepseek/deepseek-chat",
                            "harness": "mini-swe-agent"}
    assert run["steps"] == [
        {"action": "ls", "raw": 'bash({"command": "ls"})', "reasoning": "Let me look around first.",
         "observation": "<returncode>0</returncode>\n<output>\nsetup.py\n</output>",
         "tokens_in": 1515, "tokens_out": 83, "timestamp": "2026-04-10T06:41:56Z"},
        {"action": "cat setup.py", "raw": 'bash({"command": "cat setup.py"})',
         "observation": "<returncode>0</returncode>\n<output>\nsetup()\n</output>",
         "timestamp": "2026-04-10T06:41:56Z"},
        {"action": None, "raw": "Done thinking, no call.", "observation": "Tool call error: no tool call found"},
        {"action": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
         "raw": 'bash({"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})',
         "observation": "<returncode>0</returncode>\n<output>\n</output>", "timestamp": "2026-04-10T06:45:55.250Z"}]
    assert run["source"]["unreadable_actions"] == 1
    assert run["meta"] == {"exit_status": "Submitted", "mini_version": "2.2.7", "instance_cost": 0.02, "api_calls": 3}


@pytest.mark.parametrize("version", [1, 2])
def test_a_long_trajectory_is_no_chat_transcript(tmp_path: Path, version: int) -> None:
    # trajectory_format comes after the messages: past what detection reads, the file still names mini-swe-agent
    turns = [{"role": "assistant", "content": "```bash\nls\n```"}, {"role": "user", "content": "x" * 1000}] * 80
    doc = _v2_trajectory(turns) if version == 2 else trajectory(turns)
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(doc, indent=2), "utf-8")
    assert b"trajectory_format" not in path.read_bytes()[:HEAD_BYTES]
    assert detect(path).name == "mini-swe-agent"


def test_mini_swe_agent_2_is_told_by_its_classes_when_a_long_template_hides_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(_v2_trajectory(V2_MESSAGES, instance_template="x" * HEAD_BYTES)), "utf-8")
    head = path.read_bytes()[:HEAD_BYTES]
    assert b"mini_version" not in head and b"trajectory_format" not in head
    assert detect(path).name == "mini-swe-agent"


def test_a_text_based_trajectory_of_mini_swe_agent_2(tmp_path: Path) -> None:
    # 2.x's text-based models answer in a ```mswea_bash_command block, and the harness records the command it ran
    # in `extra.actions`: every action was null
    path = tmp_path / "demo__repo-1.traj.json"
    path.write_text(json.dumps({"info": {"mini_version": "2.1.0", "exit_status": "Submitted"},
                                "trajectory_format": "mini-swe-agent-1.1", "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Please solve this issue: fix it"},
        {"role": "assistant", "content": "THOUGHT: list files\n\n```mswea_bash_command\nls -la\n```",
         "extra": {"actions": [{"command": "ls -la"}]}},
        {"role": "user", "content": "<returncode>0</returncode>"},
        {"role": "assistant", "content": "THOUGHT: the harness ran what it read", "extra": {"actions": [{"command": "pwd"}]}},
        {"role": "user", "content": "<returncode>0</returncode>"}]}), "utf-8")
    [run] = convert(path, tmp_path / "out.jsonl")
    assert [(s["action"], s.get("reasoning")) for s in run["steps"]] == [
        ("ls -la", "list files"), ("pwd", "the harness ran what it read")]
    assert run["source"]["unreadable_actions"] == 0


def test_a_format_error_of_mini_swe_agent_2_is_a_step_with_no_action(tmp_path: Path) -> None:
    # 2.x stores no assistant message for an answer it could not parse, only the format error (the turn vanished)
    path = tmp_path / "demo__repo-1.traj.json"
    path.write_text(json.dumps({"info": {"mini_version": "2.1.0"}, "trajectory_format": "mini-swe-agent-1.1",
                                "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Please solve this issue: fix it"},
        {"role": "assistant", "content": "THOUGHT: look\n\n```mswea_bash_command\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action.",
         "extra": {"interrupt_type": "FormatError", "model_response": "I will run two: ls; pwd"}},
        {"role": "assistant", "content": "THOUGHT: one\n\n```mswea_bash_command\npwd\n```"},
        {"role": "user", "content": "<returncode>0</returncode>"}]}), "utf-8")
    [run] = convert(path, tmp_path / "out.jsonl")
    assert [(s["action"], s.get("raw"), s.get("observation")) for s in run["steps"]] == [
        ("ls", "THOUGHT: look\n\n```mswea_bash_command\nls\n```", "<returncode>0</returncode>"),
        (None, "I will run two: ls; pwd", "Please always provide EXACTLY ONE action."),
        ("pwd", "THOUGHT: one\n\n```mswea_bash_command\npwd\n```", "<returncode>0</returncode>")]
