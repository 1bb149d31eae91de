"""Score saved detections against canonical COCO ground truth: a pure function of two JSON documents.

No Dagster, no torch, no model: `score(gt, dets, backend=..., max_det=500)` reads the ground truth
(a canonical `_annotations.coco.json` as a dict) and the detections a prediction child wrote (a COCO
results list), and returns the 13 `METRICS`. The COCO libraries are imported inside the functions,
so `import scoring` costs only numpy.

Backends, one reading of their output (`BACKENDS`):
- `"reference"`: stock `pycocotools.cocoeval.COCOeval` (the results go through stock `COCO.loadRes`);
- `"fast"`: hotcoco's Rust `COCOeval` (a port of pycocotools), fed directly from the validated arrays
  (`_run_fast`: ground truth through `COCO.from_arrays`, built once per `PreparedGT`; detections as
  one `(N, 7)` array through `loadRes`; image and category ids mapped to their rank, which keeps
  every order COCOeval depends on);
- `"hotcoco"`: hotcoco through its pycocotools-compatible API as a user runs it (`COCO(dict)`,
  `loadRes(list)`); a test holds it cell for cell equal to `"fast"`;
- `"faster-coco-eval"`: faster-coco-eval's C++ matcher and accumulator (the core of
  `COCOeval_faster`), fed directly (`_run_faster_coco_eval`; a test holds it bit-identical to the
  library's own `COCOeval_faster` route, `"_fast_coco"`, which is not public).

Parity (`parity`, `score_both`): the accumulated `precision` [T,R,K,A,M] and `recall` [T,K,A,M]
arrays are compared cell for cell, with zero tolerance by default, besides the 13 metrics. hotcoco
1.3.0 equals stock pycocotools in every cell on every input the tests and the audit tried (the
corpus files, the scoring tests' inputs, generated dense splits with > 500 boxes and > 500
detections on an image, crowd boxes, ties, empty images, boxes on the area-bucket boundaries);
that is why `"fast"` runs on it. faster-coco-eval differs in one documented way: stock precision is
tp / (tp + fp + eps) with eps = np.spacing(1), faster-coco-eval's tp / (tp + fp). They differ only
where tp + fp == 1, i.e. a category's top-ranked detection is a hit: 1 - 2^-52 (stock, hotcoco) vs
1.0 (faster-coco-eval); that value survives interpolation only when the next-ranked detection is a
miss. Summary metrics are then equal to ~1e-16 (often bit-identical). hotcoco refuses negative
image or category ids (pycocotools takes them): `"fast"` is unaffected (it maps ids to ranks),
the `"hotcoco"` backend raises `GroundTruthInvalid` naming hotcoco's refusal.

Neither library's `summarize()` is used. Stock `summarize()` hard-codes maxDets=100 for the AP
lines (with maxDets=[1,10,500] the headline is -1; with [1,10,100,500] everything is silently read
at 100), and faster-coco-eval's layout shifts with `len(maxDets)`. Every backend instead runs with
`params.maxDets = sorted({1, 10, 100, max_det})` and the metrics are read from the accumulated arrays
`eval["precision"]` and `eval["recall"]`: AP at `max_det` is the mean of the entries > -1 of
`precision[:, :, :, area, index(max_det)]` (AP50/AP75: the IoU row 0.50/0.75; size buckets: area
index 1/2/3 = small/medium/large as COCOeval sizes them, from the GT `area`), AR_k the same over
`recall[..., index(k)]`. -1 ("no ground truth in this bucket") is excluded from every mean; a metric
whose entries are all -1 is undefined and reported as None (never -1). The headline mAP50_95 must
be defined: `ScoreUndefined` otherwise (ground truth without boxes).

More than `max_det` detections on an image is scored as stock pycocotools scores it, by every
backend: `COCOeval.computeIoU` and `evaluateImg` sort the detections of one (image, category) by
score, highest first, with a stable sort (`np.argsort([-d['score'] for d in dt], kind='mergesort')`,
so ties keep results-file order), and keep the first `maxDets[-1]`; `accumulate` then reads the first
`maxDet` of each for every maxDets entry. Nothing is refused. What was over is reported as a fact
(`MaxDetCut` in `ScoreResult.max_det_cut`, and a line in `warnings`): the images carrying more than
`max_det` detections in total (the protocol's bound: at most `max_det` per image, all categories
together) and how many detections the evaluator never saw (beyond `max_det` in one (image,
category)), per image. `strict=True` (`bench score --strict`) refuses such a file instead, with the
message the protocol check always gave.

Detections are read as strictly as COCO writes them (`_check_predictions`, the one validation every
path goes through): image_id and category_id are JSON integers, bbox and score finite JSON numbers;
nothing is converted (a string "3", a float 3.0 or a boolean is refused, naming the item, the value
and the fix). An empty list is valid and scores 0.0, with a warning in `ScoreResult.warnings`.

Ground truth with annotation id 0 is rejected (`GroundTruthInvalid`): the backends use the id as
the match marker where 0 means "unmatched", so such a box could never count as found. Canonical
datasets are renumbered from 1 by `verify.py`. A missing `iscrowd` means 0 (stock pycocotools would
raise KeyError; the reference backend gets a copy with `iscrowd: 0` filled in).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from bench_assets.rf100vl.scoring.backends import _RUNNERS, PreparedGT, read_metrics
from bench_assets.rf100vl.scoring.results import (
    BACKENDS,
    DEFAULT_MAX_DET,
    ENGINES,
    HEADLINE,
    METRICS,
    PARITY_ARRAYS,
    Backend,
    BothResult,
    ParityAudit,
    ScoreResult,
    ScoreUndefined,
)
from bench_assets.rf100vl.scoring.validation import _check_max_det, _check_predictions, _DetArrays


def score(gt: dict[str, Any] | PreparedGT, dets: list[dict[str, Any]], *, backend: Backend,
          max_det: int = DEFAULT_MAX_DET, source: str = "predictions", strict: bool = False) -> ScoreResult:
    """Score `dets` (a COCO results list) against `gt` (a COCO dict, or a `PreparedGT` to reuse its
    validation and engine indexes) with one backend, at `max_det` detections per image and category,
    exactly as stock pycocotools scores them.

    Neither argument is modified. Raises `GroundTruthInvalid` / `PredictionsInvalid` for inputs that
    cannot be scored (with `strict`, also an image over `max_det` detections in total: the protocol's
    refusal), `ScoreUndefined` when the headline is undefined; `warnings` names what was scored but
    deserves a look (an empty detections list scores 0.0; images over `max_det`, with `max_det_cut`
    saying how many detections were not evaluated on which images). `seconds` holds validate (both
    inputs, as arrays), load (the backend's GT/DT objects), evaluate, accumulate, summarize (reading
    the 13 metrics) and total; `arrays` the accumulated precision, recall and scores; `engine` the
    evaluating library and its version.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return _score(gt, dets, backend, max_det, source, strict)


