"""The dbt report over a hand-written warehouse: real numbers in every mart, loud failures, Dagster checks.

The warehouse is written table by table with the loader's declared schemas (schema.create_sql), so the marts
are checked against values computed here from the same rows, independently of SQL.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from statistics import fmean, median
from typing import Any

import duckdb
import pytest

from bench_assets.report.dbt_build import build_report_db, report_db_path
from bench_assets.report.dbt_project import ReportBuildError, prepare_manifest
from bench_assets.rf100vl.report.warehouse_tables import PUBLISHED_FAMILIES, published_size_rank
from tests.shared_reports import hand_written_report
from tests.tables import TABLE_SCHEMAS, create_sql, dbt_python_model

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

NOT_IN_CATALOG = "(not in RF100-VL)"
CATALOG = {"aerial-a": "Aerial", "aerial-b": "Aerial", "doc-a": "Document", "doc-b": "Document",
           "med-a": "Medical", "med-b": "Medical", "unscored-c": "Sports"}
LAB = ["aerial-a", "aerial-b", "doc-a", "doc-b", "med-a", "med-b", "mini-shapes"]  # the campaigns' suite
# (model, dataset) -> mAP50_95, mAP50, mAP75, AR_max_det of the current test score; None = undefined (COCO -1)
OURS = {
    "yolov9-t": {"aerial-a": (0.40, 0.60, 0.42, 0.55), "aerial-b": (0.30, 0.50, 0.31, 0.45),
                 "doc-a": (0.62, 0.80, 0.66, 0.70), "doc-b": (0.55, 0.75, 0.58, None),
                 "med-a": (0.20, 0.35, 0.18, 0.30), "med-b": (0.25, 0.42, 0.24, 0.36),
                 "mini-shapes": (0.70, 0.90, 0.75, 0.80),
                 "mini-tiny": (0.99, 0.99, 0.99, 0.99)},  # outside the campaign's suite: in no mean
    "yolov9-s": {"aerial-a": (0.44, 0.63, 0.47, 0.58), "aerial-b": (0.33, 0.52, 0.35, 0.47),
                 "doc-a": (0.66, 0.83, 0.70, 0.74), "doc-b": (0.58, 0.77, 0.61, 0.66),
                 "med-a": (0.24, 0.39, 0.22, 0.33), "mini-shapes": (0.72, 0.91, 0.77, 0.82)},
    "dfine-n": {"aerial-a": (0.10, 0.20, 0.08, 0.25), "doc-a": (0.15, 0.30, 0.12, 0.28),
                "med-a": (0.05, 0.12, 0.03, 0.15)},
}
IMPORTED = {"rfdetr-n-lb": {"aerial-a": (0.50, 0.70, 0.52, 0.66), "aerial-b": (0.41, 0.60, 0.43, 0.57),
                            "doc-a": (0.71, 0.88, 0.75, 0.80), "doc-b": (0.64, 0.82, 0.67, 0.75),
                            "med-a": (0.30, 0.46, 0.29, 0.40), "med-b": (0.35, 0.52, 0.34, None)}}
MODELS = {"yolov9-t": ("yolov9", "t", 0), "yolov9-s": ("yolov9", "s", 1), "dfine-n": ("dfine", "n", 0)}
# yolov9-t trained again with seeds 1 and 2 on three datasets (`bench campaign --replicates 3`): mAP50-95 per seed.
REPLICATES = {"yolov9-t@seed1": {"aerial-a": 0.41, "aerial-b": 0.29, "doc-a": 0.60},
              "yolov9-t@seed2": {"aerial-a": 0.38, "aerial-b": 0.31, "doc-a": 0.63}}
PUBLISHED = {"rfdetr-n": ("RF-DETR", "N", 0.577), "rfdetr-s": ("RF-DETR", "S", 0.602),
             "lwdetr-t": ("LW-DETR", "T", 0.571), "dfine-n-readme": ("D-FINE", "N", 0.05)}


def _wall_seconds(model: str, dataset: str) -> float:
    return 600.0 + 60 * len(dataset) + (300 if model.endswith("-s") else 0)


def _best_epoch(model: str, dataset: str) -> int:
    return 40 + len(dataset) + len(model)


def warehouse_rows() -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLE_SCHEMAS}
    rows["catalog"] = [{"dataset": d, "domain": dom, "rf20vl": False, "num_classes": 3} for d, dom in CATALOG.items()]
    rows["suites"] = ([{"suite": "lab", "dataset": d} for d in LAB]
                      + [{"suite": "mini", "dataset": d} for d in ("mini-shapes", "mini-tiny")])
    rows["models"] = [{"model": m, "family": f, "size": s, "size_rank": r, "recipe": "default",
                       "recipe_conformant": True, "suite": "lab", "expected_datasets": len(LAB)}
                      for m, (f, s, r) in MODELS.items()]
    rows["published"] = [{"model": m, "family": f, "size": s, "mAP50_95": v, "source": "README",
                          "libreyolo_family": PUBLISHED_FAMILIES.get(f),
                          "size_rank": published_size_rank(PUBLISHED_FAMILIES.get(f), s)}
                         for m, (f, s, v) in PUBLISHED.items()]
    for model, scores in OURS.items():
        family, size, _ = MODELS[model]
        for dataset, (m5095, m50, m75, ar) in scores.items():
            sig = f"sig-{model}-{dataset}"
            rows["scores"].append({"model": model, "dataset": dataset, "dataset_version": "v1",
                                   "fingerprint": f"fp-{model}-{dataset}", "split": "test", "is_current": True,
                                   "mAP50_95": m5095, "mAP50": m50, "mAP75": m75, "AR_max_det": ar,
                                   "mAP_large": None, "run_signature": sig})
            rows["runs"].append({"model": model, "dataset": dataset, "dataset_version": "v1", "run_signature": sig,
                                 "is_current": True, "family": family, "size": size, "recipe_conformant": True,
                                 "epochs": 100, "epochs_done": 100 if dataset != "med-a" else 80,
                                 "best_epoch": _best_epoch(model, dataset), "valid_mAP50_95": m5095 + 0.01,
                                 "wall_seconds": _wall_seconds(model, dataset), "resumed": dataset == "doc-b",
                                 "finished": "2026-01-02T03:04:05+00:00", "run_dir": f"runs/{model}/{dataset}/r1"})
    # Rows the report must ignore: an older score, a valid-split score, and a superseded run.
    rows["scores"] += [
        {"model": "yolov9-t", "dataset": "aerial-a", "dataset_version": "v0", "fingerprint": "fp-old", "split": "test",
         "is_current": False, "mAP50_95": 0.01, "mAP50": 0.01, "run_signature": "sig-old"},
        {"model": "yolov9-t", "dataset": "aerial-a", "dataset_version": "v1", "fingerprint": "fp-valid",
         "split": "valid", "is_current": True, "mAP50_95": 0.02, "mAP50": 0.02,
         "run_signature": "sig-yolov9-t-aerial-a"},
    ]
    rows["runs"].append({"model": "yolov9-t", "dataset": "aerial-a", "run_signature": "sig-old", "is_current": False,
                         "family": "yolov9", "size": "t", "recipe_conformant": True, "epochs": 100, "epochs_done": 30,
                         "best_epoch": 12, "wall_seconds": 7200.0, "resumed": False, "run_dir": "runs/old"})
    for model, scores in REPLICATES.items():
        seed = int(model.rsplit("@seed", 1)[1])
        rows["models"].append({"model": model, "family": "yolov9", "size": "t", "size_rank": 0, "recipe": "default",
                               "recipe_conformant": True, "suite": f"{model}:datasets",
                               "expected_datasets": len(scores), "base_model": "yolov9-t", "seed": seed})
        rows["suites"] += [{"suite": f"{model}:datasets", "dataset": d} for d in scores]
        for dataset, m5095 in scores.items():
            sig = f"sig-{model}-{dataset}"
            rows["scores"].append({"model": model, "dataset": dataset, "dataset_version": "v1",
                                   "fingerprint": f"fp-{model}-{dataset}", "split": "test", "is_current": True,
                                   "mAP50_95": m5095, "mAP50": m5095, "run_signature": sig, "base_model": "yolov9-t",
                                   "seed": seed})
            rows["runs"].append({"model": model, "dataset": dataset, "dataset_version": "v1", "run_signature": sig,
                                 "is_current": True, "family": "yolov9", "size": "t", "recipe_conformant": True,
                                 "epochs": 100, "epochs_done": 100, "best_epoch": 50, "valid_mAP50_95": m5095,
                                 "wall_seconds": 1000.0, "resumed": False, "finished": "2026-01-02T03:04:05+00:00",
                                 "run_dir": f"runs/{model}/{dataset}/r1", "base_model": "yolov9-t", "seed": seed})
    for model, entries in IMPORTED.items():
        rows["submissions"].append({"model": model, "origin": "imported", "split": "test", "suite": "rf100vl",
                                    "expected_datasets": 100, "datasets_scored": len(entries),
                                    "valid_submission": False, "invalid_reasons": ["6 datasets scored"]})
        rows["submission_datasets"] += [
            {"model": model, "origin": "imported", "dataset": d, "dataset_version": "hf1", "mAP50_95": m5095,
             "mAP50": m50, "mAP75": m75, "AR_max_det": ar, "wall_seconds": 99.0}
            for d, (m5095, m50, m75, ar) in entries.items()]
    rows["submissions"].append({"model": "yolov9-t", "origin": "ours", "split": "test", "suite": "lab",
                                "expected_datasets": 100, "datasets_scored": 7, "valid_submission": True,
                                "mAP50_95": fmean(v[0] for d, v in OURS["yolov9-t"].items() if d in LAB),
                                "invalid_reasons": []})
    return rows


def write_warehouse(path: Path, rows: dict[str, list[dict[str, Any]]]) -> None:
    con = duckdb.connect(str(path))
    try:
        for table in TABLE_SCHEMAS:
            con.execute(create_sql(table))
            for row in rows.get(table, []):
                cols = ", ".join(f'"{c}"' for c in row)
                con.execute(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    finally:
        con.close()


def query(db: Path, sql: str) -> list[dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def campaign_scores(model: str) -> dict[str, tuple[float | None, ...]]:
    """What the report should average for a model: its campaign datasets (ours) or its whole file (imported)."""
    if model in IMPORTED:
        return IMPORTED[model]
    return {d: v for d, v in OURS[model].items() if d in LAB}


def mean_defined(values: list[float | None]) -> float:
    return fmean(v for v in values if v is not None)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, int]]]:
    """The report built over these rows (and the augbench ones of tests/augbench/test_paper_report.py, whose marts
    read other tables) once per run of the suite for both modules; the tests only read it."""
    home, counts = hand_written_report(tmp_path_factory)
    yield home, counts


def test_leaderboard_means_are_unweighted_over_the_campaign_and_skip_undefined(built: tuple[Path, dict]) -> None:
    home, counts = built
    board = {r["model"]: r for r in query(report_db_path(home), "SELECT * FROM rf100vl_leaderboard")}
    assert set(board) == {*OURS, *IMPORTED}
    assert counts["rf100vl_leaderboard"] == 4
    for model, row in board.items():
        scores = campaign_scores(model)
        assert row["datasets_scored"] == len(scores), model
        for i, col in enumerate(("mAP50_95", "mAP50", "mAP75", "AR_max_det")):
            assert row[col] == pytest.approx(mean_defined([v[i] for v in scores.values()])), (model, col)
    # By hand: yolov9-t's AR_max_det skips doc-b (undefined) and mini-tiny (outside its suite): 6 values, not 7 or 8.
    assert board["yolov9-t"]["AR_max_det"] == pytest.approx((0.55 + 0.45 + 0.70 + 0.30 + 0.36 + 0.80) / 6)
    assert board["yolov9-t"]["mAP50_95"] == pytest.approx((0.40 + 0.30 + 0.62 + 0.55 + 0.20 + 0.25 + 0.70) / 7)
    t = board["yolov9-t"]
    assert t["median_train_minutes"] == pytest.approx(median(_wall_seconds("yolov9-t", d) / 60 for d in LAB))
    assert t["gpu_hours"] == pytest.approx(sum(_wall_seconds("yolov9-t", d) for d in LAB) / 3600)
    assert t["median_best_epoch"] == pytest.approx(median(_best_epoch("yolov9-t", d) for d in LAB))
    assert (t["origin"], t["datasets_expected"], t["recipe_conformant"], t["valid_submission"]) == (
        "ours", 7, True, True)
    lb = board["rfdetr-n-lb"]
    assert (lb["origin"], lb["datasets_expected"], lb["valid_submission"]) == ("imported", 100, False)
    assert lb["median_train_minutes"] is None and lb["gpu_hours"] is None and lb["recipe_conformant"] is None
    assert board["yolov9-s"]["valid_submission"] is False  # no submission file yet
    ranked = sorted(board, key=lambda m: -board[m]["mAP50_95"])
    assert [board[m]["rank"] for m in ranked] == [1, 2, 3, 4]


def test_domain_and_dataset_marts_cover_imported_and_mini(built: tuple[Path, dict]) -> None:
    home, _ = built
    db = report_db_path(home)
    domains = {(r["model"], r["domain"]): r for r in query(db, "SELECT * FROM rf100vl_domain_scores")}
    assert domains[("rfdetr-n-lb", "Medical")]["mAP50_95"] == pytest.approx((0.30 + 0.35) / 2)
    assert domains[("rfdetr-n-lb", "Medical")]["origin"] == "imported"
    assert domains[("yolov9-t", NOT_IN_CATALOG)]["datasets"] == 1  # mini-shapes; mini-tiny is off-campaign
    assert domains[("yolov9-s", "Medical")]["datasets"] == 1
    assert domains[("yolov9-s", "Document")]["mAP50"] == pytest.approx((0.83 + 0.77) / 2)

    ds = {(r["model"], r["dataset"]): r for r in query(db, "SELECT * FROM rf100vl_dataset_scores")}
    assert len(ds) == sum(map(len, OURS.values())) + sum(map(len, IMPORTED.values()))
    mini = ds[("yolov9-t", "mini-shapes")]
    assert (mini["domain"], mini["in_campaign"], mini["mAP50_95"]) == (NOT_IN_CATALOG, True, 0.70)
    assert ds[("yolov9-t", "mini-tiny")]["in_campaign"] is False
    ours = ds[("yolov9-s", "doc-a")]
    assert ours["valid_mAP50_95"] == pytest.approx(0.67)
    assert ours["train_minutes"] == pytest.approx(_wall_seconds("yolov9-s", "doc-a") / 60)
    assert ours["best_epoch"] == _best_epoch("yolov9-s", "doc-a")
    imp = ds[("rfdetr-n-lb", "med-b")]
    assert (imp["origin"], imp["domain"], imp["dataset_version"], imp["AR_max_det"]) == ("imported", "Medical", "hf1",
                                                                                         None)
    assert imp["valid_mAP50_95"] is None and imp["train_minutes"] is None and imp["best_epoch"] is None

    weakest = query(db, "SELECT * FROM rf100vl_weakest_datasets ORDER BY model, rank")
    by_model: dict[str, list[str]] = {}
    for r in weakest:
        by_model.setdefault(r["model"], []).append(r["dataset"])
    for model in {*OURS, *IMPORTED}:
        scores = campaign_scores(model)
        assert by_model[model] == sorted(scores, key=lambda d: (scores[d][0], d))[:5], model


def test_train_cost_is_ours_only_over_current_runs(built: tuple[Path, dict]) -> None:
    home, _ = built
    cost = {r["model"]: r for r in query(report_db_path(home), "SELECT * FROM rf100vl_train_cost")}
    assert set(cost) == set(OURS)
    t = cost["yolov9-t"]
    campaign = [d for d in OURS["yolov9-t"] if d in LAB]
    assert t["datasets_trained"] == len(campaign)
    assert t["total_gpu_hours"] == pytest.approx(sum(_wall_seconds("yolov9-t", d) for d in campaign) / 3600)
    assert t["mean_epochs_done"] == pytest.approx(fmean(80 if d == "med-a" else 100 for d in campaign))
    assert (t["resumed_runs"], t["superseded_runs"], t["superseded_gpu_hours"]) == (1, 1, pytest.approx(2.0))
    assert cost["dfine-n"]["superseded_gpu_hours"] == 0


def test_published_comparison_ranks_everyone_against_the_best_published(built: tuple[Path, dict]) -> None:
    home, _ = built
    rows = query(report_db_path(home), "SELECT * FROM rf100vl_published_comparison ORDER BY rank_overall, model")
    assert {(r["model"], r["origin"]) for r in rows} == {
        *((m, "ours") for m in OURS), ("rfdetr-n-lb", "imported"), *((m, "published") for m in PUBLISHED)}
    by = {r["model"]: r for r in rows}
    assert by["rfdetr-n"]["delta_vs_best_published"] == pytest.approx(0.577 - 0.602)
    # A 6-of-100-dataset entry has a mean, but no gap to a published result: it is not comparable with one.
    imported = mean_defined([v[0] for v in IMPORTED["rfdetr-n-lb"].values()])
    assert by["rfdetr-n-lb"]["mAP50_95"] == pytest.approx(imported)
    assert by["rfdetr-n-lb"]["delta_vs_best_published"] is None and by["rfdetr-n-lb"]["not_comparable_because"]
    assert by["rfdetr-s"]["rank_overall"] == 1 and by["rfdetr-s"]["datasets_scored"] is None
    assert by["yolov9-s"]["family"] == "yolov9" and by["yolov9-s"]["datasets_scored"] == 6
    assert [r["rank_overall"] for r in rows] == sorted(r["rank_overall"] for r in rows)


def test_published_comparison_groups_ours_under_the_published_family_beside_the_same_size(
        built: tuple[Path, dict]) -> None:
    home, _ = built
    by = {(r["model"], r["origin"]): r
          for r in query(report_db_path(home), "SELECT * FROM rf100vl_published_comparison")}
    ours, published = by[("dfine-n", "ours")], by[("dfine-n-readme", "published")]
    assert (ours["family_label"], published["family_label"]) == ("D-FINE", "D-FINE")
    assert ours["size_rank"] == published["size_rank"] == 0  # n is D-FINE's first size in LibreYOLO's order
    assert ours["published_same_size"] == "dfine-n-readme"
    assert ours["delta_vs_published_same_size"] is None and ours["comparable"] is False  # 3 datasets: no gap
    # A family no published row stands for keeps its own key, with nothing to reproduce.
    t = by[("yolov9-t", "ours")]
    assert (t["family_label"], t["size_rank"], t["published_same_size"]) == ("yolov9", 0, None)
    assert by[("rfdetr-s", "published")]["size_rank"] > by[("rfdetr-n", "published")]["size_rank"]


def test_model_comparison_is_a_deterministic_paired_bootstrap(built: tuple[Path, dict]) -> None:
    paired_bootstrap = dbt_python_model("rf100vl_model_comparison").paired_bootstrap

    home, _ = built
    rows = query(report_db_path(home), "SELECT * FROM rf100vl_model_comparison")
    pairs = {(r["model_a"], r["model_b"]): r for r in rows}
    # Every unordered pair once (all four models share a dataset), model_a the better-ranked one.
    assert {frozenset(p) for p in pairs} == {frozenset(c) for c in combinations([*MODELS, *IMPORTED], 2)}
    assert len(pairs) == 6
    # yolov9-s leads the leaderboard thanks to mini-shapes, yet trails the imported model on all 5 datasets
    # the two share: a negative mean_diff whose whole interval lies below 0.
    pair = pairs[("yolov9-s", "rfdetr-n-lb")]
    a = {d: v[0] for d, v in campaign_scores("yolov9-s").items()}
    b = {d: v[0] for d, v in campaign_scores("rfdetr-n-lb").items()}
    expected = paired_bootstrap(a, b, resamples=10_000, seed=0)
    assert pair["datasets"] == 5 == expected.datasets  # med-b and mini-shapes are not shared
    assert pair["mean_diff"] == pytest.approx(fmean(a[d] - b[d] for d in a.keys() & b.keys()))
    assert pair["mean_diff"] == pytest.approx(-0.062)
    assert (pair["ci_low"], pair["ci_high"]) == (pytest.approx(expected.ci_low), pytest.approx(expected.ci_high))
    assert pair["ci_low"] <= pair["mean_diff"] <= pair["ci_high"] < 0
    assert pair["distinguishable"] is True
    close = pairs[("yolov9-s", "yolov9-t")]
    assert close["ci_low"] <= close["mean_diff"] <= close["ci_high"]
    few = pairs[("yolov9-t", "dfine-n")]
    assert few["datasets"] == 3 and few["ci_low"] > 0 and few["distinguishable"] is False  # too few to call


def test_replicates_measure_the_seed_noise_and_stay_out_of_every_mean(built: tuple[Path, dict]) -> None:
    """yolov9-t@seed1 and @seed2 are yolov9-t trained again: no leaderboard row or mean of their own, a seed spread
    per dataset, their cost under yolov9-t, and the comparisons with yolov9-t widened by the noise they measure."""
    import math
    from statistics import stdev

    mod = dbt_python_model("rf100vl_model_comparison")
    home, _ = built
    db = report_db_path(home)
    assert not [r for r in query(db, "SELECT model FROM rf100vl_leaderboard") if "@" in r["model"]]
    assert not query(db, "SELECT * FROM rf100vl_dataset_scores WHERE model LIKE '%@%'")
    spread = {r["dataset"]: r for r in query(db, "SELECT * FROM rf100vl_seed_spread")}
    assert set(spread) == {"aerial-a", "aerial-b", "doc-a"}
    for dataset, r in spread.items():
        seeds = [OURS["yolov9-t"][dataset][0], *(REPLICATES[m][dataset] for m in REPLICATES)]
        assert (r["model"], r["seeds"], list(r["seed_list"])) == ("yolov9-t", 3, [0, 1, 2])
        assert r["sd_mAP50_95"] == pytest.approx(stdev(seeds))
        assert r["range_mAP50_95"] == pytest.approx(max(seeds) - min(seeds))
    pooled = fmean(r["sd_mAP50_95"] ** 2 for r in spread.values())
    pairs = {(r["model_a"], r["model_b"]): r for r in query(db, "SELECT * FROM rf100vl_model_comparison")}
    with_t = pairs[("yolov9-s", "yolov9-t")]
    assert with_t["seed_noise"] == pytest.approx(1.959963984540054 * math.sqrt(pooled / with_t["datasets"]))
    assert with_t["ci_low_seeds"] == pytest.approx(
        with_t["mean_diff"] - math.hypot(with_t["mean_diff"] - with_t["ci_low"], with_t["seed_noise"]))
    assert with_t["ci_low_seeds"] < with_t["ci_low"] and with_t["ci_high_seeds"] > with_t["ci_high"]
    assert with_t["verdict"] == ("tie" if with_t["ci_low_seeds"] <= 0 <= with_t["ci_high_seeds"] else "a")
    # Neither replicated: no seed noise, the bootstrap interval as it was; the verdict follows it.
    other = pairs[("yolov9-s", "rfdetr-n-lb")]
    assert other["seed_noise"] is None and other["ci_low_seeds"] == other["ci_low"]
    assert other["verdict"] == "b" and other["distinguishable"] is True
    assert pairs[("yolov9-t", "dfine-n")]["verdict"] == "tie"  # 3 shared datasets: too few to call
    # The rule itself, on numbers worked by hand: a 1-point lead with a +-0.5 bootstrap interval is a tie once two
    # models' seeds vary by 3 points per dataset over 4 datasets (noise 1.96 x sqrt(2 x 0.03^2 / 4) = 4.2 points).
    c = mod.PairedComparison(4, 0.01, 0.005, 0.015, 10_000, 0.95)
    noise = mod.seed_noise(0.03 ** 2, 0.03 ** 2, 4)
    assert noise == pytest.approx(1.959963984540054 * 0.03 * math.sqrt(0.5))
    low, high = mod.widened(c, noise)
    assert low < 0 < high and mod.verdict(low, high, 5) == "tie"
    assert mod.verdict(*mod.widened(c, None), 5) == "a" and mod.seed_noise(None, None, 4) is None
    cost = {r["model"]: r for r in query(db, "SELECT * FROM rf100vl_train_cost")}
    assert "yolov9-t@seed1" not in cost
    assert (cost["yolov9-t"]["replicate_runs"], cost["yolov9-t"]["replicate_hours"]) == (6, pytest.approx(6000 / 3600))
    assert cost["yolov9-t"]["datasets_trained"] == len(LAB)  # its own runs only


def test_a_failing_dbt_test_fails_the_build_and_keeps_the_previous_report(built: tuple[Path, dict],
                                                                          tmp_path: Path) -> None:
    good_home, _ = built
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy2(report_db_path(good_home), report_db_path(home))
    before = report_db_path(home).read_bytes()
    rows = warehouse_rows()
    dup = dict(rows["scores"][0], fingerprint="fp-dup", mAP50_95=0.99)  # a second current test score
    rows["scores"].append(dup)
    write_warehouse(home / "warehouse.duckdb", rows)
    with pytest.raises(ReportBuildError) as err:
        build_report_db(home)
    assert "unique_combination_stg_warehouse__scores" in str(err.value)
    assert report_db_path(home).read_bytes() == before  # the live report was never touched
    assert not [p for p in home.iterdir() if p.name.startswith(".tmp-report")]  # no scratch left behind


def test_a_build_starts_from_the_last_builds_parse_and_builds_the_same_report(
        built: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dbt parses the project (about a third of a build's CPU) only when nothing valid was kept: the `built`
    fixture's build left its parse under dbt_report/target/, named for the project state and the vars. (dbt's
    file log, off in the product, is turned on here to read what dbt did.)"""
    from bench_assets.report import dbt_build

    monkeypatch.setenv("DBT_LOG_LEVEL_FILE", "debug")

    good_home, counts = built
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy2(good_home / "warehouse.duckdb", home / "warehouse.duckdb")
    with dbt_build._report_build(report_db_path(home), home / "warehouse.duckdb", start_from_live=False) as build:
        assert json.loads(build.dbt_vars()) == {"report_db": "report.duckdb", "warehouse_db": "warehouse.duckdb"}
        cache = dbt_build._parse_cache_path(build.dbt_vars())
        assert cache.exists()
        run = dbt_build._run_dbt_build(build, None, lambda level, text: None)
        assert run.returncode == 0, run.tail()
        dbt_log = (build.target / "dbt.log").read_text()
        assert "Partial parsing enabled, no changes found, skipping parsing" in dbt_log
        assert build.publish() == counts
    assert dbt_build.kept_parses() == [cache]


