"""The report's statistics: bootstrap intervals and least squares, on hand-worked cases and as properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.report.stats import Estimate, bootstrap_mean, group_seed, least_squares

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def test_bootstrap_empty_is_null_not_zero() -> None:
    assert bootstrap_mean(np.array([]), 0) == Estimate(None, None, None, 0)
    assert bootstrap_mean(np.array([np.nan, np.nan]), 0) == Estimate(None, None, None, 0)


def test_bootstrap_leaves_out_nulls_as_sql_avg_does() -> None:
    est = bootstrap_mean(np.array([1.0, np.nan, 0.0, 0.0, 1.0]), 3)
    assert est.value == 0.5 and est.n == 4


def test_bootstrap_constant_values_have_no_spread() -> None:
    assert bootstrap_mean(np.array([0.25] * 7), 1) == Estimate(0.25, 0.25, 0.25, 7)
    assert bootstrap_mean(np.array([3.0]), 1) == Estimate(3.0, 3.0, 3.0, 1)


def test_bootstrap_two_values_worked_by_hand() -> None:
    # resampling [0, 1] twice gives means 0, 0.5, 0.5, 1 with probabilities 1/4, 1/2, 1/4: the 2.5% and 97.5%
    # percentiles of 2000 such means are 0 and 1 (each tail holds about 500 resamples, far beyond 50)
    assert bootstrap_mean(np.array([0.0, 1.0]), 0) == Estimate(0.5, 0.0, 1.0, 2)


def test_bootstrap_interval_narrows_with_more_episodes() -> None:
    rng = np.random.default_rng(5)
    small = bootstrap_mean(rng.random(20), 0)
    large = bootstrap_mean(rng.random(2000), 0)
    assert (large.high - large.low) < (small.high - small.low) / 4


def test_bootstrap_is_seeded() -> None:
    values = np.linspace(0, 1, 31) ** 2
    assert bootstrap_mean(values, 7) == bootstrap_mean(values, 7)
    assert bootstrap_mean(values, 7) != bootstrap_mean(values, 8)


def test_group_seed_depends_on_the_group_only() -> None:
    assert group_seed("a") == group_seed("a")
    assert group_seed("a") != group_seed("b")
    assert group_seed("a", 1) != group_seed("a", 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=60), st.integers(0, 2**31))
def test_bootstrap_interval_holds_the_mean_and_stays_in_the_range(values: list[float], seed: int) -> None:
    data = np.array(values)
    est = bootstrap_mean(data, seed, resamples=200)
    assert est.n == len(values)
    assert est.value == pytest.approx(float(data.mean()), rel=1e-12, abs=1e-9)
    tol = 1e-9 * max(1.0, float(np.abs(data).max()))
    assert data.min() - tol <= est.low <= est.value <= est.high <= data.max() + tol


def test_least_squares_worked_by_hand() -> None:
    fit = least_squares(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0]))   # y = 2x + 1 exactly
    assert fit is not None and (fit.slope, fit.intercept, fit.r2, fit.n) == pytest.approx((2.0, 1.0, 1.0, 3))
    # y = 0, 1, 0: the mean 1/3 is the best line (slope 0), which explains nothing: R^2 = 0
    fit = least_squares(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 0.0]))
    assert fit is not None and (fit.slope, fit.intercept, fit.r2) == pytest.approx((0.0, 1 / 3, 0.0))
    # x = -3, -2, -1, y = 1, 0.5, 0.5: means -2 and 2/3, slope -1/4, intercept 2/3 - 1/2 = 1/6,
    # R^2 = 1 - (1/24) / (1/6) = 3/4
    fit = least_squares(np.array([-3.0, -2.0, -1.0]), np.array([1.0, 0.5, 0.5]))
    assert fit is not None and (fit.slope, fit.intercept, fit.r2) == pytest.approx((-0.25, 1 / 6, 0.75))


def test_least_squares_needs_three_points_and_spread() -> None:
    assert least_squares(np.array([0.0, 1.0]), np.array([0.0, 1.0])) is None
    assert least_squares(np.array([2.0, 2.0, 2.0]), np.array([0.0, 1.0, 2.0])) is None
    fit = least_squares(np.array([0.0, 1.0, 2.0]), np.array([0.5, 0.5, 0.5]))
    assert fit is not None and fit.r2 is None and fit.slope == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=3, max_size=40))
def test_least_squares_agrees_with_numpy(points: list[tuple[float, float]]) -> None:
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    fit = least_squares(x, y)
    if np.ptp(x) == 0:
        assert fit is None
        return
    if fit is None:   # only when the spread of x underflows once squared
        assert np.ptp(x) < 1e-150
        return
    if np.ptp(x) < 1e-3 * max(1.0, float(np.abs(x).max())):
        return   # nearly vertical data: both solvers are ill-conditioned there
    slope, intercept = np.polyfit(x, y, 1)
    scale = max(1.0, float(np.abs(y).max()))
    assert math.isclose(fit.slope * np.ptp(x), slope * np.ptp(x), rel_tol=1e-6, abs_tol=1e-6 * scale)
    if fit.r2 is not None:
        assert fit.r2 <= 1 + 1e-9


def test_few_distinct_values_draw_counts_the_same_bootstrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resampling n values with replacement and drawing multinomial counts over their distinct values are the same
    distribution: the intervals agree to the resampling noise, and with the normal interval of a proportion."""
    from eebench.report import stats

    values = np.array([1.0] * 1200 + [0.0] * 2800)   # 4,000 episodes, success rate 0.3
    counts = bootstrap_mean(values, 5)
    monkeypatch.setattr(stats, "_COUNTS_FROM", 10 ** 12)   # the index way
    indices = bootstrap_mean(values, 5)
    assert counts.value == indices.value == 0.3
    half = 1.96 * (0.3 * 0.7 / 4000) ** 0.5
    for est in (counts, indices):
        assert abs(est.low - (0.3 - half)) < 0.003 and abs(est.high - (0.3 + half)) < 0.003
