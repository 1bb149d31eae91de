"""`bench models check`: does a LibreYOLO family train here the way a campaign needs it to?

For one model key, on a few images of mini-tiny at the smoke recipe's image size, through the very children a
campaign runs (`child.train`, `child.predict`):

1. train two epochs without a break;
2. train the same two epochs, the process ending like a kill right after epoch 1 (`fault.exit_after_epoch`), then
   resume: every weight tensor of the resumed run's `last.pt` must equal the uninterrupted run's, and so must the
   per-epoch losses (the per-epoch reseed reaches the family's own epoch loop);
3. predict the test split with the best checkpoint: every detection's image and category id in the split.

The report says which step failed and why. Seconds to a few minutes per family on a CPU; nothing downloads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_assets.rf100vl.training import run_store
from bench_assets.rf100vl.training.specs import EXIT_DONE, EXIT_KILLED, PredictResult, TrainResult

SPLIT_SIZES = {"train": 4, "valid": 2, "test": 2}
EPOCHS = 2


def trimmed_dataset(src: Path, dest: Path, counts: dict[str, int] = SPLIT_SIZES) -> Path:
    """A copy of canonical dataset `src` with the first `counts[split]` images of each split (links to its images)."""
    for split, n in counts.items():
        doc = json.loads((src / split / "_annotations.coco.json").read_text())
        images = sorted(doc["images"], key=lambda i: i["id"])[:n]
        keep = {i["id"] for i in images}
        doc["images"] = images
        doc["annotations"] = [a for a in doc["annotations"] if a["image_id"] in keep]
        (dest / split).mkdir(parents=True, exist_ok=True)
        for img in images:
            link = dest / split / img["file_name"]
            if not link.exists():
                link.symlink_to(src / split / img["file_name"])
        (dest / split / "_annotations.coco.json").write_text(json.dumps(doc))
    return dest


def run_child(module: str, spec: dict[str, Any], path: Path) -> subprocess.CompletedProcess[str]:
    """Run `child.<module>` on `spec` (written to `path`) with one thread, the way a campaign lane does."""
    path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", f"bench_assets.rf100vl.training.child.{module}", str(path)],
                          env=env, capture_output=True, text=True)


def _weights(path: Path) -> dict[str, Any]:
    import torch

    return torch.load(str(path), map_location="cpu", weights_only=False)["model"]


def differing_tensors(a: Path, b: Path) -> list[str]:
    """Names of the tensors whose values differ between two checkpoints' `model` state (a missing one counts)."""
    import torch

    wa, wb = _weights(a), _weights(b)
    return sorted(k for k in wa.keys() | wb.keys()
                  if k not in wa or k not in wb or not torch.equal(wa[k], wb[k]))


def _failed(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return f"exit {proc.returncode}: {lines[-1] if lines else 'no output'}"


def check_family(family: str, size: str, imgsz: int, dataset: Path, class_names: list[str], work: Path,
                 train_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The three steps above for `family-size`; a dict with `ok` and, when not, `failed` (the step) and `reason`."""
    t0 = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    base = dict(family=family, size=size, num_classes=len(class_names), class_names=class_names,
                dataset_dir=str(dataset), epochs=EPOCHS, imgsz=imgsz, physical_batch=2, effective_batch=2, workers=0,
                seed=0, train_overrides=train_overrides or {})
    out: dict[str, Any] = {"model": f"{family}-{size}", "imgsz": imgsz, "ok": False}

    straight = work / "straight"
    proc = run_child("train", {**base, "run_dir": str(straight)}, work / "straight.json")
    if proc.returncode != EXIT_DONE:
        return {**out, "failed": "train", "reason": _failed(proc), "seconds": round(time.monotonic() - t0, 1)}
    ref = TrainResult.model_validate_json(run_store.result_path(straight).read_text())
    out["losses"] = sorted(ref.epochs[0].losses) if ref.epochs else []

    killed = work / "killed"
    proc = run_child("train", {**base, "run_dir": str(killed), "fault": {"exit_after_epoch": 1}}, work / "killed.json")
    if proc.returncode != EXIT_KILLED:
        return {**out, "failed": "kill after epoch 1", "reason": _failed(proc)}
    proc = run_child("train", {**base, "run_dir": str(killed), "resume": True}, work / "resume.json")
    if proc.returncode != EXIT_DONE:
        return {**out, "failed": "resume", "reason": _failed(proc)}
    resumed = TrainResult.model_validate_json(run_store.result_path(killed).read_text())
    differ = differing_tensors(run_store.last_weights(straight), run_store.last_weights(killed))
    same_losses = [e.losses for e in resumed.epochs] == [e.losses for e in ref.epochs]
    out.update(resumed_from_epoch=resumed.resumed_from_epoch, differing_tensors=len(differ),
               resumed_equals_uninterrupted=not differ and same_losses)
    if differ or not same_losses:
        return {**out, "failed": "resume equals the uninterrupted run",
                "reason": f"{len(differ)} tensors differ (first: {differ[:3]}); losses equal: {same_losses}"}

    pred = work / "pred.json.gz"
    proc = run_child("predict", dict(family=family, size=size, num_classes=len(class_names), class_names=class_names,
                                weights=ref.best_checkpoint, dataset_dir=str(dataset), imgsz=imgsz,
                                out_path=str(pred)), work / "predict.json")
    if proc.returncode != EXIT_DONE:
        return {**out, "failed": "predict", "reason": _failed(proc)}
    result = PredictResult.model_validate_json(pred.with_suffix(".result.json").read_text())
    out.update(detections=result.detections, ok=True, seconds=round(time.monotonic() - t0, 1))
    return out


def check_models(keys: list[str], work: Path, report: Any = lambda _key, _imgsz: None) -> list[dict[str, Any]]:
    """`check_family` for each model key with its smoke recipe's image size and train settings, on a trimmed mini-tiny
    generated under `work`; `report(key, imgsz)` is called before each."""
    from bench_assets.rf100vl.datasets.sources import SourceSpec
    from bench_assets.rf100vl.datasets.store import materialize_dataset
    from bench_assets.rf100vl.training.recipes import load_recipe, recipe_path, require_trainable
    from bench_assets.rf100vl.training.runplan import parse_model

    home = work / "home"
    full = materialize_dataset(home, "mini-tiny", SourceSpec(kind="mini"), home / "cache").path
    dataset = trimmed_dataset(full, work / "mini-tiny-trimmed")
    doc = json.loads((dataset / "train" / "_annotations.coco.json").read_text())
    names = [c["name"] for c in sorted(doc["categories"], key=lambda c: c["id"])]
    results = []
    for key in keys:
        model = parse_model(key)
        loaded = require_trainable(load_recipe(recipe_path(model.family, "smoke")))
        size = loaded.recipe.size(model.size, loaded.path)
        report(key, size.imgsz)
        overrides = {k: v for k, v in loaded.recipe.train.items() if k != "workers"}
        results.append(check_family(model.family, model.size, size.imgsz, dataset, names, work / key, overrides))
    return results
