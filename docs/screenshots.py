"""`make docs`: the README's screenshots (docs/replay.png, docs/figure1.png), taken in headless Chromium.

The run: park2026-main's 27 instances, five "models" (the frontier agent with more and more random moves) under
two prompts, and the random baseline, graded and reported as a user would.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from eebench.agents import play_episode
from eebench.evaluator import Bench, grade_files
from eebench.instances import InstanceLibrary, write_instances
from eebench.report import write_report
from eebench.suites import resolve_spec
from tests.report.browser import browser_problem, chromium
from tests.report.synthetic import write_runs

DOCS = Path(__file__).resolve().parent
# a trajectory worth looking at: a long one, with errors of both kinds and a stale score that climbs
PICK = """SELECT t.trajectory_id, t.n_steps FROM trajectories t JOIN steps s USING (trajectory_id)
          WHERE t.model = 'model-c' AND t.success AND t.n_steps BETWEEN 50 AND 120 AND t.exploit_errors > 0
          GROUP BY ALL ORDER BY max(s.stale) DESC, t.trajectory_id LIMIT 1"""


def main() -> int:
    problem = browser_problem()
    if problem:
        print(f"cannot take screenshots: {problem}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        suite = resolve_spec("park2026-main", None)
        write_instances(suite.instances(), tmp / "bench", suite.source())
        write_runs(tmp / "bench", tmp / "noisy.jsonl", text=True)
        library = InstanceLibrary(tmp / "bench")
        with (tmp / "random.jsonl").open("w") as handle:
            for instance_id in library.ids():
                loaded = library.get(instance_id)
                handle.write(json.dumps(play_episode(loaded.instance, "random", 0, instance_sha256=loaded.sha256,
                                                     observations=True)) + "\n")
        grade_files([tmp / "noisy.jsonl", tmp / "random.jsonl"], Bench(tmp / "bench"), tmp / "results.duckdb")
        con = duckdb.connect(str(tmp / "results.duckdb"), read_only=True)
        replay, n_steps = con.execute(PICK).fetchone()
        con.close()
        html = write_report(tmp / "results.duckdb", tmp / "report.html", bench=tmp / "bench").path
        with chromium(1280, 1400) as driver:
            driver.get(html.as_uri() + "#t=" + replay)
            deadline = time.monotonic() + 10
            while not driver.execute_script("return document.querySelectorAll('#path line.seg').length"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the replay did not open")
                time.sleep(0.05)
            driver.execute_script("const s = document.getElementById('slider'); s.value = arguments[0]; "
                                  "s.dispatchEvent(new Event('input'));", n_steps * 2 // 3)
            driver.find_element("id", "replay").screenshot(str(DOCS / "replay.png"))
            driver.find_element("id", "figure1").screenshot(str(DOCS / "figure1.png"))
    print(f"wrote {DOCS / 'replay.png'} and {DOCS / 'figure1.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
