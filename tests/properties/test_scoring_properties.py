"""Every scoring backend gives stock pycocotools' numbers on random splits (issue 15, property tests).

The splits are drawn by hypothesis: a handful of images (ids unordered and far apart, in shuffled file order), one
to four categories (ids not contiguous), crowd boxes, boxes from under a pixel to most of the image (with the COCO
bucket edges 32^2 and 96^2 hit exactly), jittered hits, wrong classes, duplicates, false positives, scores rounded
so ties are everywhere, sometimes an image with 101 or 150 detections (past maxDets 100), scored at max_det 500,
300, 100, 20 and 5 (images over max_det, pairs under it); and, as their own strategy, splits with 501..600
detections of one class on one image (past 500 on one (image, category), so the cut matters). Each property goes
through the product's public functions (`scoring.score`, `scoring.score_both`, `scoring.parity`), so a wrong change
in our feeding of a library, our reading of its arrays or our parity audit is what fails, not the library.

The reference is stock pycocotools, called here directly (`COCO`, `loadRes`, `COCOeval`), as REFERENCE.md section 3
and `scoring.py`'s docstring document reading it: `params.maxDets` with the protocol's 500 ([1, 10, 500]),
`evaluate(); accumulate()`, precision[T, R, K, A, M] and recall[T, K, A, M] read at the 500 column, the mean over
entries > -1; and stock `summarize()` itself where it reads the right column (maxDets [1, 10, 100], max_det 100).

Exact equality everywhere but one documented place: faster-coco-eval computes precision as tp / (tp + fp) where
stock uses tp / (tp + fp + np.spacing(1)). The two differ only when tp + fp == 1 (stock: 1 / (1 + 2^-52) =
1 - 2^-52, faster-coco-eval: 1.0), so those cells, and only those, may differ, by exactly that amount; the
metrics, means over such cells, then move by at most 2^-52 plus the rounding of a mean of ~10^4 values, hence
the 1e-15 there. Recall has no eps in either library and must be identical.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.rf100vl.scoring.coco import parity, score, score_both
from bench_assets.rf100vl.scoring.results import BACKENDS, METRICS

FIRST_HIT = 1.0 / (1.0 + np.spacing(1))  # stock pycocotools' precision of a top-ranked hit: 1 - 2^-52
FCE_METRIC_TOL = 1e-15  # see the module docstring: faster-coco-eval's precision without eps
SMALL, MEDIUM = 32.0**2, 96.0**2  # COCOeval's area bucket edges (both ends belong to both neighbours)

# where in pycocotools' accumulated arrays each metric is read, written out here once, independently of
# `scoring.read_metrics`. Area index: 0 all, 1 small, 2 medium, 3 large. AP: (IoU row, None for all ten; area),
# AR: (area; maxDets column, None for max_det).
IOU_ROW_50, IOU_ROW_75 = 0, 5  # iouThrs = 0.50, 0.55, ..., 0.95
AP_READS = {"mAP50_95": (None, 0), "mAP50": (IOU_ROW_50, 0), "mAP75": (IOU_ROW_75, 0), "mAP_small": (None, 1),
            "mAP_medium": (None, 2), "mAP_large": (None, 3)}
AR_READS = {"AR1": (0, 1), "AR10": (0, 10), "AR100": (0, 100), "AR_small": (1, None), "AR_medium": (2, None),
            "AR_large": (3, None), "AR_max_det": (0, None)}  # None: at max_det
# stock summarize()'s 12 stats with its default maxDets [1, 10, 100], in its order
STOCK_STATS = ("mAP50_95", "mAP50", "mAP75", "mAP_small", "mAP_medium", "mAP_large", "AR1", "AR10", "AR100",
               "AR_small", "AR_medium", "AR_large")


# ---------------------------------------------------------------------------------------------
# Random splits


def _box_sizes(rng: np.random.Generator, n: int, img_w: int, img_h: int) -> np.ndarray:
    """(n, 2) widths and heights: log-uniform from 0.5 px to most of the image, some exactly on the bucket
    edges (32 x 32, 96 x 96, 16 x 64 = 32^2)."""
    w = np.exp(rng.uniform(np.log(0.5), np.log(0.9 * img_w), n))
    h = np.clip(w * np.exp(rng.normal(0, 0.5, n)), 0.5, 0.9 * img_h)
    edge = rng.random(n) < 0.15
    picks = np.array([[32.0, 32.0], [96.0, 96.0], [16.0, 64.0]])[rng.integers(0, 3, n)]
    wh = np.column_stack([w, h]).round(1)
    wh[edge] = picks[edge]
    return np.minimum(wh, [img_w, img_h])


def make_split(seed: int, n_images: int, n_cats: int, crowd_share: float, decimals: int, dense_dets: int,
               dense_one_class: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A COCO ground truth and a detections list for it: the knobs as given, boxes and scores by numpy from
    `seed`. `dense_dets` > 0: the first image id carries that many detections and 15..49 boxes (all of the first
    class with `dense_one_class`); `decimals`: scores rounded to that many (1: ties between most detections)."""
    rng = np.random.default_rng(seed)

    image_ids = rng.choice(np.arange(1, 10**6), n_images, replace=False).tolist()
    cat_ids = sorted(rng.choice(np.arange(0, 60), n_cats, replace=False).tolist())
    sizes = [(int(rng.integers(100, 700)), int(rng.integers(100, 700))) for _ in image_ids]
    images = [{"id": i, "file_name": f"{i}.jpg", "width": w, "height": h}
              for i, (w, h) in zip(image_ids, sizes, strict=True)]
    rng.shuffle(images)  # file order is not id order
    anns: list[dict[str, Any]] = []
    dets: list[dict[str, Any]] = []
    dense_image = image_ids[0]
    for img in images:
        w_img, h_img = img["width"], img["height"]
        n_gt = int(rng.integers(0, 12))
        if img["id"] == dense_image and dense_dets:
            n_gt = int(rng.integers(15, 50))  # stock pycocotools' matching costs detections x boxes x 10 IoUs
        wh = _box_sizes(rng, n_gt, w_img, h_img)
        xy = (rng.random((n_gt, 2)) * ([w_img, h_img] - wh)).round(1)
        gt_boxes = np.column_stack([xy, wh])
        gt_cls = rng.choice(cat_ids, n_gt)
        if img["id"] == dense_image and dense_dets and dense_one_class:
            gt_cls[:] = cat_ids[0]
        for b, c in zip(gt_boxes.tolist(), gt_cls.tolist(), strict=True):
            anns.append({"image_id": img["id"], "category_id": int(c), "bbox": b, "area": b[2] * b[3],
                         "iscrowd": int(rng.random() < crowd_share)})
        # detections: a jittered hit for most boxes (some of the wrong class, some twice), then false positives
        found = rng.random(n_gt) < 0.8
        jitter = rng.normal(0, 1, (n_gt, 4)) * rng.uniform(0.0, 0.25, (n_gt, 1))
        hits = gt_boxes + jitter * np.column_stack([wh, wh])
        hits[:, 2:] = np.maximum(hits[:, 2:], 0.0)
        hit_cls = np.where(rng.random(n_gt) < 0.1, rng.choice(cat_ids, n_gt), gt_cls)
        twice = found & (rng.random(n_gt) < 0.15)
        n_target = dense_dets if img["id"] == dense_image and dense_dets else int(rng.integers(0, 25))
        hit_count = int(found.sum()) + int(twice.sum())
        if img["id"] == dense_image and dense_dets and dense_one_class:  # the first class gets dense_dets exactly
            hit_count = int((hit_cls[found] == cat_ids[0]).sum()) + int((hit_cls[twice] == cat_ids[0]).sum())
        n_fp = max(0, n_target - hit_count)
        fp_wh = _box_sizes(rng, n_fp, w_img, h_img)
        fps = np.column_stack([(rng.random((n_fp, 2)) * ([w_img, h_img] - fp_wh)), fp_wh])
        fp_cls = rng.choice(cat_ids, n_fp)
        if img["id"] == dense_image and dense_dets and dense_one_class:
            fp_cls[:] = cat_ids[0]
        boxes = np.concatenate([hits[found], hits[twice], fps]).round(2)
        classes = np.concatenate([hit_cls[found], hit_cls[twice], fp_cls])
        scores = np.concatenate([rng.beta(5, 2, int(found.sum()) + int(twice.sum())), rng.beta(1.5, 5, n_fp)])
        for b, c, s in zip(boxes.tolist(), classes.tolist(), scores.round(decimals).tolist(), strict=True):
            dets.append({"image_id": img["id"], "category_id": int(c), "bbox": b, "score": s})
    if not any(a["iscrowd"] == 0 for a in anns):  # the headline needs one box to find
        w0, h0 = images[0]["width"], images[0]["height"]
        anns.append({"image_id": images[0]["id"], "category_id": cat_ids[-1], "bbox": [1.0, 2.0, w0 / 3, h0 / 4],
                     "area": (w0 / 3) * (h0 / 4), "iscrowd": 0})
    order = rng.permutation(len(dets))
    dets = [dets[k] for k in order]  # results-file order is not image order
    # annotation ids unique and >= 1, neither contiguous nor in file order
    for a, ann_id in zip(anns, rng.choice(np.arange(1, 10 * len(anns) + 10), len(anns), replace=False).tolist(),
                         strict=True):
        a["id"] = ann_id
    cats = [{"id": c, "name": f"class{c}", "supercategory": "none"} for c in cat_ids]
    return {"images": images, "categories": cats, "annotations": anns}, dets


