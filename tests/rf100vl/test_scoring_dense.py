"""Dense COCO cases for the parity audit: every backend against stock pycocotools, arrays compared cell for cell.

`dense_case(seed, ...)` builds a deterministic split that exercises what real detector output does to a COCO
evaluator: a few images with more than 500 ground-truth boxes and more than 500 detections of one class
(a 2,300 x 2,500 px aerial tile of trees), many categories with non-contiguous ids, non-contiguous image ids,
crowd boxes, boxes on the small/medium and medium/large area boundaries (32^2 and 96^2 px, which COCOeval
counts in both buckets), zero-size boxes, empty images (no boxes, no detections), images with boxes and no
detections, images with detections and no boxes, scores rounded to 2 decimals (ties within and across
images), exact duplicate detections, scores of exactly 0 and 1, and an image over max_det in total whose
categories each stay under it. `reference_arrays` runs stock pycocotools on it.

The tests here hold the accumulated precision, recall and scores arrays of `fast`, `hotcoco` and `reference` equal
to stock pycocotools' with zero tolerance (and faster-coco-eval's, but for its documented precision eps), on the
dense case, on other seeds at max_det 100 and 500, and on the corpus files.
"""

from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench_assets.rf100vl.scoring import coco as scoring
from bench_assets.rf100vl.scoring.backends import PreparedGT, _run_reference
from bench_assets.rf100vl.scoring.loading import load_json_any
from bench_assets.rf100vl.scoring.results import BACKENDS, ScoreResult
from bench_assets.rf100vl.scoring.validation import _check_predictions

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

TILE = (2300, 2500)  # width, height of the dense aerial tile


def _clip(b: np.ndarray, w: float, h: float) -> np.ndarray:
    x1, y1 = np.clip(b[:, 0], 0, w), np.clip(b[:, 1], 0, h)
    x2, y2 = np.clip(b[:, 0] + b[:, 2], 0, w), np.clip(b[:, 1] + b[:, 3], 0, h)
    return np.column_stack([x1, y1, x2 - x1, y2 - y1])


def _jitter(rng: np.random.Generator, gt: np.ndarray, w: float, h: float) -> np.ndarray:
    """A detection per box, shifted and scaled in proportion to its size (IoU spread over 0.3 .. 1)."""
    sig = rng.uniform(0.0, 0.2, (len(gt), 1))
    wh = gt[:, 2:4]
    return _clip(np.column_stack([gt[:, :2] + rng.normal(0, 1, (len(gt), 2)) * sig * wh,
                                  wh * np.exp(rng.normal(0, 1, (len(gt), 2)) * sig)]), w, h)


def _random_boxes(rng: np.random.Generator, n: int, w: float, h: float, lo: float = 3.0, hi: float = 300.0
                  ) -> np.ndarray:
    side = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    aspect = np.exp(rng.normal(0, 0.35, n))
    return _clip(np.column_stack([rng.uniform(0, w, n), rng.uniform(0, h, n), side, side * aspect]), w, h)


