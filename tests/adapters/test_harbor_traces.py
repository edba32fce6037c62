"""The `harbor-traces` adapter on Harbor's real traces export (four cumulative prefixes of one terminus-2 trial),
on hand-made exports of several trials, and on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eebench.adapters import detect
from tests.adapters.conftest import assert_refused, convert, damaged, files_claimed
from tests.conftest import write_json

TRACES = "atif/terminus-2__hello-world-invalid-json.traces.json"


def element(trial: str, turns: int, task: str = "maze") -> dict[str, Any]:
    """Trial `trial` after `turns` turns: each answer thinks, then moves; the environment answers with a room."""
    conversation: list[dict[str, str]] = [{"role": "user", "content": "Explore."}]
    for k in range(turns):
        conversation.append({"role": "assistant", "content": f"<think>plan {k}</think>\nAction: go {k}"})
        conversation.append({"role": "user", "content": f"room {k}"})
    return {"conversations": conversation, "agent": "terminus-2", "model": "m", "task": task,
            "episode": f"episode-{turns - 1}", "run_id": "job-1", "trial_name": trial}


def test_the_fullest_prefix_is_one_trajectory_with_think_split(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / TRACES, tmp_path / "out.jsonl")
    assert trajectory["id"] == "hello-world__NORMALIZED/NORMALIZED_TRIAL_NAME"
    assert trajectory["instance"] == "hello-world" and trajectory["env"] == "logged"
    assert trajectory["agent"] == {"name": "terminus-2", "model": "openai/gpt-4o"}
    assert trajectory["source"]["record"] == 3   # episode-3, the last and fullest element
    assert trajectory["source"]["missing_fields"] == ["latency_ms", "timestamp", "tokens_in", "tokens_out"]
    steps = trajectory["steps"]
    assert len(steps) == 4
    assert [s["reasoning"] for s in steps] == [
        "The task is straightforward - I need to create a single file with specific content. Using printf is more "
        "reliable than echo for exact content control.",
        "I made a mistake in my previous response by not including the required 'analysis' and 'plan' fields. I "
        "need to correct this to follow the proper JSON schema.",
        "The file has been created successfully with the correct content. No further actions are needed.",
        "The task was already marked as complete in the previous step. Confirming completion."]
    assert all(s["raw"].startswith("<think>") for s in steps)
    last = steps[3]
    assert last["raw"].endswith('{\n  "analysis": "Task already completed.",\n  "plan": "No further action '
                                'needed.",\n  "commands": [],\n  "task_complete": true\n}')
    assert last["action"] == last["raw"].split("</think>\n", 1)[1]   # the JSON answer, not its closing brace
    assert steps[0]["observation"].startswith("Previous response had parsing errors:")
    assert steps[1]["observation"].startswith("New Terminal Output:\n\nroot@CONTAINER_ID:/app# printf")
    assert "observation" not in last
    assert trajectory["meta"] == {"agent": "terminus-2", "model": "openai/gpt-4o", "model_provider": "openai",
                                  "date": "NORMALIZED_TIMESTAMP", "task": "hello-world", "episode": "episode-3",
                                  "run_id": "hello-world__NORMALIZED", "trial_name": "NORMALIZED_TRIAL_NAME"}


def test_interleaved_trials_each_give_their_fullest_prefix(tmp_path: Path) -> None:
    log = write_json(tmp_path / "job.traces.json", [
        element("t-a", 1), element("t-b", 1), element("t-a", 2), element("t-b", 2), element("t-b", 3)])
    first, second = convert(log, tmp_path / "out.jsonl")
    assert (first["id"], len(first["steps"]), first["source"]["record"]) == ("job-1/t-a", 2, 2)
    assert (second["id"], len(second["steps"]), second["source"]["record"]) == ("job-1/t-b", 3, 4)
    assert second["steps"][2] == {"action": "go 2", "raw": "<think>plan 2</think>\nAction: go 2",
                                  "reasoning": "plan 2", "observation": "room 2"}


def test_the_sample_is_detected_as_harbor_traces(agent_logs: Path) -> None:
    assert files_claimed(agent_logs, "harbor-traces") == [TRACES]
    assert detect(agent_logs / TRACES).name == "harbor-traces"


def test_elements_of_the_wrong_shape_are_located_and_skippable(tmp_path: Path) -> None:
    unnamed = {**element("t-a", 1), "run_id": None, "trial_name": None}
    log = write_json(tmp_path / "bad.traces.json", [element("t-a", 1), unnamed, {"conversations": "hi"}, 7])
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record 1: expected `run_id` or `trial_name` naming the trial", fmt="harbor-traces")
    kept = convert(log, tmp_path / "out.jsonl", fmt="harbor-traces", skip_invalid=True)
    assert [t["id"] for t in kept] == ["job-1/t-a"]
    broken = write_json(tmp_path / "broken.traces.json", [{**element("t-a", 1), "conversations": [{"content": 1}]}])
    assert_refused(broken, tmp_path / "broken.jsonl",
                   r": record 0: conversations\[0\]: expected a message with a `role`", fmt="harbor-traces")


def test_truncated_and_non_utf8_exports(agent_logs: Path, tmp_path: Path) -> None:
    cut, latin = damaged(agent_logs / TRACES, tmp_path, b'"episode": "episode-2"', (b"hello.txt", b"h\xe9llo.txt"))
    assert_refused(cut, tmp_path / "out.jsonl",
                   r": record 2: truncated JSON; 2 records before it were read", fmt="harbor-traces")
    assert_refused(latin, tmp_path / "out.jsonl", r": record 0: not UTF-8 text; 0 records before it were read")


def test_an_export_whose_first_trial_fills_the_head_is_detected(tmp_path: Path) -> None:
    # `harbor traces export --episodes last`: a whole trial per element, its trial_name after a conversation past
    # the 64 KiB detection reads; no adapter claimed it (a folder left it out, exit 0)
    long = element("t-a", 40)
    for message in long["conversations"][2::2]:
        message["content"] = "ls -la\n" + "drwxr-xr-x  2 root root 4096 file\n" * 60
    log = write_json(tmp_path / "job.traces.json", [long, element("t-b", 3)])
    assert log.stat().st_size > 65_536 and detect(log).name == "harbor-traces"
    first, second = convert(log, tmp_path / "out.jsonl")
    assert (len(first["steps"]), len(second["steps"])) == (40, 3)