def _score(gt: dict[str, Any] | PreparedGT, dets: list[dict[str, Any]], backend: str, max_det: int,
           source: str, strict: bool) -> ScoreResult:
    _check_max_det(max_det)
    t0 = time.perf_counter()
    prepared = gt if isinstance(gt, PreparedGT) else PreparedGT.build(gt)
    arrays = _check_predictions(set(prepared.image_ids), set(prepared.cat_ids), dets, max_det, source, strict)
    seconds = {"validate": time.perf_counter() - t0}
    return _evaluate(prepared, dets, arrays, backend, max_det, seconds)


def _evaluate(prepared: PreparedGT, dets: list[dict[str, Any]], arrays: _DetArrays, backend: str, max_det: int,
              seconds: dict[str, float]) -> ScoreResult:
    accumulated, params = _RUNNERS[backend](prepared, dets, arrays, max_det, seconds)
    t1 = time.perf_counter()
    metrics = read_metrics(accumulated, params, max_det)
    kept = {k: np.asarray(accumulated[k]) for k in ("precision", "recall", "scores")}
    seconds["summarize"] = time.perf_counter() - t1
    seconds["total"] = sum(seconds[k] for k in ("validate", "load", "evaluate", "accumulate", "summarize"))
    if metrics[HEADLINE] is None:
        raise ScoreUndefined(
            f"{HEADLINE} is undefined: the ground truth has no box in any category "
            f"({len(prepared.image_ids)} images, {prepared.num_gt} annotations); nothing to score against")
    return ScoreResult(metrics=metrics, backend=backend, max_det=max_det, num_images=len(prepared.image_ids),
                       num_gt=prepared.num_gt, num_dets=len(dets), seconds=seconds, warnings=list(arrays.warnings),
                       max_det_cut=arrays.max_det_cut, engine=engine_version(backend), arrays=kept)


