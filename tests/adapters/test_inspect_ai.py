"""The `inspect` adapter on Inspect's real logs (a .json EvalLog with attachments, a .eval ZIP with a message
pool), on the same logs with their transcripts removed (rebuilt from events), and on bad input."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from eebench.adapters import detect
from eebench.errors import InputError
from tests.adapters.conftest import assert_refused, convert, files_claimed
from tests.conftest import write_json

BROWSER = "inspect_ai/2025-05-12T20-27-36-04-00_browser.trimmed.json"
DEDUP = "inspect_ai/log_message_deduplication.eval"
SAMPLE = "samples/0_epoch_1.json"
LISTING = "bin\nboot\ndev\netc\nhome\nlib\nlib64\nmedia\nmnt\nopt\nproc\nroot\nrun\nsbin\nsrv\nsys\ntmp\nusr\nvar\n"


def rewrite_eval(source: Path, target: Path, members: dict[str, bytes]) -> Path:
    """A copy of a .eval archive with some members replaced."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as copy:
        for name in original.namelist():
            copy.writestr(name, members.get(name, original.read(name)))
    return target


def sample_of(archive: Path) -> dict[str, Any]:
    with zipfile.ZipFile(archive) as opened:
        return json.loads(opened.read(SAMPLE))


def test_browser_log_steps_with_per_turn_tokens_latency_and_time(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / BROWSER, tmp_path / "out.jsonl")
    assert trajectory["id"] == "ZB2vu5GNujYaBdPSReCeop/1/epoch-1"
    assert trajectory["instance"] == "browser/1" and trajectory["env"] == "logged"
    assert trajectory["agent"] == {"model": "openai/gpt-4o-mini", "harness": "inspect_ai"}
    assert trajectory["source"]["record"] == "samples[0]" and trajectory["source"]["missing_fields"] == []
    steps = trajectory["steps"]
    assert [s["action"] for s in steps[:4]] == [
        'web_browser_go({"url": "https://www.aisi.gov.uk/"})', 'web_browser_click({"element_id": 151})',
        'web_browser_click({"element_id": 884})', 'web_browser_click({"element_id": 903})']
    go = steps[0]
    assert go["observation"].startswith('[132] link "We are now the AI Security Institute"')
    assert (go["tokens_in"], go["tokens_out"], go["latency_ms"]) == (1124, 23, 1101.022)
    assert go["timestamp"] == "2025-05-12T20:27:38.462180-04:00"
    assert [s["tokens_in"] for s in steps] == [1124, 1568, 2732, 3896, 5915]
    assert sum(s["tokens_out"] for s in steps) == 281 == trajectory["meta"]["tokens_out_total"]
    answer = steps[4]
    assert answer["raw"].startswith("The AI Security Institute (AISI) is the premier governmental organization")
    assert "observation" not in answer
    meta = trajectory["meta"]
    assert meta["score.includes"] == "C" and meta["status"] == "success" and meta["tokens_in_total"] == 15235
    assert meta["inspect_ai"] == "0.3.95.dev16+g6527d0861" and meta["total_time"] == 18.517


def test_eval_zip_sample_with_its_tool_outputs(agent_logs: Path, tmp_path: Path) -> None:
    [trajectory] = convert(agent_logs / DEDUP, tmp_path / "out.jsonl")
    assert trajectory["id"] == "gsM63GyMBKgA3p4sHAMAfG/0/epoch-1"
    assert trajectory["instance"] == "inspect_test_utils/guess_number/0"
    assert trajectory["source"]["record"] == SAMPLE
    steps = trajectory["steps"]
    assert [s["action"] for s in steps] == ['bash({"cmd": "ls"})'] * 5 + ["done"]
    assert [s.get("observation") for s in steps] == [LISTING] * 5 + [None]
    assert steps[0]["reasoning"] == "Executing bash with args: {'cmd': 'ls'}"
    assert steps[0]["timestamp"] == "2025-10-06T10:15:45.368612+00:00" and steps[0]["latency_ms"] == 0.046
    assert "tokens_in" not in steps[0]   # the scripted test model reports no usage
    assert trajectory["meta"]["score.closeness_log"] == 0.0 and trajectory["meta"]["target"] == "42.7"


def test_message_pool_references_rebuild_a_missing_transcript(agent_logs: Path, tmp_path: Path) -> None:
    [whole] = convert(agent_logs / DEDUP, tmp_path / "whole.jsonl")
    sample = sample_of(agent_logs / DEDUP)
    assert sample["events"][13]["input"] == [] and sample["events"][13]["input_refs"] == [[0, 3]]
    sample["messages"] = []
    archive = rewrite_eval(agent_logs / DEDUP, tmp_path / "pooled.eval", {SAMPLE: json.dumps(sample).encode()})
    [pooled] = convert(archive, tmp_path / "pooled.jsonl")
    assert pooled["steps"] == whole["steps"]


