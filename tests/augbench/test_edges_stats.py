"""Edge cases of bench_assets/augbench/stats.py and bootstrap.py that kill mutants the other tests let survive
(issue 15, docs/testing.md "Mutation testing"). References: scipy's Student-t quantiles, numpy's percentile, and
samples whose bootstrap distribution is known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench_assets.augbench.bootstrap import ratio_interval
from bench_assets.augbench.stats import UNSTABLE_CV, percentile, summarize, t_quantile_975

# ------------------------------------------------------------------ t quantiles


@pytest.mark.parametrize("df", [1, 2, 3, 10, 29, 30])
def test_t_quantile_of_the_table_is_scipys_to_the_tables_six_decimals(df: int) -> None:
    from scipy import stats as scipy_stats

    assert t_quantile_975(df) == pytest.approx(float(scipy_stats.t.ppf(0.975, df)), abs=5e-7)


def test_the_table_is_used_up_to_30_degrees_of_freedom_and_the_expansion_beyond() -> None:
    assert t_quantile_975(1) == 12.706205
    assert t_quantile_975(30) == 2.042272  # the table's own digit, not the expansion's 2.0422724563
    assert t_quantile_975(31) != round(t_quantile_975(31), 6)  # the expansion, not a table entry


@pytest.mark.parametrize("df", [31, 35, 40, 60, 100, 1000, 10**6])
def test_t_quantile_beyond_the_table_is_scipys_within_the_documented_error(df: int) -> None:
    """The Cornish-Fisher expansion: error < 1e-5 beyond df 30 (stats.py); scipy is the reference."""
    from scipy import stats as scipy_stats

    assert t_quantile_975(df) == pytest.approx(float(scipy_stats.t.ppf(0.975, df)), abs=1e-7)


def test_t_quantile_needs_a_degree_of_freedom() -> None:
    with pytest.raises(ValueError, match=r"^degrees of freedom must be >= 1, got 0$"):
        t_quantile_975(0)


# ------------------------------------------------------------------ percentiles


def test_percentile_at_both_ends_and_between_ranks_is_numpys() -> None:
    values = [2.0, 3.0, 11.0, 40.0]
    for q in (0, 5, 25, 50, 62.5, 75, 95, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-15)
    assert percentile(values, 100) == 40.0 and percentile(values, 0) == 2.0
    assert percentile([7.0], 50) == 7.0


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^percentile of no values$"):
        percentile([], 50)


# ------------------------------------------------------------------ summaries


def test_summary_of_two_values_uses_the_t_quantile_with_one_degree_of_freedom() -> None:
    from scipy import stats as scipy_stats

    s = summarize([9.0, 11.0])
    std = math.sqrt(2.0)
    half = float(scipy_stats.t.ppf(0.975, 1)) * std / math.sqrt(2)
    assert s["mean"] == 10.0 and s["std"] == pytest.approx(std, rel=1e-15)
    assert s["ci95_low"] == pytest.approx(10.0 - half, abs=1e-5) and s["ci95_high"] == pytest.approx(10 + half,
                                                                                                        abs=1e-5)
    assert s["n"] == 2 and s["median"] == 10.0


def test_summary_of_32_values_uses_the_expansion_and_matches_scipy() -> None:
    from scipy import stats as scipy_stats

    values = [float(v) for v in range(100, 132)]
    s = summarize(values)
    sem = float(np.std(values, ddof=1)) / math.sqrt(len(values))
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=float(np.mean(values)), scale=sem)
    assert s["ci95_low"] == pytest.approx(low, rel=1e-9) and s["ci95_high"] == pytest.approx(high, rel=1e-9)


def test_summary_of_one_value_is_that_value_everywhere() -> None:
    s = summarize([4])
    assert s == {"median": 4.0, "mean": 4.0, "std": 0.0, "cv": 0.0, "ci95_low": 4.0, "ci95_high": 4.0, "p5": 4.0,
                 "p25": 4.0, "p75": 4.0, "p95": 4.0, "n": 1, "unstable": False}


def test_summary_of_nothing_is_none_everywhere() -> None:
    assert summarize([]) == {"median": None, "mean": None, "std": None, "cv": None, "ci95_low": None,
                             "ci95_high": None, "p5": None, "p25": None, "p75": None, "p95": None, "n": 0,
                             "unstable": None}


def test_summary_refuses_non_finite_throughputs() -> None:
    with pytest.raises(ValueError, match=r"^throughputs must be finite, got \[1\.0, inf\]$"):
        summarize([1.0, math.inf])
    with pytest.raises(ValueError, match="throughputs must be finite"):
        summarize([math.nan])


def test_a_cv_exactly_at_the_threshold_is_stable_and_just_over_is_unstable() -> None:
    on = summarize([8.5, 10.0, 11.5])  # mean 10, std 1.5: cv 0.15 exactly
    assert on["cv"] == UNSTABLE_CV and on["unstable"] is False
    over = summarize([8.4, 10.0, 11.6])
    assert over["cv"] > UNSTABLE_CV and over["unstable"] is True


def test_a_zero_mean_gives_cv_zero_without_spread_and_infinite_with_it() -> None:
    flat = summarize([0.0, 0.0, 0.0])
    assert flat["cv"] == 0.0 and flat["unstable"] is False
    spread = summarize([-1.0, 1.0])
    assert spread["mean"] == 0.0 and spread["cv"] == math.inf and spread["unstable"] is True


# ------------------------------------------------------------------ bootstrap


def test_every_repeat_can_be_drawn() -> None:
    """Two repeats of constant throughput 1 and 3 against a reference at 1: a resample holds both repeats (median
    2), or one twice (1 or 3, probability 1/4 each), so the 95% interval is exactly (1, 3)."""
    assert ratio_interval([[1.0] * 3, [3.0] * 3], [[1.0] * 3]) == (1.0, 3.0)


def test_every_pass_can_be_drawn() -> None:
    """One repeat with passes 1, 100, 100: the resampled median is 1 with probability 7/27 (two or three draws of
    the first pass), so the interval reaches down to 1."""
    assert ratio_interval([[1.0, 100.0, 100.0]], [[1.0]]) == (1.0, 100.0)


def test_level_zero_collapses_the_interval_to_the_median_ratio() -> None:
    rng = np.random.default_rng(3)
    a = [list(rng.lognormal(np.log(2000), 0.2, 6)) for _ in range(3)]
    b = [list(rng.lognormal(np.log(1000), 0.2, 6)) for _ in range(3)]
    low, high = ratio_interval(a, b, level=0.0)
    assert low == high
    wide, narrow = ratio_interval(a, b, level=0.95), ratio_interval(a, b, level=0.5)
    assert wide[0] < narrow[0] < low < narrow[1] < wide[1]


def test_values_below_one_are_fine_and_zero_on_either_side_gives_no_interval() -> None:
    assert ratio_interval([[0.5]], [[0.25]]) == (2.0, 2.0)
    assert ratio_interval([[0.0, 1.0]], [[1.0]]) is None
    assert ratio_interval([[1.0]], [[1.0, 0.0]]) is None
    assert ratio_interval([[1.0]], []) is None
