"""Edge cases of bench_assets/rf100vl/scoring/sanity.py that kill mutants the other tests let survive (issue 15,
docs/testing.md "Mutation testing"): every branch's whole Finding (verdict, description, rows, facts, severity)
against a hand-written expectation, and the boundaries of each comparison."""

from __future__ import annotations

import math

import pytest

from bench_assets.platform.findings import Finding
from bench_assets.rf100vl.scoring import coco as scoring
from bench_assets.rf100vl.scoring import sanity
from bench_assets.rf100vl.scoring.results import ScoreResult

# ---------------------------------------------------------------------------------------------
# object sizes


def test_object_sides_scale_by_the_long_side_of_their_own_image() -> None:
    coco = {"images": [{"id": 1, "width": 200, "height": 100}, {"id": 2, "width": 50, "height": 400}],
            "annotations": [{"image_id": 1, "bbox": [0, 0, 8, 2]}, {"image_id": 2, "bbox": [0, 0, 9, 16]},
                            {"image_id": 1, "bbox": [0, 0, -4, 9]}]}
    # sqrt(8*2) * 100 / 200 = 2; sqrt(9*16) * 100 / 400 = 3; a negative width counts as 0
    assert sanity.object_sides_px(coco, 100) == [2.0, 3.0, 0.0]
    assert sanity.median_object_px(coco, 100) == 2.0
    assert sanity.median_object_px({"images": coco["images"], "annotations": []}, 100) is None


def test_a_negative_height_counts_as_zero() -> None:
    coco = {"images": [{"id": 1, "width": 10, "height": 10}], "annotations": [{"image_id": 1, "bbox": [0, 0, 4, -1]}]}
    assert sanity.object_sides_px(coco, 10) == [0.0]


# ---------------------------------------------------------------------------------------------
# labels_reached_loss


def test_the_box_loss_key_is_the_first_known_component_recorded() -> None:
    epochs = [{"epoch": 1, "losses": {"cls": 1.0}}, {"epoch": 2, "losses": None},
              {"epoch": 3, "losses": {"giou": 0.5, "iou": 0.4}}]
    assert sanity.box_loss_key(epochs) == "iou"
    assert sanity.box_loss_key([{"epoch": 1, "losses": {"cls": 1.0}}]) is None


def test_a_run_without_train_boxes_passes_whatever_its_losses() -> None:
    f = sanity.labels_reached_loss("p", "ds", [{"epoch": 1, "losses": {"box": 0.0}}], 0, 640, None)
    assert f == Finding(True, "p: the train split of ds has no boxes; nothing to reach the loss", [],
                        {"dataset": "ds", "imgsz": 640, "train_boxes": 0, "median_object_px": None,
                         "near_zero": 1e-3, "epochs": 1})


def test_no_box_loss_recorded_is_a_warning_naming_the_components() -> None:
    epochs = [{"epoch": 1, "losses": {"cls": 2.0, "dfl": 1.0}}, {"epoch": 2}]
    f = sanity.labels_reached_loss("p", "ds", epochs, 5, 320, 12.3456)
    assert f == Finding(False, "p: cannot tell whether the labels reached the loss: result.json records no "
                               "box-regression loss (box/iou/giou/bbox) on 2 epoch(s); components recorded: "
                               "['cls', 'dfl']", [],
                        {"dataset": "ds", "imgsz": 320, "train_boxes": 5, "median_object_px": 12.35,
                         "near_zero": 1e-3, "epochs": 2}, "WARN")


def test_a_box_loss_exactly_at_near_zero_has_reached_the_loss() -> None:
    epochs = [{"epoch": 1, "losses": {"box": 0.0005, "dfl": 0.2}}, {"epoch": 2, "losses": {"box": 0.001}}]
    f = sanity.labels_reached_loss("p", "ds", epochs, 7, 640, 30.0)
    assert f == Finding(True, "p: box loss (box) reached 0.001 (>= 0.001) on 2 epoch(s) of training on 7 boxes", [],
                        {"dataset": "ds", "imgsz": 640, "train_boxes": 7, "median_object_px": 30.0,
                         "near_zero": 1e-3, "epochs": 2, "box_loss_key": "box", "max_box_loss": 0.001,
                         "last_box_loss": 0.001})


