"""The path from agents' logs to grades as a new user walks it: instances named by the log, the bench or the file's
name; folders of logs; standard input and output; what is not graded and why; every refusal naming its fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eebench.adapters.convert import from_name, name_stem
from tests.adapters.test_convert import INSTANCE, chat_episode, corridor
from tests.conftest import write_json, write_jsonl

MODEL_FILE = "claude-3.5-sonnet__park2026-main__high-large__seed-2.json"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_a_task_id_the_bench_knows_grades_without_options(cli, tmp_path: Path) -> None:
    bench = corridor(tmp_path)
    log = write_jsonl(tmp_path / "chat.jsonl", [chat_episode(INSTANCE, ["right", "right", "right"])])
    out = tmp_path / "traj.jsonl"
    result = cli("convert", log, "--bench", bench, "--out", out)
    assert "logged" not in result.stdout
    [trajectory] = lines(out)
    # no env: the instance's kind decides; the sha256 ties the trajectory to the very instance converted against
    assert "env" not in trajectory and trajectory["instance"] == INSTANCE
    assert re.fullmatch(r"[0-9a-f]{64}", trajectory["instance_sha256"])
    db = tmp_path / "r.duckdb"
    assert "graded 1 trajectories (3 steps)" in cli("grade", out, "--bench", bench, "--db", db).stdout
    rows = json.loads(cli("query", "--db", db, "--format", "json", "SELECT success FROM trajectories").stdout)
    assert rows == [{"success": True}]


def test_a_task_the_bench_does_not_know_is_refused_with_the_fix(cli, tmp_path: Path) -> None:
    bench = corridor(tmp_path)
    log = write_jsonl(tmp_path / "chat.jsonl", [chat_episode("test/corridr", ["right"])])
    out = tmp_path / "traj.jsonl"
    result = cli("convert", log, "--bench", bench, "--out", out, code=2)
    assert result.stderr == (f"error: {log}:1: instance 'test/corridr' is not in {bench} (did you mean "
                             "'test/corridor'?); name it with --instance ID, --instance-field PATH or "
                             "--instance-from-name REGEX\n")
    assert not out.exists()


def test_an_unknown_task_without_bench_is_logged_and_the_summary_says_how_to_grade(cli, tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "chat.jsonl", [chat_episode("airline/7", ["Book the flight."])])
    out = tmp_path / "traj.jsonl"
    result = cli("convert", log, "--out", out)
    assert ("1 trajectories are 'logged' (kept as text: graded for coverage and revisits, not replayed): their "
            "instance, e.g. 'airline/7', is not a known one; to grade them by replay, convert again with --bench "
            "BENCH, --instance ID, --instance-field PATH or --instance-from-name REGEX") in result.stdout
    [trajectory] = lines(out)
    assert trajectory["env"] == "logged" and trajectory["steps"][0]["action"] == "Book the flight."
    # and grade, given it anyway, grades it as logged: coverage and revisits only, no replay (issue 11)
    bench = corridor(tmp_path)
    graded = cli("grade", out, "--bench", bench, "--db", tmp_path / "r.duckdb")
    assert "graded 1 trajectories (1 steps)" in graded.stdout


def test_a_task_of_a_shipped_suite_is_graded_without_bench(tmp_path: Path) -> None:
    from tests.adapters.conftest import convert
    log = write_jsonl(tmp_path / "chat.jsonl", [chat_episode("park2026-main/low-small/seed-0", ["Action: up"])])
    [trajectory] = convert(log, tmp_path / "out.jsonl")
    assert "env" not in trajectory and trajectory["steps"][0]["action"] == "up"
    assert "instance_sha256" not in trajectory   # no bench: nothing to promise


def test_file_names_keep_their_dots() -> None:
    assert name_stem(MODEL_FILE) == "claude-3.5-sonnet__park2026-main__high-large__seed-2"
    assert name_stem("run.trajectory.json") == "run"
    assert name_stem("v1.2.jsonl") == "v1.2"
    assert name_stem(".json") == ".json"


def test_instance_from_name_joins_groups_and_reads_labels() -> None:
    joined = re.compile(r"__(park2026-main)__(.+)__(seed-\d+)$")
    assert from_name(joined, MODEL_FILE) == {"instance": "park2026-main/high-large/seed-2"}
    labelled = re.compile(r"^(?P<model>.+?)__(park2026-main)__(.+)__(seed-\d+)$")
    assert from_name(labelled, MODEL_FILE) == {"model": "claude-3.5-sonnet",
                                               "instance": "park2026-main/high-large/seed-2"}
    whole = re.compile(r"__(?P<instance>.+)$")
    assert from_name(whole, "m__x.json") == {"instance": "x"}
    assert from_name(joined, "other.json") is None


@given(st.lists(st.text("abc-_", min_size=1, max_size=5), min_size=1, max_size=4),
       st.sampled_from([".json", ".jsonl", ".txt", ".trajectory.json", ".csv"]))
def test_a_stem_is_the_name_without_log_endings(parts: list[str], suffix: str) -> None:
    stem = ".".join(parts)   # dots inside, as in model names, are kept
    assert name_stem(stem + suffix) == stem


def test_a_folder_of_model_logs_converts_with_instance_and_model_from_names(cli, tmp_path: Path) -> None:
    bench = corridor(tmp_path)
    logs = tmp_path / "logs"
    for model in ("claude-3.5-sonnet", "gpt-4.1"):
        write_jsonl(logs / f"{model}__test__corridor.jsonl", [chat_episode("?", ["right"] * 3)])
    (logs / "README.md").write_text("three models' logs\n")
    out = tmp_path / "traj.jsonl"
    result = cli("convert", logs, "--bench", bench, "--out", out,
                 "--instance-from-name", r"^(?P<model>[^_]+)__(test)__(corridor)$")
    assert f"left out 1 file(s) of the folder(s) that no adapter reads: {logs / 'README.md'}" in result.stdout
    trajectories = lines(out)
    assert [(t["instance"], t["agent"]["model"]) for t in trajectories] == [
        (INSTANCE, "claude-3.5-sonnet"), (INSTANCE, "gpt-4.1")]
    cli("grade", out, "--bench", bench, "--db", tmp_path / "r.duckdb")


def test_instance_from_name_reads_the_folders_when_the_file_name_is_generic(cli, tmp_path: Path) -> None:
    """Harbor writes every trial's ATIF log as <trial>/agent/trajectory.json, the task in the trial's folder name."""
    for task in ("hello-world", "fix-git"):
        write_json(tmp_path / "jobs" / f"{task}__x7Yq" / "agent" / "trajectory.json", {
            "schema_version": "ATIF-v1.5", "session_id": f"s-{task}", "agent": {"name": "terminus-2"},
            "steps": [{"step_id": 1, "source": "agent", "message": "ls"}]})
    out = tmp_path / "o.jsonl"
    cli("convert", tmp_path / "jobs", "--out", out, "--instance-from-name",
        r"(?P<instance>[^/]+)__[^/]+/agent/trajectory$")
    assert sorted(t["instance"] for t in lines(out)) == ["fix-git", "hello-world"]


def test_instance_from_name_that_does_not_match_names_the_file(cli, tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "run.v2.jsonl", [chat_episode("t", ["up"])])
    result = cli("convert", log, "--out", tmp_path / "o.jsonl", "--instance-from-name", r"^x(\d)$", code=2)
    assert result.stderr == (f"error: {log}: --instance-from-name: '^x(\\d)$' matches neither 'run.v2' nor the "
                             "file's path\n")   # the pattern as typed
    result = cli("convert", log, "--out", tmp_path / "o.jsonl", "--instance-from-name", "run", code=2)
    assert "--instance-from-name: the pattern needs a group" in result.stderr


def test_stdin_to_stdout(cli, tmp_path: Path) -> None:
    bench = corridor(tmp_path)
    log = json.dumps(chat_episode(INSTANCE, ["<action>right</action>", "Action: left"])) + "\n"
    result = cli("convert", "-", "--out", "-", "--bench", bench, input=log)
    [trajectory] = [json.loads(line) for line in result.stdout.splitlines()]
    assert [s["action"] for s in trajectory["steps"]] == ["right", "left"]
    assert trajectory["source"]["file"] == "-"
    assert "converted 1 trajectories (2 steps) from 1 file(s) read as openai-chat -> -" in result.stderr
    # and grade reads standard input too
    graded = cli("grade", "-", "--bench", bench, "--db", tmp_path / "r.duckdb", input=result.stdout)
    assert "graded 1 trajectories (2 steps)" in graded.stdout
    files = cli("query", "--db", tmp_path / "r.duckdb", "--format", "csv", "SELECT source_file FROM trajectories")
    assert files.stdout.split() == ["source_file", "-"]


def test_bad_stdin_is_named_dash_and_writes_nothing(cli, tmp_path: Path) -> None:
    result = cli("convert", "-", "--out", "-", input="", code=2)
    assert result.stderr == "error: -: is empty; expected an agent log\n"
    assert result.stdout == ""
    result = cli("convert", "-", "--out", "-", input='{"role": "assistant", "content": [1', code=2)
    assert result.stdout == "" and result.stderr.startswith("error: -")


def test_endless_stdin_without_a_line_end_is_refused_at_the_document_limit(cli, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # `eebench convert - < /dev/zero` copied standard input to a temporary file without end: it filled the disk
    # (some 60 GB in 2 minutes) and then said "cannot write the output: No space left on device". No log has a
    # stretch without a line end longer than a whole-document log may be (JSON Lines' lines are shorter still)
    import eebench.adapters.records

    monkeypatch.setattr(eebench.adapters.records, "MAX_DOCUMENT_BYTES", 1 << 20)   # (1 GiB in use: a test's size)
    result = cli("convert", "-", "--out", tmp_path / "o.jsonl", input=b"\0" * (3 << 20), code=2)
    assert result.stderr == ("error: -: more than 1 MiB without a line end, more than an agent log may hold; "
                             "expected a log (one JSON document of at most 1 MiB, or JSON Lines)\n")
    assert list(tmp_path.iterdir()) == []
    # a log as long with its line ends is read
    log = (json.dumps(chat_episode(INSTANCE, ["left"])) + "\n") * 2
    assert "converted 2 trajectories" in cli("convert", "-", "--instance", INSTANCE, "--out", tmp_path / "o.jsonl",
                                             input=log).stdout


def test_unreadable_steps_are_located_in_the_summary(cli, tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "chat.jsonl", [chat_episode(INSTANCE, ["up", "hmm", "no idea", "left"]),
                                                chat_episode(INSTANCE, ["where?"])])
    result = cli("convert", log, "--instance", INSTANCE, "--out", tmp_path / "o.jsonl")
    assert (f"3 steps had no readable action (kept with action null): {log}:1 step 1, {log}:1 step 2, "
            f"{log}:2 step 0; --action-regex REGEX reads an unusual answer style") in result.stdout


def test_empty_inputs_are_one_rule_for_convert_and_grade(cli, tmp_path: Path) -> None:
    bench = corridor(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    out = tmp_path / "o.jsonl"
    assert cli("convert", empty, "--out", out, code=2).stderr == f"error: {empty}: is empty; expected an agent log\n"
    db = tmp_path / "r.duckdb"
    assert cli("grade", empty, "--bench", bench, "--db", db, code=2).stderr == (
        f"error: {empty}: is empty; expected trajectory/1 records (`eebench convert` makes them from agents' logs)\n")
    assert not out.exists() and not db.exists()
    # --skip-invalid skips bad records, not a file that holds none
    cli("grade", empty, "--bench", bench, "--db", db, "--skip-invalid", code=2)


@pytest.mark.parametrize("raw", [
    {"task_id": INSTANCE, "messages": [{"role": "assistant", "content": "up"}]},
    [{"role": "assistant", "content": "up"}],
])
def test_grade_on_a_raw_log_names_trajectory_and_convert(cli, tmp_path: Path, raw: object) -> None:
    bench = corridor(tmp_path)
    log = tmp_path / "raw.jsonl"
    log.write_text(json.dumps(raw) + "\n")
    stderr = cli("grade", log, "--bench", bench, "--db", tmp_path / "r.duckdb", code=2).stderr
    assert "expected a trajectory/1 record" in stderr and "eebench convert" in stderr


def test_canonical_trajectories_are_checked_against_the_bench(tmp_path: Path) -> None:
    from eebench.adapters import ConvertOptions, convert_files
    from eebench.adapters.convert import KnownInstances
    from eebench.errors import InputError
    from eebench.evaluator.grade import Bench
    bench = Bench(corridor(tmp_path))
    given = write_jsonl(tmp_path / "t.jsonl", [{"eebench": "trajectory/1", "id": "a", "instance": INSTANCE,
                                                "steps": [{"action": "right"}]}])
    out = tmp_path / "o.jsonl"
    convert_files([given], "auto", out, ConvertOptions(known=KnownInstances(bench)))
    [trajectory] = lines(out)
    assert len(trajectory["instance_sha256"]) == 64 and trajectory["steps"] == [{"action": "right"}]
    other = write_jsonl(tmp_path / "u.jsonl", [{"eebench": "trajectory/1", "id": "a", "instance": "test/elsewhere",
                                                "steps": []}])
    with pytest.raises(InputError, match=r"u\.jsonl:1: instance: instance 'test/elsewhere' is not in .*bench"):
        convert_files([other], "auto", out, ConvertOptions(known=KnownInstances(bench)))


@given(st.text(max_size=40), st.sampled_from(["up", "down", "left", "right"]))
def test_a_user_pattern_that_does_not_match_changes_nothing(prose: str, move: str) -> None:
    from eebench.adapters.actions import ActionReader
    text = f"{prose}\n<action>{move}</action>"
    plain = ActionReader("grid").from_text(text)
    with_pattern = ActionReader("grid", re.compile(r"MOVE=(\w+)")).from_text(text)
    assert with_pattern == plain or "MOVE=" in text


def test_grade_progress_counts_trajectories_and_steps(tmp_path: Path) -> None:
    from eebench.evaluator import grade_files
    from eebench.evaluator.grade import Bench
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        {"eebench": "trajectory/1", "id": str(i), "instance": INSTANCE, "steps": [{"action": "right"}] * (i + 1)}
        for i in range(3)])
    told: list[tuple[int, int]] = []
    report = grade_files([runs], Bench(corridor(tmp_path)), tmp_path / "r.duckdb",
                         progress=lambda records, steps: told.append((records, steps)))
    assert (sum(r for r, _ in told), sum(s for _, s in told)) == (3, 6) == (report.trajectories, report.steps)


def test_a_missing_instance_field_suggests_the_close_key(cli, tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "chat.jsonl", [chat_episode(INSTANCE, ["up"])])
    result = cli("convert", log, "--instance-field", "task", "--out", tmp_path / "o.jsonl", code=2)
    assert result.stderr == (f"error: {log}:1: --instance-field task: no such field in this record "
                             "(did you mean 'task_id'?)\n")


def test_grade_on_a_text_log_suggests_convert_at_its_first_line_only(cli, tmp_path: Path) -> None:
    bench = corridor(tmp_path)
    log = tmp_path / "react.txt"
    log.write_text("Thought: go right\nAction: right\n")
    stderr = cli("grade", log, "--bench", bench, "--db", tmp_path / "r.duckdb", code=2).stderr
    assert stderr == (f"error: {log}:1: malformed JSON: Expecting value (column 1) (an agent's log? `eebench "
                      "convert` makes trajectories from it)\n")
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps({"eebench": "trajectory/1", "id": "a", "instance": INSTANCE, "steps": []}) + "\n{\n")
    stderr = cli("grade", cut, "--bench", bench, "--db", tmp_path / "r.duckdb", code=2).stderr
    assert "eebench convert" not in stderr and stderr.startswith(f"error: {cut}:2: malformed JSON")


@pytest.mark.parametrize(("head", "suffix"), [
    (b'{"a": 1}\n{"a": 2}\n', ".jsonl"), (b'{"a": 1}\n', ".json"), (b'{\n  "a": 1\n}\n', ".json"),
    (b'  [{"role": "user"}]', ".json"), (b"Thought: hm\nAction: up\n", ".txt"), (b"", ".txt"),
    (b"PK\x03\x04\x14\x00", ".eval"),
])
def test_standard_input_is_named_by_its_content(head: bytes, suffix: str) -> None:
    from eebench.adapters.convert import _suffix_for
    assert _suffix_for(head) == suffix


def test_an_inspect_eval_archive_on_standard_input_is_detected(cli, agent_logs: Path) -> None:
    # a zip on standard input was named `.txt`, so `--from auto` said no adapter recognizes it
    log = (agent_logs / "inspect_ai/log_message_deduplication.eval").read_bytes()
    result = cli("convert", "-", "--out", "-", input=log)
    [trajectory] = [json.loads(line) for line in result.stdout.splitlines()]
    assert trajectory["source"]["format"] == "inspect" and trajectory["source"]["file"] == "-"
    assert len(trajectory["steps"]) == 6
