"""The report's statistics: seeded percentile-bootstrap intervals of a mean, and the least-squares line with R^2."""

from __future__ import annotations

import zlib
from typing import NamedTuple

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
_CHUNK_CELLS = 4_000_000   # resampled values held at once: memory stays flat however large a group is
# A resample of n values with replacement is, as a distribution, n draws over the distinct values with their
# shares: multinomial counts. With few distinct values (returns, coverage and gaps take a handful each; success
# is 0 or 1) the counts are drawn, d binomials a resample instead of n indices: the same bootstrap, drawn another
# way (10,000 rooms episodes of a model took 0.2-0.9 s per metric and episode as indices).
_COUNTS_FROM = 16   # values per distinct value from which the counts are drawn


class Estimate(NamedTuple):
    """A mean over episodes with its bootstrap interval; all None when no episode has the value (NULL, not 0)."""

    value: float | None
    low: float | None
    high: float | None
    n: int


def group_seed(key: str, seed: int = BOOTSTRAP_SEED) -> int:
    """The seed of one group's resamples: a group's interval does not depend on which other groups are reported."""
    return (seed << 32) ^ zlib.crc32(key.encode("utf-8"))


def bootstrap_mean(values: np.ndarray, seed: int, resamples: int = BOOTSTRAP_RESAMPLES) -> Estimate:
    """Mean of the non-NaN values and its percentile-bootstrap interval (episodes resampled with replacement).

    NaN stands for NULL and is left out first, as SQL's avg() does. A single value gives a zero-width interval.
    """
    data = np.asarray(values, dtype=np.float64)
    data = data[~np.isnan(data)]
    n = len(data)
    if n == 0:
        return Estimate(None, None, None, 0)
    mean = float(data.mean())
    if n == 1 or float(data.min()) == float(data.max()):
        return Estimate(mean, mean, mean, n)
    rng = np.random.Generator(np.random.PCG64(seed))
    distinct, counts = np.unique(data, return_counts=True)
    if len(distinct) * _COUNTS_FROM <= n:
        means = rng.multinomial(n, counts / n, size=resamples) @ distinct / n
    else:
        means = np.empty(resamples)
        rows = max(1, _CHUNK_CELLS // n)
        for start in range(0, resamples, rows):
            stop = min(resamples, start + rows)
            means[start:stop] = data[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    # the interval always holds the estimate (rounding in a lopsided resample could put it a hair outside)
    return Estimate(mean, min(float(low), mean), max(float(high), mean), n)


class Fit(NamedTuple):
    """y = slope * x + intercept by least squares, with the coefficient of determination."""

    slope: float
    intercept: float
    r2: float | None   # None when y does not vary (R^2 is undefined)
    n: int


MIN_FIT_POINTS = 3   # a line through two points always has R^2 = 1: it says nothing


def least_squares(x: np.ndarray, y: np.ndarray) -> Fit | None:
    """The ordinary least-squares line through the points, or None with fewer than MIN_FIT_POINTS or no spread in x."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    if len(xs) < MIN_FIT_POINTS or float(np.ptp(xs)) == 0.0:
        return None
    dx = xs - xs.mean()
    sxx = float((dx * dx).sum())
    if sxx == 0.0:   # x spreads by less than floating point can square
        return None
    slope = float((dx * (ys - ys.mean())).sum() / sxx)
    intercept = float(ys.mean() - slope * xs.mean())
    total = float(((ys - ys.mean()) ** 2).sum())
    residual = float(((ys - (slope * xs + intercept)) ** 2).sum())
    return Fit(slope, intercept, None if total == 0 else 1 - residual / total, len(xs))
