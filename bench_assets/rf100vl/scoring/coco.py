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

import contextlib
import gc
import io
import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bench_assets.rf100vl.datasets.verify import NUMBER_TYPES, is_number

Backend = Literal["fast", "reference", "hotcoco", "faster-coco-eval"]
BACKENDS: tuple[str, ...] = ("fast", "reference", "hotcoco", "faster-coco-eval")
# backend -> the library that evaluates (`engine_version` names it with its version)
ENGINES: dict[str, str] = {"fast": "hotcoco", "reference": "pycocotools", "hotcoco": "hotcoco",
                           "faster-coco-eval": "faster-coco-eval", "_fast_coco": "faster-coco-eval"}
PARITY_ARRAYS: tuple[str, ...] = ("precision", "recall")  # what the metrics are read from; compared cell for cell

METRICS: tuple[str, ...] = (
    "mAP50_95",
    "mAP50",
    "mAP75",
    "mAP_small",
    "mAP_medium",
    "mAP_large",
    "AR1",
    "AR10",
    "AR100",
    "AR_small",
    "AR_medium",
    "AR_large",
    "AR_max_det",
)
HEADLINE = "mAP50_95"
DEFAULT_MAX_DET = 500
_EXAMPLES = 5
_REQUIRED_DET_KEYS = frozenset({"image_id", "category_id", "bbox", "score"})
_NUMBER_TYPE_SET = frozenset(NUMBER_TYPES)
class _InputProblems(ValueError):
    """An input that cannot be scored; `problems` lists each finding (what, where, fix)."""

    what = "input"

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        if len(problems) == 1:  # one line, as `bench score` prints it
            super().__init__(f"{source}: invalid {self.what}: {problems[0]}")
            return
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: invalid {self.what} ({len(problems)} problem(s)):\n{lines}")


class PredictionsInvalid(_InputProblems):
    """The detections file breaks the protocol."""

    what = "predictions"


class GroundTruthInvalid(_InputProblems):
    """The ground-truth document cannot be scored against."""

    what = "ground truth"


class ScoreUndefined(ValueError):
    """The headline metric has no defined value (no ground-truth box to score against)."""


class InputUnreadable(ValueError):
    """A JSON input could not be read (bad gzip stream, bad JSON)."""


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class MaxDetCut:
    """Detections over `max_det`, as facts: `images` lists every image carrying more than `max_det`
    detections in total (the protocol's bound, all categories together) as {image_id, detections, cut},
    most cut first; `cut` counts the detections COCOeval never evaluates there (beyond the `max_det`
    highest-scoring of one (image, category), ties in file order; with max_det < 100, AR100 still reads up
    to 100). `images_over` = len(images), `detections_cut` = the sum of `cut`."""

    max_det: int
    images_over: int = 0
    detections_cut: int = 0
    images: list[dict[str, int]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"max_det": self.max_det, "images_over": self.images_over, "detections_cut": self.detections_cut,
                "images": [dict(i) for i in self.images]}

    def warning(self, source: str) -> str | None:
        """The line `warnings` carries when an image is over `max_det`; None when none is."""
        if not self.images_over:
            return None
        over = [f"image {i['image_id']}: {i['detections']}" for i in
                sorted(self.images, key=lambda i: (-i["detections"], i["image_id"]))]
        msg = (f"{source}: {self.images_over} image(s) carry more than max_det={self.max_det} detections, which "
               f"the protocol does not allow (most first: {_fmt_examples(over)}); scored as pycocotools scores "
               f"them: each (image, category) keeps its {self.max_det} highest-scoring detections (ties in file "
               "order), ")
        cut = [f"image {i['image_id']}: {i['cut']}" for i in self.images if i["cut"]]
        if not cut:
            return msg + "and no (image, category) has more, so every detection was evaluated"
        return msg + (f"so {self.detections_cut} detection(s) on {len(cut)} image(s) were not evaluated "
                      f"({_fmt_examples(cut)}); `bench score --strict` refuses such a file")


