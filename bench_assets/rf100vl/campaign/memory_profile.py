"""`bench models profile-memory MODEL`: measure what one training lane of a model holds at its peak, before a
campaign plans its lanes.

One epoch of the campaign's own training child (`child.train`) at the recipe's image size and physical batch, on a
copy of mini-tiny trimmed to one batch of training images (the images are resized to the recipe's size, so their
own size does not matter), on this box's device: the first GPU `CUDA_VISIBLE_DEVICES` shows, else the CPU. The
child records its peak VRAM reserved (GPU) or its peak resident set (CPU, its own process: the recipe's loader
workers are not started, `workers=0`); the figure is stored with the device's name (`campaign/memory_plan.py`) and
`bench plan` / `bench campaign` reuse it. About a minute per model; nothing downloads.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from bench_assets.rf100vl.campaign.memory_plan import MemoryProfile, new_profile
from bench_assets.rf100vl.training import run_store
from bench_assets.rf100vl.training.specs import EXIT_DONE, TrainResult

VALID_IMAGES = 2


class ProfileFailed(RuntimeError):
    pass


def profile_memory(model_key: str, recipe: Any, work: Path, *, gpu: bool | None = None) -> MemoryProfile:
    """Train one epoch of `model_key` with `recipe` (a LoadedRecipe) under `work` and return its measured peak.
    `gpu` None: a GPU when `CUDA_VISIBLE_DEVICES` names one."""
    from bench_assets.rf100vl.datasets.sources import SourceSpec
    from bench_assets.rf100vl.datasets.store import materialize_dataset
    from bench_assets.rf100vl.training.child.family_check import run_child, trimmed_dataset
    from bench_assets.rf100vl.training.recipes import require_trainable
    from bench_assets.rf100vl.training.runplan import parse_model

    model = parse_model(model_key)
    loaded = require_trainable(recipe)
    size = loaded.recipe.size(model.size, loaded.path)
    gpu = bool(os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()) if gpu is None else gpu
    home = work / "home"
    full = materialize_dataset(home, "mini-tiny", SourceSpec(kind="mini"), home / "cache").path
    dataset = trimmed_dataset(full, work / "dataset", {"valid": VALID_IMAGES, "test": 1})
    one_batch_split(full / "train", dataset / "train", size.physical_batch)
    doc = json.loads((dataset / "train" / "_annotations.coco.json").read_text())
    names = [c["name"] for c in sorted(doc["categories"], key=lambda c: c["id"])]
    overrides = {k: v for k, v in loaded.recipe.train.items() if k != "workers"}
    protocol = loaded.recipe.protocol
    run_dir = work / "run"
    spec = dict(family=model.family, size=model.size, num_classes=len(names), class_names=names,
                dataset_dir=str(dataset), run_dir=str(run_dir), epochs=1, imgsz=size.imgsz,
                physical_batch=size.physical_batch, effective_batch=size.physical_batch,
                device="0" if gpu else "cpu", workers=0, seed=0,
                ema=protocol.ema, precision=protocol.precision if gpu else "fp32", train_overrides=overrides)
    proc = run_child("train", spec, work / "spec.json")
    result_file = run_store.result_path(run_dir)
    result = TrainResult.model_validate_json(result_file.read_text()) if result_file.is_file() else None
    if proc.returncode != EXIT_DONE or result is None:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise ProfileFailed(f"{model_key}: the profile epoch failed (exit {proc.returncode}): "
                            f"{lines[-1] if lines else 'no output'}")
    peak = result.peak_vram_reserved_mb if gpu else result.peak_rss_mb
    if not peak:
        raise ProfileFailed(f"{model_key}: the training child recorded no peak {'VRAM' if gpu else 'RSS'}")
    return new_profile(model_key, size.imgsz, size.physical_batch, "gpu" if gpu else "cpu", peak,
                       "profile step", dt.datetime.now().astimezone().isoformat(timespec="seconds"))


def one_batch_split(src: Path, dest: Path, batch: int) -> None:
    """A split of exactly `batch` images: `src`'s images in id order, repeated under new ids and names (links to the
    same files) when it has fewer, so the profile measures the recipe's full physical batch."""
    doc = json.loads((src / "_annotations.coco.json").read_text())
    images = sorted(doc["images"], key=lambda i: i["id"])
    by_image: dict[int, list[dict[str, Any]]] = {}
    for a in doc["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    dest.mkdir(parents=True, exist_ok=True)
    out_images, out_anns = [], []
    for k in range(batch):
        img = images[k % len(images)]
        name = f"r{k}_{Path(img['file_name']).name}"
        link = dest / name
        if not link.exists():
            link.symlink_to((src / img["file_name"]).resolve())
        out_images.append({**img, "id": k + 1, "file_name": name})
        out_anns += [{**a, "id": len(out_anns) + j + 1, "image_id": k + 1}
                     for j, a in enumerate(by_image.get(img["id"], []))]
    (dest / "_annotations.coco.json").write_text(json.dumps({**doc, "images": out_images, "annotations": out_anns}))