def engine_version(backend: str) -> str:
    """"library version" of the library that evaluates for `backend` (`ENGINES`), e.g. "hotcoco 1.3.0"."""
    lib = ENGINES[backend]
    if lib == "pycocotools":  # no __version__ attribute
        from importlib.metadata import version

        return f"pycocotools {version('pycocotools')}"
    module = __import__({"hotcoco": "hotcoco", "faster-coco-eval": "faster_coco_eval"}[lib])
    return f"{lib} {module.__version__}"


def parity(a: ScoreResult, b: ScoreResult, tol: float = 0.0) -> ParityAudit:
    """Compare two results: the 13 metrics (bit-identical count, max |a - b|) and, when both carry them,
    the accumulated `PARITY_ARRAYS` cell for cell; `differing` names each metric and array off by more
    than `tol` (0: any difference counts), `engines` which library and version produced each side."""
    identical = 0
    max_dev = 0.0
    differing = []
    for name in METRICS:
        x, y = a.metrics.get(name), b.metrics.get(name)
        if x is None or y is None:
            if x is None and y is None:
                identical += 1
            else:
                differing.append(name)
            continue
        if x == y:
            identical += 1
        dev = abs(x - y)
        max_dev = max(max_dev, dev)
        if not dev <= tol:
            differing.append(name)
    arrays = _array_parity(a.arrays, b.arrays, tol) if a.arrays is not None and b.arrays is not None else {}
    for name, cmp in arrays.items():
        max_dev = max(max_dev, cmp["max_abs_deviation"])
        if cmp["differing"]:
            differing.append(name)
    return ParityAudit(identical=identical, total=len(METRICS), max_abs_deviation=max_dev, differing=differing,
                       tol=tol, arrays=arrays, engines={a.backend: a.engine, b.backend: b.engine})


def _array_parity(a: dict[str, np.ndarray], b: dict[str, np.ndarray], tol: float) -> dict[str, dict[str, Any]]:
    """Per array of `PARITY_ARRAYS`: cells, cells off by more than tol, max |a - b| (inf for a shape mismatch)."""
    out = {}
    for name in PARITY_ARRAYS:
        x, y = np.asarray(a[name], dtype=np.float64), np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            out[name] = {"cells": int(max(x.size, y.size)), "differing": int(max(x.size, y.size)),
                         "max_abs_deviation": math.inf}
            continue
        dev = np.abs(x - y)
        bad = ~(dev <= tol)  # NaN counts as differing
        out[name] = {"cells": int(x.size), "differing": int(bad.sum()),
                     "max_abs_deviation": float(dev.max()) if dev.size else 0.0}
    return out


def score_both(gt: dict[str, Any] | PreparedGT, dets: list[dict[str, Any]], *, max_det: int = DEFAULT_MAX_DET,
               tol: float = 0.0, source: str = "predictions", strict: bool = False,
               backends: tuple[str, str] = ("fast", "reference")) -> BothResult:
    """Score with two backends (validating once; both results report that time): the first (`fast`) is the
    headline, the second (stock pycocotools) and their parity audit travel with it. The audit compares the
    metrics and the accumulated precision and recall arrays with zero tolerance unless `tol` says otherwise."""
    _check_max_det(max_det)
    for backend in backends:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    t0 = time.perf_counter()
    prepared = gt if isinstance(gt, PreparedGT) else PreparedGT.build(gt)
    arrays = _check_predictions(set(prepared.image_ids), set(prepared.cat_ids), dets, max_det, source, strict)
    validate_s = time.perf_counter() - t0
    head = _evaluate(prepared, dets, arrays, backends[0], max_det, {"validate": validate_s})
    ref = _evaluate(prepared, dets, arrays, backends[1], max_det, {"validate": validate_s})
    return BothResult(headline=head, reference=ref, audit=parity(head, ref, tol))
