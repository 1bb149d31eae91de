"""Disk a campaign will take before it starts: the datasets still to fetch, a best.pt + last.pt per partition to
train, and LibreYOLO's resized-image cache sidecars (`cache: disk`: `<image>.r<W>x<H>.npy` in each run's
`image_links/`, kept with the run), against the free space under BENCH_HOME.

Each part says where its figure came from:

- datasets: a stored version's lock (exact bytes), else the catalogue's image count x RF100-VL's mean bytes per
  image (49 GB over its 164,149 images, a documented default);
- checkpoints: the median bytes of this model's finished runs' weights (measured), else the pretrained file's
  parameter count x the bytes per parameter of a measured yolo9 checkpoint, else a documented default
  (108 MB per checkpoint of a ~9M-parameter model, two per run);
- cache: every image of the partition x the measured sidecar size at the recipe's image size (~953 KB at 640 px,
  ~660 KB at 416 px, REFERENCE.md; other sizes scale with the pixel count).

Pure apart from reading stored records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from bench_assets.rf100vl.training.preflight import CACHE_BYTES_PER_IMAGE
from bench_assets.rf100vl.training.run_store import finished_run_dirs, stats_path, weights_dir

RF100VL_BYTES = 49e9  # the whole suite's files, documented (REFERENCE.md / the campaign guide)
RF100VL_IMAGES = 164_149  # the catalogue's images over its 100 datasets
DOCUMENTED_CHECKPOINT_BYTES = 108e6  # one checkpoint of a ~9M-parameter model (the campaign guide)
CHECKPOINTS_PER_RUN = 2  # weights/best.pt and weights/last.pt
# A training checkpoint holds the model, the training model, the EMA and the optimizer state: 12 B per parameter
# (108 MB / 9 M; measured here: a yolo9-t last.pt is 33.9 MB for 2.68 M values).
BYTES_PER_PARAMETER = DOCUMENTED_CHECKPOINT_BYTES / 9e6
MARGIN_BYTES = 1 << 30


@dataclass(frozen=True)
class DatasetSize:
    images: int  # every split's images (each one gets a cache sidecar)
    stored_bytes: int | None  # the stored version's bytes; None when not fetched yet


def cache_bytes_per_image(imgsz: int) -> int:
    return CACHE_BYTES_PER_IMAGE.get(imgsz) or int(CACHE_BYTES_PER_IMAGE[640] * (imgsz / 640) ** 2)


def dataset_sizes(home: Path, datasets: list[str]) -> dict[str, DatasetSize]:
    """Images (all splits) and stored bytes per dataset: the stored version's manifest and lock, else the
    catalogue's (or the mini generator's) image count."""
    from bench_assets.rf100vl.datasets.catalog import catalog_entry
    from bench_assets.rf100vl.datasets.mini import MINI_DATASETS
    from bench_assets.rf100vl.datasets.store import load_record

    out = {}
    for name in datasets:
        rec = load_record(home / "datasets", name)
        if rec is not None:
            out[name] = DatasetSize(sum(int(s["images"]) for s in rec.manifest["splits"].values()),
                                    sum(int(s["bytes"]) for s in rec.lock["splits"].values()))
            continue
        entry = catalog_entry(name)
        if entry is None and name in MINI_DATASETS:
            out[name] = DatasetSize(sum(MINI_DATASETS[name].splits.values()), None)
            continue
        out[name] = DatasetSize(entry.num_images if entry is not None else 0, None)
    return out


def checkpoint_figure(home: Path, model: str, pretrained_params: int | None) -> tuple[float, str]:
    """(bytes per run, source) of the weights a finished run keeps."""
    sizes = []
    for run_dir in finished_run_dirs(home):
        try:
            if json.loads(stats_path(run_dir).read_text()).get("model") != model:
                continue
        except (OSError, ValueError):
            continue
        total = sum(p.stat().st_size for p in weights_dir(run_dir).glob("*.pt"))
        if total:
            sizes.append(total)
    if sizes:
        return float(median(sizes)), f"measured ({len(sizes)} finished run(s) of {model}, median)"
    if pretrained_params:
        per = pretrained_params * BYTES_PER_PARAMETER
        return (per * CHECKPOINTS_PER_RUN,
                f"estimated: {pretrained_params / 1e6:.1f} M parameters of the pretrained weights x "
                f"{BYTES_PER_PARAMETER:.0f} B per parameter per checkpoint, {CHECKPOINTS_PER_RUN} per run")
    return (DOCUMENTED_CHECKPOINT_BYTES * CHECKPOINTS_PER_RUN,
            f"documented default ({DOCUMENTED_CHECKPOINT_BYTES / 1e6:.0f} MB per checkpoint of a ~9M-parameter "
            f"model, {CHECKPOINTS_PER_RUN} per run)")


def project_campaign_disk(sizes: Mapping[str, DatasetSize], *, runs: int | Mapping[str, int], imgsz: int,
                          cache: bool, checkpoint_bytes_per_run: float, checkpoint_source: str, free_bytes: int,
                          margin_bytes: int = MARGIN_BYTES) -> dict[str, Any]:
    """The disk the partitions in `sizes` still need, `runs` training runs each (or per dataset: its replicates and
    checks), in bytes per part with its source, against `free_bytes`. `ok` is False when it does not fit."""
    def count(name: str) -> int:
        return runs if isinstance(runs, int) else runs.get(name, 1)

    missing = {n: s for n, s in sizes.items() if s.stored_bytes is None}
    per_image = RF100VL_BYTES / RF100VL_IMAGES
    fetch = sum(s.images for s in missing.values()) * per_image
    images = sum(s.images * count(n) for n, s in sizes.items())
    cache_b = images * cache_bytes_per_image(imgsz) if cache else 0
    total_runs = sum(count(n) for n in sizes)
    ckpt = checkpoint_bytes_per_run * total_runs
    needed = fetch + ckpt + cache_b + margin_bytes
    parts = {
        "datasets": {"bytes": round(fetch), "source": (
            f"{len(sizes) - len(missing)} stored here (already on disk); {len(missing)} to fetch, estimated at "
            f"{per_image / 1e3:.0f} KB per image (RF100-VL's {RF100VL_BYTES / 1e9:.0f} GB over "
            f"{RF100VL_IMAGES:,} images, documented)" if missing else
            f"all {len(sizes)} stored here (already on disk)")},
        "checkpoints": {"bytes": round(ckpt), "source": checkpoint_source},
        "cache": {"bytes": round(cache_b), "source": (
            f"{images:,} images (every run's) x {cache_bytes_per_image(imgsz) / 1e3:.0f} KB at {imgsz} px "
            f"(LibreYOLO's disk cache, measured{'' if imgsz in CACHE_BYTES_PER_IMAGE else ', scaled by pixels'}), "
            "kept with each run"
            if cache else "the recipe does not cache on disk")},
        "margin": {"bytes": margin_bytes, "source": "fixed margin"},
    }
    return {"needed_bytes": round(needed), "free_bytes": free_bytes, "ok": free_bytes >= needed,
            "partitions": len(sizes), "runs": total_runs, "imgsz": imgsz, "parts": parts}


def disk_refusal(disk: dict[str, Any], where: Path) -> str | None:
    """The refusal a campaign gets when its projection does not fit (None when it fits)."""
    if disk["ok"]:
        return None
    p = disk["parts"]
    gb = 1e9
    return (f"the campaign needs {disk['needed_bytes'] / gb:.2f} GB but {where} has {disk['free_bytes'] / gb:.2f} GB "
            f"free: datasets to fetch {p['datasets']['bytes'] / gb:.2f} GB, checkpoints "
            f"{p['checkpoints']['bytes'] / gb:.2f} GB ({p['checkpoints']['source']}), image cache "
            f"{p['cache']['bytes'] / gb:.2f} GB at {disk['imgsz']} px, margin {p['margin']['bytes'] / gb:.2f} GB; "
            f"free space, move BENCH_HOME to a larger disk, or run fewer datasets at once (--datasets)")