def _manifest() -> dict[str, Any]:
    import json

    from bench_assets.report.dbt_project import MANIFEST_PATH

    prepare_manifest()
    return json.loads(MANIFEST_PATH.read_text())


def _dbt_result_lines(instance: Any, run_id: str) -> list[str]:
    """dbt's per-node result lines ("3 of 114 OK created sql view model ...") streamed to the run's log."""
    return [e.user_message for e in instance.all_logs(run_id)
            if e.dagster_event is None and re.match(r"\d+ of \d+ ", e.user_message or "")]


def test_dagster_lineage_and_checks_mirror_the_dbt_project() -> None:
    """Every model is `report/<name>` on the lineage dbt declares; every dbt test is a check of its model."""
    import dagster as dg

    from bench_assets.report.dbt_assets import report_dbt_assets

    manifest = _manifest()
    nodes = manifest["nodes"]
    models = {uid: n for uid, n in nodes.items() if n["resource_type"] == "model"}
    key = {uid: dg.AssetKey(["report", n["name"]]) for uid, n in models.items()}
    warehouse = dg.AssetKey(["report", "warehouse"])
    assert set(report_dbt_assets.keys) == set(key.values())
    for uid, n in models.items():
        ups = n["depends_on"]["nodes"]
        expected = {key[u] for u in ups if u in key} | ({warehouse} if any(u.startswith("source.") for u in ups)
                                                        else set())
        assert report_dbt_assets.asset_deps[key[uid]] == expected, uid
    deps = report_dbt_assets.asset_deps
    # By hand, so the test does not just replay the code: sources are the loader's one asset, refs are models.
    assert deps[dg.AssetKey(["report", "stg_warehouse__scores"])] == {warehouse}
    assert deps[dg.AssetKey(["report", "rf100vl_model_comparison"])] == {
        dg.AssetKey(["report", "rf100vl_leaderboard"]), dg.AssetKey(["report", "int_model_dataset_scores"]),
        dg.AssetKey(["report", "rf100vl_seed_spread"])}
    assert warehouse in report_dbt_assets.dependency_keys and warehouse not in report_dbt_assets.keys
    assert report_dbt_assets.op.pool == "duckdb_writer"
    assert report_dbt_assets.required_resource_keys == {"home", "io_manager"}  # no dbt resource any more
    assert report_dbt_assets.can_subset

    spec = report_dbt_assets.specs_by_key[dg.AssetKey(["report", "rf100vl_leaderboard"])]
    assert (spec.group_name, spec.kinds) == ("report", {"dbt", "duckdb"})
    from bench_assets.platform.automation import eager_until_requested

    assert spec.automation_condition == eager_until_requested()
    assert spec.description == nodes["model.bench_report.rf100vl_leaderboard"]["description"].strip()
    columns = {c.name: c for c in spec.metadata["dagster/column_schema"].schema.columns}
    assert columns["origin"].description.startswith("`ours` (trained and scored here)")

    tests = {uid: n for uid, n in nodes.items() if n["resource_type"] == "test"}
    checks = {c.metadata["dbt/unique_id"]: c for c in report_dbt_assets.check_specs}
    assert set(checks) == set(tests)
    assert len({c.key for c in checks.values()}) == len(tests)  # unique names
    for uid, test in tests.items():
        check = checks[uid]
        assert re.fullmatch(r"[A-Za-z0-9_]+", check.name) and check.name == test["name"], uid
        assert check.asset_key == key[test["attached_node"]] and check.blocking is False, uid
    by_name = {c.name: c for c in checks.values()}
    assert by_name["not_null_rf100vl_leaderboard_model"].description == "not_null on rf100vl_leaderboard.model"
    rel = by_name["relationships_rf100vl_domain_scores_model__model__ref_rf100vl_leaderboard_"]
    assert rel.asset_key == dg.AssetKey(["report", "rf100vl_domain_scores"])
    assert {d.asset_key for d in rel.additional_deps} == {dg.AssetKey(["report", "rf100vl_leaderboard"])}


