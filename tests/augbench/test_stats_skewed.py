"""The medians and percentiles augbench reports, on skewed samples where mean != median (issue 15: the existing
hand-computed cases are symmetric, so a median computed as a mean, or an unsorted percentile, went unnoticed).
numpy is the reference: stats.py documents numpy's default (linear) percentile."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench_assets.augbench.bootstrap import ratio_interval
from bench_assets.augbench.stats import percentile, summarize

SKEWED = [
    [1.0, 1.0, 1.0, 1.0, 100.0],                      # odd n, one huge outlier
    [100.0, 1.0, 1.0, 1.0, 1.0],                      # the same, unsorted
    [5.0, 1.0, 2.0, 1000.0],                          # even n, unsorted: median 3.5, mean 252
    [3.0, 900.0, 7.0, 2.0, 11.0, 4.0, 5.0],           # odd n, unsorted
    [10.0, 0.5, 0.25, 2.0, 8.0, 4000.0, 1.0, 3.0],    # even n, heavy tail
    [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 50.0, 70.0],
]
QUANTILES = {"p5": 5, "p25": 25, "median": 50, "p75": 75, "p95": 95}


@pytest.mark.parametrize("values", SKEWED)
def test_summary_median_and_percentiles_match_numpy_on_skewed_samples(values: list[float]) -> None:
    s = summarize(values)
    assert s["median"] != pytest.approx(s["mean"])  # the sample really is skewed
    assert s["median"] == pytest.approx(float(np.median(values)), rel=1e-12)
    for key, q in QUANTILES.items():
        assert s[key] == pytest.approx(float(np.percentile(values, q)), rel=1e-12), key
    assert s["mean"] == pytest.approx(float(np.mean(values)), rel=1e-12)
    assert s["std"] == pytest.approx(float(np.std(values, ddof=1)), rel=1e-12)
    assert s["n"] == len(values)
    assert s["p5"] <= s["p25"] <= s["median"] <= s["p75"] <= s["p95"]


def test_the_hand_computed_skewed_case() -> None:
    """[1, 1, 1, 1, 100]: median 1 (the mean is 20.8); p75 1, p95 80.2 (linear between ranks 4 and 5);
    the IQR p75 - p25 is 0."""
    s = summarize([1.0, 1.0, 1.0, 1.0, 100.0])
    assert s["median"] == 1.0 and s["mean"] == pytest.approx(20.8)
    assert s["p25"] == 1.0 and s["p75"] == 1.0 and s["p95"] == pytest.approx(80.2) and s["p5"] == 1.0
    assert s["unstable"] is True  # cv ~2.1
    even = summarize([5.0, 1.0, 2.0, 1000.0])  # sorted 1, 2, 5, 1000
    assert even["median"] == 3.5 and even["p25"] == 1.75 and even["p75"] == pytest.approx(253.75)


@pytest.mark.parametrize("q", [0, 1, 5, 12.5, 25, 33.3, 50, 66.7, 75, 95, 99, 100])
def test_percentile_function_matches_numpy(q: float) -> None:
    values = sorted([3.0, 900.0, 7.0, 2.0, 11.0, 4.0, 5.0, 1.5])
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)
    assert percentile([42.0], q) == 42.0


def test_percentile_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_ci95_is_around_the_mean_not_the_median() -> None:
    """The Student-t interval is on the mean (documented), so on a skewed sample it is centred on the mean."""
    s = summarize([1.0, 1.0, 1.0, 1.0, 100.0])
    assert (s["ci95_low"] + s["ci95_high"]) / 2 == pytest.approx(s["mean"])
    half = 2.776445 * s["std"] / math.sqrt(5)
    assert s["ci95_high"] - s["mean"] == pytest.approx(half)


# ---------------------------------------------------------------------------------------------------------------
# bootstrap: a ratio of medians, not of means


def test_bootstrap_interval_is_on_the_ratio_of_medians_of_a_skewed_sample() -> None:
    """One process with 20 passes at 1 item/s and 5 outliers at 100: the median is 1 in every resample (13 of 25
    draws would have to be outliers), so the ratio to a constant reference is exactly 1 at both ends; a ratio of
    means would be ~20."""
    ours = [[1.0] * 20 + [100.0] * 5]
    ref = [[1.0] * 25]
    assert float(np.median(ours[0])) / float(np.median(ref[0])) == 1.0
    assert ratio_interval(ours, ref) == (1.0, 1.0)
    # the same passes split into 5 repeats (two-level bootstrap, 25 draws per resample): still the median
    repeats = [[1.0, 1.0, 1.0, 1.0, 100.0] for _ in range(5)]
    assert ratio_interval(repeats, [[1.0] * 5 for _ in range(5)]) == (1.0, 1.0)


def test_bootstrap_interval_of_a_skewed_reference_uses_its_median() -> None:
    """The skew on the reference side: ratio 2 / median(ref) = 2 exactly, not 2 / mean(ref) ~ 0.1."""
    ours = [[2.0] * 25]
    ref = [[1.0] * 20 + [100.0] * 5]
    assert ratio_interval(ours, ref) == (2.0, 2.0)


def test_bootstrap_median_of_an_even_count_is_the_midpoint() -> None:
    """Passes alternating 1 and 3 (even count per resample): resampled medians spread around numpy's midpoint 2,
    and the interval holds the point ratio of medians."""
    ours = [[1.0, 3.0] * 10]
    ref = [[1.0] * 20]
    low, high = ratio_interval(ours, ref)
    assert low < float(np.median(ours[0])) < high
    assert low >= 1.0 and high <= 3.0
