"""The `atif` adapter on Harbor's real ATIF-v1.5 trajectories (terminus-2 with a parse-error step, OpenHands with
source_call_id), on hand-made steps (parallel calls, timestamps), and on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eebench.adapters import detect
from tests.adapters.conftest import assert_refused, convert, damaged, files_claimed
from tests.conftest import write_json, write_jsonl

TERMINUS = "atif/terminus-2__hello-world-invalid-json.trajectory.json"
OPENHANDS = "atif/openhands__hello-world.trajectory.json"


def atif(steps: list[Any], **fields: Any) -> dict[str, Any]:
    return {"schema_version": "ATIF-v1.5", "session_id": "s-1", "agent": {"name": "bot", "version": "1"},
            "steps": steps, **fields}


def test_terminus_steps_keep_the_parse_error_and_per_step_metrics(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / TERMINUS, tmp_path / "out.jsonl", instance="hello-world", env="logged")
    assert trajectory["id"] == "terminus-2__hello-world-invalid-json.trajectory/NORMALIZED_SESSION_ID"
    assert trajectory["agent"] == {"name": "terminus-2", "model": "openai/gpt-4o"}
    assert trajectory["source"]["record"] == "NORMALIZED_SESSION_ID"
    assert trajectory["source"]["missing_fields"] == ["latency_ms"]
    unparsed, write, complete, again = trajectory["steps"]
    # the reply the harness could not parse is a step of its own, kept whole, with the harness's complaint
    assert unparsed["raw"].startswith("I need to create a file called hello.txt with 'Hello, world!' as the content.")
    assert unparsed["raw"].endswith("This should work!")
    assert unparsed["reasoning"].startswith("The task is straightforward - I need to create a single file")
    assert unparsed["observation"].startswith("Previous response had parsing errors:\nERROR: Missing required fields")
    assert (unparsed["tokens_in"], unparsed["tokens_out"]) == (682, 100)
    assert write["action"] == ('bash_command({"duration": 0.1, '
                               '"keystrokes": "printf \'Hello, world!\\\\n\' > hello.txt\\n"})')
    assert write["observation"] == ("New Terminal Output:\n\n"
                                    "root@CONTAINER_ID:/app# printf 'Hello, world!\\n' > hello.txt\n\n\n")
    assert write["reasoning"] == (
        "I made a mistake in my previous response by not including the required 'analysis' and 'plan' fields. I need "
        "to correct this to follow the proper JSON schema.\nAnalysis: I received an error about missing required "
        "fields. Let me provide the complete response.\nPlan: I will create the hello.txt file with the correct "
        "content using printf.")
    assert [s["action"] for s in (complete, again)] == ["mark_task_complete()"] * 2
    assert [s["tokens_in"] for s in trajectory["steps"]] == [682, 785, 850, 100]
    assert sum(s["tokens_out"] for s in trajectory["steps"]) == trajectory["meta"]["total_completion_tokens"] == 200
    assert trajectory["meta"]["total_cost_usd"] == 0.008042500000000001
    assert trajectory["meta"]["schema_version"] == "ATIF-v1.5" and trajectory["meta"]["agent_version"] == "2.0.0"


def test_openhands_observations_join_by_source_call_id(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / OPENHANDS, tmp_path / "out.jsonl", instance="hello-world", env="logged")
    assert trajectory["agent"] == {"name": "openhands"}   # six steps, of which the system and user ones are prompt
    create, finish = trajectory["steps"]
    assert create == {
        "action": 'str_replace_editor({"command": "create", "file_text": "Hello, world!", "path": "/app/hello.txt", '
                  '"security_risk": "LOW"})',
        "raw": 'str_replace_editor({"command": "create", "file_text": "Hello, world!", "path": "/app/hello.txt", '
               '"security_risk": "LOW"})',
        "reasoning": "I edited the file /app/hello.txt.", "observation": "File created successfully at: /app/hello.txt",
        "tokens_in": 100, "tokens_out": 50}
    assert finish["action"] == 'finish({"message": "Task complete. Created /app/hello.txt with \'Hello, world!\'"})'
    assert "observation" not in finish and finish["tokens_in"] == 120


def test_atif_names_no_task_so_the_file_name_stands_for_it(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / OPENHANDS, tmp_path / "out.jsonl")
    assert trajectory["instance"] == "openhands__hello-world" and trajectory["env"] == "logged"
    [mapped] = convert(agent_logs / OPENHANDS, tmp_path / "mapped.jsonl", instance="hello-world", env="logged")
    assert mapped["instance"] == "hello-world"


def test_parallel_calls_take_their_own_results_and_the_step_time(tmp_path: Path) -> None:
    log = write_json(tmp_path / "run.trajectory.json", atif([
        {"step_id": 1, "source": "user", "message": "Find the exit."},
        {"step_id": 2, "source": "agent", "timestamp": "2025-01-02T03:04:05Z", "message": "Two looks.",
         "tool_calls": [{"tool_call_id": "a", "function_name": "look", "arguments": {"dir": "north"}},
                        {"tool_call_id": "b", "function_name": "look", "arguments": {"dir": "south"}}],
         "observation": {"results": [{"source_call_id": "b", "content": "a door"},
                                     {"source_call_id": "a", "content": "a wall"}]},
         "metrics": {"prompt_tokens": 10, "completion_tokens": 3}}]))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze", env="logged")
    north, south = trajectory["steps"]
    assert (north["observation"], south["observation"]) == ("a wall", "a door")
    assert north["timestamp"] == south["timestamp"] == "2025-01-02T03:04:05Z"
    assert north["reasoning"] == "Two looks." and "reasoning" not in south
    assert north["tokens_in"] == 10 and "tokens_in" not in south   # one model call: counted once
    assert trajectory["id"] == "run.trajectory/s-1"


def test_a_result_that_names_no_call_is_what_the_last_call_of_its_step_saw(tmp_path: Path) -> None:
    """Harbor's terminus-2 runs a step's commands in turn and writes one result without source_call_id: it was lost
    when the step made two calls."""
    log = write_json(tmp_path / "run.trajectory.json", atif([
        {"step_id": 1, "source": "agent", "message": "Write, then read.",
         "tool_calls": [{"tool_call_id": "c1", "function_name": "bash_command", "arguments": {"keystrokes": "a"}},
                        {"tool_call_id": "c2", "function_name": "bash_command", "arguments": {"keystrokes": "b"}}],
         "observation": {"results": [{"content": "$ a\n$ b\nHello"}]}},
        {"step_id": 2, "source": "agent", "message": "Once more.",
         "tool_calls": [{"tool_call_id": "c3", "function_name": "look", "arguments": {}},
                        {"tool_call_id": "c4", "function_name": "look", "arguments": {}}],
         "observation": {"results": [{"source_call_id": "c3", "content": "own"}, {"content": "shared"}]}}]))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="t", env="logged")
    assert [s.get("observation") for s in trajectory["steps"]] == [None, "$ a\n$ b\nHello", "own", "shared"]


def test_steps_copied_from_the_trajectory_continued_are_left_out_and_counted(tmp_path: Path) -> None:
    """ATIF-v1.5's is_copied_context: steps of an earlier trajectory, copied as context; not this one's actions."""
    log = write_json(tmp_path / "run.trajectory.json", atif([
        {"step_id": 1, "source": "user", "message": "old request", "is_copied_context": True},
        {"step_id": 2, "source": "agent", "message": "old", "is_copied_context": True,
         "tool_calls": [{"tool_call_id": "a", "function_name": "look", "arguments": {}}],
         "metrics": {"prompt_tokens": 99, "completion_tokens": 9}},
        {"step_id": 3, "source": "agent", "message": "new", "is_copied_context": False,
         "tool_calls": [{"tool_call_id": "b", "function_name": "move", "arguments": {"dir": "north"}}]}]))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze", env="logged")
    assert [s["raw"] for s in trajectory["steps"]] == ['move({"dir": "north"})']
    assert trajectory["meta"]["copied_context_steps"] == 1


def test_a_subagents_embedded_trajectory_is_one_of_its_own(tmp_path: Path) -> None:
    """ATIF-v1.7's subagent_trajectories were lost."""
    subagent = {"session_id": "sub-1", "agent": {"name": "searcher", "model_name": "haiku"}, "steps": [
        {"step_id": 1, "source": "user", "message": "find usages"},
        {"step_id": 2, "source": "agent", "tool_calls": [{"tool_call_id": "s1", "function_name": "bash",
                                                           "arguments": {"command": "grep -rn foo"}}],
         "observation": {"results": [{"source_call_id": "s1", "content": "x.py:1 foo"}]},
         "metrics": {"prompt_tokens": 1002, "completion_tokens": 52}}]}
    log = write_json(tmp_path / "run.trajectory.json", atif([
        {"step_id": 1, "source": "agent", "message": "Delegating.",
         "tool_calls": [{"tool_call_id": "c3", "function_name": "Task", "arguments": {"prompt": "find usages"}}],
         "observation": {"results": [{"source_call_id": "c3", "content": "found 1",
                                      "subagent_trajectory_ref": [{"session_id": "sub-1"}]}]}}],
        schema_version="ATIF-v1.7", subagent_trajectories=[subagent]))
    parent, child = convert(log, tmp_path / "out.jsonl", instance="maze", env="logged")
    assert (parent["id"], [s["raw"] for s in parent["steps"]]) == ("run.trajectory/s-1",
                                                                   ['Task({"prompt": "find usages"})'])
    assert (child["id"], child["agent"]["name"], child["agent"]["model"]) == ("run.trajectory/s-1/sub-1", "searcher",
                                                                              "haiku")
    assert [(s["raw"], s["observation"], s["tokens_in"]) for s in child["steps"]] == [
        ('bash({"command": "grep -rn foo"})', "x.py:1 foo", 1002)]
    assert child["meta"]["parent_session_id"] == "s-1" and child["meta"]["schema_version"] == "ATIF-v1.7"
    # session ids that repeat (Harbor's golden files normalise them): the ids stay apart under their parents'
    lines = [atif([], session_id="S", subagent_trajectories=[{**subagent, "session_id": "S"}, subagent]) for _ in "ab"]
    lines[1]["session_id"] = "T"
    repeated = write_jsonl(tmp_path / "repeated.jsonl", lines)
    assert [r["id"] for r in convert(repeated, tmp_path / "r.jsonl", instance="maze", env="logged")] == [
        "repeated/S", "repeated/S/S", "repeated/S/sub-1", "repeated/T", "repeated/T/S", "repeated/T/sub-1"]
    broken = write_json(tmp_path / "broken.json", atif([], subagent_trajectories=[{**subagent, "steps": [
        {"source": 5}]}]))
    assert_refused(broken, tmp_path / "refused.jsonl", r": record 0: subagent_trajectories\[0\]\.steps\[0\]\.source: "
                   r"expected the step's source", instance="x", env="logged")


