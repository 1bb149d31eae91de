"""Validation of ground truth and detections, as strictly as COCO writes them: every refusal names the item, the
value and the fix (`validate_gt`, `validate_predictions`, `_check_predictions`, the one check every path goes
through), and the facts about detections over max_det (`MaxDetCut`). Pure; numpy only."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from bench_assets.rf100vl.datasets.verify import NUMBER_TYPES, is_number
from bench_assets.rf100vl.scoring.results import (
    _EXAMPLES,
    GroundTruthInvalid,
    MaxDetCut,
    PredictionsInvalid,
    _fmt_examples,
)

_REQUIRED_DET_KEYS = frozenset({"image_id", "category_id", "bbox", "score"})


_NUMBER_TYPE_SET = frozenset(NUMBER_TYPES)


def _bbox_array(boxes: list[Any]) -> tuple[np.ndarray, list[int]]:
    """(n, 4) float array of the boxes (NaN rows where malformed) and the indices of malformed boxes."""
    n = len(boxes)
    if set(map(type, boxes)) <= {list} and set(map(len, boxes)) <= {4}:  # the usual case, checked at C speed
        flat = list(chain.from_iterable(boxes))
        if set(map(type, flat)) <= _NUMBER_TYPE_SET:
            return np.fromiter(flat, np.float64, 4 * n).reshape(n, 4), []
    arr = np.full((n, 4), np.nan)
    bad = []
    for i, b in enumerate(boxes):
        if type(b) in (list, tuple) and len(b) == 4 and all(type(v) in NUMBER_TYPES for v in b):
            arr[i] = b
        else:
            bad.append(i)
    return arr, bad


def _check_max_det(max_det: Any) -> None:
    if type(max_det) is not int or max_det < 1:
        raise ValueError(f"max_det must be a positive integer, got {max_det!r}")


def _gt_index(gt: dict[str, Any]) -> tuple[set[int], set[int]]:
    images = gt.get("images")
    cats = gt.get("categories")
    image_ids = {i.get("id") for i in images if isinstance(i, dict)} if isinstance(images, list) else set()
    cat_ids = {c.get("id") for c in cats if isinstance(c, dict)} if isinstance(cats, list) else set()
    return image_ids, cat_ids


def _json_text(v: Any, limit: int = 60) -> str:
    """`v` as the file spells it (Python's json writes NaN/Infinity tokens), cut to `limit` characters."""
    try:
        text = json.dumps(v, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(v)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


_KINDS = {str: "a string", float: "a float", bool: "a boolean", list: "an array", dict: "an object"}


def _kind_name(v: Any) -> str:
    return "null" if v is None else _KINDS.get(type(v), type(v).__name__)


def _kind(v: Any) -> str:
    """What a JSON value is, in the file's terms: `"12" is a string`, `3.0 is a float`, `NaN is not finite`."""
    if v is None:
        return "null (no value)"
    if type(v) is float and not math.isfinite(v):
        return f"{_json_text(v)} is not finite"
    return f"{_json_text(v)} is {_kind_name(v)}"


def _type_problem(found: list[tuple[str, str]], count: int, n: int, fix: str) -> str:
    """`[17].image_id: "12" is a string; fix: ...`; with the count and further examples when several.
    `found` holds (where, what is wrong there) for the first offenders in file order, `count` all of them."""
    where, what = found[0]
    msg = f"{where}: {what}"
    if count > 1:
        also = "; ".join(f"{w}: {x}" for w, x in found[1:_EXAMPLES])
        more = count - min(len(found), _EXAMPLES)
        msg += f" ({count} of {n} detections in all; also {also}{f'; +{more} more' if more else ''})"
    return f"{msg}; fix: {fix}"


def _non_int(values: list[Any]) -> list[int]:
    """Indices of values that are not JSON integers (strings such as "3", floats such as 3.0, booleans)."""
    if set(map(type, values)) <= {int}:
        return []
    return [i for i, v in enumerate(values) if type(v) is not int]


def _unknown_ids(values: list[Any], known: set[int], skip: list[int]) -> list[int]:
    """Indices of integer values absent from `known` (`skip`: indices already refused as non-integers)."""
    if not skip and set(values) <= known:
        return []
    skipped = set(skip)
    return [i for i, v in enumerate(values) if i not in skipped and v not in known]


def _box_fault(b: Any) -> tuple[str, str]:
    """(where inside the bbox, what is wrong) for a bbox that is not 4 finite JSON numbers."""
    if type(b) is not list:
        return "", f"{_kind(b)}, not an array of 4 numbers"
    if len(b) != 4:
        return "", f"{_json_text(b)} has {len(b)} elements, not 4"
    for k, v in enumerate(b):
        if type(v) not in NUMBER_TYPES:
            return f"[{k}]", f"{_kind(v)}, not a JSON number"
        if not math.isfinite(v):
            return f"[{k}]", _kind(v)
    return "", f"{_json_text(b)} is not 4 finite numbers"  # not reached for a box the caller refused


@dataclass(frozen=True)
class _DetArrays:
    """Validated detections as arrays, in file order, what scoring them must warn about, and what was over
    max_det."""

    image_id: np.ndarray  # int64 [n]
    category_id: np.ndarray  # int64 [n]
    score: np.ndarray  # float64 [n]
    bbox: np.ndarray  # float64 [n, 4] xywh
    warnings: tuple[str, ...] = ()
    max_det_cut: MaxDetCut | None = None

    @classmethod
    def empty(cls, max_det: int, warnings: tuple[str, ...] = ()) -> _DetArrays:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 4)), warnings,
                   MaxDetCut(max_det))


