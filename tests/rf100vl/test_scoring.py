"""Scoring from saved predictions: every COCO backend, read at max_det, validated inputs, `bench score`."""

from __future__ import annotations

import copy
import gzip
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import hotcoco
import numpy as np
import pytest

from bench_assets.cli import score as score_cli
from bench_assets.rf100vl.scoring.backends import PreparedGT, _run_fast_coco, _run_faster_coco_eval, _run_reference
from bench_assets.rf100vl.scoring.coco import parity, score, score_both
from bench_assets.rf100vl.scoring.loading import load_json_any
from bench_assets.rf100vl.scoring.results import (
    BACKENDS,
    METRICS,
    GroundTruthInvalid,
    InputUnreadable,
    MaxDetCut,
    PredictionsInvalid,
    ScoreResult,
    ScoreUndefined,
)
from bench_assets.rf100vl.scoring.validation import _check_predictions, validate_predictions

REPO = Path(__file__).resolve().parents[2]
SIZE = 640


# ---------------------------------------------------------------------------------------------
# Synthetic data (deterministic)


def _gt_doc(boxes_per_image: list[list[tuple[list[float], int]]], n_classes: int = 1) -> dict[str, Any]:
    images = [{"id": i, "file_name": f"{i}.jpg", "width": SIZE, "height": SIZE}
              for i in range(1, len(boxes_per_image) + 1)]
    anns = []
    for img, boxes in zip(images, boxes_per_image, strict=True):
        for b, c in boxes:
            anns.append({"id": len(anns) + 1, "image_id": img["id"], "category_id": c, "bbox": list(b),
                         "area": b[2] * b[3], "iscrowd": 0})
    cats = [{"id": c, "name": f"c{c}", "supercategory": "x"} for c in range(n_classes)]
    return {"images": images, "categories": cats, "annotations": anns}


def _det(image_id: int, bbox: list[float], score: float, category_id: int = 0) -> dict[str, Any]:
    return {"image_id": image_id, "category_id": category_id, "bbox": list(bbox), "score": score}