def test_the_manifest_reader_attaches_singular_tests_and_keeps_check_names_valid_and_unique() -> None:
    """Cases the project does not have yet: singular tests, a test of a source, a clashing name, warn severity."""
    from bench_assets.report.dbt_assets import _report_graph

    def model(name: str, ups: list[str], version: int | None = None) -> dict[str, Any]:
        return {"resource_type": "model", "name": name, "package_name": "p", "fqn": ["p", name], "alias": name,
                "version": version, "depends_on": {"nodes": ups}, "description": f"{name} rows\n",
                "raw_code": f"select {name}", "config": {"materialized": "table"},
                "columns": {"a": {"description": "the a", "data_type": "int"}}}

    def test(name: str, ups: list[str], attached: str | None = None, **extra: Any) -> dict[str, Any]:
        return {"resource_type": "test", "name": name, "fqn": ["p", name], "depends_on": {"nodes": ups},
                "attached_node": attached, "config": {"severity": extra.pop("severity", "ERROR")}, **extra}

    manifest = {"metadata": {"project_name": "p"}, "nodes": {
        "model.p.stg": model("stg", ["source.p.warehouse.scores", "source.p.warehouse.runs"]),
        "model.p.mart": model("mart", ["model.p.stg", "model.p.stg"]),
        "model.p.old": model("old", ["model.p.stg"], version=2),
        "test.p.no_negative": test("no-negative.scores", ["model.p.mart"], original_file_path="tests/x.sql"),
        "test.p.both": test("both", ["model.p.stg", "model.p.mart"], meta={"dagster": {"ref": {"name": "mart"}}}),
        "test.p.nowhere": test("nowhere", ["model.p.stg", "model.p.mart"]),
        "test.p.on_source": test("on_source", ["source.p.warehouse.scores"]),
        "test.p.not_null_mart_a.1111": test("not_null_mart_a", ["model.p.mart"], "model.p.mart", column_name="a",
                                            test_metadata={"name": "not_null", "kwargs": {"column_name": "a"}},
                                            severity="warn"),
        "test.p.not_null_mart_a.2222": test("not_null_mart_a", ["model.p.mart"], "model.p.mart", column_name="a",
                                            test_metadata={"name": "not_null", "kwargs": {"column_name": "a"}}),
    }}
    graph = _report_graph(manifest)
    assert {a.key for a in graph.assets.values()} == {("report", "stg"), ("report", "mart"), ("report", "old_v2")}
    deps = {s["key"]: s["deps"] for s in graph.specs}
    assert deps[("report", "stg")] == [("report", "warehouse")]  # two sources, one loader asset
    assert deps[("report", "mart")] == [("report", "stg")]
    checks = {uid: (c.key, c.check_name) for uid, c in graph.checks.items()}
    assert checks == {
        "test.p.no_negative": (("report", "mart"), "no_negative_scores"),  # singular: its one upstream model
        "test.p.both": (("report", "mart"), "both"),  # singular over two models: meta.dagster.ref says which
        "test.p.not_null_mart_a.1111": (("report", "mart"), "not_null_mart_a"),
        "test.p.not_null_mart_a.2222": (("report", "mart"), "not_null_mart_a_2222"),
    }  # `nowhere` (two models, no ref) and `on_source` are no check: they still run with the build
    assert graph.checks["test.p.not_null_mart_a.1111"].description == "not_null on mart.a [warn severity]"
    assert graph.checks["test.p.no_negative"].description == "singular test tests/x.sql on mart"
    assert graph.checks["test.p.both"].deps == (("report", "stg"),)


