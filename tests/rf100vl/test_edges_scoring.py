"""Edge cases of bench_assets/rf100vl/scoring/coco.py that kill mutants the other tests let survive (issue 15,
docs/testing.md "Mutation testing")."""

import copy
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bench_assets.rf100vl.scoring import coco as scoring
from bench_assets.rf100vl.scoring.backends import PreparedGT, _run_fast_coco, _run_reference, read_metrics
from bench_assets.rf100vl.scoring.loading import load_json_any
from bench_assets.rf100vl.scoring.results import (
    BACKENDS,
    PARITY_ARRAYS,
    GroundTruthInvalid,
    InputUnreadable,
    MaxDetCut,
    PredictionsInvalid,
    ScoreResult,
    _fmt_examples,
)
from bench_assets.rf100vl.scoring.validation import (
    _annotation_box_problems,
    _annotation_crowd_problems,
    _annotation_id_problems,
    _annotation_reference_problems,
    _annotations_clean,
    _bbox_array,
    _box_fault,
    _check_max_det,
    _check_predictions,
    _DetArrays,
    _gt_index,
    _json_text,
    _kind,
    _kind_name,
    _max_det_problems,
    _non_int,
    _type_problem,
    _unknown_ids,
    empty_predictions_warning,
    validate_gt,
    validate_predictions,
)

PARAMS = SimpleNamespace(maxDets=[1, 10, 100, 500], iouThrs=np.linspace(0.5, 0.95, 10),
                         areaRngLbl=["all", "small", "medium", "large"])
GOOD_P, GOOD_R = (10, 101, 2, 4, 4), (10, 2, 4, 4)  # [T, R, K, A, M] and [T, K, A, M]


@pytest.mark.parametrize(("p_shape", "r_shape"), [
    ((10, 101, 2, 4), GOOD_R),  # precision without the maxDets axis
    (GOOD_P, (10, 2, 4)),  # recall without it
    ((10, 101, 2, 4, 3), GOOD_R),  # precision read at three maxDets where the params name four
])
def test_read_metrics_refuses_an_evaluation_of_the_wrong_shape(p_shape: tuple, r_shape: tuple) -> None:
    acc = {"precision": np.full(p_shape, 0.5), "recall": np.full(r_shape, 0.5)}
    with pytest.raises(RuntimeError) as err:
        read_metrics(acc, PARAMS, 500)
    assert str(err.value) == (f"unexpected accumulated shapes: precision {p_shape}, recall {r_shape}, "
                              "maxDets [1, 10, 100, 500]")


def test_read_metrics_reads_a_well_formed_evaluation() -> None:
    precision = np.full(GOOD_P, 0.5)
    precision[..., 3] = 0.75  # at maxDets 500
    metrics = read_metrics({"precision": precision, "recall": np.full(GOOD_R, 0.25)}, PARAMS, 500)
    assert metrics["mAP50_95"] == metrics["mAP50"] == metrics["mAP_large"] == 0.75
    assert metrics["AR1"] == metrics["AR_max_det"] == 0.25


# --- small pure helpers of validation and results, word for word ------------------------------------------------


def test_input_problems_read_as_one_line_or_a_list() -> None:
    one = PredictionsInvalid("p.json", ["[3].score: null (no value); fix: x"])
    assert str(one) == "p.json: invalid predictions: [3].score: null (no value); fix: x"
    assert (one.source, one.problems) == ("p.json", ["[3].score: null (no value); fix: x"])
    two = GroundTruthInvalid("gt.json", ["a", "b"])
    assert str(two) == "gt.json: invalid ground truth (2 problem(s)):\n  - a\n  - b"


def test_max_det_cut_warning_and_dict() -> None:
    assert MaxDetCut(500).warning("p.json") is None
    images = [{"image_id": i, "detections": 501 + (i % 3), "cut": 0} for i in range(7)]
    uncut = MaxDetCut(500, images_over=7, detections_cut=0, images=images)
    head = ("p.json: 7 image(s) carry more than max_det=500 detections, which the protocol does not allow (most "
            "first: image 2: 503, image 5: 503, image 1: 502, image 4: 502, image 0: 501 (+2 more)); scored as "
            "pycocotools scores them: each (image, category) keeps its 500 highest-scoring detections (ties in file "
            "order), ")
    assert uncut.warning("p.json") == head + "and no (image, category) has more, so every detection was evaluated"
    cut = MaxDetCut(500, images_over=7, detections_cut=9,
                            images=[{**i, "cut": 1 + i["image_id"] % 2 if i["image_id"] < 6 else 0} for i in images])
    assert cut.warning("p.json") == head + (
        "so 9 detection(s) on 6 image(s) were not evaluated (image 0: 1, image 1: 2, image 2: 1, image 3: 2, "
        "image 4: 1 (+1 more)); `bench score --strict` refuses such a file")
    d = cut.to_dict()
    assert d == {"max_det": 500, "images_over": 7, "detections_cut": 9, "images": cut.images}
    assert d["images"][0] is not cut.images[0]  # copies: the result stays frozen


