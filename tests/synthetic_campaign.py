"""A synthetic campaign on disk: the artifacts a real one leaves (dataset versions, run stats, scores,
predictions, checkpoints, the model registry), with made-up numbers and tiny files.

Used by the warehouse/check tests (plant a defect in a clean campaign, see the check fail) and by the
20 models x 100 datasets speed benchmark. Deterministic for a seed. Hashes are real: every recorded
sha256 is the hash of the file written, so provenance checks pass on clean data.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.datasets.catalog import load_catalog, suite_members
from bench_assets.rf100vl.scoring.eval_store import (
    CONF,
    MAX_DET,
    NMS_IOU,
    fingerprint,
    scoring_code_sha256,
    scoring_engines,
)
from bench_assets.rf100vl.training.recipes import PROTOCOL_VERSION
from bench_assets.rf100vl.training.runplan import AMP_DTYPES

METRICS = ("mAP50_95", "mAP50", "mAP75", "mAP_small", "mAP_medium", "mAP_large", "AR1", "AR10", "AR100",
           "AR_small", "AR_medium", "AR_large", "AR_max_det")
SIZES = ("t", "s", "m", "c")


@dataclass(frozen=True)
class SyntheticModel:
    key: str
    family: str
    size: str
    skill: float  # mean mAP50-95 the model lands near


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_recipe(home: Path, family: str) -> Path:
    """A protocol-conformant recipe for a synthetic family (the repo ships yolo9 and yolox only)."""
    src = json.loads((Path(__file__).resolve().parents[1] / "recipes/rf100vl/yolo9.json").read_text())
    src["family"] = family
    path = home / "recipes" / f"{family}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(src, indent=2))
    return path


def models_for(n: int) -> list[SyntheticModel]:
    """n models: families of four sizes, adjacent sizes ~3 points apart (a healthy campaign)."""
    out = []
    for i in range(n):
        family, size = f"syn{chr(ord('a') + i // len(SIZES))}", SIZES[i % len(SIZES)]
        out.append(SyntheticModel(f"{family}-{size}", family, size, 0.40 + 0.03 * (i % len(SIZES)) + 0.01 * (i // 4)))
    return out


def write_dataset(home: Path, name: str, rng: random.Random) -> str:
    entry = load_catalog().get(name)
    test_images = entry.test_images if entry else rng.randint(10, 50)
    train_images = max(8, (entry.num_images if entry else 100) - 2 * test_images)
    counts = {"train": train_images, "valid": test_images, "test": test_images}
    lock_splits, man_splits = {}, {}
    for split, n in counts.items():
        boxes = n * rng.randint(1, 30)
        lock_splits[split] = {"annotations_sha256": _sha(f"{name}/{split}/ann".encode()),
                              "image_ids_sha256": _sha(f"{name}/{split}/ids".encode()),
                              "num_images": n, "num_files": n, "bytes": n * 50_000}
        man_splits[split] = {"annotations": boxes, "boxes_per_image_max": boxes // n + 5,
                             "boxes_per_image_mean": round(boxes / n, 3), "classes_present": 3,
                             "image_bytes": n * 50_000, "images": n, "images_without_boxes": 0,
                             "megapixels_max": 0.4, "megapixels_mean": 0.3}
    version = _sha(json.dumps(lock_splits, sort_keys=True).encode())[:12]
    # Catalogue datasets as the rf100vl package path stores them: the locked Roboflow project and version.
    source = {"kind": "rf100vl" if entry else "local", "ref": f"/synthetic/{name}", "revision": None}
    roboflow = {"project_name": entry.project_name, "version_id": entry.version_id} if entry else None
    vdir = home / "datasets" / name / version
    atomic_write_json(vdir / "lock.json", {"dataset": name, "format": "bench.dataset-lock.v1", "source": source,
                                           "source_version": None, "roboflow": roboflow, "splits": lock_splits,
                                           "version": version})
    n_cls = entry.num_classes if entry else 3
    atomic_write_json(vdir / "dataset.json", {
        "catalog": None, "classes": [f"c{i}" for i in range(n_cls)], "created_at": "2026-11-30T00:00:00+00:00",
        "dataset": name, "dropped_junk": [], "num_classes": n_cls, "source": source, "source_version": None,
        "normalisations": {"annotation_ids_renumbered": {s: 0 for s in counts}, "boxes_clipped": {s: 0 for s in counts},
                           "dropped_placeholder_categories": []},
        "splits": man_splits})
    (home / "datasets" / name / "CURRENT").write_text(version)
    return version


def write_partition(home: Path, model: SyntheticModel, recipe: Path, dataset: str, version: str,
                    test_ap: float, valid_ap: float, rng: random.Random) -> None:
    """One finished dataset x model partition: run dir with stats and best.pt, predictions, score."""
    recipe_sha = _sha(recipe.read_bytes())
    signature = _sha(f"{model.key}/{dataset}/{version}/{recipe_sha}".encode())
    run_dir = home / "runs" / model.key / dataset / signature[:16]
    weights = rng.randbytes(256)
    best = run_dir / "weights" / "best.pt"
    best.parent.mkdir(parents=True, exist_ok=True)
    best.write_bytes(weights)
    epochs = 100
    best_epoch = rng.randint(40, 100)
    lock = json.loads((home / "datasets" / dataset / version / "lock.json").read_text())
    stats = {
        "model": model.key, "dataset": dataset, "dataset_version": version, "run_signature": signature,
        "family": model.family, "variant": model.size, "run_variant": "standard",
        "recipe": {"file": str(recipe), "sha256": recipe_sha, "conformant": True, "nonconformities": []},
        "epochs": epochs, "epochs_done": epochs, "best_epoch": best_epoch, "valid_mAP50": min(1.0, valid_ap * 1.4),
        "valid_mAP50_95": valid_ap, "batch": {"physical": 16, "effective": 16, "accumulation": 1},
        "signature_fields": {"imgsz": 640, "protocol_version": PROTOCOL_VERSION},
        "precision": {"amp": True, "amp_dtype": AMP_DTYPES["bf16"]},  # as runplan writes it for a bf16 recipe
        "wall_seconds": rng.uniform(600, 7200), "resumed": False,
        "data": {"train_images": lock["splits"]["train"]["num_images"], "max_annotations_per_image": 30,
                 "num_classes": 3},
        "device": {"device": "cuda", "lane": 0}, "capabilities": {"libreyolo": "1.6.0", "torch": "2.14.1"},
        "best_checkpoint": str(best), "best_checkpoint_sha256": _sha(weights),
        "started": "2026-11-30T00:00:00+00:00", "finished": "2026-11-30T01:00:00+00:00",
    }
    atomic_write_json(run_dir / "stats.json", stats, indent=None)
    atomic_write_json(run_dir / "result.json", {"epochs": [
        {"epoch": e, "train_loss": 5.0 / e, "valid_mAP50": None, "valid_mAP50_95": valid_ap * min(1, e / best_epoch),
         "seconds": 30.0, "lr": 0.01} for e in range(1, epochs + 1)]}, indent=None)
    (run_dir.parent / "CURRENT").write_text(run_dir.name)

    edir = home / "eval" / model.key / dataset
    edir.mkdir(parents=True, exist_ok=True)
    pin = {"kind": "predictions", "dataset": dataset, "dataset_version": version, "model": model.key,
           "split": "test", "image_ids_sha256": lock["splits"]["test"]["image_ids_sha256"],
           "weights_sha256": _sha(weights), "recipe_sha256": recipe_sha, "run_signature": signature,
           "conf": CONF, "iou": NMS_IOU, "max_det": MAX_DET, "imgsz": 640}
    pfp = fingerprint(pin)
    pred_bytes = gzip.compress(json.dumps([{"image_id": 1, "category_id": 0, "bbox": [1, 2, 3, 4],
                                            "score": 0.5}]).encode(), mtime=0)
    pred_file = edir / f"{pfp[:16]}.predictions.json.gz"
    pred_file.write_bytes(pred_bytes)
    atomic_write_json(edir / f"{pfp[:16]}.predictions.meta.json",
                      {"fingerprint": pfp, "inputs": pin, "predictions_sha256": _sha(pred_bytes)})
    (edir / "CURRENT.predictions").write_text(pfp)
    # what the prediction child writes beside the predictions, with its inference-cost measurement
    ms = rng.uniform(8, 30)
    atomic_write_json(edir / f"{pfp[:16]}.predictions.json.result.json", {
        "status": "done", "images": lock["splits"]["test"]["num_images"], "detections": 1000,
        "out_path": str(pred_file), "wall_seconds": 3.0, "message": "",
        "inference": {"batch_size": 1, "num_images": min(50, lock["splits"]["test"]["num_images"]),
                      "total_ms": {"mean": ms, "std": ms / 10, "p50": ms * 0.98, "p95": ms * 1.2, "p99": ms * 1.3},
                      "params_millions": 2.0 + model.skill, "gflops": 7.5, "peak_ram_mb": 900.0,
                      "peak_vram_mb": 1500.0, "input_size": 640, "device": "gpu",
                      "hardware": {"cpu": "Synthetic CPU", "cpu_cores": 16, "ram_gb": 128, "gpu": "NVIDIA H200",
                                   "gpu_memory_gb": 139.8, "cuda_version": "12.8", "driver_version": None}}})
    metrics = {m: round(min(1.0, test_ap * (1.0 + 0.3 * k / len(METRICS))), 6) for k, m in enumerate(METRICS)}
    metrics["mAP50_95"] = test_ap
    metrics["mAP_large"] = None if rng.random() < 0.3 else metrics["mAP_large"]  # no large objects: COCO's -1
    sin = {"kind": "scores", "predictions_fingerprint": pfp, "predictions_sha256": _sha(pred_bytes),
           "gt_sha256": lock["splits"]["test"]["annotations_sha256"], "max_det": MAX_DET,
           "scoring_code_sha256": scoring_code_sha256(), "engines": scoring_engines()}
    sfp = fingerprint(sin)
    atomic_write_json(edir / f"{sfp[:16]}.score.json", {
        "fingerprint": sfp, "inputs": sin, "dataset": dataset, "model": model.key, "dataset_version": version,
        "split": "test", "metrics": metrics, "backend": "fast", "reference_metrics": metrics,
        "parity": {"differing": [], "identical": 13, "max_abs_deviation": 0.0, "tol": 1e-6, "total": 13},
        "num_images": lock["splits"]["test"]["num_images"], "num_gt": 100, "num_dets": 1000,
        "seconds": {"fast": {}, "reference": {}}, "prediction_inputs": pin}, indent=None)
    (edir / "CURRENT.score").write_text(sfp)


def make_campaign(home: Path, n_models: int = 4, n_datasets: int = 8, seed: int = 0,
                  suite: str = "rf100vl") -> list[SyntheticModel]:
    """Write a finished, healthy campaign of `n_models` over the first `n_datasets` of `suite`'s datasets.

    Models are registered against `suite` only when all its datasets are included; otherwise against
    the explicit dataset list (so coverage is complete on clean data)."""
    from bench_assets.rf100vl.training.models import ModelEntry, models_dir

    rng = random.Random(seed)
    names = sorted(suite_members(suite))[:n_datasets]
    versions = {name: write_dataset(home, name, rng) for name in names}
    difficulty = {name: rng.uniform(-0.25, 0.25) for name in names}
    models = models_for(n_models)
    recipes = {m.family: write_recipe(home, m.family) for m in models}
    full = len(names) == len(suite_members(suite))
    for m in models:
        atomic_write_json(models_dir(home) / f"{m.key}.json", ModelEntry(
            model=m.key, recipe=str(recipes[m.family]), suite=suite if full else None,
            datasets=[] if full else names).model_dump())
        for name in names:
            test_ap = round(min(0.95, max(0.02, m.skill + difficulty[name] + rng.gauss(0, 0.01))), 6)
            valid_ap = round(min(0.95, max(0.02, test_ap + rng.gauss(0, 0.02))), 6)
            write_partition(home, m, recipes[m.family], name, versions[name], test_ap, valid_ap, rng)
    return models
