"""Run every benchmark module in its own process and print one table (see benchmarks/__init__.py)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import benchmarks
from benchmarks import Result, peak_rss_mb


def _modules(selected: list[str]) -> list[str]:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(benchmarks.__file__).parent)])
                   if m.name.startswith("bench_"))
    return [n for n in names if not selected or n.removeprefix("bench_") in selected or n in selected]


def _child(module: str) -> None:
    results = importlib.import_module(f"benchmarks.{module}").run()
    print(json.dumps({"results": [r._asdict() for r in results], "peak_rss_mb": peak_rss_mb()}))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(argv[1])
        return 0
    failed = 0
    print(f"{'benchmark':<58} {'ours':>14} {'baseline':>14} {'ratio':>8}  target")
    for module in _modules(argv):
        proc = subprocess.run([sys.executable, "-m", "benchmarks", "--child", module],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            failed += 1
            print(f"{module}: FAILED\n{proc.stderr}")
            continue
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        for raw in report["results"]:
            r = Result(**raw)
            base = f"{r.baseline:,.1f}" if r.baseline else "-"
            ratio = f"{r.ratio:,.1f}x" if r.ratio else "-"
            print(f"{r.name:<58} {r.value:>10,.1f} {r.unit:<3} {base:>14} {ratio:>8}  {r.target}"
                  + (f"  ({r.note})" if r.note else ""))
        print(f"{'  peak RSS of ' + module:<58} {report['peak_rss_mb']:>10,.1f} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
