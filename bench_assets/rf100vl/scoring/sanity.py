"""Is training and scoring sane? Three judgements as pure functions returning a `Finding` (no Dagster).

The Dagster shells live next to their assets: `labels_reached_loss` on `rf100vl/checkpoint`
(checkpoint_assets.py), `ground_truth_scores_perfect` on `rf100vl/dataset` (checks.py) and
`predicted_classes_exist` on `rf100vl/predictions` (prediction_assets.py). Each reads files only.

- **Labels reached the loss.** LibreYOLO logs per-epoch loss components (`metrics.jsonl` `train/<name>_loss`,
  copied into `result.json` `epochs[].losses`: yolo9 `box`/`cls`/`dfl`, yolox `iou`/`obj`/`cls`/`l1`). The
  box-regression term is zero when the assigner finds no positive anchor (no box reached the loss), and ~1e-5
  when the positives it finds carry almost no weight (objects a few pixels wide at the training size: the
  `make demo` mini-dense run at 160 px before the generator fix, 7.5 px objects). A healthy run's box loss is
  0.1-7. LibreYOLO does not expose the
  positive count (its yolo9 loss computes `num_fg` but the trainer does not log it), so the box loss is the
  signal: near zero on every epoch while the train split has boxes fails, with the training size and the
  median object size at that size (sqrt(w*h) scaled by imgsz / max(image w, h), the letterbox scale).
- **Ground truth as predictions scores 1.0.** Every test box fed back as a detection (score 1.0, same image
  and category ids) must score mAP50-95 1.0 on every scoring backend, for the images with at most `max_det`
  boxes (denser images are left out: beyond `max_det` a perfect score is not possible). Anything else means
  a backend sees other ids than the split holds (e.g. faster-coco-eval keys ids as doubles, so ids above 2**53
  collide) or cannot read them.
  Tolerance 1e-9: stock pycocotools' precision is tp / (tp + fp + eps), so a category with a single box scores
  1 - 2**-52 there (scoring.py's module docstring); one missed box moves AP by far more than 1e-9.
- **Predicted classes exist.** Every category id of a predictions file is one of the test split's.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from bench_assets.platform.findings import Finding
from bench_assets.rf100vl.training.pretrained import MIN_LOADED_SHARE

NEAR_ZERO_BOX_LOSS = 1e-3  # healthy runs: 0.1-7 on every epoch; the old demo mini-dense run: <= 4.3e-05
BOX_LOSS_KEYS = ("box", "iou", "giou", "bbox")  # the box-regression component: yolo9 "box", yolox "iou"
FINEST_STRIDE_PX = 8  # the P3 stride of the YOLO heads (yolo9, yolox): one anchor point per 8 x 8 px
AP_TOLERANCE = 1e-9
HEADLINE = "mAP50_95"


# ---------------------------------------------------------------------------------------------
# Labels reached the loss


def object_sides_px(coco: dict[str, Any], imgsz: int) -> list[float]:
    """Each annotation's side sqrt(w*h) in pixels at training size `imgsz` (the image's long side -> imgsz)."""
    long_side = {i["id"]: max(i["width"], i["height"]) for i in coco["images"]}
    return [math.sqrt(max(a["bbox"][2], 0.0) * max(a["bbox"][3], 0.0)) * imgsz / long_side[a["image_id"]]
            for a in coco["annotations"]]


def median_object_px(coco: dict[str, Any], imgsz: int) -> float | None:
    sides = object_sides_px(coco, imgsz)
    return statistics.median(sides) if sides else None


def box_loss_key(epochs: Sequence[dict[str, Any]]) -> str | None:
    """The box-regression component the epochs record (first of BOX_LOSS_KEYS present), or None."""
    present = {k for e in epochs for k in (e.get("losses") or {})}
    return next((k for k in BOX_LOSS_KEYS if k in present), None)


def _loss_rows(epochs: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    rows = []
    for e in epochs:
        losses = e.get("losses") or {}
        if key in losses:
            rows.append({"epoch": e["epoch"], f"{key}_loss": losses[key], "dfl_loss": losses.get("dfl")})
    return rows


def labels_reached_loss(partition: str, dataset: str, epochs: Sequence[dict[str, Any]], train_boxes: int,
                        imgsz: int, median_px: float | None, near_zero: float = NEAR_ZERO_BOX_LOSS) -> Finding:
    """Fail when the box loss stays below `near_zero` on every recorded epoch while the train split has boxes.

    `epochs` are result.json's `epochs` (dicts with `epoch` and `losses`); `median_px` the median train object
    side at `imgsz` (`median_object_px`)."""
    facts: dict[str, Any] = {"dataset": dataset, "imgsz": imgsz, "train_boxes": train_boxes,
                             "median_object_px": None if median_px is None else round(median_px, 2),
                             "near_zero": near_zero, "epochs": len(epochs)}
    key = box_loss_key(epochs)
    if train_boxes == 0:
        return Finding(True, f"{partition}: the train split of {dataset} has no boxes; nothing to reach the loss",
                       facts=facts)
    if key is None:
        components = sorted({k for e in epochs for k in (e.get("losses") or {})})
        return Finding(False, f"{partition}: cannot tell whether the labels reached the loss: result.json records "
                              f"no box-regression loss ({'/'.join(BOX_LOSS_KEYS)}) on {len(epochs)} epoch(s); "
                              f"components recorded: {components}", facts=facts, severity="WARN")
    rows = _loss_rows(epochs, key)
    values = [r[f"{key}_loss"] for r in rows]
    facts.update(box_loss_key=key, max_box_loss=max(values), last_box_loss=values[-1])
    if max(values) >= near_zero:
        return Finding(True, f"{partition}: box loss ({key}) reached {max(values):.3g} (>= {near_zero:g}) on "
                             f"{len(values)} epoch(s) of training on {train_boxes} boxes", facts=facts)
    size = "unknown" if median_px is None else f"{median_px:.2f} px"
    why = (f"objects under the detector's finest stride ({FINEST_STRIDE_PX} px) get (almost) no positive anchor: "
           "train at a larger imgsz" if median_px is not None and median_px < FINEST_STRIDE_PX else
           "the objects are not too small at this size: check how the labels reach the trainer (data.yaml "
           "names, category ids, box format)")
    return Finding(False, (
        f"{partition}: the box loss ({key}) stayed below {near_zero:g} on all {len(values)} epochs (max "
        f"{max(values):.3g}, last {values[-1]:.3g}) while the train split of {dataset} has {train_boxes} boxes: "
        f"the labels did not reach the loss. At the training size {imgsz} px the median train object is {size} "
        f"(sqrt(w*h) x {imgsz} / max(image w, h)); {why}"), rows, facts)


# ---------------------------------------------------------------------------------------------
# Ground truth as predictions scores 1.0


def ground_truth_as_predictions(gt: dict[str, Any], max_det: int) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                                            list[Any]]:
    """(the ground truth restricted to images with at most `max_det` boxes, its boxes as detections with score 1.0
    and the same image and category ids, the image ids left out)."""
    per_image = Counter(a["image_id"] for a in gt["annotations"])
    dense = sorted((i for i, n in per_image.items() if n > max_det), key=repr)
    left_out = set(dense)
    kept = {**gt, "images": [i for i in gt["images"] if i["id"] not in left_out],
            "annotations": [a for a in gt["annotations"] if a["image_id"] not in left_out]}
    dets = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": list(a["bbox"]), "score": 1.0}
            for a in kept["annotations"]]
    return kept, dets, dense


def _score_each(gt: dict[str, Any], dets: list[dict[str, Any]], backends: Sequence[str], score: Callable[..., Any],
                max_det: int) -> list[dict[str, Any]]:
    """One row per backend: its headline AP, or the error it raised."""
    rows = []
    for backend in backends:
        try:
            ap = score(gt, dets, backend=backend, max_det=max_det).metrics[HEADLINE]
            rows.append({"backend": backend, HEADLINE: ap, "error": None})
        except Exception as exc:  # noqa: BLE001 - a backend that cannot score the split is the finding
            rows.append({"backend": backend, HEADLINE: None, "error": f"{type(exc).__name__}: {exc}"[:400]})
    return rows


def ground_truth_scores_perfect(dataset: str, gt: dict[str, Any], backends: Sequence[str],
                                score: Callable[..., Any], max_det: int, tol: float = AP_TOLERANCE) -> Finding:
    """Score the test ground truth fed back as predictions with `score(gt, dets, backend=, max_det=)` on every
    backend; fail naming each backend whose mAP50-95 is not 1.0 (within `tol`) or that raised."""
    kept, dets, dense = ground_truth_as_predictions(gt, max_det)
    facts: dict[str, Any] = {"dataset": dataset, "backends": list(backends), "boxes": len(dets),
                             "images": len(kept["images"]), "images_left_out_over_max_det": len(dense),
                             "max_det": max_det, "tolerance": tol}
    scope = (f"{len(dets)} boxes on {len(kept['images'])} images"
             + (f"; {len(dense)} images with more than {max_det} boxes left out" if dense else ""))
    if not dets:
        return Finding(False, f"{dataset} test: no box on an image with at most {max_det} boxes; the ground truth "
                              "cannot be scored against itself", facts=facts, severity="WARN")
    rows = _score_each(kept, dets, backends, score, max_det)
    bad = [r for r in rows if r["error"] is not None or abs(r[HEADLINE] - 1.0) > tol]
    if not bad:
        return Finding(True, f"{dataset} test: the ground truth fed back as predictions scores {HEADLINE} 1.0 on "
                             f"{', '.join(backends)} ({scope})", facts=facts)
    outcomes: dict[str, list[str]] = {}  # one line per distinct outcome (an invalid split fails every backend alike)
    for r in bad:
        outcomes.setdefault(r["error"] or f"{HEADLINE} = {r[HEADLINE]!r}", []).append(r["backend"])
    what = "; ".join(f"{', '.join(names)}: {outcome}" for outcome, names in outcomes.items())
    return Finding(False, (
        f"{dataset} test: the ground truth fed back as predictions (every box a detection with score 1.0, same "
        f"image and category ids) does not score {HEADLINE} 1.0 on {len(bad)} of {len(rows)} backend(s): {what} "
        f"({scope}); the scorer sees other image or category ids than the split holds"), bad, facts)


# ---------------------------------------------------------------------------------------------
# Predicted classes exist


def _id_label(v: Any) -> Any:
    return v if type(v) is int else repr(v)


def predicted_classes_exist(partition: str, dets: Any, categories: Sequence[dict[str, Any]]) -> Finding:
    """Fail with the unknown ids and their detection counts when a detection's category_id (a JSON integer) is
    not one of the test split's `categories`."""
    known = {c["id"]: c.get("name") for c in categories}
    facts: dict[str, Any] = {"test_categories": {str(k): v for k, v in sorted(known.items())}}
    if not isinstance(dets, list) or not all(isinstance(d, dict) for d in dets):
        return Finding(False, f"{partition}: the predictions file is not a list of detection objects", facts=facts)
    counts = Counter(_id_label(d.get("category_id")) for d in dets)
    unknown = {cid: n for cid, n in counts.items() if not (type(cid) is int and cid in known)}
    facts["detections"] = len(dets)
    if not unknown:
        return Finding(True, f"{partition}: all {len(dets)} detections name one of the test split's "
                             f"{len(known)} categories", facts=facts)
    rows = [{"category_id": cid, "detections": n} for cid, n in sorted(unknown.items(), key=lambda kv: -kv[1])]
    listed = ", ".join(f"{r['category_id']!r} ({r['detections']})" for r in rows[:20])
    ids = sorted(known)
    return Finding(False, (
        f"{partition}: {sum(unknown.values())} of {len(dets)} detections name {len(unknown)} category id(s) the test "
        f"split does not have: {listed}; the test split's category ids are {ids[:50]}"), rows, facts)


