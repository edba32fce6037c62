"""The benchmark harness imports and finds its modules (timings are never asserted: they belong in issue notes)."""

from __future__ import annotations

import importlib

from benchmarks import Result
from benchmarks.__main__ import _modules


def test_the_runner_finds_every_benchmark_module() -> None:
    assert "bench_generate" in _modules([])
    assert _modules(["generate"]) == ["bench_generate"]
    for name in _modules([]):
        assert callable(importlib.import_module(f"benchmarks.{name}").run)


def test_ratios_say_how_many_times_better_than_the_baseline() -> None:
    assert Result("t", 2.0, "s", 6.0).ratio == 3.0  # a time: lower is better
    assert Result("r", 300.0, "inst/s", 100.0).ratio == 3.0  # a rate: higher is better
    assert Result("n", 1.0, "s").ratio is None