def test_a_near_zero_box_loss_on_small_objects_fails_with_rows_and_the_advice() -> None:
    epochs = [{"epoch": 1, "losses": {"iou": 0.0002, "dfl": 0.3}}, {"epoch": 2, "losses": {"cls": 1.0}},
              {"epoch": 3, "losses": {"iou": 0.0001}}]
    f = sanity.labels_reached_loss("p", "ds", epochs, 9, 64, 7.99)
    assert f.passed is False and f.severity == "ERROR"
    assert f.rows == [{"epoch": 1, "iou_loss": 0.0002, "dfl_loss": 0.3}, {"epoch": 3, "iou_loss": 0.0001,
                                                                          "dfl_loss": None}]
    assert f.facts == {"dataset": "ds", "imgsz": 64, "train_boxes": 9, "median_object_px": 7.99, "near_zero": 1e-3,
                       "epochs": 3, "box_loss_key": "iou", "max_box_loss": 0.0002, "last_box_loss": 0.0001}
    assert f.description == (
        "p: the box loss (iou) stayed below 0.001 on all 2 epochs (max 0.0002, last 0.0001) while the train split "
        "of ds has 9 boxes: the labels did not reach the loss. At the training size 64 px the median train object "
        "is 7.99 px (sqrt(w*h) x 64 / max(image w, h)); objects under the detector's finest stride (8 px) get "
        "(almost) no positive anchor: train at a larger imgsz")


@pytest.mark.parametrize("median_px, size", [(8.0, "8.00 px"), (None, "unknown")])
def test_a_near_zero_box_loss_on_objects_of_the_stride_or_unknown_size_blames_the_labels(
        median_px: float | None, size: str) -> None:
    f = sanity.labels_reached_loss("p", "ds", [{"epoch": 1, "losses": {"box": 0.0}}], 3, 64, median_px)
    assert f.description == (
        "p: the box loss (box) stayed below 0.001 on all 1 epochs (max 0, last 0) while the train split of ds has "
        f"3 boxes: the labels did not reach the loss. At the training size 64 px the median train object is {size} "
        "(sqrt(w*h) x 64 / max(image w, h)); the objects are not too small at this size: check how the labels "
        "reach the trainer (data.yaml names, category ids, box format)")


# ---------------------------------------------------------------------------------------------
# ground truth as predictions

GT = {"info": {"x": 1},
      "images": [{"id": 1, "width": 100, "height": 100}, {"id": 2, "width": 100, "height": 100},
                 {"id": 3, "width": 100, "height": 100}],
      "categories": [{"id": 0, "name": "a"}, {"id": 1, "name": "b"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 0, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0},
                      {"id": 2, "image_id": 2, "category_id": 1, "bbox": [5, 5, 30, 40], "area": 1200, "iscrowd": 0},
                      {"id": 3, "image_id": 2, "category_id": 0, "bbox": [50, 50, 10, 10], "area": 100, "iscrowd": 0},
                      {"id": 4, "image_id": 3, "category_id": 1, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 0}]}


def test_ground_truth_as_predictions_keeps_images_with_exactly_max_det_boxes() -> None:
    kept, dets, dense = sanity.ground_truth_as_predictions(GT, 1)
    assert dense == [2]
    assert kept["info"] == {"x": 1} and [i["id"] for i in kept["images"]] == [1, 3]
    assert [a["id"] for a in kept["annotations"]] == [1, 4]
    assert dets == [{"image_id": 1, "category_id": 0, "bbox": [10, 10, 20, 20], "score": 1.0},
                    {"image_id": 3, "category_id": 1, "bbox": [0, 0, 5, 5], "score": 1.0}]
    assert dets[0]["bbox"] is not GT["annotations"][0]["bbox"]  # a copy
    _, dets2, dense2 = sanity.ground_truth_as_predictions(GT, 2)
    assert dense2 == [] and len(dets2) == 4


def test_dense_images_are_listed_in_repr_order() -> None:
    gt = {"images": [{"id": i} for i in (10, 9)],
          "annotations": [{"id": n, "image_id": i, "category_id": 0, "bbox": [0, 0, 1, 1]}
                          for n, i in enumerate([10, 10, 9, 9])]}
    assert sanity.ground_truth_as_predictions(gt, 1)[2] == [10, 9]  # repr order: "10" < "9"


def test_the_ground_truth_scores_perfect_on_real_backends_and_says_what_was_left_out() -> None:
    f = sanity.ground_truth_scores_perfect("ds", GT, ("fast", "reference"), scoring.score, 1)
    assert f == Finding(True, "ds test: the ground truth fed back as predictions scores mAP50_95 1.0 on fast, "
                              "reference (2 boxes on 2 images; 1 images with more than 1 boxes left out)", [],
                        {"dataset": "ds", "backends": ["fast", "reference"], "boxes": 2, "images": 2,
                         "images_left_out_over_max_det": 1, "max_det": 1, "tolerance": 1e-9})
    whole = sanity.ground_truth_scores_perfect("ds", GT, ("fast",), scoring.score, 500)
    assert whole.passed and whole.description.endswith("on fast (4 boxes on 3 images)")


