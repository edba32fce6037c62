"""The stable sampling primitives: the raw stream pinned and rederived, each primitive's first draws pinned, and
loose distribution checks (fixed seeds, so they cannot flake)."""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter

import pytest

from eebench.generator.rng import StableRng, stable_exp


def reference_words(seed: int, *path: str, count: int) -> list[int]:
    """The documented stream, written out independently: BLAKE2b in counter mode, 8 little-endian words per block."""
    key = hashlib.blake2b(b"|".join([b"eebench-rng/1", str(seed).encode(), *(p.encode() for p in path)]),
                          digest_size=32).digest()
    words = []
    for counter in itertools.count():
        block = hashlib.blake2b(counter.to_bytes(8, "little"), key=key, digest_size=64).digest()
        words += [int.from_bytes(block[i:i + 8], "little") for i in range(0, 64, 8)]
        if len(words) >= count:
            return words[:count]
    raise AssertionError("unreachable")


def test_the_raw_stream_is_pinned() -> None:
    rng = StableRng(0, "dag")
    assert [rng._u64() for _ in range(3)] == [15088385719446000739, 11231512264636871653, 5430186007132565423]


@pytest.mark.parametrize("seed, path", [(0, ("dag",)), (1, ("map",)), (123456789, ("agent", "random", "x/y"))])
def test_the_raw_stream_is_blake2b_in_counter_mode(seed: int, path: tuple[str, ...]) -> None:
    rng = StableRng(seed, *path)
    assert [rng._u64() for _ in range(20)] == reference_words(seed, *path, count=20)  # crosses a block boundary


def test_streams_differ_by_seed_and_path_and_children_are_paths() -> None:
    first = {(s, p): StableRng(s, *p)._u64() for s in (0, 1) for p in [(), ("dag",), ("map",), ("dag", "x")]}
    assert len(set(first.values())) == len(first)
    parent = StableRng(3, "a")
    parent.below(10)
    assert parent.child("b")._u64() == StableRng(3, "a", "b")._u64()  # whatever the parent drew before


def test_first_draws_of_each_primitive_are_pinned() -> None:
    rng = StableRng(0, "dag")
    assert [rng.below(10) for _ in range(10)] == [9, 3, 3, 4, 2, 8, 6, 0, 6, 8]
    rng = StableRng(1, "map")
    assert [rng.integer(5, 9) for _ in range(10)] == [5, 9, 8, 7, 9, 9, 6, 6, 9, 5]
    rng = StableRng(2, "names")
    assert [rng.random() for _ in range(3)] == [0.1890225926554402, 0.18950090296298727, 0.7663195177501064]
    rng = StableRng(3)
    items = list(range(10))
    rng.shuffle(items)
    assert items == [5, 0, 3, 4, 8, 9, 7, 6, 2, 1]
    assert StableRng(4, "x").sample(range(20), 5) == [16, 8, 5, 14, 2]
    rng = StableRng(5)
    assert [rng.weighted_index([1, 2, 3, 0]) for _ in range(12)] == [1, 2, 1, 2, 2, 1, 2, 2, 2, 1, 2, 1]
    assert StableRng(6).weighted_sample("abcdef", [1, 1, 1, 1, 1, 100], 3) == ["f", "a", "b"]
    rng = StableRng(7)
    assert "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(8)) == "6G0ZTEEA"


def test_random_is_a_53_bit_fraction_of_the_first_word() -> None:
    word = reference_words(2, "names", count=1)[0]
    assert StableRng(2, "names").random() == (word >> 11) / 2 ** 53


def test_below_rejects_the_biased_tail() -> None:
    # n = 3 * 2**62: words at or above 3 * 2**62 would favour small values and must be redrawn
    n = 3 * 2 ** 62
    seed = next(s for s in range(100) if reference_words(s, "t", count=1)[0] >= n)  # a stream that starts high
    words = reference_words(seed, "t", count=40)
    expected = next(w for w in words if w < n)
    assert words.index(expected) > 0
    assert StableRng(seed, "t").below(n) == expected % n


@pytest.mark.parametrize("n", [0, -1, 2 ** 64 + 1, 2 ** 70])
def test_below_refuses_ranges_it_cannot_draw_from(n: int) -> None:
    with pytest.raises(ValueError, match=rf"^below\(\) needs 1 <= n <= 2\*\*64, found {n}$"):
        StableRng(0).below(n)


def test_below_accepts_the_full_word_range() -> None:
    assert StableRng(0, "dag").below(2 ** 64) == 15088385719446000739


def test_sample_and_weighted_sample_refuse_impossible_sizes() -> None:
    with pytest.raises(ValueError, match=r"^cannot sample 4 of 3 items$"):
        StableRng(0).sample("abc", 4)
    with pytest.raises(ValueError, match=r"^cannot sample -1 of 3 items$"):
        StableRng(0).weighted_sample("abc", [1, 1, 1], -1)
    with pytest.raises(ValueError, match=r"^weighted_index\(\) needs a positive weight$"):
        StableRng(0).weighted_index([0.0, 0.0])


