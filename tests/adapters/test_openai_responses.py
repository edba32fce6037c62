"""The `openai-responses` adapter on NeMo Gym's real rollouts (Sokoban with text actions, MCP echo tools with
function calls), on hand-made Responses items (reasoning, parallel and hosted calls), and on bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from eebench.adapters import detect
from tests.adapters.conftest import assert_refused, convert, files_claimed
from tests.conftest import write_json, write_jsonl

SOKOBAN = "openai_responses/nemo-gym_grl_sokoban_example_rollouts.jsonl"
OPENENV = "openai_responses/nemo-gym_openenv_example_rollouts.jsonl"
BOARD_0 = ("Sokoban board:\n#####\n#O__#\n#_X_#\n#_P_#\n#####\n\nLegend: #=wall, _=floor, O=target, X=box, "
           "√=box on target, P=player, S=player on target.\nRespond with exactly one move using <action>Up</action>, "
           "<action>Down</action>, <action>Left</action>, or <action>Right</action>.")


def test_sokoban_rollouts_keep_text_actions_boards_and_totals(agent_logs: Path, tmp_path: Path) -> None:
    trajectories = convert(agent_logs / SOKOBAN, tmp_path / "out.jsonl")
    assert [t["id"] for t in trajectories] == [
        f"nemo-gym_grl_sokoban_example_rollouts/task-{i}/rollout-0" for i in (0, 2, 3, 4, 1)]
    assert [len(t["steps"]) for t in trajectories] == [10, 20, 20, 20, 20]
    solved = trajectories[0]
    assert solved["env"] == "logged" and solved["instance"] == "0"
    assert solved["agent"] == {"name": "grl_sokoban_gymnasium_agent", "model": "Qwen/Qwen3-4B-Instruct-2507"}
    assert [s["action"] for s in solved["steps"]] == ["Down", "Down", "Right", "Right", "Up", "Left", "Left",
                                                      "Down", "Left", "Up"]
    first = solved["steps"][0]
    assert first == {"action": "Down", "raw": "<action>Down</action>", "observation": BOARD_0}
    assert "observation" not in solved["steps"][-1]   # the winning move: the rollout ends without a next board
    assert solved["source"]["record"] == "task-0/rollout-0"
    assert solved["source"]["missing_fields"] == ["latency_ms", "timestamp"]
    assert "tokens_in" not in first   # (these rollouts keep no token ids: totals only)
    assert solved["meta"]["reward"] == 10.0 and solved["meta"]["info.success"] is True
    assert solved["meta"]["tokens_in_total"] == 6999 and solved["meta"]["tokens_out_total"] == 80
    assert solved["meta"]["created_at"] == "2026-05-15T03:46:00Z"
    assert trajectories[1]["meta"]["truncated"] is True and trajectories[1]["meta"]["info.success"] is False


def test_function_calls_get_their_outputs_by_call_id(agent_logs: Path, tmp_path: Path) -> None:
    trajectories = convert(agent_logs / OPENENV, tmp_path / "out.jsonl")
    assert [t["instance"] for t in trajectories] == ["1", "2", "3", "4", "0"]
    two_calls = trajectories[1]
    assert two_calls["agent"] == {"model": "gpt-5-nano-2025-08-07"}
    echo, length, answer = two_calls["steps"]
    assert echo["action"] == 'echo_message({"message": "NeMo Gym is great"})'  # the call in one form
    assert json.loads(echo["observation"])["result"]["data"] == "NeMo Gym is great"
    assert length["action"] == 'echo_with_length({"message": "NeMo Gym is great"})'
    assert json.loads(length["observation"])["result"]["data"] == {"message": "NeMo Gym is great", "length": 17}
    assert answer["raw"] == '- Echoed message: "NeMo Gym is great"\n- Length: 17 characters'
    assert "observation" not in answer
    assert two_calls["meta"]["response_status"] == "completed"
    assert two_calls["meta"]["completed_at"] == "2026-03-16T21:16:21Z"


def test_reasoning_summaries_and_hosted_calls(tmp_path: Path) -> None:
    response = {"object": "response", "id": "resp_abc", "model": "o4-mini", "output": [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "The box is left of me."}]},
        {"type": "function_call", "call_id": "c1", "name": "move", "arguments": '{"direction": "left"}'},
        {"type": "function_call", "call_id": "c2", "name": "look", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "a wall"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "moved"}]},
        {"type": "mcp_call", "id": "mcp_1", "name": "search", "arguments": '{"q": "exit"}', "output": "north"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ], "usage": {"input_tokens": 50, "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 4}}}
    log = write_jsonl(tmp_path / "responses.jsonl", [response])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert trajectory["id"] == "resp_abc" and trajectory["agent"] == {"model": "o4-mini"}
    move, look, search, done = trajectory["steps"]
    assert move == {"action": 'move({"direction": "left"})', "raw": 'move({"direction": "left"})',
                    "reasoning": "The box is left of me.", "observation": "moved"}
    assert look["observation"] == "a wall" and "reasoning" not in look
    assert search == {"action": 'search({"q": "exit"})', "raw": 'search({"q": "exit"})', "observation": "north"}
    assert done["action"] == "Done."
    assert trajectory["meta"]["reasoning_tokens_total"] == 4


def _trained(item: dict[str, Any], prompt: int, generated: int) -> dict[str, Any]:
    """An output item as NeMo Gym's training rollouts keep it: with its token ids and log probabilities."""
    return {**item, "prompt_token_ids": list(range(prompt)), "generation_token_ids": list(range(generated)),
            "generation_log_probs": [-0.5] * generated}


