"""The sanity checks of training and scoring (sanity.py), each proven by a planted defect.

- `labels_reached_loss` (rf100vl/checkpoint): a real 2-epoch CPU run on a dataset whose objects are ~1.5 px at
  the 64 px training size leaves a box loss of ~0 in result.json, and the check fails naming the dataset, 64 px
  and the median object size; hand-written runs cover the other branches.
- `ground_truth_scores_perfect` (rf100vl/dataset): a stored test split whose image ids are moved past 2**53
  (valid 64-bit ids; faster-coco-eval keys ids as doubles, so two of them become one image) fails naming that
  backend; a scorer whose input has a category id remapped against the split fails with its AP.
- `predicted_classes_exist` (rf100vl/predictions): a predictions file edited to name category 7 fails with it.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.event_api import PartitionKeyFilter
from PIL import Image

from bench_assets.cli.location import run_job
from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.datasets.store import load_record
from bench_assets.rf100vl.defs.jobs import DATASET_OP, dataset_job, eval_job, train_job
from bench_assets.rf100vl.defs.partitions import register_import, register_model_partition
from bench_assets.rf100vl.defs.score_assets import compute_scores
from bench_assets.rf100vl.scoring import coco as scoring
from bench_assets.rf100vl.scoring import sanity
from bench_assets.rf100vl.scoring.eval_store import current_predictions_meta
from bench_assets.rf100vl.scoring.results import BACKENDS
from bench_assets.rf100vl.training.recipes import RECIPES_DIR
from tests.conftest import broken

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

CHILD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
MODEL = "yolo9-t"


def _key(ds: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"dataset": ds, "model": MODEL})


def _import(instance, name: str, path: Path):  # noqa: ANN001, ANN202
    register_import(instance, name, path)
    return run_job(instance, dataset_job, partition_key=name,
                   run_config={"ops": {DATASET_OP: {"config": {"source": str(path)}}}})


def _check(instance, asset: list[str], name: str, partition: str):  # noqa: ANN001, ANN202
    """The latest evaluation (passed, description) of check `name` on `asset` for one partition."""
    key = dg.AssetCheckKey(dg.AssetKey(asset), name)
    rec = instance.event_log_storage.get_asset_check_execution_history(
        key, limit=1, partition_filter=PartitionKeyFilter(key=partition))[0]
    ev = rec.event.dagster_event.event_specific_data
    return ev.passed, ev.description


# ---------------------------------------------------------------------------------------------
# labels_reached_loss


def _epochs(*box: float, key: str = "box") -> list[dict[str, Any]]:
    return [{"epoch": e, "train_loss": 1.0, "losses": {key: b, "cls": 0.5, "dfl": b / 2}}
            for e, b in enumerate(box, start=1)]


def test_median_object_px_scales_by_the_long_side() -> None:
    coco = {"images": [{"id": 1, "width": 320, "height": 160}, {"id": 2, "width": 100, "height": 200}],
            "annotations": [{"image_id": 1, "bbox": [0, 0, 16, 4]}, {"image_id": 2, "bbox": [0, 0, 10, 10]},
                            {"image_id": 2, "bbox": [0, 0, 40, 40]}]}
    assert sanity.object_sides_px(coco, 160) == [4.0, 8.0, 32.0]  # 8 x 160/320, 10 x 160/200, 40 x 160/200
    assert sanity.median_object_px(coco, 160) == 8.0
    assert sanity.median_object_px({"images": [], "annotations": []}, 160) is None


def test_labels_reached_loss_branches() -> None:
    healthy = sanity.labels_reached_loss("yolo9-t/ds", "ds", _epochs(6.3, 4.1, 0.0005), 100, 640, 30.0)
    assert healthy.passed and "6.3" in healthy.description
    collapsed = sanity.labels_reached_loss("yolo9-t/mini-dense", "mini-dense", _epochs(3.3e-5, 6.5e-6, 1.4e-6),
                                           1226, 160, 7.4833)
    assert not collapsed.passed and collapsed.severity == "ERROR"
    for part in ("mini-dense", "1226 boxes", "160 px", "7.48 px", "max 3.3e-05", "all 3 epochs",
                 "under the detector's finest stride (8 px)"):
        assert part in collapsed.description, (part, collapsed.description)
    assert collapsed.rows[0] == {"epoch": 1, "box_loss": 3.3e-5, "dfl_loss": 1.65e-5}
    yolox = sanity.labels_reached_loss("yolox-n/ds", "ds", _epochs(0.0, 0.0, key="iou"), 10, 320, 1.0)
    assert not yolox.passed and "box loss (iou)" in yolox.description
    no_boxes = sanity.labels_reached_loss("yolo9-t/ds", "ds", _epochs(0.0), 0, 640, None)
    assert no_boxes.passed and "no boxes" in no_boxes.description
    unknown = sanity.labels_reached_loss("x-n/ds", "ds", [{"epoch": 1, "losses": {"cls": 1.0}}], 10, 640, 5.0)
    assert not unknown.passed and unknown.severity == "WARN" and "['cls']" in unknown.description
    assert sanity.labels_reached_loss("a/b", "b", _epochs(1e-4), 10, 640, 5.0, near_zero=1e-5).passed


def _tiny_objects_dataset(root: Path, seed: int = 0) -> Path:
    """A Roboflow-layout dataset of 256 px images with 6 x 6 px dots: ~1.5 px at a 64 px training size."""
    rng = random.Random(seed)
    first = 0
    for split, n in (("train", 8), ("valid", 4), ("test", 4)):
        (root / split).mkdir(parents=True)
        doc: dict[str, Any] = {
            "categories": [{"id": 0, "name": "dots", "supercategory": "none"},
                           {"id": 1, "name": "dot", "supercategory": "dots"}],
            "images": [], "annotations": []}
        for k in range(n):
            name = f"img_{first + k:04d}_jpg.rf.{first + k:04d}c0ffee.jpg"
            img = Image.new("RGB", (256, 256), (90, 110, 130))
            for _ in range(4):
                x, y = rng.randint(8, 240), rng.randint(8, 240)
                img.paste((250, 250, 250), (x, y, x + 6, y + 6))
                doc["annotations"].append({"id": len(doc["annotations"]) + 1, "image_id": k, "category_id": 1,
                                           "bbox": [x, y, 6, 6], "area": 36, "segmentation": [], "iscrowd": 0})
            img.save(root / split / name, quality=95)
            doc["images"].append({"id": k, "file_name": name, "width": 256, "height": 256})
        (root / split / "_annotations.coco.json").write_text(json.dumps(doc))
        first += n
    return root


@pytest.mark.slow
def test_real_run_with_objects_too_small_for_the_training_size_fails_labels_reached_loss(
        instance, bench_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    for k, v in CHILD_ENV.items():
        monkeypatch.setenv(k, v)
    from bench_assets.rf100vl.training.models import register_model

    assert _import(instance, "dots", _tiny_objects_dataset(tmp_path / "raw")).success
    doc = json.loads((RECIPES_DIR / "yolo9.json").read_text())
    del doc["pretrained"]  # from scratch: no pretrained weights are stored in the test home
    doc["protocol"].update({"epochs": 2, "precision": "fp32", "cuda_graph": False, "cache": False})
    doc["sizes"]["t"] = {"imgsz": 64, "lr0": 0.01, "physical_batch": 4, "fallback_physical_batch": 2}
    doc["train"] = {"workers": 0, "no_aug_epochs": 1}
    (tmp_path / "tiny.json").write_text(json.dumps(doc))
    register_model_partition(instance, MODEL)
    register_model(bench_home, MODEL, str(tmp_path / "tiny.json"), datasets=["dots"])

    outcome = run_job(instance, train_job, partition_key=_key("dots"))
    assert not outcome.success
    run_dir = next((bench_home / "runs" / MODEL / "dots").glob("*/result.json")).parent
    epochs = json.loads((run_dir / "result.json").read_text())["epochs"]
    assert [e["epoch"] for e in epochs] == [1, 2]
    assert all({"box", "cls", "dfl"} <= set(e["losses"]) and e["losses"]["box"] < 1e-3 for e in epochs), epochs
    [error] = outcome.errors  # training itself succeeded: the check is the only failure
    assert error.startswith("check labels_reached_loss failed on rf100vl/checkpoint: yolo9-t/dots: the box loss")
    for part in ("train split of dots has 32 boxes", "training size 64 px", "median train object is 1.50 px"):
        assert part in error, (part, error)
    passed, _ = _check(instance, ["rf100vl", "checkpoint"], "labels_reached_loss", str(_key("dots")))
    assert passed is False


def _hand_written_run(home: Path, ds: str, box: list[float], version: str) -> Path:
    """A finished run as the checkpoint asset leaves it (stats.json, result.json, CURRENT), trained on `version`."""
    run_dir = home / "runs" / MODEL / ds / "0123456789abcdef"
    atomic_write_json(run_dir / "stats.json", {"model": MODEL, "dataset": ds, "dataset_version": version,
                                               "signature_fields": {"imgsz": 640, "patience": 0},
                                               "epochs": len(box), "epochs_done": len(box),
                                               "valid_mAP50_95": 0.25, "recipe": {"conformant": True}})
    atomic_write_json(run_dir / "result.json", {"status": "done", "epochs": _epochs(*box)})
    (run_dir.parent / "CURRENT").write_text(run_dir.name + "\n")
    return run_dir


def test_labels_reached_loss_check_reads_the_current_run_and_its_dataset_version(instance, bench_home: Path,
                                                                                   tmp_path: Path) -> None:
    assert _import(instance, "ds", broken("valid_base", tmp_path)).success
    register_model_partition(instance, MODEL)
    version = load_record(bench_home / "datasets", "ds").version
    _hand_written_run(bench_home, "ds", [5.2, 3.1], version)
    assert run_job(instance, train_job, partition_key=_key("ds"), checks_only=True).success
    assert _check(instance, ["rf100vl", "checkpoint"], "labels_reached_loss", str(_key("ds")))[0] is True

    _hand_written_run(bench_home, "ds", [2e-5, 0.0], version)
    outcome = run_job(instance, train_job, partition_key=_key("ds"), checks_only=True)
    assert not outcome.success
    [error] = outcome.errors
    # valid_base train: 48 px images, boxes 16x16, 18x20, 24x24 -> sides x 640/48: 213.3, 253.0, 320.0 px
    assert "train split of ds has 3 boxes" in error and "median train object is 252.98 px" in error, error
    assert "not too small at this size: check how the labels reach the trainer" in error

    _hand_written_run(bench_home, "ds", [5.0], "000000000000")
    outcome = run_job(instance, train_job, partition_key=_key("ds"), checks_only=True)
    assert [e for e in outcome.errors if "dataset version 000000000000 the run trained on is not stored" in e]


# ---------------------------------------------------------------------------------------------
# ground_truth_scores_perfect


def _gt(image_ids: list[int], boxes_per_image: int = 3, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    gt: dict[str, Any] = {"images": [{"id": i, "width": 100, "height": 100} for i in image_ids],
                          "categories": [{"id": 0, "name": "cat"}, {"id": 1, "name": "dog"}], "annotations": []}
    for i in image_ids:
        for _ in range(boxes_per_image):
            x, y, w, h = rng.randint(0, 50), rng.randint(0, 50), rng.randint(5, 40), rng.randint(5, 40)
            gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": i, "category_id": rng.randint(0, 1),
                                      "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0})
    return gt


def test_ground_truth_scores_one_on_every_backend_and_dense_images_are_left_out() -> None:
    gt = _gt([0, 1, 2, 3])
    gt["annotations"].append({"id": 99, "image_id": 3, "category_id": 0, "bbox": [1, 1, 5, 5], "area": 25,
                              "iscrowd": 0})  # image 3 now has 4 boxes, over max_det=3
    f = sanity.ground_truth_scores_perfect("ds", gt, BACKENDS, scoring.score, max_det=3)
    assert f.passed, f.description
    assert f.facts["images_left_out_over_max_det"] == 1 and f.facts["boxes"] == 9
    assert "1 images with more than 3 boxes left out" in f.description
    for backend in BACKENDS:
        assert backend in f.description


def test_single_box_category_scores_one_within_the_tolerance() -> None:
    gt = _gt([0], boxes_per_image=1)  # stock pycocotools: 1 - 2**-52 for a category with one box
    assert sanity.ground_truth_scores_perfect("ds", gt, BACKENDS, scoring.score, 500).passed


def test_scorer_whose_input_has_a_category_id_remapped_fails_with_its_ap() -> None:
    """The drift the check exists for: the scorer reads category 0 as 1 (e.g. 0- vs 1-based ids) while the
    detections carry the split's ids."""
    gt = _gt([0, 1, 2, 3])
    drifted = BACKENDS[0]

    def drifting_score(g: dict[str, Any], dets: list[dict[str, Any]], *, backend: str, max_det: int) -> Any:
        if backend == drifted:
            g = {**g, "annotations": [{**a, "category_id": 1} if a["category_id"] == 0 else a
                                      for a in g["annotations"]]}
        return scoring.score(g, dets, backend=backend, max_det=max_det)

    f = sanity.ground_truth_scores_perfect("ds", gt, BACKENDS, drifting_score, 500)
    assert not f.passed and [r["backend"] for r in f.rows] == [drifted]
    ap = f.rows[0]["mAP50_95"]
    assert ap < 0.9
    assert f"{drifted}: mAP50_95 = {ap!r}" in f.description
    assert "the scorer sees other image or category ids" in f.description