def weights_loaded(partition: str, stats: dict[str, Any], min_share: float = MIN_LOADED_SHARE) -> Finding:
    """Fail when a run given init weights did not start from them: its backbone not wholly loaded, or under
    `min_share` of the model's tensors holding the file's values (stats.json `init_weights.load`, measured by the
    training child after LibreYOLO loaded the file, which it does non-strictly when the class count differs)."""
    init = stats.get("init_weights")
    if not init:
        return Finding(True, f"{partition}: trained from scratch (no init weights to load); the run's conformance "
                             "says whether its recipe allowed that")
    load = init.get("load")
    facts = {"init_weights": init.get("name"), "init_weights_sha256": init.get("sha256"), **(load or {})}
    if not load:
        return Finding(False, f"{partition}: the run started from {init.get('name')} but recorded no count of the "
                              "tensors that loaded; retrain it to measure", facts=facts)
    problems = []
    if load["backbone_loaded"] < load["backbone_tensors"]:
        problems.append(f"only {load['backbone_loaded']} of the {load['backbone_tensors']} tensors of its "
                        f"{load['backbone']} hold the file's values")
    share = load["loaded_tensors"] / load["model_tensors"] if load["model_tensors"] else 0.0
    if share < min_share:
        problems.append(f"only {load['loaded_tensors']} of its {load['model_tensors']} tensors do "
                        f"({share:.0%} < {min_share:.0%})")
    if problems:
        return Finding(False, f"{partition}: the run did not start from {init.get('name')}: " + "; ".join(problems)
                       + ": LibreYOLO loaded the file non-strictly and trained the rest from random weights (another "
                         "family's or size's file?)", facts=facts)
    return Finding(True, f"{partition}: started from {init.get('name')}: {load['loaded_tensors']} of "
                         f"{load['model_tensors']} tensors, the whole {load['backbone']}", facts=facts)