def test_no_box_to_score_is_a_warning() -> None:
    gt = {**GT, "annotations": []}
    f = sanity.ground_truth_scores_perfect("ds", gt, ("fast",), scoring.score, 500)
    assert f == Finding(False, "ds test: no box on an image with at most 500 boxes; the ground truth cannot be "
                               "scored against itself", [],
                        {"dataset": "ds", "backends": ["fast"], "boxes": 0, "images": 3,
                         "images_left_out_over_max_det": 0, "max_det": 500, "tolerance": 1e-9}, "WARN")


def _shifted(gt: dict, dets: list, *, backend: str, max_det: int) -> ScoreResult:
    """The real scorer, fed detections moved by 1 px (as a backend that misreads boxes would see them)."""
    moved = [{**d, "bbox": [d["bbox"][0] + 1, *d["bbox"][1:]]} for d in dets]
    return scoring.score(gt, moved, backend=backend, max_det=max_det)


def _refusing(gt: dict, dets: list, *, backend: str, max_det: int) -> ScoreResult:
    return scoring.score(gt, dets, backend=backend, max_det=max_det, strict=True) if backend == "fast" else \
        scoring.score(gt, [{**d, "score": "1"} for d in dets], backend=backend, max_det=max_det)


def test_an_imperfect_or_failing_backend_is_named_with_its_ap_or_error() -> None:
    f = sanity.ground_truth_scores_perfect("ds", GT, ("fast", "reference"), _shifted, 500)
    ap = f.rows[0]["mAP50_95"]
    assert 0 < ap < 1 and f.rows == [{"backend": "fast", "mAP50_95": ap, "error": None},
                                     {"backend": "reference", "mAP50_95": ap, "error": None}]
    assert f.description == (
        "ds test: the ground truth fed back as predictions (every box a detection with score 1.0, same image and "
        f"category ids) does not score mAP50_95 1.0 on 2 of 2 backend(s): fast, reference: mAP50_95 = {ap!r} "
        "(4 boxes on 3 images); the scorer sees other image or category ids than the split holds")
    assert f.passed is False and f.severity == "ERROR" and f.facts["boxes"] == 4

    g = sanity.ground_truth_scores_perfect("ds", GT, ("fast", "reference"), _refusing, 500)
    assert [r["backend"] for r in g.rows] == ["reference"]
    err = g.rows[0]["error"]
    assert err.startswith("PredictionsInvalid: ") and len(err) <= 400 and g.rows[0]["mAP50_95"] is None
    assert f"on 1 of 2 backend(s): reference: {err} (4 boxes" in g.description


def test_an_ap_within_the_tolerance_of_one_passes_and_beyond_fails() -> None:
    def near(gt: dict, dets: list, *, backend: str, max_det: int) -> ScoreResult:
        result = scoring.score(gt, dets, backend=backend, max_det=max_det)
        result.metrics["mAP50_95"] = 1.0 - (1e-9 if backend == "fast" else 2e-9)
        return result

    f = sanity.ground_truth_scores_perfect("ds", GT, ("fast", "reference"), near, 500, tol=1e-9)
    assert [r["backend"] for r in f.rows] == ["reference"]


def test_an_ap_exactly_the_tolerance_from_one_passes_and_distinct_outcomes_are_listed_apart() -> None:
    def mixed(gt: dict, dets: list, *, backend: str, max_det: int) -> ScoreResult:
        if backend == "reference":
            raise ValueError("y" * 500)
        result = scoring.score(gt, dets, backend="fast", max_det=max_det)
        result.metrics["mAP50_95"] = {"fast": 0.5, "hotcoco": 0.25}[backend]
        return result

    # |0.5 - 1| == tol exactly: within the tolerance (the comparison is strict)
    assert sanity.ground_truth_scores_perfect("ds", GT, ("fast",), mixed, 500, tol=0.5).passed
    f = sanity.ground_truth_scores_perfect("ds", GT, ("fast", "hotcoco", "reference"), mixed, 500, tol=0.4)
    err = "ValueError: " + "y" * 388  # the error text is cut at 400 characters
    assert f.rows == [{"backend": "fast", "mAP50_95": 0.5, "error": None},
                      {"backend": "hotcoco", "mAP50_95": 0.25, "error": None},
                      {"backend": "reference", "mAP50_95": None, "error": err}]
    assert f.description == (
        "ds test: the ground truth fed back as predictions (every box a detection with score 1.0, same image and "
        f"category ids) does not score mAP50_95 1.0 on 3 of 3 backend(s): fast: mAP50_95 = 0.5; hotcoco: "
        f"mAP50_95 = 0.25; reference: {err} (4 boxes on 3 images); the scorer sees other image or category ids "
        "than the split holds")


