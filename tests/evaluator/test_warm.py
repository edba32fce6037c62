"""`python -m eebench.evaluator.warm` compiles every kernel a large grade uses: after it, a grade compiles none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_jsonl

# every numba kernel of grading, by module, and how many were compiled in this process (not loaded from the cache)
COMPILED_HERE = """
import sys
from pathlib import Path
from eebench.evaluator import Bench, grade_files
from eebench.evaluator import bare_steps, coverage_compiled, park_compiled
grade_files([Path(sys.argv[1])], Bench(Path(sys.argv[2])), Path(sys.argv[3]))
kernels = [k for m in (bare_steps, coverage_compiled, park_compiled) for k in vars(m).values() if hasattr(k, "stats")]
print(sum(len(k.stats.cache_misses) for k in kernels), sum(len(k.stats.cache_hits) for k in kernels))
"""


@pytest.mark.slow   # (the kernels compiled in a cache of their own: 10-15 s)
def test_after_the_warm_up_a_large_grade_compiles_nothing(tmp_path: Path) -> None:
    from eebench.instances import write_instances
    from eebench.suites import resolve_spec

    environ = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "eebench.evaluator.warm"], env=environ, check=True, capture_output=True)
    instances = list(resolve_spec("park2026-main").instances())[:9]
    write_instances(instances, tmp_path / "bench", {"kind": "test"})
    words = ["up", "down", "left", "right", "wait"]
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        {"eebench": "trajectory/1", "id": f"r/{k}", "instance": instances[k % 9].id,
         "steps": [{"action": words[(k * 7 + t * t) % 5]} for t in range(100)]} for k in range(600)])   # 60,000 steps
    done = subprocess.run([sys.executable, "-c", COMPILED_HERE, str(runs), str(tmp_path / "bench"),
                           str(tmp_path / "r.duckdb")], env=environ, check=True, capture_output=True, text=True)
    misses, hits = map(int, done.stdout.split())
    assert (misses, hits > 0) == (0, True), done.stdout