# -- distributions (loose bounds, fixed seeds) -------------------------------------------------------

N = 60_000


def test_below_is_uniform() -> None:
    rng = StableRng(100, "uniform")
    counts = Counter(rng.below(6) for _ in range(N))
    assert sorted(counts) == list(range(6))
    assert all(abs(c - N / 6) < 0.04 * N / 6 for c in counts.values()), counts


def test_integer_covers_both_ends() -> None:
    rng = StableRng(101)
    assert set(rng.integer(-2, 2) for _ in range(500)) == {-2, -1, 0, 1, 2}


def test_weighted_index_follows_the_weights_and_never_picks_a_zero_weight() -> None:
    rng = StableRng(102, "weighted")
    weights = [1.0, 2.0, 0.0, 3.0]
    counts = Counter(rng.weighted_index(weights) for _ in range(N))
    assert counts[2] == 0
    for i, w in enumerate(weights):
        assert abs(counts[i] / N - w / 6) < 0.01, counts


def test_weighted_index_with_the_depth_bias_weights() -> None:
    # the parent-depth bias of the DAG sampler: depths 0, 1, 2 under a child at depth 3 with beta = 1
    weights = [stable_exp(-1.0 * (2 - d)) for d in range(3)]
    rng = StableRng(103)
    counts = Counter(rng.weighted_index(weights) for _ in range(N))
    total = sum(weights)
    for d in range(3):
        assert abs(counts[d] / N - weights[d] / total) < 0.01, counts


def test_shuffle_gives_every_permutation_equally_often() -> None:
    rng = StableRng(104, "shuffle")
    counts: Counter[tuple[str, ...]] = Counter()
    for _ in range(N):
        items = list("abc")
        rng.shuffle(items)
        counts[tuple(items)] += 1
    assert len(counts) == 6
    assert all(abs(c - N / 6) < 0.05 * N / 6 for c in counts.values()), counts


def test_sample_includes_each_item_k_over_n_of_the_time_in_random_order() -> None:
    rng = StableRng(105)
    included: Counter[int] = Counter()
    first: Counter[int] = Counter()
    for _ in range(20_000):
        drawn = rng.sample(range(5), 2)
        assert len(set(drawn)) == 2
        included.update(drawn)
        first[drawn[0]] += 1
    assert all(abs(c / 20_000 - 2 / 5) < 0.02 for c in included.values()), included
    assert all(abs(c / 20_000 - 1 / 5) < 0.02 for c in first.values()), first


def test_weighted_sample_draws_without_replacement_in_proportion() -> None:
    rng = StableRng(106)
    first: Counter[str] = Counter()
    for _ in range(20_000):
        drawn = rng.weighted_sample("abc", [1.0, 1.0, 2.0], 2)
        assert len(set(drawn)) == 2
        first[drawn[0]] += 1
    assert abs(first["c"] / 20_000 - 0.5) < 0.02 and abs(first["a"] / 20_000 - 0.25) < 0.02, first


def test_random_is_uniform_on_the_unit_interval() -> None:
    rng = StableRng(107)
    values = [rng.random() for _ in range(N)]
    assert all(0.0 <= v < 1.0 for v in values)
    assert abs(sum(values) / N - 0.5) < 0.005
    deciles = Counter(int(v * 10) for v in values)
    assert all(abs(c - N / 10) < 0.05 * N / 10 for c in deciles.values()), deciles


# -- stable_exp --------------------------------------------------------------------------------------

@pytest.mark.parametrize("limit, tolerance", [(1, 2e-15), (20, 2e-15), (100, 1e-14), (700, 5e-14)])
def test_stable_exp_is_close_to_math_exp(limit: float, tolerance: float) -> None:
    for i in range(-400, 401):
        x = limit * i / 400
        assert abs(stable_exp(x) - math.exp(x)) <= tolerance * math.exp(x), x


def test_stable_exp_pinned_values() -> None:
    # the weights the shipped presets use (beta = 1): exp(0), exp(-1), exp(-2), ... bit for bit
    assert [stable_exp(-float(k)) for k in range(4)] == [
        1.0, 0.36787944117144233, 0.1353352832366127, 0.04978706836786395]
    assert stable_exp(0.5) == 1.6487212707001278  # math.exp(0.5) ends in ...282


def test_stable_exp_overflows_as_math_exp_does() -> None:
    """A depth bias near the float maximum made its weights' exponent infinite: an OverflowError (a traceback)."""
    assert stable_exp(1e10) == stable_exp(math.inf) == math.inf
    assert stable_exp(-1e10) == stable_exp(-math.inf) == 0.0