def test_score_result_to_dict_leaves_the_arrays_out() -> None:
    import numpy as np

    cut = MaxDetCut(100)
    r = ScoreResult({"mAP50_95": 0.5}, "fast", 100, 3, 4, 5, {"eval": 0.1}, ["w"], cut, "hotcoco 1.0",
                            arrays={"precision": np.zeros(2)})
    assert r.to_dict() == {"metrics": {"mAP50_95": 0.5}, "backend": "fast", "max_det": 100, "num_images": 3,
                           "num_gt": 4, "num_dets": 5, "seconds": {"eval": 0.1}, "warnings": ["w"],
                           "max_det_cut": {"max_det": 100, "images_over": 0, "detections_cut": 0, "images": []},
                           "engine": "hotcoco 1.0"}
    assert r.headline == 0.5
    assert ScoreResult({}, "x", 1, 0, 0, 0).to_dict()["max_det_cut"] is None


def test_examples_kinds_and_type_problems_word_for_word() -> None:
    assert _fmt_examples([1, 2, 3, 4, 5]) == "1, 2, 3, 4, 5"
    assert _fmt_examples(list(range(8))) == "0, 1, 2, 3, 4 (+3 more)"
    assert _json_text("x" * 58) == '"' + "x" * 58 + '"'  # 60 characters: kept whole
    assert _json_text("x" * 59) == '"' + "x" * 56 + "..."  # 61: cut to 60 with "..."
    assert _json_text(float("nan")) == "NaN" and _json_text(float("-inf")) == "-Infinity"
    assert _json_text({1, 2}) == "{1, 2}"  # not JSON: its repr
    assert [_kind_name(v) for v in (None, "a", 1.5, True, [], {}, 3)] == [
        "null", "a string", "a float", "a boolean", "an array", "an object", "int"]
    assert _kind(None) == "null (no value)" and _kind("12") == '"12" is a string'
    assert _kind(float("inf")) == "Infinity is not finite" and _kind(3.0) == "3.0 is a float"
    found = [(f"[{i}].image_id", f'"{i}" is a string') for i in range(5)]
    assert _type_problem(found[:1], 1, 9, "F") == '[0].image_id: "0" is a string; fix: F'
    assert _type_problem(found[:2], 2, 9, "F") == (
        '[0].image_id: "0" is a string (2 of 9 detections in all; also [1].image_id: "1" is a string); fix: F')
    assert _type_problem(found, 8, 9, "F") == (
        '[0].image_id: "0" is a string (8 of 9 detections in all; also [1].image_id: "1" is a string; [2].image_id: '
        '"2" is a string; [3].image_id: "3" is a string; [4].image_id: "4" is a string; +3 more); fix: F')


def test_id_and_box_helpers() -> None:
    import numpy as np

    assert _non_int([1, 2, 3]) == [] and _non_int([1, "2", 3.0, True, None]) == [1, 2, 3, 4]
    assert _unknown_ids([1, 2], {1, 2}, []) == []
    assert _unknown_ids([1, 7, "x", 8], {1, 2}, [2]) == [1, 3]
    assert _unknown_ids([1, "x"], {1}, [1]) == []  # the refused value is not unknown twice
    assert _box_fault("a") == ("", '"a" is a string, not an array of 4 numbers')
    assert _box_fault([1, 2, 3]) == ("", "[1, 2, 3] has 3 elements, not 4")
    assert _box_fault([1, "2", 3, 4]) == ("[1]", '"2" is a string, not a JSON number')
    assert _box_fault([1, 2, float("nan"), 4]) == ("[2]", "NaN is not finite")
    assert _box_fault([1, 2, 3, 4]) == ("", "[1, 2, 3, 4] is not 4 finite numbers")
    arr, bad = _bbox_array([[1, 2, 3, 4], [5, 6.5, 7, 8]])
    assert arr.tolist() == [[1, 2, 3, 4], [5, 6.5, 7, 8]] and bad == [] and arr.dtype == np.float64
    arr, bad = _bbox_array([(1, 2, 3, 4), [1, 2], [1, 2, 3, True], [9, 9, 9, 9]])
    assert bad == [1, 2] and arr[0].tolist() == [1, 2, 3, 4] and arr[3].tolist() == [9, 9, 9, 9]
    assert np.isnan(arr[1]).all() and np.isnan(arr[2]).all()
    for wrong in (0, -1, 1.0, True, "5", None):
        with pytest.raises(ValueError) as err:
            _check_max_det(wrong)
        assert str(err.value) == f"max_det must be a positive integer, got {wrong!r}"
    _check_max_det(1)
    assert _gt_index({"images": [{"id": 1}, 3, {"id": 2}], "categories": [{"id": 5}, "x"]}) == ({1, 2}, {5})
    assert _gt_index({"images": {}, "categories": None}) == (set(), set())