def test_no_box_left_to_score_warns() -> None:
    f = sanity.ground_truth_scores_perfect("ds", _gt([0], boxes_per_image=4), BACKENDS, scoring.score, 3)
    assert not f.passed and f.severity == "WARN"


def _scores_one(gt: dict[str, Any], dets: list[dict[str, Any]], backend: str) -> bool:
    try:
        return abs(scoring.score(gt, dets, backend=backend).headline - 1.0) <= sanity.AP_TOLERANCE
    except Exception:  # noqa: BLE001 - a backend that cannot score the split does not score 1.0
        return False


def test_stored_test_ids_a_backend_collapses_fail_the_dataset_check(instance, bench_home: Path,
                                                                           tmp_path: Path) -> None:
    assert _import(instance, "ds", broken("valid_base", tmp_path)).success
    assert _check(instance, ["rf100vl", "dataset"], "ground_truth_scores_perfect", "ds")[0] is True

    rec = load_record(bench_home / "datasets", "ds")
    ann = rec.path / "test" / "_annotations.coco.json"
    doc = json.loads(ann.read_text())
    shift = {img["id"]: 2**53 + n for n, img in enumerate(doc["images"])}  # distinct 64-bit ids, one double
    for img in doc["images"]:
        img["id"] = shift[img["id"]]
    for a in doc["annotations"]:
        a["image_id"] = shift[a["image_id"]]
    ann.write_text(json.dumps(doc))
    # Which backends read these ids as the split holds them, asked of the scorer directly: pycocotools (Python
    # dicts) does; faster-coco-eval (ids as doubles: 2**53 and 2**53 + 1 are one image) cannot score it.
    dets = sanity.ground_truth_as_predictions(doc, 500)[1]
    shifted = {b for b in BACKENDS if not _scores_one(doc, dets, b)}
    assert shifted and "reference" not in shifted

    outcome = run_job(instance, dataset_job, partition_key="ds", checks_only=True)
    [error] = [e for e in outcome.errors if "ground_truth_scores_perfect" in e]
    assert f"does not score mAP50_95 1.0 on {len(shifted)} of {len(BACKENDS)} backend(s)" in error, error
    assert all(b in error for b in shifted) and "reference" not in error, error
    assert "image id 9.0072e+15" in error  # the id the backend saw: both split ids as one double
    assert _check(instance, ["rf100vl", "dataset"], "ground_truth_scores_perfect", "ds")[0] is False


