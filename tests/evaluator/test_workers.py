"""`grade --workers N`: the pieces of the input, and rows, problems and messages equal to one process's."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eebench
from eebench.checkpoints import library
from eebench.errors import EebenchError, InputError
from eebench.evaluator import Bench, grade_files
from eebench.evaluator import workers as workers_module
from eebench.evaluator.grade import FLUSH_STEPS, GradeReport
from eebench import pieces as pieces_module
from eebench.pieces import resolve_workers
from eebench.instances import write_instances
from eebench.suites import resolve_spec
from eebench.trajectories import read_raw_records
from tests.conftest import make_instance, write_json, write_jsonl
from tests.evaluator.test_coverage_store import CHECKPOINTS, logged
from tests.evaluator.test_gaps import LINE
from tests.evaluator.test_grade import CORRIDOR, SOLVE, trajectory
from tests.evaluator.test_grade_rooms import LINE_ACTIONS, rooms_trajectory

TABLES = ("trajectories", "steps", "episodes", "checkpoints")


def table_rows(db: Path) -> dict[str, list[tuple]]:
    """Every table's rows in the order stored (the order `SELECT *` gives, which workers keep); when they were
    graded aside."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {table: con.execute(f"SELECT *{' EXCLUDE (graded_at)' if table == 'trajectories' else ''} "
                                   f"FROM {table}").fetchall() for table in TABLES}


def in_input_order(tables: dict[str, list[tuple]]) -> bool:
    """Whether each table's rows come trajectory by trajectory in the order of the trajectories' rows."""
    position = {row[0]: k for k, row in enumerate(tables["trajectories"])}
    return all([position[row[0]] for row in rows] == sorted(position[row[0]] for row in rows)
               for rows in tables.values())


def summary(report: GradeReport) -> tuple:
    return report.trajectories, report.steps, list(map(str, report.skipped)), report.coverage_notes, report.notes()


def no_staging_left(folder: Path) -> bool:
    return not list(folder.glob(".*.grading"))


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few hundred bytes: most records land in a piece of their own, many pieces per file."""
    monkeypatch.setattr(workers_module, "PIECE_BYTES", 300)


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], folder, {"kind": "test"})
    write_json(folder / "t" / "rooms.json", LINE)
    return folder


def grade_both(tmp_path: Path, files: list[Path], bench: Path | None, **options: Any) -> tuple[dict, tuple]:
    """Grade with one process and with two workers; assert the same rows and report, return them."""
    found = []
    for workers in (1, 2):
        db = tmp_path / f"w{workers}.duckdb"
        report = grade_files(files, None if bench is None else Bench(bench), db, workers=workers, **options)
        found.append((table_rows(db), summary(report)))
    for table in TABLES:
        assert found[0][0][table] == found[1][0][table], table
    assert found[0] == found[1]
    assert no_staging_left(tmp_path)
    return found[0]


def test_every_world_kind_and_file_kind_give_one_process_rows(bench: Path, tmp_path: Path, small_pieces) -> None:
    checkpoints = tmp_path / "cp.yaml"
    checkpoints.write_text(CHECKPOINTS)
    grid = [trajectory(f"g{k}", SOLVE[:k] + ["up", "bogus"][: k % 3]) for k in range(12)]
    first = write_jsonl(tmp_path / "a.jsonl", grid[:6] + [rooms_trajectory("r1", LINE_ACTIONS)])
    # blank lines (not records) among the records: every row must still name its true line
    first.write_text(first.read_text().replace("\n", "\n\n \n", 3))
    listed = write_json(tmp_path / "b.json", [rooms_trajectory("r2", LINE_ACTIONS[:3]), grid[6]])
    last = write_jsonl(tmp_path / "c.jsonl", grid[7:] + [logged("l1", ["Kitchen", "Cellar", "Kitchen"]),
                                                         logged("l2", ["Cellar"], ["explore"])])
    tables, report = grade_both(tmp_path, [first, listed, last], bench, checkpoints=library([checkpoints]))
    assert report[0] == 16 and tables["episodes"] and tables["checkpoints"]
    # steps of grid, rooms and grid again in one chunk: rows of the same columns were grouped, out of input order
    assert in_input_order(tables)
    with duckdb.connect(str(tmp_path / "w2.duckdb"), read_only=True) as con:
        where = dict(con.execute("SELECT trajectory_id, (source_file, source_line) FROM trajectories").fetchall())
    assert where["g0"] == (str(first), 1) and where["g1"] == (str(first), 4) and where["g3"] == (str(first), 10)
    assert where["r2"] == (str(listed), None) and where["l2"] == (str(last), 7)


def test_main_suite_rows_over_the_compiled_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough steps that one process and each worker switch to the compiled replay (at different records), and
    pieces of more than FLUSH_STEPS steps (their rows are written in several batches to one Arrow file)."""
    from benchmarks.bench_grade import _write_runs

    suite = resolve_spec("park2026-main")
    main = list(suite.instances())
    write_instances(main, tmp_path / "main", suite.source())
    runs = tmp_path / "runs.jsonl"
    _write_runs(runs, main, 150_000, None)
    monkeypatch.setattr(workers_module, "PIECE_BYTES", runs.stat().st_size // 2)
    assert len(list(workers_module.pieces([runs]))) >= 2
    _, report = grade_both(tmp_path, [runs], tmp_path / "main")
    assert report[1] > 140_000 and FLUSH_STEPS < 70_000   # a piece of half the file: about 75,000 steps


def test_skip_invalid_lists_the_same_problems_in_the_same_order(bench: Path, tmp_path: Path, small_pieces) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join([
        json.dumps(trajectory("a", SOLVE)), "{not json", json.dumps(trajectory("b", [])),
        json.dumps(trajectory("a", ["up"])), json.dumps(trajectory("c", ["up"], instance="nope")),
        json.dumps(trajectory("d", ["left"])), json.dumps(trajectory("b", ["left"])), ""]))
    more = write_jsonl(tmp_path / "more.jsonl", [trajectory("d", ["up"]), trajectory("e", ["up"])])
    tables, report = grade_both(tmp_path, [runs, more], bench, skip_invalid=True)
    assert report[0] == 4 and [re.sub(r".*:(\d+): (\w+): .*", r"\1 \2", p) for p in report[2]][2:] == [
        "4 id", "7 id", "1 id"]
    assert [row[0] for row in tables["trajectories"]] == ["a", "b", "d", "e"]


