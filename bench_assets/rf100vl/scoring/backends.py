"""The COCO evaluators behind `coco.score`: the prepared ground truth (`PreparedGT`), one runner per backend
(fast = hotcoco fed from arrays, reference = stock pycocotools, hotcoco's own route, faster-coco-eval, and the
test-only `_fast_coco`) and `read_metrics`, which reads every metric from the accumulated arrays (never
`summarize()`). The COCO libraries are imported inside the runners."""

from __future__ import annotations

import contextlib
import io
import time
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from bench_assets.rf100vl.scoring.results import GroundTruthInvalid
from bench_assets.rf100vl.scoring.validation import _column, _DetArrays, validate_gt


@contextlib.contextmanager
def _quiet():
    """Swallow the libraries' progress prints (not thread-safe: redirects the process's sys.stdout)."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _max_dets(max_det: int) -> list[int]:
    return sorted({1, 10, 100, max_det})


def _gt_dataset(gt: dict[str, Any]) -> dict[str, Any]:
    """A copy the libraries may mutate (both write `ignore` into GT annotations) without touching `gt`;
    a missing `iscrowd` is filled in as 0 (stock pycocotools would raise KeyError in `evaluateImg`)."""
    return {
        "images": [dict(i) for i in gt["images"]],
        "categories": [dict(c) for c in gt["categories"]],
        "annotations": [a if "iscrowd" in a else {**a, "iscrowd": 0} for a in map(dict, gt["annotations"])],
    }


@dataclass
class _FastGT:
    """The ground truth as faster-coco-eval's C++ evaluator reads it, built once per split."""

    dataset: Any  # faster_eval_api_cpp.Dataset of {id, area, iscrowd, ignore} per (image, category)
    boxes: dict[tuple[int, int], np.ndarray]  # (image_id, category_id) -> [g, 4] xywh, file order
    crowd: dict[tuple[int, int], list[int]]


@dataclass
class PreparedGT:
    """Ground truth validated once (and indexed once per engine that needs it: hotcoco for `fast`,
    faster-coco-eval's C++ dataset for `faster-coco-eval`); reusable across `score` calls on the same
    split. Nothing here is modified by scoring."""

    gt: dict[str, Any]
    image_ids: list[int]  # sorted
    cat_ids: list[int]  # sorted
    num_gt: int
    _fast: _FastGT | None = None
    _hotcoco: Any = None

    @classmethod
    def build(cls, gt: dict[str, Any], *, validate: bool = True, source: str = "ground truth") -> PreparedGT:
        if validate:
            validate_gt(gt, source=source)
        return cls(gt=gt, image_ids=sorted(i["id"] for i in gt["images"]),
                   cat_ids=sorted(c["id"] for c in gt["categories"]), num_gt=len(gt["annotations"]))

    def hotcoco(self) -> Any:
        """The ground truth as a hotcoco `COCO`, ids mapped to their rank (image k and category k of the
        sorted ids; annotation ids 1..n in file order): COCOeval's results depend on the order of the
        image ids, of the category ids and of the annotations of one (image, category), which the ranks
        and the file order keep, never on the id values (0 aside, which validation refuses). So negative
        ids, which hotcoco refuses, and ids past 2^53, which a float64 array could not hold, score too."""
        if self._hotcoco is None:
            from hotcoco import COCO

            anns = self.gt["annotations"]
            n = len(anns)
            self._hotcoco = COCO.from_arrays(
                [{"id": k} for k in range(len(self.image_ids))],
                [{"id": k, "name": str(c)} for k, c in enumerate(self.cat_ids)],
                _ranks(self.image_ids, _column(anns, "image_id")),
                _ranks(self.cat_ids, _column(anns, "category_id")),
                np.fromiter(chain.from_iterable(_column(anns, "bbox")), np.float64, 4 * n).reshape(n, 4),
                ids=np.arange(1, n + 1, dtype=np.int64),
                area=np.fromiter(_column(anns, "area"), np.float64, n),
                # stock pycocotools: ignore = iscrowd (a dataset's own "ignore" flag is overridden); no column
                iscrowd=np.fromiter(_column(anns, "iscrowd", 0), np.int64, n))
        return self._hotcoco

    def fast(self) -> _FastGT:
        if self._fast is None:
            import faster_coco_eval.faster_eval_api_cpp as _C

            dataset = _C.Dataset()
            groups: dict[tuple[int, int], list[int]] = {}
            anns = self.gt["annotations"]
            for n, a in enumerate(anns):  # file order within each (image, category), as both libraries keep it
                crowd = bool(a.get("iscrowd", 0))
                key = (a["image_id"], a["category_id"])
                # both libraries: ignore = iscrowd (a dataset's own "ignore" flag is overridden)
                dataset.append_ref(key[0], key[1], {"id": a["id"], "area": a["area"], "iscrowd": crowd,
                                                    "ignore": crowd})
                groups.setdefault(key, []).append(n)
            all_boxes = np.asarray([a["bbox"] for a in anns], dtype=np.float64).reshape(len(anns), 4)
            self._fast = _FastGT(
                dataset=dataset,
                boxes={k: all_boxes[v] for k, v in groups.items()},
                crowd={k: [int(bool(anns[i].get("iscrowd", 0))) for i in v] for k, v in groups.items()},
            )
        return self._fast