def _tree_tile(rng: np.random.Generator, n_gt: int, n_dets: int, w: float, h: float) -> tuple[np.ndarray, np.ndarray,
                                                                                                np.ndarray]:
    """`n_gt` tree crowns on a jittered grid and `n_dets` detections: hits, duplicates, background."""
    cols = int(np.ceil(np.sqrt(n_gt * w / h)))
    k = np.arange(n_gt)
    cx = (k % cols + 0.5) * (w / cols) + rng.normal(0, 8, n_gt)
    cy = (k // cols + 0.5) * (h / np.ceil(n_gt / cols)) + rng.normal(0, 8, n_gt)
    side = rng.uniform(30, 95, n_gt)
    gt = _clip(np.column_stack([cx - side / 2, cy - side / 2, side, side * rng.uniform(0.8, 1.2, n_gt)]), w, h)
    n_hit = min(n_gt, int(n_dets * 0.8))
    hits = _jitter(rng, gt[rng.permutation(n_gt)[:n_hit]], w, h)
    n_dup = (n_dets - n_hit) // 3
    dups = _jitter(rng, gt[rng.integers(0, n_gt, n_dup)], w, h)
    fps = _random_boxes(rng, n_dets - n_hit - n_dup, w, h, 20, 120)
    dets = np.concatenate([hits, dups, fps])
    scores = np.concatenate([rng.beta(5, 2, n_hit), rng.beta(2, 4, n_dup), rng.beta(1.2, 5, len(fps))])
    return gt, dets, scores


def _boundary_boxes(rng: np.random.Generator, w: float, h: float) -> np.ndarray:
    """Boxes of area exactly 32^2 and 96^2 (both buckets claim them) and zero-size boxes."""
    sides = np.array([[32, 32], [16, 64], [96, 96], [48, 192], [0, 20], [20, 0]], dtype=np.float64)
    xy = rng.uniform(0, min(w, h) - 200, (len(sides), 2)).round()
    return np.column_stack([xy, sides])


def dense_case(seed: int, n_images: int = 300, n_classes: int = 12, n_dense: int = 1, dense_gt: int = 520,
               dense_dets: int = 640, crowd_frac: float = 0.03, decimals: int = 2
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A deterministic (gt, detections) pair; see the module docstring for what it contains."""
    rng = np.random.default_rng(seed)
    cat_ids = sorted(rng.choice(np.arange(0, 4 * n_classes), n_classes, replace=False).tolist())
    img_ids = sorted(rng.choice(np.arange(1, 10 * n_images), n_images, replace=False).tolist())
    images, anns, dets = [], [], []
    kinds = rng.choice(["normal", "empty", "gt_only", "dets_only"], n_images, p=[0.85, 0.05, 0.05, 0.05])
    kinds[:n_dense] = "dense"
    kinds[n_dense] = "spread"  # over max_det in total, under it in every category
    for img_id, kind in zip(img_ids, kinds.tolist(), strict=True):
        w, h = TILE if kind == "dense" else (int(rng.integers(320, 1400)), int(rng.integers(320, 1400)))
        images.append({"id": img_id, "file_name": f"{img_id}.jpg", "width": w, "height": h})
        gt, gcls, det, dcls, score = _image_content(rng, kind, w, h, cat_ids, dense_gt, dense_dets)
        crowd = rng.random(len(gt)) < crowd_frac
        for b, c, cr in zip(gt.round(2).tolist(), gcls, crowd.tolist(), strict=True):
            anns.append({"id": 0, "image_id": img_id, "category_id": int(c), "bbox": b, "area": b[2] * b[3],
                         "iscrowd": int(cr)})
            if rng.random() < 0.02:  # an exact duplicate box: IoU ties between ground-truth boxes
                anns.append({**anns[-1], "bbox": list(b)})
        score = np.clip(score, 0.0, 1.0).round(decimals)
        score[rng.random(len(score)) < 0.01] = 1.0
        score[rng.random(len(score)) < 0.01] = 0.0
        for b, c, s in zip(det.round(2).tolist(), dcls, score.tolist(), strict=True):
            dets.append({"image_id": img_id, "category_id": int(c), "bbox": b, "score": float(s)})
            if rng.random() < 0.02:  # an exact duplicate right after it
                dets.append({"image_id": img_id, "category_id": int(c), "bbox": list(b), "score": float(s)})
    for n, k in enumerate(rng.permutation(len(anns)).tolist()):  # annotation ids not increasing in file order
        anns[k]["id"] = n + 1
    order = rng.permutation(len(dets))  # detections in no particular order, as a writer may emit them
    gt_doc = {"images": images, "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids], "annotations": anns}
    return gt_doc, [dets[i] for i in order.tolist()]


def _image_content(rng: np.random.Generator, kind: str, w: float, h: float, cat_ids: list[int], dense_gt: int,
                   dense_dets: int) -> tuple[np.ndarray, list[int], np.ndarray, list[int], np.ndarray]:
    """Ground truth (boxes, classes) and detections (boxes, classes, scores) of one image."""
    empty = np.zeros((0, 4))
    if kind == "empty":
        return empty, [], empty, [], np.zeros(0)
    if kind == "dense":
        gt, det, score = _tree_tile(rng, dense_gt, dense_dets, w, h)
        return gt, [cat_ids[0]] * len(gt), det, [cat_ids[0]] * len(det), score
    if kind == "spread":  # 3 categories x 200 detections: 600 on the image, 200 per (image, category)
        gt = _random_boxes(rng, 30, w, h)
        m = min(3, len(cat_ids))
        gcls = [cat_ids[k % m] for k in range(30)]
        det = np.concatenate([_jitter(rng, gt, w, h), _random_boxes(rng, 570, w, h)])
        return gt, gcls, det, [cat_ids[k % m] for k in range(600)], rng.beta(2, 3, 600)
    n_gt = int(rng.poisson(9)) + 1
    gt = np.concatenate([_random_boxes(rng, n_gt, w, h), _boundary_boxes(rng, w, h)[rng.random(6) < 0.15]])
    gcls = rng.choice(cat_ids, len(gt)).tolist()
    if kind == "gt_only":
        return gt, gcls, empty, [], np.zeros(0)
    hits = _jitter(rng, gt, w, h)
    hcls = [c if rng.random() > 0.07 else int(rng.choice(cat_ids)) for c in gcls]
    n_fp = int(rng.poisson(12))
    det = np.concatenate([hits, _random_boxes(rng, n_fp, w, h)])
    dcls = hcls + rng.choice(cat_ids, n_fp).tolist()
    score = np.concatenate([rng.beta(5, 2, len(hits)), rng.beta(1.3, 5, n_fp)])
    if kind == "dets_only":
        return empty, [], det, dcls, score
    return gt, gcls, det, dcls, score


def reference_arrays(gt: dict[str, Any], dets: list[dict[str, Any]], max_det: int = 500) -> dict[str, np.ndarray]:
    """Stock pycocotools, as a user runs it: COCO, loadRes, COCOeval, maxDets [1, 10, 100, max_det]."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        ev = COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(dets)), iouType="bbox")
        ev.params.maxDets = sorted({1, 10, 100, max_det})
        ev.evaluate()
        ev.accumulate()
    return {k: np.asarray(ev.eval[k]) for k in ("precision", "recall", "scores")}


def assert_arrays_equal(got: dict[str, Any], want: dict[str, np.ndarray], what: str) -> None:
    for key in ("precision", "recall", "scores"):
        a, b = np.asarray(got[key]), want[key]
        assert a.shape == b.shape, (what, key, a.shape, b.shape)
        diff = np.abs(a - b)
        assert np.array_equal(a, b), f"{what} {key}: {(diff > 0).sum()} cells differ, max |delta| {diff.max()}"


# ---------------------------------------------------------------------------------------------

FIRST_HIT = 1 / (1 + np.spacing(1))  # stock precision after a category's first-ranked detection, if a hit
EXACT = ("fast", "reference", "hotcoco")  # the backends whose arrays equal stock pycocotools' cell for cell
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "predictions"


def assert_backend_matches(res: ScoreResult, want: dict[str, np.ndarray], what: str) -> None:
    """`res`'s arrays equal `want` (stock pycocotools) to the bit for the EXACT backends; faster-coco-eval's
    recall and scores too, and its precision wherever stock has no eps artefact (1.0 where stock has 1 - 2^-52)."""
    assert res.arrays is not None
    if res.backend in EXACT:
        assert_arrays_equal(res.arrays, want, what)
        return
    assert_arrays_equal({**res.arrays, "precision": want["precision"]}, want, what)
    got, ref = np.asarray(res.arrays["precision"]), want["precision"]
    off = got != ref
    assert np.all(ref[off] == FIRST_HIT) and np.all(got[off] == 1.0), what


@pytest.fixture(scope="module")
def dense() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, np.ndarray]]:
    gt, dets = dense_case(11, n_images=220)
    return gt, dets, reference_arrays(gt, dets)


