"""Grading speed and memory (issue 13): end-to-end `grade_files` at 5M steps against an honest baseline and the floor.

- baseline: the same `grade_files`, end to end, with the plain-Python reference replay (COMPILED_FROM_STEPS out of
  reach), so the ratio is what the compiled replay buys;
- floor: orjson parse of the same file plus the DuckDB write of the same rows, every table's (trajectories, steps,
  checkpoints: read back from the results, written into a fresh file by one thread), the least any grader that
  reads the file and stores its rows pays.
Each timing is the median of REPEATS runs in this process, the three taken in turns (the machine may be shared:
the ratios are the figures to trust). Peak RSS is measured in fresh processes. EEBENCH_BENCH_STEPS scales the runs.
"""

from __future__ import annotations

import dataclasses
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import orjson

from benchmarks import Result, peak_and_file_rss_of, timed
from eebench.evaluator import Bench, grade_files, park
from eebench.instances import write_instances
from eebench.suites import resolve_spec
from eebench.world.grid_dag import GridDagInstance

STEPS = int(os.environ.get("EEBENCH_BENCH_STEPS", 5_000_000))
REPEATS = 3
WORDS = ("up", "down", "left", "right")


def _write_runs(path: Path, instances: list[GridDagInstance], steps: int, length: int | None, seed: int = 0) -> int:
    """Random-word trajectories (invalid moves included) of `length` actions or the instance's budget, `steps`
    actions in all; returns the number of trajectories."""
    rng = random.Random(seed)
    k = done = 0
    with path.open("wb") as handle:
        while done < steps:
            instance = instances[k % len(instances)]
            n = min(length or instance.budget, steps - done)
            handle.write(orjson.dumps({"eebench": "trajectory/1", "id": f"run/{k}", "instance": instance.id,
                                       "agent": {"name": "random-words"},
                                       "steps": [{"action": rng.choice(WORDS)} for _ in range(n)]}) + b"\n")
            k, done = k + 1, done + n
    return k


def _grade(runs: Path, bench: Path, db: Path, **options) -> object:
    db.unlink(missing_ok=True)
    return grade_files([runs], Bench(bench), db, **options)


def _floor(runs: Path, tables: dict[str, dict], db: Path) -> float:
    """orjson parse of every line + the DuckDB write of the same rows, every table's (one thread, a fresh file)."""
    db.unlink(missing_ok=True)
    start = time.perf_counter()
    with runs.open("rb") as handle:
        for line in handle:
            orjson.loads(line)
    con = duckdb.connect(str(db))
    con.execute("SET threads = 1")
    for name, rows in tables.items():
        con.register("rows", rows)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM rows")
        con.unregister("rows")
    con.execute("CHECKPOINT")
    con.close()
    return time.perf_counter() - start


def _one_trajectory_seconds(runs: Path, bench: Path, db: Path) -> tuple[float, float]:
    """Median wall seconds of a one-trajectory grade in a fresh process: the `grade_files` call, and that plus the
    import of eebench's grading modules."""
    code = ("import time; t = time.perf_counter(); from pathlib import Path; "
            "from eebench.evaluator import Bench, grade_files; u = time.perf_counter(); "
            f"grade_files([Path({str(runs)!r})], Bench(Path({str(bench)!r})), Path({str(db)!r})); "
            "v = time.perf_counter(); print(v - u, v - t)")
    calls, totals = [], []
    for _ in range(REPEATS):
        db.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        call, total = done.stdout.split()[-2:]
        calls.append(float(call))
        totals.append(float(total))
    return statistics.median(calls), statistics.median(totals)


def _one_trajectory_command_seconds(runs: Path, bench: Path, db: Path) -> float:
    """Median wall seconds of `eebench grade` of one trajectory, a fresh process end to end (the interpreter's
    start, the imports, the grade and the summary line): what a user waits for."""
    def once() -> float:
        db.unlink(missing_ok=True)
        command = [sys.executable, "-m", "eebench", "grade", str(runs), "--bench", str(bench), "--db", str(db)]
        return timed(lambda: subprocess.run(command, capture_output=True, check=True))[0]
    return statistics.median(once() for _ in range(REPEATS))


def _peak_rss_grading(runs: Path, bench: Path, db: Path) -> tuple[float, str]:
    """Peak RSS (MB) of a fresh process grading `runs`, and a note of how much of it was shared libraries' pages."""
    db.unlink(missing_ok=True)
    peak, file_backed = peak_and_file_rss_of(
        "from pathlib import Path; from eebench.evaluator import Bench, grade_files; "
        f"grade_files([Path({str(runs)!r})], Bench(Path({str(bench)!r})), Path({str(db)!r}))")
    return peak, f"file-backed at the end {file_backed:.0f} MB"