# ---------------------------------------------------------------------------------------------
# predicted classes exist

CATS = [{"id": 0, "name": "a"}, {"id": 2, "name": "c"}, {"id": 1}]


def test_known_classes_pass_with_the_categories_in_the_facts() -> None:
    f = sanity.predicted_classes_exist("p", [{"category_id": 0}, {"category_id": 2}], CATS)
    assert f == Finding(True, "p: all 2 detections name one of the test split's 3 categories", [],
                        {"test_categories": {"0": "a", "1": None, "2": "c"}, "detections": 2})


@pytest.mark.parametrize("dets", [{"category_id": 0}, [{"category_id": 0}, [1]], "x"])
def test_a_file_that_is_not_a_list_of_objects_fails(dets: object) -> None:
    f = sanity.predicted_classes_exist("p", dets, CATS)
    assert f == Finding(False, "p: the predictions file is not a list of detection objects", [],
                        {"test_categories": {"0": "a", "1": None, "2": "c"}})


def test_unknown_ids_are_counted_most_frequent_first_and_strings_or_bools_are_unknown() -> None:
    dets = ([{"category_id": 7}] + [{"category_id": "0"}] * 3 + [{"category_id": True}] * 2 + [{}]
            + [{"category_id": 0}] * 4)
    f = sanity.predicted_classes_exist("p", dets, CATS)
    assert f.rows == [{"category_id": "'0'", "detections": 3}, {"category_id": "True", "detections": 2},
                      {"category_id": 7, "detections": 1}, {"category_id": "None", "detections": 1}]
    assert f == Finding(False, "p: 7 of 11 detections name 4 category id(s) the test split does not have: \"'0'\" "
                               "(3), 'True' (2), 7 (1), 'None' (1); the test split's category ids are [0, 1, 2]",
                        f.rows, {"test_categories": {"0": "a", "1": None, "2": "c"}, "detections": 11})


def test_only_twenty_unknown_ids_and_fifty_known_ones_are_listed() -> None:
    cats = [{"id": i, "name": str(i)} for i in range(60)]
    dets = [{"category_id": 100 + i} for i in range(25) for _ in range(25 - i)]
    f = sanity.predicted_classes_exist("p", dets, cats)
    listed = ", ".join(f"{100 + i} ({25 - i})" for i in range(20))
    assert f.description.endswith(f"name 25 category id(s) the test split does not have: {listed}; the test split's "
                                  f"category ids are {list(range(50))}")
    assert len(f.rows) == 25


# ---------------------------------------------------------------------------------------------
# training finished

STATS = {"epochs": 10, "epochs_done": 10, "valid_mAP50_95": 0.25, "recipe": {"conformant": True},
         "signature_fields": {"patience": 0}}


def _stats(**kw: object) -> dict:
    s = {**STATS, **kw}
    if "patience" in kw:
        s["signature_fields"] = {"patience": kw.pop("patience")}
        del s["patience"]
    return s


def test_a_complete_conformant_run_passes_with_its_facts() -> None:
    f = sanity.training_finished("p", STATS)
    assert f == Finding(True, "p: 10/10 epochs, valid mAP50-95 0.2500", [],
                        {"epochs": 10, "epochs_done": 10, "patience": 0, "valid_mAP50_95": 0.25, "conformant": True})


def test_a_cut_run_without_patience_fails_and_with_patience_passes_as_stopped_early() -> None:
    f = sanity.training_finished("p", _stats(epochs_done=9))
    assert f == Finding(False, "p: 9 of 10 planned epochs finished, no early stopping in the recipe (patience 0); "
                               "rerun the partition: training resumes from last.pt", [],
                        {"epochs": 10, "epochs_done": 9, "patience": 0, "valid_mAP50_95": 0.25, "conformant": True})
    g = sanity.training_finished("p", _stats(epochs_done=9, patience=3))
    assert g == Finding(True, "p: 9/10 epochs (stopped early, patience 3), valid mAP50-95 0.2500", [],
                        {"epochs": 10, "epochs_done": 9, "patience": 3, "valid_mAP50_95": 0.25, "conformant": True})


def test_missing_signature_fields_mean_no_patience() -> None:
    s = {k: v for k, v in STATS.items() if k != "signature_fields"}
    assert sanity.training_finished("p", {**s, "epochs_done": 9}).passed is False
    assert sanity.training_finished("p", {**s, "signature_fields": {"patience": None}, "epochs_done": 9}).passed \
        is False


