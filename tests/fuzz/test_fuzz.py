"""The fuzz suite: damaged inputs of every kind against every command that reads files.

Per case: exit code 0, or exit code 2 with a first line `error: ...` naming the damaged file (or the bench, bundle
or archive it belongs to); never a traceback; after a failure, no output file, folder or results file left
behind. A fast subset runs with `make test`; `pytest -m slow tests/fuzz -s` runs at least 3,000 cases and prints
the tally.
"""

from __future__ import annotations

import collections
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from eebench.cli import main
from tests.fuzz.corpus import Case, Seeds, cases

FAST_CASES = 160
SLOW_CASES = 3200
CASE_SECONDS = 30  # a case that takes longer has hung (issue 9 found 15)
OUTPUTS = ("out.jsonl", "r.duckdb", "gen", "pub")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    return Seeds(tmp_path_factory.mktemp("seeds"))


def command_line(case: Case, path: Path, folder: Path, seeds: Seeds) -> list[str]:
    """The command of a case, reading the damaged file at `path`, writing only inside `folder`."""
    db, out = folder / "r.duckdb", folder / "out.jsonl"
    tree = folder / Path(case.seed.name).parts[0] if case.seed.tree is not None else path
    args: list[str | Path] = {
        "validate": ["validate", path],
        "show": ["show", path],
        "play": ["play", path, "--agent", "random", "--out", out],
        "grade": ["grade", path, "--bench", seeds.bench, "--db", db],
        "grade-skip": ["grade", path, "--bench", seeds.bench, "--db", db, "--skip-invalid"],
        "grade-bench": ["grade", seeds.runs, "--bench", tree, "--db", db],
        "play-bench": ["play", tree, "--agent", "frontier", "--out", out],
        "grade-bundle": ["grade", seeds.runs, "--bench", tree, "--db", db],
        "verify": ["verify", tree],
        "bundles": ["bundles", folder],
        "generate": ["generate", path, "--out", folder / "gen"],
        "generate-seed": ["generate", path, "--seeds", "0", "--out", folder / "gen"],
        "publish": ["publish", path, "--version", "1.0.0", "--out", folder / "pub"],
        "convert": ["convert", path, "--from", case.seed.fmt or "auto", "--out", out],
        "convert-auto": ["convert", path, "--out", out],
    }[case.command]
    return [str(a) for a in args]


class _Hung(Exception):
    """A case ran past CASE_SECONDS."""


def _alarm(signum: int, frame: object) -> None:
    raise _Hung(f"no answer in {CASE_SECONDS} s")