# The knobs drawn by hypothesis (a failure shrinks to few images, one class, no crowd), the rest by numpy. Stock
# pycocotools matches in Python (~0.5 s for one image of 600 detections against 60 boxes), so the splits with more
# than 500 detections on one (image, category) are their own strategy, run on fewer examples.
splits = st.builds(make_split, seed=st.integers(0, 2**32 - 1), n_images=st.integers(1, 5), n_cats=st.integers(1, 4),
                   crowd_share=st.sampled_from([0.0, 0.0, 0.1, 0.3]), decimals=st.sampled_from([1, 2, 3, 8]),
                   dense_dets=st.sampled_from([0, 0, 0, 101, 150]), dense_one_class=st.booleans())
dense_splits = st.builds(make_split, seed=st.integers(0, 2**32 - 1), n_images=st.integers(1, 2),
                         n_cats=st.integers(2, 3), crowd_share=st.sampled_from([0.0, 0.1]),
                         decimals=st.sampled_from([1, 2, 3]), dense_dets=st.sampled_from([501, 520, 600]),
                         dense_one_class=st.just(True))
max_dets = st.sampled_from([500, 500, 500, 100, 300, 20, 5])  # 5 and 20: images over max_det, pairs under


# ---------------------------------------------------------------------------------------------
# Stock pycocotools, called directly


