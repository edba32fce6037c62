"""`eebench grade` and `eebench query`: DuckDB contents, replacement, atomicity, bad input, read-only SQL."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import duckdb
import pytest

from eebench.errors import InputError
from eebench.evaluator import Bench, grade_files
from eebench.evaluator.families import registered
from eebench.evaluator.store import (CHECKPOINT_COLUMNS, EPISODE_COLUMNS, SCHEMA_VERSION, STEP_COLUMNS,
                                    TRAJECTORY_COLUMNS, VIEWS, ResultStore)
from eebench.instances import write_instances
from tests.conftest import instance_doc, make_instance, rows, write_json, write_jsonl

ROOT = Path(__file__).resolve().parents[2]

# x: 0 1 2 3 4 5 6  -- P at the left end, the goal G at the right end needs P; the start in the middle
CORRIDOR = dict(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])],
                goal="G", budget=30)
SOLVE = ["left"] * 3 + ["right"] * 6


def trajectory(traj_id: str, actions: list, instance: str = "t/corridor", **extra) -> dict:
    return {"eebench": "trajectory/1", "id": traj_id, "instance": instance,
            "agent": {"name": "agent-a", "model": "m1", "prompt": "base", "harness": None},
            "steps": [{"action": a} for a in actions], **extra}


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor"),
                     make_instance(**{**CORRIDOR, "budget": 4}, instance_id="t/short")], folder, {"kind": "test"})
    return folder


def test_grade_writes_the_documented_tables(cli, bench: Path, tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        trajectory("ok", SOLVE + ["up", "up"]),
        trajectory("tokens", ["left", "bogus"], instance="t/short"),
    ])
    (tmp_path / "runs.jsonl").write_text(
        (tmp_path / "runs.jsonl").read_text().replace('{"action": "bogus"}',
                                                     '{"action": "bogus", "tokens_in": 7, "latency_ms": 1.5}'))
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--bench", bench, "--db", db)
    assert re.match(r"graded 2 trajectories \(11 steps\) into .*r\.duckdb in", result.stdout)
    assert [c[0] for c in rows(db, "DESCRIBE trajectories")] == [c.name for c in TRAJECTORY_COLUMNS]
    assert [c[0] for c in rows(db, "DESCRIBE steps")] == [c.name for c in STEP_COLUMNS]
    assert sorted(rows(db, "SELECT key, value FROM meta")) == [
        ("eebench_version", "0.1.0"), ("metric_version", ",".join(f.version for f in registered())),
        ("schema_version", str(SCHEMA_VERSION))]
    ok = rows(db, "SELECT success, end_reason, n_steps, ignored_actions, invalid_moves, explore_steps, "
                  "exploit_steps, explore_errors, exploit_errors, exploit_error, budget, optimal_steps, "
                  "nodes_achieved, cells_observed, agent_name, model, prompt, harness, tokens_in, source_line "
                  "FROM trajectories WHERE trajectory_id = 'ok'")
    # 3 left (new cells; P achieved), 3 right over observed cells toward the frontier, 3 right into new cells,
    # the last achieving G. G is never seen before it is achieved, so it is never pending: all 9 steps are case
    # 1 and the exploitation rate is NULL (no such step), not 0.
    assert ok == [(True, "goal", 9, 2, 0, 9, 0, 0, 0, None, 30, 9, 2, 7, "agent-a", "m1", "base", None, None, 1)]
    short = rows(db, "SELECT success, end_reason, n_steps, invalid_moves, explore_error, exploit_error, "
                     "tokens_in, tokens_out, latency_ms FROM trajectories WHERE trajectory_id = 'tokens'")
    assert short == [(False, "end_of_log", 2, 1, 0.5, None, 7, None, 1.5)]
    steps = rows(db, "SELECT t, action, from_x, from_y, to_x, to_y, valid, case_id, n_targets, gain, progress, "
                     "stale, error, explore_error, exploit_error FROM steps WHERE trajectory_id = 'tokens' ORDER BY t")
    assert steps == [(0, "left", 3, 0, 2, 0, True, 1, 2, 1, 1, 0, 0, 0, 0),
                     (1, "bogus", 2, 0, 2, 0, False, 1, 2, 0, 0, 0, 1, 1, 0)]
    summary = rows(db, "SELECT agent_name, episodes, successes, success_rate, mean_steps_success "
                       "FROM agent_summary")
    assert summary == [("agent-a", 2, 1, 0.5, 9.0)]
    assert {v for v in VIEWS} <= {r[0] for r in rows(db, "SELECT view_name FROM duckdb_views()")}


def readme_column_tables() -> dict[str, list[tuple[str, str, str]]]:
    """The README's `| column | type | meaning |` rows, by the table named in bold (**`name`**) before them: a
    table's later sections (its new columns of schema 2 and 3) follow its first, in order."""
    tables: dict[str, list[tuple[str, str, str]]] = {}
    lines = (ROOT / "README.md").read_text().splitlines()
    table = None
    for k, line in enumerate(lines):
        named = re.search(r"\*\*`(\w+)`\*\*", line)
        if named and not line.startswith("|"):
            table = named.group(1)
        if line.startswith("| column | type | meaning |"):
            for row in lines[k + 2:]:
                if not row.startswith("| `"):
                    break
                cells = [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
                assert len(cells) == 3, row   # (a bare | in a meaning would cut the row: write it \|)
                tables.setdefault(table, []).append((cells[0], cells[1], cells[2]))
    return tables


@pytest.mark.parametrize("table, columns", [("trajectories", TRAJECTORY_COLUMNS), ("steps", STEP_COLUMNS),
                                            ("episodes", EPISODE_COLUMNS), ("checkpoints", CHECKPOINT_COLUMNS)])
def test_the_readme_documents_every_column_as_the_store_defines_it(table: str, columns: tuple) -> None:
    """Name, order, type, nullability and meaning: the README's tables are the store's definitions, word for word."""
    def shown(column: Any) -> tuple[str, str, str]:
        kind = column.type.split(" NOT NULL")[0]
        return f"`{column.name}`", kind if "NOT NULL" in column.type else f"{kind} (nullable)", column.doc
    assert readme_column_tables()[table] == [shown(column) for column in columns]


def test_every_view_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for view in VIEWS:
        assert f"`{view}`" in readme, view


def test_regrading_replaces_rows(cli, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    first = write_jsonl(tmp_path / "a.jsonl", [trajectory("x", ["left"] * 5), trajectory("y", SOLVE)])
    cli("grade", first, "--bench", bench, "--db", db)
    again = write_jsonl(tmp_path / "b.jsonl", [trajectory("x", ["right"] * 2)])
    cli("grade", again, "--bench", bench, "--db", db)
    assert rows(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1") == [("x", 2), ("y", 9)]
    assert rows(db, "SELECT trajectory_id, count(*) FROM steps GROUP BY 1 ORDER BY 1") == [("x", 2), ("y", 9)]


def test_a_failing_run_writes_nothing(cli, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory("x", SOLVE)]), "--bench", bench, "--db", db)
    before = db.read_bytes()
    bad = write_jsonl(tmp_path / "b.jsonl", [trajectory("x", ["left"]), trajectory("z", ["up"], instance="nope")])
    result = cli("grade", bad, "--bench", bench, "--db", db, code=2)
    assert result.stderr.startswith(f"error: {bad}:2: instance: no instance 'nope'")
    assert db.read_bytes() == before
    fresh = tmp_path / "fresh.duckdb"
    cli("grade", bad, "--bench", bench, "--db", fresh, code=2)
    assert not fresh.exists()


@pytest.mark.parametrize("line, message", [
    ('{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": [{"action": "up"}',
     r":1: malformed JSON: Expecting ',' delimiter"),
    ('{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": [{"act": "up"}]}',
     r":1: steps\[0\]\.action: missing required field"),
    ('{"eebench": "trajectory/1", "id": "a", "steps": []}', r":1: instance: missing required field"),
    ('{"eebench": "trajectory/9", "id": "a", "instance": "t/corridor", "steps": []}',
     r":1: eebench: trajectory/9 is newer than this eebench reads \(trajectory/1\); upgrade eebench"),
    ('{"eebench": "instance/1", "id": "a"}', r":1: eebench: expected trajectory/1, found instance/1"),
    ('{"eebench": "trajectory/1", "id": "a", "instance": "t/corrido", "steps": []}',
     r":1: instance: no instance 't/corrido' under .*bench \(did you mean 't/corridor'\?\)"),
    ('{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "steps": [{"action": 3}]}',
     r":1: steps\[0\]\.action: expected a string or null, found an integer"),
    ('{"eebench": "trajectory/1", "id": "a", "instance": "t/corridor", "instance_sha256": "' + "0" * 64 +
     '", "steps": []}', r":1: instance_sha256: the log was played in instance 000000000000\.\.\., but 't/corridor'"),
    ('[1, 2]', r":1: expected a trajectory/1 record, found a list \(an agent's log\? `eebench convert`"),
])
def test_bad_input_is_one_line_exit_2(cli, bench: Path, tmp_path: Path, line: str, message: str) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text(line + "\n")
    result = cli("grade", runs, "--bench", bench, "--db", tmp_path / "r.duckdb", code=2)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert re.match(rf"error: {re.escape(str(runs))}{message}", result.stderr), result.stderr
    assert not (tmp_path / "r.duckdb").exists()


def test_non_utf8_line(cli, bench: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(json.dumps(trajectory("a", ["up"])).encode() + b"\n" + b'{"id": "\xff"}\n')
    result = cli("grade", runs, "--bench", bench, "--db", tmp_path / "r.duckdb", code=2)
    assert result.stderr == f"error: {runs}:2: not UTF-8 text (byte 0xff)\n"


def test_matching_instance_sha256_is_accepted(cli, bench: Path, tmp_path: Path) -> None:
    index = json.loads((bench / "index.json").read_text())
    sha = next(e["sha256"] for e in index["instances"] if e["id"] == "t/corridor")
    runs = write_jsonl(tmp_path / "r.jsonl", [trajectory("a", SOLVE, instance_sha256=sha)])
    cli("grade", runs, "--bench", bench, "--db", tmp_path / "r.duckdb")
    assert rows(tmp_path / "r.duckdb", "SELECT instance_sha256 FROM trajectories") == [(sha,)]


def test_skip_invalid_grades_the_rest_and_lists_the_skipped(cli, bench: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join([json.dumps(trajectory("a", SOLVE)), "{not json", json.dumps(trajectory("b", [])),
                               json.dumps(trajectory("a", ["up"])), ""]))
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--bench", bench, "--db", db, "--skip-invalid")
    assert result.stderr.splitlines() == [
        f"skipped: {runs}:2: malformed JSON: Expecting property name enclosed in double quotes (column 2)",
        f"skipped: {runs}:4: id: trajectory id 'a' was already read at {runs}:1; ids must be unique",
    ]
    assert "graded 2 trajectories (9 steps)" in result.stdout and "skipped 2" in result.stdout
    assert rows(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1") == [("a", 9), ("b", 0)]


def test_skip_invalid_lists_every_skipped_record(cli, bench: Path, tmp_path: Path) -> None:
    # past 50 the list ended in "... and 10 more": which records were not graded was then known nowhere
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"x{i}", ["left"], instance="t/none") for i in range(60)]
                       + [trajectory("ok", ["left"])])
    db = tmp_path / "r.duckdb"
    result = cli("grade", runs, "--bench", bench, "--db", db, "--skip-invalid")
    lines = result.stderr.splitlines()
    assert len(lines) == 60 and all(line.startswith(f"skipped: {runs}:{i + 1}: instance: no instance 't/none'")
                                    for i, line in enumerate(lines)), lines[-2:]
    assert "skipped 60" in result.stdout
    assert rows(db, "SELECT trajectory_id FROM trajectories") == [("ok",)]


