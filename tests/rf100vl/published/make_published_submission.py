"""Writes tests/rf100vl/published/yolov9-t.published.json: a leaderboard entry exactly as the existing harness
(`va-bench rf100vl-campaign`, harness 2.1.0) publishes them, field by field from the published shape
(docs/report.md, "The published shape"; /work/shared/formats/va_submission_v1.md): `schema_version`, Roboflow's
integer `dataset_version`, the versions lock, the domain manifest, the identity schemes, the harness's own paths
(never opened), no keys of ours. Deterministic: `python tests/rf100vl/published/make_published_submission.py`."""

from __future__ import annotations

import csv
import hashlib
import json
import random
from pathlib import Path
from statistics import fmean

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = HERE / "yolov9-t.published.json"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def canonical(obj: object) -> str:
    return sha(json.dumps(obj, sort_keys=True, separators=(",", ":")))


def main() -> None:
    rng = random.Random(2026)
    data = REPO / "bench_assets" / "rf100vl" / "data"
    catalog = {r["name"]: r for r in csv.DictReader((data / "rf100vl_datasets.csv").open())}
    versions = {r["dataset"]: r for r in csv.DictReader((data / "rf100vl_versions.csv").open())}
    entries, ident, weights = [], [], []
    for name in sorted(catalog):
        n_img, vid = int(catalog[name]["test_images"]), int(versions[name]["version_id"])
        m5095 = round(rng.uniform(0.15, 0.75), 4)
        wsha, isha = sha(f"w/{name}"), sha(f"ids/{name}")
        entries.append({
            "dataset": name, "num_images": n_img, "num_classes": int(catalog[name]["num_classes"]),
            "dataset_version": vid, "weights": f"/data/runs/yolov9t/{name}/weights/best.pt",
            "weights_sha256": wsha, "result_file": f"/data/runs/yolov9t/{name}/result.json",
            "predictions_file": f"/data/runs/yolov9t/{name}/predictions.json", "resumed_from_cache": rng.random() < 0.1,
            "wall_seconds": round(rng.uniform(300, 9000), 1), "mAP_50": round(min(1.0, m5095 * 1.45), 4),
            "mAP_50_95": m5095, "mAP_75": round(m5095 * 1.05, 4), "AR100": round(min(1.0, m5095 * 1.3), 4),
            "AR_max_det": round(min(1.0, m5095 * 1.32), 4)})
        ident.append({"dataset": name, "num_images": n_img, "image_id_sha256": isha, "version_id": vid})
        weights.append({"dataset": name, "file": f"/data/runs/yolov9t/{name}/weights/best.pt", "sha256": wsha,
                        "source": "per-dataset-finetuned"})

    def mean(key: str) -> float:
        return fmean(e[key] for e in entries)

    versions_sha = sha("versions file as the harness locked it")
    n_images = sum(e["num_images"] for e in entries)
    doc = {
        "schema_version": "va.submission.v1",
        "submission_id": "yolov9t-rf100_vl-pytorch-cuda-nvidia-h100-80gb-hbm3-20261015T081500Z",
        "created_at": "2026-10-15T08:15:00Z",
        "benchmark": {"harness": "vision-analysis-benchmark", "harness_version": "2.1.0", "libreyolo_version": "1.6.0",
                      "libreyolo_commit": "5f0c2a9d", "libreyolo_dirty": False},
        "model": {"id": "yolov9t", "name": "yolov9-t", "family": "yolov9", "variant": "t", "source": "libreyolo",
                  "weights": "LibreYOLO9t.pt", "input_size": 640},
        "dataset": {"id": "rf100_vl", "split": "test", "num_images": n_images, "num_datasets": 100,
                    "num_datasets_discovered": 100, "num_datasets_selected": 100},
        "config": {"batch_size": 16, "input_size": 640, "conf": 0.001, "iou": 0.65, "max_det": 500},
        "hardware": {"gpu": "NVIDIA H100 80GB HBM3", "gpu_memory_gb": 79.6, "driver_version": "550.54.15",
                     "cuda_version": "12.4", "cpu": "AMD EPYC 9654 96-Core Processor", "cpu_cores": 192,
                     "ram_gb": 1511, "id": "nvidia-h100-80gb-hbm3"},
        "software": {"python": "3.11.9", "torch": "2.14.1", "libreyolo": "1.6.0", "libreyolo_commit": "5f0c2a9d",
                     "libreyolo_dirty": None, "onnxruntime": "not-installed", "onnx": "not-installed",
                     "tensorrt": "not-installed"},
        "accuracy": {"mAP_50_95": mean("mAP_50_95"), "mAP_50": mean("mAP_50"), "mAP_75": mean("mAP_75"),
                     "mAP_small": 0.2113, "mAP_medium": 0.3902, "mAP_large": 0.5217, "AR1": 0.3011, "AR10": 0.4902,
                     "AR100": mean("AR100"), "AR_small": 0.3312, "AR_medium": 0.5518, "AR_large": 0.6703,
                     "AR_max_det": mean("AR_max_det")},
        "timing": {"batch_size": 16, "num_images": n_images,
                   "total_ms": {"mean": 4.81, "std": 0.62, "p50": 4.7, "p95": 5.9, "p99": 6.8, "preprocess_ms": 0.9,
                                "inference_ms": 3.1, "postprocess_ms": 0.81}},
        "throughput": {"fps_mean": 207.9, "fps_p50": 212.8},
        "model_stats": {"params_millions": 2.0, "gflops": 7.7},
        "memory": {"peak_vram_mb": 2210.5, "peak_ram_mb": 5120.0},
        "metadata": {"benchmark_date": "2026-10-15", "benchmark_version": "2.1.0"},
        "eval": {"dataset": "rf100_vl", "split": "test", "numImages": n_images, "maxDets": [1, 10, 100, 500]},
        "implementation": {"provider": "libreyolo", "version": "1.6.0"},
        "runtime": {"format": "pytorch", "precision": "fp32", "provider": "cuda", "device": "gpu"},
        "repro": {
            "harness_version": "2.1.0", "harness_commit": "unknown", "harness_dirty": None,
            "protocol_version": "rf100vl.libreyolo.v1",
            "argv": ["va-bench", "rf100vl-campaign", "--model", "yolov9t"],
            "command": "va-bench rf100vl-campaign --model yolov9t",
            "dataset": {
                "id": "rf100_vl", "split": "test", "image_id_sha256": canonical(ident),
                "identity_scheme": "sha256(canonical JSON of dataset name, image count, per-dataset image-id SHA-256, "
                                   "and locked version id)",
                "datasets": ident,
                "versions": {"file": "/data/va-bench/rf100vl_versions.json", "sha256": versions_sha,
                             "schema_version": "rf100vl.versions.v1", "subset": "rf100vl",
                             "datasets": {d: {"project_name": v["project_name"], "version_id": int(v["version_id"])}
                                          for d, v in sorted(versions.items())}},
                "domain_manifest": {"file": "/data/va-bench/dataset_name_to_category.json",
                                    "sha256": sha("domain manifest"),
                                    "source": {"repository": "https://github.com/roboflow/rf100-vl",
                                               "commit": "2d6c7d1", "license": "Apache-2.0",
                                               "path": "rf100vl/assets/dataset_name_to_category.json",
                                               "canonicalization": {"Lab Imaging": "Medical", "Misc": "Other",
                                                                    "Sport": "Sports",
                                                                    "Flora/Fauna": "Flora and Fauna"}}}},
            "weights": {"file": "per-dataset checkpoints", "sha256": canonical(
                [{"dataset": w["dataset"], "sha256": w["sha256"]} for w in weights]), "source": "fine-tuned",
                        "identity_scheme": "sha256(canonical JSON of dataset name and checkpoint file SHA-256)",
                        "datasets": weights},
            "recipe": {"file": "/data/va-bench/recipes/yolov9.json", "sha256": sha("recipe"),
                       "source": "per-dataset stats.json", "dataset_count": 100}},
        "rf100vl": {
            "regime": "fine-tuned", "aggregation": "unweighted mean across datasets",
            "protocol": {"version": "rf100vl.libreyolo.v1", "nms_iou": 0.65, "max_det": 500, "expected_datasets": 100},
            "dataset_versions_sha256": versions_sha, "recipe_sha256": sha("recipe"),
            "per_dataset_results_dir": "/data/runs/yolov9t", "valid_submission": True, "invalid_reasons": [],
            "datasets": entries, "skipped_datasets": []},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