def test_the_token_ids_of_training_rollouts_are_the_steps_tokens(tmp_path: Path) -> None:
    think = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Down is free."}]}
    rollout = {"responses_create_params": {"input": []}, "reward": 1.0, "_ng_task_index": 0, "_ng_rollout_index": 0,
               "response": {"id": "r", "model": "qwen", "output": [
                   # one generation cut into items: each item's prompt is the one before it and its generation
                   _trained(think, 300, 40),
                   _trained({"type": "message", "role": "assistant", "content": "<action>Down</action>"}, 340, 8),
                   {"type": "message", "role": "user", "content": "board 1"},
                   # items that each keep the whole call's ids: the step's own item is the count
                   _trained(think, 350, 48),
                   _trained({"type": "function_call", "call_id": "c", "name": "move", "arguments": "{}"}, 350, 48),
                   {"type": "function_call_output", "call_id": "c", "output": "board 2"},
                   {"type": "message", "role": "assistant", "content": "<action>Up</action>"}]}}
    log = write_jsonl(tmp_path / "rollouts.jsonl", [rollout])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert [(s.get("tokens_in"), s.get("tokens_out")) for s in trajectory["steps"]] == [(300, 48), (350, 48),
                                                                                      (None, None)]
    assert trajectory["source"]["missing_fields"] == ["latency_ms", "timestamp"]