def stock_eval(gt: dict[str, Any], dets: list[dict[str, Any]], max_dets: list[int]) -> Any:
    """A stock COCOeval after evaluate() and accumulate() at `max_dets` (on copies: both mutate their input)."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        ev = COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(dets)), iouType="bbox")
        ev.params.maxDets = list(max_dets)
        ev.evaluate()
        ev.accumulate()
    return ev


def _mean_over_defined(a: np.ndarray) -> float | None:
    defined = a[a > -1]
    return float(np.mean(defined)) if defined.size else None


def stock_metrics(gt: dict[str, Any], dets: list[dict[str, Any]], max_det: int) -> tuple[dict[str, float | None], Any]:
    """The 13 metrics read from stock arrays as REFERENCE.md says: AP from the `max_det` column of a run at
    maxDets [1, 10, max_det] (no 100 in it), AR1/AR10 from its 1 and 10 columns, AR100 from a run at the stock
    [1, 10, 100]; -1 cells left out of every mean, None where nothing is left. Also the first run's COCOeval."""
    ev = stock_eval(gt, dets, sorted({1, 10, max_det}))
    cols = list(ev.params.maxDets)
    precision, recall = ev.eval["precision"], ev.eval["recall"]
    at100 = recall[..., cols.index(100)] if 100 in cols else stock_eval(gt, dets, [1, 10, 100]).eval["recall"][..., 2]
    out: dict[str, float | None] = {}
    for name, (row, area) in AP_READS.items():
        p = precision[:, :, :, area, cols.index(max_det)]
        out[name] = _mean_over_defined(p if row is None else p[row])
    for name, (area, k) in AR_READS.items():
        if k == 100:
            out[name] = _mean_over_defined(at100[:, :, area])
        else:
            out[name] = _mean_over_defined(recall[:, :, area, cols.index(max_det if k is None else k)])
    return out, ev


def _same(a: float | None, b: float | None) -> bool:
    return a is None and b is None or (a is not None and b is not None and a == b)