def test_the_samples_are_detected_as_atif(agent_logs: Path) -> None:
    assert files_claimed(agent_logs, "atif") == [OPENHANDS, TERMINUS]
    assert {detect(agent_logs / name).name for name in (TERMINUS, OPENHANDS)} == {"atif"}


def test_bad_atif_documents_are_located(tmp_path: Path) -> None:
    log = write_json(tmp_path / "steps.json", atif("none"))
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 0: steps: expected a list of steps, found a string", instance="x", env="logged")
    log = write_json(tmp_path / "calls.json", atif([{"source": "agent", "tool_calls": {"name": "ls"}}]))
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 0: steps\[0\]: expected tool_calls to be a list of objects, found a mapping",
                   instance="x", env="logged")
    log = write_json(tmp_path / "source.json", atif([{"source": 5, "message": "ls"}]))
    assert_refused(log, tmp_path / "out.jsonl", r": record 0: steps\[0\]\.source: expected the step's source "
                   r"\(system, user or agent\), found an integer", instance="x", env="logged")
    log = write_json(tmp_path / "tokens.json", atif([{"source": "agent", "message": "ls",
                                                      "metrics": {"prompt_tokens": "100"}}]))
    assert_refused(log, tmp_path / "out.jsonl", r": record 0: steps\[0\]\.metrics\.prompt_tokens: expected a token "
                   r"count \(an integer >= 0\), found a string", instance="x", env="logged")
    log = write_json(tmp_path / "version.json", {**atif([]), "schema_version": 2})
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 0: schema_version: expected an ATIF schema_version such as 'ATIF-v1\.5', found 2",
                   fmt="atif", instance="x", env="logged")