def test_reading_a_detections_file_names_the_way_it_failed(tmp_path) -> None:  # noqa: ANN001
    import gzip

    plain = tmp_path / "p.json"
    plain.write_text('[{"a": 1}]')
    packed = tmp_path / "odd-name.json"
    packed.write_bytes(gzip.compress(b'[{"a": 2}]'))
    assert load_json_any(plain) == [{"a": 1}] and load_json_any(packed) == [{"a": 2}]
    cases = {
        "broken.json.gz": (b"\x1f\x8b" + b"garbage", "not a readable gzip stream ("),
        "plain.json.gz": (b"[]", "named .gz but not gzip-compressed; compress it or drop the .gz suffix"),
        "bad.json": (b"[1,", "not valid JSON ("),
        "latin.json": (b'["\xe9"]', "not valid JSON ("),
        "deep.json": (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply to read; a detections file is a "
                                                        "flat array of objects"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputUnreadable) as err:
            load_json_any(path)
        assert str(err.value).startswith(f"{path}: {message}"), str(err.value)
    assert empty_predictions_warning("p.json", 7) == (
        "p.json: the predictions list is empty, so every metric is 0.0 on the 7 image(s); if the model should have "
        "found objects, check the prediction step's log and its output file")


# --- validate_gt: every refusal word for word, and the fast path agreeing with the slow one ----------------------


def _gt(**changes: Any) -> dict[str, Any]:
    """Two images, one category, two clean annotations; `changes` edit the second annotation."""
    gt = {"images": [{"id": 1, "width": 10, "height": 10}, {"id": 2, "width": 10, "height": 10}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2], "area": 4, "iscrowd": 0},
                          {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 3, 3], "area": 9, "iscrowd": 0}]}
    gt["annotations"][1].update(changes)
    return gt


_BOX = "annotations[].bbox: 1 boxes are not [x, y, w, h] with finite numbers and w, h >= 0 (annotation ids 2)"
_AREA = ("annotations[].area: 1 annotations lack a finite area >= 0 (annotation ids 2); COCOeval sizes boxes by area; "
         "fix: area = bbox w * h")
_CROWD = "annotations[].iscrowd: 1 annotations have iscrowd other than 0/1 (annotation ids 2)"
_NAN, _INF = float("nan"), float("inf")
GT_REFUSALS = {
    "a list": ([1], "top level is a JSON list, not a COCO object"),
    "no images": ({"categories": [], "annotations": []},
                  "images: missing or not a list; fix: use the canonical _annotations.coco.json"),
    "image id a string": ({**_gt(), "images": [{"id": "1"}, {"id": 2}]}, "images[].id: 1 ids are not integers: '1'"),
    "image id twice": ({**_gt(), "images": [{"id": 1}, {"id": 1}]}, "images[].id: duplicated ids 1"),
    "category id twice": ({**_gt(), "categories": [{"id": 1}, {"id": 1}]}, "categories[].id: duplicated ids 1"),
    "no image": ({**_gt(), "images": []}, "images: empty; nothing to score"),
    "annotation not an object": ({**_gt(), "annotations": [1]}, "annotations: every entry must be a JSON object"),
    "annotation id 0": (_gt(id=0), "annotations[].id: 1 annotation(s) have id 0 (indices 1); both COCO backends use "
                        "the id as the match marker where 0 means 'unmatched', so such a box could never be found; "
                        "fix: renumber annotation ids from 1 (bench's dataset verification does this)"),
    "annotation id negative": (_gt(id=-3), "annotations[].id: 1 ids are not non-negative integers: -3"),
    "annotation id a string": (_gt(id="2"), "annotations[].id: 1 ids are not non-negative integers: '2'"),
    "annotation id twice": (_gt(id=1), "annotations[].id: 1 duplicated ids: 1; fix: renumber from 1"),
    "unknown image": (_gt(image_id=9), "annotations[].image_id: 1 annotations name unknown images (annotation ids 2)"),
    "image id as a string": (_gt(image_id="2"),
                             "annotations[].image_id: 1 annotations name unknown images (annotation ids 2)"),
    "unknown category": (_gt(category_id=7),
                         "annotations[].category_id: 1 annotations name unknown categories (annotation ids 2)"),
    "category id as a string": (_gt(category_id="1"),
                                "annotations[].category_id: 1 annotations name unknown categories (annotation ids 2)"),
    "box NaN": (_gt(bbox=[0, 0, _NAN, 3]), _BOX), "box x infinite": (_gt(bbox=[_INF, 0, 3, 3]), _BOX),
    "box w negative": (_gt(bbox=[0, 0, -1, 3]), _BOX), "box h negative": (_gt(bbox=[0, 0, 3, -1]), _BOX),
    "box w just negative": (_gt(bbox=[0, 0, -1e-9, 3]), _BOX), "box three numbers": (_gt(bbox=[0, 0, 3]), _BOX),
    "area missing": (_gt(area=None), _AREA), "area NaN": (_gt(area=_NAN), _AREA),
    "area negative": (_gt(area=-1), _AREA),
    "iscrowd 2": (_gt(iscrowd=2), _CROWD), "iscrowd true": (_gt(iscrowd=True), _CROWD),
    "iscrowd 1.0": (_gt(iscrowd=1.0), _CROWD),
}
GT_ACCEPTED = {"zero width": _gt(bbox=[0, 0, 0, 3], area=0), "zero height": _gt(bbox=[0, 0, 3, 0], area=0),
               "half a pixel": _gt(bbox=[0, 0, 0.5, 0.5], area=0.25), "crowd": _gt(iscrowd=1),
               "no iscrowd key": {**_gt(), "annotations": [{k: v for k, v in a.items() if k != "iscrowd"}
                                                           for a in _gt()["annotations"]]},
               "no annotation": {**_gt(), "annotations": []}, "float coordinates": _gt(bbox=[0.25, 0.5, 3.0, 3.5])}