def _random_split(seed: int, n_images: int = 24, n_gt: int = 18, n_dets: int = 70, n_classes: int = 3,
                  decimals: int = 2) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Mixed sizes (all three COCO buckets), jittered hits, duplicates, wrong classes, false positives,
    scores rounded to `decimals` (ties)."""
    rng = np.random.default_rng(seed)
    per_image = []
    dets = []
    for i in range(1, n_images + 1):
        w = np.exp(rng.uniform(np.log(6), np.log(250), n_gt))
        h = w * np.exp(rng.normal(0, 0.3, n_gt))
        xy = rng.uniform(0, SIZE - 250, (n_gt, 2))
        gt = np.column_stack([xy, w, h]).round(1)
        cls = rng.integers(0, n_classes, n_gt)
        per_image.append([(b, int(c)) for b, c in zip(gt.tolist(), cls, strict=True)])
        sig = rng.uniform(0.01, 0.2, (n_gt, 1))
        hits = np.column_stack([gt[:, :2] + rng.normal(0, 1, (n_gt, 2)) * sig * gt[:, 2:],
                                gt[:, 2:] * np.exp(rng.normal(0, 1, (n_gt, 2)) * sig)])
        hit_cls = np.where(rng.random(n_gt) < 0.1, rng.integers(0, n_classes, n_gt), cls)
        n_fp = n_dets - n_gt
        fp_w = np.exp(rng.uniform(np.log(6), np.log(200), n_fp))
        fps = np.column_stack([rng.uniform(0, SIZE - 200, (n_fp, 2)), fp_w, fp_w * rng.uniform(0.5, 2, n_fp)])
        boxes = np.concatenate([hits, fps]).round(2)
        scores = np.concatenate([rng.beta(5, 2, n_gt), rng.beta(1.5, 5, n_fp)]).clip(0, 1).round(decimals)
        classes = np.concatenate([hit_cls, rng.integers(0, n_classes, n_fp)])
        for b, s, c in zip(boxes.tolist(), scores.tolist(), classes.tolist(), strict=True):
            dets.append(_det(i, b, float(s), int(c)))
    return _gt_doc(per_image, n_classes), dets


def _grid_split(n_images: int, per_image: int, side: float = 30.0, step: float = 40.0) -> dict[str, Any]:
    """Single class, `per_image` non-overlapping boxes per image on a grid."""
    cols = int(SIZE // step)
    boxes = [([(k % cols) * step + 2, (k // cols) * step + 2, side, side], 0) for k in range(per_image)]
    return _gt_doc([boxes] * n_images)


def _perfect(gt: dict[str, Any]) -> list[dict[str, Any]]:
    n = len(gt["annotations"])
    return [_det(a["image_id"], a["bbox"], 1.0 - k / (2 * n), a["category_id"])
            for k, a in enumerate(gt["annotations"])]


# ---------------------------------------------------------------------------------------------
# Backends agree; the reading is the documented one


@pytest.mark.parametrize("seed", [0, 1])
def test_backends_agree_on_all_metrics(seed: int) -> None:
    gt, dets = _random_split(seed)
    both = score_both(gt, dets)
    fast, ref = both.headline, both.reference
    assert fast.backend == "fast" and ref.backend == "reference"
    assert set(fast.metrics) == set(ref.metrics) == set(METRICS) and len(METRICS) == 13
    for name in METRICS:
        a, b = fast.metrics[name], ref.metrics[name]
        assert a is not None and b is not None, name
        assert abs(a - b) <= 1e-12, (name, a, b)
    assert both.audit.identical == both.audit.total == 13 and both.audit.ok
    # fast runs on hotcoco: the accumulated arrays equal stock pycocotools' cell for cell
    assert both.audit.tol == 0.0 and set(both.audit.arrays) == {"precision", "recall"}
    assert all(a["differing"] == 0 and a["max_abs_deviation"] == 0.0 for a in both.audit.arrays.values())
    assert both.audit.engines == {"fast": f"hotcoco {hotcoco.__version__}", "reference": "pycocotools 2.0.11"}
    assert 0.05 < fast.metrics["mAP50_95"] < 0.95  # a non-trivial score
    assert (fast.num_images, fast.num_gt, fast.num_dets) == (24, 24 * 18, 24 * 70)
    assert set(fast.seconds) >= {"validate", "load", "evaluate", "accumulate", "summarize", "total"}


@pytest.mark.parametrize("max_det", [40, 100, 300])
def test_backends_agree_at_other_max_det(max_det: int) -> None:
    gt, dets = _random_split(2, n_images=10, n_dets=40)
    both = score_both(gt, dets, max_det=max_det)
    assert both.audit.ok and both.audit.max_abs_deviation <= 1e-12
    assert both.headline.max_det == max_det
    # at most 40 detections per image: every cap from 40 up reads the same curve
    assert both.headline.metrics["AR_max_det"] == both.headline.metrics["AR100"]


def test_crowd_ground_truth_is_handled_alike() -> None:
    gt, dets = _random_split(4, n_images=6)
    for a in gt["annotations"][::7]:
        a["iscrowd"] = 1
    audit = score_both(gt, dets).audit
    assert audit.ok and audit.max_abs_deviation <= 1e-12


def test_inputs_are_not_modified_and_prepared_gt_is_reusable() -> None:
    gt, dets = _random_split(3, n_images=8)
    gt0, dets0 = copy.deepcopy(gt), copy.deepcopy(dets)
    first = score(gt, dets, backend="reference")
    prepared = PreparedGT.build(gt)
    a = score(prepared, dets, backend="fast")
    b = score(prepared, dets, backend="fast")
    assert gt == gt0 and dets == dets0
    assert a.metrics == b.metrics
    assert parity(a, first).identical == 13


def test_max_dets_trap_stock_summarize_reads_at_100() -> None:
    """120 boxes per image, one class, perfect detections: detections ranked 101..120 on an image are
    hits that only count at maxDets >= 120. Stock summarize() cannot report them."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt = _grid_split(n_images=2, per_image=120)
    dets = _perfect(gt)
    res = score(gt, dets, backend="reference", max_det=500)
    assert res.metrics["mAP50_95"] == 1.0 and res.metrics["AR_max_det"] == 1.0
    assert res.metrics["AR100"] == pytest.approx(100 / 120)
    assert res.metrics["AR100"] < res.metrics["AR_max_det"]
    assert parity(res, score(gt, dets, backend="fast", max_det=500)).identical == 13

    def stock(max_dets: list[int]) -> np.ndarray:
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        ev = COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(dets)), iouType="bbox")
        ev.params.maxDets = max_dets
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        return ev.stats

    at100 = stock([1, 10, 100, 500])[0]  # silently the AP at 100 detections per image
    assert at100 < 0.85 and at100 != res.metrics["mAP50_95"]
    # at 100 per image, 100 of 120 boxes recalled with precision 1: the 84 recall points 0.00 .. 0.83
    assert at100 == pytest.approx(84 / 101)
    assert stock([1, 10, 500])[0] == -1  # no 100 in maxDets: the headline line reads nothing