def test_truncated_and_non_utf8_documents(agent_logs: Path, tmp_path: Path) -> None:
    cut, latin = damaged(agent_logs / TERMINUS, tmp_path, b'"step_id": 3', (b"Hello, world!", b"H\xe9llo"))
    assert_refused(cut, tmp_path / "out.jsonl", r":39: truncated JSON", instance="x", env="logged")
    assert_refused(latin, tmp_path / "out.jsonl", r":\d+: not UTF-8 text \(byte 0xe9\)", instance="x", env="logged")


def test_call_ids_of_the_wrong_type_are_located_not_a_traceback(tmp_path: Path) -> None:
    # a list or an object as an id ended in "TypeError: unhashable type" while joining results to calls
    call = {"tool_call_id": ["c1"], "function_name": "bash", "arguments": {"cmd": "ls"}}
    log = write_json(tmp_path / "call.json", atif([{"source": "agent", "tool_calls": [call]}]))
    assert_refused(log, tmp_path / "out.jsonl", r": record 0: steps\[0\]: expected each tool call's tool_call_id to "
                   r"be a string, found a list", instance="x", env="logged")
    step = {"source": "agent", "tool_calls": [{**call, "tool_call_id": "c1"}],
            "observation": {"results": [{"source_call_id": {"id": "c1"}, "content": "a.txt"}]}}
    log = write_json(tmp_path / "result.json", atif([step]))
    assert_refused(log, tmp_path / "out.jsonl", r": record 0: steps\[0\]: expected observation.results' "
                   r"source_call_id to be a string, found a mapping", instance="x", env="logged")


def test_token_totals_of_the_wrong_type_are_refused_as_step_counts_are(agent_logs: Path, tmp_path: Path) -> None:
    # final_metrics' totals were copied into meta as they were: a string, a negative, a boolean count
    document = json.loads((agent_logs / OPENHANDS).read_text("utf-8"))
    for key, value, found in (("total_prompt_tokens", "220", 'a string "220"'), ("total_completion_tokens", -1,
                              "an integer -1"), ("total_cached_tokens", True, "a boolean true")):
        broken = {**document, "final_metrics": {**document["final_metrics"], key: value}}
        log = write_json(tmp_path / f"{key}.trajectory.json", broken)
        assert_refused(log, tmp_path / "out.jsonl", rf": record 0: final_metrics\.{key}: expected a token count "
                       rf"\(an integer >= 0\), found {found}")
