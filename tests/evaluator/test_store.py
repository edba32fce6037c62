"""The results file under faults: killed runs and their staging folders, other holders, memory, damage, a full disk."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.errors import InputError
from eebench.evaluator import Bench, grade_files, store
from eebench.instances import write_instances
from tests.conftest import make_instance, rows, write_jsonl

ROOT = Path(__file__).resolve().parents[2]

# x: 0 1 2 3 4 5 6  -- P at the left end, the goal G at the right end needs P; the start in the middle
CORRIDOR = dict(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])],
                goal="G", budget=30)
SOLVE = ["left"] * 3 + ["right"] * 6   # 9 steps: P on the 3rd, G on the 9th


def trajectory(traj_id: str, actions: list, instance: str = "t/corridor") -> dict:
    return {"eebench": "trajectory/1", "id": traj_id, "instance": instance, "agent": {"name": "a"},
            "steps": [{"action": a} for a in actions]}


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor"),
                     make_instance(**{**CORRIDOR, "budget": 1_000_000}, instance_id="t/long")], folder, {"kind": "t"})
    return folder


def eebench(*args: str | Path, **kwargs) -> subprocess.Popen:
    """`eebench ARGS` in a process of its own (what a user's shell would run)."""
    return subprocess.Popen([sys.executable, "-m", "eebench.cli", *map(str, args)], cwd=ROOT, **kwargs)


@contextlib.contextmanager
def python(code: str, *args: str | Path) -> Iterator[subprocess.Popen]:
    """A helper process running `code`, from when it prints 'ready' (it holds what it was asked to hold) to the
    end of the block (killed if it still runs)."""
    with subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None and process.stdout.readline() == "ready\n"
            yield process
        finally:
            process.kill()


# -- staging folders of killed runs ----------------------------------------------------------------------

def test_staging_folders_nobody_holds_are_swept_whatever_their_owner_file_says(cli, bench: Path,
                                                                              tmp_path: Path) -> None:
    owners = {"dead": f"{socket.gethostname()} 999999999\n", "empty": "", "none": None,
              "this-pid-but-unlocked": f"{socket.gethostname()} {os.getpid()}\n",
              "other-host": "some-other-host 999999999\n", "held": ""}
    folders = {name: tmp_path / f".r.duckdb.{name}.grading" for name in owners}
    for name, owner in owners.items():
        folders[name].mkdir()
        (folders[name] / "run.duckdb").write_bytes(b"partial")
        if owner is not None:
            (folders[name] / "owner").write_text(owner)
    hold = ("import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('ready', flush=True)\ntime.sleep(600)")
    with python(hold, folders["held"] / "lock"):
        cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory("x", ["left"])]), "--bench", bench,
            "--db", tmp_path / "r.duckdb")
    assert sorted(p.name for p in tmp_path.glob(".r.duckdb.*")) == [folders["held"].name, folders["other-host"].name]
    assert rows(tmp_path / "r.duckdb", "SELECT trajectory_id FROM trajectories") == [("x",)]


def test_a_live_run_holds_its_staging_folder(bench: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    live = store.ResultStore(results)
    try:
        folder = next(tmp_path.glob(".r.duckdb.*.grading"))
        assert (folder / "owner").read_text() == f"{socket.gethostname()} {os.getpid()}\n"
        fd = os.open(folder / "lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        other = store.ResultStore(results)  # another run starting sweeps: the live one's folder stays
        assert folder.exists() and len(list(tmp_path.glob(".r.duckdb.*.grading"))) == 2
        other.abort()
    finally:
        live.abort()
    assert not list(tmp_path.glob(".r.duckdb.*"))


# -- other holders of the results file -------------------------------------------------------------------

HOLD = ("import duckdb, sys, time\ncon = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == 'r')\n"
        "print('ready', flush=True)\ntime.sleep(float(sys.argv[3]))\ncon.close()")


@pytest.mark.parametrize("mode", ["r", "rw"])
def test_a_grade_waits_for_a_reader_or_a_writer_holding_the_results_file(cli, bench: Path, tmp_path: Path,
                                                                        mode: str) -> None:
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory("x", ["left"])]), "--bench", bench, "--db", db)
    with python(HOLD, db, mode, 1.5) as holder:
        started = time.monotonic()
        cli("grade", write_jsonl(tmp_path / "b.jsonl", [trajectory("y", SOLVE)]), "--bench", bench, "--db", db)
        assert time.monotonic() - started > 1.0 and holder.wait(timeout=30) == 0
    assert rows(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1") == [("x", 1), ("y", 9)]


def test_a_holder_that_stays_is_named_after_the_wait(cli, bench: Path, tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory("x", ["left"])]), "--bench", bench, "--db", db)
    before = db.read_bytes()
    monkeypatch.setattr(store, "LOCK_WAIT_SECONDS", 0.3)
    with python(HOLD, db, "rw", 600):
        result = cli("grade", write_jsonl(tmp_path / "b.jsonl", [trajectory("y", ["left"])]), "--bench", bench,
                     "--db", db, code=2)
    assert result.stderr == f"error: {db}: is in use by another process (waited 0.3 s for its lock); close it and " \
                            "grade again\n"
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.glob(".r.duckdb*")) == []