# ---------------------------------------------------------------------------------------------
# predicted_classes_exist


def test_predicted_classes_branches() -> None:
    cats = [{"id": 0, "name": "cat"}, {"id": 1, "name": "dog"}]
    dets = [{"image_id": 0, "category_id": c, "bbox": [0, 0, 1, 1], "score": 0.5} for c in (0, 1, 1, 7, 7, 7, "1")]
    f = sanity.predicted_classes_exist("m/ds", dets, cats)
    assert not f.passed
    assert f.rows == [{"category_id": 7, "detections": 3}, {"category_id": "'1'", "detections": 1}]
    assert "4 of 7 detections name 2 category id(s)" in f.description and "[0, 1]" in f.description
    assert sanity.predicted_classes_exist("m/ds", dets[:3], cats).passed
    assert sanity.predicted_classes_exist("m/ds", [], cats).passed
    assert not sanity.predicted_classes_exist("m/ds", {"not": "a list"}, cats).passed


def _write_predictions(home: Path, ds: str, version: str, dets: list[dict[str, Any]]) -> Path:
    """The files the predictions asset leaves: the gzip detections, their meta and the CURRENT pointer."""
    from bench_assets.rf100vl.scoring.eval_store import current_predictions_pointer, predictions_path

    fp = "f" * 64
    out = predictions_path(home, MODEL, ds, fp)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(json.dumps(dets).encode(), mtime=0))
    atomic_write_json(out.with_name(f"{fp[:16]}.predictions.meta.json"),
                      {"fingerprint": fp, "inputs": {"dataset_version": version}})
    current_predictions_pointer(home, MODEL, ds).write_text(fp + "\n")
    return out