def test_missing_size_bucket_is_none_not_minus_one() -> None:
    # all boxes large (> 96^2 px): no small or medium ground truth
    gt = _gt_doc([[([10, 10, 120, 110], 0), ([300, 300, 200, 150], 0)], [([50, 60, 100, 100], 0)]])
    dets = [_det(1, [12, 10, 120, 110], 0.9), _det(1, [300, 310, 200, 150], 0.8), _det(2, [40, 40, 50, 50], 0.7)]
    for backend in BACKENDS:
        m = score(gt, dets, backend=backend).metrics
        for name in ("mAP_small", "mAP_medium", "AR_small", "AR_medium"):
            assert m[name] is None, (backend, name)
        assert isinstance(m["mAP50_95"], float) and 0 < m["mAP50_95"] < 1
        assert m["mAP_large"] == m["mAP50_95"]
        assert all(v is None or v >= 0 for v in m.values())


def test_category_without_ground_truth_is_excluded_not_zero() -> None:
    gt = _gt_doc([[([10, 10, 50, 50], 0), ([90, 90, 50, 50], 0)]], n_classes=2)  # class 1 has no box
    dets = [_det(1, [10, 10, 50, 50], 0.9, 0), _det(1, [90, 90, 50, 50], 0.8, 0), _det(1, [200, 200, 50, 50], 0.95, 1)]
    for backend in BACKENDS:
        assert score(gt, dets, backend=backend).metrics["mAP50_95"] == 1.0


def test_perfect_predictions_score_exactly_one() -> None:
    gt, _ = _random_split(5, n_images=10)
    dets = _perfect(gt)
    for backend in BACKENDS:
        m = score(gt, dets, backend=backend).metrics
        for name in ("mAP50_95", "mAP50", "mAP75", "mAP_small", "mAP_medium", "mAP_large", "AR100", "AR_small",
                     "AR_medium", "AR_large", "AR_max_det"):
            assert m[name] == 1.0, (backend, name, m[name])
        assert m["AR1"] < 1.0  # several boxes per image and class


def test_empty_predictions_score_zero() -> None:
    gt, _ = _random_split(6, n_images=5)
    for backend in BACKENDS:
        m = score(gt, [], backend=backend).metrics
        assert all(v == 0.0 for v in m.values()), (backend, m)
    assert score_both(gt, []).audit.identical == 13


def test_ground_truth_without_boxes_raises() -> None:
    gt = _gt_doc([[]])
    with pytest.raises(ScoreUndefined, match="mAP50_95 is undefined"):
        score(gt, [], backend="fast")


# ---------------------------------------------------------------------------------------------
# Hand-computed cases


BOX = [100.0, 100.0, 100.0, 100.0]  # area 10000: a "large" box
BOX2 = [300.0, 300.0, 100.0, 100.0]
# Stock pycocotools computes precision as tp / (tp + fp + eps), eps = np.spacing(1) = 2^-52, and so does hotcoco (the
# fast backend); faster-coco-eval as tp / (tp + fp). They differ only where tp + fp == 1 (from 2 on, n + eps rounds
# to n): after a category's first-ranked detection, if it is a hit, stock precision is 1 / (1 + 2^-52) = 1 - 2^-52,
# faster-coco-eval's 1. That value survives interpolation only when the next-ranked detection is a miss (or there is
# none). So a one-box category found first scores 1 - 2^-52 (stock, hotcoco) vs 1.0 (faster-coco-eval); the
# hand-computed cases below use two images (two hits) where the value is meant to come out exactly the same in all.
FIRST_HIT = 1 / (1 + np.spacing(1))
EXACT_RATIO = ("faster-coco-eval",)  # the backends that compute tp / (tp + fp) without the eps


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_box_one_perfect_detection(backend: str) -> None:
    defined = ("mAP50_95", "mAP50", "mAP75", "mAP_large", "AR1", "AR10", "AR100", "AR_large", "AR_max_det")
    m = score(_gt_doc([[(BOX, 0)], [(BOX, 0)]]), [_det(1, BOX, 0.5), _det(2, BOX, 0.4)], backend=backend).metrics
    assert {k for k in METRICS if m[k] is not None} == set(defined)
    assert all(m[k] == 1.0 for k in defined), m
    m = score(_gt_doc([[(BOX, 0)]]), [_det(1, BOX, 0.5)], backend=backend).metrics
    assert all(m[k] == 1.0 for k in defined if k.startswith("AR")), m  # recall has no eps
    for k in ("mAP50_95", "mAP50", "mAP75", "mAP_large"):
        if backend in EXACT_RATIO:
            assert m[k] == 1.0, (k, m[k])
        else:  # the eps artefact, as stock summarize() would print it
            assert FIRST_HIT <= m[k] < 1.0, (k, m[k])


