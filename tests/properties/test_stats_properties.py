"""augbench's statistics against numpy and scipy on skewed samples (issue 15, property tests).

Samples are drawn by hypothesis: lognormal with a wide sigma, exponential, Pareto tails, a few values a thousand
times the rest, heavy ties (rounded to a handful of values), every length from 1 up, and plain lists of floats
over nine orders of magnitude. References: `np.median`, `np.percentile` (linear, the default `stats.py` documents),
`np.mean`, `np.std(ddof=1)`, `scipy.stats.t.ppf`, `scipy.stats.spearmanr`, and for the bootstrap a numpy
re-implementation of the resampling `bootstrap.py` documents (same seeded generator, same draws).

Tolerances, and why: numpy interpolates percentiles as b - (b - a) * (1 - t) when t >= 0.5 and takes the median of
an even count as (a + b) / 2, ours a + (b - a) * t everywhere, so the two may differ in the last bit: 1e-12
relative to the sample's largest value. The mean is an exact `math.fsum` here and a pairwise sum in numpy (same
1e-12). The Student t quantile comes from a table of 6 decimals (error <= 5e-7) for df <= 30 and a Cornish-Fisher
expansion beyond (error < 1e-5, as `stats.py` documents); the interval's half-width inherits that relative error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.augbench.agreement import spearman
from bench_assets.augbench.bootstrap import N_BOOT, SEED, ratio_interval
from bench_assets.augbench.stats import UNSTABLE_CV, percentile, summarize, t_quantile_975

REL = 1e-12
QUANTILES = {"p5": 5, "p25": 25, "median": 50, "p75": 75, "p95": 95}


# ---------------------------------------------------------------------------------------------
# Skewed samples


def skewed_sample(seed: int, kind: str, n: int) -> list[float]:
    """n positive values of one skewed family (throughputs in items/s are positive)."""
    rng = np.random.default_rng(seed)
    if kind == "lognormal":
        x = rng.lognormal(mean=rng.uniform(0, 10), sigma=rng.uniform(0.5, 3.0), size=n)
    elif kind == "exponential":
        x = rng.exponential(scale=rng.uniform(1, 1e4), size=n)
    elif kind == "pareto":  # heavy tail: shape 0.5..2 (no finite mean below 1)
        x = (rng.pareto(rng.uniform(0.5, 2.0), size=n) + 1.0) * rng.uniform(1, 100)
    elif kind == "outliers":  # a steady cell with a few passes 1000x off
        x = rng.normal(500, 5, size=n).clip(1, None)
        k = rng.integers(0, max(1, n // 4) + 1)
        x[rng.choice(n, size=k, replace=False)] *= 1000.0
    else:  # "ties": a handful of distinct values
        x = rng.choice([1.5, 2.0, 2.0, 7.25, 300.0], size=n)
    return [float(v) for v in x]


samples = st.one_of(
    st.builds(skewed_sample, seed=st.integers(0, 2**32 - 1),
              kind=st.sampled_from(["lognormal", "exponential", "pareto", "outliers", "ties"]),
              n=st.one_of(st.integers(1, 4), st.integers(5, 200))),
    st.lists(st.floats(1e-3, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=50),
)


def close(got: float, want: float, scale: float) -> bool:
    return abs(got - want) <= REL * max(abs(want), scale)


# ---------------------------------------------------------------------------------------------
# stats.py


@settings(max_examples=100)
@given(values=samples)
def test_summary_matches_numpy_and_scipy(values: list[float]) -> None:
    """median, percentiles, mean, std (n - 1), cv, the Student-t interval on the mean, n and `unstable`, each
    against its numpy / scipy counterpart."""
    from scipy import stats as scipy_stats

    s = summarize(values)
    n = len(values)
    big = max(values)
    assert s["n"] == n
    for key, q in QUANTILES.items():
        assert close(s[key], float(np.percentile(values, q)), big), (key, s[key])
    assert close(s["median"], float(np.median(values)), big)
    assert close(s["mean"], float(np.mean(values)), big)
    assert min(values) <= s["p5"] <= s["p25"] <= s["median"] <= s["p75"] <= s["p95"] <= big
    if n == 1:
        assert s["std"] == s["cv"] == 0.0 and s["unstable"] is False
        assert s["ci95_low"] == s["ci95_high"] == s["mean"] == s["median"] == values[0]
        return
    std = float(np.std(values, ddof=1))
    assert abs(s["std"] - std) <= 1e-9 * std + REL * big, (s["std"], std)  # two-pass both; exact sums here
    cv = std / float(np.mean(values))
    assert abs(s["cv"] - cv) <= 1e-9 * cv + REL * big / float(np.mean(values))
    if abs(cv - UNSTABLE_CV) > 1e-9:
        assert s["unstable"] is (cv > UNSTABLE_CV)
    half = float(scipy_stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    assert s["ci95_high"] - s["ci95_low"] == pytest.approx(2 * half, rel=1e-5, abs=REL * big)
    assert (s["ci95_low"] + s["ci95_high"]) / 2 == pytest.approx(s["mean"], rel=1e-12, abs=REL * big)


@settings(max_examples=100)
@given(values=samples, seed=st.integers(0, 2**32 - 1))
def test_summary_does_not_depend_on_the_order_of_the_passes(values: list[float], seed: int) -> None:
    """The figures of a cell are the same whatever order its passes finished in, bit for bit (exact sums)."""
    shuffled = list(np.random.default_rng(seed).permutation(values))
    assert summarize(shuffled) == summarize(values)


@settings(max_examples=100)
@given(values=samples, q=st.one_of(st.sampled_from([0.0, 5.0, 25.0, 50.0, 75.0, 95.0, 100.0]),
                                  st.floats(0, 100, allow_nan=False)))
def test_percentile_matches_numpy(values: list[float], q: float) -> None:
    got = percentile(sorted(values), q)
    assert close(got, float(np.percentile(values, q)), max(values)), (q, got)


@settings(max_examples=100)
@given(df=st.one_of(st.integers(1, 40), st.integers(41, 10**6)))
def test_t_quantile_matches_scipy(df: int) -> None:
    """Within the table's rounding (6 decimals) up to df 30, within the documented 1e-5 beyond."""
    from scipy import stats as scipy_stats

    want = float(scipy_stats.t.ppf(0.975, df))
    assert abs(t_quantile_975(df) - want) <= (5e-7 if df <= 30 else 1e-5), (df, t_quantile_975(df), want)