def empty_predictions_warning(source: str, num_images: int) -> str:
    return (f"{source}: the predictions list is empty, so every metric is 0.0 on the {num_images} image(s); "
            "if the model should have found objects, check the prediction step's log and its output file")


def validate_predictions(gt: dict[str, Any], dets: list[dict[str, Any]], max_det: int, *,
                         source: str = "predictions", strict: bool = False) -> list[dict[str, Any]]:
    """Check a COCO detections list against the ground truth; return it unchanged.

    Raises `PredictionsInvalid` listing every problem (where, the offending value, count, first
    examples by list index, fix): not a list of objects, missing keys, image_id / category_id that
    are not JSON integers (strings such as "3", floats such as 3.0 and booleans are refused, never
    converted) or are absent from the ground truth, scores that are not JSON numbers or not finite
    in [0, 1], boxes that are not 4 finite JSON numbers (strings, booleans, null, NaN, Infinity) or
    have a negative width/height; with `strict`, also more than `max_det` detections on one image
    (the protocol's bound; without it such a file is valid and scored as pycocotools scores it, and
    `ScoreResult.max_det_cut` says what was over). Zero-size boxes are valid (they never match). An
    empty list is valid (every AP is 0); scoring it carries a warning.
    """
    image_ids, cat_ids = _gt_index(gt)
    _check_predictions(image_ids, cat_ids, dets, max_det, source, strict)
    return dets


def _check_predictions(image_ids: set[int], cat_ids: set[int], dets: Any, max_det: int, source: str,
                       strict: bool = False) -> _DetArrays:
    """The one validation of a detections list, which every scoring path goes through: the arrays to
    score (with `warnings`, e.g. for an empty list or images over max_det, and `max_det_cut`), or
    `PredictionsInvalid`. Each field is checked in one pass of `type` over its values (vectorised with
    numpy where numbers are expected); the per-item messages are built only when something is wrong."""
    _check_max_det(max_det)
    if not isinstance(dets, list):
        raise PredictionsInvalid(source, [
            f"top level is {_kind_name(dets)}, not an array of detections; fix: write a COCO results "
            "list [{image_id, category_id, bbox: [x, y, w, h], score}, ...]"])
    if not dets:
        return _DetArrays.empty(max_det, (empty_predictions_warning(source, len(image_ids)),))
    n = len(dets)
    img, cat, scores, boxes = _detection_columns(dets, source)
    not_int_img = _non_int(img)
    problems = _image_id_problems(img, not_int_img, image_ids, n)
    problems += _category_id_problems(cat, cat_ids, n)
    score_arr, score_problems = _score_column(scores, n)
    problems += score_problems
    bbox_arr, box_problems = _bbox_column(boxes, n)
    problems += box_problems
    if strict and not not_int_img:  # counting per image needs the ids to be integers
        problems += _max_det_problems(img, max_det)
    if problems:
        raise PredictionsInvalid(source, problems)
    img_arr, cat_arr = np.asarray(img, dtype=np.int64), np.asarray(cat, dtype=np.int64)
    cut = _max_det_cut(img_arr, cat_arr, max_det)
    warning = cut.warning(source)
    return _DetArrays(img_arr, cat_arr, score_arr, bbox_arr, (warning,) if warning else (), cut)