def test_skipped_copies_leave_their_steps_out_of_a_new_or_an_existing_file(cli, bench: Path, tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE), trajectory("b", ["left"]),
                                                 trajectory("a", ["up"] * 3)])
    old = write_jsonl(tmp_path / "old.jsonl", [trajectory("a", ["right"] * 4), trajectory("c", ["up"])])
    new, existing = tmp_path / "new.duckdb", tmp_path / "existing.duckdb"
    cli("grade", old, "--bench", bench, "--db", existing)
    steps = "SELECT trajectory_id, count(*), min(action), max(t) FROM steps GROUP BY 1 ORDER BY 1"
    for db, before in ((new, []), (existing, [("c", 1, "up", 0)])):
        cli("grade", runs, "--bench", bench, "--db", db, "--skip-invalid")
        assert rows(db, steps) == sorted([("a", 9, "left", 8), ("b", 1, "left", 0), *before])
        assert rows(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1") == \
            sorted([("a", 9), ("b", 1), *[(i, 1) for i, *_ in before]])
    # the run is built next to the results file, and nothing of it is left there, whether it succeeds or fails
    bad = write_jsonl(tmp_path / "bad.jsonl", [trajectory("x", ["up"]), trajectory("y", ["up"], instance="nope")])
    cli("grade", bad, "--bench", bench, "--db", tmp_path / "failed.duckdb", code=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "bench", "existing.duckdb", "new.duckdb",
                                                          "old.jsonl", "runs.jsonl"]
    missing = tmp_path / "no" / "r.duckdb"
    result = cli("grade", runs, "--bench", bench, "--db", missing, code=2)
    assert result.stderr == f"error: {missing}: cannot write: No such file or directory\n"


@pytest.mark.parametrize("when", ["while grading", "just before the run's file is put in place"])
def test_a_results_file_made_meanwhile_is_added_to_not_replaced(bench: Path, tmp_path: Path, monkeypatch,
                                                                 when: str) -> None:
    db = tmp_path / "r.duckdb"
    ours = write_jsonl(tmp_path / "a.jsonl", [trajectory("a", SOLVE)])
    theirs = write_jsonl(tmp_path / "b.jsonl", [trajectory("b", ["left"])])
    made: list[bool] = []

    def other_run(*_: object) -> None:
        if not made:  # once (the other run passes here too)
            made.append(True)
            grade_files([theirs], Bench(bench), db)

    if when == "while grading":
        grade_files([ours], Bench(bench), db, progress=other_run)
    else:
        finish = ResultStore._finish_as_results

        def finish_then_other_run(store: ResultStore) -> None:
            finish(store)
            other_run()

        monkeypatch.setattr(ResultStore, "_finish_as_results", finish_then_other_run)
        grade_files([ours], Bench(bench), db)
    assert made
    assert rows(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1") == [("a", 9), ("b", 1)]
    assert rows(db, "SELECT trajectory_id, count(*) FROM steps GROUP BY 1 ORDER BY 1") == [("a", 9), ("b", 1)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "bench", "r.duckdb"]


def test_duplicate_ids_and_files(cli, bench: Path, tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [trajectory("same", ["up"])])
    b = write_jsonl(tmp_path / "b.jsonl", [trajectory("same", ["down"])])
    result = cli("grade", a, b, "--bench", bench, "--db", tmp_path / "r.duckdb", code=2)
    assert result.stderr == f"error: {b}:1: id: trajectory id 'same' was already read at {a}:1; ids must be unique\n"
    result = cli("grade", a, a, "--bench", bench, "--db", tmp_path / "r.duckdb", code=2)
    assert result.stderr == f"error: {a}: is given twice (also as {a})\n"
    # standard input twice: the second read a closed stream, a traceback
    result = cli("grade", "-", "-", "--bench", bench, "--db", tmp_path / "r.duckdb", code=2, input=a.read_text())
    assert result.stderr == "error: `-` (standard input) is given more than once\n"
    assert not (tmp_path / "r.duckdb").exists()


def test_a_newer_results_schema_is_refused(cli, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    runs = write_jsonl(tmp_path / "r.jsonl", [trajectory("a", SOLVE)])
    cli("grade", runs, "--bench", bench, "--db", db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    result = cli("grade", runs, "--bench", bench, "--db", db, code=2)
    assert result.stderr == (f"error: {db}: results schema version 99 is newer than this eebench writes "
                             f"({SCHEMA_VERSION}); "
                             "upgrade eebench\n")
    not_db = tmp_path / "notes.txt"
    not_db.write_text("hello")
    result = cli("grade", runs, "--bench", bench, "--db", not_db, code=2)
    assert result.stderr == (f"error: Invalid value for '--db': {not_db} is not a DuckDB database file (a results "
                             "file is one `eebench grade --db` wrote); see `eebench grade --help`\n")
    for command in (["query", "SELECT 1"], ["report", "--out", tmp_path / "r.html"]):   # (DuckDB spoke of an
        result = cli(*command, "--db", runs, code=2)                                  # in-memory database)
        assert f"{runs} is not a DuckDB database file" in result.stderr


def test_query_formats_and_read_only(cli, bench: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "r.jsonl", [trajectory("a", SOLVE)]), "--bench", bench, "--db", db)
    sql = "SELECT trajectory_id, success, n_steps, explore_error FROM trajectories"
    assert cli("query", sql, "--db", db).stdout.splitlines() == [
        "trajectory_id  success  n_steps  explore_error", "-------------  -------  -------  -------------",
        "a              True           9              0", "(1 row)"]
    assert cli("query", sql, "--db", db, "--format", "csv").stdout == \
        "trajectory_id,success,n_steps,explore_error\na,true,9,0.0\n"
    assert json.loads(cli("query", sql, "--db", db, "--format", "json").stdout) == [
        {"trajectory_id": "a", "success": True, "n_steps": 9, "explore_error": 0.0}]
    before = db.read_bytes()
    for statement, kind in [("DELETE FROM steps", "DELETE"), (f"COPY steps TO '{tmp_path / 'x.csv'}'", "COPY"),
                            ("ATTACH 'other.duckdb'", "ATTACH"), ("SELECT 1; DROP TABLE steps", "DROP"),
                            ("CREATE TABLE x (a INT)", "CREATE")]:
        result = cli("query", statement, "--db", db, code=2)
        assert result.stderr.startswith("error: SQL: ") and result.stderr.count("\n") == 1, kind  # tests/test_query.py
    assert db.read_bytes() == before and not (tmp_path / "x.csv").exists()
    assert cli("query", "SELEC 1", "--db", db, code=2).stderr.startswith("error: SQL: Parser Error")
    assert cli("query", "SELECT nope FROM steps", "--db", db, code=2).stderr.startswith("error: SQL: Binder Error")
    missing = tmp_path / "missing.duckdb"
    assert cli("query", "SELECT 1", "--db", missing, code=2).stderr == \
        f"error: {missing}: no such database (run `eebench grade ... --db` first)\n"


# -- grading against a published bundle ---------------------------------------------------------------

@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """The corridor instances published as the bundle 't 1.0.0' (ids t/corridor, t/short)."""
    specs = tmp_path / "specs"
    write_json(specs / "corridor.json", instance_doc(**CORRIDOR))
    write_json(specs / "short.json", instance_doc(**{**CORRIDOR, "budget": 4}))
    (specs / "t.yaml").write_text("eebench: suite/1\nname: t\nmembers:\n  - {instance: corridor.json}\n"
                                  "  - {instance: short.json}\n", "utf-8")
    return specs / "t.yaml"


@pytest.mark.parametrize("out", ["b", "b.tar.gz", "b.zip"])
def test_grade_against_a_bundle_records_its_name_version_and_digest(cli, bundle: Path, bench: Path, tmp_path: Path,
                                                                     out: str) -> None:
    digest = cli("publish", bundle, "--version", "1.0.0", "--out", tmp_path / out).stdout.split()[-1]
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE), trajectory("b", ["up"], instance="t/short")])
    cli("grade", runs, "--bench", tmp_path / out, "--db", tmp_path / "r.duckdb")
    assert rows(tmp_path / "r.duckdb", "SELECT trajectory_id, bench_name, bench_version, bench_digest, success "
                                       "FROM trajectories ORDER BY 1") == [("a", "t", "1.0.0", digest, True),
                                                                           ("b", "t", "1.0.0", digest, False)]
    cli("grade", runs, "--bench", bench, "--db", tmp_path / "r.duckdb")  # a plain folder: no bundle to name
    assert rows(tmp_path / "r.duckdb", "SELECT DISTINCT bench_name, bench_version, bench_digest "
                                       "FROM trajectories") == [(None, None, None)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["bench", "specs", out, "runs.jsonl", "r.duckdb"])


