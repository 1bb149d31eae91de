"""One (dataset, model) training partition: choose the variant, resume or start, launch the child,
fall back on out-of-memory, and write status.json and stats.json atomically.

No Dagster here: the asset passes a `launch(spec_path, run_dir) -> ChildOutcome`-like callable, so
the control flow (fallback, resume, skip-when-done) is testable with real children and no instance.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.platform.fsutil import sha256_file as sha256_of
from bench_assets.rf100vl.datasets.store import DatasetRecord
from bench_assets.rf100vl.training import run_store
from bench_assets.rf100vl.training.recipes import LoadedRecipe
from bench_assets.rf100vl.training.runplan import (
    ModelKey,
    RunVariant,
    effective_precision,
    run_signature,
    run_state,
    signature_fields,
    variant_sequence,
)
from bench_assets.rf100vl.training.specs import EXIT_DONE, EXIT_KILLED, EXIT_OOM, TrainResult, TrainSpec


class Launched(Protocol):
    returncode: int
    timed_out: bool
    wall_seconds: float


class TrainingFailed(RuntimeError):
    pass


@dataclass
class TrainOutcome:
    run_dir: Path
    stats: dict[str, Any]
    skipped: bool  # already finished under this signature: nothing was trained
    variants_tried: list[str]


@dataclass(frozen=True)
class TrainRequest:
    model: ModelKey
    recipe: LoadedRecipe
    dataset: DatasetRecord
    runs_dir: Path
    device: str = "cpu"
    workers: int = 0
    timeout_s: float = 24 * 3600.0
    force: bool = False
    epochs_override: int | None = None  # only for tests; recorded in the signature via `epochs`
    fault: dict[str, Any] | None = None
    lane: int | None = None  # recorded in stats.json (which lane of the box trained it)
    # The weights the run starts from (training/pretrained.py's lock: name, sha256, source, plus the local path);
    # None trains from scratch.
    init_weights: dict[str, Any] | None = None


def init_problems(recipe: LoadedRecipe, size: str, init: dict[str, Any] | None) -> list[str]:
    """Why a run of `size` starting from `init` does not start where the recipe says (empty when it does)."""
    ref = recipe.recipe.pretrained.get(size)
    if ref is None:
        return []  # the recipe's own nonconformity says it names no weights
    if init is None:
        return [f"trained from scratch, the recipe starts {size} from {ref.name}"]
    if init["name"] != ref.name:
        return [f"started from {init['name']} (sha256 {init['sha256'][:16]}), the recipe names {ref.name}"]
    return []


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def plan_run(req: TrainRequest, variant: RunVariant) -> tuple[dict[str, Any], str, Path, TrainSpec]:
    r = req.recipe.recipe
    size = r.size(req.model.size, req.recipe.path)
    epochs = req.epochs_override or r.protocol.epochs
    precision = effective_precision(r.protocol.precision, req.device)
    lock = req.dataset.lock
    fields = signature_fields(
        model=req.model, recipe=req.recipe, dataset=req.dataset.name, dataset_version=req.dataset.version,
        dataset_lock_sha256=sha256_of(req.dataset.path / "lock.json"),
        train_annotations_sha256=lock["splits"]["train"]["annotations_sha256"], variant=variant, epochs=epochs,
        imgsz=size.imgsz, precision=precision, max_det=500, eval_max_det=500)
    if req.init_weights is not None:  # a run from scratch keeps the signature it always had
        fields["init_weights_sha256"] = req.init_weights["sha256"]
    seed = r.protocol.seed if req.model.seed is None else req.model.seed
    if req.model.seed is not None:  # a replicate: the seed is in its signature; the model's runs keep theirs
        fields["seed"] = seed
    if req.model.resume_check:  # the pilot's kill-and-resume check: the model's own run, interrupted once
        fields["resume_check"] = True
    signature = run_signature(fields)
    run_dir = run_store.signature_dir(req.runs_dir, req.model.key, req.dataset.name, signature)
    spec = TrainSpec(
        family=req.model.family, size=req.model.size, num_classes=req.dataset.manifest["num_classes"],
        class_names=req.dataset.manifest["classes"], dataset_dir=str(req.dataset.path), run_dir=str(run_dir),
        epochs=epochs, imgsz=size.imgsz, physical_batch=variant.physical_batch,
        effective_batch=variant.effective_batch, lr0=size.lr0, device=req.device, workers=req.workers,
        seed=seed, eval_interval=r.protocol.eval_interval, patience=r.protocol.patience,
        ema=r.protocol.ema, precision=precision, cuda_graph=r.protocol.cuda_graph and req.device != "cpu",
        cache=r.protocol.cache, max_det=500, eval_max_det=500,
        train_overrides={k: v for k, v in r.train.items() if k != "workers"}, fault=req.fault or {},
        init_weights=req.init_weights["path"] if req.init_weights else None,
        batchnorm_eps=r.invariants.batchnorm_eps,
    )
    return fields, signature, run_dir, spec


def _status(run_dir: Path, signature: str, state: str, **extra: Any) -> None:
    atomic_write_json(run_store.status_path(run_dir),
                      {"signature": signature, "state": state, "updated": _now(), **extra})


def _stats(req: TrainRequest, fields: dict[str, Any], signature: str, variant: RunVariant, result: TrainResult,
           started: str, resumed: bool) -> dict[str, Any]:
    m = req.dataset.manifest
    init = init_problems(req.recipe, req.model.size, req.init_weights)
    best = Path(result.best_checkpoint) if result.best_checkpoint else None
    if best is None or not best.is_file():
        raise TrainingFailed(f"{req.model.key}/{req.dataset.name}: the child reported no best checkpoint")
    return {
        "dataset": req.dataset.name, "dataset_version": req.dataset.version, "model": req.model.key,
        "family": req.model.family, "variant": req.model.size, "run_variant": variant.name,
        "capabilities": {"libreyolo": _version("libreyolo"), "torch": _version("torch")},
        "seed": req.recipe.recipe.protocol.seed if req.model.seed is None else req.model.seed,
        "base_model": req.model.base,
        "precision": fields["precision"],
        # The run's conformance: the recipe's, and whether the run started from the weights the recipe names.
        "recipe": {"file": req.recipe.path, "sha256": req.recipe.sha256,
                   "conformant": req.recipe.recipe.conformant and not init,
                   "nonconformities": req.recipe.recipe.nonconformities() + init},
        "init_weights": ({**{k: req.init_weights[k] for k in ("name", "sha256", "source")},
                          "load": result.init_load} if req.init_weights else None),
        "run_signature": signature, "signature_fields": fields,
        "batch": {"physical": variant.physical_batch, "effective": variant.effective_batch,
                  "accumulation": variant.accumulation},
        "data": {"num_classes": m["num_classes"], "names": m["classes"],
                 "num_annotations": sum(s["annotations"] for s in m["splits"].values()),
                 "max_annotations_per_image": max(s["boxes_per_image_max"] for s in m["splits"].values()),
                 "train_images": m["splits"]["train"]["images"],
                 "train_annotations_sha256": fields["train_annotations_sha256"]},
        "epochs": fields["epochs"], "epochs_done": result.epochs_done, "best_epoch": result.best_epoch,
        "valid_mAP50": result.valid_mAP50, "valid_mAP50_95": result.valid_mAP50_95,
        "wall_seconds": result.wall_seconds, "resumed": resumed, "resumed_from_epoch": result.resumed_from_epoch,
        "started": started, "finished": _now(),
        "best_checkpoint": str(best), "best_checkpoint_sha256": sha256_of(best),
        "last_checkpoint": result.last_checkpoint,
        "stack": result.stack,
        "worker": worker_name(),
        "device": {"lane": req.lane, "device": req.device, "peak_vram_allocated_mb": result.peak_vram_allocated_mb,
                   "peak_vram_reserved_mb": result.peak_vram_reserved_mb, "peak_rss_mb": result.peak_rss_mb,
                   "cuda_graph_captured": result.cuda_graph_captured},
    }


def worker_name() -> str:
    """Which box trained: the cluster worker's name (BENCH_WORKER), else this machine's host name."""
    return os.environ.get("BENCH_WORKER") or socket.gethostname()


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def read_result(run_dir: Path) -> TrainResult | None:
    p = run_store.result_path(run_dir)
    return TrainResult.model_validate_json(p.read_text()) if p.exists() else None


def _reuse_finished_run(run_dir: Path, tried: list[str]) -> TrainOutcome:
    """Point CURRENT at a run already finished under this signature; nothing is trained."""
    stats = json.loads(run_store.stats_path(run_dir).read_text())
    run_store.point_current(run_dir)
    return TrainOutcome(run_dir, stats, skipped=True, variants_tried=tried)


def _set_aside_corrupt_run(run_dir: Path, signature: str, log: Callable[[str], None]) -> None:
    """Move a finished run whose best checkpoint is missing or changed aside, and leave an empty run_dir."""
    aside = run_dir.with_name(f"{run_dir.name}.corrupt-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}")
    run_dir.rename(aside)
    log(f"finished run {signature[:16]} has a missing or changed best checkpoint; moved it to {aside.name} "
        "and training afresh")
    run_dir.mkdir(parents=True)


def _record_start(req: TrainRequest, run_dir: Path, spec: TrainSpec, fields: dict[str, Any], signature: str,
                  variant: RunVariant, log: Callable[[str], None]) -> str:
    """Write the child's spec, the signature fields and a `running` status; return the start time."""
    atomic_write_json(run_store.spec_path(run_dir), spec.model_dump())
    atomic_write_json(run_store.signature_path(run_dir), fields)
    started = _now()
    _status(run_dir, signature, "running", variant=variant.name, started=started)
    log(f"{req.model.key}/{req.dataset.name}: {'resuming' if spec.resume else 'starting'} {variant.name} run "
        f"{signature[:16]}: batch {variant.physical_batch} x accumulation {variant.accumulation}, "
        f"{spec.epochs} epochs at {spec.imgsz}px on {req.device}")
    return started