def test_the_dense_case_has_what_it_promises(dense: Any) -> None:
    gt, dets, _ = dense
    per_image_gt = np.bincount([a["image_id"] for a in gt["annotations"]])
    per_image_det = np.bincount([d["image_id"] for d in dets])
    assert per_image_gt.max() > 500 and per_image_det.max() > 500
    assert len(gt["images"]) == 220 and len(gt["categories"]) == 12
    assert any(a["iscrowd"] for a in gt["annotations"])
    areas = [a["area"] for a in gt["annotations"]]
    assert min(areas) == 0.0 and 1024.0 in areas and 9216.0 in areas and max(areas) > 96 ** 2
    scores = [d["score"] for d in dets]
    assert len(set(scores)) <= 101 and 0.0 in scores and 1.0 in scores  # ties everywhere
    ids_with_anything = set(per_image_gt.nonzero()[0]) | set(per_image_det.nonzero()[0])
    assert len(ids_with_anything) < len(gt["images"])  # empty images
    ann_ids = [a["id"] for a in gt["annotations"]]
    assert ann_ids != sorted(ann_ids)  # annotation ids not in file order


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_equals_pycocotools_cell_for_cell(dense: Any, backend: str) -> None:
    gt, dets, want = dense
    res = scoring.score(gt, dets, backend=backend)
    assert_backend_matches(res, want, backend)
    cut = res.max_det_cut
    assert cut is not None and cut.images_over == 2 and cut.detections_cut > 0  # the tree tile and the spread image
    assert [i["cut"] > 0 for i in cut.images] == [True, False]