def test_predictions_file_with_an_unknown_category_fails_its_check(instance, bench_home: Path,
                                                                    tmp_path: Path) -> None:
    assert _import(instance, "ds", broken("valid_base", tmp_path)).success
    register_model_partition(instance, MODEL)
    rec = load_record(bench_home / "datasets", "ds")
    test = json.loads((rec.path / "test" / "_annotations.coco.json").read_text())
    dets = sanity.ground_truth_as_predictions(test, 500)[1]
    path = _write_predictions(bench_home, "ds", rec.version, dets)
    compute_scores(bench_home, MODEL, "ds", current_predictions_meta(bench_home, MODEL, "ds"))  # and its score
    assert run_job(instance, eval_job, partition_key=_key("ds"), checks_only=True).success
    assert _check(instance, ["rf100vl", "predictions"], "predicted_classes_exist", str(_key("ds")))[0] is True

    edited = [*dets, {**dets[0], "category_id": 7}, {**dets[1], "category_id": 7}]
    path.write_bytes(gzip.compress(json.dumps(edited).encode(), mtime=0))
    outcome = run_job(instance, eval_job, partition_key=_key("ds"), checks_only=True)
    [error] = outcome.errors
    known = sorted(c["id"] for c in test["categories"])
    assert error == (f"check predicted_classes_exist failed on rf100vl/predictions: yolo9-t/ds: 2 of {len(edited)} "
                     f"detections name 1 category id(s) the test split does not have: 7 (2); the test split's "
                     f"category ids are {known}")