@pytest.mark.parametrize("case", list(GT_REFUSALS))
def test_validate_gt_names_each_defect_word_for_word(case: str) -> None:
    gt, problem = GT_REFUSALS[case]
    with pytest.raises(GroundTruthInvalid) as err:
        validate_gt(gt, source="gt.json")
    assert err.value.problems == [problem]
    assert str(err.value) == f"gt.json: invalid ground truth: {problem}"
    if problem.startswith("annotations[]"):
        image_ids, cat_ids = _gt_index(gt)  # reached the annotation checks: the fast path must say no
        assert _annotations_clean(gt["annotations"], image_ids, cat_ids) is False


@pytest.mark.parametrize("case", list(GT_ACCEPTED))
def test_validate_gt_accepts_boxes_and_crowds_at_their_bounds(case: str) -> None:
    gt = GT_ACCEPTED[case]
    assert validate_gt(gt) is gt
    image_ids, cat_ids = _gt_index(gt)
    assert _annotations_clean(gt["annotations"], image_ids, cat_ids) is True
    anns = gt["annotations"]
    assert (_annotation_id_problems(anns) + _annotation_reference_problems(anns, image_ids, cat_ids)
            + _annotation_box_problems(anns) + _annotation_crowd_problems(anns)) == []


def test_validate_gt_lists_every_defect_of_a_document_with_many() -> None:
    gt = _gt()
    gt["annotations"] += [{"id": i, "image_id": 1, "category_id": 1, "bbox": [0, 0, -1, 1], "area": -1, "iscrowd": 3}
                          for i in range(3, 10)]
    gt["annotations"].append({"id": 3, "image_id": 5, "category_id": 4, "bbox": [0, 0, 1, 1], "area": 1})
    with pytest.raises(GroundTruthInvalid) as err:
        validate_gt(gt, source="gt.json")
    assert err.value.problems == [
        "annotations[].id: 1 duplicated ids: 3; fix: renumber from 1",
        "annotations[].image_id: 1 annotations name unknown images (annotation ids 3)",
        "annotations[].category_id: 1 annotations name unknown categories (annotation ids 3)",
        "annotations[].bbox: 7 boxes are not [x, y, w, h] with finite numbers and w, h >= 0 (annotation ids 3, 4, 5, "
        "6, 7 (+2 more))",
        "annotations[].area: 7 annotations lack a finite area >= 0 (annotation ids 3, 4, 5, 6, 7 (+2 more)); COCOeval "
        "sizes boxes by area; fix: area = bbox w * h",
        "annotations[].iscrowd: 7 annotations have iscrowd other than 0/1 (annotation ids 3, 4, 5, 6, 7 (+2 more))"]
    assert str(err.value).startswith("gt.json: invalid ground truth (6 problem(s)):\n  - annotations[].id: ")