def test_the_parity_audit_of_a_campaign_sees_zero_deviation() -> None:
    gt, dets = dense_case(4, n_images=60, n_classes=5, dense_gt=510, dense_dets=560)
    audit = scoring.score_both(gt, dets).audit
    assert audit.tol == 0.0 and audit.differing == [] and audit.max_abs_deviation == 0.0
    assert audit.arrays["precision"]["cells"] == 10 * 101 * 5 * 4 * 4 and audit.arrays["precision"]["differing"] == 0


@pytest.mark.parametrize("seed", [1, 2])
def test_more_dense_seeds_hotcoco_equals_pycocotools(seed: int) -> None:
    """Smaller splits, other seeds and shapes: max_det 100 (so the cut bites on ordinary images too), 3 classes."""
    gt, dets = dense_case(seed, n_images=60, n_classes=3, dense_gt=505, dense_dets=530)
    for max_det in (100, 500):
        want = reference_arrays(gt, dets, max_det)
        for backend in ("fast", "hotcoco"):
            assert_arrays_equal(scoring.score(gt, dets, backend=backend, max_det=max_det).arrays or {}, want,
                                f"{backend} seed {seed} max_det {max_det}")


@pytest.mark.parametrize("name", ["valid.json", "empty.json"])
def test_corpus_files_hotcoco_equals_pycocotools(name: str) -> None:
    gt, dets = load_json_any(CORPUS / "gt.json"), load_json_any(CORPUS / name)
    prepared = PreparedGT.build(gt)
    arrays = _check_predictions(set(prepared.image_ids), set(prepared.cat_ids), dets, 500, name)
    want, _ = _run_reference(prepared, dets, arrays, 500, {})
    want = {k: np.asarray(want[k]) for k in ("precision", "recall", "scores")}
    for backend in BACKENDS:
        assert_backend_matches(scoring.score(gt, dets, backend=backend), want, f"{backend} {name}")


def test_negative_ids_score_in_fast_and_are_refused_by_hotcoco_itself() -> None:
    """hotcoco refuses negative image/category ids, pycocotools takes them: `fast` maps ids to ranks and equals
    pycocotools; the `hotcoco` backend (hotcoco's own API) raises. Documented in scoring's docstring."""
    gt, dets = dense_case(5, n_images=30, n_classes=3, n_dense=1, dense_gt=40, dense_dets=60)
    shift = {i["id"]: -i["id"] for i in gt["images"]}
    for i in gt["images"]:
        i["id"] = shift[i["id"]]
    for x in (*gt["annotations"], *dets):
        x["image_id"] = shift[x["image_id"]]
    want = reference_arrays(gt, dets)
    assert_arrays_equal(scoring.score(gt, dets, backend="fast").arrays or {}, want, "fast, negative ids")
    with pytest.raises(ValueError, match="non-negative"):
        scoring.score(gt, dets, backend="hotcoco")


