"""Paired comparison of two models scored on the same datasets (pure; numpy only).

The mean difference in mAP50-95 over the shared datasets, with a percentile bootstrap interval that
resamples datasets (the unit of the benchmark), so "a 0.4-point gap is noise" is computed per pair of
models, not assumed. Deterministic for a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairedComparison:
    datasets: int  # scored by both models
    mean_diff: float  # mean of (a - b), in the metric's units (0..1)
    ci_low: float
    ci_high: float
    resamples: int
    confidence: float

    @property
    def distinguishable(self) -> bool:
        """True when the interval excludes 0: the data separate the two models."""
        return self.ci_low > 0 or self.ci_high < 0


def paired_bootstrap(a: dict[str, float], b: dict[str, float], *, resamples: int = 10_000, seed: int = 0,
                     confidence: float = 0.95) -> PairedComparison:
    """Compare model a against model b on the datasets both have a score for."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two models share no scored dataset")
    diffs = np.array([a[d] - b[d] for d in shared], dtype=np.float64)
    if not np.isfinite(diffs).all():
        raise ValueError("a score is NaN or infinite; fix the scores before comparing")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    means = diffs[idx].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return PairedComparison(len(shared), float(diffs.mean()), float(low), float(high), resamples, confidence)
