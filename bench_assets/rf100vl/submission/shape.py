"""The blocks of a `va.submission.v1` file in the shape the published leaderboard entries have
(docs/report.md, `data/va_submission_v1.schema.json`): every block the existing harness writes, filled from
our artifacts, plus our own facts under keys of our own.

Pure functions over plain dicts (no Dagster, no torch): `submission.py` gathers the artifacts and calls them.
The two identity schemes are the published ones:

- dataset identity: sha256 of the canonical JSON (sorted keys, no spaces) of the per-dataset list
  `[{dataset, num_images, image_id_sha256, version_id}]` in dataset order;
- weights identity: sha256 of the canonical JSON of `[{dataset, sha256}]` (checkpoint file SHA-256) in dataset order.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from bench_assets.platform.fsutil import canonical_json_sha256

SCHEMA_VERSION = "va.submission.v1"
BENCHMARK_ID = "rf100_vl"
HARNESS = "bench-platform"  # we are not the published harness; the file says who produced it
VERSIONS_SCHEMA = "rf100vl.versions.v1"
DATASET_IDENTITY_SCHEME = ("sha256(canonical JSON of dataset name, image count, per-dataset image-id SHA-256, "
                           "and locked version id)")
WEIGHTS_IDENTITY_SCHEME = "sha256(canonical JSON of dataset name and checkpoint file SHA-256)"
DOMAIN_SOURCE = {"repository": "https://github.com/roboflow/rf100-vl",
                 "path": "rf100vl/assets/dataset_name_to_category.json", "license": "Apache-2.0",
                 "canonicalization": {"Lab Imaging": "Medical", "Misc": "Other", "Sport": "Sports",
                                      "Flora/Fauna": "Flora and Fauna"}}
SOFTWARE_PACKAGES = ("torch", "libreyolo", "onnxruntime", "onnx", "tensorrt")


def dataset_identity(entries: list[dict[str, Any]]) -> str:
    """The published dataset identity over `[{dataset, num_images, image_id_sha256, version_id}]`."""
    keys = ("dataset", "num_images", "image_id_sha256", "version_id")
    return canonical_json_sha256([{k: e[k] for k in keys} for e in sorted(entries, key=lambda e: e["dataset"])])


def weights_identity(entries: list[dict[str, Any]]) -> str:
    """The published weights identity over `[{dataset, sha256}]`."""
    return canonical_json_sha256([{"dataset": e["dataset"], "sha256": e["sha256"]}
                             for e in sorted(entries, key=lambda e: e["dataset"])])


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def model_block(model: str, family: str, size: str, input_size: int | None,
                init_weights: tuple[str, str] | None = None) -> dict[str, Any]:
    """The published `model` block: `weights` is the file the runs fine-tuned from, as the harness writes it
    (`LibreYOLO9t.pt`); our hash of it goes under our own key, `init_weights_sha256`."""
    name, sha = init_weights or ("", "")
    weights = name or ("none (trained from scratch)" if init_weights else "mixed (see the runs' stats.json)")
    return {"id": f"{family}{size}", "name": model, "family": family, "variant": size, "source": "libreyolo",
            "weights": weights, "input_size": input_size, "init_weights_sha256": sha or None}


def hardware_block(facts: dict[str, Any]) -> dict[str, Any]:
    """The machine the predictions were timed on, from the prediction child's facts."""
    gpu = facts.get("gpu") or "none"
    return {"gpu": gpu, "gpu_memory_gb": facts.get("gpu_memory_gb"),
            "driver_version": facts.get("driver_version") or "unknown",
            "cuda_version": facts.get("cuda_version") or "none", "cpu": facts.get("cpu") or "unknown",
            "cpu_cores": facts.get("cpu_cores"), "ram_gb": facts.get("ram_gb"),
            "id": slug(gpu) if gpu != "none" else "cpu"}


def software_block(python: str, versions: dict[str, str]) -> dict[str, Any]:
    """Package versions as the published files write them ("not-installed" when absent)."""
    out = {"python": python}
    for name in SOFTWARE_PACKAGES:
        v = versions.get(name)
        out[name] = v if v and v != "not installed" else "not-installed"
    # A pip install has no commit; genuine published files write dirty as null too.
    out["libreyolo_commit"], out["libreyolo_dirty"] = "unknown", None
    return out


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def inference_blocks(costs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`timing`, `throughput`, `model_stats` and `memory` from the per-dataset inference costs the prediction
    child measured: latency statistics averaged over datasets (each dataset weighs the same, like the accuracy
    means), parameters and GFLOPs averaged (the head grows with the class count), memory peaks the maximum."""
    stat = {k: _mean([c["total_ms"][k] for c in costs]) for k in ("mean", "std", "p50", "p95", "p99")}
    vram = [c["peak_vram_mb"] for c in costs if c.get("peak_vram_mb") is not None]
    return {
        "timing": {"batch_size": 1, "num_images": sum(c["num_images"] for c in costs),
                   "total_ms": {**stat, "preprocess_ms": None, "inference_ms": None, "postprocess_ms": None}},
        "throughput": {"fps_mean": 1000.0 / stat["mean"] if stat["mean"] else None,
                       "fps_p50": 1000.0 / stat["p50"] if stat["p50"] else None},
        "model_stats": {"params_millions": _mean([c["params_millions"] for c in costs]),
                        "gflops": _mean([c["gflops"] for c in costs])},
        "memory": {"peak_vram_mb": max(vram) if vram else None,
                   "peak_ram_mb": max((c["peak_ram_mb"] for c in costs), default=None)},
    }


def runtime_block(amp_dtype: str | None, device: str) -> dict[str, Any]:
    precision = {"float16": "fp16", "bfloat16": "bf16"}.get(str(amp_dtype), "fp32") if amp_dtype else "fp32"
    gpu = device != "cpu"
    return {"format": "pytorch", "precision": precision, "provider": "cuda" if gpu else "cpu",
            "device": "gpu" if gpu else "cpu"}


def submission_id(model: dict[str, Any], runtime: dict[str, Any], hardware: dict[str, Any], created_at: str) -> str:
    stamp = re.sub(r"[-:]", "", created_at).replace(".000", "")
    return f"{model['id']}-{BENCHMARK_ID}-{runtime['format']}-{runtime['provider']}-{hardware['id']}-{stamp}"


def versions_block(file: str, sha256: str, versions: dict[str, tuple[str, int]]) -> dict[str, Any]:
    return {"file": file, "sha256": sha256, "schema_version": VERSIONS_SCHEMA, "subset": "rf100vl",
            "datasets": {d: {"project_name": p, "version_id": v} for d, (p, v) in sorted(versions.items())}}


def domain_manifest_block(file: str, sha256: str, commit: str) -> dict[str, Any]:
    return {"file": file, "sha256": sha256, "source": {**DOMAIN_SOURCE, "commit": commit}}