def _ranks(sorted_ids: list[int], ids: Any) -> np.ndarray:
    """The position of each of `ids` in `sorted_ids` (every id is one of them: validation made sure)."""
    return np.searchsorted(np.asarray(sorted_ids, dtype=np.int64), np.asarray(ids, dtype=np.int64))


def _run_fast(prepared: PreparedGT, dets: list[dict[str, Any]], arrays: _DetArrays, max_det: int,
              seconds: dict[str, float]) -> tuple[dict[str, Any], Any]:
    """hotcoco's COCOeval, fed directly: the ground truth from `PreparedGT.hotcoco` (ids as ranks), the
    detections as one float64 array [image rank, x, y, w, h, score, category rank] in file order, which
    `loadRes` reads as pycocotools' `loadNumpyAnnotations` + `loadRes` do (ids 1..n in file order, area
    = w * h); evaluate and accumulate at maxDets [1, 10, 100, max_det]. hotcoco then does what stock
    `evaluateImg` does: per (image, category), a stable sort by score (ties in file order), the first
    maxDets[-1] kept."""
    from hotcoco import COCOeval

    t0 = time.perf_counter()
    gt = prepared.hotcoco()
    rows = np.empty((arrays.score.size, 7), dtype=np.float64)
    rows[:, 0] = _ranks(prepared.image_ids, arrays.image_id)
    rows[:, 1:5] = arrays.bbox
    rows[:, 5] = arrays.score
    rows[:, 6] = _ranks(prepared.cat_ids, arrays.category_id)
    ev = COCOeval(gt, gt.loadRes(rows), "bbox")
    return _evaluate_timed(ev, max_det, t0, seconds)


def _run_hotcoco(prepared: PreparedGT, dets: list[dict[str, Any]], arrays: _DetArrays, max_det: int,
                 seconds: dict[str, float]) -> tuple[dict[str, Any], Any]:
    """hotcoco through its pycocotools-compatible API, as a user runs it: `COCO(gt)`, `loadRes(dets)`,
    `COCOeval(..., "bbox")` (neither document is modified: hotcoco copies them into Rust)."""
    from hotcoco import COCO, COCOeval

    t0 = time.perf_counter()
    try:
        coco_gt = COCO(prepared.gt)
        ev = COCOeval(coco_gt, coco_gt.loadRes(dets), "bbox")
    except ValueError as e:  # hotcoco refuses negative ids, which pycocotools takes
        raise GroundTruthInvalid("ground truth", [f"hotcoco's own loader refuses it ({e}); the fast backend, which "
                                                  "hands hotcoco the ids as ranks, scores it"]) from e
    return _evaluate_timed(ev, max_det, t0, seconds)