def test_grade_refuses_a_tampered_bundle_and_writes_nothing(cli, bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    cli("publish", bundle, "--version", "1.0.0", "--out", out)
    card = out / "README.md"
    card.write_bytes(card.read_bytes().replace(b"frozen", b"Frozen", 1))
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE)])
    result = cli("grade", runs, "--bench", out, "--db", tmp_path / "r.duckdb", code=2)
    assert re.fullmatch(rf"error: {re.escape(str(card))}: changed \(sha256 [0-9a-f]{{12}}\.\.\., manifest\.json lists "
                        rf"[0-9a-f]{{12}}\.\.\.\)\nerror: {re.escape(str(out))}: verification failed \(1 problem\)\n",
                        result.stderr)
    assert not (tmp_path / "r.duckdb").exists()


def test_grade_names_the_bundle_when_an_instance_differs_or_is_missing(cli, bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.zip"
    cli("publish", bundle, "--version", "1.0.0", "--out", out)
    with zipfile.ZipFile(out) as archive:
        sha = json.loads(archive.read("manifest.json"))["instances"][0]["sha256"]
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE, instance_sha256="f" * 64)])
    assert_one_error(cli("grade", runs, "--bench", out, "--db", tmp_path / "r.duckdb", code=2),
                     f"{runs}:1: instance_sha256: the log was played in instance ffffffffffff..., but 't/corridor' in "
                     f"bundle t 1.0.0 ({out}) is {sha[:12]}...; grade against the same instance (--bench the version it "
                     "was played in)")
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE, instance="t/corridr", instance_sha256=sha)])
    assert_one_error(cli("grade", runs, "--bench", out, "--db", tmp_path / "r.duckdb", code=2),
                     f"{runs}:1: instance: no instance 't/corridr' in bundle t 1.0.0 ({out}) (did you mean "
                     "'t/corridor'?); give --bench the instances it was played in (or `eebench convert --instance "
                     "ID`)")
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE, instance_sha256=sha)])
    cli("grade", runs, "--bench", out, "--db", tmp_path / "r.duckdb")
    assert rows(tmp_path / "r.duckdb", "SELECT instance_sha256, bench_name FROM trajectories") == [(sha, "t")]


