"""Every pair of models (ours and imported) scored on shared datasets: is the mAP50-95 gap real or noise?

Each unordered pair appears once, model_a the better-ranked one on the leaderboard (ties: by name), so mean_diff
is usually >= 0; it can be negative when b does better on the datasets the two share. The interval is the paired
percentile bootstrap over datasets below (`paired_bootstrap`, deterministic: seed 0): the mean difference in
mAP50-95 over the shared datasets, with an interval that resamples datasets (the unit of the benchmark), so "a
0.4-point gap is noise" is computed per pair of models, not assumed. Where a model was trained with several seeds
(rf100vl_seed_spread), the interval is widened by the seed-to-seed noise of the mean (`seed_noise`); a difference
whose widened interval includes 0 is a tie (`verdict`).

Self-contained: it imports numpy and pandas only, nothing of the product (a test holds it to that); the tests load
`paired_bootstrap` from this file.
"""

from typing import NamedTuple

import numpy as np

RESAMPLES = 10_000
SEED = 0
# Below this many shared datasets a percentile bootstrap has (almost) nothing to resample: one dataset gives a
# zero-width interval that "excludes 0" for any non-zero gap. Such pairs are never called distinguishable.
MIN_SHARED_DATASETS = 5
Z95 = 1.959963984540054
COLUMNS = {"model_a": "string", "origin_a": "string", "model_b": "string", "origin_b": "string",
           "datasets": "int64", "mean_diff": "float64", "ci_low": "float64", "ci_high": "float64",
           "seed_noise": "float64", "ci_low_seeds": "float64", "ci_high_seeds": "float64",
           "distinguishable": "bool", "verdict": "string"}


class PairedComparison(NamedTuple):
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


def paired_bootstrap(a: dict, b: dict, *, resamples: int = 10_000, seed: int = 0,
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


def seed_noise(var_a: float | None, var_b: float | None, datasets: int) -> float | None:
    """Half-width (95%) of the seed-to-seed noise of a mean difference over `datasets` datasets, from each model's
    pooled per-dataset seed variance (None: not measured, that model counts as noise-free). None when neither
    model was replicated."""
    if var_a is None and var_b is None:
        return None
    return Z95 * float(np.sqrt(((var_a or 0.0) + (var_b or 0.0)) / datasets))


def widened(c: PairedComparison, noise: float | None) -> tuple[float, float]:
    """The bootstrap interval widened by the seed noise: each side's distance to the mean difference and the noise
    added in quadrature (the two are independent sources of error)."""
    if noise is None:
        return c.ci_low, c.ci_high
    low = c.mean_diff - float(np.hypot(c.mean_diff - c.ci_low, noise))
    high = c.mean_diff + float(np.hypot(c.ci_high - c.mean_diff, noise))
    return low, high


def verdict(low: float, high: float, datasets: int) -> str:
    """'a' or 'b' when the interval (with seed noise) excludes 0 on enough datasets, else 'tie'."""
    if datasets < MIN_SHARED_DATASETS or low <= 0 <= high:
        return "tie"
    return "a" if low > 0 else "b"


def model(dbt, session):
    dbt.config(materialized="table")
    import pandas as pd

    order = dbt.ref("rf100vl_leaderboard").filter("mAP50_95 is not null").order("rank, model").project("model, origin")
    scores = (dbt.ref("int_model_dataset_scores").filter("in_campaign and mAP50_95 is not null")
              .project("model, dataset, mAP50_95").fetchall())
    by_model: dict[str, dict[str, float]] = {}
    for name, dataset, value in scores:
        by_model.setdefault(name, {})[dataset] = value
    # Each replicated model's pooled seed variance: the mean over its replicated datasets of the per-dataset variance.
    pooled = {name: var for name, var in dbt.ref("rf100vl_seed_spread").aggregate(
        "model, avg(sd_mAP50_95 * sd_mAP50_95)", "model").fetchall()}
    ranked = order.fetchall()
    rows = []
    for i, (a, origin_a) in enumerate(ranked):
        for b, origin_b in ranked[i + 1:]:
            if not by_model[a].keys() & by_model[b].keys():
                continue
            c = paired_bootstrap(by_model[a], by_model[b], resamples=RESAMPLES, seed=SEED)
            noise = seed_noise(pooled.get(a) if origin_a == "ours" else None,
                               pooled.get(b) if origin_b == "ours" else None, c.datasets)
            low, high = widened(c, noise)
            call = verdict(low, high, c.datasets)
            rows.append({"model_a": a, "origin_a": origin_a, "model_b": b, "origin_b": origin_b,
                         "datasets": c.datasets, "mean_diff": c.mean_diff, "ci_low": c.ci_low, "ci_high": c.ci_high,
                         "seed_noise": noise, "ci_low_seeds": low, "ci_high_seeds": high,
                         "distinguishable": call != "tie", "verdict": call})
    return pd.DataFrame({col: pd.Series([r[col] for r in rows], dtype=dtype) for col, dtype in COLUMNS.items()})