def _max_det_cut(image_id: np.ndarray, category_id: np.ndarray, max_det: int) -> MaxDetCut:
    """The images over `max_det` detections in total and, per image, how many detections fall beyond the
    `max_det` of their (image, category) that COCOeval evaluates."""
    if image_id.size <= max_det:
        return MaxDetCut(max_det)
    img_u, img_inv, img_n = np.unique(image_id, return_inverse=True, return_counts=True)
    if img_n.max() <= max_det:
        return MaxDetCut(max_det)
    cat_u, cat_inv = np.unique(category_id, return_inverse=True)
    pair_u, pair_n = np.unique(img_inv.astype(np.int64) * cat_u.size + cat_inv, return_counts=True)
    cut = np.bincount(pair_u // cat_u.size, weights=np.maximum(pair_n - max_det, 0), minlength=img_u.size)
    over = np.flatnonzero(img_n > max_det)
    images = sorted(({"image_id": int(img_u[k]), "detections": int(img_n[k]), "cut": int(cut[k])} for k in over),
                    key=lambda i: (-i["cut"], -i["detections"], i["image_id"]))
    return MaxDetCut(max_det, images_over=len(images), detections_cut=sum(i["cut"] for i in images), images=images)


def _detection_columns(dets: list[Any], source: str) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """The image_id, category_id, score and bbox values in file order, or `PredictionsInvalid` when an entry
    is not a JSON object or lacks one of those keys."""
    n = len(dets)
    if not set(map(type, dets)) <= {dict}:
        not_obj = [i for i, d in enumerate(dets) if type(d) is not dict]
        raise PredictionsInvalid(source, [
            f"{len(not_obj)} of {n} entries are not JSON objects (indices {_fmt_examples(not_obj)}); "
            "fix: each detection is {image_id, category_id, bbox, score}"])
    try:
        return (list(map(itemgetter("image_id"), dets)), list(map(itemgetter("category_id"), dets)),
                list(map(itemgetter("score"), dets)), list(map(itemgetter("bbox"), dets)))
    except KeyError:
        incomplete = [i for i, d in enumerate(dets) if not _REQUIRED_DET_KEYS <= d.keys()]
        examples = [f"[{i}] missing {sorted(_REQUIRED_DET_KEYS - dets[i].keys())}" for i in incomplete]
        raise PredictionsInvalid(source, [
            f"{len(incomplete)} of {n} detections lack required keys: {_fmt_examples(examples)}; "
            "fix: every detection needs image_id, category_id, bbox and score"]) from None


def _image_id_problems(img: list[Any], not_int_img: list[int], image_ids: set[int], n: int) -> list[str]:
    """image_id values that are not JSON integers (`not_int_img`) or name no image of the ground truth."""
    problems = []
    if not_int_img:
        problems.append(_type_problem(
            [(f"[{i}].image_id", _kind(img[i])) for i in not_int_img[:_EXAMPLES]], len(not_int_img), n,
            "write image ids as JSON integers matching the ground truth's images[].id"))
    bad_img = _unknown_ids(img, image_ids, not_int_img)
    if bad_img:
        unknown = sorted({img[i] for i in bad_img})
        problems.append(
            f"image_id: {len(bad_img)} detections name {len(unknown)} image id(s) absent from the ground truth's "
            f"images: {_fmt_examples(unknown)} (first at indices {_fmt_examples(bad_img)}); fix: predict on the "
            "ground truth's split and copy its images[].id")
    return problems


def _category_id_problems(cat: list[Any], cat_ids: set[int], n: int) -> list[str]:
    """category_id values that are not JSON integers or name no category of the ground truth."""
    problems = []
    not_int_cat = _non_int(cat)
    if not_int_cat:
        problems.append(_type_problem(
            [(f"[{i}].category_id", _kind(cat[i])) for i in not_int_cat[:_EXAMPLES]], len(not_int_cat), n,
            f"write category ids as JSON integers from the ground truth's categories[].id {sorted(cat_ids)}"))
    bad_cat = _unknown_ids(cat, cat_ids, not_int_cat)
    if bad_cat:
        unknown = sorted({cat[i] for i in bad_cat})
        problems.append(
            f"category_id: {len(bad_cat)} detections name {len(unknown)} category id(s) absent from the ground "
            f"truth's categories {sorted(cat_ids)}: {_fmt_examples(unknown)} (first at indices "
            f"{_fmt_examples(bad_cat)}); fix: map model classes to the canonical (contiguous from 0) category ids")
    return problems


def _score_column(scores: list[Any], n: int) -> tuple[np.ndarray, list[str]]:
    """The scores as a float64 array (empty unless every score is a JSON number) and what is wrong with them:
    values that are not JSON numbers, or not finite in [0, 1]."""
    score_fix = "write the post-sigmoid confidence as a JSON number in [0, 1]"
    problems = []
    score_arr = np.zeros(0)
    if set(map(type, scores)) <= set(NUMBER_TYPES):
        score_arr = np.asarray(scores, dtype=np.float64)
        bad_score = np.flatnonzero(~(np.isfinite(score_arr) & (score_arr >= 0.0) & (score_arr <= 1.0))).tolist()
    else:
        not_num = [i for i, v in enumerate(scores) if not is_number(v)]
        problems.append(_type_problem(
            [(f"[{i}].score", f"{_kind(scores[i])}, not a JSON number") for i in not_num[:_EXAMPLES]],
            len(not_num), n, score_fix))
        bad_score = [i for i, v in enumerate(scores) if is_number(v) and not (math.isfinite(v) and 0.0 <= v <= 1.0)]
    if bad_score:
        examples = [f"[{i}] {_json_text(scores[i])}" for i in bad_score]
        problems.append(f"score: {len(bad_score)} detections have a score that is not a finite number in [0, 1]: "
                        f"{_fmt_examples(examples)}; fix: {score_fix}")
    return score_arr, problems


def _bbox_column(boxes: list[Any], n: int) -> tuple[np.ndarray, list[str]]:
    """The boxes as an (n, 4) float64 array and what is wrong with them: not 4 finite JSON numbers, or a
    negative width or height."""
    problems = []
    arr, _ = _bbox_array(boxes)  # NaN rows where a box is not a list of 4 JSON numbers (str, bool, null)
    finite = np.isfinite(arr).all(axis=1)
    bad_box = np.flatnonzero(~finite).tolist()
    if bad_box:
        faults = [(i, *_box_fault(boxes[i])) for i in bad_box[:_EXAMPLES]]
        problems.append(_type_problem(
            [(f"[{i}].bbox{inside}", what) for i, inside, what in faults], len(bad_box), n,
            "write bbox as [x, y, width, height], 4 finite JSON numbers in pixels"))
    with np.errstate(invalid="ignore"):
        negative = np.flatnonzero(((arr[:, 2] < 0) | (arr[:, 3] < 0)) & finite).tolist()  # -Infinity: above
    if negative:
        examples = [f"[{i}] {_json_text(boxes[i])}" for i in negative]
        problems.append(
            f"bbox: {len(negative)} detections have a negative width or height: {_fmt_examples(examples)}; "
            "fix: bbox is [x, y, width, height] (COCO xywh), not [x1, y1, x2, y2]")
    return arr, problems


def _max_det_problems(img: list[int], max_det: int) -> list[str]:
    """The images carrying more than `max_det` detections (all classes together), most first."""
    over = sorted(((k, i) for i, k in Counter(img).items() if k > max_det), key=lambda t: (-t[0], t[1]))
    if not over:
        return []
    examples = [f"image {i}: {k}" for k, i in over]
    return [f"the file violates the protocol: {len(over)} image(s) carry more than max_det={max_det} "
            f"detections (most first: {_fmt_examples(examples)}); fix: keep at most the {max_det} "
            "highest-scoring detections per image (all classes together) when writing predictions"]


def validate_gt(gt: dict[str, Any], *, source: str = "ground truth") -> dict[str, Any]:
    """Check a COCO ground-truth document for what scoring relies on; return it unchanged.

    Raises `GroundTruthInvalid` for: missing images/categories/annotations lists, non-integer or
    duplicate image/category ids, annotation ids that are not integers >= 1 (id 0 is the backends'
    "unmatched" marker) or are duplicated, annotations naming unknown images/categories, malformed
    boxes, missing or non-finite `area` (COCOeval sizes boxes by it), iscrowd other than 0/1.
    """
    if not isinstance(gt, dict):
        raise GroundTruthInvalid(source, [f"top level is a JSON {type(gt).__name__}, not a COCO object"])
    problems = [f"{key}: missing or not a list; fix: use the canonical _annotations.coco.json"
                for key in ("images", "categories", "annotations") if not isinstance(gt.get(key), list)]
    if problems:
        raise GroundTruthInvalid(source, problems)
    images, cats, anns = gt["images"], gt["categories"], gt["annotations"]
    problems = _gt_id_problems("images", images) + _gt_id_problems("categories", cats)
    if not images:
        problems.append("images: empty; nothing to score")
    if problems:
        raise GroundTruthInvalid(source, problems)
    if not all(type(a) is dict for a in anns):
        raise GroundTruthInvalid(source, ["annotations: every entry must be a JSON object"])
    image_ids, cat_ids = _gt_index(gt)
    if _annotations_clean(anns, image_ids, cat_ids):  # the usual case, checked at C speed
        return gt
    problems = [*_annotation_id_problems(anns), *_annotation_reference_problems(anns, image_ids, cat_ids),
                *_annotation_box_problems(anns), *_annotation_crowd_problems(anns)]
    if problems:
        raise GroundTruthInvalid(source, problems)
    return gt


def _column(items: list[dict[str, Any]], key: str, default: Any = None) -> list[Any]:
    """`[d.get(key, default) for d in items]`, at C speed."""
    return list(map(dict.get, items, repeat(key), repeat(default)))


def _annotations_clean(anns: list[dict[str, Any]], image_ids: set[int], cat_ids: set[int]) -> bool:
    """True when the four `_annotation_*_problems` checks would find nothing (a conservative shortcut: False
    sends the document through them, which name what is wrong): ids integers >= 1 and unique, image and
    category ids known integers, boxes 4 finite numbers with w, h >= 0, areas finite numbers >= 0,
    iscrowd the integer 0 or 1."""
    if not anns:
        return True
    ids, crowd = _column(anns, "id"), _column(anns, "iscrowd", 0)
    img, cat, areas = _column(anns, "image_id"), _column(anns, "category_id"), _column(anns, "area")
    if not (set(map(type, ids)) <= {int} and min(ids) >= 1 and len(set(ids)) == len(ids)):
        return False
    if not (set(map(type, img)) <= {int} and set(img) <= image_ids and set(map(type, cat)) <= {int}
            and set(cat) <= cat_ids and set(map(type, crowd)) <= {int} and set(crowd) <= {0, 1}):
        return False
    if not set(map(type, areas)) <= _NUMBER_TYPE_SET:
        return False
    arr, malformed = _bbox_array(_column(anns, "bbox"))
    area = np.fromiter(areas, np.float64, len(areas))
    return not malformed and bool(np.isfinite(arr).all() and (arr[:, 2:] >= 0).all()
                                  and np.isfinite(area).all() and (area >= 0).all())


def _gt_id_problems(key: str, items: list[Any]) -> list[str]:
    """The ids of `images` or `categories` that are not integers, or are duplicated."""
    problems = []
    ids = [x.get("id") if isinstance(x, dict) else None for x in items]
    bad = [repr(v) for v in ids if type(v) is not int]
    if bad:
        problems.append(f"{key}[].id: {len(bad)} ids are not integers: {_fmt_examples(bad)}")
    dup = sorted(v for v, n in Counter(v for v in ids if type(v) is int).items() if n > 1)
    if dup:
        problems.append(f"{key}[].id: duplicated ids {_fmt_examples(dup)}")
    return problems


def _annotation_id_problems(anns: list[dict[str, Any]]) -> list[str]:
    """Annotation ids that are 0 (the backends' "unmatched" marker), not non-negative integers, or duplicated."""
    problems = []
    ann_ids = [a.get("id") for a in anns]
    zero = [i for i, v in enumerate(ann_ids) if v == 0 and type(v) is int]
    if zero:
        problems.append(
            f"annotations[].id: {len(zero)} annotation(s) have id 0 (indices {_fmt_examples(zero)}); both COCO "
            "backends use the id as the match marker where 0 means 'unmatched', so such a box could never be "
            "found; fix: renumber annotation ids from 1 (bench's dataset verification does this)")
    bad_ids = [repr(v) for v in ann_ids if type(v) is not int or v < 0]
    if bad_ids:
        problems.append(f"annotations[].id: {len(bad_ids)} ids are not non-negative integers: {_fmt_examples(bad_ids)}")
    dup = sorted(v for v, n in Counter(v for v in ann_ids if type(v) is int).items() if n > 1)
    if dup:
        problems.append(f"annotations[].id: {len(dup)} duplicated ids: {_fmt_examples(dup)}; fix: renumber from 1")
    return problems


def _annotation_reference_problems(anns: list[dict[str, Any]], image_ids: set[int], cat_ids: set[int]) -> list[str]:
    """Annotations whose image_id or category_id names no image or category of the document."""
    problems = []
    bad_img = [a.get("id") for a in anns if type(a.get("image_id")) is not int or a.get("image_id") not in image_ids]
    if bad_img:
        problems.append(f"annotations[].image_id: {len(bad_img)} annotations name unknown images "
                        f"(annotation ids {_fmt_examples(bad_img)})")
    bad_cat = [a.get("id") for a in anns
               if type(a.get("category_id")) is not int or a.get("category_id") not in cat_ids]
    if bad_cat:
        problems.append(f"annotations[].category_id: {len(bad_cat)} annotations name unknown categories "
                        f"(annotation ids {_fmt_examples(bad_cat)})")
    return problems


def _annotation_box_problems(anns: list[dict[str, Any]]) -> list[str]:
    """Annotations whose bbox is not [x, y, w, h] of finite numbers with w, h >= 0, or whose area is not a
    finite number >= 0 (COCOeval sizes boxes by area)."""
    problems = []
    arr, malformed = _bbox_array([a.get("bbox") for a in anns])
    with np.errstate(invalid="ignore"):
        bad_box = ~np.isfinite(arr).all(axis=1) | (arr[:, 2] < 0) | (arr[:, 3] < 0)
    bad_box_ids = sorted({anns[i].get("id") for i in malformed} | {anns[i].get("id") for i in np.flatnonzero(bad_box)},
                         key=repr)
    if bad_box_ids:
        problems.append(f"annotations[].bbox: {len(bad_box_ids)} boxes are not [x, y, w, h] with finite numbers and "
                        f"w, h >= 0 (annotation ids {_fmt_examples(bad_box_ids)})")
    bad_area = [a.get("id") for a in anns
                if not (is_number(a.get("area")) and math.isfinite(a["area"]) and a["area"] >= 0)]
    if bad_area:
        problems.append(f"annotations[].area: {len(bad_area)} annotations lack a finite area >= 0 (annotation ids "
                        f"{_fmt_examples(bad_area)}); COCOeval sizes boxes by area; fix: area = bbox w * h")
    return problems


def _annotation_crowd_problems(anns: list[dict[str, Any]]) -> list[str]:
    """Annotations whose iscrowd is not the integer 0 or 1."""
    bad_crowd = [a.get("id") for a in anns if a.get("iscrowd", 0) not in (0, 1) or type(a.get("iscrowd", 0)) is not int]
    if not bad_crowd:
        return []
    return [f"annotations[].iscrowd: {len(bad_crowd)} annotations have iscrowd other than 0/1 "
            f"(annotation ids {_fmt_examples(bad_crowd)})"]