def test_attachments_are_resolved_in_a_transcript_rebuilt_from_events(agent_logs: Path, tmp_path: Path) -> None:
    [whole] = convert(agent_logs / BROWSER, tmp_path / "whole.jsonl")
    log = json.loads((agent_logs / BROWSER).read_text("utf-8"))
    final = log["samples"][0]["events"][28]["output"]["choices"][0]["message"]["content"]
    assert final == "attachment://707c70d5b9111db606fd541158567d76"
    del log["samples"][0]["messages"]
    [rebuilt] = convert(write_json(tmp_path / "events_only.json", log), tmp_path / "rebuilt.jsonl")
    assert rebuilt["steps"] == whole["steps"]
    assert rebuilt["steps"][4]["raw"] == log["samples"][0]["attachments"]["707c70d5b9111db606fd541158567d76"]


def test_the_samples_are_detected_as_inspect_logs(agent_logs: Path) -> None:
    assert files_claimed(agent_logs, "inspect") == [BROWSER, DEDUP]
    assert {detect(agent_logs / name).name for name in (BROWSER, DEDUP)} == {"inspect"}


def test_a_truncated_json_log_is_located_at_the_sample(agent_logs: Path, tmp_path: Path) -> None:
    data = (agent_logs / BROWSER).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    assert_refused(cut, tmp_path / "out.jsonl",
                   r": record 0: truncated JSON; 0 records before it were read", fmt="inspect")


def test_a_truncated_eval_archive_is_refused(agent_logs: Path, tmp_path: Path) -> None:
    data = (agent_logs / DEDUP).read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(data[:3000])
    assert_refused(cut, tmp_path / "out.jsonl",
                   r": not a readable \.eval ZIP archive \(.*\); is the file cut short\?")


def test_bad_samples_in_an_archive_are_located_and_skippable(agent_logs: Path, tmp_path: Path) -> None:
    latin = json.dumps(sample_of(agent_logs / DEDUP)).encode().replace(b"Guess", b"\xe9")
    archive = rewrite_eval(agent_logs / DEDUP, tmp_path / "latin.eval", {SAMPLE: latin})
    assert_refused(archive, tmp_path / "out.jsonl", r": record samples/0_epoch_1\.json: not UTF-8 text \(byte 0xe9\)")
    broken = rewrite_eval(agent_logs / DEDUP, tmp_path / "broken.eval", {SAMPLE: b'{"id": "0", "messages": 7}'})
    assert_refused(broken, tmp_path / "out.jsonl",
                   r": record samples/0_epoch_1\.json: messages: expected a list of messages, found an integer")
    with pytest.raises(InputError, match="nothing was converted: every episode was skipped"):  # nothing left
        convert(broken, tmp_path / "out.jsonl", skip_invalid=True)
    assert not (tmp_path / "out.jsonl").exists()
    odd = rewrite_eval(agent_logs / DEDUP, tmp_path / "odd.eval", {SAMPLE: b'{"id": "0", "messages": [null, 5]}'})
    assert_refused(odd, tmp_path / "out.jsonl",   # (not a trajectory of no step)
                   r": record samples/0_epoch_1\.json: messages\[0\]: expected a message object, found null")


def test_a_json_log_of_the_wrong_shape(tmp_path: Path) -> None:
    log = write_json(tmp_path / "odd.json", {"version": 2, "eval": {"eval_id": "e1", "task": "t"}, "samples": [3]})
    assert_refused(log, tmp_path / "out.jsonl",
                   r": record samples\[0\]: expected an Inspect sample object, found an integer")
    no_spec = write_json(tmp_path / "nospec.json", {"version": 2, "eval": "browser", "samples": []})
    assert_refused(no_spec, tmp_path / "out.jsonl",
                   r": eval: expected an Inspect EvalLog with an `eval` object, found a string there", fmt="inspect")