def test_the_first_bad_record_in_input_order_is_the_error(bench: Path, tmp_path: Path, small_pieces) -> None:
    good = [json.dumps(trajectory(f"g{k}", SOLVE)) for k in range(8)]
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(good[:3] + ['{"eebench": "trajectory/1", "id": "x", "steps": []}'] + good[3:6]
                              + [json.dumps(trajectory("y", ["up"], instance="nope")), "{not json"] + good[6:]))
    errors = []
    for workers in (1, 2, 3):
        db = tmp_path / f"w{workers}.duckdb"
        with pytest.raises(InputError) as caught:
            grade_files([runs], Bench(bench), db, workers=workers)
        errors.append(str(caught.value))
        assert not db.exists() and no_staging_left(tmp_path)
    assert errors == [f"{runs}:4: instance: missing required field"] * 3


@pytest.mark.parametrize("order, message", [
    (["good", "empty", "bad"], "{empty}: is empty"),
    (["bad", "empty"], "{bad}:2: instance: no instance 'nope'"),
    (["good", "blank"], "{blank}: is empty"),
])
def test_an_empty_file_is_refused_where_one_process_meets_it(bench: Path, tmp_path: Path, small_pieces,
                                                              order: list[str], message: str) -> None:
    files = {"good": write_jsonl(tmp_path / "good.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(5)]),
             "empty": tmp_path / "empty.jsonl", "blank": tmp_path / "blank.jsonl",
             "bad": write_jsonl(tmp_path / "bad.jsonl", [trajectory("b0", SOLVE), trajectory("b1", [], instance="nope")]
                                + [trajectory(f"b{k}", SOLVE) for k in range(2, 6)])}
    files["empty"].write_text("")
    files["blank"].write_text("\n \n\n" * 200)
    errors = []
    for workers in (1, 2):
        with pytest.raises(InputError) as caught:
            grade_files([files[name] for name in order], Bench(bench), tmp_path / "r.duckdb", workers=workers)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and errors[0].startswith(message.format(**files))


def test_regrading_with_workers_replaces_ids_as_one_process_does(bench: Path, tmp_path: Path, small_pieces) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE[:k]) for k in range(9)])
    again = write_jsonl(tmp_path / "again.jsonl", [trajectory(f"g{k}", ["up"] * k) for k in range(4, 12)])
    found = []
    for workers in (1, 2):
        db = tmp_path / f"w{workers}.duckdb"
        grade_files([runs], Bench(bench), db, workers=workers)
        report = grade_files([again], Bench(bench), db, workers=workers)
        found.append((table_rows(db), report.notes()))
    assert found[0] == found[1] and "replaced the earlier grades of 5 trajectory ids" in found[0][1]