def test_the_small_samples_by_hand() -> None:
    """n = 0, 1, 2 spelled out (the edges the strategies reach only by chance)."""
    assert summarize([]) == {**dict.fromkeys(("median", "mean", "std", "cv", "ci95_low", "ci95_high", "p5",
                                                "p25", "p75", "p95")), "n": 0, "unstable": None}
    two = summarize([1.0, 1001.0])
    assert two["median"] == two["mean"] == 501.0
    assert two["p5"] == pytest.approx(51.0) and two["p95"] == pytest.approx(951.0)
    assert two["std"] == pytest.approx(1000 / math.sqrt(2))
    assert two["ci95_high"] - two["mean"] == pytest.approx(12.706205 * 1000 / math.sqrt(2) / math.sqrt(2))


# ---------------------------------------------------------------------------------------------
# agreement.spearman


ranked = st.integers(2, 40).flatmap(lambda n: st.tuples(
    st.lists(st.one_of(st.floats(1e-3, 1e3), st.sampled_from([1.0, 2.0, 3.0])), min_size=n, max_size=n),
    st.lists(st.one_of(st.floats(1e-3, 1e3), st.sampled_from([1.0, 2.0, 3.0])), min_size=n, max_size=n)))


@settings(max_examples=100)
@given(xy=ranked)
def test_spearman_matches_scipy(xy: tuple[list[float], list[float]]) -> None:
    """Average ranks on ties, as scipy; None exactly where scipy has no value (a constant side)."""
    from scipy import stats as scipy_stats

    x, y = xy
    got = spearman(x, y)
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert got is None
        return
    want = float(scipy_stats.spearmanr(x, y).statistic)
    assert got is not None and abs(got - want) <= 1e-12, (got, want)
    assert spearman(y, x) == pytest.approx(got, abs=1e-15)
    assert spearman(x, [-v for v in y]) == pytest.approx(-got, abs=1e-12)


@given(x=st.lists(st.floats(1e-3, 1e3), min_size=0, max_size=1))
def test_spearman_of_fewer_than_two_points_is_none(x: list[float]) -> None:
    assert spearman(x, x) is None


# ---------------------------------------------------------------------------------------------
# bootstrap.ratio_interval