# ---------------------------------------------------------------------------------------------
# Properties


def assert_backends_match_the_reference(gt: dict[str, Any], dets: list[dict[str, Any]], max_det: int) -> None:
    """fast and hotcoco: precision and recall equal the reference backend's cell for cell (-1 cells included),
    and so do all 13 metrics; faster-coco-eval: recall identical, precision identical but where stock has its
    eps artefact, metrics within 1e-15. The parity audit says so. No backend writes into its inputs."""
    gt0, dets0 = copy.deepcopy(gt), copy.deepcopy(dets)
    ref = score(gt, dets, backend="reference", max_det=max_det)
    assert ref.arrays is not None
    for backend in BACKENDS:  # the reference against itself would only repeat its (slowest) evaluation
        res = ref if backend == "reference" else score(gt, dets, backend=backend, max_det=max_det)
        assert res.arrays is not None and res.backend == backend and res.max_det == max_det
        assert (res.num_images, res.num_gt, res.num_dets) == (len(gt["images"]), len(gt["annotations"]), len(dets))
        assert res.max_det_cut == ref.max_det_cut, backend
        got_p, want_p = np.asarray(res.arrays["precision"]), np.asarray(ref.arrays["precision"])
        assert got_p.shape == want_p.shape, backend
        np.testing.assert_array_equal(res.arrays["recall"], ref.arrays["recall"], err_msg=backend)
        audit = parity(res, ref)
        if backend != "faster-coco-eval":
            np.testing.assert_array_equal(got_p, want_p, err_msg=backend)
            assert res.metrics == ref.metrics, backend
            assert audit.ok and audit.identical == len(METRICS), (backend, audit)
            continue
        off = got_p != want_p
        assert np.all(want_p[off] == FIRST_HIT) and np.all(got_p[off] == 1.0), backend
        for name in METRICS:
            a, b = res.metrics[name], ref.metrics[name]
            assert (a is None) == (b is None), name
            assert a is None or abs(a - b) <= FCE_METRIC_TOL, (name, a, b)
        assert ("precision" in audit.differing) == bool(off.any())  # the audit sees what differs
        assert "recall" not in audit.differing
    assert gt == gt0 and dets == dets0


def assert_reported_metrics_are_stock(gt: dict[str, Any], dets: list[dict[str, Any]], max_det: int) -> None:
    """What `score_both` reports (the fast backend, audited against the reference) equals the 13 numbers read
    directly from stock pycocotools run at maxDets [1, 10, max_det], bit for bit, undefined (no ground truth in
    a size bucket) as None, never -1; the reference backend's arrays are stock's, column for column."""
    both = score_both(gt, dets, max_det=max_det)
    assert both.headline.backend == "fast" and both.reference.backend == "reference"
    assert both.audit.ok and both.audit.tol == 0.0
    want, stock = stock_metrics(gt, dets, max_det)
    got = both.headline.metrics
    assert set(got) == set(METRICS) == set(want)
    for name in METRICS:
        assert _same(got[name], want[name]), (name, got[name], want[name])
        assert got[name] is None or 0.0 <= got[name] <= 1.0
    assert both.headline.headline == want["mAP50_95"]
    assert both.reference.metrics == got
    ours = both.reference.arrays
    assert ours is not None
    cols = sorted({1, 10, 100, max_det})
    for k, m in enumerate(stock.params.maxDets):
        np.testing.assert_array_equal(ours["precision"][..., cols.index(m)], stock.eval["precision"][..., k])
        np.testing.assert_array_equal(ours["recall"][..., cols.index(m)], stock.eval["recall"][..., k])


def assert_cut_is_counted(gt: dict[str, Any], dets: list[dict[str, Any]], max_det: int) -> None:
    """`max_det_cut` (and its warning) counted here by hand: images with more than max_det detections in all,
    and per image the detections beyond max_det in each of its (image, category) pairs."""
    per_image = Counter(d["image_id"] for d in dets)
    per_pair = Counter((d["image_id"], d["category_id"]) for d in dets)
    over = {i: n for i, n in per_image.items() if n > max_det}
    cut = {i: sum(max(0, n - max_det) for (img, _), n in per_pair.items() if img == i) for i in over}
    res = score(gt, dets, backend="fast", max_det=max_det)
    c = res.max_det_cut
    assert c is not None and c.max_det == max_det
    assert c.images_over == len(over) and c.detections_cut == sum(cut.values())
    assert {i["image_id"]: (i["detections"], i["cut"]) for i in c.images} == {i: (over[i], cut[i]) for i in over}
    assert any(f"carry more than max_det={max_det}" in w for w in res.warnings) == bool(over)