# ---------------------------------------------------------------------------------------------
# The broader audit, run by hand (minutes: stock pycocotools is slow on dense images):
#     .venv/bin/python -m tests.rf100vl.test_scoring_dense --cases 60


def _audit_inputs(cases: int) -> list[tuple[str, dict[str, Any], list[dict[str, Any]], int]]:
    """(label, gt, dets, max_det): generated dense splits of varied shape, the scoring tests' own inputs and the
    corpus files."""
    from tests.rf100vl.test_scoring import _grid_split, _perfect, _random_split

    rng = np.random.default_rng(2026)
    out = []
    for k in range(cases):
        shape = {"n_images": int(rng.integers(100, 320)), "n_classes": int(rng.integers(1, 25)),
                 "n_dense": int(rng.integers(1, 3)), "dense_gt": int(rng.integers(501, 600)),
                 "dense_dets": int(rng.integers(501, 800)), "crowd_frac": float(rng.choice([0.0, 0.03, 0.2])),
                 "decimals": int(rng.choice([1, 2, 3, 6]))}
        max_det = int(rng.choice([100, 300, 500]))
        gt, dets = dense_case(1000 + k, **shape)
        out.append((f"dense seed {1000 + k} {shape} max_det {max_det}", gt, dets, max_det))
    for seed in range(10):
        for decimals in (1, 2, 4):
            out.append((f"test_scoring _random_split({seed}, decimals={decimals})",
                        *_random_split(seed, decimals=decimals), 500))
    grid = _grid_split(n_images=2, per_image=120)
    out += [("test_scoring _grid_split + _perfect", grid, _perfect(grid), 500),
            ("test_scoring _grid_split + _perfect at max_det 100", grid, _perfect(grid), 100)]
    for name in ("valid.json", "empty.json"):
        out.append((f"corpus {name}", load_json_any(CORPUS / "gt.json"), load_json_any(CORPUS / name),
                    500))
    return out


def audit(cases: int) -> int:
    """Every input of `_audit_inputs`: fast and hotcoco against stock pycocotools, precision / recall / scores
    cell for cell; prints one line per input and a summary; 1 when any cell differs."""
    import time

    worst = {"fast": 0.0, "hotcoco": 0.0}
    differing = 0
    cells = 0
    inputs = _audit_inputs(cases)
    for n, (label, gt, dets, max_det) in enumerate(inputs, 1):
        t = time.perf_counter()
        want = reference_arrays(gt, dets, max_det) if dets else None
        line = []
        for backend in worst:
            res = scoring.score(gt, dets, backend=backend, max_det=max_det)
            got = res.arrays or {}
            if want is None:  # stock loadRes cannot take an empty list: the reference backend's route
                want = scoring.score(gt, dets, backend="reference", max_det=max_det).arrays or {}
            for key in ("precision", "recall", "scores"):
                dev = np.abs(np.asarray(got[key]) - want[key])
                worst[backend] = max(worst[backend], float(dev.max()))
                differing += int((dev > 0).sum())
                cells += dev.size
            line.append(f"{backend} cut {res.max_det_cut.detections_cut if res.max_det_cut else 0}")
        print(f"[{n}/{len(inputs)}] {label}: {len(gt['annotations'])} GT, {len(dets)} dets, "
              f"{', '.join(line)}, {time.perf_counter() - t:.1f} s", flush=True)
    print(f"audit: {len(inputs)} inputs, {cells} cells compared, {differing} differing, max |delta| fast "
          f"{worst['fast']} hotcoco {worst['hotcoco']}")
    return 1 if differing else 0


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser(description="hotcoco vs stock pycocotools, cell for cell, on many inputs")
    ap.add_argument("--cases", type=int, default=60, help="generated dense splits")
    sys.exit(audit(ap.parse_args().cases))