def numpy_interval(ours: list[list[float]], reference: list[list[float]], level: float = 0.95,
                   n_boot: int = N_BOOT, seed: int = SEED) -> tuple[float, float]:
    """What `bootstrap.py` documents, written again with numpy one resample at a time: per side (ours first, from
    one generator seeded `seed`), the repeats drawn with replacement (n_boot x repeats), then the passes of each
    drawn repeat (n_boot x repeats x passes); groups of unequal length pooled into one; each resample's median;
    the percentile interval of the ratios."""
    rng = np.random.default_rng(seed)

    def medians(groups: list[list[float]]) -> np.ndarray:
        groups = [g for g in groups if g]
        if len({len(g) for g in groups}) != 1:
            groups = [[x for g in groups for x in g]]
        r, k = len(groups), len(groups[0])
        reps = rng.integers(0, r, size=(n_boot, r))
        passes = rng.integers(0, k, size=(n_boot, r, k))
        out = np.empty(n_boot)
        for b in range(n_boot):
            drawn = [groups[reps[b, j]][passes[b, j, i]] for j in range(r) for i in range(k)]
            out[b] = np.median(drawn)
        return out

    ratios = medians(ours) / medians(reference)
    tail = (1 - level) / 2 * 100
    return float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100 - tail))


def _groups(seed: int, kind: str, repeats: int, passes: int, ragged: bool) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    groups = [skewed_sample(int(rng.integers(0, 2**32)), kind, passes) for _ in range(repeats)]
    if ragged and repeats > 1:  # one repeat lost passes (unequal lengths: pooled), or all of them
        groups[int(rng.integers(0, repeats))] = groups[0][: int(rng.integers(0, passes))]
    return groups


sides = st.builds(_groups, seed=st.integers(0, 2**32 - 1),
                  kind=st.sampled_from(["lognormal", "exponential", "pareto", "outliers", "ties"]),
                  repeats=st.integers(1, 4), passes=st.integers(1, 12), ragged=st.booleans())


@given(ours=sides, reference=sides)
def test_bootstrap_interval_matches_a_numpy_resampling(ours: list[list[float]], reference: list[list[float]]) -> None:
    """Same draws, numpy's median and percentile: the same interval (to the last bits of interpolation)."""
    got = ratio_interval(ours, reference, n_boot=300)
    assert got is not None
    want = numpy_interval(ours, reference, n_boot=300)
    assert got == pytest.approx(want, rel=1e-12)


@given(ours=sides, reference=sides, k_ours=st.integers(-20, 20), k_ref=st.integers(-20, 20))
def test_bootstrap_interval_scales_with_the_data(ours: list[list[float]], reference: list[list[float]], k_ours: int,
                                                 k_ref: int) -> None:
    """Medians and percentiles commute with scaling, so multiplying one side by 2^k (exact in floating point)
    multiplies the interval by 2^k, bit for bit; the interval is ordered and inside the range of ratios a
    median can take."""
    got = ratio_interval(ours, reference, n_boot=300)
    assert got is not None
    low, high = got
    flat_a = [x for g in ours for x in g]
    flat_b = [x for g in reference for x in g]
    assert min(flat_a) / max(flat_b) <= low <= high <= max(flat_a) / min(flat_b)
    scaled = ratio_interval([[x * 2.0**k_ours for x in g] for g in ours],
                            [[x * 2.0**k_ref for x in g] for g in reference], n_boot=300)
    assert scaled == (low * 2.0 ** (k_ours - k_ref), high * 2.0 ** (k_ours - k_ref))


@given(a=st.floats(1e-3, 1e6), b=st.floats(1e-3, 1e6), shape=st.tuples(st.integers(1, 4), st.integers(1, 9)))
def test_bootstrap_interval_of_constant_sides_is_the_ratio(a: float, b: float, shape: tuple[int, int]) -> None:
    r, k = shape
    assert ratio_interval([[a] * k] * r, [[b] * (k + 1)] * r, n_boot=200) == (a / b, a / b)


@given(good=sides, bad=st.sampled_from([[], [[]], [[0.0]], [[1.0, -2.0]]]))
def test_bootstrap_interval_is_none_without_positive_values(good: list[list[float]], bad: Any) -> None:
    assert ratio_interval(good, bad) is None and ratio_interval(bad, good) is None