def test_array_parity_counts_cells_differences_and_shape_mismatches_per_array() -> None:
    names = PARITY_ARRAYS
    a = {n: np.zeros((2, 3)) for n in names}
    b = {n: np.zeros((2, 3)) for n in names}
    first, second, *rest = names
    a[first] = np.array([[0.0, 0.5, np.nan], [1.0, -1.0, 0.25]])
    b[first] = np.array([[0.0, 0.75, 0.0], [1.0, -1.0, 0.25]])
    a[second], b[second] = np.zeros((2, 3)), np.zeros((4, 5))  # a shape mismatch: every cell of the larger differs
    out = scoring._array_parity(a, b, 0.1)
    assert list(out) == list(names)
    assert out[first]["cells"] == 6 and out[first]["differing"] == 2  # 0.25 off and a NaN
    assert np.isnan(out[first]["max_abs_deviation"])  # a NaN cell: the largest deviation is unknown, never 0.25
    assert out[second] == {"cells": 20, "differing": 20, "max_abs_deviation": float("inf")}
    assert scoring._array_parity(b, a, 0.1)[second] == {"cells": 20, "differing": 20, "max_abs_deviation": float("inf")}
    for n in rest:
        assert out[n] == {"cells": 6, "differing": 0, "max_abs_deviation": 0.0}
    ints = {n: np.array([[1, 2], [3, 4]]) for n in names}  # integer arrays: compared as floats
    shifted = {n: np.array([[1, 2], [3, 5]]) for n in names}
    for x, y in ((ints, shifted), (shifted, ints)):
        assert scoring._array_parity(x, y, 0.5)[first] == {"cells": 4, "differing": 1, "max_abs_deviation": 1.0}
    three, five = ({n: np.array([v], dtype=np.uint8) for n in names} for v in (3, 5))
    for x, y in ((three, five), (five, three)):  # no unsigned wrap-around (3 - 5 is not 254)
        assert scoring._array_parity(x, y, 0.0)[first] == {"cells": 1, "differing": 1, "max_abs_deviation": 2.0}
    empty = {n: np.zeros((0, 3)) for n in names}
    assert scoring._array_parity(empty, empty, 0.0)[first] == {"cells": 0, "differing": 0, "max_abs_deviation": 0.0}
    first_off = scoring._array_parity({**empty, first: np.zeros(2)}, {**empty, first: np.zeros(3)}, 0.0)
    assert first_off == {first: {"cells": 3, "differing": 3, "max_abs_deviation": float("inf")},  # and the arrays
                         second: {"cells": 0, "differing": 0, "max_abs_deviation": 0.0}}  # after it still compared