def test_more_epochs_than_planned_fail() -> None:
    f = sanity.training_finished("p", _stats(epochs_done=11, patience=2))
    assert f == Finding(False, "p: 11 epochs recorded for 10 planned", [],
                        {"epochs": 10, "epochs_done": 11, "patience": 2, "valid_mAP50_95": 0.25, "conformant": True})


@pytest.mark.parametrize("valid", [0, 0.0, None, math.nan, "0.3"])
def test_a_conformant_run_without_a_positive_valid_score_learned_nothing(valid: object) -> None:
    f = sanity.training_finished("p", _stats(valid_mAP50_95=valid))
    assert f.facts.pop("valid_mAP50_95") is valid  # `is`: NaN equals nothing, not even itself
    assert f.facts == {"epochs": 10, "epochs_done": 10, "patience": 0, "conformant": True}
    assert f.passed is False and f.description == (
        f"p: valid mAP50-95 is {valid} after 10 epochs with a conformant recipe: the model learned nothing; look at "
        "the labels and classes the run saw (labels_reached_loss) before publishing anything from it")


def test_a_non_conformant_run_may_score_nothing_and_a_tiny_positive_score_is_fine() -> None:
    f = sanity.training_finished("p", _stats(valid_mAP50_95=None, recipe={"conformant": False}))
    assert f == Finding(True, "p: 10/10 epochs, valid mAP50-95 not recorded", [],
                        {"epochs": 10, "epochs_done": 10, "patience": 0, "valid_mAP50_95": None,
                         "conformant": False})
    assert sanity.training_finished("p", _stats(valid_mAP50_95=1e-6)).passed is True
    assert sanity.training_finished("p", _stats(valid_mAP50_95=1)).description == "p: 10/10 epochs, valid mAP50-95 " \
                                                                                  "1.0000"


# ---------------------------------------------------------------------------------------------
# score well formed

PARITY = {"identical": 13, "total": 13, "differing": [], "engines": {"fast": "x"}}


def test_a_well_formed_score_passes_with_its_facts() -> None:
    f = sanity.score_well_formed("p", {"backend": "fast", "metrics": {"mAP50_95": 0.5}, "parity": PARITY})
    assert f == Finding(True, "p: mAP50-95 0.5000; 13/13 metrics identical to the reference evaluator", [],
                        {"mAP50_95": 0.5, "backend": "fast", "parity_identical": 13, "parity_total": 13,
                         "engines": {"fast": "x"}})


@pytest.mark.parametrize("headline", [0, 1, 0.0, 1.0])
def test_headlines_at_both_ends_of_the_range_are_defined(headline: float) -> None:
    assert sanity.score_well_formed("p", {"metrics": {"mAP50_95": headline}, "parity": PARITY}).passed is True


@pytest.mark.parametrize("headline", [-1, -1e-12, 1.0000001, 2, math.nan, math.inf, None, "0.5", True, False])
def test_undefined_headlines_fail(headline: object) -> None:
    f = sanity.score_well_formed("p", {"metrics": {"mAP50_95": headline}, "parity": PARITY})
    assert f == Finding(False, f"p: headline mAP50-95 is {headline!r}, not an AP in [0, 1] (-1 is pycocotools' "
                               "'undefined'); the score must not reach a table", [],
                        {"mAP50_95": headline, "backend": None, "parity_identical": 13, "parity_total": 13,
                         "engines": {"fast": "x"}})


@pytest.mark.parametrize("parity", [None, {}, {"identical": 13}, {"total": 13}])
def test_a_score_without_recorded_parity_fails(parity: dict | None) -> None:
    f = sanity.score_well_formed("p", {"metrics": {"mAP50_95": 0.5}, "parity": parity})
    assert f.facts == {"mAP50_95": 0.5, "backend": None, "parity_identical": (parity or {}).get("identical"),
                       "parity_total": (parity or {}).get("total"), "engines": None}
    assert f.passed is False and f.description == (
        "p: no parity with the reference evaluator recorded in the score; rescore it (bench score / the "
        "rf100vl_rescore_job)")


def test_a_score_whose_backends_disagree_fails_naming_the_metrics() -> None:
    f = sanity.score_well_formed("p", {"metrics": {"mAP50_95": 0.5},
                                       "parity": {**PARITY, "identical": 11, "differing": ["AR1", "AR10"]}})
    assert f == Finding(False, "p: the fast and reference evaluators disagree on 2 of 13 metrics: ['AR1', 'AR10']",
                        [], {"mAP50_95": 0.5, "backend": None, "parity_identical": 11, "parity_total": 13,
                             "engines": {"fast": "x"}})
