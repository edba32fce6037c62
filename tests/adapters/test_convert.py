"""`eebench convert` and `formats`: the pipeline every adapter shares, the built-in eebench/actions/openai-chat
adapters, grading what was converted, and bad input (one located line, exit 2, no output file)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eebench.adapters import ConvertOptions, convert_files, detect, known_adapters
from eebench.adapters.base import STEP_FIELDS
from eebench.errors import InputError
from tests.adapters.conftest import convert
from tests.conftest import instance_doc, write_json, write_jsonl

INSTANCE = "test/corridor"


def corridor(tmp_path: Path) -> Path:
    """A 4x1 corridor: start at x=0, node A at x=2 (no prerequisites), goal G at x=3 (requires A)."""
    write_json(tmp_path / "bench" / "corridor.json",
               instance_doc(["...."], [0, 0], [("A", [2, 0], []), ("G", [3, 0], [["A"]])], "G", budget=12,
                            instance_id=INSTANCE))
    return tmp_path / "bench"


def chat_episode(task: str, outputs: list[str | dict]) -> dict:
    """A chat transcript in which the environment answers as the user; dict outputs are tool calls."""
    messages: list[dict] = [{"role": "system", "content": "Explore the grid."}, {"role": "user", "content": "Start."}]
    for k, output in enumerate(outputs):
        if isinstance(output, dict):
            messages.append({"role": "assistant", "content": "thinking aloud", "tool_calls": [
                {"id": f"c{k}", "type": "function",
                 "function": {"name": "move", "arguments": json.dumps(output)}}]})
            messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"observation {k}"})
        else:
            messages.append({"role": "assistant", "content": output,
                             "usage": {"prompt_tokens": 100 + k, "completion_tokens": 5}})
            messages.append({"role": "user", "content": f"observation {k}"})
    return {"task_id": task, "model": "gpt-test", "messages": messages}


def test_chat_logs_convert_and_grade_end_to_end(cli, tmp_path: Path) -> None:
    bench = corridor(tmp_path)
    log = write_jsonl(tmp_path / "chat.jsonl", [
        chat_episode(INSTANCE, ["<action>Right</action>", {"direction": "east"}, "I'm lost, where am I?",
                                "Action: move right"]),
    ])
    out = tmp_path / "traj.jsonl"
    result = cli("convert", log, "--instance-field", "task_id", "--prompt", "exploration", "--out", out)
    assert "converted 1 trajectories (4 steps)" in result.stdout
    assert "1 steps had no readable action (kept with action null)" in result.stdout
    [trajectory] = [json.loads(line) for line in out.read_text().splitlines()]
    assert "env" not in trajectory and trajectory["instance"] == INSTANCE
    assert trajectory["agent"] == {"model": "gpt-test", "prompt": "exploration"}
    assert [s["action"] for s in trajectory["steps"]] == ["right", "right", None, "right"]
    first, call, lost, _ = trajectory["steps"]
    assert first == {"action": "right", "raw": "<action>Right</action>", "observation": "observation 0",
                     "tokens_in": 100, "tokens_out": 5}
    assert call["raw"] == 'move({"direction": "east"})' and call["reasoning"] == "thinking aloud"
    assert call["observation"] == "observation 1"
    assert lost["raw"] == "I'm lost, where am I?"       # the text is kept, never dropped
    assert trajectory["source"] == {"format": "openai-chat", "file": str(log), "record": 0, "adapter_version": "1",
                                    "missing_fields": ["latency_ms", "timestamp"], "unreadable_actions": 1}

    db = tmp_path / "r.duckdb"
    cli("grade", out, "--bench", bench, "--db", db)
    rows = cli("query", "--db", db, "--format", "json",
               "SELECT success, n_steps, invalid_moves, end_reason, tokens_in FROM trajectories").stdout
    # right, right (A achieved at x=2), null (inadmissible: costs a step), right reaches G
    assert json.loads(rows) == [{"success": True, "n_steps": 4, "invalid_moves": 1, "end_reason": "goal",
                                 "tokens_in": 100 + 102 + 103}]


def test_tau_bench_results_file_is_read_as_logged_chat(agent_logs: Path, tmp_path: Path) -> None:
    path = agent_logs / "openai_chat" / "tau-bench_gpt-4o-airline.first7.json"
    trajectories = convert(path, tmp_path / "out.jsonl")
    assert [t["id"] for t in trajectories] == [f"tau-bench_gpt-4o-airline.first7/task-{k}/trial-0" for k in range(7)]
    assert all(t["env"] == "logged" for t in trajectories)
    assert [t["instance"] for t in trajectories] == [str(k) for k in range(7)]
    assert trajectories[6]["meta"]["reward"] == 1.0
    first = trajectories[0]["steps"]
    assert first[0]["observation"] == "Sure, my user ID is mia_li_3668."
    calls = [s for t in trajectories for s in t["steps"] if s["action"].startswith("get_user_details(")]
    assert calls and calls[0]["action"] == 'get_user_details({"user_id": "mia_li_3668"})'  # one form, keys sorted
    assert calls[0]["observation"].startswith('{"name": {"first_name": "Mia"')


def test_convert_is_reproducible(agent_logs: Path, tmp_path: Path) -> None:
    path = agent_logs / "openai_chat" / "tau-bench_gpt-4o-airline.first7.json"
    convert(path, tmp_path / "a.jsonl")
    convert(path, tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_a_top_level_list_of_messages_is_one_episode(tmp_path: Path) -> None:
    log = write_json(tmp_path / "one.json", chat_episode(INSTANCE, ["up", "down"])["messages"])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance=INSTANCE)
    assert trajectory["id"] == "one/0" and [s["action"] for s in trajectory["steps"]] == ["up", "down"]


def test_actions_lists_are_graded_in_the_instance_given(cli, tmp_path: Path) -> None:
    moves = tmp_path / "moves.txt"
    moves.write_text("up\nNorth\n\njump\nleft\n")
    out = tmp_path / "out.jsonl"
    cli("convert", moves, "--from", "actions", "--out", out)   # no instance: a logged trajectory named by the file
    [logged] = [json.loads(line) for line in out.read_text().splitlines()]
    assert logged["instance"] == "moves" and logged["env"] == "logged"
    assert [s["action"] for s in logged["steps"]] == ["up", "North", "jump", "left"]
    cli("convert", moves, "--from", "actions", "--out", out, "--instance", INSTANCE)
    [trajectory] = [json.loads(line) for line in out.read_text().splitlines()]
    assert trajectory["steps"] == [{"action": "up"}, {"action": "up", "raw": "North"}, {"action": None, "raw": "jump"},
                                   {"action": "left"}]
    array = write_json(tmp_path / "moves.json", ["right", "down"])
    [from_array] = convert(array, tmp_path / "a.jsonl", fmt="actions", instance=INSTANCE)
    assert [s["action"] for s in from_array["steps"]] == ["right", "down"]


def test_an_id_of_a_shipped_suite_it_does_not_have_is_refused_without_a_bench(cli, tmp_path: Path) -> None:
    """A shipped suite's ids are fixed: a mistyped seed is refused here, not at grade; ids of one's own pass."""
    moves = tmp_path / "moves.txt"
    moves.write_text("up\n")
    out = tmp_path / "out.jsonl"
    refused = cli("convert", moves, "--from", "actions", "--out", out, "--instance", "park2026-main/low-small/seed-9",
                  code=2)
    assert refused.stderr == (f"error: {moves}: record 0: instance 'park2026-main/low-small/seed-9' is not in the "
                              "shipped suite park2026-main (did you mean 'park2026-main/low-small/seed-2'?); give "
                              "--bench for instances of your own\n")
    assert not out.exists()
    cli("convert", moves, "--from", "actions", "--out", out, "--instance", "mine/low-small/seed-9")
    assert json.loads(out.read_text())["instance"] == "mine/low-small/seed-9"


def test_canonical_trajectories_pass_through_unchanged(tmp_path: Path) -> None:
    doc = {"eebench": "trajectory/1", "id": "r/1", "instance": INSTANCE, "agent": {"name": "me"},
           "steps": [{"action": "up", "custom": 1}], "extra": {"kept": True}}
    source = write_jsonl(tmp_path / "in.jsonl", [doc])
    assert convert(source, tmp_path / "out.jsonl") == [doc]
    [relabelled] = convert(source, tmp_path / "out2.jsonl", labels={"model": "m"})
    assert relabelled["agent"] == {"name": "me", "model": "m"}


@pytest.mark.parametrize(("content", "message"), [
    (b'{"eebench": "trajectory/1", "id": "a", "instance": "x", "steps": [{"action": "up"}]}\n{"eebench": "traj',
     r"in\.jsonl:2: malformed JSON: Unterminated string starting at \(column 13\)"),
    (b'{"eebench": "trajectory/1", "id": "a", "instance": "x", "steps": [{"act": "up"}]}\n',
     r"in\.jsonl:1: steps\[0\]\.action: missing required field"),
    (b'{"eebench": "trajectory/1", "id": "a", "instance": "x", "steps": []}\n\xff\xfe\n',
     r"in\.jsonl:2: not UTF-8 text \(byte 0xff\)"),
    (b'{"eebench": "trajectory/2", "id": "a", "instance": "x", "steps": []}\n',
     r"in\.jsonl:1: eebench: trajectory/2 is newer than this eebench reads \(trajectory/1\); upgrade eebench"),
])
def test_bad_canonical_records_are_located(tmp_path: Path, content: bytes, message: str) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(content)
    with pytest.raises(InputError, match=message):
        convert(source, tmp_path / "out.jsonl", fmt="eebench")
    assert not (tmp_path / "out.jsonl").exists()


def test_skip_invalid_converts_the_rest_and_says_why(cli, tmp_path: Path) -> None:
    good = chat_episode(INSTANCE, ["up"])
    source = tmp_path / "mixed.jsonl"
    source.write_text(json.dumps(good) + "\n" + '{"task_id": "x", "steps": []}\n' + '{"messages": [1]}\n'
                      + json.dumps({**good, "task_id": "y"})[:-9] + "\n")
    out = tmp_path / "out.jsonl"
    result = cli("convert", source, "--from", "openai-chat", "--out", out, code=2)
    assert result.stderr == (f"error: {source}:2: expected a list of messages under messages, traj, conversation\n")
    assert not out.exists()
    result = cli("convert", source, "--from", "openai-chat", "--out", out, "--skip-invalid")
    assert result.stderr.splitlines()[:2] == [
        f"skipped: {source}:2: expected a list of messages under messages, traj, conversation",
        f"skipped: {source}:3: messages[0]: expected a chat message with a `role`",
    ]
    assert result.stderr.splitlines()[2].startswith(f"skipped: {source}:4: malformed JSON: ")
    assert "converted 1 trajectories" in result.stdout and "skipped 3" in result.stdout
    assert len(out.read_text().splitlines()) == 1


def test_mixed_formats_in_one_file_are_named(tmp_path: Path) -> None:
    canonical = {"eebench": "trajectory/1", "id": "a", "instance": "x", "steps": []}
    source = write_jsonl(tmp_path / "mixed.jsonl", [chat_episode(INSTANCE, ["up"]), canonical])
    with pytest.raises(InputError, match=r"mixed\.jsonl:2: expected a list of messages under messages, traj, "
                                         r"conversation"):
        convert(source, tmp_path / "out.jsonl", fmt="openai-chat")


def test_truncated_json_document_is_located(tmp_path: Path) -> None:
    source = tmp_path / "cut.json"
    source.write_text(json.dumps([chat_episode("t", ["up"]), chat_episode("u", ["down"])])[:-40])
    with pytest.raises(InputError, match=r"cut\.json: record 1: truncated JSON; 1 records before it were read"):
        convert(source, tmp_path / "out.jsonl", fmt="openai-chat")
    document = tmp_path / "doc.json"
    document.write_text(json.dumps(chat_episode("t", ["up"]), indent=1)[:-30])
    with pytest.raises(InputError, match=r"doc\.json:\d+: truncated JSON \(column \d+\)"):
        convert(document, tmp_path / "out.jsonl", fmt="openai-chat")
    assert not (tmp_path / "out.jsonl").exists()


def test_non_utf8_json_document(tmp_path: Path) -> None:
    source = tmp_path / "latin.json"
    source.write_bytes(b'{"messages": [{"role": "assistant", "content": "caf\xe9"}]}')
    with pytest.raises(InputError, match=r"latin\.json:1: not UTF-8 text \(byte 0xe9\)"):
        convert(source, tmp_path / "out.jsonl", fmt="openai-chat")


def test_a_log_too_large_to_hold_is_refused_not_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eebench.adapters import records
    source = write_json(tmp_path / "big.json", chat_episode("t", ["up"]))
    monkeypatch.setattr(records, "MAX_DOCUMENT_BYTES", 100)
    with pytest.raises(InputError, match=r"big\.json: 0\.0 GiB is more than the 0 GiB a single JSON document may "
                                         r"be; write it as JSON Lines to stream it"):
        convert(source, tmp_path / "out.jsonl", fmt="openai-chat")


def test_wrong_from_suggests_close_names(cli, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [chat_episode("t", ["up"])])
    result = cli("convert", source, "--from", "openai_chat", "--out", tmp_path / "o.jsonl", code=2)
    assert result.stderr.startswith("error: --from: unknown format 'openai_chat' (did you mean 'openai-chat'?); "
                                    "known: auto, ")


@pytest.mark.parametrize("log", ["openai_chat/tau-bench_gpt-4o-airline.first7.json",
                                 "openhands_events/openhands_trajectory.json"])
@pytest.mark.parametrize("size", [300, 3000])
def test_a_log_cut_short_is_named_truncated_at_its_line_not_unknown(cli, agent_logs: Path, tmp_path: Path, log: str,
                                                                    size: int) -> None:
    """A log cut before any format could tell it apart said only 'no adapter recognizes this file'."""
    source = tmp_path / "cut.json"
    source.write_bytes((agent_logs / log).read_bytes()[:size])
    result = cli("convert", source, "--out", tmp_path / "o.jsonl", code=2)
    assert re.fullmatch(rf"error: {re.escape(str(source))}:\d+: truncated JSON \(column \d+\); no adapter can tell "
                        r"the format of JSON that does not parse\n", result.stderr), result.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_a_json_lines_log_with_a_line_cut_short_names_that_line(cli, tmp_path: Path) -> None:
    source = tmp_path / "cut.jsonl"
    source.write_text('{"a": 1}\n\n{"b": \n')
    result = cli("convert", source, "--out", tmp_path / "o.jsonl", code=2)
    assert result.stderr == (f"error: {source}:3: truncated JSON (column 7); no adapter can tell the format of JSON "
                             "that does not parse\n")


def test_auto_fails_with_the_candidates(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "notes.md"
    source.write_text("# just notes\n")
    result = cli("convert", source, "--out", tmp_path / "o.jsonl", code=2)
    assert result.stderr.startswith(f"error: {source}: no adapter recognizes this file; name its format with --from")
    moves = tmp_path / "moves.json"
    moves.write_text('["up", "down"]')  # a JSON array of strings: an actions list, and (patched) chat too
    from eebench.adapters.formats.openai_chat import OpenAIChatAdapter
    monkeypatch.setattr(OpenAIChatAdapter, "handles", lambda self, path, head: True)
    result = cli("convert", moves, "--out", tmp_path / "o.jsonl", code=2)
    assert result.stderr == f"error: {moves}: ambiguous format: it reads as actions or openai-chat; " \
                            "choose one with --from\n"


def test_a_named_format_reads_a_folders_action_list_with_an_odd_answer_and_still_leaves_a_readme(
        tmp_path: Path) -> None:
    """With --from actions, a list holding one answer that is not a move was left out of its folder, though the
    same file given by name converts (the answer kept unreadable, as it cost the agent)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "good.txt").write_text("up\nleft\n")
    (logs / "odd.txt").write_text("up\nlook around\nleft\n")
    (logs / "README.txt").write_text("Runs of the random agent.\nOne action per line.\nup means north.\n")
    runs = convert(logs, tmp_path / "o.jsonl", fmt="actions")
    assert [(r["id"], [s["action"] for s in r["steps"]]) for r in runs] == [
        ("good", ["up", "left"]), ("odd", ["up", "look around", "left"])]
    assert [r["id"] for r in convert(logs, tmp_path / "auto.jsonl")] == ["good"]   # (detection stays strict)


