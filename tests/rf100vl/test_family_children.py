"""The training and prediction children across LibreYOLO's families: what each family's trainer accepts, its
no-augmentation tail, the reseed reaching every epoch loop, the class guard, inverted boxes, the box-loss check per
family kind, and one family with its own epoch loop checked end to end (`bench models check`'s three steps)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench_assets.rf100vl.scoring.sanity import box_loss_key, labels_reached_loss
from bench_assets.rf100vl.training.child.predict import finalize_detections

# result.json `epochs[].losses` keys as each family's trainer records them (1-epoch runs on mini-tiny, libreyolo 1.6.0)
LOSSES = {
    "yolo9": {"box": 2.1, "cls": 3.0, "dfl": 1.9},
    "yolox": {"cls": 1.35, "iou": 4.47, "l1": 0.0, "obj": 5.49},
    "yolonas": {"cls": 0.94, "dfl": 1.48, "iou": 1.75},
    "dfine": {"bbox": 21.5, "ddf": 2.3e-07, "fgl": 3.37, "giou": 14.2, "mask_bce": 0.0, "mask_dice": 0.0, "vfl": 4.85},
    "deimv2": {"bbox": 21.45, "ddf": 0.0, "fgl": 0.0, "giou": 14.48, "mal": 5.05},
    "rfdetr": {"bbox": 3.29, "ce": 0.24, "giou": 3.72},
}
BOX_KEY = {"yolo9": "box", "yolox": "iou", "yolonas": "iou", "dfine": "giou", "deimv2": "giou", "rfdetr": "giou"}


@pytest.mark.parametrize("family", sorted(LOSSES))
def test_the_box_loss_check_reads_each_family_kinds_box_term_and_catches_a_planted_zero(family: str) -> None:
    healthy = [{"epoch": e, "losses": LOSSES[family]} for e in (1, 2)]
    assert box_loss_key(healthy) == BOX_KEY[family]
    assert labels_reached_loss("p", "d", healthy, 40, 160, 30.0).passed
    key = BOX_KEY[family]
    planted = [{"epoch": e, "losses": {**LOSSES[family], key: 2e-5}} for e in (1, 2)]  # no box reached the loss
    finding = labels_reached_loss("p", "d", planted, 40, 160, 30.0)
    assert not finding.passed and f"the box loss ({key}) stayed below 0.001 on all 2 epochs" in finding.description


def test_an_inverted_box_is_written_with_that_side_zero_and_counted() -> None:
    raw = [{"image_id": 1, "category_id": 0, "bbox": [0.03, 0.02, -0.01, -0.004], "score": 0.2},
           {"image_id": 1, "category_id": 0, "bbox": [5.0, 6.0, 7.123, 8.0], "score": 0.9}]
    dets, inverted = finalize_detections(raw, {1}, {0}, 500)
    assert inverted == 1
    assert [d["bbox"] for d in dets] == [[5.0, 6.0, 7.12, 8.0], [0.03, 0.02, 0.0, 0.0]]
    assert finalize_detections(raw[1:], {1}, {0}, 500)[1] == 0


pytestmark_libreyolo = pytest.mark.integration


@pytest.fixture(scope="module")
def libreyolo_classes() -> dict[str, type]:
    from bench_assets.rf100vl.training.child.common import model_class

    return {f: model_class(f) for f in ("yolo9", "yolox", "dfine", "ec", "deimv2", "rtdetr", "yolonas", "rfdetr")}


@pytestmark_libreyolo
def test_override_keys_come_from_the_trainers_own_config_class(libreyolo_classes: dict[str, type]) -> None:
    """`TRAIN_CONFIG` is None on LibreDFINE, LibreEC and LibreYOLONAS; their trainers' config classes are real."""
    from bench_assets.rf100vl.training.child.train import allowed_override_keys

    for family in ("dfine", "ec", "yolonas"):
        assert getattr(libreyolo_classes[family], "TRAIN_CONFIG", None) is None
        assert {"optimizer", "mosaic_prob", "no_aug_epochs", "weight_decay"} <= allowed_override_keys(
            libreyolo_classes[family]), family
    assert "backbone_lr_mult" in allowed_override_keys(libreyolo_classes["dfine"])
    assert "no_such_key" not in allowed_override_keys(libreyolo_classes["dfine"])