@given(split=splits, max_det=max_dets)
def test_every_backend_accumulates_the_reference_arrays(split: Any, max_det: int) -> None:
    assert_backends_match_the_reference(*split, max_det)


@given(split=splits, max_det=max_dets)
def test_reported_metrics_are_stock_pycocotools_read_at_max_det(split: Any, max_det: int) -> None:
    assert_reported_metrics_are_stock(*split, max_det)
    assert_cut_is_counted(*split, max_det)


@settings(max_examples=3)
@given(split=dense_splits)
def test_past_500_detections_on_one_image_every_backend_is_stock(split: Any) -> None:
    """More than 500 detections of one class on one image: every backend cuts each (image, category) at its 500
    highest-scoring detections, ties in file order, as stock does; what was cut is reported exactly."""
    gt, dets = split
    assert max(Counter((d["image_id"], d["category_id"]) for d in dets).values()) > 500
    assert_backends_match_the_reference(gt, dets, 500)
    assert_reported_metrics_are_stock(gt, dets, 500)
    assert_cut_is_counted(gt, dets, 500)


@given(split=splits)
def test_at_max_det_100_the_metrics_are_stock_summarize(split: Any) -> None:
    """At max_det 100 stock `summarize()` reads the right column, so its 12 stats are the reference: every
    backend reports them exactly (faster-coco-eval within 1e-15), -1 ("no such box") as None."""
    gt, dets = split
    ev = stock_eval(gt, dets, [1, 10, 100])
    with contextlib.redirect_stdout(io.StringIO()):
        ev.summarize()
    for backend in BACKENDS:
        m = score(gt, dets, backend=backend, max_det=100).metrics
        assert _same(m["AR_max_det"], m["AR100"]), backend
        for name, stat in zip(STOCK_STATS, ev.stats.tolist(), strict=True):
            if stat == -1:
                assert m[name] is None, (backend, name)
                continue
            value = m[name]
            assert value is not None, (backend, name)
            tol = FCE_METRIC_TOL if backend == "faster-coco-eval" else 0.0
            assert abs(value - stat) <= tol, (backend, name, value, stat)


def test_the_generator_makes_what_the_properties_promise() -> None:
    """Sanity of `make_split` (not of the product): the dense knob puts > 500 detections of one class on one
    image, one decimal makes ties, crowd boxes and boxes exactly on the bucket edges occur, every box lies in its
    image, and the headline always has a non-crowd box to find."""
    gt, dets = make_split(7, n_images=4, n_cats=3, crowd_share=0.3, decimals=1, dense_dets=650, dense_one_class=True)
    pairs = np.unique([(d["image_id"], d["category_id"]) for d in dets], axis=0, return_counts=True)[1]
    assert pairs.max() > 500
    scores = [d["score"] for d in dets]
    assert len(set(scores)) <= 11 < len(scores)
    areas = {a["area"] for a in gt["annotations"]}
    assert SMALL in areas and MEDIUM in areas and min(areas) < 1.0 and max(areas) > MEDIUM
    assert any(a["iscrowd"] for a in gt["annotations"]) and any(not a["iscrowd"] for a in gt["annotations"])
    sizes = {i["id"]: (i["width"], i["height"]) for i in gt["images"]}
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        assert 0 <= x <= x + w <= sizes[a["image_id"]][0] + 1e-6 and 0 <= y <= y + h <= sizes[a["image_id"]][1] + 1e-6
        assert w >= 0.5 and h >= 0.5 and math.isclose(a["area"], w * h)
    assert len({a["id"] for a in gt["annotations"]}) == len(gt["annotations"]) and min(a["id"] for a in
                                                                                         gt["annotations"]) >= 1
    assert [i["id"] for i in gt["images"]] != sorted(i["id"] for i in gt["images"])
    all_crowd = make_split(3, n_images=1, n_cats=1, crowd_share=1.0, decimals=2, dense_dets=0, dense_one_class=False)
    assert any(a["iscrowd"] == 0 for a in all_crowd[0]["annotations"])