@pytest.mark.parametrize("fmt, message", [
    ("agentcc", "no file here reads as an agentcc log; give a file by its path to see why"),
    ("auto", "no file here is a log any adapter reads; name the format with --from (see `eebench formats`)")])
def test_a_folder_of_no_log_says_so(tmp_path: Path, fmt: str, message: str) -> None:
    """With the format named, "name the format with --from" was the advice."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "play_x_run.csv").write_text("Step,Action,Result,Reasoning\n1,game_action(go east),ok,\n")
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'logs'}: {message}")):
        convert_files([tmp_path / "logs"], fmt, tmp_path / "o.jsonl", ConvertOptions())


def test_trajectory_ids_must_be_unique_across_inputs(tmp_path: Path) -> None:
    first = write_jsonl(tmp_path / "a" / "run.jsonl", [chat_episode("t", ["up"])])
    second = write_jsonl(tmp_path / "b" / "run.jsonl", [chat_episode("t", ["up"])])
    with pytest.raises(InputError, match=rf"b/run\.jsonl:1: id: trajectory id 'run/0' was already made from "
                                         rf"{first}:1; ids must be unique"):
        convert([first, second], tmp_path / "out.jsonl")


def test_option_conflicts_are_bad_input(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [chat_episode("t", ["up"])])
    cases = [({"env": "grid_dag", "vocabulary": "text"}, "--actions text does not fit --env grid_dag"),
             ({"instance": "a", "instance_field": "b"}, "give one of --instance, --instance-field or --instance-from-name, not --instance and --instance-field"),
             ({"action_regex": "("}, "--action-regex: not a regular expression: missing ), unterminated subpattern at position 0"),
             ({"instance_field": "meta..x["}, "--instance-field: expected a dotted path such as task_id, "
                                              "metadata.instance or samples[0].id, found 'meta..x['"),
             # (a mistyped label group went into the instance id, silently)
             ({"instance_from_name": "^(?P<modle>[^_]+)__(.+)$"}, "--instance-from-name: a group named 'modle' is "
                                                                  "none of harness, instance, model, name or prompt "
                                                                  "(did you mean 'model'?)"),
             ({"instance_from_name": "^(?P<instance>[^_]+)__(?P<promt>.+)$"}, "a group named 'promt' is none of")]
    for options, message in cases:
        with pytest.raises(InputError, match=re.escape(message)):
            convert_files([source], "auto", tmp_path / "out.jsonl", ConvertOptions(**options))


def test_instance_field_problems_are_located(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [chat_episode("t", ["up"]) | {"meta": {"ids": [1]}}])
    with pytest.raises(InputError, match=r"in\.jsonl:1: --instance-field meta\.instance: no such field"):
        convert(source, tmp_path / "o.jsonl", instance_field="meta.instance")
    with pytest.raises(InputError, match=r"--instance-field meta\.idz: no such field in this record \(did you mean "
                                         r"'meta\.ids'\?\)$"):   # the close key where the path stops leading
        convert(source, tmp_path / "o.jsonl", instance_field="meta.idz")
    with pytest.raises(InputError, match=r"in\.jsonl:1: --instance-field meta\.ids: expected a string or a number, "
                                         r"found a list"):
        convert(source, tmp_path / "o.jsonl", instance_field="meta.ids")


def test_a_failed_convert_keeps_the_previous_output(cli, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "assistant", "content": "up"}]}\n{"oops"\n')
    cli("convert", bad, "--from", "openai-chat", "--out", out, code=2)
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "out.jsonl"]  # no temporary file left


def test_an_out_that_is_an_input_is_refused_and_the_log_kept(cli, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "chat.jsonl"
    log.parent.mkdir()
    log.write_text('{"messages": [{"role": "assistant", "content": "up"}]}\n')
    before = log.read_bytes()
    for given in (log, log.parent):   # the log itself, or a folder that holds it (an earlier run's output, say)
        done = cli("convert", given, "--from", "openai-chat", "--out", log, code=2)
        assert done.stderr == (f"error: {log}: is one of the inputs (it would be replaced by their trajectories); "
                               "choose another --out\n")
        assert log.read_bytes() == before and sorted(p.name for p in log.parent.iterdir()) == ["chat.jsonl"]


def test_formats_lists_every_adapter_with_what_it_never_carries(cli) -> None:
    listing = json.loads(cli("formats", "--format", "json").stdout)
    names = [row["name"] for row in listing["formats"]]
    assert {"eebench", "actions", "openai-chat"} <= set(names)
    for row in listing["formats"]:
        assert set(row["never_carries"]) <= set(STEP_FIELDS) and row["reads"] and row["example"]
    chat = next(row for row in listing["formats"] if row["name"] == "openai-chat")
    assert chat["never_carries"] == ["latency_ms", "timestamp"]
    text = cli("formats").stdout
    assert "openai-chat\n  reads:" in text and "never carries: latency_ms, timestamp" in text
    assert set(names) == set(known_adapters().adapters)


def test_every_format_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    for name in known_adapters().adapters:
        assert f"| `{name}` |" in readme, name


def test_auto_picks_exactly_one_adapter_for_every_real_log(agent_logs: Path) -> None:
    """--from auto on each shared sample: one adapter, and the one its folder is named for."""
    expected = {"atif": {"atif", "harbor-traces"}, "balrog": {"balrog"}, "inspect_ai": {"inspect"},
                "langsmith": {"langsmith"}, "mini_swe_agent": {"mini-swe-agent"}, "openai_chat": {"openai-chat"},
                "openai_responses": {"openai-responses"}, "openhands_events": {"openhands"}, "otel_genai": {"otel"},
                "react_text": {"react"}, "swe_agent": {"swe-agent"}}
    logs = sorted(p for p in agent_logs.rglob("*") if p.is_file() and p.suffix != ".md")
    assert len(logs) == 22
    for path in logs:
        assert detect(path).name in expected[path.relative_to(agent_logs).parts[0]], path


def test_integers_beyond_64_bits_keep_every_digit(tmp_path: Path) -> None:
    big = 123456789012345678901234567890
    source = write_jsonl(tmp_path / "in.jsonl", [chat_episode("t", ["up"]) | {"trial": 0, "task_id": big}])
    [trajectory] = convert(source, tmp_path / "out.jsonl", fmt="openai-chat")
    assert trajectory["instance"] == str(big) and trajectory["meta"]["task_id"] == big


def test_a_legacy_function_call_is_the_step_s_call(tmp_path: Path) -> None:
    """Chat completions before tool_calls: `function_call` on the assistant, the answer as a `function` message."""
    log = write_json(tmp_path / "legacy.json", [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": None, "function_call": {"name": "move", "arguments": '{"direction": "up"}'}},
        {"role": "function", "name": "move", "content": "You moved."}])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance=INSTANCE)
    assert trajectory["steps"] == [{"action": "up", "raw": 'move({"direction": "up"})', "observation": "You moved."}]
    bad = write_json(tmp_path / "bad.json", [{"role": "assistant", "function_call": {"arguments": "{}"}}])
    with pytest.raises(InputError, match=r"bad\.json: record 0: messages\[0\]\.function_call: expected a call naming "
                                         r"its function \(`name`\)$"):
        convert(bad, tmp_path / "bad.jsonl", instance=INSTANCE)


def test_anthropic_content_parts_are_calls_answers_and_reasoning(tmp_path: Path) -> None:
    """Claude's messages through openai-chat: `tool_use` parts are calls, `tool_result` parts in the next user
    message answer them by id, `thinking` parts are reasoning; all were dropped (the action was the text beside)."""
    log = write_json(tmp_path / "claude.json", [
        {"role": "user", "content": "Find the exit."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "North first."}, {"type": "text", "text": "Two moves."},
            {"type": "tool_use", "id": "t1", "name": "move", "input": {"direction": "up"}},
            {"type": "tool_use", "id": "t2", "name": "move", "input": {"direction": "left"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "a wall"}]},
            {"type": "tool_result", "tool_use_id": "t1", "content": "moved"},
            {"type": "text", "text": "Steps left: 3."}]}])   # (text beside the results: shown too)
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance=INSTANCE)
    up, left = trajectory["steps"]
    assert (up["action"], up["reasoning"], up["observation"]) == ("up", "North first.\nTwo moves.", "moved")
    assert (left["action"], left["observation"]) == ("left", "a wall\nSteps left: 3.")
    bad = write_json(tmp_path / "bad.json", [{"role": "assistant", "content": [{"type": "tool_use", "name": 5}]}])
    with pytest.raises(InputError, match=r"messages\[0\]\.content\[0\]\.name: expected the tool's name as a string, "
                                         r"found an integer$"):
        convert(bad, tmp_path / "bad.jsonl", instance=INSTANCE)


@pytest.mark.parametrize("lines", [False, True], ids=["exact path", "typed path"])
def test_everything_shown_before_the_next_message_is_the_observation(tmp_path: Path, lines: bool) -> None:
    """A user message after a tool answer, two user messages, a tool answer naming no call of the last message:
    each was dropped; now they join the last step's observation, in order (both reading paths alike)."""
    messages = [{"role": "user", "content": "Start."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "move", "arguments": '{"d": "up"}'}},
                    {"id": "b", "type": "function", "function": {"name": "move", "arguments": '{"d": "left"}'}}]},
                {"role": "tool", "tool_call_id": "a", "content": "moved"},
                {"role": "tool", "tool_call_id": "zz", "content": "orphan"},
                {"role": "user", "content": "3 steps left."},
                {"role": "assistant", "content": "right"},
                {"role": "user", "content": "ok"}, {"role": "user", "content": "go on"}]
    log = (write_jsonl(tmp_path / "log.jsonl", [{"task_id": "t", "messages": messages}]) if lines
           else write_json(tmp_path / "log.json", messages))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance=INSTANCE)
    assert [s.get("observation") for s in trajectory["steps"]] == ["moved", "orphan\n3 steps left.", "ok\ngo on"]


