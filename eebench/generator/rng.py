"""Seeded sampling primitives whose output is the same on every machine, Python and NumPy version.

NumPy's `Generator` does not promise stable streams from its distribution methods across versions (NEP 19),
and Python's `random` has changed algorithms before. So the bits come from BLAKE2b in counter mode, keyed by
the seed and a path of names (one sub-stream per phase: dag, map, names), and every primitive below turns
those bits into choices with integer arithmetic, or float arithmetic limited to +, -, *, / (exactly rounded
in IEEE 754, hence identical everywhere). Changing how one phase samples never reshuffles another.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_STREAM_VERSION = b"eebench-rng/1"
_TWO_64 = 1 << 64


class StableRng:
    """A deterministic stream of choices, named by a seed and a path such as ('dag',)."""

    def __init__(self, seed: int, *path: str):
        self.seed = seed
        self.path = path
        self._key = hashlib.blake2b(
            b"|".join([_STREAM_VERSION, str(seed).encode(), *(p.encode() for p in path)]), digest_size=32).digest()
        self._counter = 0
        self._words: list[int] = []

    def child(self, *path: str) -> StableRng:
        """An independent sub-stream: its draws do not depend on how many were taken from this one."""
        return StableRng(self.seed, *self.path, *path)

    def _u64(self) -> int:
        if not self._words:
            block = hashlib.blake2b(self._counter.to_bytes(8, "little"), key=self._key, digest_size=64).digest()
            self._counter += 1
            self._words = [int.from_bytes(block[i:i + 8], "little") for i in range(56, -1, -8)]
        return self._words.pop()

    def below(self, n: int) -> int:
        """Uniform integer in [0, n), by rejection so that no value is favoured."""
        if not 1 <= n <= _TWO_64:  # above 2**64 the rejection limit below is 0 and nothing is ever accepted
            raise ValueError(f"below() needs 1 <= n <= 2**64, found {n}")
        limit = _TWO_64 - _TWO_64 % n
        while True:
            word = self._u64()
            if word < limit:
                return word % n

    def integer(self, low: int, high: int) -> int:
        """Uniform integer in [low, high], both included."""
        return low + self.below(high - low + 1)

    def random(self) -> float:
        """Uniform float in [0, 1) with 53 random bits."""
        return (self._u64() >> 11) * (1.0 / (1 << 53))

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def weighted_index(self, weights: Sequence[float]) -> int:
        """Index i with probability weights[i] / sum(weights); zero weights are never chosen."""
        total = 0.0
        for w in weights:
            total += w
        if not total > 0.0:
            raise ValueError("weighted_index() needs a positive weight")
        r = self.random() * total
        acc = 0.0
        last = 0
        for i, w in enumerate(weights):
            if w > 0.0:
                acc += w
                last = i
                if r < acc:
                    return i
        return last  # r rounded up to the total: the last positive weight

    def shuffle(self, items: list[T]) -> None:
        """Fisher-Yates, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """k distinct items in random order (a partial Fisher-Yates over a copy)."""
        pool = list(items)
        if not 0 <= k <= len(pool):
            raise ValueError(f"cannot sample {k} of {len(pool)} items")
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def weighted_sample(self, items: Sequence[T], weights: Sequence[float], k: int) -> list[T]:
        """k distinct items, each draw weighted among those not drawn yet."""
        pool, pool_weights = list(items), list(weights)
        if not 0 <= k <= len(pool):
            raise ValueError(f"cannot sample {k} of {len(pool)} items")
        chosen = []
        for _ in range(k):
            i = self.weighted_index(pool_weights)
            chosen.append(pool.pop(i))
            pool_weights.pop(i)
        return chosen


def stable_exp(x: float) -> float:
    """e**x using only exactly-rounded float operations, so weights match bit for bit on every platform.

    `math.exp` comes from the platform's libm, which may differ in the last bit. Within 2e-15 relative of
    `math.exp` for |x| <= 20 and 3e-14 at |x| = 700 (the powers of e compound the rounding of e itself); the
    generator only needs the same bits everywhere, not the last digit (it compares sampled floats against
    these weights).
    """
    if x < 0:
        return 1.0 / stable_exp(-x)
    if x == math.inf:   # (a depth bias near the float maximum: its weights overflow, as math.exp's would)
        return math.inf
    whole = int(x)
    frac = x - whole
    term, total = 1.0, 1.0
    for k in range(1, 30):  # Taylor series of e**frac, frac in [0, 1): 30 terms reach full precision
        term = term * frac / k
        total += term
    result, base, n = total, 2.718281828459045, whole
    while n:  # e**whole by squaring
        if n & 1:
            result *= base
        base *= base
        n >>= 1
    return result
