"""Every pair of models (ours and imported) scored on shared datasets: is the mAP50-95 gap real or noise?

Each unordered pair appears once, model_a the better-ranked one on the leaderboard (ties: by name), so mean_diff
is usually >= 0; it can be negative when b does better on the datasets the two share. The interval is the paired
percentile bootstrap over datasets of `bench_assets.rf100vl.report.comparison.paired_bootstrap` (deterministic: seed 0).
"""

RESAMPLES = 10_000
SEED = 0
# Below this many shared datasets a percentile bootstrap has (almost) nothing to resample: one dataset gives a
# zero-width interval that "excludes 0" for any non-zero gap. Such pairs are never called distinguishable.
MIN_SHARED_DATASETS = 5
COLUMNS = {"model_a": "string", "origin_a": "string", "model_b": "string", "origin_b": "string",
           "datasets": "int64", "mean_diff": "float64", "ci_low": "float64", "ci_high": "float64",
           "distinguishable": "bool"}


def model(dbt, session):
    dbt.config(materialized="table")
    import pandas as pd

    from bench_assets.rf100vl.report.comparison import paired_bootstrap

    order = dbt.ref("leaderboard").filter("mAP50_95 is not null").order("rank, model").project("model, origin")
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
