"""More than max_det detections on an image, as real detector output has them, and ties in score.

The tile: an aerial tree-detection image of 2,300 x 2,500 px with 574 ground-truth crowns and 734 detections of the
one class (the real case that pycocotools and faster-coco-eval scored and `bench score` used to refuse). Every
backend must score it exactly as stock pycocotools does (arrays compared cell for cell), report the 234 detections
it cut and on which image, and `--strict` must refuse it with the protocol's message.

Ties: stock `evaluateImg` sorts one (image, category)'s detections with a stable sort on -score (results-file order
on ties) and keeps the first maxDet; `accumulate` concatenates the images in image-id order and sorts again, stably.
The cases below make each of those orders change the numbers, so a backend breaking ties another way fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench_assets.cli import score as score_cli
from bench_assets.rf100vl.scoring import coco as scoring
from bench_assets.rf100vl.scoring.results import BACKENDS, MaxDetCut
from tests.rf100vl.test_scoring_dense import _tree_tile, assert_backend_matches, reference_arrays

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

REPO = Path(__file__).resolve().parents[2]
TILE_ID = 7


def _tile(n_gt: int = 574, n_dets: int = 734, seed: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The dense tile (image TILE_ID) plus two ordinary images; scores rounded to 3 decimals (ties)."""
    rng = np.random.default_rng(seed)
    gt_boxes, det_boxes, scores = _tree_tile(rng, n_gt, n_dets, 2300, 2500)
    images = [{"id": TILE_ID, "file_name": "tile.tif", "width": 2300, "height": 2500},
              {"id": 8, "file_name": "a.jpg", "width": 640, "height": 640},
              {"id": 9, "file_name": "b.jpg", "width": 640, "height": 640}]
    anns = [{"id": k + 1, "image_id": TILE_ID, "category_id": 1, "bbox": b, "area": b[2] * b[3], "iscrowd": 0}
            for k, b in enumerate(gt_boxes.round(1).tolist())]
    anns += [{"id": len(anns) + 1, "image_id": 8, "category_id": 1, "bbox": [10, 10, 50, 40], "area": 2000.0,
              "iscrowd": 0},
             {"id": len(anns) + 2, "image_id": 9, "category_id": 1, "bbox": [100, 80, 20, 30], "area": 600.0,
              "iscrowd": 0}]
    dets = [{"image_id": TILE_ID, "category_id": 1, "bbox": b, "score": s}
            for b, s in zip(det_boxes.round(2).tolist(), scores.round(3).tolist(), strict=True)]
    dets += [{"image_id": 8, "category_id": 1, "bbox": [11, 10, 50, 41], "score": 0.9},
             {"image_id": 9, "category_id": 1, "bbox": [300, 300, 20, 20], "score": 0.4}]
    gt = {"images": images, "categories": [{"id": 1, "name": "tree"}], "annotations": anns}
    return gt, dets


@pytest.fixture(scope="module")
def tile() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, np.ndarray]]:
    gt, dets = _tile()
    return gt, dets, reference_arrays(gt, dets)


@pytest.fixture(scope="module")
def tile_reference_metrics(tile: Any) -> dict[str, Any]:
    """The `reference` backend's metrics of the tile, what `bench score` is compared with (stock pycocotools takes
    seconds on the tile: computed once for the module)."""
    gt, dets, _ = tile
    return scoring.score(gt, dets, backend="reference").metrics


def _write(tmp_path: Path, gt: dict[str, Any], dets: list[dict[str, Any]]) -> tuple[str, str]:
    g, p = tmp_path / "gt.json", tmp_path / "pred.json"
    g.write_text(json.dumps(gt))
    p.write_text(json.dumps(dets))
    return str(g), str(p)


CUT = {"max_det": 500, "images_over": 1, "detections_cut": 234,
       "images": [{"image_id": TILE_ID, "detections": 734, "cut": 234}]}


def _cut_warning(source: str) -> str:
    return (f"{source}: 1 image(s) carry more than max_det=500 detections, which the protocol does not allow (most "
            f"first: image {TILE_ID}: 734); scored as pycocotools scores them: each (image, category) keeps its 500 "
            "highest-scoring detections (ties in file order), so 234 detection(s) on 1 image(s) were not evaluated "
            f"(image {TILE_ID}: 234); `bench score --strict` refuses such a file")