def _model_event(when: str, input_tokens: int, output_tokens: int, seconds: float, **more: Any) -> dict[str, Any]:
    return {"event": "model", "timestamp": when, "model": "openai/gpt-4o-mini", "input": [],
            "output": {"choices": [{"message": {"role": "assistant", "content": "graded"}}],
                       "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}, "time": seconds},
            **more}


def _log_without_message_ids(events: list[dict[str, Any]]) -> dict[str, Any]:
    """inspect_ai 0.3.43's layout (2024): `eval` names `run_id` and `task_id`, no `eval_id`; messages have no ids."""
    return {"version": 2, "status": "success",
            "eval": {"run_id": "2BnNsHEspZ94qvnbpxq9wJ", "task": "input_task", "task_id": "8zXjbRzCWrL9GXiXo2vus9",
                     "model": "openai/gpt-4o-mini", "packages": {"inspect_ai": "0.3.43"}},
            "samples": [{"id": 1, "epoch": 1, "input": "go", "target": "left",
                         "messages": [{"role": "user", "content": "Where to?"},
                                      {"role": "assistant", "content": '{"action": "left"}'}],
                         "events": events}]}


SOLVER_CALL = _model_event("2024-11-05T13:32:17-05:00", 53, 46, 1.25)
SCORER_CALL = _model_event("2024-11-05T13:32:19-05:00", 400, 12, 2.0)


@pytest.mark.parametrize("events", [
    [{"event": "step", "action": "begin", "type": "solver", "name": "generate"}, SOLVER_CALL,
     {"event": "step", "action": "end", "type": "solver", "name": "generate"},
     {"event": "step", "action": "begin", "type": "scorer", "name": "model_graded_fact"}, SCORER_CALL,
     {"event": "score", "score": {"value": "C"}},
     {"event": "step", "action": "end", "type": "scorer", "name": "model_graded_fact"}],
    [{"event": "span_begin", "id": "s1", "type": "solvers", "name": "solvers"}, SOLVER_CALL,
     {"event": "span_end", "id": "s1"},
     {"event": "span_begin", "id": "s2", "type": "scorers", "name": "scorers"},
     {"event": "span_begin", "id": "s3", "parent_id": "s2", "type": "scorer", "name": "model_graded_fact"},
     SCORER_CALL, {"event": "span_end", "id": "s3"}, {"event": "span_end", "id": "s2"}],
], ids=["scorer steps", "scorer spans"])
def test_a_model_graded_scorers_call_is_no_turns_in_a_log_without_message_ids(tmp_path: Path,
                                                                            events: list[dict[str, Any]]) -> None:
    log = write_json(tmp_path / "2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json",
                     _log_without_message_ids(events))
    assert detect(log).name == "inspect"   # (told by run_id where newer logs have eval_id)
    [run] = convert(log, tmp_path / "out.jsonl")
    assert run["id"] == "2BnNsHEspZ94qvnbpxq9wJ/1/epoch-1"
    [step] = run["steps"]
    assert (step["action"], step["tokens_in"], step["tokens_out"], step["latency_ms"], step["timestamp"]) == \
        ("left", 53, 46, 1250.0, "2024-11-05T13:32:17-05:00")


@pytest.mark.parametrize("span_id", [["s1"], {"id": "s1"}])
def test_a_span_id_of_the_wrong_type_is_located_not_a_traceback(tmp_path: Path, span_id: Any) -> None:
    # a list or an object as a span's id ended in "TypeError: unhashable type" while scorer spans were followed
    events = [{"event": "span_begin", "id": "s1", "type": "solvers"}, SOLVER_CALL, {"event": "span_end", "id": span_id}]
    log = write_json(tmp_path / "span.json", _log_without_message_ids(events))
    assert_refused(log, tmp_path / "out.jsonl", r": record samples\[0\]: events\[2\]\.id: expected a span id "
                   r"\(a string\), found a (list|mapping)")


@pytest.mark.parametrize("part, reasoning", [
    ({"type": "reasoning", "reasoning": "The door is north.", "redacted": False}, "The door is north."),
    ({"type": "reasoning", "reasoning": "EncryptedBlobAAAA==", "redacted": True}, None),
    ({"type": "reasoning", "reasoning": "EncryptedBlobAAAA==", "redacted": True, "summary": "Go north."}, "Go north."),
])
def test_redacted_reasoning_is_not_written_as_the_steps_reasoning(tmp_path: Path, part: dict[str, Any],
                                                                 reasoning: str | None) -> None:
    """A redacted reasoning part holds the provider's encrypted reasoning, not text the model wrote."""
    doc = _log_without_message_ids([])
    doc["samples"][0]["messages"][1]["content"] = [part, {"type": "text", "text": "Action: left"}]
    [run] = convert(write_json(tmp_path / "log.json", doc), tmp_path / "out.jsonl")
    [step] = run["steps"]
    assert (step["action"], step.get("reasoning")) == ("left", reasoning)


@pytest.mark.parametrize("start", ["_journal/start.json", "start.json"])
def test_an_eval_archive_without_its_header_reads_the_start_record(agent_logs: Path, tmp_path: Path,
                                                                   start: str) -> None:
    # header.json is written when the run ends: a run still going (or killed) has `_journal/start.json`, the
    # first .eval layout `start.json`; both hold the eval spec, and such archives were refused
    with zipfile.ZipFile(agent_logs / DEDUP) as original:
        header = json.loads(original.read("header.json"))
        members = {name: original.read(name) for name in original.namelist()
                   if name not in ("header.json", "_journal/start.json")}
    started = tmp_path / "started.eval"
    with zipfile.ZipFile(started, "w", zipfile.ZIP_DEFLATED) as copy:
        for name, data in members.items():
            copy.writestr(name, data)
        copy.writestr(start, json.dumps({"version": header.get("version"), "eval": header["eval"]}))
    [whole] = convert(agent_logs / DEDUP, tmp_path / "whole.jsonl")
    [trajectory] = convert(started, tmp_path / "out.jsonl")
    assert trajectory["steps"] == whole["steps"] and trajectory["id"] == whole["id"]
