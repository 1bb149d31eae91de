"""Summary statistics of one cell's timed passes (throughputs in items/s). Pure Python, no numpy/scipy.

- std: sample standard deviation (n - 1); cv = std / mean; `unstable` when cv > 0.15.
- ci95: Student-t interval on the mean, mean +/- t(0.975, n - 1) * std / sqrt(n).
- percentiles: linear interpolation between closest ranks (numpy's default, Excel PERCENTILE.INC).
- n = 1: std = cv = 0, the interval and every percentile equal the value, not unstable (nothing to judge).
- n = 0: every figure is None.
"""

from __future__ import annotations

import math
from statistics import NormalDist

UNSTABLE_CV = 0.15

# t(0.975, df) for df = 1..30 (standard table); beyond, a Cornish-Fisher expansion around the normal quantile
# (error < 1e-5 for df > 30).
_T975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
         2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
         2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272)


def t_quantile_975(df: int) -> float:
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = NormalDist().inv_cdf(0.975)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def percentile(sorted_values: list[float], q: float) -> float:
    """q in [0, 100] of already sorted values, linear between closest ranks."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(throughputs: list[float]) -> dict[str, float | int | bool | None]:
    values = [float(v) for v in throughputs]
    n = len(values)
    keys = ("median", "mean", "std", "cv", "ci95_low", "ci95_high", "p5", "p25", "p75", "p95")
    if n == 0:
        return {**dict.fromkeys(keys), "n": 0, "unstable": None}
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"throughputs must be finite, got {values}")
    s = sorted(values)
    mean = math.fsum(values) / n
    if n == 1:
        std = 0.0
        low = high = mean
    else:
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
        half = t_quantile_975(n - 1) * std / math.sqrt(n)
        low, high = mean - half, mean + half
    cv = std / mean if mean else (0.0 if std == 0 else math.inf)
    return {
        "median": percentile(s, 50), "mean": mean, "std": std, "cv": cv, "ci95_low": low, "ci95_high": high,
        "p5": percentile(s, 5), "p25": percentile(s, 25), "p75": percentile(s, 75), "p95": percentile(s, 95),
        "n": n, "unstable": cv > UNSTABLE_CV,
    }