@pytest.mark.parametrize("lines", [False, True], ids=["exact path", "typed path"])
def test_an_inline_think_block_is_reasoning_and_the_action_is_read_after_it(tmp_path: Path, lines: bool) -> None:
    messages = [{"role": "user", "content": "Start."},
                {"role": "assistant", "content": "<think>Up is open.</think>\nMove: up"},
                {"role": "user", "content": "moved"}]
    log = (write_jsonl(tmp_path / "log.jsonl", [{"task_id": "t", "messages": messages}]) if lines
           else write_json(tmp_path / "log.json", messages))
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance=INSTANCE)
    assert trajectory["steps"] == [{"action": "up", "raw": "<think>Up is open.</think>\nMove: up",
                                    "reasoning": "Up is open.", "observation": "moved"}]


def test_progress_moves_as_one_file_is_read(tmp_path: Path) -> None:
    """The bar moved once per file: a large one sat at 0% until it was done."""
    source = write_jsonl(tmp_path / "chat.jsonl", [chat_episode(f"t{i}", ["up", "left"] * 50) for i in range(400)])
    moves: list[int] = []
    convert_files([source], "openai-chat", tmp_path / "o.jsonl", ConvertOptions(), progress=moves.append, workers=1)
    assert len(moves) > 3 and sum(moves) == source.stat().st_size and all(m > 0 for m in moves)