def test_the_tile_has_more_than_500_boxes_and_detections(tile: Any) -> None:
    gt, dets, want = tile
    assert sum(a["image_id"] == TILE_ID for a in gt["annotations"]) == 574
    assert sum(d["image_id"] == TILE_ID for d in dets) == 734
    scores = [d["score"] for d in dets]
    assert len(set(scores)) < len(scores)  # ties
    # with 574 boxes and at most 500 detections kept, recall at IoU 0.5 cannot reach 1 on the tile
    assert 0 < want["recall"][0, 0, 0, -1] < 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_scores_the_tile_exactly_as_pycocotools(tile: Any, backend: str) -> None:
    gt, dets, want = tile
    res = scoring.score(gt, dets, backend=backend, source="tile.json")
    assert_backend_matches(res, want, backend)
    assert res.max_det_cut is not None and res.max_det_cut.to_dict() == CUT
    assert res.warnings == [_cut_warning("tile.json")]
    assert res.num_dets == 736


def test_bench_score_reports_the_cut_and_strict_refuses(tile: Any, tile_reference_metrics: dict[str, Any],
                                                        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gt, dets, want = tile
    g, p = _write(tmp_path, gt, dets)
    assert score_cli.main([g, p]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert captured.err == f"bench score: warning: {_cut_warning(p)}\n"
    assert out["max_det_cut"] == CUT and out["warnings"] == [_cut_warning(p)]
    assert out["backend"] == "fast" and out["engine"].startswith("hotcoco ")
    assert out["metrics"] == tile_reference_metrics

    assert score_cli.main([g, p, "--strict"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"bench score: {p}: invalid predictions: the file violates the protocol: 1 image(s) carry more than "
        f"max_det=500 detections (most first: image {TILE_ID}: 734); fix: keep at most the 500 highest-scoring "
        "detections per image (all classes together) when writing predictions\n")

    assert score_cli.main([g, p, "--backend", "both"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parity"]["differing"] == [] and out["parity"]["max_abs_deviation"] == 0.0
    assert out["parity"]["arrays"]["precision"]["differing"] == 0 and out["reference"]["max_det_cut"] == CUT


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["hotcoco", "faster-coco-eval"])
def test_bench_score_other_backends_via_the_entry_point(tile: Any, tile_reference_metrics: dict[str, Any],
                                                       tmp_path: Path, backend: str) -> None:
    gt, dets, _ = tile
    g, p = _write(tmp_path, gt, dets)
    exe = REPO / ".venv" / "bin" / "bench"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "bench_assets.cli"]
    r = subprocess.run([*cmd, "score", g, p, "--backend", backend], cwd=REPO, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["backend"] == backend and out["engine"].split()[0] == backend
    assert out["max_det_cut"] == CUT and r.stderr == f"bench score: warning: {_cut_warning(p)}\n"
    ref = tile_reference_metrics
    assert out["metrics"]["AR_max_det"] == ref["AR_max_det"]
    assert abs(out["metrics"]["mAP50_95"] - ref["mAP50_95"]) < 1e-15


# ---------------------------------------------------------------------------------------------
# Ties in score


def _grid(n: int, side: float = 20.0, step: float = 30.0, x0: float = 0.0) -> list[list[float]]:
    cols = 20
    return [[x0 + (k % cols) * step, (k // cols) * step, side, side] for k in range(n)]


def _doc(boxes_by_image: dict[int, list[list[float]]]) -> dict[str, Any]:
    anns = [{"id": n + 1, "image_id": i, "category_id": 0, "bbox": b, "area": b[2] * b[3], "iscrowd": 0}
            for n, (i, b) in enumerate((i, b) for i, bs in boxes_by_image.items() for b in bs)]
    return {"images": [{"id": i, "file_name": f"{i}.jpg", "width": 2000, "height": 2000} for i in boxes_by_image],
            "categories": [{"id": 0, "name": "x"}], "annotations": anns}


@pytest.fixture(scope="module")
def file_order_ties() -> tuple[dict[str, Any], list[tuple[list[dict[str, Any]], float, dict[str, np.ndarray]]]]:
    """One image, one class, 600 detections all scored 0.5: 100 boxes found only by the detections at file
    positions 500..599. (ground truth, [(detections, the recall stock gives, stock's arrays)]): misses first, then
    hits first. Stock pycocotools runs once per order for the module, not once per backend."""
    boxes = _grid(100)
    misses = [{"image_id": 1, "category_id": 0, "bbox": [1500.0, 1500.0 + k, 10.0, 10.0], "score": 0.5}
              for k in range(500)]
    hits = [{"image_id": 1, "category_id": 0, "bbox": b, "score": 0.5} for b in boxes]
    gt = _doc({1: boxes})
    return gt, [(dets, recall, reference_arrays(gt, dets)) for dets, recall in ((misses + hits, 0.0),
                                                                               (hits + misses, 1.0))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_cut_keeps_the_first_detections_in_file_order_on_ties(file_order_ties: Any, backend: str) -> None:
    """pycocotools keeps the first 500 in file order: with the misses first nothing is found; hits first: all."""
    gt, cases = file_order_ties
    for dets, recall, want in cases:
        res = scoring.score(gt, dets, backend=backend)
        assert res.metrics["AR_max_det"] == recall, backend
        assert_backend_matches(res, want, backend)
        assert res.max_det_cut is not None and res.max_det_cut.detections_cut == 100


@pytest.mark.parametrize("backend", BACKENDS)
def test_ties_across_images_follow_image_id_order_then_file_order(backend: str) -> None:
    """Three detections scored 0.5: a hit on image 2 written first, then a miss and a hit on image 1. pycocotools
    ranks them image 1 first (image-id order), file order within it: miss, hit A, hit B -> precision 0, 1/2, 2/3,
    AP 2/3 (a global file order would rank hit B first: AP (51 + 50 * 2/3) / 101 ~ 0.835)."""
    gt = _doc({1: [[100.0, 100.0, 50.0, 50.0]], 2: [[300.0, 300.0, 50.0, 50.0]]})
    dets = [{"image_id": 2, "category_id": 0, "bbox": [300.0, 300.0, 50.0, 50.0], "score": 0.5},
            {"image_id": 1, "category_id": 0, "bbox": [900.0, 900.0, 50.0, 50.0], "score": 0.5},
            {"image_id": 1, "category_id": 0, "bbox": [100.0, 100.0, 50.0, 50.0], "score": 0.5}]
    res = scoring.score(gt, dets, backend=backend)
    assert abs(res.metrics["mAP50_95"] - 2 / 3) < 1e-15 and res.metrics["AR_max_det"] == 1.0
    assert_backend_matches(res, reference_arrays(gt, dets), backend)
    assert res.max_det_cut is not None and res.max_det_cut.images_over == 0 and res.warnings == []


def test_the_cut_per_image_and_category_counts_each_category() -> None:
    """max_det 100: image 1 has 150 detections of class 0 and 80 of class 1 (cut 50); image 2 has 120 over
    three classes, none over 100 (cut 0); image 3 has 90 (not over)."""
    gt = {"images": [{"id": i, "width": 100, "height": 100} for i in (1, 2, 3)],
          "categories": [{"id": c, "name": str(c)} for c in (0, 1, 2)],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 0, "bbox": [1, 1, 5, 5], "area": 25.0,
                           "iscrowd": 0}]}

    def det(i: int, c: int) -> dict[str, Any]:
        return {"image_id": i, "category_id": c, "bbox": [1.0, 1.0, 5.0, 5.0], "score": 0.1}

    dets = [det(1, 0)] * 150 + [det(1, 1)] * 80 + [det(2, c) for c in (0, 1, 2) for _ in range(40)] + [det(3, 2)] * 90
    res = scoring.score(gt, [dict(d) for d in dets], backend="fast", max_det=100)
    assert res.max_det_cut == MaxDetCut(100, images_over=2, detections_cut=50, images=[
        {"image_id": 1, "detections": 230, "cut": 50}, {"image_id": 2, "detections": 120, "cut": 0}])
