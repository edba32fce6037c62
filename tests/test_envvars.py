"""Every option of every command reads EEBENCH_<COMMAND>_<OPTION> (its long name, upper case, dashes as
underscores), as the README promises; the internal parameter names do not count."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from eebench.cli import main
from tests.conftest import instance_doc, write_json, write_jsonl

INSTANCE = instance_doc(["...."], [0, 0], [("A", [2, 0], []), ("G", [3, 0], [["A"]])], "G", budget=12,
                        instance_id="test/corridor")
RUN = {"eebench": "trajectory/1", "id": "r", "instance": "test/corridor", "steps": [{"action": "right"}] * 3}


def run(cli, env: dict[str, str], *args: object, code: int = 0) -> click.testing.Result:
    result = cli.runner.invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def test_every_option_of_every_command_has_its_documented_name() -> None:
    for name, command in main.commands.items():
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            long = next(o for o in param.opts if o.startswith("--"))[2:]
            assert param.envvar == f"EEBENCH_{name}_{long}".upper().replace("-", "_"), (name, param.opts)


@pytest.mark.parametrize("name", ["EEBENCH_QUERY_FMT", "EEBENCH_CONVERT_FMT"])
def test_parameter_names_are_not_read(cli, tmp_path: Path, name: str) -> None:
    """The names click would derive from Python parameters (`fmt`) are not the documented ones: ignored."""
    bench = write_json(tmp_path / "bench" / "c.json", INSTANCE).parent
    runs = write_jsonl(tmp_path / "runs.jsonl", [RUN])
    db = tmp_path / "r.duckdb"
    run(cli, {}, "grade", runs, "--bench", bench, "--db", db)
    out = run(cli, {name: "csv"}, "query", "SELECT 1 AS one", "--db", db).stdout
    assert "one" in out and not out.startswith("one\n1")


@pytest.fixture
def graded(cli, tmp_path: Path) -> tuple[Path, Path, Path]:
    bench = write_json(tmp_path / "bench" / "c.json", INSTANCE).parent
    runs = write_jsonl(tmp_path / "runs.jsonl", [RUN])
    db = tmp_path / "r.duckdb"
    run(cli, {"EEBENCH_GRADE_DB": str(db)}, "grade", runs, "--bench", bench)   # grade: --db
    return bench, runs, db


def test_grade_and_query(cli, graded: tuple[Path, Path, Path]) -> None:
    _, _, db = graded
    out = run(cli, {"EEBENCH_QUERY_FORMAT": "csv", "EEBENCH_QUERY_DB": str(db)}, "query",
              "SELECT success FROM trajectories").stdout
    assert out.splitlines()[0] == "success" and len(out.splitlines()) == 2   # csv: a header and one row


def test_convert_from(cli, tmp_path: Path) -> None:
    moves = tmp_path / "moves.json"
    moves.write_text('["up", "down"]')
    out = tmp_path / "o.jsonl"
    run(cli, {"EEBENCH_CONVERT_FROM": "actions", "EEBENCH_CONVERT_INSTANCE": "test/corridor"}, "convert", moves,
        "--out", out)
    assert json.loads(out.read_text())["source"]["format"] == "actions"
    refused = run(cli, {"EEBENCH_CONVERT_FROM": "nope"}, "convert", moves, "--out", out, code=2)
    assert "--from: unknown format 'nope'" in refused.stderr


def test_formats_format(cli) -> None:
    assert "formats" in json.loads(run(cli, {"EEBENCH_FORMATS_FORMAT": "json"}, "formats").stdout)


def test_generate_seeds(cli, tmp_path: Path) -> None:
    run(cli, {"EEBENCH_GENERATE_SEEDS": "3", "EEBENCH_GENERATE_OUT": str(tmp_path / "g")}, "generate", "high-small")
    assert (tmp_path / "g" / "high-small" / "seed-3.json").is_file()


def test_show_bench(cli, graded: tuple[Path, Path, Path]) -> None:
    bench, _, _ = graded
    assert "test/corridor" in run(cli, {"EEBENCH_SHOW_BENCH": str(bench)}, "show", "test/corridor").stdout


def test_play_agent(cli, graded: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bench, _, _ = graded
    out = tmp_path / "p.jsonl"
    run(cli, {"EEBENCH_PLAY_AGENT": "oracle", "EEBENCH_PLAY_OUT": str(out)}, "play", bench)
    assert json.loads(out.read_text())["agent"]["name"] == "oracle"


def test_publish_version(cli, tmp_path: Path) -> None:
    refused = run(cli, {"EEBENCH_PUBLISH_VERSION": "one"}, "publish", "park2026-main", "--out", tmp_path / "b",
                  code=2)
    assert "'one'" in refused.stderr


def test_verify_digest(cli, tmp_path: Path) -> None:
    suite = tmp_path / "one.yaml"
    suite.write_text("eebench: suite/1\nname: one\nmembers:\n  - {presets: [high-small], seeds: [0]}\n")
    run(cli, {}, "publish", suite, "--version", "1.0.0", "--out", tmp_path / "b")
    refused = run(cli, {"EEBENCH_VERIFY_DIGEST": "sha256:" + "0" * 64}, "verify", tmp_path / "b", code=2)
    assert "0" * 12 in refused.stderr


def test_prompt_step(cli, graded: tuple[Path, Path, Path]) -> None:
    bench, runs, _ = graded
    out = run(cli, {"EEBENCH_PROMPT_STEP": "2", "EEBENCH_PROMPT_TRAJECTORY": str(runs)}, "prompt",
              "test/corridor", "--bench", bench).stdout
    assert "Step 2 of 12.\nYou moved right. You are at [2, 0]." in out


def test_a_flag_from_the_environment(cli, graded: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bench, _, _ = graded
    runs = write_jsonl(tmp_path / "mixed.jsonl", [RUN, {**RUN, "id": "bad", "instance": "nope"}])
    result = run(cli, {"EEBENCH_GRADE_SKIP_INVALID": "1"}, "grade", runs, "--bench", bench, "--db",
                 tmp_path / "m.duckdb")
    assert "graded 1 trajectories" in result.stdout and "skipped 1" in result.stdout


def test_a_bad_value_from_a_variable_names_the_variable(cli, tmp_path: Path) -> None:
    """The user typed no option: the message says which variable gave the value; a typed option stays as it was."""
    db = tmp_path / "missing.duckdb"
    given = run(cli, {"EEBENCH_QUERY_FORMAT": "xml"}, "query", "SELECT 1", "--db", db, code=2)
    assert given.stderr.startswith("error: Invalid value for '--format' (from EEBENCH_QUERY_FORMAT): 'xml' is not ")
    typed = run(cli, {}, "query", "SELECT 1", "--db", db, "--format", "xml", code=2)
    assert typed.stderr.startswith("error: Invalid value for '--format': 'xml' is not ")


def test_a_problem_with_an_option_a_variable_set_names_the_variable(cli, tmp_path: Path) -> None:
    """The user typed no option: `--seed and --seeds: give one of them` named only options."""
    refused = run(cli, {"EEBENCH_PLAY_SEEDS": "0-1"}, "play", "low-small", "--agent", "random", "--seed", "2",
                  "--out", tmp_path / "p.jsonl", code=2)
    assert refused.stderr == ("error: --seed and --seeds: give one of them (--seed N is --seeds N) (--seeds came from "
                              "EEBENCH_PLAY_SEEDS)\n")
    moves = tmp_path / "moves.json"
    moves.write_text('["up", "down"]')
    refused = run(cli, {"EEBENCH_CONVERT_FROM": "nope"}, "convert", moves, "--out", tmp_path / "o.jsonl", code=2)
    assert refused.stderr.endswith("(--from came from EEBENCH_CONVERT_FROM)\n")
    refused = run(cli, {}, "play", "low-small", "--agent", "random", "--seed", "2", "--seeds", "0-1",
                  "--out", tmp_path / "p.jsonl", code=2)
    assert "came from" not in refused.stderr   # (typed: no variable to name, none left from the run before)


def test_a_problem_with_the_file_or_value_a_variable_gave_names_the_variable(cli, graded: tuple[Path, Path, Path],
                                                                             tmp_path: Path) -> None:
    """Messages that name the file or the value, not the option (`r.duckdb: no such database (did you mean ...)`),
    and usage errors a command raises (`--address ... go with --engine ray`), left the variable unnamed."""
    bench, runs, db = graded
    refused = run(cli, {"EEBENCH_QUERY_DB": str(tmp_path / "r.duckd")}, "query", "SELECT 1", code=2)
    assert refused.stderr.endswith(f"(did you mean {str(db)!r}?) (--db came from EEBENCH_QUERY_DB)\n")
    refused = run(cli, {"EEBENCH_PROMPT_TRAJECTORY_ID": "nope"}, "prompt", "test/corridor", "--bench", bench,
                  "--trajectory", runs, "--step", "1", code=2)
    assert "trajectory 'nope' is not one played" in refused.stderr
    assert refused.stderr.endswith("(--trajectory-id came from EEBENCH_PROMPT_TRAJECTORY_ID)\n")
    refused = run(cli, {"EEBENCH_GRADE_ADDRESS": "ray://x:1"}, "grade", runs, "--bench", bench, "--db", db, code=2)
    assert refused.stderr == ("error: --address, --cpus and --out go with --engine ray (--address came from "
                              "EEBENCH_GRADE_ADDRESS); see `eebench grade --help`\n")
    refused = run(cli, {"EEBENCH_PROMPT_VARIANT": "nope"}, "prompt", "test/corridor", "--bench", bench, code=2)
    assert refused.stderr.count("EEBENCH_PROMPT_VARIANT") == 1   # (click's own hint names it already: once)


def test_a_variable_giving_standard_output_is_not_blamed_for_the_standard_input(cli) -> None:
    """`-` names no file: a problem of the input `-` was told `--out came from EEBENCH_CONVERT_OUT` (its `-`)."""
    refused = cli.runner.invoke(main, ["convert", "-", "--from", "openai-chat", "--instance", "x"], input="{bad\n",
                                env={"EEBENCH_CONVERT_OUT": "-"}, catch_exceptions=False)
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: -:1: ")
    assert "came from" not in refused.stderr


def test_a_repeatable_option_takes_several_values_as_the_readme_says(cli, graded: tuple[Path, Path, Path],
                                                                     tmp_path: Path) -> None:
    """Paths separated by ':' (grade --checkpoints, report --bench), other values by spaces (export --table)."""
    _, _, db = graded
    run(cli, {"EEBENCH_EXPORT_TABLE": "agent_summary steps"}, "export", "--db", db, "--out", tmp_path / "e")
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == ["agent_summary.parquet", "export.json",
                                                                   "steps.parquet"]
    refused = run(cli, {"EEBENCH_GRADE_CHECKPOINTS": f"{tmp_path / 'a.yaml'}:{tmp_path / 'b.yaml'}"}, "grade",
                  tmp_path / "runs.jsonl", "--db", tmp_path / "c.duckdb", code=2)
    assert refused.stderr.startswith(f"error: {tmp_path / 'a.yaml'}: no such file")   # (the first of two paths)


def test_a_variable_of_an_earlier_run_is_not_blamed_in_a_later_one(tmp_path: Path, capsys,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """main(standalone_mode=False) kept the variables noted by the run before: a --db typed was said to come from
    EEBENCH_QUERY_DB."""
    db = str(tmp_path / "nope.duckdb")
    monkeypatch.setenv("EEBENCH_QUERY_DB", db)
    assert main.main(["query", "SELECT 1"], standalone_mode=False) == 2
    assert capsys.readouterr().err.endswith("(--db came from EEBENCH_QUERY_DB)\n")
    monkeypatch.delenv("EEBENCH_QUERY_DB")
    assert main.main(["query", "SELECT 1", "--db", db], standalone_mode=False) == 2
    assert "came from" not in capsys.readouterr().err