def run_case(case: Case, folder: Path, seeds: Seeds, codes: collections.Counter) -> str | None:
    """Run one case; the reason it fails the contract, or None. `codes` counts the exit codes."""
    folder.mkdir(parents=True)
    path = seeds.place(case, folder)
    if case.command.startswith("grade"):
        shutil.copyfile(seeds.results, folder / "r.duckdb")
    before = sorted(folder.rglob("*"))
    args = command_line(case, path, folder, seeds)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        result = CliRunner().invoke(main, args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    stderr = result.stderr
    codes[result.exit_code] += 1
    if isinstance(result.exception, _Hung):
        return "hung"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"exit {result.exit_code}: {type(result.exception).__name__}: {str(result.exception)[:200]}"
    if "Traceback" in stderr:
        return "a traceback on stderr"
    if result.exit_code == 0:
        return None
    if result.exit_code != 2:
        return f"exit {result.exit_code}: {stderr[:200]!r}"
    first = stderr.splitlines()[0] if stderr else ""
    names = [str(path), str(folder / Path(case.seed.name).parts[0])]
    if not first.startswith("error: ") or not any(n in first for n in names):
        return f"exit 2 without naming the file: {first[:300]!r}"
    left = [p for p in sorted(folder.rglob("*")) if p not in before]
    if left:
        return f"exit 2 but left {[str(p.relative_to(folder)) for p in left][:3]}"
    if case.command.startswith("grade") and rows(folder / "r.duckdb") != rows(seeds.results):
        return "exit 2 but the results file changed"
    return None


def rows(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT * EXCLUDE (graded_at) FROM trajectories ORDER BY trajectory_id").fetchall() + \
            con.execute("SELECT count(*) FROM steps").fetchall()
    finally:
        con.close()


def run_cases(all_cases: list[Case], root: Path, seeds: Seeds) -> tuple[collections.Counter, list[str]]:
    tally: collections.Counter = collections.Counter()
    failures = []
    for case in all_cases:
        problem = run_case(case, root / case.id, seeds, tally)
        tally["failed" if problem else "held"] += 1
        if problem:
            failures.append(f"{case.id}: {problem}")
        else:  # kept only when it failed: thousands of cases would fill a small disk
            shutil.rmtree(root / case.id)
    return tally, failures


def test_fuzz_fast_subset(seeds: Seeds, tmp_path: Path) -> None:
    tally, failures = run_cases(cases(seeds, FAST_CASES, "fast"), tmp_path, seeds)
    assert not failures, "\n".join(failures[:30])
    assert tally["held"] == FAST_CASES


@pytest.mark.slow
def test_fuzz_slow(seeds: Seeds, tmp_path: Path) -> None:
    all_cases = cases(seeds, SLOW_CASES, "slow")
    tally, failures = run_cases(all_cases, tmp_path, seeds)
    by_command = collections.Counter(c.command for c in all_cases)
    print(f"\nfuzz: {len(all_cases)} cases, {tally['held']} held, {tally['failed']} failed; exit 0: {tally[0]}, "
          f"exit 2: {tally[2]}; per command: " + ", ".join(f"{k} {v}" for k, v in sorted(by_command.items())))
    for failure in failures:
        print(failure)
    assert not failures, "\n".join(failures[:30])


def test_every_command_that_reads_files_is_fuzzed(seeds: Seeds) -> None:
    fuzzed = {c.command.split("-")[0] for c in cases(seeds, FAST_CASES, "fast")}
    assert fuzzed >= {"validate", "show", "play", "grade", "convert", "verify", "publish", "generate", "bundles"}


# -- query --db: a damaged results file, in a subprocess (DuckDB reads it natively) ---------------------------

def damaged_databases(db: Path, count: int, salt: str) -> Iterator[tuple[str, bytes]]:
    data = db.read_bytes()
    for number in range(count):
        rng = random.Random(f"{salt}:{number}")
        if number % 2:
            yield f"{number}-truncate", data[:rng.randrange(len(data))]
        else:
            flipped = bytearray(data)
            for _ in range(rng.randint(1, 64)):
                i = rng.randrange(len(flipped))
                flipped[i] ^= 1 << rng.randrange(8)
            yield f"{number}-bitflip", bytes(flipped)


def query_cases(seeds: Seeds, tmp_path: Path, count: int, salt: str) -> list[str]:
    failures = []
    for name, data in damaged_databases(seeds.results, count, salt):
        db = tmp_path / f"{name}.duckdb"
        db.write_bytes(data)
        try:
            done = subprocess.run([sys.executable, "-m", "eebench.cli", "query", "SELECT count(*) FROM trajectories",
                                   "--db", str(db)], capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "PYTHONWARNINGS": "ignore"})
        except subprocess.TimeoutExpired:
            failures.append(f"{name}: hung")
            continue
        if done.returncode not in (0, 2) or "Traceback" in done.stderr:
            failures.append(f"{name}: exit {done.returncode}: {done.stderr[-300:]!r}")
        elif done.returncode == 2 and str(db) not in done.stderr.splitlines()[0]:
            failures.append(f"{name}: exit 2 without naming the file: {done.stderr[:200]!r}")
        if db.read_bytes() != data:
            failures.append(f"{name}: query changed the results file")
    return failures


def test_fuzz_query_db_fast(seeds: Seeds, tmp_path: Path) -> None:
    failures = query_cases(seeds, tmp_path, 2, "fast")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_fuzz_query_db_slow(seeds: Seeds, tmp_path: Path) -> None:
    failures = query_cases(seeds, tmp_path, 40, "slow")
    print(f"\nfuzz query --db: 40 damaged results files, {len(failures)} failed")
    for failure in failures:
        print(failure)
    assert not failures, "\n".join(failures)