# -- regrading against a plain folder what a bundle graded -----------------------------------------------

def test_the_summary_says_when_bundle_grades_are_replaced_by_plain_folder_ones(cli, bench: Path,
                                                                            tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "corridor.json").write_text((bench / "t" / "corridor.json").read_text())
    (specs / "t.yaml").write_text("eebench: suite/1\nname: t\nmembers:\n  - {instance: corridor.json}\n")
    cli("publish", specs / "t.yaml", "--version", "1.0.0", "--out", tmp_path / "b")
    db = tmp_path / "r.duckdb"
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE), trajectory("b", ["up"])])
    instance_id = rows_of_bundle = None
    first = cli("grade", runs, "--bench", tmp_path / "b", "--db", db).stdout
    assert "replaced" not in first
    instance_id, rows_of_bundle = rows(db, "SELECT DISTINCT instance_id, bench_name FROM trajectories")[0]
    assert rows_of_bundle == "t"
    plain = tmp_path / "plain"
    write_instances([make_instance(**CORRIDOR, instance_id=instance_id)], plain, {"kind": "t"})
    again = write_jsonl(tmp_path / "again.jsonl", [trajectory("a", SOLVE, instance=instance_id),
                                                    trajectory("c", ["left"], instance=instance_id)])
    out = cli("grade", again, "--bench", plain, "--db", db).stdout
    assert out.rstrip().endswith("; replaced the earlier grades of 1 trajectory ids (1 of them graded against bundle "
                                 "t 1.0.0, now against a plain folder: their bench_name, bench_version and "
                                 "bench_digest are NULL)")
    assert rows(db, "SELECT trajectory_id, bench_name FROM trajectories ORDER BY 1") == [
        ("a", None), ("b", "t"), ("c", None)]
    out = cli("grade", again, "--bench", plain, "--db", db).stdout  # plain over plain: replaced, nothing lost
    assert out.rstrip().endswith("; replaced the earlier grades of 2 trajectory ids")


# -- memory: the cap spills or grows, never fails a valid run --------------------------------------------

def test_long_ids_and_many_steps_grade_under_the_memory_cap(cli, bench: Path, tmp_path: Path) -> None:
    # 5 ids of 100,000 characters, 200 steps each: under the fixed 64 MB cap DuckDB failed the commit of the
    # staged steps ("failed to pin block of size 256.0 KiB (61.0 MiB/61.0 MiB used)")
    long_ids = [f"{i}-" + "x" * 100_000 for i in range(5)]
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(i, ["left", "right"] * 100, instance="t/long")
                                                 for i in long_ids])
    db = tmp_path / "r.duckdb"
    assert "graded 5 trajectories (1000 steps)" in cli("grade", runs, "--bench", bench, "--db", db).stdout
    assert "replaced the earlier grades of 5" in cli("grade", runs, "--bench", bench, "--db", db).stdout  # (a copy)
    assert rows(db, "SELECT trajectory_id, count(*) FROM steps GROUP BY 1 ORDER BY 1") == [(i, 200) for i in long_ids]
    assert rows(db, "SELECT sum(n_steps) FROM trajectories") == [(1000,)]
    assert sorted(p.name for p in tmp_path.glob(".r.duckdb*")) == []


