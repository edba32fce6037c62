"""Fixtures of the report's tests: a graded run of several models and prompts, and a headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pytest

from eebench.agents import play_episode
from eebench.evaluator import Bench, grade_files
from eebench.instances import InstanceLibrary, write_instances
from eebench.suites import resolve_spec
from tests.report.browser import browser_problem, chromium
from tests.report.synthetic import write_runs

class Run(NamedTuple):
    bench: Path
    db: Path
    runs: Path


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """park2026-main's 9 seed-0 instances; 5 noisy models x 2 prompts with text, plus the random baseline."""
    root = tmp_path_factory.mktemp("graded")
    bench = root / "bench"
    suite = resolve_spec("park2026-main", None)
    instances = [i for i in suite.instances() if i.id.endswith("seed-0")]
    write_instances(instances, bench, suite.source())
    runs = root / "runs"
    runs.mkdir()
    write_runs(bench, runs / "noisy.jsonl", text=True)
    library = InstanceLibrary(bench)
    with (runs / "random.jsonl").open("w") as handle:
        for instance_id in library.ids():
            loaded = library.get(instance_id)
            handle.write(json.dumps(play_episode(loaded.instance, "random", 0, instance_sha256=loaded.sha256)) + "\n")
    db = root / "results.duckdb"
    grade_files(sorted(runs.glob("*.jsonl")), Bench(bench), db)
    return Run(bench, db, runs)


@pytest.fixture(scope="session")
def with_rooms_models(graded: Run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The graded run and three models of a rooms world (no success rate, no Park errors; gaps), named to sort
    between the grid models: 9 models in all, 6 with a Figure 1 point."""
    db = tmp_path_factory.mktemp("mixed") / "mixed.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:
        for k in range(3):
            con.execute("INSERT INTO trajectories BY NAME SELECT ? AS trajectory_id, 'r/x' AS instance_id, "
                        "'rooms' AS env, 'agent' AS agent_name, ? AS model, 'default' AS prompt, 3 AS n_steps, "
                        "'gaps/1' AS metric_version, 0.5 AS total_gap_last, 0.25 AS explore_gap_last, "
                        "0.25 AS exploit_gap_last, 'end_of_log' AS end_reason, 0 AS ignored_actions, "
                        "now()::TIMESTAMP AS graded_at, 'r.jsonl' AS source_file, '0' AS eebench_version",
                        [f"rooms/{k}", f"model-b{k}"])
    return db


def embedded(html: str, block: str) -> Any:
    """A JSON block of the report, as the page's script reads it."""
    found = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', html, re.S)
    assert found, f"no block {block}"
    return json.loads(found.group(1))


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Selenium, with a fresh profile; its console log is kept."""
    problem = browser_problem()
    if problem:
        pytest.skip(f"browser tests need Debian's Chromium: {problem}")
    with chromium() as driver:
        yield driver
