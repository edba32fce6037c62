"""The `swe-agent` adapter on SWE-agent's real trajectories (1.x and 0.x legacy) and on broken ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from eebench.adapters import detect
from tests.adapters.conftest import assert_refused, convert, files_claimed

V1 = "6e44b9__sweagenttestrepo-1c2844"
LEGACY = "pydicom__pydicom-1458.legacy-v0"


def test_a_1x_trajectory(agent_logs: Path, tmp_path: Path) -> None:
    [run] = convert(agent_logs / "swe_agent" / f"{V1}.traj", tmp_path / "out.jsonl")
    assert run["id"] == V1
    assert run["instance"] == "SWE-agent__test-repo-i1"   # replay_config.problem_statement.id
    assert run["env"] == "logged"
    assert run["agent"] == {"model": "gpt-4o", "harness": "swe-agent"}
    assert [s["action"] for s in run["steps"]] == [
        "find_file missing_colon.py", 'open "/SWE-agent__test-repo/tests/missing_colon.py"',
        "edit 'def division(a: float, b: float) -> float' 'def division(a: float, b: float) -> float:' False",
        "python3 /SWE-agent__test-repo/tests/missing_colon.py", "submit"]
    assert [s["latency_ms"] for s in run["steps"]] == pytest.approx([281.4128329991945, 296.75291599960474,
                                                                      493.5787079994043, 292.5790000008419,
                                                                      269.1650420001679])
    first = run["steps"][0]
    assert first["raw"] == first["reasoning"] == (
        "To start addressing this issue, I will first search for the `missing_colon.py` file and open it since that "
        "is where the problem is occurring. I will then examine the file to see exactly what the syntax error might "
        "be and correct it. \n\nLet's begin by finding the `missing_colon.py` file in the repository.")
    assert first["observation"] == ('Found 1 matches for "missing_colon.py" in /SWE-agent__test-repo:\r\n'
                                    "/SWE-agent__test-repo/tests/missing_colon.py")
    assert run["steps"][3]["observation"] == "8.2"
    assert run["meta"] == {"exit_status": "submitted", "environment": "main", "tokens_in_total": 7141,
                           "tokens_out_total": 243, "api_calls": 5, "instance_cost": 0.019520000000000006}
    assert run["source"]["missing_fields"] == ["timestamp", "tokens_in", "tokens_out"]
    assert not any("tokens_in" in s or "timestamp" in s for s in run["steps"])


def test_a_legacy_trajectory(agent_logs: Path, tmp_path: Path) -> None:
    [run] = convert(agent_logs / "swe_agent" / f"{LEGACY}.traj", tmp_path / "out.jsonl")
    assert run["id"] == run["instance"] == LEGACY   # no replay_config: SWE-agent names the file after the instance
    assert run["agent"] == {"harness": "swe-agent"}
    steps = run["steps"]
    assert len(steps) == 12
    assert [s["action"] for s in steps[:5]] == ["create reproduce_bug.py", steps[1]["action"],
                                                "python reproduce_bug.py", 'find_file "numpy_handler.py"',
                                                "open pydicom/pixel_data_handlers/numpy_handler.py 293"]
    assert steps[1]["action"].startswith("edit 1:1\nimport numpy as np\n") and steps[1]["action"].endswith(
        "end_of_edit")
    assert [s["action"] for s in steps[-3:]] == ["python reproduce_bug.py", "rm reproduce_bug.py", "submit"]
    assert steps[0]["raw"].endswith("```\ncreate reproduce_bug.py\n```")   # the response, with the fenced command
    assert steps[1]["reasoning"] == ("Now let's paste in the example code from the issue into the `reproduce_bug.py` "
                                     "file to replicate the bug.\n\n")
    assert steps[0]["observation"] == "[File: /pydicom__pydicom/reproduce_bug.py (1 lines total)]\n1:\n"
    assert steps[10]["observation"] == ""
    assert not any("latency_ms" in s for s in steps)   # 0.x has no execution_time
    assert run["meta"] == {"exit_status": "submitted", "environment": "swe_main", "tokens_in_total": 122612,
                           "tokens_out_total": 1369, "api_calls": 12, "instance_cost": 1.26719, "total_cost": 1.26719}


def test_both_real_files_are_detected_as_swe_agent_and_no_other_is_claimed(agent_logs: Path) -> None:
    assert {detect(p).name for p in (agent_logs / "swe_agent").iterdir()} == {"swe-agent"}
    assert files_claimed(agent_logs, "swe-agent") == [f"swe_agent/{V1}.traj", f"swe_agent/{LEGACY}.traj"]


def test_a_json_copy_is_detected_by_its_opening(agent_logs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run.json"
    shutil.copy(agent_logs / "swe_agent" / f"{V1}.traj", copy)
    assert detect(copy).name == "swe-agent"
    assert len(convert(copy, tmp_path / "out.jsonl")[0]["steps"]) == 5


def write_traj(folder: Path, doc: Any) -> Path:
    path = folder / "inst-1.traj"
    path.write_text(json.dumps(doc), "utf-8")
    return path


@pytest.mark.parametrize("doc, message", [
    ([], r"record 0: expected a SWE-agent trajectory \(an object with a `trajectory` list\), found a list"),
    ({"trajectory": {}}, r"record 0: expected a SWE-agent trajectory \(an object with a `trajectory` list\), found an "
                         r"object without a `trajectory` list"),
    ({"trajectory": [{"action": "ls", "observation": "a"}, {"observation": "b"}]},
     r"record 0: trajectory\[1\]\.action: expected the command as a string, found null"),
    ({"trajectory": ["ls"]}, r"record 0: trajectory\[0\]: expected a step object, found a string"),
    ({"trajectory": [{"action": "ls", "observation": ["a"]}]},
     r"record 0: trajectory\[0\]\.observation: expected a string, found a list"),
    ({"trajectory": [{"action": "ls", "execution_time": -1}]},
     r"record 0: trajectory\[0\]\.execution_time: expected seconds \(a number >= 0\), found -1"),
    ({"attempts": [{"trajectory": []}, {"info": {}}]}, r"record 0: attempts\[1\]: expected an attempt's trajectory "
                                                       r"\(an object with a `trajectory` list\), found an object "
                                                       r"without a `trajectory` list"),
    ({"attempts": [{"trajectory": [{"action": 3}]}]},
     r"record 0: attempts\[0\]\.trajectory\[0\]\.action: expected the command as a string, found an integer"),
])
def test_a_wrong_shape_is_one_located_error(tmp_path: Path, doc: Any, message: str) -> None:
    assert_refused(write_traj(tmp_path, doc), tmp_path / "out.jsonl", ": " + message, fmt="swe-agent")


@pytest.mark.parametrize("content, message", [
    (b'{"environment": "main", "trajectory": [{"action": "ls"', r":1: truncated JSON"),
    (b'{"environment": "main", "trajectory": [{"action": "l\xe9s"}]}', r":1: not UTF-8 text \(byte 0xe9\)"),
])
def test_unreadable_bytes_are_one_located_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "inst-1.traj"
    path.write_bytes(content)
    assert detect(path).name == "swe-agent"
    assert_refused(path, tmp_path / "out.jsonl", message)


def test_a_replay_config_kept_as_a_json_string(tmp_path: Path) -> None:
    replay = json.dumps({"problem_statement": {"id": "org__repo-7"}, "agent": {"model": {"name": "claude"}}})
    path = write_traj(tmp_path, {"environment": "main", "trajectory": [{"action": "ls", "execution_time": 2}],
                                 "replay_config": replay})
    [run] = convert(path, tmp_path / "out.jsonl")
    assert run["instance"] == "org__repo-7" and run["agent"]["model"] == "claude"
    assert run["steps"] == [{"action": "ls", "latency_ms": 2000}]


def test_a_thinking_models_reasoning_content_comes_before_its_thought(tmp_path: Path) -> None:
    path = write_traj(tmp_path, {"environment": "main", "trajectory": [
        {"action": "ls", "observation": "a.py", "response": "DISCUSSION\nLook.\n\n```\nls\n```", "thought":
         "DISCUSSION\nLook.", "execution_time": 0.5, "state": {}, "query": [], "extra_info": {},
         "reasoning_content": "The repository layout first."},
        {"action": "submit", "observation": "", "response": "submit", "thought": "", "reasoning_content": "Done."}]})
    [run] = convert(path, tmp_path / "out.jsonl")
    assert [s.get("reasoning") for s in run["steps"]] == ["The repository layout first.\nDISCUSSION\nLook.", "Done."]


def _attempt(status: str, actions: list[str], tokens_sent: int) -> dict[str, Any]:
    return {"trajectory": [{"action": a, "observation": "", "thought": "", "response": a} for a in actions],
            "info": {"exit_status": status, "model_stats": {"tokens_sent": tokens_sent, "tokens_received": 10,
                                                            "api_calls": len(actions)}},
            "replay_config": {"problem_statement": {"id": "org__repo-7"}}, "environment": "main"}


def test_each_attempt_of_a_retry_agent_is_a_trajectory(tmp_path: Path) -> None:
    """RetryAgent writes every attempt and, beside them, a copy of the one it chose with the totals of all."""
    first, second = _attempt("exit_cost", ["ls", "cat a.py"], 1200), _attempt("submitted", ["ls", "submit"], 800)
    chosen = {**second, "info": {**second["info"], "best_attempt_idx": 1,
                                 "model_stats": {"tokens_sent": 2000, "tokens_received": 20, "api_calls": 4}}}
    path = write_traj(tmp_path, {"attempts": [first, second], **chosen})
    runs = convert(path, tmp_path / "out.jsonl")
    assert [(r["id"], r["instance"], [s["action"] for s in r["steps"]]) for r in runs] == [
        ("inst-1/attempt-0", "org__repo-7", ["ls", "cat a.py"]), ("inst-1/attempt-1", "org__repo-7", ["ls", "submit"])]
    assert [r["meta"] for r in runs] == [
        {"exit_status": "exit_cost", "environment": "main", "tokens_in_total": 1200, "tokens_out_total": 10,
         "api_calls": 2, "attempt": 0, "best_attempt": False},
        {"exit_status": "submitted", "environment": "main", "tokens_in_total": 800, "tokens_out_total": 10,
         "api_calls": 2, "attempt": 1, "best_attempt": True}]
    (tmp_path / "midrun").mkdir()
    midrun = write_traj(tmp_path / "midrun", {"attempts": [first]})   # (written after each attempt: no choice yet)
    [run] = convert(midrun, tmp_path / "out.jsonl")
    assert run["id"] == "inst-1/attempt-0" and "best_attempt" not in run["meta"]