def _interrupt_once(req: TrainRequest, launch: Callable[[Path, Path, TrainSpec], Launched], run_dir: Path,
                    spec: TrainSpec, fields: dict[str, Any], signature: str, variant: RunVariant,
                    log: Callable[[str], None]) -> None:
    """The first half of a kill-and-resume check (`model@resume`): the child ends like a SIGKILL once epoch
    epochs // 2 is written (its process exits 137); the caller then resumes it from last.pt in a fresh process."""
    if spec.epochs < 2:
        raise TrainingFailed(f"{req.model.key}/{req.dataset.name}: a kill-and-resume check needs at least 2 epochs, "
                             f"the recipe has {spec.epochs}")
    stop = spec.epochs // 2
    cut = spec.model_copy(update={"fault": spec.fault.model_copy(update={"exit_after_epoch": stop})})
    _record_start(req, run_dir, cut, fields, signature, variant, log)
    outcome = launch(run_store.spec_path(run_dir), run_dir, cut)
    if outcome.returncode != EXIT_KILLED:
        _status(run_dir, signature, "failed", returncode=outcome.returncode)
        raise TrainingFailed(f"{req.model.key}/{req.dataset.name}: the kill-and-resume check's first process ended "
                             f"with exit {outcome.returncode}, not killed after epoch {stop}")
    log(f"{req.model.key}/{req.dataset.name}: killed after epoch {stop}/{spec.epochs} (exit {EXIT_KILLED}); "
        "resuming from last.pt in a fresh process")