def test_faster_coco_eval_differs_by_an_eps_where_a_first_hit_stands_alone() -> None:
    gt = _gt_doc([[(BOX, 0)]])
    assert score_both(gt, [_det(1, BOX, 0.5)]).audit.differing == []  # fast (hotcoco) = pycocotools, to the bit
    both = score_both(gt, [_det(1, BOX, 0.5)], backends=("faster-coco-eval", "reference"), tol=1e-6)
    assert both.headline.metrics["mAP50_95"] == 1.0 and both.reference.metrics["mAP50_95"] == FIRST_HIT
    audit = both.audit
    assert audit.ok and audit.differing == [] and 0 < audit.max_abs_deviation <= 2**-52
    assert audit.identical == 13 - 4  # the four APs differ in the last bit; ARs and the None buckets do not
    strict = parity(both.headline, both.reference)  # zero tolerance: the four APs and the precision array
    assert strict.differing == ["mAP50_95", "mAP50", "mAP75", "mAP_large", "precision"]
    assert strict.arrays["precision"]["differing"] > 0 and strict.arrays["recall"]["differing"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_box_per_image_detection_at_iou_062(backend: str) -> None:
    # [100,100,100,62] inside the box: IoU = 6200 / 10000 = 0.62, a hit at thresholds 0.50, 0.55, 0.60 only
    gt = _gt_doc([[(BOX, 0)], [(BOX, 0)]])
    m = score(gt, [_det(1, [100, 100, 100, 62], 0.9), _det(2, [100, 100, 100, 62], 0.8)], backend=backend).metrics
    assert m["mAP50"] == 1.0 and m["mAP75"] == 0.0
    assert m["mAP50_95"] == 0.3  # 3 of 10 thresholds, AP 1 or 0 each: exactly 303 / 1010
    assert m["AR_max_det"] == 0.3 and m["AR1"] == 0.3
    m = score(_gt_doc([[(BOX, 0)]]), [_det(1, [100, 100, 100, 62], 0.9)], backend=backend).metrics
    expected = 0.3 if backend in EXACT_RATIO else float(np.mean([FIRST_HIT] * 303 + [0.0] * 707))
    assert m["mAP50_95"] == expected and abs(m["mAP50_95"] - 0.3) < 1e-15


@pytest.mark.parametrize("backend", BACKENDS)
def test_hand_computed_precision_and_recall(backend: str) -> None:
    fp = [400, 400, 50, 50]
    # false positive ranked above the hit: precision at recall 1 is 1/2 -> AP 0.5 at every threshold
    m = score(_gt_doc([[(BOX, 0)]]), [_det(1, fp, 0.9), _det(1, BOX, 0.8)], backend=backend).metrics
    assert m["mAP50_95"] == 0.5 and m["mAP50"] == 0.5 and m["AR_max_det"] == 1.0 and m["AR1"] == 0.0
    # the same two detections with the hit ranked first: the false positive costs nothing
    gt2 = _gt_doc([[(BOX, 0)], [(BOX, 0)]])
    m = score(gt2, [_det(1, fp, 0.7), _det(1, BOX, 0.8), _det(2, BOX, 0.75)], backend=backend).metrics
    assert m["mAP50_95"] == 1.0
    # two boxes per image, one found in each: precision 1 up to recall 0.5 = 51 of the 101 recall points
    gt = _gt_doc([[(BOX, 0), (BOX2, 0)], [(BOX, 0), (BOX2, 0)]])
    m = score(gt, [_det(1, BOX, 0.8), _det(2, BOX2, 0.7)], backend=backend).metrics
    assert m["mAP50_95"] == 51 / 101 and m["AR_max_det"] == 0.5 and m["AR1"] == 0.5


# ---------------------------------------------------------------------------------------------
# Validation


def _small() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    gt = _gt_doc([[(BOX, 0)], [([10, 10, 20, 20], 1)]], n_classes=2)
    return gt, [_det(1, BOX, 0.9, 0), _det(2, [10, 10, 20, 20], 0.8, 1)]


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda d: d[0].update(image_id=99), "image_id"),
    (lambda d: d[0].update(image_id="1"), "image_id"),
    (lambda d: d[0].update(category_id=7), "category_id"),
    (lambda d: d[0].update(score=float("nan")), "score"),
    (lambda d: d[0].update(score=float("inf")), "score"),
    (lambda d: d[0].update(score=1.5), "score"),
    (lambda d: d[0].update(score=-0.01), "score"),
    (lambda d: d[0].update(score="0.9"), "score"),
    (lambda d: d[0].update(score=True), "score"),
    (lambda d: d[0].update(bbox=[1, 2, 3]), "bbox"),
    (lambda d: d[0].update(bbox="1 2 3 4"), "bbox"),
    (lambda d: d[0].update(bbox=[1, 2, float("nan"), 4]), "bbox"),
    (lambda d: d[0].update(bbox=[10, 10, -5, 4]), "negative width or height"),
    (lambda d: d[0].pop("score"), "lack required keys"),
    (lambda d: d.append(5), "not JSON objects"),
])
def test_invalid_predictions_are_rejected(mutate: Any, needle: str) -> None:
    gt, dets = _small()
    mutate(dets)
    with pytest.raises(PredictionsInvalid) as e:
        validate_predictions(gt, dets, 500)
    assert needle in str(e.value) and "fix:" in str(e.value)
    for backend in BACKENDS:
        with pytest.raises(PredictionsInvalid):
            score(gt, dets, backend=backend)


