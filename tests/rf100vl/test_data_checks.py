"""Checks where the data is made: `training_finished` (rf100vl/checkpoint), `score_well_formed` (rf100vl/scores)
and `marts_fresh` (report/rendered). Records shaped like what a real run wrote (a CPU smoke run of yolo9-t on
mini-tiny, 2026-12-02), then the defects a campaign would otherwise publish silently."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from bench_assets.report.report_assets import marts_fresh
from bench_assets.rf100vl.scoring import sanity

STATS = {"model": "yolo9-t", "dataset": "mini-tiny", "epochs": 20, "epochs_done": 20, "best_epoch": 20,
         "valid_mAP50": 0.18298499677553964, "valid_mAP50_95": 0.04726653180500019,
         "recipe": {"conformant": True, "nonconformities": [], "file": "default.yaml", "sha256": "ab" * 32},
         "signature_fields": {"patience": 0, "imgsz": 640}}
SCORE = {"backend": "fast", "metrics": {"mAP50_95": 0.04102613925052506, "mAP50": 0.11},
         "parity": {"differing": [], "engines": {"fast": "hotcoco 1.3.0", "reference": "pycocotools 2.0.11"},
                    "identical": 13, "max_abs_deviation": 0.0, "tol": 0.0, "total": 13}}


def _stats(**changes: object) -> dict:
    s = copy.deepcopy(STATS)
    for key, value in changes.items():
        if key == "patience":
            s["signature_fields"]["patience"] = value
        elif key == "conformant":
            s["recipe"]["conformant"] = value
        else:
            s[key] = value
    return s


def test_training_finished_passes_a_complete_run_and_fails_a_cut_one() -> None:
    assert sanity.training_finished("yolo9-t/mini-tiny", _stats()).passed
    cut = sanity.training_finished("yolo9-t/mini-tiny", _stats(epochs_done=7))
    assert not cut.passed and "7 of 20" in cut.description and "last.pt" in cut.description
    early = sanity.training_finished("yolo9-t/mini-tiny", _stats(epochs_done=7, patience=5))
    assert early.passed and "stopped early" in early.description


@pytest.mark.parametrize("valid", [0.0, None, float("nan")])
def test_a_conformant_run_that_learned_nothing_fails(valid: float | None) -> None:
    finding = sanity.training_finished("yolo9-t/mini-tiny", _stats(valid_mAP50_95=valid))
    assert not finding.passed and "learned nothing" in finding.description
    smoke = sanity.training_finished("yolo9-t/mini-tiny", _stats(valid_mAP50_95=valid, conformant=False))
    assert smoke.passed  # a 20-epoch CPU smoke recipe may well stay at 0: not a protocol result


def test_score_headline_must_be_a_defined_ap() -> None:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    assert sanity.score_well_formed("yolo9-t/mini-tiny", SCORE).passed
    # pycocotools' own summary on a split with no ground truth of the evaluated kind: -1, the published accident
    gt = COCO()
    gt.dataset = {"images": [{"id": 1, "width": 64, "height": 64}], "annotations": [],
                  "categories": [{"id": 1, "name": "a"}]}
    gt.createIndex()
    dt = gt.loadRes(np.array([[1, 1.0, 1.0, 10.0, 10.0, 0.9, 1]]))
    ev = COCOeval(gt, dt, "bbox")
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    assert ev.stats[0] == -1
    bad = copy.deepcopy(SCORE)
    bad["metrics"]["mAP50_95"] = float(ev.stats[0])
    finding = sanity.score_well_formed("yolo9-t/mini-tiny", bad)
    assert not finding.passed and "-1" in finding.description


def test_score_needs_recorded_agreeing_parity() -> None:
    no_parity = {k: v for k, v in SCORE.items() if k != "parity"}
    assert "no parity" in sanity.score_well_formed("m/d", no_parity).description
    split = copy.deepcopy(SCORE)
    split["parity"]["differing"] = ["mAP75"]
    finding = sanity.score_well_formed("m/d", split)
    assert not finding.passed and "mAP75" in finding.description


def test_marts_older_than_the_warehouse_are_stale() -> None:
    assert marts_fresh(100.0, {"rf100vl_leaderboard": 101.0, "rf100vl_domain_scores": 102.0}).passed
    stale = marts_fresh(100.0, {"rf100vl_leaderboard": 99.0, "rf100vl_domain_scores": 102.0,
                                "rf100vl_train_cost": None})
    assert not stale.passed and "2 of 3" in stale.description and "rf100vl_leaderboard" in stale.description
    assert not marts_fresh(None, {"rf100vl_leaderboard": 1.0}).passed
