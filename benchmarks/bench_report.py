"""The report of 10,000 trajectories: generation time, file size, and first paint and replay opening in Chromium.

Targets (issue 12): generated in < 10 s; first paint < 2 s in Chromium; replays loaded when opened, or the file
under 20 MB. Baseline: the simple way to gather replays, one steps query per trajectory (timed on a sample and
scaled to all of them, as it takes minutes).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks import Result, timed
from benchmarks.bench_grade import _write_runs
from eebench.evaluator import Bench, grade_files
from eebench.instances import InstanceLibrary, write_instances
from eebench.report import write_report
from eebench.suites import resolve_spec
from tests.report.browser import browser_problem, chromium

TRAJECTORIES = 10_000
STEPS_EACH = 100   # random words: 1,000,000 steps in all


def _baseline_seconds(db: Path, ids: list[str], sample: int = 300) -> float:
    """One query per trajectory for its steps (what a report that loads replays one by one would do)."""
    con = duckdb.connect(str(db), read_only=True)
    start = time.perf_counter()
    for tid in ids[:sample]:
        con.execute("SELECT * FROM steps WHERE trajectory_id = ? ORDER BY t", [tid]).fetchall()
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed * len(ids) / min(sample, len(ids))


def _browser(html: Path) -> list[Result]:
    problem = browser_problem()
    if problem:
        return [Result("report: first paint in Chromium", 0.0, "ms", note=f"skipped: {problem}")]
    with chromium() as driver:
        start = time.perf_counter()
        driver.get(html.as_uri())
        loaded = time.perf_counter() - start
        paint = driver.execute_script(
            "const p = performance.getEntriesByName('first-contentful-paint')[0]; return p ? p.startTime : null")
        start = time.perf_counter()
        driver.find_element("css selector", "#traj-table tbody tr").click()
        while not driver.execute_script("return document.querySelectorAll('#path line.seg').length"):
            time.sleep(0.005)
        opened = time.perf_counter() - start
    return [
        Result("report: first contentful paint in Chromium (10k)", paint or 0, "ms", target="< 2000 ms"),
        Result("report: page load until Selenium returns (10k)", loaded * 1000, "ms"),
        Result("report: open a replay (decode its block, draw it)", opened * 1000, "ms",
               note="includes parsing the replay blocks on the first open"),
    ]


def run() -> list[Result]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        suite = resolve_spec("park2026-main", None)
        write_instances(suite.instances(), tmp / "bench", suite.source())
        library = InstanceLibrary(tmp / "bench")
        instances = [library.get(i).instance for i in library.ids()]
        _write_runs(tmp / "runs.jsonl", instances, TRAJECTORIES * STEPS_EACH, STEPS_EACH)
        db = tmp / "results.duckdb"
        grade_files([tmp / "runs.jsonl"], Bench(tmp / "bench"), db)
        seconds, written = timed(lambda: write_report(db, tmp / "report.html", bench=tmp / "bench"))
        con = duckdb.connect(str(db), read_only=True)
        ids = [r[0] for r in con.execute("SELECT trajectory_id FROM trajectories").fetchall()]
        con.close()
        baseline = _baseline_seconds(db, ids)
        rooms_seconds, rooms_written = _rooms_report(tmp)
        return [
            Result("report: 10k trajectories, 1M steps -> HTML", seconds, "s", baseline, target="< 10 s"),
            Result("report: size of that HTML file", written.bytes / 1e6, "MB", target="< 20 MB",
                   note="replays deflated, decoded when opened"),
            Result("report: 10k rooms trajectories (20 episodes each) -> HTML", rooms_seconds, "s", target="< 10 s",
                   note=f"{rooms_written.bytes / 1e6:.1f} MB; returns, gaps and coverage per model and episode "
                        "with bootstrap intervals"),
            *_browser(written.path),
        ]


def _rooms_report(tmp: Path) -> tuple[float, object]:
    """The report of 10,000 random-agent trajectories on the grams2025-rooms instances (each of 20 episodes)."""
    import orjson

    from eebench.agents.play import play_episode

    suite = resolve_spec("grams2025-rooms", None)
    instances = list(suite.instances())
    write_instances(instances, tmp / "rooms", suite.source())
    with (tmp / "rooms.jsonl").open("wb") as out:
        for k in range(TRAJECTORIES):
            out.write(orjson.dumps(play_episode(instances[k % len(instances)], "random", k)) + b"\n")
    db = tmp / "rooms.duckdb"
    grade_files([tmp / "rooms.jsonl"], Bench(tmp / "rooms"), db)
    return timed(lambda: write_report(db, tmp / "rooms.html", bench=tmp / "rooms"))