def test_invalid_predictions_report_counts_examples_and_the_file() -> None:
    gt, dets = _small()
    dets += [_det(1, BOX, float(s), 5) for s in range(2, 12)]  # 10 unknown-class detections, scores > 1 too
    with pytest.raises(PredictionsInvalid) as e:
        validate_predictions(gt, dets, 500, source="run7/test.json.gz")
    msg = str(e.value)
    assert msg.startswith("run7/test.json.gz: invalid predictions (2 problem(s))")
    assert "category_id: 10 detections" in msg and "score: 10 detections" in msg and "(+5 more)" in msg
    assert len(e.value.problems) == 2


def test_more_than_max_det_on_one_image_is_scored_and_reported_refused_only_when_strict() -> None:
    # 3 classes x 100 detections on one image: the per-image-per-class COCO cap (200) does not bite, but the
    # protocol caps the image's total: a fact without strict, the old refusal with it
    gt = _gt_doc([[(BOX, 0)], [(BOX, 1)]], n_classes=3)
    dets = [_det(1, [i, i, 20, 20], 0.5, c) for c in range(3) for i in range(100)] + [_det(2, BOX, 0.9, 1)]
    assert validate_predictions(gt, dets, 300, strict=True) is dets
    assert validate_predictions(gt, dets, 200) is dets
    with pytest.raises(PredictionsInvalid, match=r"violates the protocol: 1 image\(s\) carry more than max_det=200"
                       ) as e:
        validate_predictions(gt, dets, 200, strict=True)
    assert str(e.value) == (
        "predictions: invalid predictions: the file violates the protocol: 1 image(s) carry more than max_det=200 "
        "detections (most first: image 1: 300); fix: keep at most the 200 highest-scoring detections per image "
        "(all classes together) when writing predictions")
    for backend in BACKENDS:
        with pytest.raises(PredictionsInvalid, match="violates the protocol"):
            score(gt, dets, backend=backend, max_det=200, strict=True)
        res = score(gt, dets, backend=backend, max_det=200)
        assert res.max_det_cut == MaxDetCut(200, images_over=1, detections_cut=0,
                                                    images=[{"image_id": 1, "detections": 300, "cut": 0}])
        assert res.warnings == [
            "predictions: 1 image(s) carry more than max_det=200 detections, which the protocol does not allow "
            "(most first: image 1: 300); scored as pycocotools scores them: each (image, category) keeps its 200 "
            "highest-scoring detections (ties in file order), and no (image, category) has more, so every "
            "detection was evaluated"]
    res = score(gt, dets, backend="fast", max_det=60)  # 3 x 40 cut
    assert res.max_det_cut.to_dict() == {"max_det": 60, "images_over": 1, "detections_cut": 120,
                                         "images": [{"image_id": 1, "detections": 300, "cut": 120}]}
    assert res.warnings[0].endswith("so 120 detection(s) on 1 image(s) were not evaluated (image 1: 120); "
                                    "`bench score --strict` refuses such a file")


