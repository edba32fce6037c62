"""`eebench query`: read-only enforced by DuckDB against every escape, streamed rows, --timeout, whole messages."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.evaluator import query, query_rows
from eebench.evaluator.store import FETCH_ROWS, duckdb_message
from eebench.output import format_rows, stream_rows
from tests.evaluator.test_store import SOLVE, bench, trajectory  # noqa: F401  (bench: a fixture)
from tests.conftest import write_jsonl

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(cli, bench: Path, tmp_path: Path) -> Path:
    results = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE), trajectory("b", ["up", "left"])]),
        "--bench", bench, "--db", results)
    return results


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_documented_examples_run(cli, db: Path) -> None:
    out = cli("query", "SELECT agent_name, episodes, successes, success_rate, mean_steps_over_optimal, "
                       "invalid_move_rate FROM agent_summary", "--db", db, "--format", "json").stdout
    # a: 9 steps, optimal 9, success; b: "up" is off the map (invalid), "left" valid: 1 invalid in 2 steps
    assert json.loads(out) == [{"agent_name": "a", "episodes": 2, "successes": 1, "success_rate": 0.5,
                                "mean_steps_over_optimal": 1.0, "invalid_move_rate": 0.25}]
    out = cli("query", "SELECT case_id, count(*) AS steps FROM steps GROUP BY ALL ORDER BY 1", "--db", db).stdout
    assert out == "case_id  steps\n-------  -----\n      1     11\n(1 row)\n"
    assert cli("query", "SELECT 1 AS x; SELECT 2 AS y", "--db", db, "--format", "csv").stdout == "y\n2\n"


ESCAPES = {
    "COPY TO a file": "COPY trajectories TO '{dir}/leak.csv'",
    "COPY over the results file": "COPY trajectories TO '{db}' (FORMAT csv)",
    "EXPLAIN ANALYZE COPY": "EXPLAIN ANALYZE COPY trajectories TO '{dir}/leak2.csv'",
    "EXPORT DATABASE": "EXPORT DATABASE '{dir}/dump'",
    "ATTACH a new file": "ATTACH '{dir}/other.duckdb' AS other",
    "ATTACH another file read-only": "ATTACH '{dir}/other.duckdb' AS other (READ_ONLY)",
    "ATTACH in memory": "ATTACH ':memory:' AS scratch",
    "INSTALL": "INSTALL sqlite",
    "LOAD": "LOAD sqlite",
    "an extension autoloaded": "SELECT * FROM sqlite_scan('{dir}/x.db', 't')",
    "SET": "SET enable_external_access = true",
    "SET memory": "SET memory_limit = '100GB'",
    "RESET": "RESET threads",
    "PRAGMA": "PRAGMA threads = 1",
    "read_csv": "SELECT * FROM read_csv('/etc/passwd')",
    "a file as a table": "SELECT * FROM '/etc/passwd'",
    "read_text": "SELECT * FROM read_text('/etc/hostname')",
    "read_blob": "SELECT * FROM read_blob('{dir}/other.duckdb')",
    "glob": "SELECT * FROM glob('/etc/*')",
    "read_parquet": "SELECT * FROM read_parquet('{dir}/*.parquet')",
    "several statements": "SELECT 1; DELETE FROM steps",
    "DELETE": "DELETE FROM trajectories",
    "UPDATE": "UPDATE trajectories SET success = false",
    "DROP": "DROP VIEW agent_summary",
    "CREATE": "CREATE TABLE x AS SELECT 1",
    "INSERT": "INSERT INTO meta VALUES ('k', 'v')",
    "CHECKPOINT then a write": "CHECKPOINT; ALTER TABLE meta ADD COLUMN c INT",
    "a secret stored on disk": "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'k', SECRET 'x')",
}


@pytest.mark.parametrize("name", ESCAPES)
def test_every_escape_is_refused_by_duckdb_and_nothing_is_written(cli, db: Path, tmp_path: Path, name: str) -> None:
    sql = ESCAPES[name].format(dir=tmp_path, db=db)
    other = duckdb.connect(str(tmp_path / "other.duckdb"))
    other.execute("CREATE TABLE secret AS SELECT 'root:x' AS line")
    other.close()
    before = files(tmp_path)
    home = files(Path.home() / ".duckdb") if (Path.home() / ".duckdb").exists() else {}
    result = cli("query", sql, "--db", db, code=2)
    assert result.stderr.startswith("error: SQL: ") and result.stderr.count("\n") == 1, result.stderr
    assert "root:" not in result.stdout + result.stderr   # nothing of /etc/passwd
    assert files(tmp_path) == before
    assert (files(Path.home() / ".duckdb") if (Path.home() / ".duckdb").exists() else {}) == home


def test_the_results_file_s_own_bytes_are_all_a_query_may_read(cli, db: Path, tmp_path: Path) -> None:
    # DuckDB up to 2.0.0 refused read_blob of the open database's own file; 2.0.1 allows that one path while external
    # access stays off (every other file is still refused, above). Either way nothing else is read or written. Closing
    # it (disabled_filesystems) would also stop a big sort from spilling to its temporary folder.
    before = files(tmp_path)
    result = cli("query", f"SELECT filename, size FROM read_blob('{db}')", "--db", db, "--format", "json",
                 code=None)
    if result.exit_code:
        assert result.exit_code == 2 and result.stderr.startswith("error: SQL: Permission Error")
    else:
        assert json.loads(result.stdout) == [{"filename": str(db), "size": db.stat().st_size}]
    assert files(tmp_path) == before


def test_refusals_say_why_and_what_to_use(cli, db: Path, tmp_path: Path) -> None:
    result = cli("query", f"COPY steps TO '{tmp_path}/x.csv'", "--db", db, code=2)
    assert result.stderr == (f'error: SQL: Permission Error: Cannot access file "{tmp_path}/x.csv" - file system '
                             "operations are disabled by configuration (`eebench query` only reads the results file; "
                             "`eebench export` writes tables and views as files)\n")
    result = cli("query", "DELETE FROM steps", "--db", db, code=2)
    assert result.stderr.startswith('error: SQL: Invalid Input Error: Cannot execute statement of type "DELETE" on '
                                    'database "r" which is attached in read-only mode!')


def test_duckdb_hints_stay_whole_on_one_line(cli, db: Path) -> None:
    result = cli("query", "SELECT * FROM trajectoris", "--db", db, code=2)
    assert result.stderr == ('error: SQL: Catalog Error: Table with name trajectoris does not exist! Did you mean '
                             '"trajectories"? LINE 1: SELECT * FROM trajectoris\n')
    assert cli("query", "SELEC 1", "--db", db, code=2).stderr.startswith("error: SQL: Parser Error: syntax error")
    assert cli("query", "  ", "--db", db, code=2).stderr == "error: SQL: no statement given\n"


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=40), min_size=1,
                max_size=6))
def test_a_message_is_one_line_with_every_line_of_duckdb_s(lines: list[str]) -> None:
    text = duckdb_message(ValueError("\n".join(lines)))
    assert "\n" not in text and text.strip() == text
    for line in lines:  # every line but the caret line under a quoted statement
        if line.strip() and set(line.strip()) != {"^"}:
            assert line.strip() in text


def test_sql_that_is_not_utf8_is_one_line(db: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "eebench.cli", "query", b"SELECT '\xff\xfe'", "--db", db],
                            cwd=ROOT, capture_output=True)
    assert result.returncode == 2
    assert result.stderr == b"error: SQL: not UTF-8 text (byte 0xff at character 9)\n"


def test_rows_stream_in_batches(db: Path) -> None:
    with query_rows(db, "SELECT range AS n FROM range(25000)") as result:
        assert result.columns == ["n"]
        sizes = [len(batch) for batch in result.batches]
    assert sizes == [FETCH_ROWS, FETCH_ROWS, 5000]
    assert query(db, "SELECT count(*) FROM steps") == (["count_star()"], [(11,)])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc")
def test_a_huge_result_streams_to_the_output_in_flat_memory(db: Path) -> None:
    """20 million rows: the first lines come at once, memory stays flat, and a reader that stops early ends it."""
    started = time.monotonic()
    with subprocess.Popen([sys.executable, "-m", "eebench.cli", "query", "SELECT * FROM range(20000000)", "--db", db,
                           "--format", "csv"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        assert [process.stdout.readline() for _ in range(3)] == [b"range\n", b"0\n", b"1\n"]
        assert time.monotonic() - started < 15   # fetching all first would take far longer
        for _ in range(300_000):
            process.stdout.readline()
        status = (Path("/proc") / str(process.pid) / "status").read_text()
        peak_mb = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024
        process.stdout.close()
        process.wait(timeout=60)
    assert time.monotonic() - started < 40
    assert peak_mb < 300, peak_mb  # holding 20 million rows as Python tuples takes well over a gigabyte


def test_timeout_interrupts_the_query(cli, db: Path) -> None:
    started = time.monotonic()
    result = cli("query", "SELECT sum(hash(range)) FROM range(1000000000000)", "--db", db, "--timeout", "0.5", code=2)
    assert result.stderr == "error: SQL: stopped after 0.5 s (--timeout)\n"
    assert time.monotonic() - started < 20
    assert cli("query", "SELECT 42 AS x", "--db", db, "--timeout", "30", "--format", "csv").stdout == "x\n42\n"
    assert "Invalid value for '--timeout'" in cli("query", "SELECT 1", "--db", db, "--timeout", "0", code=2).stderr


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(-10**6, 10**6), st.one_of(st.none(), st.text(max_size=8)),
                                st.one_of(st.none(), st.floats(-1e6, 1e6))), max_size=12),
       size=st.integers(1, 5), fmt=st.sampled_from(["csv", "json"]))
def test_streamed_csv_and_json_are_what_the_whole_result_gives(rows: list[tuple], size: int, fmt: str) -> None:
    batches = [rows[i:i + size] for i in range(0, len(rows), size)]
    assert "".join(stream_rows(["a", "b", "c"], batches, fmt)) == format_rows(["a", "b", "c"], rows, fmt) + "\n"


def test_a_table_in_one_batch_is_what_the_whole_result_gives() -> None:
    rows = [(1, "x", None), (22, "yyy", 1.5)]
    columns = ["a", "bb", "c"]
    assert "".join(stream_rows(columns, [rows], "table")) == format_rows(columns, rows, "table") + "\n"
    assert "".join(stream_rows(["a"], [[(1,)], [(12345,)]], "table")) == "a\n-\n1\n12345\n(2 rows)\n"


def test_values_json_has_no_type_for_are_text(cli, db: Path) -> None:
    sql = "SELECT 'a\\xFFb'::BLOB AS b, INTERVAL 1 DAY AS i, '00000000-0000-0000-0000-000000000001'::UUID AS u"
    assert json.loads(cli("query", sql, "--db", db, "--format", "json").stdout) == [
        {"b": "a\\xFFb", "i": "1 day, 0:00:00", "u": "00000000-0000-0000-0000-000000000001"}]
    result = cli("query", "SELECT now() AS n", "--db", db, code=None)  # DuckDB's client needs pytz for TIMESTAMPTZ
    assert result.exit_code == 0 or result.stderr == (
        "error: SQL: a TIMESTAMP WITH TIME ZONE value (now(), say) cannot be shown without the Python package pytz: "
        "cast it (now()::TIMESTAMP) or pip install pytz\n")


def test_csv_writes_booleans_as_sql_does(cli, db: Path) -> None:
    # Python's True and False were written, where DuckDB's own CSV (eebench export) and SQL say true and false
    sql = "SELECT true AS yes, false AS no, NULL::BOOLEAN AS unknown, 'x' AS text"
    assert cli("query", sql, "--db", db, "--format", "csv").stdout == "yes,no,unknown,text\ntrue,false,,x\n"
    assert json.loads(cli("query", sql, "--db", db, "--format", "json").stdout) == [
        {"yes": True, "no": False, "unknown": None, "text": "x"}]


def test_json_keeps_every_value_of_columns_of_one_name(cli, db: Path) -> None:
    """steps and trajectories share column names (ecc, explore_error, ...): a join of both gave a JSON object whose
    repeated key kept only the last value, the others lost without a word. Repeats are named as DuckDB names them
    in a subquery."""
    sql = ("SELECT s.explore_error, t.explore_error, t.trajectory_id AS explore_error_1, s.t FROM steps s "
           "JOIN trajectories t USING (trajectory_id) WHERE t.trajectory_id = 'b' ORDER BY s.t LIMIT 1")
    assert json.loads(cli("query", sql, "--db", db, "--format", "json").stdout) == [
        {"explore_error": 1, "explore_error_1": 0.5, "explore_error_1_1": "b", "t": 0}]
    # as DuckDB names them, and csv and the table keep the names as given
    assert [d[0] for d in duckdb.sql(f"SELECT * FROM (SELECT 1 AS explore_error, 2 AS explore_error, "
                                     "3 AS explore_error_1, 4 AS t)").description] == \
        ["explore_error", "explore_error_1", "explore_error_1_1", "t"]
    assert cli("query", sql, "--db", db, "--format", "csv").stdout.startswith(
        "explore_error,explore_error,explore_error_1,t\n")
    assert "".join(stream_rows(["a", "a"], [[(1, 2)], [(3, 4)]], "json")) == format_rows(["a", "a"], [(1, 2), (3, 4)],
                                                                                         "json") + "\n"


def test_csv_keeps_nan_and_the_infinities_apart_from_null(cli, db: Path) -> None:
    """A rate of 0 / 0 in SQL is NaN (explore_errors / exploit_steps where both are 0): csv wrote it as an empty
    field, a NULL's, while the table showed nan and DuckDB's own CSV (eebench export) writes nan and inf."""
    sql = "SELECT 0 / 0 AS rate, 1 / 0 AS up, -1 / 0 AS down, NULL::DOUBLE AS missing, 0.5 AS half"
    assert cli("query", sql, "--db", db, "--format", "csv").stdout == "rate,up,down,missing,half\nnan,inf,-inf,,0.5\n"
    # strict JSON has no NaN nor infinity: null there, as the README says
    assert json.loads(cli("query", sql, "--db", db, "--format", "json").stdout) == [
        {"rate": None, "up": None, "down": None, "missing": None, "half": 0.5}]


def test_csv_and_json_keep_control_characters_and_a_table_shows_them_escaped(cli, db: Path) -> None:
    """click dropped the ANSI codes of a value when the output was no terminal (a pipe, a file): csv lost them, and
    a table on a terminal let a label drive it."""
    sql = "SELECT 'a' || chr(27) || '[31mred' || chr(10) || 'b' AS label"
    assert cli("query", sql, "--db", db, "--format", "csv").stdout == 'label\n"a\x1b[31mred\nb"\n'
    assert json.loads(cli("query", sql, "--db", db, "--format", "json").stdout) == [{"label": "a\x1b[31mred\nb"}]
    assert cli("query", sql, "--db", db).stdout == "label\n" + "-" * 15 + "\na\\x1b[31mred\\nb\n(1 row)\n"


def test_a_results_file_being_written_is_said_so(cli, db: Path) -> None:
    from tests.evaluator.test_store import HOLD, python
    with python(HOLD, db, "rw", 600):
        result = cli("query", "SELECT 1", "--db", db, code=2)
        assert result.stderr == f"error: {db}: is being written by another process (a grade committing, say); try " \
                                "again when it is done\n"
        result = cli("export", "--db", db, "--out", db.parent / "out", code=2)
        assert result.stderr.startswith(f"error: {db}: is being written by another process")
    assert cli("query", "SELECT 1 AS x", "--db", db, "--format", "csv").stdout == "x\n1\n"


def test_query_help_names_every_table_and_view(cli) -> None:
    from eebench.evaluator.store import TABLES, VIEWS

    text = " ".join(cli("query", "--help").stdout.split())
    for name in (*TABLES, "meta", *VIEWS):
        assert name in text, name


def test_query_refuses_no_statement_and_a_timeout_past_its_range(cli, tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "r.duckdb"
    duckdb.connect(str(db)).close()
    for sql in (";", " ; ; ", "/* c */"):
        assert cli("query", sql, "--db", db, code=2).stderr == "error: SQL: no statement given\n"
    assert cli("query", "select 1", "--db", db, "--timeout", "nan", code=2).stderr == \
        "error: --timeout: expected a number of seconds, found nan\n"
    assert "is not in the range" in cli("query", "select 1", "--db", db, "--timeout", "inf", code=2).stderr


def test_a_tables_column_names_are_shown_escaped_too(cli, db: Path) -> None:
    """Column names can come from the data (a PIVOT): a header drove the terminal."""
    out = cli("query", "SELECT 1 AS \"x\x1b[2J\"", "--db", db).stdout
    assert "\x1b" not in out and out.startswith("x\\x1b[2J\n" + "-" * 8 + "\n")


@pytest.mark.parametrize("command", ["query", "export"])
def test_a_results_file_of_a_newer_schema_is_read_with_a_warning(cli, db: Path, tmp_path: Path,
                                                                  command: str) -> None:
    """`query` and `export` interpret no row, so they read a newer file (grade, report and plot refuse it); but its
    columns may not mean what this eebench's README says, and one line says so (it was read without a word)."""
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    args = (["SELECT count(*) AS n FROM trajectories", "--format", "csv"] if command == "query"
            else ["--out", tmp_path / "out", "--table", "trajectories"])
    r = cli(command, *args, "--db", db)
    assert r.stderr == (f"warning: {db}: results schema version 99 is newer than this eebench reads (4): its tables "
                        "may not mean what this eebench's README says; upgrade eebench\n")
    assert r.stdout == "n\n2\n" if command == "query" else (tmp_path / "out" / "trajectories.parquet").exists()


def test_a_schema_version_of_other_digits_is_no_version(cli, db: Path) -> None:
    """`²` is a digit to str.isdigit but no number to int(): query, which reads the version to warn of a newer one,
    ended in a ValueError traceback."""
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE meta SET value = '\u00b2' WHERE key = 'schema_version'")
    r = cli("query", "SELECT count(*) AS n FROM trajectories", "--format", "csv", "--db", db)
    assert (r.stdout, r.stderr) == ("n\n2\n", "")


def test_python_query_of_a_newer_results_file_warns(db: Path) -> None:
    import eebench
    from eebench.errors import EebenchWarning

    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.warns(EebenchWarning, match="results schema version 99 is newer than this eebench reads"):
        assert eebench.query_arrow("SELECT count(*) AS n FROM trajectories", db).column("n").to_pylist() == [2]
    with duckdb.connect(str(db)) as con:   # the file of this eebench's schema: no warning
        con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert query(db, "SELECT count(*) FROM trajectories")[1] == [(2,)]