def test_a_commit_that_ran_out_of_the_cap_is_done_again_afresh(bench: Path, tmp_path: Path, monkeypatch) -> None:
    # 600 prompts of 10 KB in one insert: its commit runs out of an 8 MB cap. Done again on the same connection,
    # DuckDB 2.0 found the table's columns misaligned and invalidated the file ("Corrupted in-memory column");
    # done again on a connection opened afresh, every row is there once, here and in an existing results file
    monkeypatch.setattr(store, "MEMORY_LIMIT_MB", 8)
    monkeypatch.setattr(store, "INSERT_ROWS", {**store.INSERT_ROWS, "trajectories": 1 << 20})
    reopened = []
    real = store._Memory.run

    def run(self, work, failed=None, opened_before=None):   # (failed: a lane's first attempt, made outside)
        result = real(self, work, failed, opened_before)
        reopened.append(self.retried)
        return result
    monkeypatch.setattr(store._Memory, "run", run)
    runs = write_jsonl(tmp_path / "runs.jsonl", [{**trajectory(f"t{i}", SOLVE), "agent": {"name": "a", "prompt": (
        f"{i}" + "p" * 10_000)}} for i in range(600)])
    db = tmp_path / "r.duckdb"
    for graded in (1, 2):   # a new results file, then the same ids again into it
        report = grade_files([runs], Bench(bench), db)
        assert (report.trajectories, report.replaced.trajectories) == (600, 600 if graded == 2 else 0)
        assert rows(db, "SELECT count(*), count(DISTINCT trajectory_id), sum(length(prompt)) FROM trajectories") \
            == [(600, 600, 600 * 10_000 + sum(map(len, map(str, range(600)))))]
        assert rows(db, "SELECT count(*) FROM steps") == [(600 * len(SOLVE),)]
    assert any(reopened)   # (an insert failed for the cap and was done again)


def test_an_insert_whose_commit_held_is_not_done_again(tmp_path: Path, monkeypatch) -> None:
    # DuckDB may run out of the cap in the checkpoint after a durable commit ("COMMIT succeeded and is durable,
    # but the autocheckpoint failed"): done again afresh, the insert finds its rows there and adds none
    run = store.ResultStore(tmp_path / "r.duckdb")
    real_lane = run._lane

    class CommitThenFail:   # a lane's connection whose first INSERT commits, then fails as DuckDB's checkpoint did
        def __init__(self, con):
            self.con = con

        def __getattr__(self, name):
            return getattr(self.con, name)

        def execute(self, sql, *parameters):
            result = self.con.execute(sql, *parameters)
            if sql.startswith("INSERT") and not failed:
                failed.append(True)
                raise duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block of size 256.0 KiB")
            return result

    failed: list[bool] = []

    def lane_failing_once(lane):
        con, settings = real_lane(lane)
        return CommitThenFail(con), settings

    def insert(first: int, n: int) -> None:
        run._insert("trajectories", {
            "trajectory_id": np.array([f"t{k}" for k in range(first, first + n)], dtype=object),
            "instance_id": np.array(["i"] * n, dtype=object), "end_reason": np.array(["goal"] * n, dtype=object),
            "n_steps": np.zeros(n, np.int32), "ignored_actions": np.zeros(n, np.int32),
            "metric_version": np.array(["m"] * n, dtype=object), "graded_at": np.zeros(n, "datetime64[us]"),
            "source_file": np.array(["f"] * n, dtype=object), "eebench_version": np.array(["v"] * n, dtype=object),
            "env": np.array(["grid_dag"] * n, dtype=object), "trajectory_key": np.arange(first, first + n)})
    try:
        insert(0, 3)
        with monkeypatch.context() as patched:
            patched.setattr(run, "_lane", lane_failing_once)
            insert(3, 4)
        assert failed
        insert(7, 2)
        assert run._memory.limit_mb == store.MEMORY_LIMIT_MB   # (done again alone, on a connection opened afresh)
        assert run.stage.execute("SELECT list(trajectory_key ORDER BY trajectory_key) FROM trajectories"
                                 ).fetchall() == [(list(range(9)),)]
    finally:
        run.abort()


