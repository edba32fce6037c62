"""Fixtures of the report's tests: a graded run of several models and prompts, and a headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from eebench.agents import play_episode
from eebench.evaluator import Bench, grade_files
from eebench.instances import InstanceLibrary, write_instances
from eebench.suites import resolve_spec
from tests.report.synthetic import write_runs

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync")


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


def embedded(html: str, block: str) -> Any:
    """A JSON block of the report, as the page's script reads it."""
    found = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', html, re.S)
    assert found, f"no block {block}"
    return json.loads(found.group(1))


def _browser_problem() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            return f"{path} is missing (apt-get install chromium chromium-driver; `make test` does it as root)"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Selenium, with a fresh profile; its console log is kept."""
    problem = _browser_problem()
    if problem:
        pytest.skip(f"browser tests need Debian's Chromium: {problem}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="eebench-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--window-size=1280,900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