def _launch_variant(req: TrainRequest, launch: Callable[[Path, Path, TrainSpec], Launched], run_dir: Path,
                    spec: TrainSpec, signature: str, variant: RunVariant, fallback: RunVariant | None,
                    log: Callable[[str], None]) -> TrainResult | None:
    """Run the training child once and judge it: its result when it finished, None when it ran out of memory
    and `fallback` (the next variant) takes over; TrainingFailed (status.json says why) otherwise."""
    outcome = launch(run_store.spec_path(run_dir), run_dir, spec)
    result = read_result(run_dir)
    if outcome.timed_out:
        _status(run_dir, signature, "timeout", seconds=outcome.wall_seconds)
        raise TrainingFailed(f"{req.model.key}/{req.dataset.name}: timed out after {outcome.wall_seconds:.0f}s "
                             f"(limit {req.timeout_s:.0f}s); the child tree was killed; last.pt is kept "
                             "for a resume")
    if outcome.returncode == EXIT_OOM:
        _status(run_dir, signature, "oom", message=result.message if result else "")
        if fallback is not None:
            log(f"CUDA out of memory at batch {variant.physical_batch}; restarting from epoch 0 with "
                f"batch {fallback.physical_batch} x accumulation {fallback.accumulation} (effective batch kept)")
            return None
        raise TrainingFailed(f"{req.model.key}/{req.dataset.name}: out of memory even at batch "
                             f"{variant.physical_batch} ({variant.name}); lower the recipe's fallback batch")
    if outcome.returncode != EXIT_DONE or result is None or result.status != "done":
        _status(run_dir, signature, "failed", returncode=outcome.returncode)
        msg = result.message if result else f"exit code {outcome.returncode}, no result.json"
        raise TrainingFailed(f"{req.model.key}/{req.dataset.name}: training failed: {msg}")
    return result