def test_progress_is_reported_from_the_workers(bench: Path, tmp_path: Path, small_pieces) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(20)])
    told = []
    grade_files([runs], Bench(bench), tmp_path / "r.duckdb", workers=2, progress=lambda r, s: told.append((r, s)))
    assert len(told) > 1 and (sum(r for r, _ in told), sum(s for _, s in told)) == (20, 20 * len(SOLVE))


def test_a_worker_killed_stops_the_run_named_and_writes_nothing(bench: Path, tmp_path: Path, small_pieces) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(200)])
    db = tmp_path / "r.duckdb"

    def kill_one(records: int, steps: int) -> None:
        for child in multiprocessing.active_children():
            if child.name == "eebench grade worker 2" and child.is_alive():
                os.kill(child.pid, signal.SIGKILL)

    with pytest.raises(EebenchError, match=r"^grading worker 2 of 2 \(pid \d+\) died \(killed by SIGKILL\); "
                                           r"nothing was written$"):
        grade_files([runs], Bench(bench), db, workers=2, progress=kill_one)
    assert not db.exists() and no_staging_left(tmp_path)
    assert not [c for c in multiprocessing.active_children() if c.name.startswith("eebench grade worker")]


_KILLED_PARENT = r"""
import multiprocessing, sys, time
from pathlib import Path
import eebench.evaluator.workers as workers
from eebench.evaluator import Bench, grade_files

def told(records, steps):
    if not told.done:
        print(" ".join(str(c.pid) for c in multiprocessing.active_children()), flush=True)
        told.done = True
    time.sleep(0.05)   # (the parent is slow to take results: the workers are still grading when it is killed)
told.done = False

if __name__ == "__main__":
    workers.PIECE_BYTES = 300
    grade_files([Path(sys.argv[1])], Bench(Path(sys.argv[2])), Path(sys.argv[3]), workers=2, progress=told)
"""


def test_workers_die_with_a_parent_killed_mid_run(bench: Path, tmp_path: Path) -> None:
    """SIGKILL sends no word: the workers graded on for the rest of the input, the forkserver with them."""
    import subprocess
    import sys
    import time

    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(3000)])
    with subprocess.Popen([sys.executable, "-c", _KILLED_PARENT, str(runs), str(bench), str(tmp_path / "r.duckdb")],
                          stdout=subprocess.PIPE, text=True) as parent:
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        parent.kill()
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()
                 and Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"]
    assert not alive, "workers outlived their killed parent"


def test_workers_option(cli, bench: Path, tmp_path: Path, small_pieces) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(6)])
    for value in ("2", "auto", "0"):
        db = tmp_path / f"r{value}.duckdb"
        done = cli("grade", runs, "--bench", bench, "--db", db, "--workers", value)
        assert "graded 6 trajectories (54 steps)" in done.stdout
    piped = cli("grade", "-", "--bench", bench, "--db", tmp_path / "piped.duckdb", "--workers", "2",
                input=runs.read_text())  # standard input: one process
    assert "graded 6 trajectories" in piped.stdout
    assert table_rows(tmp_path / "piped.duckdb")["steps"] == table_rows(tmp_path / "r2.duckdb")["steps"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(runs.read_text() + '{"eebench": "trajectory/1", "id": "x", "steps": []}\n' + runs.read_text())
    failed = [cli("grade", bad, "--bench", bench, "--db", tmp_path / "bad.duckdb", "--workers", n, code=2).stderr
              for n in ("1", "2")]
    assert failed[0] == failed[1] == f"error: {bad}:7: instance: missing required field\n"
    assert not (tmp_path / "bad.duckdb").exists()
    for value in ("-1", "two", "1.5"):
        bad = cli("grade", runs, "--bench", bench, "--workers", value, code=2)
        assert f"error: Invalid value for '--workers': '{value}' is not a count of processes" in bad.stderr
    ray = cli("grade", runs, "--bench", bench, "--engine", "ray", "--out", tmp_path / "o", "--workers", "2", code=2)
    assert "--workers goes with --engine local" in ray.stderr
    assert resolve_workers(0) == len(os.sched_getaffinity(0)) and resolve_workers(3) == 3


def test_the_python_api_takes_workers(bench: Path, tmp_path: Path, small_pieces) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(6)])
    report = eebench.grade_files(runs, bench=bench, db=tmp_path / "r.duckdb", workers=2)
    assert (report.trajectories, report.steps) == (6, 54)


