"""`grade --workers N` (issues 13 and 14): end-to-end speed-up at 5M main-suite steps, the parent's serial part,
and peak memory of every process as the input grows.

- speed: `grade_files` with workers=2 against workers=1 (today's one-process path) on the same file, each run in
  a fresh process (the workers' start is paid as a command pays it), alternating, median of REPEATS; wall time
  of the call, commit included. The parent's serial part: its tail (from the last worker's last chunk to the
  committed results) and its CPU time (adding the workers' rows to the run, in input order, as they are ready).
- memory: the peak RSS (VmHWM) of the parent, of each worker and of the forkserver, grading 10k and 100k
  main-suite trajectories with every core; EEBENCH_BENCH_TRAJECTORIES adds a larger run (1000000: 74M steps,
  1.4 GB of JSONL, a few minutes).
EEBENCH_BENCH_STEPS scales the speed runs. The machine may be shared: the ratios are the figures to trust.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import Result
from benchmarks.bench_grade import _write_runs
from eebench.instances import write_instances
from eebench.suites import resolve_spec

STEPS = int(os.environ.get("EEBENCH_BENCH_STEPS", 5_000_000))
LARGE = int(os.environ.get("EEBENCH_BENCH_TRAJECTORIES", 0))
REPEATS = 3
STEPS_PER_TRAJECTORY = 74   # about, on the main suite (random words until the budget)

# Run in a fresh process: grade, timing the call, while a thread samples the peak RSS of every process of the run.
_RUN = r"""
import json, multiprocessing, sys, threading, time
from pathlib import Path
from eebench.evaluator import Bench, grade_files

def peak(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return None

if __name__ == "__main__":
    runs, bench, db, workers = sys.argv[1:5]
    peaks, done, last = {}, threading.Event(), [0.0]

    def sample():
        from multiprocessing import forkserver
        while not done.wait(0.1):
            pids = [(c.name, c.pid) for c in multiprocessing.active_children()]
            server = getattr(forkserver._forkserver, "_forkserver_pid", None)
            for name, pid in pids + ([("forkserver", server)] if server else []):
                if (found := peak(pid)) is not None:
                    peaks[name] = max(peaks.get(name, 0), found)

    threading.Thread(target=sample, daemon=True).start()
    start = time.perf_counter()
    cpu = time.process_time()
    report = grade_files([Path(runs)], Bench(Path(bench)), Path(db), workers=int(workers),
                         progress=lambda records, steps: last.__setitem__(0, time.perf_counter()))
    wall = time.perf_counter() - start
    done.set()
    print(json.dumps({"seconds": wall, "tail": wall - (last[0] - start), "cpu": time.process_time() - cpu,
                      "steps": report.steps, "trajectories": report.trajectories, "parent_mb": peak("self"),
                      "peaks": peaks}))
"""


def _run(runs: Path, bench: Path, db: Path, workers: int) -> dict:
    db.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", _RUN, str(runs), str(bench), str(db), str(workers)],
                          capture_output=True, text=True)
    db.unlink(missing_ok=True)
    if done.returncode:
        raise RuntimeError(f"grade with workers={workers} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _memory(runs: Path, bench: Path, db: Path, trajectories: int) -> Result:
    written = _write_runs(runs, _main_instances(bench), trajectories * STEPS_PER_TRAJECTORY, None, seed=3)
    found = _run(runs, bench, db, 0)
    runs.unlink()
    workers = {name: mb for name, mb in found["peaks"].items() if name.startswith("eebench")}
    total = found["parent_mb"] + sum(found["peaks"].values())
    rate = found["steps"] / found["seconds"]
    return Result(f"  peak RSS, sum of processes: {written:,} trajectories, every core", total, "MB",
                  target="flat in the input",
                  note=f"parent {found['parent_mb']:,.0f} MB, workers "
                       f"{', '.join(f'{mb:,.0f}' for mb in workers.values())} MB, forkserver "
                       f"{found['peaks'].get('forkserver', 0):,.0f} MB; {found['steps']:,} steps in "
                       f"{found['seconds']:,.1f} s ({rate:,.0f} steps/s)")


_MAIN: list = []


def _main_instances(bench: Path) -> list:
    if not _MAIN:
        suite = resolve_spec("park2026-main")
        _MAIN.extend(suite.instances())
        write_instances(_MAIN, bench, suite.source())
    return _MAIN


def run() -> list[Result]:
    results = []
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        bench = tmp / "main"
        runs = tmp / "main.jsonl"
        _write_runs(runs, _main_instances(bench), STEPS, None)
        one, two = [], []
        for _ in range(REPEATS):  # alternating, so a busy spell of the machine hits both
            one.append(_run(runs, bench, tmp / "one.duckdb", 1))
            two.append(_run(runs, bench, tmp / "two.duckdb", 2))
        seconds = [statistics.median(r["seconds"] for r in runs_) for runs_ in (one, two)]
        steps = one[0]["steps"]
        middle = sorted(two, key=lambda r: r["seconds"])[REPEATS // 2]
        results.append(Result(f"grade, {steps:,} main-suite steps: --workers 2 vs 1, {cores} cores", seconds[1], "s",
                              seconds[0], ">= 1.7x", note=f"{steps / seconds[1]:,.0f} vs {steps / seconds[0]:,.0f} "
                                                          "steps/s"))
        results.append(Result("  the parent's serial tail (last chunk graded -> committed)", middle["tail"], "s",
                              note=f"its CPU {middle['cpu']:.2f} s, adding the workers' rows as they are ready, of "
                                   f"{middle['seconds']:.2f} s"))
        runs.unlink()
        for trajectories in (10_000, 100_000, *([LARGE] if LARGE else [])):
            results.append(_memory(runs, bench, tmp / "mem.duckdb", trajectories))
    return results