def _run_faster_coco_eval(prepared: PreparedGT, dets: list[dict[str, Any]], arrays: _DetArrays, max_det: int,
                          seconds: dict[str, float]) -> tuple[dict[str, Any], Any]:
    """faster-coco-eval's C++ matcher and accumulator, fed directly (the `faster-coco-eval` backend).

    What `COCOeval_faster.evaluate()` does for bbox, without its Python layers (COCO indexes,
    `getAnnIds`/`loadAnns`, per-pair dict lists): per (image, category), detections sorted by score
    descending (stable, file order on ties: np.lexsort is stable like the libraries' sorts), cut at
    maxDets[-1], IoU against the ground truth in file order with the libraries' own `mask.iou`; the
    C++ dataset holds only the fields its parser reads (id, score, area, iscrowd, ignore). Detection
    ids are 1..n in file order and area = w * h, as `COCO.loadRes` assigns them.
    """
    import faster_coco_eval.faster_eval_api_cpp as _C
    from faster_coco_eval.core.cocoeval import Params

    t0 = time.perf_counter()
    fast_gt = prepared.fast()
    p = Params(iouType="bbox")
    p.imgIds = list(prepared.image_ids)
    p.catIds = list(prepared.cat_ids)
    p.maxDets = _max_dets(max_det)
    cut = p.maxDets[-1]
    n_cat = len(p.catIds)
    img_pos = np.searchsorted(np.asarray(p.imgIds, dtype=np.int64), arrays.image_id)
    cat_pos = np.searchsorted(np.asarray(p.catIds, dtype=np.int64), arrays.category_id)
    order = np.lexsort((-arrays.score, cat_pos, img_pos))
    key = img_pos[order] * n_cat + cat_pos[order]
    dt_dataset = _C.Dataset()
    area = arrays.bbox[:, 2] * arrays.bbox[:, 3]
    for i, img, cat, sc, ar in zip(order.tolist(), arrays.image_id[order].tolist(),
                                   arrays.category_id[order].tolist(), arrays.score[order].tolist(),
                                   area[order].tolist(), strict=True):
        dt_dataset.append_ref(img, cat, {"id": i + 1, "score": sc, "area": ar})
    t1 = time.perf_counter()

    ious = _pair_ious(p.imgIds, p.catIds, fast_gt, arrays.bbox, order, key, cut)
    evals = _C.COCOevalEvaluateImages(p.areaRng, cut, p.iouThrs, ious, fast_gt.dataset, dt_dataset, p.imgIds,
                                      p.catIds, True)
    t2 = time.perf_counter()
    accumulated = _C.COCOevalAccumulate(p, evals)
    t3 = time.perf_counter()
    seconds.update(load=t1 - t0, evaluate=t2 - t1, accumulate=t3 - t2)
    return accumulated, p