@pytestmark_libreyolo
def test_each_family_keeps_its_own_no_augmentation_tail_cut_to_a_quarter_of_short_runs(
        libreyolo_classes: dict[str, type]) -> None:
    from bench_assets.rf100vl.training.child.train import default_no_aug_epochs

    got = {f: (default_no_aug_epochs(libreyolo_classes[f], 100), default_no_aug_epochs(libreyolo_classes[f], 20))
           for f in ("yolo9", "yolox", "dfine", "ec", "deimv2", "rtdetr", "yolonas", "rfdetr")}
    assert got == {"yolo9": (15, 5), "yolox": (15, 5), "dfine": (4, 4), "ec": (4, 4), "deimv2": (12, 5),
                   "rtdetr": (0, 0), "yolonas": (0, 0), "rfdetr": (0, 0)}


@pytestmark_libreyolo
def test_the_reseed_reaches_every_epoch_loop_of_the_family(libreyolo_classes: dict[str, type]) -> None:
    from libreyolo.training.trainer import BaseTrainer

    from bench_assets.rf100vl.training.child.train import _epoch_loops, family_trainer

    loops = {f: [c.__name__ for c in _epoch_loops(family_trainer(libreyolo_classes[f])[0])]
             for f in ("yolo9", "dfine", "ec", "deimv2")}
    assert loops == {"yolo9": ["BaseTrainer"], "dfine": ["DFINETrainer", "BaseTrainer"],
                     "ec": ["DFINETrainer", "BaseTrainer"], "deimv2": ["DEIMTrainer", "BaseTrainer"]}
    assert BaseTrainer in family_trainer(libreyolo_classes["rfdetr"])[0].__mro__


@pytestmark_libreyolo
def test_the_class_guard_drops_a_label_outside_the_models_classes_before_it_becomes_a_category(
        libreyolo_classes: dict[str, type], monkeypatch: pytest.MonkeyPatch) -> None:
    """RF-DETR's background column (label == num_classes) was written as category id `num_classes` by LibreYOLO's
    `label_to_category_id.get(label, label)`: with split ids 1..n that is the last real class."""
    import torch
    from libreyolo.validation.coco_evaluator import COCOEvaluator

    from bench_assets.rf100vl.training.child import common

    monkeypatch.setattr(COCOEvaluator, "update", COCOEvaluator.update)  # restored after the test
    monkeypatch.setitem(common.DROPPED_OUT_OF_RANGE, "detections", 0)
    predictions = {"boxes": torch.tensor([[0, 0, 4, 4], [1, 1, 5, 5], [2, 2, 6, 6]], dtype=torch.float32),
                   "scores": torch.tensor([0.9, 0.8, 0.7]), "classes": torch.tensor([0, 2, 1])}
    unguarded = COCOEvaluator(None, label_to_category_id={0: 1, 1: 2})
    unguarded.update(predictions, image_id=7)
    assert [r["category_id"] for r in unguarded.results] == [1, 2, 2]  # the background became class 2

    common.install_class_guard(2)
    common.install_class_guard(2)  # idempotent: not wrapped twice
    guarded = COCOEvaluator(None, label_to_category_id={0: 1, 1: 2})
    guarded.update(predictions, image_id=7)
    assert [(r["category_id"], r["score"]) for r in guarded.results] == [(1, pytest.approx(0.9)),
                                                                         (2, pytest.approx(0.7))]
    assert common.DROPPED_OUT_OF_RANGE["detections"] == 1
    plain = COCOEvaluator(None)
    plain.update({k: np.asarray(v) for k, v in predictions.items()}, image_id=7)  # no mapping: by class count
    assert [r["category_id"] for r in plain.results] == [0, 1]