def _areas_not_boxes_gt() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Ground truth whose `area` fields disagree with the boxes (a segmentation's area, as COCO allows), with no
    `iscrowd` key anywhere, and detections hitting most boxes, some in the wrong category."""
    boxes = [(10, 10, 10, 10, 5000.0), (100, 100, 50, 50, 100.0), (200, 200, 120, 120, 20000.0),
             (20, 300, 40, 40, 1600.0), (300, 20, 90, 90, 500.0)]
    anns = []
    for img in (1, 2, 3):
        for x, y, w, h, area in boxes:
            k = len(anns) + 1
            anns.append({"id": k, "image_id": img, "category_id": 1 + k % 2, "bbox": [x, y, w, h], "area": area})
    gt = {"images": [{"id": i, "width": 500, "height": 500} for i in (1, 2, 3)],
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], "annotations": anns}
    dets = []
    for j, a in enumerate(anns):
        x, y, w, h = a["bbox"]
        if j % 4 != 3:
            dets.append({"image_id": a["image_id"], "category_id": a["category_id"],
                         "bbox": [x + j % 3, y, w, h - j % 2], "score": 0.9 - j * 0.02})
        dets.append({"image_id": a["image_id"], "category_id": 3 - a["category_id"], "bbox": [x, y, w, h],
                     "score": 0.5 - j * 0.01})
    return gt, dets


@pytest.mark.parametrize(("backend", "tol"), [("fast", 0.0), ("hotcoco", 0.0), ("faster-coco-eval", 1e-12)])
def test_every_backend_sizes_boxes_by_the_area_field_and_reads_a_missing_iscrowd_as_0(backend: str, tol: float) -> None:
    gt, dets = _areas_not_boxes_gt()
    both = scoring.score_both(gt, dets, backends=(backend, "reference"), tol=tol)
    assert both.audit.ok, both.audit.differing  # as stock pycocotools, array cell for cell
    by_box = copy.deepcopy(gt)  # the same boxes sized by w * h: the size-range metrics move, so area was read
    for a in by_box["annotations"]:
        a["area"] = float(a["bbox"][2] * a["bbox"][3])
    sized = scoring.score_both(by_box, dets, backends=(backend, "reference"), tol=tol).headline.metrics
    assert [sized[m] for m in ("mAP_small", "mAP_medium", "mAP_large")] != [
        both.headline.metrics[m] for m in ("mAP_small", "mAP_medium", "mAP_large")]
    crowd0 = copy.deepcopy(gt)
    for a in crowd0["annotations"]:
        a["iscrowd"] = 0
    assert scoring.score_both(crowd0, dets, backends=(backend, "reference"), tol=tol).headline.metrics == \
        both.headline.metrics
    assert both.headline.metrics["mAP50"] > 0.5


_SCORE_FIX = "write the post-sigmoid confidence as a JSON number in [0, 1]"


def _det(**changes: Any) -> dict[str, Any]:
    return {"image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2], "score": 0.5, **changes}


def _refusal(dets: Any, *, strict: bool = False, max_det: int = 500) -> tuple[list[str], str]:
    with pytest.raises(PredictionsInvalid) as err:
        _check_predictions({1, 2}, {1, 2}, dets, max_det, "p.json", strict)
    return err.value.problems, str(err.value)


def test_check_predictions_word_for_word_and_max_det_in_both_modes() -> None:
    problems, text = _refusal({"a": 1})
    assert len(problems) == 1
    assert text == ("p.json: invalid predictions: top level is an object, not an array of detections; fix: write a "
                    "COCO results list [{image_id, category_id, bbox: [x, y, w, h], score}, ...]")
    assert _refusal([_det(), 5])[1] == ("p.json: invalid predictions: 1 of 2 entries are not JSON objects (indices 1); "
                                        "fix: each detection is {image_id, category_id, bbox, score}")
    unknown_cat = ("category_id: 1 detections name 1 category id(s) absent from the ground truth's categories [1, 2]: "
                   "{id} (first at indices {at}); fix: map model classes to the canonical (contiguous from 0) "
                   "category ids")
    assert _refusal([_det(), _det(category_id=7)])[0] == [unknown_cat.format(id=7, at=1)]
    assert _refusal([_det(), _det(score="x")])[0] == [
        f'[1].score: "x" is a string, not a JSON number; fix: {_SCORE_FIX}']
    assert _refusal([_det(), _det(bbox=[0, 0, -1, 2])])[0] == [
        "bbox: 1 detections have a negative width or height: [1] [0, 0, -1, 2]; fix: bbox is [x, y, width, height] "
        "(COCO xywh), not [x1, y1, x2, y2]"]

    empty = _check_predictions({1, 2}, {1}, [], 100, "p.json")
    assert empty.max_det_cut.max_det == 100 and empty.image_id.size == 0
    assert empty.warnings == (empty_predictions_warning("p.json", 2),)

    over = [_det()] * 3
    lenient = _check_predictions({1, 2}, {1, 2}, over, 2, "p.json")  # not strict unless asked
    assert lenient.max_det_cut.detections_cut == 1 and lenient.image_id.dtype == np.int64
    assert lenient.warnings == (lenient.max_det_cut.warning("p.json"),) and "max_det=2" in lenient.warnings[0]
    violation = ("the file violates the protocol: 1 image(s) carry more than max_det=2 detections (most first: image "
                 "1: {n}); fix: keep at most the 2 highest-scoring detections per image (all classes together) when "
                 "writing predictions")
    assert _refusal(over, strict=True, max_det=2)[0] == [violation.format(n=3)]
    assert _refusal([*over, _det(category_id=9)], strict=True, max_det=2)[0] == [  # every problem, not the last
        unknown_cat.format(id=9, at=3), violation.format(n=4)]


@pytest.mark.parametrize(("score", "shown"), [(1.5, "1.5"), (1.0000001, "1.0000001"), (float("nan"), "NaN"),
                                              (-0.1, "-0.1"), (float("inf"), "Infinity")])
def test_a_score_outside_0_1_is_refused_word_for_word(score: float, shown: str) -> None:
    assert _refusal([_det(), _det(score=score)])[0] == [
        f"score: 1 detections have a score that is not a finite number in [0, 1]: [1] {shown}; fix: {_SCORE_FIX}"]


def test_scores_at_the_bounds_and_integer_scores_are_read_as_floats() -> None:
    arrays = _check_predictions({1}, {1}, [_det(score=1.0), _det(score=0.0), _det(score=1), _det(score=0)],
                                        500, "p.json")
    assert arrays.score.dtype == np.float64 and arrays.score.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert arrays.bbox.shape == (4, 4) and arrays.bbox.dtype == np.float64
    ints = _check_predictions({1}, {1}, [_det(score=1), _det(score=0)], 500, "p.json")  # integers alone
    assert ints.score.dtype == np.float64 and ints.score.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_phase_time_is_a_duration_within_the_call_and_total_is_their_sum(backend: str) -> None:
    """`seconds` is published in the score's metadata: each phase a difference of two clock readings (never a
    sum, which would read as hours since boot), none longer than the call, `total` their sum."""
    gt, dets = _areas_not_boxes_gt()
    t0 = time.perf_counter()
    both = scoring.score_both(gt, dets, backends=(backend, "fast"))
    results = [scoring.score(gt, dets, backend=backend), both.headline, both.reference]
    wall = time.perf_counter() - t0
    for r in results:
        seconds = r.seconds
        assert set(seconds) == {"validate", "load", "evaluate", "accumulate", "summarize", "total"}
        assert all(0.0 <= v <= wall for v in seconds.values()), seconds
        assert seconds["total"] == pytest.approx(sum(v for k, v in seconds.items() if k != "total"))


def test_an_unknown_backend_is_named_in_the_refusal() -> None:
    gt, dets = _areas_not_boxes_gt()
    want = "backend must be one of ('fast', 'reference', 'hotcoco', 'faster-coco-eval'), got 'coco'"
    for call in (lambda: scoring.score(gt, dets, backend="coco"),
                 lambda: scoring.score_both(gt, dets, backends=("fast", "coco"))):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == want


def test_score_both_takes_prepared_ground_truth_names_predictions_and_honours_strict() -> None:
    gt, dets = _areas_not_boxes_gt()
    prepared = PreparedGT.build(gt)
    assert scoring.score_both(prepared, dets).headline.metrics == scoring.score_both(gt, dets).headline.metrics
    with pytest.raises(PredictionsInvalid) as err:
        scoring.score_both(gt, [*dets, _det(image_id=99)])
    assert str(err.value).startswith("predictions: invalid predictions: ")
    scoring.score_both(gt, dets, max_det=1)  # over max_det: scored, with a warning, unless strict
    with pytest.raises(PredictionsInvalid, match="violates the protocol"):
        scoring.score_both(gt, dets, max_det=1, strict=True)
    with pytest.raises(GroundTruthInvalid) as gt_err:
        PreparedGT.build({**gt, "images": []}, source="gt.json")
    assert str(gt_err.value) == "gt.json: invalid ground truth: images: empty; nothing to score"


def test_empty_predictions_are_typed_arrays_with_a_max_det_record() -> None:
    empty = _DetArrays.empty(300)
    assert (empty.image_id.dtype, empty.category_id.dtype, empty.score.dtype) == (np.int64, np.int64, np.float64)
    assert (empty.image_id.shape, empty.bbox.shape) == ((0,), (0, 4))
    assert empty.max_det_cut == MaxDetCut(300) and empty.warnings == ()


def test_images_over_max_det_are_listed_most_cut_then_most_detections_then_by_id() -> None:
    # max_det=2: image 5 carries exactly 2 (not over); images 1 and 6 tie on cut and count (id order decides)
    per_image = {1: [1, 1, 1], 2: [1, 1, 2, 2], 3: [1, 1, 1, 2], 4: [1, 1, 2], 5: [1, 2], 6: [1, 1, 1]}
    dets = [_det(image_id=i, category_id=c) for i, cats in per_image.items() for c in cats]
    arrays = _check_predictions(set(per_image), {1, 2}, dets, 2, "p.json")
    assert [(i["image_id"], i["detections"], i["cut"]) for i in arrays.max_det_cut.images] == [
        (3, 4, 1), (1, 3, 1), (6, 3, 1), (2, 4, 0), (4, 3, 0)]
    assert (arrays.max_det_cut.images_over, arrays.max_det_cut.detections_cut) == (5, 3)
    problems = _max_det_problems([d["image_id"] for d in dets], 2)
    assert "(most first: image 2: 4, image 3: 4, image 1: 3, image 4: 3, image 6: 3)" in problems[0]
    # more detections than max_det in all, none over on one image: nothing is cut, the bound is kept
    spread = _check_predictions({1, 2, 3}, {1}, [_det(image_id=i) for i in (1, 1, 2, 2, 3, 3)], 2, "p.json")
    assert spread.max_det_cut == MaxDetCut(2) and spread.warnings == ()


def test_bad_boxes_of_annotations_with_ids_of_mixed_types_are_listed_not_a_crash() -> None:
    """A stranger's file: a string id and an integer id on two broken boxes (ordering them must not compare a str
    with an int)."""
    gt = _gt()
    gt["annotations"] = [{**gt["annotations"][0], "id": 5, "bbox": [0, 0, -1, 1]},
                         {**gt["annotations"][0], "id": "a", "bbox": [0, 0, 1]}]
    with pytest.raises(GroundTruthInvalid) as err:
        validate_gt(gt)
    assert err.value.problems == [
        "annotations[].id: 1 ids are not non-negative integers: 'a'",
        "annotations[].bbox: 2 boxes are not [x, y, w, h] with finite numbers and w, h >= 0 (annotation ids a, 5)"]


def test_ground_truth_is_named_so_when_no_source_is_given() -> None:
    for call in (lambda: validate_gt([1]), lambda: PreparedGT.build([1])):
        with pytest.raises(GroundTruthInvalid) as err:
            call()
        assert str(err.value) == "ground truth: invalid ground truth: top level is a JSON list, not a COCO object"


def test_a_file_with_several_faults_per_field_lists_each_with_its_count() -> None:
    """A stranger's file: strings and nulls beside out-of-range numbers in one column (the slow path of each
    column's check, where the count of all detections is printed), and a detection without its score."""
    scores = _refusal([_det(score="x"), _det(score=None), _det(), _det(score=1.5), _det(score=1.0),
                       _det(score=float("inf"))])[0]
    assert scores == [
        f'[0].score: "x" is a string, not a JSON number (2 of 6 detections in all; also [1].score: null (no value), '
        f'not a JSON number); fix: {_SCORE_FIX}',
        f"score: 2 detections have a score that is not a finite number in [0, 1]: [3] 1.5, [5] Infinity; fix: "
        f"{_SCORE_FIX}"]
    ids_and_boxes = _refusal([_det(category_id="1"), _det(category_id=1.0), _det(bbox=[0, "a", 1, 1]),
                              _det(bbox=None), _det()])[0]
    assert ids_and_boxes == [
        "[0].category_id: \"1\" is a string (2 of 5 detections in all; also [1].category_id: 1.0 is a float); fix: "
        "write category ids as JSON integers from the ground truth's categories[].id [1, 2]",
        '[2].bbox[1]: "a" is a string, not a JSON number (2 of 5 detections in all; also [3].bbox: null (no value), '
        "not an array of 4 numbers); fix: write bbox as [x, y, width, height], 4 finite JSON numbers in pixels"]
    assert _refusal([_det(), {"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}])[1] == (
        "p.json: invalid predictions: 1 of 2 detections lack required keys: [1] missing ['score']; fix: every "
        "detection needs image_id, category_id, bbox and score")
    assert _refusal([_det(image_id=7)])[0] == [
        "image_id: 1 detections name 1 image id(s) absent from the ground truth's images: 7 (first at indices 0); "
        "fix: predict on the ground truth's split and copy its images[].id"]


def test_boxes_of_five_numbers_everywhere_are_refused_not_read_four_at_a_time() -> None:
    """[x, y, w, h, score] in every detection (a common export slip): each box is refused; reading the flat list
    four numbers at a time would shift every box after the first."""
    assert _refusal([_det(bbox=[0, 0, 2, 2, 0.9]), _det(bbox=[1, 1, 2, 2, 0.8])])[0] == [
        "[0].bbox: [0, 0, 2, 2, 0.9] has 5 elements, not 4 (2 of 2 detections in all; also [1].bbox: [1, 1, 2, 2, "
        "0.8] has 5 elements, not 4); fix: write bbox as [x, y, width, height], 4 finite JSON numbers in pixels"]


def test_an_image_that_is_not_an_object_is_refused_and_a_ground_truth_without_images_knows_no_image() -> None:
    gt = {"images": [1, {"id": 2}], "categories": [{"id": 1}], "annotations": []}
    with pytest.raises(GroundTruthInvalid) as err:
        validate_gt(gt)
    assert err.value.problems == ["images[].id: 1 ids are not integers: None"]
    with pytest.raises(PredictionsInvalid) as perr:  # no images list: every image id is unknown
        validate_predictions({"categories": [{"id": 1}]}, [_det()], 500)
    assert perr.value.problems[0].startswith("image_id: 1 detections name 1 image id(s) absent")


def test_the_stock_route_numbers_detections_from_1_so_a_duplicate_is_a_false_positive() -> None:
    """The test-only stock faster-coco-eval route (`_run_fast_coco`, what the direct backend is compared with)
    hands detections ids from 1: an id of 0 reads as "unmatched", so a lower-scored duplicate of the file's first
    detection would match its box again and push recall to 1.5."""
    gt = {"images": [{"id": 1, "width": 100, "height": 100}], "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": k, "image_id": 1, "category_id": 1, "bbox": box, "area": 100, "iscrowd": 0}
                          for k, box in ((1, [0, 0, 10, 10]), (2, [50, 50, 10, 10]))]}
    dets = [_det(bbox=[0, 0, 10, 10], score=0.9), _det(bbox=[0, 0, 10, 10], score=0.5),
            _det(bbox=[50, 50, 10, 10], score=0.7)]
    prepared = PreparedGT.build(gt)
    arrays = _check_predictions({1}, {1}, dets, 500, "t")
    stock, _ = _run_fast_coco(prepared, dets, arrays, 500, {})
    ref, _ = _run_reference(prepared, dets, arrays, 500, {})
    np.testing.assert_array_equal(np.asarray(stock["recall"]), np.asarray(ref["recall"]))
    assert np.asarray(ref["recall"]).max() == 1.0
