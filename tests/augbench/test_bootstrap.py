"""The bootstrap interval on a speedup ratio: seeded, around the point estimate, wider when repeats disagree."""

from __future__ import annotations

import numpy as np

from bench_assets.augbench.bootstrap import ratio_interval


def test_interval_is_seeded_and_holds_the_ratio_of_medians() -> None:
    rng = np.random.default_rng(1)
    a = [list(rng.lognormal(np.log(2000), 0.05, 5)) for _ in range(3)]
    b = [list(rng.lognormal(np.log(1000), 0.05, 5)) for _ in range(3)]
    low, high = ratio_interval(a, b)
    point = np.median(np.concatenate(a)) / np.median(np.concatenate(b))
    assert low < point < high and 1.7 < low and high < 2.3
    assert ratio_interval(a, b) == (low, high)  # same data, same interval
    assert ratio_interval(a, b, seed=5) != (low, high)


def test_disagreeing_repeats_widen_the_interval() -> None:
    """Two processes at 1,000 and 1,400 items/s (tight passes each): the two-level bootstrap keeps the
    between-process spread; the same passes as one group (one process) give a narrower interval."""
    rng = np.random.default_rng(2)
    slow, fast = list(rng.normal(1000, 5, 5)), list(rng.normal(1400, 5, 5))
    ref = [list(rng.normal(1000, 5, 5)), list(rng.normal(1000, 5, 5))]
    two = ratio_interval([slow, fast], ref)
    one = ratio_interval([slow + fast], [ref[0] + ref[1]])
    assert two is not None and one is not None
    assert two[1] - two[0] > one[1] - one[0]
    assert two[0] <= 1.05 and two[1] >= 1.35  # the interval spans both processes' ratios


def test_no_interval_without_positive_values() -> None:
    assert ratio_interval([], [[1.0]]) is None
    assert ratio_interval([[1.0, 2.0]], [[0.0, 1.0]]) is None
    assert ratio_interval([[3.0, 4.0], [5.0]], [[1.0]]) is not None  # unequal groups: pooled, still an interval