def test_grade_from_an_archive_bundle(cli, bundle: Path, tmp_path: Path) -> None:
    cli("publish", bundle, "--version", "1.0.0", "--out", tmp_path / "b.tar.gz")
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"r{i}", SOLVE[:i]) for i in range(300)])
    cli("grade", runs, "--bench", tmp_path / "b.tar.gz", "--db", tmp_path / "r.duckdb")
    assert rows(tmp_path / "r.duckdb", "SELECT count(*), count(DISTINCT bench_digest), sum(success::INT) "
                                       "FROM trajectories") == [(300, 1, 291)]  # SOLVE[:i] solves from i = 9


def assert_one_error(result, line: str) -> None:
    assert result.stderr == f"error: {line}\n"


def test_a_foreign_results_file_is_refused_before_grading(cli, bench: Path, tmp_path: Path) -> None:
    traj = write_jsonl(tmp_path / "t.jsonl", [trajectory("x", ["left"])])
    cases = {"meta-other-columns": "CREATE TABLE meta (id INTEGER, note VARCHAR)",
             "meta-no-version": "CREATE TABLE meta (key VARCHAR, value VARCHAR); INSERT INTO meta VALUES ('owner', 'me')",
             "foreign-trajectories": "CREATE TABLE trajectories (x INTEGER)",
             # a name eebench's results use, in a file of other tables: refused before grading (a view was
             # replaced silently; a table made the grade fail once done, in DuckDB's words)
             "foreign-episodes": "CREATE TABLE episodes (x INTEGER)",
             "foreign-view": "CREATE TABLE notes (n VARCHAR); CREATE VIEW agent_summary AS SELECT * FROM notes",
             "foreign-storage": "CREATE SCHEMA storage; CREATE TABLE storage.actions (a VARCHAR)",
             "foreign-other-case": 'CREATE TABLE "Episodes" (x INTEGER)',   # (DuckDB's names ignore case)
             "foreign-schema-case": 'CREATE SCHEMA "Storage"'}
    for name, sql in cases.items():
        db = tmp_path / f"{name}.duckdb"
        con = duckdb.connect(str(db))
        con.execute(sql)
        con.close()
        result = cli("grade", traj, "--bench", bench, "--db", db, code=2)
        assert result.stderr.startswith(f"error: {db}: is not an eebench results file: "), result.stderr
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE notes (n VARCHAR)")
    con.close()
    cli("grade", traj, "--bench", bench, "--db", other)   # other tables are left alone; ours go beside them
    assert rows(other, "SELECT count(*) FROM notes") == [(0,)]
    assert rows(other, "SELECT trajectory_id FROM trajectories") == [("x",)]