def test_a_commit_into_the_results_done_again_adds_each_row_once(bench: Path, tmp_path: Path, monkeypatch) -> None:
    # the copy into an existing results file commits, then DuckDB "fails" (in the checkpoint after the commit): done
    # again on a connection opened afresh, the rows are there once and the replaced count is the first attempt's
    db = tmp_path / "r.duckdb"
    grade_files([write_jsonl(tmp_path / "a.jsonl", [trajectory(f"t{i}", SOLVE) for i in range(3)])], Bench(bench), db)
    real = store.ResultStore._add_rows
    attempts = []

    def commit_then_fail(self, con, first):
        result = real(self, con, first)
        attempts.append(result)
        if len(attempts) == 1:
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block of size 256.0 KiB")
        return result
    monkeypatch.setattr(store.ResultStore, "_add_rows", commit_then_fail)
    again = write_jsonl(tmp_path / "b.jsonl", [trajectory(f"t{i}", SOLVE[:5]) for i in range(1, 5)])
    report = grade_files([again], Bench(bench), db)
    assert len(attempts) == 2 and report.replaced.trajectories == 2   # t1, t2 (not the run's own t1..t4)
    assert rows(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1") == [
        ("t0", 9), ("t1", 5), ("t2", 5), ("t3", 5), ("t4", 5)]
    assert rows(db, "SELECT count(*) FROM steps") == [(9 + 4 * 5,)]


