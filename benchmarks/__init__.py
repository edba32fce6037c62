"""Benchmarks for `make bench`: each reports a ratio against a simple baseline run in the same process, plus peak
memory. Timings never decide a test; they go in issue notes.

A benchmark is a module `benchmarks/bench_<name>.py` with a `run() -> list[Result]` function. `python -m
benchmarks [NAME ...]` runs each module in its own process (so peak RSS is its own) and prints a table.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple


class Result(NamedTuple):
    name: str            # what was measured
    value: float         # our figure, in `unit`
    unit: str            # e.g. "steps/s", "s", "MB/s"
    baseline: float | None = None   # the simple baseline's figure in the same unit, same process
    target: str = ""     # the figure the issue asks for, in words (e.g. ">= 50x baseline")
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if not self.baseline:
            return None
        higher_is_better = self.unit.endswith("/s")
        return self.value / self.baseline if higher_is_better else self.baseline / self.value


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of one call, and its result."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def peak_rss_of(code: str, children: int = 0) -> float:
    """Peak resident memory (MB) of a fresh Python process that runs `code`: one measurement, no other work in it.
    `children`: the worker processes it starts, each counted as the largest of them (what Linux reports)."""
    return peak_and_file_rss_of(code, children)[0]


def peak_and_file_rss_of(code: str, children: int = 0) -> tuple[float, float]:
    """peak_rss_of, and the process's file-backed resident memory (MB) when `code` has run: the shared libraries'
    pages it mapped (LLVM's, DuckDB's), which vary with the system's page cache, not with eebench (docs/performance.md: "Memory
    bounded by steps"); the rest of the peak is the process's own memory."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child would report its parent's peak
    report = ("; import resource; status = {line.split(':')[0]: int(line.split()[1]) for line in "
              "open('/proc/self/status') if line.startswith(('VmHWM', 'RssFile'))}; "
              f"print(status['VmHWM'] / 1024 + {children} * resource.getrusage(resource.RUSAGE_CHILDREN)"
              ".ru_maxrss / 1024, status['RssFile'] / 1024)")
    done = subprocess.run([sys.executable, "-c", code + report], capture_output=True, text=True, check=True)
    peak, file_backed = done.stdout.strip().splitlines()[-1].split()
    return float(peak), float(file_backed)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
