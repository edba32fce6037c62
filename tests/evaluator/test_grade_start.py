"""What a short `eebench grade` imports: a start that pays only for what grading a few steps uses (docs/performance.md, "A short
start and a short end")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from eebench.bundles import publish
from eebench.instances import write_instances
from tests.conftest import make_instance, write_jsonl


def _imports_of_a_repeated_grade(tmp_path: Path, runs: Path, bench: Path) -> str:
    # twice: the first run may write the shipped specs' JSON copies (a fresh checkout has none) and records that
    # the instance passed its schema (documents.schema_problems_unless_passed)
    code = ("import sys; from eebench.cli import main\n"
            "try:\n"
            f"    main(['grade', {str(runs)!r}, '--bench', {str(bench)!r}, '--db', sys.argv[1]])\n"
            "except SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            "print(sorted(m for m in ('yaml', 'msgspec', 'numba', 'jsonschema') if m in sys.modules))")
    for k in range(2):
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path / f"r{k}.duckdb")], capture_output=True,
                              text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_a_repeated_one_trajectory_grade_imports_no_yaml_msgspec_numba_or_jsonschema(tmp_path: Path) -> None:
    instance = make_instance(["..."], [0, 0], [("G", [2, 0], [])], "G")
    write_instances([instance], tmp_path / "bench", {"kind": "t"})
    runs = write_jsonl(tmp_path / "runs.jsonl", [{"eebench": "trajectory/1", "id": "t", "instance": instance.id,
                                                  "steps": [{"action": "right"}, {"action": "up"}]}])
    assert _imports_of_a_repeated_grade(tmp_path, runs, tmp_path / "bench") == "[]"


def test_a_repeated_grade_against_a_published_bundle_imports_none_of_them_either(tmp_path: Path) -> None:
    # a bundle adds its manifest's schema check and the registry of shipped versions to a grade's start
    bundle = tmp_path / "park2026-main-1.0.0"
    publish("park2026-main", "1.0.0", bundle)
    instance = json.loads((bundle / "manifest.json").read_text())["instances"][0]["id"]
    runs = write_jsonl(tmp_path / "runs.jsonl", [{"eebench": "trajectory/1", "id": "t", "instance": instance,
                                                  "steps": [{"action": "up"}]}])
    assert _imports_of_a_repeated_grade(tmp_path, runs, bundle) == "[]"