def _open_map_tables(size: int) -> tuple[float, float]:
    """Seconds to build ParkTables of an open size x size map, and the fresh process's peak RSS (MB)."""
    code = ("import time; from eebench.world.grid_dag import GridDagInstance, Node; "
            "from eebench.evaluator.park import ParkTables; "
            f"n = {size}; i = GridDagInstance('open', ('.' * n,) * n, (0, 0), (Node('A', (n - 1, 0), ()), "
            "Node('G', (n - 1, n - 1), (('A',),))), 'G', 10 ** 6); "
            "t = time.perf_counter(); ParkTables(i); print(time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", code + "; print(next(int(line.split()[1]) for line in "
                           "open('/proc/self/status') if line.startswith('VmHWM')) / 1024)"],
                          capture_output=True, text=True, check=True)
    seconds, rss = done.stdout.split()[-2:]
    return float(seconds), float(rss)


def run() -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        suite = resolve_spec("park2026-main")
        main = list(suite.instances())
        write_instances(main, tmp / "main", suite.source())
        runs = tmp / "main.jsonl"
        _write_runs(runs, main, STEPS, None)

        def ours() -> tuple[float, object]:
            return timed(lambda: _grade(runs, tmp / "main", tmp / "ours.duckdb"))

        def plain() -> float:
            kept = park.COMPILED_FROM_STEPS
            park.COMPILED_FROM_STEPS = 1 << 62   # (coverage follows the Park family's choice)
            try:
                return timed(lambda: _grade(runs, tmp / "main", tmp / "plain.duckdb"))[0]
            finally:
                park.COMPILED_FROM_STEPS = kept

        first, report = ours()
        steps = report.steps
        with duckdb.connect(str(tmp / "ours.duckdb"), read_only=True) as con:   # the stored columns of each table
            written = {"trajectories": con.execute("SELECT * FROM trajectories").fetchnumpy(),
                       "steps": con.execute("SELECT * EXCLUDE (explore_error, exploit_error, state) FROM steps"
                                            ).fetchnumpy(),
                       "checkpoints": con.execute("SELECT * FROM checkpoints").fetchnumpy()}
        # in turns, so a machine that slows down or speeds up meanwhile weighs on all three alike
        times = [(first if k == 0 else ours()[0], _floor(runs, written, tmp / "floor.duckdb"), plain())
                 for k in range(REPEATS)]
        written.clear()
        seconds, floor, base = (statistics.median(column) for column in zip(*times))
        results.append(Result(f"grade main suite, {steps:,} steps, 1 process (baseline: plain-Python replay)",
                              steps / seconds, "steps/s", steps / base, ">= 1,000,000 steps/s"))
        results.append(Result("  the same against the floor (orjson parse + DuckDB write of every row)",
                              seconds, "s", floor, "within 1.5x of the floor (ratio >= 0.67)"))

        one = tmp / "one.jsonl"
        _write_runs(one, main, main[0].budget, None, seed=1)
        call, total = _one_trajectory_seconds(one, tmp / "main", tmp / "one.duckdb")
        results.append(Result("fixed cost: one-trajectory grade_files call, fresh process", 1000 * call, "ms",
                              target="< 300 ms", note=f"{1000 * total:.0f} ms with the import of eebench.evaluator"))
        results.append(Result("  the same as `eebench grade`, a fresh process end to end",
                              1000 * _one_trajectory_command_seconds(one, tmp / "main", tmp / "one.duckdb"), "ms",
                              target="< 300 ms", note="the interpreter's start and every import included"))

        peak, note = _peak_rss_grading(runs, tmp / "main", tmp / "rss.duckdb")
        results.append(Result(f"peak RSS grading {steps:,} steps of main-suite trajectories", peak, "MB",
                              target="< 300 MB", note=note))
        runs.unlink()
        long_bench = [dataclasses.replace(i, budget=STEPS) for i in main[:3]]
        write_instances(long_bench, tmp / "long", suite.source())
        for length, label in ((10_000, "trajectories of 10,000 steps"), (STEPS, "one trajectory")):
            path = tmp / f"long{length}.jsonl"
            _write_runs(path, long_bench, STEPS, length, seed=2)
            peak, note = _peak_rss_grading(path, tmp / "long", tmp / "rss.duckdb")
            results.append(Result(f"peak RSS grading {STEPS:,} steps, {label}", peak, "MB", target="< 300 MB",
                                  note=("random words: the goal is reached early; " if length == STEPS else "")
                                  + note))
            path.unlink()
        stuck = tmp / "stuck.jsonl"   # every step graded: no move word, so the agent never leaves the start
        stuck.write_bytes(orjson.dumps({"eebench": "trajectory/1", "id": "stuck", "instance": long_bench[0].id,
                                        "steps": [{"action": "wait"}] * STEPS}) + b"\n")
        peak, note = _peak_rss_grading(stuck, tmp / "long", tmp / "rss.duckdb")
        results.append(Result(f"peak RSS grading one trajectory of {STEPS:,} graded steps", peak, "MB",
                              target="< 300 MB", note="its step columns made and written in windows; " + note))
        stuck.unlink()

        for size in (100, 200):
            seconds, rss = _open_map_tables(size)
            results.append(Result(f"per-instance tables of an open {size}x{size} map", seconds, "s",
                                  target="< 2 s (200x200)", note=f"fresh process peak RSS {rss:,.0f} MB"))
    return results