def _record_finish(req: TrainRequest, run_dir: Path, fields: dict[str, Any], signature: str, variant: RunVariant,
                   result: TrainResult, started: str, resumed: bool, tried: list[str]) -> TrainOutcome:
    """Write stats.json and a `done` status, and point CURRENT at the run."""
    stats = _stats(req, fields, signature, variant, result, started, resumed)
    atomic_write_json(run_store.stats_path(run_dir), stats)
    _status(run_dir, signature, "done", variant=variant.name)
    run_store.point_current(run_dir)
    return TrainOutcome(run_dir, stats, skipped=False, variants_tried=tried)


def train_partition(req: TrainRequest, launch: Callable[[Path, Path, TrainSpec], Launched],
                    log: Callable[[str], None] = lambda _: None) -> TrainOutcome:
    """Train the partition with the first variant that fits in memory (resuming or skipping what a previous
    attempt left), write its stats.json and point CURRENT at it; TrainingFailed when no variant finishes."""
    variants = variant_sequence(req.recipe, req.model.size,
                                max(s["boxes_per_image_max"] for s in req.dataset.manifest["splits"].values()))
    tried: list[str] = []
    for k, variant in enumerate(variants):
        fields, signature, run_dir, spec = plan_run(req, variant)
        run_dir.mkdir(parents=True, exist_ok=True)
        state = run_state(run_dir, signature)
        if state == "done" and not req.force:
            log(f"{req.model.key}/{req.dataset.name}: finished run {signature[:16]} ({variant.name}) found; skipping")
            return _reuse_finished_run(run_dir, tried)
        if state == "oom" and not req.force:
            log(f"{variant.name} (batch {variant.physical_batch}) ran out of memory before; trying the fallback")
            tried.append(variant.name)
            continue
        if state == "corrupt":
            _set_aside_corrupt_run(run_dir, signature, log)
        resume = state == "resumable" and not req.force
        if req.model.resume_check and not resume:
            _interrupt_once(req, launch, run_dir, spec, fields, signature, variant, log)
            resume = True
        spec = spec.model_copy(update={"resume": resume})
        started = _record_start(req, run_dir, spec, fields, signature, variant, log)
        tried.append(variant.name)
        fallback = variants[k + 1] if k + 1 < len(variants) else None
        result = _launch_variant(req, launch, run_dir, spec, signature, variant, fallback, log)
        if result is None:  # out of memory: the fallback variant is next
            continue
        return _record_finish(req, run_dir, fields, signature, variant, result, started, resume, tried)
    raise TrainingFailed(f"{req.model.key}/{req.dataset.name}: every variant ran out of memory: {tried}")

