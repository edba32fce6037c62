"""`eebench export`: tables and views as Parquet or CSV, written whole or not at all, from a read-only connection."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest

from eebench.evaluator import SCHEMA_VERSION
from tests.conftest import write_jsonl
from tests.evaluator.test_store import SOLVE, bench, trajectory  # noqa: F401  (bench: a fixture)

ALL = ["agent_summary", "case_summary", "checkpoints", "coverage_summary", "ecc_curve", "episodes", "gaps_summary",
       "meta", "phase_summary", "preset_summary", "steps", "trajectories"]


@pytest.fixture
def db(cli, bench: Path, tmp_path: Path) -> Path:
    results = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE), trajectory("b", ["up", "left"])]),
        "--bench", bench, "--db", results)
    return results


def table(db: Path, name: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT * FROM {name} ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_every_table_and_view_as_parquet_by_default(cli, db: Path, tmp_path: Path) -> None:
    before = db.read_bytes()
    out = tmp_path / "export"
    result = cli("export", "--db", db, "--out", out)
    assert result.stdout.startswith(f"exported {len(ALL)} tables and views (") and f" to {out}/: " in result.stdout
    assert all(f"{name}.parquet (" in result.stdout for name in ALL)
    assert sorted(p.name for p in out.iterdir()) == sorted([f"{n}.parquet" for n in ALL] + ["export.json"])
    memory = duckdb.connect()
    for name in ALL:  # the same rows, column for column
        assert memory.execute(f"SELECT * FROM read_parquet('{out / name}.parquet') ORDER BY ALL").fetchall() == \
            table(db, name), name
    memory.close()
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["export_version"] == 1 and manifest["format"] == "parquet" and manifest["db"] == str(db)
    assert manifest["schema_version"] == SCHEMA_VERSION   # (what the tables' columns mean: the README of that version)
    listed = {t["name"]: (t["file"], t["rows"]) for t in manifest["tables"]}
    assert sorted(listed) == ALL and all(file == f"{name}.parquet" for name, (file, _) in listed.items())
    assert {name: listed[name][1] for name in ("agent_summary", "meta", "steps", "trajectories")} == {
        "agent_summary": 1, "meta": 3, "steps": 11, "trajectories": 2}
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "export", "r.duckdb", "runs.jsonl"]


def test_chosen_views_as_csv_and_an_earlier_export_replaced(cli, db: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    cli("export", "--db", db, "--out", out)
    cli("export", "--db", db, "--out", out, "--format", "csv", "--table", "agent_summary", "--table", "steps")
    assert sorted(p.name for p in out.iterdir()) == ["agent_summary.csv", "export.json", "steps.csv"]
    with (out / "agent_summary.csv").open(newline="") as handle:
        summary = list(csv.DictReader(handle))
    assert [(r["agent_name"], r["episodes"], r["successes"], r["invalid_move_rate"]) for r in summary] == [
        ("a", "2", "1", "0.25")]
    with (out / "steps.csv").open(newline="") as handle:
        steps = list(csv.reader(handle))
    assert steps[0][:3] == ["trajectory_id", "t", "action"] and len(steps) == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "export", "r.duckdb", "runs.jsonl"]


def test_bad_requests_are_one_line_and_write_nothing(cli, db: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    result = cli("export", "--db", db, "--out", out, "--table", "agent_sumary", code=2)
    assert result.stderr == (f"error: --table: no table or view 'agent_sumary' in {db} (did you mean "
                             f"'agent_summary'?); it has {', '.join(ALL)}\n")
    missing = tmp_path / "missing.duckdb"
    assert cli("export", "--db", missing, "--out", out, code=2).stderr == \
        f"error: {missing}: no such database (run `eebench grade ... --db` first)\n"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    result = cli("export", "--db", db, "--out", mine, code=2)
    assert result.stderr == f"error: {mine}: exists and is not an eebench output folder (no export.json); " \
                            "choose an empty or new folder\n"
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert "Invalid value for '--format'" in cli("export", "--db", db, "--out", out, "--format", "xlsx",
                                                 code=2).stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "mine", "r.duckdb", "runs.jsonl"]


def test_a_view_failing_half_way_leaves_nothing(cli, tmp_path: Path) -> None:
    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE a AS SELECT range AS n FROM range(1000)")
    con.execute("CREATE VIEW z AS SELECT error('boom') AS n")   # written after a: fails when it is read
    con.close()
    out = tmp_path / "export"
    result = cli("export", "--db", db, "--out", out, "--format", "csv", code=2)
    assert result.stderr.startswith(f"error: {db}: 'z' cannot be exported: Invalid Input Error: boom") \
        and result.stderr.endswith(f"; nothing was written to {out}\n") and result.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.duckdb"]
    result = cli("export", "--db", db, "--out", out, "--table", "a", "--format", "csv")
    assert result.stdout == f"exported 1 table or view (1000 rows) to {out}/: a.csv (1000)\n"


def test_a_table_whose_name_cannot_be_a_file_name_is_refused(cli, tmp_path: Path) -> None:
    db = tmp_path / "odd.duckdb"
    con = duckdb.connect(str(db))
    con.execute('CREATE TABLE "../escape" AS SELECT 1 AS n')
    con.close()
    result = cli("export", "--db", db, "--out", tmp_path / "export", code=2)
    assert result.stderr.startswith("error: --table: '../escape' cannot be a file name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd.duckdb"]
