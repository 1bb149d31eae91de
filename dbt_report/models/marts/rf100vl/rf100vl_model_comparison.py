"""Every pair of models (ours and imported) scored on shared datasets: is the mAP50-95 gap real or noise?

Each unordered pair appears once, model_a the better-ranked one on the leaderboard (ties: by name), so mean_diff
is usually >= 0; it can be negative when b does better on the datasets the two share. The interval is the paired
percentile bootstrap over datasets below (`paired_bootstrap`, deterministic: seed 0): the mean difference in
mAP50-95 over the shared datasets, with an interval that resamples datasets (the unit of the benchmark), so "a
0.4-point gap is noise" is computed per pair of models, not assumed.

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
COLUMNS = {"model_a": "string", "origin_a": "string", "model_b": "string", "origin_b": "string",
           "datasets": "int64", "mean_diff": "float64", "ci_low": "float64", "ci_high": "float64",
           "distinguishable": "bool"}


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


def model(dbt, session):
    dbt.config(materialized="table")
    import pandas as pd

    order = dbt.ref("rf100vl_leaderboard").filter("mAP50_95 is not null").order("rank, model").project("model, origin")
    scores = (dbt.ref("int_model_dataset_scores").filter("in_campaign and mAP50_95 is not null")
              .project("model, dataset, mAP50_95").fetchall())
    by_model: dict[str, dict[str, float]] = {}
    for name, dataset, value in scores:
        by_model.setdefault(name, {})[dataset] = value
    ranked = order.fetchall()
    rows = []
    for i, (a, origin_a) in enumerate(ranked):
        for b, origin_b in ranked[i + 1:]:
            if not by_model[a].keys() & by_model[b].keys():
                continue
            c = paired_bootstrap(by_model[a], by_model[b], resamples=RESAMPLES, seed=SEED)
            rows.append({"model_a": a, "origin_a": origin_a, "model_b": b, "origin_b": origin_b,
                         "datasets": c.datasets, "mean_diff": c.mean_diff, "ci_low": c.ci_low, "ci_high": c.ci_high,
                         "distinguishable": c.distinguishable and c.datasets >= MIN_SHARED_DATASETS})
    return pd.DataFrame({col: pd.Series([r[col] for r in rows], dtype=dtype) for col, dtype in COLUMNS.items()})