def training_finished(partition: str, stats: dict[str, Any]) -> Finding:
    """The current run trained every planned epoch (fewer only with early stopping, `patience` > 0), and a
    conformant recipe left a model with valid mAP50-95 above zero: a full protocol run that learned nothing is a
    broken run (labels, classes, a normalisation bug), never a result."""
    planned, done = int(stats["epochs"]), int(stats["epochs_done"])
    patience = int((stats.get("signature_fields") or {}).get("patience") or 0)
    valid = stats.get("valid_mAP50_95")
    conformant = bool(stats["recipe"]["conformant"])
    facts = {"epochs": planned, "epochs_done": done, "patience": patience, "valid_mAP50_95": valid,
             "conformant": conformant}
    if done < planned and not patience:
        return Finding(False, f"{partition}: {done} of {planned} planned epochs finished, no early stopping in the "
                              "recipe (patience 0); rerun the partition: training resumes from last.pt", facts=facts)
    if done > planned:
        return Finding(False, f"{partition}: {done} epochs recorded for {planned} planned", facts=facts)
    value = valid if isinstance(valid, int | float) and math.isfinite(valid) else None
    if conformant and (value is None or value <= 0):
        return Finding(False, f"{partition}: valid mAP50-95 is {valid} after {done} epochs with a conformant "
                              "recipe: the model learned nothing; look at the labels and classes the run saw "
                              "(labels_reached_loss) before publishing anything from it", facts=facts)
    early = f" (stopped early, patience {patience})" if done < planned else ""
    shown = "not recorded" if value is None else f"{value:.4f}"
    return Finding(True, f"{partition}: {done}/{planned} epochs{early}, valid mAP50-95 {shown}", facts=facts)