# One family per trainer that replaces BaseTrainer's epoch loop: DEIMTrainer (deim, deimv2) and DFINETrainer (dfine,
# and ec through ECTrainer); yolo9's BaseTrainer loop is killed and resumed in test_children.py and test_campaign.py.
# `make family-check` runs every family with a smoke recipe.
@pytestmark_libreyolo
@pytest.mark.parametrize(("key", "imgsz"), [("deimv2-atto", 160), ("dfine-n", 256)])
def test_a_family_with_its_own_epoch_loop_resumes_bit_for_bit_and_predicts(key: str, imgsz: int,
                                                                           tmp_path: Path) -> None:
    """`bench models check`'s three steps: train two epochs; kill after epoch 1 and resume, equal to the
    uninterrupted run bit for bit; predict. deimv2 failed with 427 differing tensors before the resumed LR got its
    per-group multipliers back."""
    from bench_assets.rf100vl.training.child.family_check import check_models

    seen: list[tuple[str, int]] = []
    [result] = check_models([key], tmp_path, lambda k, size: seen.append((k, size)))
    assert seen == [(key, imgsz)]  # the smoke recipe's size
    assert [len(json.loads((tmp_path / "mini-tiny-trimmed" / s / "_annotations.coco.json").read_text())["images"])
            for s in ("train", "valid", "test")] == [4, 2, 2]
    assert result["ok"], result
    assert result["resumed_from_epoch"] == 2 and result["differing_tensors"] == 0
    assert "giou" in result["losses"] and result["detections"] > 0


def test_stack_problems_name_a_train_eval_mismatch_and_a_recipe_eps_it_breaks() -> None:
    from bench_assets.rf100vl.training.invariants import stack_problems

    assert stack_problems({"train_bn_eps": [0.001], "eval_bn_eps": [0.001]}, 0.001) == []
    assert stack_problems({"train_bn_eps": [], "eval_bn_eps": []}, None) == []  # RF-DETR has no BatchNorm
    assert stack_problems({"train_bn_eps": [1e-05], "eval_bn_eps": [0.001]}, None) == [
        "BatchNorm eps differs between the model trained ([1e-05]) and the model the predictions are made with "
        "([0.001]): scores would not be of the trained model"]
    assert stack_problems({"train_bn_eps": [0.001], "eval_bn_eps": [0.001]}, 1e-05) == [
        "BatchNorm eps of the model is [0.001], the recipe's invariants.batchnorm_eps is 1e-05"]


@pytestmark_libreyolo
def test_a_run_whose_model_breaks_the_recipes_batchnorm_eps_fails_before_the_first_epoch(tmp_path: Path) -> None:
    """The campaign guide's costliest bug, planted: the recipe pins BatchNorm eps 1e-5 for yolox-n, whose LibreYOLO
    build uses 1e-3. The child refuses before training (no checkpoint, the reason in result.json)."""
    import subprocess
    import sys

    from bench_assets.rf100vl.datasets.sources import SourceSpec
    from bench_assets.rf100vl.datasets.store import materialize_dataset
    from bench_assets.rf100vl.training.specs import TrainResult
    from tests.conftest import REPO

    home = tmp_path / "home"
    ds = materialize_dataset(home, "mini-tiny", SourceSpec(kind="mini"), home / "cache").path
    run = tmp_path / "run"
    spec = dict(family="yolox", size="n", num_classes=2, class_names=["disc", "block"], dataset_dir=str(ds),
                run_dir=str(run), epochs=1, imgsz=128, physical_batch=4, effective_batch=4, workers=0,
                batchnorm_eps=1e-05)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-m", "bench_assets.rf100vl.training.child.train",
                           str(tmp_path / "spec.json")], cwd=REPO, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(tmp_path)})
    result = TrainResult.model_validate_json((run / "result.json").read_text())
    assert proc.returncode == 1 and result.status == "failed" and result.epochs_done == 0
    assert result.message == ("StackInvariantBroken: stack invariant broken before the first epoch: BatchNorm eps of "
                              "the model is [0.001], the recipe's invariants.batchnorm_eps is 1e-05")
    assert result.stack == {"train_bn_eps": [0.001], "eval_bn_eps": [0.001]}
    assert not (run / "weights" / "last.pt").exists()