def test_valid_edge_cases() -> None:
    gt, dets = _small()
    dets += [_det(1, [5, 5, 0, 0], 0.0), _det(2, [5, 5, 3, 3], 1)]  # zero-size box, scores 0 and int 1
    assert validate_predictions(gt, dets, 500) is dets
    assert validate_predictions(gt, [], 500) == []
    with pytest.raises(PredictionsInvalid, match="not an array"):
        validate_predictions(gt, {"annotations": dets}, 500)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_det"):
        validate_predictions(gt, dets, 0)


def test_ground_truth_annotation_id_zero_is_rejected() -> None:
    """Decision: reject. Both backends use the annotation id as the match marker and 0 means 'unmatched',
    so a ground-truth box with id 0 could never be found (it would silently cost recall)."""
    gt, dets = _small()
    gt["annotations"][0]["id"] = 0
    with pytest.raises(GroundTruthInvalid, match="id 0") as e:
        score(gt, dets, backend="fast")
    assert "renumber annotation ids from 1" in str(e.value)


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda g: g["annotations"][1].update(id=1), "duplicated"),
    (lambda g: g["annotations"][0].pop("area"), "area"),
    (lambda g: g["annotations"][0].update(image_id=42), "unknown images"),
    (lambda g: g["annotations"][0].update(category_id=42), "unknown categories"),
    (lambda g: g["annotations"][0].update(bbox=[1, 2, -3, 4]), "bbox"),
    (lambda g: g.pop("categories"), "categories"),
])
def test_invalid_ground_truth_is_rejected(mutate: Any, needle: str) -> None:
    gt, dets = _small()
    mutate(gt)
    with pytest.raises(GroundTruthInvalid, match=needle):
        score(gt, dets, backend="reference")


def test_parity_audit_counts() -> None:
    gt, dets = _small()
    a = score(gt, dets, backend="fast")
    metrics = dict(a.metrics, mAP50=a.metrics["mAP50"] - 1e-9, mAP75=0.0, mAP_small=None)
    b = ScoreResult(**{**a.to_dict(), "metrics": metrics})
    audit = parity(a, b, tol=1e-6)
    assert audit.total == 13 and audit.identical == 10
    assert audit.differing == ["mAP75", "mAP_small"] and audit.max_abs_deviation == a.metrics["mAP75"]


# ---------------------------------------------------------------------------------------------
# Files and the CLI