def test_a_meta_schema_version_that_is_no_number_is_named(cli, bench: Path, tmp_path: Path) -> None:
    # it was said to name no schema_version at all, sending the user to look for a row that is there
    traj = write_jsonl(tmp_path / "t.jsonl", [trajectory("x", ["left"])])
    db = tmp_path / "r.duckdb"
    cli("grade", traj, "--bench", bench, "--db", db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE meta SET value = 'four' WHERE key = 'schema_version'")
    con.close()
    before = db.read_bytes()
    result = cli("grade", traj, "--bench", bench, "--db", db, code=2)
    assert_one_error(result, f"{db}: is not an eebench results file: its meta schema_version is 'four', not a "
                             "version number; grade into another --db")
    assert db.read_bytes() == before


def test_a_reader_at_commit_time_is_waited_for(cli, bench: Path, tmp_path: Path, monkeypatch) -> None:
    from eebench.evaluator import store
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory("x", ["left"])]), "--bench", bench, "--db", db)
    attempts = []
    real_connect = store._connect

    def busy_then_free(path, **kwargs):
        if not kwargs.get("read_only") and Path(path) == db and len(attempts) < 3:
            attempts.append(path)
            raise InputError.at(str(path), "cannot open as a DuckDB database: IO Error: Could not set lock on file")
        return real_connect(path, **kwargs)

    monkeypatch.setattr(store, "_connect", busy_then_free)
    cli("grade", write_jsonl(tmp_path / "b.jsonl", [trajectory("y", ["left"])]), "--bench", bench, "--db", db)
    assert len(attempts) == 3
    assert rows(db, "SELECT trajectory_id FROM trajectories ORDER BY 1") == [("x",), ("y",)]
    monkeypatch.setattr(store, "LOCK_WAIT_SECONDS", 0)
    attempts.clear()
    result = cli("grade", write_jsonl(tmp_path / "c.jsonl", [trajectory("z", ["left"])]), "--bench", bench,
                 "--db", db, code=2)
    assert result.stderr == f"error: {db}: is in use by another process (waited 0 s for its lock); close it and " \
                            "grade again\n"


