"""What damaged, empty, odd or hostile input gets from `convert`: a located line, never a traceback or a guess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eebench.adapters import ActionReader, Adapter, ConvertOptions, convert_files, detect
from eebench.adapters.base import dig
from eebench.adapters.registry import Registered, _claims, _missing_declarations
from eebench.documents import json_type
from eebench.errors import InputError
from tests.adapters.conftest import convert
from tests.adapters.test_convert import chat_episode
from tests.conftest import write_json, write_jsonl


def test_skip_invalid_keeps_what_a_cut_file_gave_and_goes_on(cli, tmp_path: Path) -> None:
    episodes = [chat_episode(f"t{k}", ["up", "down"]) | {"trial": 0} for k in range(4)]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(episodes)[:-60])
    good = write_jsonl(tmp_path / "good.jsonl", [chat_episode("g", ["left"])])
    out = tmp_path / "out.jsonl"
    result = cli("convert", cut, good, "--from", "openai-chat", "--out", out, code=2)
    assert result.stderr == f"error: {cut}: record 3: truncated JSON; 3 records before it were read\n"
    assert not out.exists()
    result = cli("convert", cut, good, "--from", "openai-chat", "--out", out, "--skip-invalid")
    assert result.stderr == f"skipped: {cut}: record 3: truncated JSON; 3 records before it were read\n"
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == ["cut/task-t0/trial-0", "cut/task-t1/trial-0", "cut/task-t2/trial-0", "good/0"]


def test_a_json_array_is_judged_item_by_item_as_json_lines_are(cli, tmp_path: Path) -> None:
    """A too-deep item is named by its place, and --skip-invalid keeps the items before it; an id made twice in
    one array file is refused; a lone surrogate escape is refused, not read as '?'."""
    episodes = [chat_episode(f"t{k}", ["up", "down"]) | {"trial": 0} for k in range(3)]
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(episodes[:2])[:-1] + ", " + "[" * 150 + "]" * 150 + ", " + json.dumps(episodes[2])
                    + "]")
    out = tmp_path / "out.jsonl"
    said = f"{deep}: record 2: refused JSON: nested more than 100 levels deep; 2 records before it were read\n"
    assert cli("convert", deep, "--from", "openai-chat", "--out", out, code=2).stderr == f"error: {said}"
    assert cli("convert", deep, "--from", "openai-chat", "--out", out, "--skip-invalid").stderr == f"skipped: {said}"
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["deep/task-t0/trial-0",
                                                                                 "deep/task-t1/trial-0"]
    twice = write_json(tmp_path / "twice.json", [episodes[0], episodes[1], episodes[0]])
    refused = cli("convert", twice, "--from", "openai-chat", "--out", tmp_path / "t.jsonl", code=2).stderr
    assert "id: trajectory id 'twice/task-t0/trial-0' was already made from" in refused
    lone = tmp_path / "lone.json"
    lone.write_text(json.dumps(episodes).replace('"task_id": "t1"', '"task_id": "t\\ud800"', 1))
    refused = cli("convert", lone, "--from", "openai-chat", "--out", tmp_path / "l.jsonl", code=2).stderr
    assert refused.startswith(f"error: {lone}: record 1: refused JSON: t\\ud800 holds a lone surrogate")
    pair = tmp_path / "pair.json"   # an escaped pair is one character, read by the fast parser as before
    pair.write_text(json.dumps(episodes).replace('"task_id": "t1"', '"task_id": "t\\ud83d\\ude00"', 1))
    cli("convert", pair, "--from", "openai-chat", "--out", tmp_path / "p.jsonl")
    assert "pair/task-t\U0001f600/trial-0" in [json.loads(line)["id"] for line in
                                               (tmp_path / "p.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("fmt", ["openai-chat", "openhands", "actions", "eebench", "atif", "react"])
def test_an_empty_log_is_an_error_not_an_empty_success(tmp_path: Path, fmt: str) -> None:
    for content in ("", "  \n\n"):
        empty = tmp_path / "empty.json"
        empty.write_text(content)
        article = "an" if fmt in ("openai-chat", "openhands", "actions", "eebench", "atif") else "a"
        with pytest.raises(InputError, match=rf"empty\.json: is empty; expected {article} {fmt} log"):
            convert(empty, tmp_path / "out.jsonl", fmt=fmt)
    listless = write_json(tmp_path / "none.json", [])
    with pytest.raises(InputError, match=r"none\.json: holds no openai-chat episode"):
        convert(listless, tmp_path / "out.jsonl", fmt="openai-chat")


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    document = tmp_path / "doc.json"
    document.write_bytes(bom + json.dumps(chat_episode("t", ["up"])).encode())
    array = tmp_path / "array.json"
    array.write_bytes(bom + json.dumps([chat_episode("t", ["up"]), chat_episode("u", ["down"])]).encode())
    assert [t["instance"] for t in convert(document, tmp_path / "a.jsonl")] == ["t"]
    assert [t["instance"] for t in convert(array, tmp_path / "b.jsonl")] == ["t", "u"]
    lines = tmp_path / "lines.jsonl"
    lines.write_bytes(bom + b"\n".join(json.dumps(chat_episode(t, ["up"])).encode() for t in "tu") + b"\n")
    assert [t["instance"] for t in convert(lines, tmp_path / "c.jsonl")] == ["t", "u"]
    assert [t["instance"] for t in convert(lines, tmp_path / "d.jsonl", fmt="openai-chat")] == ["t", "u"]


@pytest.mark.parametrize("log", ["react_text/reflexion_hotpotqa_50_sample_react_reflect_correct.txt",
                                 "inspect_ai/2025-05-12T20-27-36-04-00_browser.trimmed.json",
                                 "balrog/babyai_open_run_01__claude-3.5-sonnet_naive.csv", "actions"])
def test_a_byte_order_mark_changes_nothing_in_a_real_log(agent_logs: Path, tmp_path: Path, log: str) -> None:
    # read past in JSON logs only: a ReAct log lost its first episode (exit 0), an Inspect .json log was refused,
    # an action list's first action kept the mark
    plain, marked = tmp_path / "plain", tmp_path / "marked"
    for folder in (plain, marked):
        folder.mkdir()
    for companion in ([] if log == "actions" else [p for p in (agent_logs / log).parent.iterdir()
                                                   if p.stem == Path(log).stem and p.name != Path(log).name]):
        for folder in (plain, marked):   # (a BALROG table's summary beside it)
            (folder / companion.name).write_bytes(companion.read_bytes())
    name = "moves.txt" if log == "actions" else Path(log).name
    data = b"up\nleft\n" if log == "actions" else (agent_logs / log).read_bytes()
    (plain / name).write_bytes(data)
    (marked / name).write_bytes(b"\xef\xbb\xbf" + data)
    options = {"fmt": "actions", "instance": "x/y"} if log == "actions" else {}
    found = [convert(folder / name, tmp_path / f"{folder.name}.jsonl", **options) for folder in (plain, marked)]
    for trajectory in (t for run in found for t in run):
        assert trajectory["source"].pop("file").endswith(f"/{name}")
    assert found[0] and found[1] == found[0]


@pytest.mark.parametrize("log", ["balrog/textworld_coin_collector_run_00__gemini-2.5-flash_naive.csv",
                                 "react_text/reflexion_hotpotqa_50_sample_react_reflect_correct.txt"])
def test_windows_line_ends_change_nothing_in_a_real_log(agent_logs: Path, tmp_path: Path, log: str) -> None:
    # a CSV's multi-line values kept `\r\n` inside (a BALROG observation read "-= Kitchen =-\r\nYou are ...")
    found = []
    for name, ends in (("unix", b"\n"), ("windows", b"\r\n")):
        folder = tmp_path / name
        folder.mkdir()
        for file in (agent_logs / log).parent.iterdir():
            if file.stem == Path(log).stem:
                (folder / file.name).write_bytes(file.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", ends))
        found.append(convert(folder / Path(log).name, tmp_path / f"{name}.jsonl"))
        for trajectory in found[-1]:
            trajectory["source"].pop("file")
    assert any("\n" in (step.get("observation") or "") for t in found[0] for step in t["steps"])
    assert found[0] and found[1] == found[0]


@pytest.mark.parametrize("fmt", ["auto", "openai-chat"])
def test_a_gzip_compressed_log_is_named_so(tmp_path: Path, fmt: str) -> None:
    import gzip

    log = tmp_path / "log.jsonl.gz"
    log.write_bytes(gzip.compress(json.dumps(chat_episode("t", ["up"])).encode()))
    with pytest.raises(InputError, match=r"log\.jsonl\.gz: is gzip-compressed, expected text: decompress it first "
                                         r"\(gunzip\)$"):
        convert(log, tmp_path / "out.jsonl", fmt=fmt)


def test_deep_nesting_is_no_action_in_text_and_a_located_error_in_a_record(tmp_path: Path) -> None:
    deep = '{"a":' * 2000 + "1" + "}" * 2000
    assert ActionReader().from_text(deep) is None
    log = write_jsonl(tmp_path / "deep.jsonl", [chat_episode("t", [deep, "up"])])
    [trajectory] = convert(log, tmp_path / "out.jsonl", instance="x")
    assert [s["action"] for s in trajectory["steps"]] == [None, "up"]
    nested = tmp_path / "nested.jsonl"
    nested.write_text('{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(InputError, match=r"nested\.jsonl:1: refused JSON: nested more than 100 levels deep"):
        convert(nested, tmp_path / "out.jsonl", fmt="openai-chat")


def test_the_actions_format_refuses_what_is_not_a_list_of_actions(tmp_path: Path) -> None:
    log = write_json(tmp_path / "chat.txt", chat_episode("t", ["up"]))
    with pytest.raises(InputError, match=r"chat\.txt:1: expected one action per line, found '\{\"task_id\": \"t\", "
                                         r"\"model\": \"gpt-test.*'; is this a log of another format\?"):
        convert(log, tmp_path / "out.jsonl", fmt="actions")
    long_line = tmp_path / "prose.txt"
    long_line.write_text("up\n" + "word " * 100 + "\n")
    with pytest.raises(InputError, match=r"prose\.txt:2: expected one action per line"):
        convert(long_line, tmp_path / "out.jsonl", fmt="actions")
    wrong_item = write_json(tmp_path / "moves.json", ["up", 3])
    with pytest.raises(InputError, match=r"moves\.json: record 1: expected an action string, found an integer"):
        convert(wrong_item, tmp_path / "out.jsonl", fmt="actions")


def test_converted_trajectories_convert_again_unchanged(agent_logs: Path, tmp_path: Path) -> None:
    first = tmp_path / "first.jsonl"
    convert(agent_logs / "atif" / "terminus-2__hello-world-invalid-json.trajectory.json", first)
    assert detect(first).name == "eebench"   # although it quotes ATIF's schema_version in meta
    again = convert(first, tmp_path / "again.jsonl")
    assert again == [json.loads(line) for line in first.read_text().splitlines()]
    [mapped] = convert(first, tmp_path / "mapped.jsonl", instance_field="meta.schema_version")
    assert mapped["instance"] == "ATIF-v1.5"


def test_open_text_actions_are_whole_messages(tmp_path: Path) -> None:
    message = "Here is what I found:\n1. the flight\n2. the price"
    log = write_jsonl(tmp_path / "chat.jsonl", [chat_episode("t", [message])])
    [trajectory] = convert(log, tmp_path / "out.jsonl")
    assert trajectory["env"] == "logged" and trajectory["steps"][0]["action"] == message


class _Broken(Adapter):
    name = "broken"
    summary = "a plug-in with a bug"
    example = "-"

    def handles(self, path: Path, head: bytes) -> bool:
        raise ValueError("bug")

    def episodes(self, path: Path):
        yield from ()


class _Undeclared(_Broken):
    summary = ""
    never_carries = frozenset({"tokens"})


def test_a_faulty_plugin_cannot_stop_the_others(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    assert _claims(Registered(_Broken(), "plug-in broken"), path, b"{}") is False
    with pytest.raises(ValueError, match="bug"):   # a built-in's bug is ours: it must show
        _claims(Registered(_Broken(), "built-in"), path, b"{}")
    assert _missing_declarations(_Broken()) == ""
    assert _missing_declarations(_Undeclared()) == ("summary, never_carries (a frozenset of raw, reasoning, "
                                                    "observation, tokens_in, tokens_out, latency_ms, timestamp, state)")


def test_a_folder_or_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=rf"{tmp_path}: is a folder with no files in it"):
        convert_files([tmp_path], "auto", tmp_path / "o.jsonl", ConvertOptions())
    with pytest.raises(InputError, match=r"nope\.json: no such file"):
        convert(tmp_path / "nope.json", tmp_path / "o.jsonl")


def test_a_problem_that_quotes_a_newline_stays_one_line(cli, tmp_path: Path) -> None:
    table = tmp_path / "nohdr_run_01.csv"   # a BALROG table without its header: the first row's cells are quoted
    table.write_text('0,"turn left",,"a wall\nanother wall",0,False\n')
    refused = cli("convert", table, "--from", "balrog", "--out", tmp_path / "o.jsonl", code=2).stderr
    assert refused.count("\n") == 1 and "a wall\\nanother wall" in refused


def test_what_names_an_episode_in_its_id_is_text_or_an_integer(cli, tmp_path: Path) -> None:
    for name, value in (("trial", {}), ("task_id", [1]), ("task_id", 1.5)):
        log = write_jsonl(tmp_path / "log.jsonl", [chat_episode("t0", ["up"]) | {"trial": 0, name: value}])
        refused = cli("convert", log, "--from", "openai-chat", "--out", tmp_path / "o.jsonl", code=2).stderr
        assert refused == f"error: {log}:1: {name}: expected a string or an integer, found {json_type(value)}\n"


def test_a_chat_message_field_of_the_wrong_type_is_refused_not_dropped(cli, tmp_path: Path) -> None:
    episode = chat_episode("t0", ["up", {"direction": "left"}]) | {"trial": 0}
    for index, name, value, said in ((2, "content", 5, "expected a string, a list of parts or null, found an integer"),
                                     (2, "role", 7, "expected a string, found an integer"),
                                     (4, "tool_calls", {"x": 1}, "expected a list or null, found a mapping"),
                                     (2, "reasoning_content", ["a"], "expected a string or null, found a list"),
                                     (2, "reasoning", 123, "expected a string or null, found an integer")):
        damaged = json.loads(json.dumps(episode))
        damaged["messages"][index][name] = value
        log = write_jsonl(tmp_path / "log.jsonl", [damaged])
        refused = cli("convert", log, "--from", "openai-chat", "--out", tmp_path / "o.jsonl", code=2).stderr
        assert refused == f"error: {log}:1: messages[{index}].{name}: {said}\n"
    damaged = json.loads(json.dumps(episode))
    damaged["messages"][2]["content"] = [{"type": "text", "text": "up"}, 5]   # a part neither text nor an object
    log = write_jsonl(tmp_path / "log.jsonl", [damaged])
    refused = cli("convert", log, "--from", "openai-chat", "--out", tmp_path / "o.jsonl", code=2).stderr
    assert refused == f"error: {log}:1: messages[2].content[1]: expected a text or an object part, found an integer\n"
    damaged["messages"][2]["content"] = [{"type": "text", "text": 5}]   # a text part whose text is not text
    log = write_jsonl(tmp_path / "log.jsonl", [damaged])
    refused = cli("convert", log, "--from", "openai-chat", "--out", tmp_path / "o.jsonl", code=2).stderr
    assert refused == f"error: {log}:1: messages[2].content[0].text: expected a string, found an integer\n"
    for function in (None, {"name": "", "arguments": "{}"}):   # (an empty name was written as the action `()`)
        damaged = json.loads(json.dumps(episode))
        damaged["messages"][4]["tool_calls"][0]["function"] = function
        log = write_jsonl(tmp_path / "log.jsonl", [damaged])
        assert "messages[4].tool_calls[0]: expected a call naming its function" in cli(
            "convert", log, "--from", "openai-chat", "--out", tmp_path / "o.jsonl", code=2).stderr


def _first(items: list, test) -> int:
    return next(i for i, item in enumerate(items) if test(item))


def test_embedded_chat_messages_are_held_to_the_one_shape_rule(cli, agent_logs: Path, tmp_path: Path) -> None:
    """inspect, harbor-traces and openhands embed chat messages: a field of the wrong type is one located line, as in
    openai-chat (OpenHands' tool_calls of another type crashed; a call named by a list was written as its repr)."""
    events = json.loads((agent_logs / "openhands_events" / "openhands_trajectory.json").read_text("utf-8"))
    k = _first(events, lambda e: dig(e, "tool_call_metadata.model_response.choices.0.message.tool_calls"))
    events[k]["tool_call_metadata"]["model_response"]["choices"][0]["message"]["tool_calls"] = 5
    sample = json.loads((agent_logs / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.trimmed.json").read_text())
    messages = sample["samples"][0]["messages"]
    m = _first(messages, lambda message: message.get("tool_calls"))
    messages[m]["tool_calls"][0]["function"] = ["zz"]
    traces = json.loads((agent_logs / "atif" / "terminus-2__hello-world-invalid-json.traces.json").read_text("utf-8"))
    last = len(traces) - 1
    traces[last]["conversations"][1]["content"] = 5
    for fmt, name, document, said in (
            ("openhands", "events.json", events, f"record {k}: tool_call_metadata.model_response.choices[0].message."
                                                 "tool_calls: expected a list or null, found an integer"),
            ("inspect", "eval.json", sample, f"record samples[0]: messages[{m}].tool_calls[0]: expected a call naming "
                                             "its function (`function.name`)"),
            ("harbor-traces", "t.traces.json", traces, f"record {last}: conversations[1].content: expected a string, "
                                                        "a list of parts or null, found an integer")):
        log = write_json(tmp_path / name, document)
        out = tmp_path / "out.jsonl"
        result = cli("convert", log, "--from", fmt, "--out", out, code=2)
        assert result.stderr == f"error: {log}: {said}\n"
        assert not out.exists()


def _real(agent_logs: Path, name: str) -> Any:
    path = agent_logs / name
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text("utf-8").splitlines()][:1]
    return json.loads(path.read_text("utf-8"))


def _refused_with_one_value_changed(cli, agent_logs: Path, tmp_path: Path, fmt: str, source: str, where: tuple,
                                    value: Any, said: str) -> None:
    """A real log with the value at `where` changed is refused with `said`, one line naming the log, and no output."""
    document = _set(_real(agent_logs, source), where, value)
    log = (write_jsonl if source.endswith(".jsonl") else write_json)(tmp_path / Path(source).name, document)
    out = tmp_path / "out.jsonl"
    separator = ":" if source.endswith(".jsonl") else ": "
    assert cli("convert", log, "--from", fmt, "--out", out, code=2).stderr == f"error: {log}{separator}{said}\n"
    assert not out.exists()


def _set(document: Any, path: tuple, value: Any) -> Any:
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


@pytest.mark.parametrize("fmt, source, where, value, said", [
    ("atif", "atif/terminus-2__hello-world-invalid-json.trajectory.json", ("steps", 2, "tool_calls", 0,
     "function_name"), ["zz"], "record 0: steps[2]: expected each tool call's function_name to be a string, found a list"),
    ("otel", "otel_genai/any-agent_OPENAI_trace.json", ("spans", 1, "attributes", "gen_ai.tool.name"), True,
     "record 0: spans[1].attributes.gen_ai.tool.name: expected the tool's name as a string, found a boolean"),
    ("otel", "otel_genai/any-agent_OPENAI_trace.json", ("spans", 1, "name"), {"zz": 1},
     "record 0: spans[1].name: expected the span's name as a string, found a mapping"),
    ("langsmith", "langsmith/langsmith_py_wrap_openai_reasoning.json", ("patch", 0, "trace_id"), ["zz"],
     "record 0: patch[0].trace_id: expected a string, found a list"),
    ("openai-responses", "openai_responses/nemo-gym_openenv_example_rollouts.jsonl", (0, "response", "output", 1,
     "name"), {"zz": 1}, "1: response.output[1].name: expected a string, found a mapping"),
    ("openai-responses", "openai_responses/nemo-gym_openenv_example_rollouts.jsonl", (0, "_ng_rollout_index"), None,
     "1: _ng_rollout_index: expected the rollout's number beside _ng_task_index (a string or an integer), found null"),
])
def test_what_names_a_tool_or_a_trajectory_is_never_written_as_a_python_repr(
        cli, agent_logs: Path, tmp_path: Path, fmt: str, source: str, where: tuple, value: Any, said: str) -> None:
    """Each of these was written as its Python repr (`['zz']`, `True`, `rollout-None`) in a run that succeeded."""
    _refused_with_one_value_changed(cli, agent_logs, tmp_path, fmt, source, where, value, said)


def test_names_of_the_wrong_type_in_hand_made_logs(cli, tmp_path: Path) -> None:
    """ScienceWorld's taskName and variationIdx name the instance, ADaPT's WebShop history items are the actions:
    a mapping, a list or null there was written as its Python repr ('scienceworld/None/3', "{'zz': 1}")."""
    history = {"3": {"episodeIdx": 3, "history": {"taskName": None, "variationIdx": 3, "history": [
        {"action": "look around", "observation": "ok", "freelook": "This room is called the kitchen."}]}}}
    webshop = {"fixed_0": {"problem": "buy a clip", "action_history": ["search[clip]", {"zz": 1}]}}
    for fmt, name, document, said in (
            ("scienceworld", "task1.json", history, "record 3: history.taskName: expected a string or an integer, "
                                                    "found null"),
            ("adapt", "ADaPT_maxd3_webshop_test.json", webshop, "record fixed_0: action_history[1]: expected an "
                                                                "action string, found a mapping")):
        log = write_json(tmp_path / name, document)
        result = cli("convert", log, "--from", fmt, "--out", tmp_path / "out.jsonl", code=2)
        assert result.stderr == f"error: {log}: {said}\n"


def test_a_null_trial_is_no_trial(tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "log.jsonl", [chat_episode("t0", ["up"]) | {"trial": None}])
    [trajectory] = convert(log, tmp_path / "out.jsonl", fmt="openai-chat")
    assert trajectory["id"] == "log/0"   # it was log/task-t0/trial-None


@pytest.mark.parametrize("fmt, source, where, value, said", [
    ("mini-swe-agent", "mini_swe_agent/mini-swe-agent-trajectory.json", ("messages", 2, "content"), 5,
     "record 0: messages[2].content: expected a string, a list of parts or null, found an integer"),
    ("openai-responses", "openai_responses/nemo-gym_grl_sokoban_example_rollouts.jsonl", (0, "response", "output", 0,
     "content"), {"zz": 1}, "1: response.output[0].content: expected a string, a list of parts or null, found a mapping"),
    ("openai-responses", "openai_responses/nemo-gym_grl_sokoban_example_rollouts.jsonl", (0, "response", "output", 0,
     "role"), 1, "1: response.output[0].role: expected a string, found an integer"),
    ("atif", "atif/terminus-2__hello-world-invalid-json.trajectory.json", ("steps", 2, "message"), 5,
     "record 0: steps[2]: expected message to be a string or a list of parts, found an integer"),
    ("atif", "atif/terminus-2__hello-world-invalid-json.trajectory.json", ("steps", 2, "reasoning_content"), ["zz"],
     "record 0: steps[2]: expected reasoning_content to be a string, found a list"),
    ("atif", "atif/terminus-2__hello-world-invalid-json.trajectory.json", ("steps", 2, "observation", "results", 0,
     "content"), 7, "record 0: steps[2]: expected observation.results to be objects with a text content, found an "
                    "integer"),
    ("openhands", "openhands_events/openhands_trajectory.json", (4, "source"), 1,
     "record 4: source: expected the event's source (agent, user or environment), found an integer"),
    ("openhands", "openhands_events/openhands_trajectory.json", (4, "timestamp"), 1760076638,
     "record 4: timestamp: expected a string or null, found an integer"),
    ("langsmith", "langsmith/langsmith_py_wrap_openai_reasoning.json", ("patch", 0, "outputs", "choices", 0, "message",
     "content"), 5, "record 0: patch[0].outputs.choices[0].message.content: expected a string, a list of parts or "
                    "null, found an integer"),
    ("otel", "otel_genai/any-agent_OPENAI_trace.json", ("spans", 4, "attributes", "gen_ai.output"), {"steps": []},
     "record 0: spans[4].attributes.gen_ai.output: expected the model's output as a string (or a list of tool "
     "calls), found a mapping"),
])
def test_step_content_of_the_wrong_type_is_refused_not_dropped(
        cli, agent_logs: Path, tmp_path: Path, fmt: str, source: str, where: tuple, value: Any, said: str) -> None:
    """Each of these was dropped unread in a run that succeeded: a step without its text (so without its action),
    its reasoning or its observation, or no step at all."""
    _refused_with_one_value_changed(cli, agent_logs, tmp_path, fmt, source, where, value, said)


@pytest.mark.parametrize("step, said", [
    ({"action": "look around", "observation": {"text": "ok"}}, r"\[1\]\.observation: expected a string or null, "
                                                               r"found a mapping"),
    ({"action": "look around", "observation": "ok", "freelook": ["kitchen"]},   # (it sets the step before's state)
     r"\[1\]\.freelook: expected a string or null, found a list"),
    ({"action": 5, "observation": "ok"}, r"\[1\]\.action: expected a string, found an integer"),
    ("look around", r"\[1\]: expected a step object, found a string"),
])
def test_a_scienceworld_step_field_of_the_wrong_type_is_refused(tmp_path: Path, step: Any, said: str) -> None:
    history = {"3": {"episodeIdx": 3, "history": {"taskName": "boil", "variationIdx": 3, "history": [
        {"action": "open door", "observation": "ok", "freelook": "This room is called the hallway."}, step]}}}
    log = write_json(tmp_path / "task1.json", history)
    with pytest.raises(InputError, match=r"task1\.json: record 3: history\.history" + said):
        convert(log, tmp_path / "out.jsonl", fmt="scienceworld")


COUNT = "expected a token count (an integer >= 0), found"
MINI = "mini_swe_agent/mini-swe-agent-trajectory.json"
OTEL = "otel_genai/any-agent_OPENAI_trace.json"
LANGSMITH = "langsmith/langsmith_py_wrap_openai_reasoning.json"
OPENHANDS = "openhands_events/openhands_trajectory.json"
RESPONSES = "openai_responses/nemo-gym_openenv_example_rollouts.jsonl"
INSPECT = "inspect_ai/2025-05-12T20-27-36-04-00_browser.trimmed.json"
SWE = "swe_agent/6e44b9__sweagenttestrepo-1c2844.traj"
TERMINUS = "atif/terminus-2__hello-world-invalid-json.trajectory.json"


@pytest.mark.parametrize("fmt, source, where, value, said", [
    ("mini-swe-agent", MINI, ("messages", 2, "extra", "response", "usage", "prompt_tokens"), "752",
     f'record 0: messages[2].extra.response.usage.prompt_tokens: {COUNT} a string "752"'),
    ("mini-swe-agent", MINI, ("messages", 2, "extra", "response", "usage"), [752],
     "record 0: messages[2].extra.response.usage: expected an object or null, found a list"),
    ("otel", OTEL, ("spans", 0, "attributes", "gen_ai.usage.input_tokens"), -3,
     f"record 0: spans[0].attributes.gen_ai.usage.input_tokens: {COUNT} an integer -3"),
    ("otel", OTEL, ("spans", 0, "attributes", "gen_ai.usage.output_tokens"), 16.5,
     f"record 0: spans[0].attributes.gen_ai.usage.output_tokens: {COUNT} a number 16.5"),
    ("langsmith", LANGSMITH, ("patch", 0, "outputs", "usage_metadata", "output_tokens"), True,
     f"record 0: patch[0].outputs.usage_metadata.output_tokens: {COUNT} a boolean true"),
    ("langsmith", LANGSMITH, ("patch", 0, "outputs", "usage_metadata", "output_token_details", "reasoning"), "2048",
     f'record 0: patch[0].outputs.usage_metadata.output_token_details.reasoning: {COUNT} a string "2048"'),
    ("openhands", OPENHANDS, (4, "tool_call_metadata", "model_response", "usage", "completion_tokens"), [1042],
     f"record 4: tool_call_metadata.model_response.usage.completion_tokens: {COUNT} a list [1042]"),
    ("openhands", OPENHANDS, (6, "llm_metrics", "accumulated_token_usage", "prompt_tokens"), "5863",
     f'record 6: llm_metrics.accumulated_token_usage.prompt_tokens: {COUNT} a string "5863"'),
    ("openai-responses", RESPONSES, (0, "response", "usage", "input_tokens"), "1084",
     f'1: response.usage.input_tokens: {COUNT} a string "1084"'),
    ("openai-responses", RESPONSES, (0, "response", "usage", "output_tokens_details", "reasoning_tokens"), -1,
     f"1: response.usage.output_tokens_details.reasoning_tokens: {COUNT} an integer -1"),
    ("inspect", INSPECT, ("samples", 0, "events", 7, "output", "usage", "input_tokens"), "1124",
     f'record samples[0]: events[7].output.usage.input_tokens: {COUNT} a string "1124"'),
    ("inspect", INSPECT, ("samples", 0, "model_usage", "openai/gpt-4o-mini", "output_tokens"), 2.5,
     f"record samples[0]: model_usage.openai/gpt-4o-mini.output_tokens: {COUNT} a number 2.5"),
    ("swe-agent", SWE, ("info", "model_stats", "tokens_sent"), "7141",
     f'record 0: info.model_stats.tokens_sent: {COUNT} a string "7141"'),
    ("atif", TERMINUS, ("steps", 1, "metrics", "completion_tokens"), 2 ** 60,
     "record 0: steps[1].metrics.completion_tokens: expected a token count <= 9007199254740991 (the trajectory "
     "schema's bound), found an integer 1152921504606846976"),
])
def test_a_token_count_of_the_wrong_type_is_refused_not_dropped(
        cli, agent_logs: Path, tmp_path: Path, fmt: str, source: str, where: tuple, value: Any, said: str) -> None:
    """Each of these became no count in a run that succeeded (the count above the schema's bound was written, and
    the trajectory then failed `validate`): one rule for every format, the one ATIF's metrics were held to."""
    _refused_with_one_value_changed(cli, agent_logs, tmp_path, fmt, source, where, value, said)


def test_token_counts_in_hand_made_logs(cli, tmp_path: Path) -> None:
    """openai-chat's usage (its fast path sends such a message to the exact one, which dropped the count) and a
    BALROG summary's totals."""
    for value, said in (("100", 'a string "100"'), (-5, "an integer -5"), (1.5, "a number 1.5")):
        episode = chat_episode("t0", ["up"]) | {"trial": 0}
        episode["messages"][2]["usage"]["prompt_tokens"] = value
        log = write_jsonl(tmp_path / "log.jsonl", [episode])
        refused = cli("convert", log, "--from", "openai-chat", "--out", tmp_path / "o.jsonl", code=2).stderr
        assert refused == f"error: {log}:1: messages[2].usage.prompt_tokens: {COUNT} {said}\n"
    folder = tmp_path / "balrog"
    folder.mkdir()
    table = folder / "goto_run_00.csv"
    table.write_text("Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,,ok,0,True\n", "utf-8")
    (folder / "goto_run_00.json").write_text(json.dumps({"task": "goto", "num_steps": 1, "input_tokens": "508"}))
    refused = cli("convert", table, "--from", "balrog", "--out", tmp_path / "o.jsonl", code=2).stderr
    assert refused == f'error: {folder / "goto_run_00.json"}: input_tokens: {COUNT} a string "508"\n'


def test_a_null_count_is_no_count_and_a_whole_number_is_a_count(agent_logs: Path, tmp_path: Path) -> None:
    """Where a format allows no count (null, or the field left out) the step has none, as before; a count written
    as a number without a fraction (752.0) is that count."""
    document = _real(agent_logs, MINI)
    usage = document["messages"][2]["extra"]["response"]["usage"]
    usage["prompt_tokens"], usage["completion_tokens"] = None, 69.0
    log = write_json(tmp_path / "mini.json", document)
    [run] = convert(log, tmp_path / "out.jsonl", fmt="mini-swe-agent")
    assert "tokens_in" not in run["steps"][0] and run["steps"][0]["tokens_out"] == 69


@pytest.mark.parametrize("fmt, source, where, value, said", [
    ("harbor-traces", "atif/terminus-2__hello-world-invalid-json.traces.json", (3, "task"), {"zz": 1},
     "record 3: task: expected a string or an integer, found a mapping"),
    ("openai-responses", "openai_responses/nemo-gym_grl_sokoban_example_rollouts.jsonl", (0, "_ng_task_index"), ["zz"],
     "1: _ng_task_index: expected a string or an integer, found a list"),
    ("swe-agent", "swe_agent/6e44b9__sweagenttestrepo-1c2844.traj", ("replay_config", "problem_statement", "id"),
     ["zz"], "record 0: replay_config.problem_statement.id: expected a string or an integer, found a list"),
    ("inspect", "inspect_ai/2025-05-12T20-27-36-04-00_browser.trimmed.json", ("eval", "task"), True,
     "record samples[0]: eval.task: expected a string or an integer, found a boolean"),
    ("langsmith", "langsmith/langsmith_py_wrap_openai_reasoning.json", ("post", 0, "reference_example_id"), 7,
     "record 0: post[0].reference_example_id: expected a string, found an integer"),
])
def test_what_names_the_instance_is_refused_not_dropped_when_of_the_wrong_type(
        cli, agent_logs: Path, tmp_path: Path, fmt: str, source: str, where: tuple, value: Any, said: str) -> None:
    """Each of these was dropped unread in a run that succeeded: the trajectory's instance became the file's name
    (or the response's id named the trajectory), as if the log had named no task."""
    _refused_with_one_value_changed(cli, agent_logs, tmp_path, fmt, source, where, value, said)