LINE_TEXT = st.sampled_from([b"", b" ", b"\t\r", b"\x0c", b'{"a": 1}', b" x ", b"y" * 40])


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(LINE_TEXT, max_size=30), end=st.sampled_from([b"", b"\n", b"\r\n"]),
       piece_bytes=st.integers(1, 64), long_line=st.sampled_from([10, 1 << 22]))
def test_pieces_cut_at_line_starts_with_true_line_and_record_numbers(tmp_path_factory, lines: list[bytes],
                                                                       end: bytes, piece_bytes: int,
                                                                       long_line: int) -> None:
    """Pieces shorter than lines, blank lines, and lines past LONG_LINE (no cut after them)."""
    path = tmp_path_factory.mktemp("cut") / "runs.jsonl"
    path.write_bytes(b"\n".join(lines) + end)
    whole = list(read_raw_records(path))
    old = pieces_module.LONG_LINE
    pieces_module.LONG_LINE = long_line
    try:
        cut = list(workers_module.pieces([path], piece_bytes))
    finally:
        pieces_module.LONG_LINE = old
    assert [p.index for p in cut] == list(range(len(cut))) and [p.last for p in cut] == [False] * (len(cut) - 1) + [True]
    assert all(p.end is None or p.end > p.start for p in cut)
    assert [r for p in cut for r in workers_module._piece_records(p)] == whole


def test_an_input_of_one_piece_is_graded_by_this_process(bench: Path, tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(6)])
    seen = []
    grade_files([runs], Bench(bench), tmp_path / "r.duckdb", workers=2,
                progress=lambda r, s: seen.append([c.name for c in multiprocessing.active_children()]))
    assert seen and not any(seen)


def test_no_more_workers_start_than_the_input_has_pieces(bench: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory(f"g{k}", SOLVE) for k in range(12)])
    monkeypatch.setattr(workers_module, "PIECE_BYTES", runs.stat().st_size // 2)   # 2 or 3 pieces
    started = []
    start = multiprocessing.process.BaseProcess.start

    def counted(process: multiprocessing.process.BaseProcess) -> None:
        started.append(process.name)
        start(process)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", counted)
    report = grade_files([runs], Bench(bench), tmp_path / "r.duckdb", workers=8)
    assert report.trajectories == 12 and 2 <= len(started) <= 3, started


RECORD = st.one_of(
    st.builds(lambda k, n: json.dumps(trajectory(f"g{k}", SOLVE[:n])), st.integers(0, 5), st.integers(0, 9)),
    st.builds(lambda k: json.dumps(rooms_trajectory(f"r{k}", LINE_ACTIONS)), st.integers(0, 2)),
    st.builds(lambda k: json.dumps(trajectory(f"x{k}", ["up"], instance="nope")), st.integers(0, 2)),
    st.sampled_from(["{not json", "", "  ", '{"eebench": "trajectory/1", "id": "y", "steps": []}']),
)


@settings(max_examples=6, deadline=None)
@given(files=st.lists(st.lists(RECORD, min_size=2, max_size=12), min_size=1, max_size=3), skip_invalid=st.booleans(),
       piece_bytes=st.integers(40, 400))
def test_any_input_grades_as_in_one_process(tmp_path_factory, files: list[list[str]], skip_invalid: bool,
                                            piece_bytes: int) -> None:
    """Random files of good, bad, repeated and blank records: the same rows and report, or the same error."""
    tmp = tmp_path_factory.mktemp("any")
    folder = tmp / "bench"
    write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], folder, {"kind": "test"})
    write_json(folder / "t" / "rooms.json", LINE)
    paths = []
    for k, lines in enumerate(files):
        paths.append(tmp / f"runs{k}.jsonl")
        paths[-1].write_text("".join(line + "\n" for line in lines))
    old = workers_module.PIECE_BYTES
    workers_module.PIECE_BYTES = piece_bytes
    try:
        found = []
        for workers in (1, 2):
            db = tmp / f"w{workers}.duckdb"
            try:
                report = grade_files(paths, Bench(folder), db, workers=workers, skip_invalid=skip_invalid)
                found.append((table_rows(db), summary(report)))
                assert in_input_order(found[-1][0])
            except InputError as exc:
                found.append((str(exc), db.exists()))
    finally:
        workers_module.PIECE_BYTES = old
    assert found[0] == found[1]
    assert no_staging_left(tmp)