def test_the_memory_cap_grows_only_for_work_that_cannot_spill(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(store, "MEMORY_LIMIT_MB", 64)  # the figures below are worked from a 64 MB start
    con = duckdb.connect(str(tmp_path / "m.duckdb"), config={"memory_limit": "64MB"})
    memory = store._Memory(con)
    calls = []

    def work() -> int:
        calls.append(memory.limit_mb)
        if len(calls) < 3:
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block of size 256.0 KiB")
        return 7

    assert memory.run(work) == 7 and calls == [64, 256, 1024]
    assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "976.5 MiB"  # 1024 MB
    with pytest.raises(duckdb.CatalogException):  # other failures are not retried
        memory.run(lambda: con.execute("SELECT * FROM nowhere"))
    con.close()


def test_two_lanes_out_of_the_cap_at_once_do_their_work_again_alone_under_it(tmp_path: Path) -> None:
    # both lanes' inserts ran out of the cap together: the first to recover reopens the file under the same cap and
    # does its work again alone; the second does its work again there (its write may have committed: retried). Only
    # work that fails alone raises the cap (4x), and a failure before that reopening does not raise it again.
    path = tmp_path / "m.duckdb"
    opened: list[int] = []

    def reopen(limit_mb: int) -> duckdb.DuckDBPyConnection:
        opened.append(limit_mb)
        return duckdb.connect(str(path), config={"memory_limit": f"{limit_mb}MB"})
    memory = store._Memory(duckdb.connect(str(path)), reopen=reopen)
    base = memory.limit_mb
    out = duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block of size 256.0 KiB")
    seen: list[tuple[str, int, bool]] = []

    def work(lane: str, fails: int = 0) -> Callable[[], str]:
        def attempt() -> str:
            seen.append((lane, memory.limit_mb, memory.retried))
            if sum(s[0] == lane for s in seen) <= fails:
                raise out
            return lane
        return attempt
    before = memory.reopened   # what both lanes read as they started
    assert memory.run(work("a"), out, before, same_cap_first=True) == "a"
    assert memory.run(work("b"), out, before, same_cap_first=True) == "b"
    assert opened == [base] and seen == [("a", base, True), ("b", base, True)]
    seen.clear()   # c fails alone too: then the cap is raised
    assert memory.run(work("c", fails=1), out, memory.reopened, same_cap_first=True) == "c"
    assert opened == [base, base, 4 * base] and seen == [("c", base, True), ("c", 4 * base, True)]
    memory.con.close()


# -- a damaged results file ------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["truncated", "bit flips"])
def test_a_damaged_results_file_is_one_line_and_stays_as_it_was(cli, bench: Path, tmp_path: Path,
                                                               damage: str) -> None:
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "a.jsonl", [trajectory(f"x{i}", SOLVE * 3) for i in range(300)]),
        "--bench", bench, "--db", db)
    data = bytearray(db.read_bytes())
    if damage == "truncated":
        data = data[:len(data) // 3]
    else:
        for i in range(12288, len(data), 997):
            data[i] ^= 0x5A
    db.write_bytes(bytes(data))
    result = cli("grade", write_jsonl(tmp_path / "b.jsonl", [trajectory("y", SOLVE)]), "--bench", bench,
                 "--db", db, code=2)
    assert result.stderr.startswith(f"error: {db}: cannot ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and db.read_bytes() == bytes(data)
    assert sorted(p.name for p in tmp_path.glob(".r.duckdb*")) == []


# -- a full disk -----------------------------------------------------------------------------------------

def test_a_full_disk_while_grading_or_committing_is_one_line_and_the_results_stay(cli, bench: Path, tmp_path: Path,
                                                                                  small_disk: Path) -> None:
    db = small_disk / "r.duckdb"
    words = ["left", "right", "up", "down", "noop", "jump"]

    def runs(name: str, n: int, steps: int, id_chars: int = 0) -> Path:
        return write_jsonl(tmp_path / f"{name}.jsonl", [
            trajectory(f"{name}{i}{'y' * id_chars}", [words[(i * 7 + k * k) % 6] for k in range(steps)],
                       instance="t/long") for i in range(n)])

    def failed(result) -> None:
        assert result.stderr.startswith(f"error: {db}: grading failed while writing results: ") \
            and result.stderr.endswith(f"; nothing was written ({db} is as it was)\n") \
            and result.stderr.count("\n") == 1 and "No space left on device" in result.stderr, result.stderr

    count = "SELECT count(*), sum(n_steps), sum(invalid_moves) FROM trajectories"
    first, second = runs("a", 500, 1000), runs("b", 500, 1000)
    cli("grade", first, "--bench", bench, "--db", db)
    cli("grade", second, "--bench", bench, "--db", db)
    before = rows(db, count)
    assert before[0][:2] == (1000, 1_000_000)
    failed(cli("grade", first, "--bench", bench, "--db", db, code=2))  # the run fits; adding it to the results not
    assert rows(db, count) == before
    failed(cli("grade", runs("c", 200, 3000, id_chars=200), "--bench", bench, "--db", db, code=2))  # nor the run
    assert rows(db, count) == before
    assert not list(small_disk.glob(".r.duckdb.*"))


# -- invariants of regrading -----------------------------------------------------------------------------

@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.sets(st.integers(0, 9), min_size=1, max_size=6),  # an empty input is an error, not an empty run
       second=st.sets(st.integers(0, 9), min_size=1, max_size=6),
       lengths=st.lists(st.integers(0, 12), min_size=10, max_size=10))
def test_regrading_keeps_one_grade_per_id_and_counts_what_it_replaced(bench: Path, first: set[int], second: set[int],
                                                                      lengths: list[int]) -> None:
    words = ["left", "right", "up", "down", "noop"]
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "r.duckdb"
        reports = []
        for run, ids in (("a", first), ("b", second)):
            runs = write_jsonl(Path(folder) / f"{run}.jsonl", [
                trajectory(f"t{i}", [words[(i + k + len(run)) % 5] for k in range(lengths[i] + (run == "b"))])
                for i in sorted(ids)])
            reports.append(grade_files([runs], Bench(bench), db))
        assert reports[1].replaced == store.Replaced(len(first & second))
        graded = rows(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1")
        expected = {f"t{i}": lengths[i] + (i in second) for i in first | second}  # the later grade wins
        assert graded == sorted(expected.items())
        assert rows(db, "SELECT trajectory_id, count(*) FROM steps GROUP BY 1 HAVING count(*) > 0 ORDER BY 1") == \
            sorted((k, v) for k, v in expected.items() if v)
        assert not list(Path(folder).glob(".r.duckdb.*"))


def test_a_large_number_after_thousands_of_rows_keeps_its_type(bench: Path, tmp_path: Path) -> None:
    # the rows of many batches go in as one insert; DuckDB typed a nullable number from a sample of 1,000 of its
    # values (every third one here: INTEGER), and the large one it skipped failed the grade
    docs = [{**trajectory(f"r{i}", SOLVE), "steps": [{"action": a, "tokens_in": 5} for a in SOLVE]}
            if i % 2 else trajectory(f"r{i}", SOLVE) for i in range(3000)]   # (some NULL: a column of objects)
    docs.insert(1, {**trajectory("big", SOLVE), "steps": [{"action": "left", "tokens_in": 3 * 2 ** 40}]})
    db = tmp_path / "r.duckdb"
    grade_files([write_jsonl(tmp_path / "runs.jsonl", docs)], Bench(bench), db)
    assert rows(db, "SELECT trajectory_id, tokens_in FROM trajectories WHERE trajectory_id IN ('r0', 'r1', 'big') "
                    "ORDER BY 1") == [("big", 3 * 2 ** 40), ("r0", None), ("r1", 45)]


def test_the_run_file_is_used_by_one_thread_at_a_time(tmp_path: Path, monkeypatch) -> None:
    # while a writer lane inserts (slowly here), whatever else uses the run's file waits for it: rows of other
    # columns that send the waiting rows first, a raised memory cap, the commit (DuckDB refuses a busy connection)
    import pyarrow as pa

    import threading

    monkeypatch.setitem(store.INSERT_ROWS, "steps", 2)
    real_insert, real_cap = store.ResultStore._insert, store.ResultStore._raise_cap

    def idle(self) -> bool:   # called in the main thread: no insert handed to a lane is still to finish
        return threading.current_thread() is not threading.main_thread() or \
            all(f.done() for pending in self._pending for f in pending)

    def slow(self, table, data):
        assert idle(self)
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.2)
        real_insert(self, table, data)

    def cap(self, limit_mb):
        assert idle(self)
        real_cap(self, limit_mb)
    monkeypatch.setattr(store.ResultStore, "_insert", slow)
    monkeypatch.setattr(store.ResultStore, "_raise_cap", cap)
    run = store.ResultStore(tmp_path / "r.duckdb")
    schemas = run.arrow_schemas()

    def steps(first: int, n: int, *extra: str) -> pa.Table:
        names = ["t", "valid", "episode", "trajectory_key", *extra]
        values = {"t": list(range(first, first + n)), "valid": [True] * n, "episode": [0] * n,
                  "trajectory_key": [0] * n, "action": ["up"] * n}
        return pa.table({name: values[name] for name in names},
                        schema=pa.schema([schemas["steps"].field(name) for name in names]))
    try:
        run.add_rows("steps", steps(0, 2))            # an insert for the writer
        run.add_rows("steps", steps(2, 1, "action"))  # other columns: the rows waiting go first, once it is done
        run.add_rows("steps", steps(3, 1))
        run.allow_memory(2 * store.MEMORY_LIMIT_MB)
        run.commit()
    except BaseException:
        run.abort()
        raise
    assert rows(tmp_path / "r.duckdb", "SELECT t, action FROM steps") == [(0, None), (1, None), (2, "up"), (3, None)]


def test_a_lane_recovering_from_the_memory_cap_waits_for_the_running_insert_and_goes_before_new_ones() -> None:
    # a recovery reopens the run's file: it must not start while the other lane inserts, and inserts handed over
    # meanwhile wait for it (else a busy lane could hold it back forever)
    import threading

    gate = store._Gate()
    events: list[str] = []
    inserting, recovery_asked, release = threading.Event(), threading.Event(), threading.Event()

    def running_insert() -> None:
        with gate.shared():
            events.append("insert 1 starts")
            inserting.set()
            release.wait(5)
            events.append("insert 1 ends")

    def recovery() -> None:
        inserting.wait(5)
        recovery_asked.set()
        with gate.exclusive():
            events.append("recovery")

    def later_insert() -> None:
        recovery_asked.wait(5)
        time.sleep(0.05)   # (asked after the recovery was)
        with gate.shared():
            events.append("insert 2")

    threads = [threading.Thread(target=work) for work in (running_insert, recovery, later_insert)]
    for thread in threads:
        thread.start()
    recovery_asked.wait(5)
    time.sleep(0.2)
    assert events == ["insert 1 starts"]   # the recovery waits, and so does the insert handed over after it
    release.set()
    for thread in threads:
        thread.join(5)
    assert events == ["insert 1 starts", "insert 1 ends", "recovery", "insert 2"]


def test_a_batch_extended_pads_the_columns_one_side_lacks_with_null() -> None:
    # chunks of different world kinds fill different columns of `trajectories`; joined, each keeps its rows' values
    first = store.Batch(2, {"trajectory_id": ["a", "b"], "success": [True, False]},
                        steps=[{"trajectory": np.array([0, 1, 1], dtype=np.int32)}])
    second = store.Batch(1, {"trajectory_id": ["c"], "coverage": [0.5]},
                         steps=[{"trajectory": np.array([0, 0], dtype=np.int32)}])
    pending = store.Batch()
    pending.extend(first)
    pending.extend(second)
    assert len(pending) == 3
    assert pending.trajectories == {"trajectory_id": ["a", "b", "c"], "success": [True, False, None],
                                    "coverage": [None, None, 0.5]}
    assert [part["trajectory"].tolist() for part in pending.steps] == [[0, 1, 1], [2, 2]]
    assert first.trajectories["success"] == [True, False]   # the parts' own lists are not changed
    columns = dict(store.batch_tables(pending, np.arange(3, dtype=np.int64)))["trajectories"]
    assert columns["success"].tolist() == [True, False, None] and columns["coverage"].tolist() == [None, None, 0.5]


def test_a_datetime_column_of_one_value_is_made_as_the_values_one_by_one() -> None:
    import datetime as dt

    moment = dt.datetime(2026, 11, 26, 21, 0, 0, 123456)
    for values in ([moment] * 5, [moment, moment.replace(second=1), moment], [moment, None]):
        made = store._column(values)
        expected = np.array(values, dtype="datetime64[us]")
        assert made.dtype == expected.dtype and np.array_equal(made, expected, equal_nan=True), values


def test_one_trajectory_has_no_duplicate_and_two_copies_are_found(tmp_path: Path) -> None:
    instance = make_instance(**CORRIDOR)
    write_instances([instance], tmp_path / "bench", {"kind": "t"})
    line = {"eebench": "trajectory/1", "id": "t", "instance": instance.id, "steps": [{"action": "left"}]}
    for copies in (1, 2):
        runs = write_jsonl(tmp_path / f"runs{copies}.jsonl", [line] * copies)
        results = tmp_path / f"r{copies}.duckdb"
        if copies == 1:
            assert grade_files([runs], Bench(tmp_path / "bench"), results).trajectories == 1
        else:
            with pytest.raises(InputError, match="trajectory id 't' was already read at"):
                grade_files([runs], Bench(tmp_path / "bench"), results)


@pytest.mark.parametrize("existing", [False, True], ids=["new file", "into results"])
def test_a_stop_once_the_commit_has_begun_is_noted_not_reported_as_a_failure(bench: Path, tmp_path: Path,
                                                                             monkeypatch, existing: bool) -> None:
    # DuckDB finishes a COMMIT it has begun (a rename is done or not): a Ctrl-C then ended the grade as "Aborted!"
    # with its rows written all the same
    db = tmp_path / "r.duckdb"
    if existing:
        grade_files([write_jsonl(tmp_path / "a.jsonl", [trajectory("a", SOLVE)])], Bench(bench), db)
    close = store.CommitGate.close

    def close_then_stop(gate: store.CommitGate) -> None:
        close(gate)
        signal.raise_signal(signal.SIGINT)   # (the handler runs at once, in this thread)

    monkeypatch.setattr(store.CommitGate, "close", close_then_stop)
    report = grade_files([write_jsonl(tmp_path / "b.jsonl", [trajectory("b", SOLVE)])], Bench(bench), db)
    assert report.late_stops == ["SIGINT"] and "SIGINT came during the commit" in report.notes()
    assert rows(db, "SELECT trajectory_id FROM trajectories ORDER BY 1") == [("a",), ("b",)][1 - existing:]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # as it was


def test_a_stop_before_the_commit_leaves_the_results_as_they_were(bench: Path, tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "r.duckdb"
    grade_files([write_jsonl(tmp_path / "a.jsonl", [trajectory("a", SOLVE)])], Bench(bench), db)
    write_lookups = store.ResultStore._write_lookups

    def stopped(self: store.ResultStore) -> None:
        write_lookups(self)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(store.ResultStore, "_write_lookups", stopped)
    with pytest.raises(KeyboardInterrupt):
        grade_files([write_jsonl(tmp_path / "b.jsonl", [trajectory("b", SOLVE)])], Bench(bench), db)
    assert rows(db, "SELECT trajectory_id FROM trajectories") == [("a",)]


def test_a_run_whose_new_file_was_taken_meanwhile_can_still_be_stopped(bench: Path, tmp_path: Path,
                                                                      monkeypatch) -> None:
    # the gate closed for the rename; another run's file took the place, and the rows went into it in a transaction
    # still to come, which a stop must end as failed, not note as too late
    other = tmp_path / "other.duckdb"
    grade_files([write_jsonl(tmp_path / "a.jsonl", [trajectory("a", SOLVE)])], Bench(bench), other)
    db = tmp_path / "r.duckdb"
    claim, copy = store.ResultStore._claim, store.ResultStore._copy_into_results

    def racing_claim(self: store.ResultStore) -> bool:
        shutil.copy(other, db)
        return claim(self)

    def stopped_copy(self: store.ResultStore) -> Any:
        signal.raise_signal(signal.SIGINT)
        return copy(self)

    monkeypatch.setattr(store.ResultStore, "_claim", racing_claim)
    monkeypatch.setattr(store.ResultStore, "_copy_into_results", stopped_copy)
    with pytest.raises(KeyboardInterrupt):
        grade_files([write_jsonl(tmp_path / "b.jsonl", [trajectory("b", SOLVE)])], Bench(bench), db)
    assert rows(db, "SELECT trajectory_id FROM trajectories") == [("a",)]


def test_a_commit_that_raises_reopens_the_gate_for_the_work_after_it() -> None:
    # (a commit out of memory is done again, and a stop then must end the run; a stop during the COMMIT that raised
    # stays noted: the COMMIT may have held, DuckDB failing in the checkpoint after it)
    class FailingCommit:
        def execute(self, sql: str) -> None:
            if sql == "COMMIT":
                signal.raise_signal(signal.SIGINT)   # noted: the gate is closed
                raise duckdb.OutOfMemoryException("failed to pin block")

    with store.CommitGate() as gate:
        with pytest.raises(duckdb.OutOfMemoryException):
            with store._transaction(FailingCommit(), gate):
                pass
        assert not gate.closed and gate.late_names() == ["SIGINT"]
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)


# -- the views' means: the same digits however DuckDB splits the work ---------------------------------------

def test_the_summary_views_give_the_same_digits_whatever_the_threads_and_the_files_layout(cli, bench: Path,
                                                                                      tmp_path: Path) -> None:
    # A grade with --workers 2 of 135,000 trajectories gave another mean_explore_error (last digits) than one
    # process over the same rows, and one results file gave other digits at other thread counts: DuckDB sums a
    # DOUBLE column in whatever order its threads finish their row groups (122,880 rows each).
    db = tmp_path / "r.duckdb"
    cli("grade", write_jsonl(tmp_path / "runs.jsonl", [trajectory("a", SOLVE)]), "--bench", bench, "--db", db)
    with duckdb.connect(str(db)) as con:   # 300,000 rows of varied doubles, half of them rooms (gaps) rows
        doubles = ["explore_error", "exploit_error", "total_gap_last", "explore_gap_last", "exploit_gap_last",
                   "total_gap_mean", "explore_gap_mean", "exploit_gap_mean", "coverage", "redundancy", "ecc",
                   "exploration_degree"]
        varied = ", ".join(f"1.0 / (i % {97 + k} + {k + 3}) AS {name}" for k, name in enumerate(doubles))
        con.execute(f"""INSERT INTO trajectories SELECT t.* REPLACE ('t' || i AS trajectory_id, {varied},
                            CASE WHEN i % 2 = 0 THEN 'park/1' ELSE 'gaps/2' END AS metric_version,
                            1 + i % 7 AS optimal_steps, true AS success, 'x' AS coverage_version)
                        FROM trajectories AS t, range(300000) AS r(i)""")
        con.execute("""INSERT INTO episodes SELECT 't' || i, 0, 3, 1.0 / (i % 89 + 3), 1.0 / (i % 83 + 2), 1.0,
                               0, 0, 0, 0.5, 'exhaustive', 'optimal', NULL, NULL FROM range(300000) AS r(i)""")

    def views(threads: int) -> dict[str, list[tuple]]:
        with duckdb.connect(str(db), read_only=True, config={"threads": threads}) as con:
            return {view: con.execute(f"SELECT * FROM {view}").fetchall() for view in store.VIEWS}

    one = views(1)
    assert one["agent_summary"] and one["gaps_summary"] and one["coverage_summary"]
    for threads in (2, 4):
        assert views(threads) == one