def test_a_warn_severity_dbt_test_is_a_warn_check_result(tmp_path: Path) -> None:
    import dagster as dg

    from bench_assets.report.dbt_assets import _check_result, _CheckNode
    from bench_assets.report.dbt_build import _Build

    check = _CheckNode("test.p.t", ("report", "mart"), "t", "fqn:p.t", "not_null on mart.a", ())
    warn = _check_result(_Build(tmp_path / "report.duckdb", tmp_path),
                         check, {"status": "warn", "failures": 3, "message": "Got 3 results"})
    assert (warn.passed, warn.severity, warn.metadata["failures"].value) == (False, dg.AssetCheckSeverity.WARN, 3)
    assert warn.description == "not_null on mart.a: Got 3 results"
    ok = _check_result(_Build(tmp_path / "report.duckdb", tmp_path), check, {"status": "pass", "failures": 0})
    assert (ok.passed, ok.severity, ok.description) == (True, dg.AssetCheckSeverity.ERROR, "not_null on mart.a")


def test_importing_the_dbt_assets_imports_neither_dbt_nor_dagster_dbt() -> None:
    probe = ("import sys; import bench_assets.report.dbt_assets as m; assert len(m.report_dbt_assets.keys) > 10; "
             "print(sorted({k.split('.')[0] for k in sys.modules} & {'dbt', 'dagster_dbt', 'duckdb'}))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).resolve().parents[2], check=True,
                         capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_dagster_materializes_the_marts_with_every_dbt_test_as_a_check(built: tuple[Path, dict],
                                                                      tmp_path: Path) -> None:
    """Through Dagster: `report/<model>` assets with row counts, one check per dbt test, subsets that build only
    what is selected, and a failing dbt test that fails the run, names the rows and leaves the report as it was."""
    import dagster as dg

    from bench_assets.report.dbt_assets import report_dbt_assets
    from resources.bench_home import BenchHome

    tests = [n for n in _manifest()["nodes"] if n.startswith("test.")]
    home = tmp_path / "home"
    home.mkdir()
    rows = warehouse_rows()
    write_warehouse(home / "warehouse.duckdb", rows)
    resources = {"home": BenchHome(root=str(home))}

    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([report_dbt_assets], instance=instance, resources=resources)
    assert result.success
    mats = {m.materialization.asset_key: m.materialization for m in result.get_asset_materialization_events()}
    assert set(mats) == set(report_dbt_assets.keys)
    assert mats[dg.AssetKey(["report", "rf100vl_leaderboard"])].metadata["dagster/row_count"].value == 4
    assert mats[dg.AssetKey(["report", "rf100vl_model_comparison"])].metadata["dagster/row_count"].value == 6
    assert mats[dg.AssetKey(["report", "rf100vl_leaderboard"])].metadata["execution_time_s"].value > 0
    assert len(query(report_db_path(home), "SELECT * FROM rf100vl_weakest_datasets WHERE origin = 'imported'")) == 5
    comparison = "SELECT * FROM rf100vl_model_comparison ORDER BY model_a, model_b"  # same rows, same intervals
    assert query(report_db_path(home), comparison) == query(report_db_path(built[0]), comparison)

    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    assert len(evaluations) == len(tests) == len(report_dbt_assets.check_keys)
    assert all(e.passed for e in evaluations.values())
    unique = evaluations[(dg.AssetKey(["report", "rf100vl_leaderboard"]), "unique_rf100vl_leaderboard_model")]
    assert unique.metadata["failures"].value == 0 and unique.description == "unique on rf100vl_leaderboard.model"
    lines = _dbt_result_lines(instance, result.run_id)  # dbt's progress, streamed to the run's log
    assert len(lines) == len(tests) + len(report_dbt_assets.keys)
    assert any("OK created sql table model main.rf100vl_leaderboard" in line for line in lines)

    # A subset builds only what is selected (and its checks), over the live report's other tables.
    cost = dg.AssetKey(["report", "rf100vl_train_cost"])
    sub = dg.materialize([report_dbt_assets], selection=[cost], instance=instance, resources=resources)
    assert sub.success
    assert [m.materialization.asset_key for m in sub.get_asset_materialization_events()] == [cost]
    sub_checks = {e.asset_check_key for e in sub.get_asset_check_evaluations()}
    assert sub_checks == {k for k in report_dbt_assets.check_keys if k.asset_key == cost} and len(sub_checks) == 7
    lines = _dbt_result_lines(instance, sub.run_id)
    assert len(lines) == 1 + 7 and all(line.startswith(f"{i} of 8 ") for i, line in enumerate(lines, 1))
    assert "rf100vl_train_cost" in lines[0]
    assert query(report_db_path(home), comparison) == query(report_db_path(built[0]), comparison)  # still there

    # A subset run whose dbt test fails: the step fails loudly, the check says which, the report stays as it was.
    before = report_db_path(home).read_bytes()
    rows["scores"].append(dict(rows["scores"][0], fingerprint="fp-dup"))
    (home / "warehouse.duckdb").unlink()
    write_warehouse(home / "warehouse.duckdb", rows)
    bad = dg.materialize([report_dbt_assets], selection=["report/stg_warehouse__scores"], raise_on_error=False,
                         instance=instance, resources=resources)
    assert not bad.success
    assert not bad.get_asset_materialization_events()
    failed = [e for e in bad.get_asset_check_evaluations() if not e.passed]
    assert [e.check_name for e in failed] == ["unique_combination_stg_warehouse__scores_model__dataset"]
    assert failed[0].severity == dg.AssetCheckSeverity.ERROR and failed[0].metadata["failures"].value == 1
    assert "model='yolov9-t', dataset='aerial-a', n_rows=2" in failed[0].metadata["failing_rows"].value
    scores = dg.AssetKey(["report", "stg_warehouse__scores"])  # the model's other tests ran too, and passed
    assert {e.asset_check_key for e in bad.get_asset_check_evaluations()} == {
        k for k in report_dbt_assets.check_keys if k.asset_key == scores}
    message = bad.get_step_failure_events()[0].step_failure_data.error.message
    assert "model='yolov9-t', dataset='aerial-a', n_rows=2" in message
    assert report_db_path(home).read_bytes() == before
    assert not [p for p in home.iterdir() if p.name.startswith(".tmp-report")]


def test_a_missing_or_stale_manifest_is_named_not_silently_used(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_assets.report import dbt_assets, dbt_project

    project = tmp_path / "dbt_report"
    shutil.copytree(dbt_project.DBT_PROJECT_DIR, project, ignore=shutil.ignore_patterns("target", "logs"))
    manifest = project / "target" / "manifest.json"
    monkeypatch.setattr(dbt_project, "DBT_PROJECT_DIR", project)
    monkeypatch.setattr(dbt_project, "MANIFEST_PATH", manifest)
    monkeypatch.setattr(dbt_project, "_FINGERPRINT_PATH", manifest.with_name("manifest.fingerprint"))
    monkeypatch.delenv("DAGSTER_IS_DEV_CLI", raising=False)
    monkeypatch.setattr(dbt_project, "_UNPREPARED_OK", False)
    with pytest.raises(ReportBuildError, match="is missing .* prepare_manifest"):
        dbt_project._manifest_for_definitions()
    manifest.parent.mkdir()
    manifest.write_text("{}")
    manifest.with_name("manifest.fingerprint").write_text(dbt_project.project_fingerprint())
    assert dbt_project.manifest_is_fresh()
    model = project / "models" / "marts" / "rf100vl" / "rf100vl_leaderboard.sql"
    model.write_text(model.read_text() + "\n-- edited\n")
    assert not dbt_project.manifest_is_fresh()
    with pytest.raises(ReportBuildError, match="is stale"):
        dbt_project._manifest_for_definitions()
    # A process that never builds the report (`bench`'s dataset, training, augbench runs) loads the stale one
    # as it is, and without any manifest leaves the dbt assets out instead of parsing.
    monkeypatch.setattr(dbt_project, "_UNPREPARED_OK", True)
    assert dbt_project._manifest_for_definitions() == manifest
    manifest.unlink()
    assert dbt_project._manifest_for_definitions() is None and dbt_assets._define_report_dbt_assets() is None


def test_only_comparable_rows_get_a_leaderboard_rank_and_the_others_say_why(built: tuple[Path, dict]) -> None:
    """No model of this warehouse covers every catalogue dataset and nothing else: none takes a place among the
    published results (which keep 1..3), each says why, and both marts agree."""
    home, _ = built
    db = report_db_path(home)
    board = {r["model"]: r for r in query(db, "SELECT * FROM rf100vl_leaderboard")}
    assert {m: (r["benchmark_datasets_scored"], r["benchmark_datasets"]) for m, r in board.items()} == {
        "yolov9-t": (6, 7), "yolov9-s": (5, 7), "dfine-n": (3, 7), "rfdetr-n-lb": (6, 7)}
    assert all(r["comparable"] is False and r["leaderboard_rank"] is None for r in board.values())
    assert board["yolov9-t"]["not_comparable_because"] == (
        "6/7 RF100-VL datasets scored; its mean includes 1 dataset(s) outside RF100-VL")
    assert board["dfine-n"]["not_comparable_because"] == "3/7 RF100-VL datasets scored"
    # The import's file records no conf / NMS IoU / max_det: its conformance is unknown, not assumed.
    imported = board["rfdetr-n-lb"]
    assert imported["protocol_conformant"] is None and imported["recipe_conformant"] is None
    assert imported["not_comparable_because"] == "6/7 RF100-VL datasets scored; protocol conformance not recorded"
    rows = query(db, "SELECT * FROM rf100vl_published_comparison")
    assert {r["model"]: r["leaderboard_rank"] for r in rows} == {
        "rfdetr-s": 1, "rfdetr-n": 2, "lwdetr-t": 3, "yolov9-t": None, "yolov9-s": None, "dfine-n": None,
        "rfdetr-n-lb": None, "dfine-n-readme": 4}
    assert all(r["not_comparable_because"] == board[r["model"]]["not_comparable_because"]
               for r in rows if r["origin"] != "published")
    # Before devices are recorded (this warehouse's runs have none), hours are not called CPU or GPU.
    assert {r["train_device"] for r in board.values()} == {None}
    assert board["yolov9-t"]["train_hours"] == pytest.approx(board["yolov9-t"]["gpu_hours"])


def test_hours_follow_the_device_runs_record_and_a_complete_conformant_model_is_ranked(tmp_path: Path) -> None:
    rows = warehouse_rows()
    # dfine-n scored exactly the catalogue (narrowed to its 3 datasets), conformant: comparable.
    rows["catalog"] = [r for r in rows["catalog"] if r["dataset"] in OURS["dfine-n"]]
    home = tmp_path / "home"
    home.mkdir()
    write_warehouse(home / "warehouse.duckdb", rows)
    device = {"dfine-n": "cpu", "yolov9-t": "0", "yolov9-s": "0"}  # stats.json: "cpu" or the lane's CUDA device
    with duckdb.connect(str(home / "warehouse.duckdb")) as con:
        for model, dev in device.items():
            con.execute("UPDATE runs SET device = ? WHERE model = ?", [dev, model])
        con.execute("UPDATE runs SET device = 'cpu' WHERE model = 'yolov9-s' AND dataset = 'doc-a'")
    build_report_db(home)
    db = report_db_path(home)
    board = {r["model"]: r for r in query(db, "SELECT * FROM rf100vl_leaderboard")}
    cpu = board["dfine-n"]
    hours = sum(_wall_seconds("dfine-n", d) for d in OURS["dfine-n"]) / 3600
    assert (cpu["train_device"], cpu["cpu_hours"], cpu["gpu_hours"]) == ("cpu", pytest.approx(hours), None)
    assert board["yolov9-t"]["train_device"] == "gpu" and board["yolov9-t"]["cpu_hours"] is None
    assert board["yolov9-s"]["train_device"] == "mixed"
    assert board["yolov9-s"]["cpu_hours"] == pytest.approx(_wall_seconds("yolov9-s", "doc-a") / 3600)
    cost = {r["model"]: r for r in query(db, "SELECT * FROM rf100vl_train_cost")}
    assert (cost["dfine-n"]["train_device"], cost["dfine-n"]["total_gpu_hours"]) == ("cpu", None)
    assert cost["dfine-n"]["total_cpu_hours"] == pytest.approx(hours)
    # dfine-n (mean 0.10) takes 4th place behind the three published results, in both marts.
    assert (cpu["comparable"], cpu["not_comparable_because"], cpu["leaderboard_rank"]) == (True, None, 4)
    ranks = {r["model"]: r["leaderboard_rank"] for r in query(db, "SELECT * FROM rf100vl_published_comparison")}
    assert ranks == {"rfdetr-s": 1, "rfdetr-n": 2, "lwdetr-t": 3, "dfine-n": 4, "yolov9-t": None,
                     "yolov9-s": None, "rfdetr-n-lb": None, "dfine-n-readme": 5}


def test_dbts_file_log_is_off_unless_asked_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from bench_assets.report.dbt_project import _dbt_env

    monkeypatch.delenv("DBT_LOG_LEVEL_FILE", raising=False)
    assert _dbt_env(tmp_path)["DBT_LOG_LEVEL_FILE"] == "none"
    monkeypatch.setenv("DBT_LOG_LEVEL_FILE", "debug")
    assert _dbt_env(tmp_path)["DBT_LOG_LEVEL_FILE"] == "debug"