@dataclass(frozen=True)
class ScoreResult:
    metrics: dict[str, float | None]
    backend: str
    max_det: int
    num_images: int
    num_gt: int
    num_dets: int
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # scored, but worth a look (an empty list, > max_det)
    max_det_cut: MaxDetCut | None = None  # what was over max_det (None only on results built by hand)
    engine: str = ""  # the evaluating library and its version, e.g. "hotcoco 1.3.0"
    # the accumulated COCOeval arrays (precision, recall, scores) the metrics were read from; not serialised
    arrays: dict[str, np.ndarray] | None = field(default=None, repr=False, compare=False)

    @property
    def headline(self) -> float:
        value = self.metrics[HEADLINE]
        assert value is not None  # score() raises ScoreUndefined before building such a result
        return value

    def to_dict(self) -> dict[str, Any]:
        """Everything but `arrays`, as JSON-ready values."""
        cut = self.max_det_cut
        return {"metrics": dict(self.metrics), "backend": self.backend, "max_det": self.max_det,
                "num_images": self.num_images, "num_gt": self.num_gt, "num_dets": self.num_dets,
                "seconds": dict(self.seconds), "warnings": list(self.warnings),
                "max_det_cut": cut.to_dict() if isinstance(cut, MaxDetCut) else cut, "engine": self.engine}


@dataclass(frozen=True)
class ParityAudit:
    identical: int  # metrics with bit-identical values (or both undefined)
    total: int
    max_abs_deviation: float  # over the metrics defined in both results and the compared array cells
    differing: list[str]  # metrics and arrays (`PARITY_ARRAYS`) with a value differing by more than tol
    tol: float
    # per array compared: {"cells", "differing" (cells off by more than tol), "max_abs_deviation"}; empty when
    # a result carries no arrays
    arrays: dict[str, dict[str, Any]] = field(default_factory=dict)
    engines: dict[str, str] = field(default_factory=dict)  # backend -> "library version"

    @property
    def ok(self) -> bool:
        return not self.differing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BothResult:
    headline: ScoreResult  # the fast backend (hotcoco): what gets reported
    reference: ScoreResult
    audit: ParityAudit


# ---------------------------------------------------------------------------------------------
# Loading


def load_json_any(path: str | Path) -> Any:
    """Parse a `.json` or `.json.gz` file (gzip is recognised by its magic bytes, whatever the name)."""
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        import gzip

        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise InputUnreadable(f"{path}: not a readable gzip stream ({e}); rewrite the file") from e
    elif path.name.endswith(".gz"):
        raise InputUnreadable(f"{path}: named .gz but not gzip-compressed; compress it or drop the .gz suffix")
    try:
        return _loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputUnreadable(f"{path}: not valid JSON ({e})") from e
    except RecursionError:
        raise InputUnreadable(f"{path}: JSON nested too deeply to read; a detections file is a flat array of "
                              "objects") from None


@contextlib.contextmanager
def no_gc():
    """The cyclic garbage collector paused (and restored as it was): parsing a detections file allocates
    ~2 containers per detection, each allocation burst triggering collections that walk all of them again;
    a JSON document has no reference cycles, so pausing costs nothing and parses 2-3x faster."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _loads(raw: bytes) -> Any:
    """orjson when installed (a dependency of dagster-dbt; ~2x faster on detection lists), else json. Any
    document orjson refuses goes to json, which accepts NaN/Infinity tokens (validation then names the
    field) or raises the error message we report. The garbage collector is paused meanwhile (`no_gc`)."""
    with no_gc():
        try:
            import orjson
        except ImportError:  # pragma: no cover - orjson ships with the pinned environment
            return json.loads(raw)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return json.loads(raw)


# ---------------------------------------------------------------------------------------------
# Validation


def _fmt_examples(items: Sequence[Any]) -> str:
    shown = ", ".join(str(x) for x in items[:_EXAMPLES])
    more = f" (+{len(items) - _EXAMPLES} more)" if len(items) > _EXAMPLES else ""
    return f"{shown}{more}"


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


# ---------------------------------------------------------------------------------------------
# Backends


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


# ---------------------------------------------------------------------------------------------
# Public API


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