def test_a_grader_holds_at_most_its_cache_size_of_tables_and_grades_alike(tmp_path: Path) -> None:
    import datetime as dt

    from eebench.evaluator.grade import Grader
    from eebench.trajectories import parse_record, read_raw_records

    budgets = (30, 4, 12, 7)   # four instances, graded in turns: each comes back after the others evicted it
    write_instances([make_instance(**{**CORRIDOR, "budget": b}, instance_id=f"t/b{b}") for b in budgets],
                    tmp_path / "bench", {"kind": "test"})
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"r{k}", SOLVE[:k % 9 + 1], instance=f"t/b{b}")
                                                 for k in range(12) for b in budgets])
    records = [parse_record(r) for r in read_raw_records(runs)]
    when = dt.datetime(2026, 1, 1)
    roomy, tight = Grader(Bench(tmp_path / "bench"), when), Grader(Bench(tmp_path / "bench"), when, cache_size=3)
    batches = []
    for grader in (roomy, tight):
        batches.append(grader.grade_chunk(records, skip_invalid=False)[0].trajectories)
    assert batches[0] == batches[1] and len(batches[0]["trajectory_id"]) == len(records)
    assert batches[0]["optimal_steps"][:4] == [9, 9, 9, 9] and batches[0]["budget"][:4] == list(budgets)
    families = len(roomy.families("grid_dag"))   # (the Park family and coverage: 2 tables an instance)
    assert len(roomy._graded_in) == len(budgets) and roomy._tables_held == families * len(budgets)
    assert tight._tables_held <= 3 and len(tight._graded_in) == 3 // families
