"""How long each partition of a campaign takes, for `bench plan` and `bench status`'s ETA (pure apart from reading
stored records; the scheduling itself is `lane_plan.py`).

A partition's time = its images outside `test` x the recipe's epochs x seconds per image-epoch + a fixed part
(predict, score, start-up). Seconds per image-epoch come, in order of preference, from:

1. **measured**: the median over this model's finished runs on the same kind of lane, GPU or CPU (stats.json's
   wall seconds / (epochs done x the dataset's images outside test));
2. **measured, another model**: the median over every finished run on that kind of lane, when this model has
   none;
3. **the documented model** (`DEFAULT_S_PER_IMAGE_EPOCH`): 0.01 s per image-epoch on a GPU lane, 0.3 s on a CPU
   lane. These are stated assumptions (the order of a small YOLO at 640 px), not measurements; the plan says
   which source it used.

Sharing a GPU (`--jobs-per-gpu K`): K jobs on one GPU each run slower; the model takes a GPU's throughput with K
jobs as K / (1 + (K - 1) x SHARING_COST) of one job's (SHARING_COST 0.6 by default: a second job adds 25% to the
GPU's throughput, a stated assumption; pass a measured value with --sharing-cost).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from bench_assets.rf100vl.training.run_store import finished_run_dirs, stats_path

DEFAULT_S_PER_IMAGE_EPOCH = {"gpu": 0.01, "cpu": 0.3}
FIXED_S = 60.0  # predict + score + step start-up per partition (stated assumption)
SHARING_COST = 0.6


@dataclass(frozen=True)
class CostModel:
    s_per_image_epoch: float
    source: str  # "measured (N runs of M)", "measured (N runs, other models)" or "documented model (gpu|cpu)"
    epochs: int
    fixed_s: float = FIXED_S
    slowdown: float = 1.0  # per-job slowdown from sharing a GPU

    def seconds(self, images: int, epochs_left: int | None = None) -> float:
        epochs = self.epochs if epochs_left is None else epochs_left
        return images * epochs * self.s_per_image_epoch * self.slowdown + self.fixed_s


def sharing_slowdown(jobs_per_gpu: int, cost: float = SHARING_COST) -> float:
    """How much slower each of K jobs on one GPU runs: K / throughput(K), throughput(K) = K / (1 + (K-1) cost)."""
    if jobs_per_gpu < 1:
        raise ValueError("jobs per GPU must be >= 1")
    return 1 + (jobs_per_gpu - 1) * cost


def run_rates(home: Path, device: str = "gpu") -> dict[str, list[float]]:
    """model -> seconds per image-epoch of each finished run on a `device` ("gpu" or "cpu") lane under home/runs
    (its stats.json's wall time over epochs done x the dataset's images outside test)."""
    out: dict[str, list[float]] = {}
    for run_dir in finished_run_dirs(home):
        try:
            st = json.loads(stats_path(run_dir).read_text())
            if ("cpu" if st["device"]["device"] == "cpu" else "gpu") != device:
                continue
            images = partition_images(home, [st["dataset"]])[st["dataset"]]
            done = int(st["epochs_done"])
            wall = float(st["wall_seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if images > 0 and done > 0 and wall > 0:
            out.setdefault(st["model"], []).append(wall / (done * images))
    return out


def cost_model(home: Path, model: str, epochs: int, device: str = "gpu", jobs_per_gpu: int = 1,
               sharing_cost: float = SHARING_COST) -> CostModel:
    rates = run_rates(home, device)
    slowdown = sharing_slowdown(jobs_per_gpu, sharing_cost) if device == "gpu" else 1.0
    if rates.get(model):
        return CostModel(median(rates[model]), f"measured ({len(rates[model])} runs of {model})", epochs,
                         slowdown=slowdown)
    every = [r for rs in rates.values() for r in rs]
    if every:
        return CostModel(median(every), f"measured ({len(every)} runs, other models)", epochs, slowdown=slowdown)
    return CostModel(DEFAULT_S_PER_IMAGE_EPOCH[device], f"documented model ({device})", epochs, slowdown=slowdown)


def partition_images(home: Path, datasets: list[str]) -> dict[str, int]:
    """Images outside `test` per dataset: the stored version's manifest, else the catalogue's (or the mini
    generator's) counts."""
    from bench_assets.rf100vl.datasets.catalog import catalog_entry
    from bench_assets.rf100vl.datasets.mini import MINI_DATASETS
    from bench_assets.rf100vl.datasets.store import load_record

    out = {}
    for name in datasets:
        rec = load_record(home / "datasets", name)
        if rec is not None:
            splits = rec.manifest["splits"]
            out[name] = sum(int(s["images"]) for k, s in splits.items() if k != "test")
            continue
        entry = catalog_entry(name)
        if entry is None and name in MINI_DATASETS:  # the embedded suite, not generated yet
            out[name] = sum(n for split, n in MINI_DATASETS[name].splits.items() if split != "test")
            continue
        out[name] = (entry.num_images - entry.test_images) if entry is not None else 0
    return out


def durations(images: Mapping[str, int], model: CostModel) -> dict[str, float]:
    return {name: model.seconds(n) for name, n in images.items()}