def _pair_ious(img_ids: list[int], cat_ids: list[int], fast_gt: _FastGT, bbox: np.ndarray, order: np.ndarray,
               key: np.ndarray, cut: int) -> list[list[Any]]:
    """IoU matrices per (image, category), as `COCOevalEvaluateImages` takes them: `[image][category]`, empty
    where the pair has no ground truth or no detection. `order` sorts the detections by (image, category,
    score descending), `key` is image position * len(cat_ids) + category position in that order, and each
    pair keeps its `cut` highest-scoring detections."""
    from faster_coco_eval.core import mask as mask_utils

    n_cat = len(cat_ids)
    ious: list[list[Any]] = [[[] for _ in range(n_cat)] for _ in img_ids]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], key.size] if key.size else np.zeros(0, np.int64)
    for s0, e0, k in zip(starts.tolist(), ends.tolist(), key[starts].tolist(), strict=True):
        pair = (img_ids[k // n_cat], cat_ids[k % n_cat])
        gt_boxes = fast_gt.boxes.get(pair)
        if gt_boxes is None:
            continue
        rows = order[s0:min(e0, s0 + cut)]
        ious[k // n_cat][k % n_cat] = mask_utils.iou(bbox[rows], gt_boxes, fast_gt.crowd[pair])
    return ious


def _dt_annotations(dets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `COCO.loadRes` makes of bbox results (id from 1 in file order, area = w*h, iscrowd 0), minus
    the rectangle polygon it adds as `segmentation`, which bbox evaluation never reads."""
    out = []
    for n, d in enumerate(dets, start=1):
        b = d["bbox"]
        out.append({"id": n, "image_id": d["image_id"], "category_id": d["category_id"], "bbox": b,
                    "score": d["score"], "area": b[2] * b[3], "iscrowd": 0})
    return out


def _run_fast_coco(prepared: PreparedGT, dets: list[dict[str, Any]], arrays: _DetArrays, max_det: int,
                   seconds: dict[str, float]) -> tuple[dict[str, Any], Any]:
    """The stock `COCOeval_faster` route (COCO objects, its own evaluate/accumulate): kept to check that
    `_run_faster_coco_eval` feeds the C++ core exactly as the library does (tests). Not a public backend."""
    from faster_coco_eval import COCO, COCOeval_faster

    t0 = time.perf_counter()
    with _quiet():
        coco_gt = COCO(_gt_dataset(prepared.gt))
        coco_dt = COCO()
        coco_dt.dataset = {"images": coco_gt.dataset["images"], "categories": coco_gt.dataset["categories"],
                           "annotations": _dt_annotations(dets)}
        coco_dt.createIndex()
        ev = COCOeval_faster(coco_gt, coco_dt, iouType="bbox", print_function=_silent, separate_eval=True)
        return _evaluate_timed(ev, max_det, t0, seconds)


def _run_reference(prepared: PreparedGT, dets: list[dict[str, Any]], arrays: _DetArrays, max_det: int,
                   seconds: dict[str, float]) -> tuple[dict[str, Any], Any]:
    """Stock pycocotools: COCO index, `loadRes`, `COCOeval.evaluate()`, `accumulate()`."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    t0 = time.perf_counter()
    with _quiet():
        coco_gt = COCO()
        coco_gt.dataset = _gt_dataset(prepared.gt)
        coco_gt.createIndex()
        if dets:
            # stock loadRes on copies: it writes id/area/iscrowd/segmentation into each result
            coco_dt = coco_gt.loadRes([dict(d) for d in dets])
        else:  # stock loadRes cannot take an empty list (it reads anns[0])
            coco_dt = COCO()
            coco_dt.dataset = {"images": list(coco_gt.dataset["images"]),
                               "categories": list(coco_gt.dataset["categories"]), "annotations": []}
            coco_dt.createIndex()
        ev = COCOeval(coco_gt, coco_dt, iouType="bbox")
        return _evaluate_timed(ev, max_det, t0, seconds)


def _evaluate_timed(ev: Any, max_det: int, t0: float, seconds: dict[str, float]) -> tuple[dict[str, Any], Any]:
    """evaluate() and accumulate() at maxDets [1, 10, 100, max_det], timing load (since t0) and both."""
    ev.params.maxDets = _max_dets(max_det)
    t1 = time.perf_counter()
    ev.evaluate()
    t2 = time.perf_counter()
    ev.accumulate()
    t3 = time.perf_counter()
    seconds.update(load=t1 - t0, evaluate=t2 - t1, accumulate=t3 - t2)
    return ev.eval, ev.params


_RUNNERS = {"fast": _run_fast, "reference": _run_reference, "hotcoco": _run_hotcoco,
            "faster-coco-eval": _run_faster_coco_eval, "_fast_coco": _run_fast_coco}


def _silent(*_args: Any, **_kwargs: Any) -> None:
    return None


def _mean_defined(a: np.ndarray) -> float | None:
    """Mean over entries > -1, as COCOeval's summarize computes it; None when every entry is -1."""
    v = a[a > -1]
    return float(np.mean(v)) if v.size else None


def read_metrics(accumulated: dict[str, Any], params: Any, max_det: int) -> dict[str, float | None]:
    """The 13 metrics from a COCOeval's accumulated `eval` dict and its `params` (either library), at `max_det`."""
    p = params
    precision = np.asarray(accumulated["precision"])  # [T, R, K, A, M]
    recall = np.asarray(accumulated["recall"])  # [T, K, A, M]
    max_dets = list(p.maxDets)
    iou = np.asarray(p.iouThrs, dtype=np.float64)
    if precision.ndim != 5 or recall.ndim != 4 or precision.shape[-1] != len(max_dets):
        raise RuntimeError(f"unexpected accumulated shapes: precision {precision.shape}, recall {recall.shape}, "
                           f"maxDets {max_dets}")
    t50 = int(np.flatnonzero(np.isclose(iou, 0.50))[0])
    t75 = int(np.flatnonzero(np.isclose(iou, 0.75))[0])
    labels = list(p.areaRngLbl)
    a_all, a_s, a_m, a_l = (labels.index(x) for x in ("all", "small", "medium", "large"))
    m = max_dets.index(max_det)

    def ap(area: int, t: int | None = None) -> float | None:
        s = precision[:, :, :, area, m] if t is None else precision[t, :, :, area, m]
        return _mean_defined(s)

    def ar(area: int, mi: int) -> float | None:
        return _mean_defined(recall[:, :, area, mi])

    return {
        "mAP50_95": ap(a_all),
        "mAP50": ap(a_all, t50),
        "mAP75": ap(a_all, t75),
        "mAP_small": ap(a_s),
        "mAP_medium": ap(a_m),
        "mAP_large": ap(a_l),
        "AR1": ar(a_all, max_dets.index(1)),
        "AR10": ar(a_all, max_dets.index(10)),
        "AR100": ar(a_all, max_dets.index(100)),
        "AR_small": ar(a_s, m),
        "AR_medium": ar(a_m, m),
        "AR_large": ar(a_l, m),
        "AR_max_det": ar(a_all, m),
    }