def test_a_message_the_model_wrote_just_before_its_call_is_the_call_s_reasoning(tmp_path: Path) -> None:
    # one model turn of the Responses API: a message, then the call; it was a text step of its own (openai-chat
    # reads the same turn as one step, the text its reasoning)
    response = {"object": "response", "id": "resp_m", "model": "o4-mini", "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Left looks free."}]},
        {"type": "function_call", "call_id": "c1", "name": "move", "arguments": '{"direction": "left"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "moved"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}]}
    log = write_jsonl(tmp_path / "responses.jsonl", [response])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged")
    assert trajectory["steps"] == [
        {"action": 'move({"direction": "left"})', "raw": 'move({"direction": "left"})', "reasoning": "Left looks free.",
         "observation": "moved"},
        {"action": "Done.", "raw": "Done."}]


def test_grid_moves_when_played_in_an_eebench_instance(agent_logs: Path, tmp_path: Path) -> None:
    [solved, *_] = convert(agent_logs / SOKOBAN, tmp_path / "out.jsonl", instance="park2026-main/low-small/seed-0")
    assert "env" not in solved  # graded in its instance, whose kind decides the world
    assert [s["action"] for s in solved["steps"]][:4] == ["down", "down", "right", "right"]


def test_the_samples_are_detected_as_responses_rollouts(agent_logs: Path) -> None:
    assert files_claimed(agent_logs, "openai-responses") == [SOKOBAN, OPENENV]
    assert {detect(agent_logs / name).name for name in (SOKOBAN, OPENENV)} == {"openai-responses"}


def test_a_truncated_line_is_located_and_can_be_skipped(agent_logs: Path, tmp_path: Path) -> None:
    lines = (agent_logs / SOKOBAN).read_bytes().splitlines(keepends=True)
    log = tmp_path / "cut.jsonl"
    log.write_bytes(lines[0] + lines[1][:500] + b"\n" + lines[2])
    assert_refused(log, tmp_path / "out.jsonl", r":2: malformed JSON")
    kept = convert(log, tmp_path / "out.jsonl", skip_invalid=True)
    assert [t["instance"] for t in kept] == ["0", "3"]


def test_a_refusal_and_reasoning_at_the_end_are_kept(tmp_path: Path) -> None:
    """A refusal part was a step with no text; reasoning after the last step (a cut-off response) was dropped."""
    response = {"object": "response", "id": "resp_r", "model": "o4-mini", "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I won't do that."}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Maybe north after all"}]}]}
    log = write_jsonl(tmp_path / "responses.jsonl", [response])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="maze/1", env="logged", fmt="openai-responses")
    assert trajectory["steps"] == [{"action": "I won't do that.", "raw": "I won't do that."},
                                   {"action": None, "reasoning": "Maybe north after all"}]
    assert detect(write_json(tmp_path / "bare.json", response)).name == "openai-responses"   # (not ambiguous)
    for item, field in (({"type": "reasoning", "summary": [{"type": "summary_text", "text": 42}]}, "summary[0].text"),
                        ({"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                               "text": ["a"]}]}, "content[0].text")):
        bad = write_jsonl(tmp_path / "bad.jsonl", [{**response, "output": [item]}])
        assert_refused(bad, tmp_path / "bad_out.jsonl", re.escape(f":1: response.output[0].{field}: expected a string, "
                                                                   "found "), fmt="openai-responses")


def test_records_of_the_wrong_shape_say_what_was_expected(agent_logs: Path, tmp_path: Path) -> None:
    good = json.loads((agent_logs / OPENENV).read_text("utf-8").splitlines()[0])
    log = write_jsonl(tmp_path / "bad.jsonl", [good, {"responses_create_params": {}, "response": {"output": 3}}])
    assert_refused(log, tmp_path / "out.jsonl",
                   r":2: response\.output: expected a list of output items, found an integer", fmt="openai-responses")
    listed = write_jsonl(tmp_path / "list.jsonl", [good, ["not", "a", "rollout"]])
    assert_refused(listed, tmp_path / "out.jsonl",
                   r":2: expected a rollout object with a `response`, found a list", fmt="openai-responses")


def test_a_chat_log_read_as_responses_is_refused(agent_logs: Path, tmp_path: Path) -> None:
    assert_refused(agent_logs / "openai_chat/tau-bench_gpt-4o-airline.first7.json", tmp_path / "out.jsonl",
                   r": record 0: expected a rollout with a `response` or a Response with `output`, found an object "
                   r"with info, reward, task_id, traj, trial", fmt="openai-responses")


def test_non_utf8_bytes_are_located(agent_logs: Path, tmp_path: Path) -> None:
    first = (agent_logs / SOKOBAN).read_bytes().splitlines(keepends=True)[0]
    log = tmp_path / "latin.jsonl"
    log.write_bytes(first + first.replace(b"Sokoban board", b"Sokoban \xe9board"))
    assert_refused(log, tmp_path / "out.jsonl", r":2: not UTF-8 text \(byte 0xe9\)", fmt="openai-responses")