def score_well_formed(partition: str, score: dict[str, Any]) -> Finding:
    """The headline is a defined AP (a number in [0, 1]: pycocotools' summary says -1 where nothing could be
    matched) and the fast backend's parity with the reference evaluator was recorded and held."""
    headline = (score.get("metrics") or {}).get("mAP50_95")
    parity = score.get("parity") or {}
    facts = {"mAP50_95": headline, "backend": score.get("backend"), "parity_identical": parity.get("identical"),
             "parity_total": parity.get("total"), "engines": parity.get("engines")}
    # a JSON `true` is a Python int (1): a number is a number, never a bool
    if isinstance(headline, bool) or not isinstance(headline, int | float) or not math.isfinite(headline) \
            or not 0 <= headline <= 1:
        return Finding(False, f"{partition}: headline mAP50-95 is {headline!r}, not an AP in [0, 1] (-1 is "
                              "pycocotools' 'undefined'); the score must not reach a table", facts=facts)
    if not parity or "identical" not in parity or "total" not in parity:
        return Finding(False, f"{partition}: no parity with the reference evaluator recorded in the score; rescore "
                              "it (bench score / the rf100vl_rescore_job)", facts=facts)
    if parity.get("differing"):
        return Finding(False, f"{partition}: the fast and reference evaluators disagree on "
                              f"{len(parity['differing'])} of {parity['total']} metrics: {parity['differing']}",
                       facts=facts)
    return Finding(True, f"{partition}: mAP50-95 {headline:.4f}; {parity['identical']}/{parity['total']} metrics "
                         "identical to the reference evaluator", facts=facts)