def test_load_json_any(tmp_path: Path) -> None:
    doc = [{"a": 1}]
    (tmp_path / "p.json").write_text(json.dumps(doc))
    (tmp_path / "p.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    (tmp_path / "fake.json.gz").write_text(json.dumps(doc))
    (tmp_path / "bad.json").write_text("[{")
    assert load_json_any(tmp_path / "p.json") == doc == load_json_any(tmp_path / "p.json.gz")
    with pytest.raises(InputUnreadable, match="not gzip-compressed"):
        load_json_any(tmp_path / "fake.json.gz")
    with pytest.raises(InputUnreadable, match="not valid JSON"):
        load_json_any(tmp_path / "bad.json")
    # a NaN token is not JSON, but Python writes it: loaded (stdlib fallback) so validation can name the field
    (tmp_path / "nan.json").write_text('[{"image_id": 1, "category_id": 0, "bbox": [1, 2, 3, 4], "score": NaN}]')
    loaded = load_json_any(tmp_path / "nan.json")
    assert math.isnan(loaded[0]["score"])
    with pytest.raises(PredictionsInvalid, match="score: 1 detections"):
        validate_predictions(_small()[0], loaded, 500)


def _write_pair(tmp_path: Path, gt: dict[str, Any], dets: Any) -> tuple[str, str]:
    g, p = tmp_path / "gt.json", tmp_path / "pred.json.gz"
    g.write_text(json.dumps(gt))
    p.write_bytes(gzip.compress(json.dumps(dets).encode()))
    return str(g), str(p)


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gt, dets = _small()
    g, p = _write_pair(tmp_path, gt, dets)
    assert score_cli.main([g, p, "--backend", "reference", "--max-det", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "reference" and out["max_det"] == 100 and out["metrics"]["AR_max_det"] == 1.0
    assert out["metrics"]["AR_small"] == 1.0 and out["metrics"]["mAP_medium"] is None  # JSON null, not -1
    assert (out["num_images"], out["num_gt"], out["num_dets"]) == (2, 2, 2)

    assert score_cli.main([g, str(tmp_path / "missing.json")]) == 1
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert score_cli.main([g, str(tmp_path / "bad.json")]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    _, p_bad = _write_pair(tmp_path, gt, [_det(9, BOX, 0.5)])
    assert score_cli.main([g, p_bad]) == 1
    err = capsys.readouterr().err
    assert "invalid predictions" in err and "pred.json.gz" in err
    gt0 = copy.deepcopy(gt)
    gt0["annotations"][0]["id"] = 0
    g0, _ = _write_pair(tmp_path, gt0, [])
    assert score_cli.main([g0, p]) == 1
    assert "id 0" in capsys.readouterr().err
    assert score_cli.main([]) == 2
    assert score_cli.main([g, p, "--backend", "slow"]) == 2
    assert score_cli.main([g, p, "--max-det", "0"]) == 2
    assert score_cli.main([g, p, "--max-det", "x"]) == 2


@pytest.mark.slow
def test_bench_score_both_via_subprocess(tmp_path: Path) -> None:
    gt, dets = _random_split(9, n_images=10)
    g, p = _write_pair(tmp_path, gt, dets)
    r = subprocess.run([sys.executable, "-m", "bench_assets.cli.score", g, p, "--backend", "both"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["backend"] == "both" and out["headline_backend"] == "fast"
    assert out["parity"]["identical"] == out["parity"]["total"] == 13 and out["parity"]["differing"] == []
    assert out["metrics"] == out["reference"]["metrics"]
    assert all(isinstance(out["metrics"][k], float) and math.isfinite(out["metrics"][k]) for k in METRICS)


def test_score_cli_import_is_light() -> None:
    code = ("import bench_assets.cli.score, sys; "
            "print(sorted(m for m in ('dagster', 'torch', 'pandas', 'pycocotools', 'faster_coco_eval', 'hotcoco') "
            "if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize("seed", [0, 7])
def test_direct_faster_coco_eval_driver_matches_cocoeval_faster_bit_for_bit(seed: int) -> None:
    """`faster-coco-eval` feeds faster-coco-eval's C++ core directly; its accumulated arrays must equal what the
    library's own COCO + COCOeval_faster route produces, cell for cell (ties, crowd boxes, empty images)."""
    gt, dets = _random_split(seed, n_images=12, decimals=2)
    for a in gt["annotations"][::9]:
        a["iscrowd"] = 1
    gt["images"].append({"id": 999, "file_name": "none.jpg", "width": SIZE, "height": SIZE})  # no GT, only FPs
    dets.append(_det(999, [5, 5, 40, 40], 0.99, 1))
    prepared = PreparedGT.build(gt)
    arrays = _check_predictions(set(prepared.image_ids), set(prepared.cat_ids), dets, 500, "t")
    direct, p1 = _run_faster_coco_eval(prepared, dets, arrays, 500, {})
    stock, p2 = _run_fast_coco(prepared, dets, arrays, 500, {})
    assert list(p1.maxDets) == list(p2.maxDets) == [1, 10, 100, 500]
    for key in ("precision", "recall", "scores"):
        np.testing.assert_array_equal(np.asarray(direct[key]), np.asarray(stock[key]), err_msg=key)
    ref, _ = _run_reference(prepared, dets, arrays, 500, {})
    # vs stock pycocotools: equal up to its eps in the precision denominator (see FIRST_HIT)
    np.testing.assert_array_equal(np.asarray(direct["recall"]), np.asarray(ref["recall"]))
    diff = np.abs(np.asarray(direct["precision"]) - np.asarray(ref["precision"]))
    assert diff.max() <= 2**-52 and (diff > 0).mean() < 0.05