def test_a_chat_log_that_mentions_mini_swe_agent_is_still_a_chat_log(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chat.jsonl", [chat_episode("t", ['import "minisweagent.agents" fails'])])
    assert detect(source).name == "openai-chat"


def test_a_latency_beyond_the_schema_is_refused_not_written_for_validate_to_refuse(agent_logs: Path,
                                                                                  tmp_path: Path) -> None:
    # an execution_time of 1e13 s (1e16 ms) or a span whose clock runs past the bound was written, and the output
    # then failed `validate` and `grade` (steps[0].latency_ms: expected a number <= 10^15)
    traj = json.loads((agent_logs / "swe_agent/6e44b9__sweagenttestrepo-1c2844.traj").read_text("utf-8"))
    traj["trajectory"][1]["execution_time"] = 1e13
    log = write_json(tmp_path / "slow.traj", traj)
    with pytest.raises(InputError, match=re.escape(str(log)) + r": record 0: steps\[1\]\.latency_ms: expected a "
                       r"latency of at most 10\^15 ms \(the trajectory schema's bound\), found a number 1e\+16"):
        convert(log, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
    trace = json.loads((agent_logs / "otel_genai/any-agent_OPENAI_trace.json").read_text("utf-8"))
    trace["spans"][0]["end_time"] = 2 ** 70
    log = write_json(tmp_path / "trace.json", trace)
    with pytest.raises(InputError, match=re.escape(str(log)) + r".*steps\[0\]\.latency_ms: expected a latency of at "
                       r"most 10\^15 ms"):
        convert(log, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_log_cut_after_a_line_end_is_located_on_its_last_line(cli, agent_logs: Path, tmp_path: Path) -> None:
    # `head -n 20 log.json` ends in a line end: the error was put on line 21, column 1, of a 20-line file
    source = tmp_path / "head.json"
    lines = (agent_logs / "atif/openhands__hello-world.trajectory.json").read_text("utf-8").splitlines(True)[:20]
    source.write_text("".join(lines))
    for fmt in ("auto", "atif"):
        result = cli("convert", source, "--from", fmt, "--out", tmp_path / "o.jsonl", code=2)
        assert result.stderr == f"error: {source}:20: truncated JSON (column {len(lines[-1])})\n"
    # a line of JSON Lines missing its last brace: the column is where it ends, not 1
    source = tmp_path / "chat.jsonl"
    source.write_text('{"messages": [{"role": "user", "content": "go"}]}\n{"messages": []\n')
    result = cli("convert", source, "--from", "openai-chat", "--out", tmp_path / "o.jsonl", code=2)
    assert result.stderr == f"error: {source}:2: malformed JSON: Expecting ',' delimiter (column 16)\n"
    assert not (tmp_path / "o.jsonl").exists()


def test_a_log_record_among_trajectories_does_not_tell_the_user_to_run_convert(cli, tmp_path: Path) -> None:
    # convert itself said "(an agent's log? `eebench convert` makes trajectories from it)", grade's hint
    source = tmp_path / "mixed.jsonl"
    source.write_text(json.dumps({"messages": [{"role": "assistant", "content": "up"}]}) + "\n" +
                      json.dumps({"eebench": "trajectory/1", "id": "a", "instance": INSTANCE, "steps": []}) + "\n")
    result = cli("convert", source, "--out", tmp_path / "o.jsonl", code=2)
    assert result.stderr == (f"error: {source}:1: eebench: missing; expected a trajectory/1 record (a log of another "
                             "format mixed in? each file is read in one format: name it with --from)\n")
    assert not (tmp_path / "o.jsonl").exists()
