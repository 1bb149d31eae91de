"""`rf100vl/checkpoint` [dataset x model]: fine-tune in a Pipes child on a leased lane; its checks (sanity.py):
`labels_reached_loss` fails a run whose box loss stayed near zero while the train split has boxes,
`pretrained_weights_loaded` one that did not start from its init weights, `training_finished` one that stopped short."""

import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from bench_assets.platform.check_results import check_result
from bench_assets.platform.cluster.layout import GPU_STEP_TAGS
from bench_assets.platform.findings import Finding
from bench_assets.rf100vl.datasets.store import load_record
from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE
from bench_assets.rf100vl.defs.dataset_assets import dataset
from bench_assets.rf100vl.defs.partitions import dataset_model_partitions, on_dataset, on_model, split_key
from bench_assets.rf100vl.defs.pretrained_assets import pretrained
from bench_assets.rf100vl.defs.recipe_choice import RECIPE_HELP, RecipeChoice, recipe_override
from bench_assets.rf100vl.report.plots import png_markdown, training_curves
from bench_assets.rf100vl.scoring import sanity
from bench_assets.rf100vl.training import run_store
from bench_assets.rf100vl.training.launcher import log_tail, run_child
from bench_assets.rf100vl.training.models import model_recipe
from bench_assets.rf100vl.training.pretrained import starting_point
from bench_assets.rf100vl.training.recipes import RecipeError, require_trainable
from bench_assets.rf100vl.training.specs import TrainSpec
from bench_assets.rf100vl.training.train_run import (
    TrainingFailed,
    TrainRequest,
    read_result,
    train_partition,
    worker_name,
)
from resources.bench_home import BenchHome
from resources.gpu_lanes import GpuLanes

TRAIN_CHILD = "bench_assets.rf100vl.training.child.train"

# Partitioned asset checks are "preview" in dagster 1.13 (as in checks.py); the checkpoint and predictions checks
# are per partition.
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")


class CheckpointConfig(dg.Config):
    recipe: RecipeChoice = Field(default=RecipeChoice["registered"], description=RECIPE_HELP)
    force: bool = Field(default=False, description="Retrain even when a finished run with the same signature "
                        "(model, recipe, dataset version, code) exists; otherwise that run is reused.")
    timeout_minutes: float = Field(default=24 * 60.0, description="Wall-clock limit of the training child, minutes; "
                                   "the whole process tree is killed past it and the step fails.")


class CheckpointFaultConfig(CheckpointConfig):
    """Fault injection for tests and demos, offered only when BENCH_FAULT_INJECTION=1 is set where the code location
    loads: a researcher's launchpad never shows these knobs."""

    fault_oom_at_step: int = Field(default=-1, description="The child raises CUDA OOM at this step (-1: never).")
    fault_oom_only_above_batch: int = Field(default=0, description="Only while the physical batch exceeds this.")
    fault_sleep_per_step_s: float = Field(default=0.0, description="Sleep this long in every training step.")


FAULT_INJECTION = os.environ.get("BENCH_FAULT_INJECTION") == "1"
CheckpointRunConfig = CheckpointFaultConfig if FAULT_INJECTION else CheckpointConfig


def checkpoint_metadata(stats: dict, epochs: list[dict], skipped: bool, tried: list[str]) -> dict:
    title = f"{stats['model']} on {stats['dataset']} ({stats['run_variant']})"
    meta = {
        "run_signature": dg.MetadataValue.text(stats["run_signature"]),
        "recipe_sha256": dg.MetadataValue.text(stats["recipe"]["sha256"]),
        "recipe_conformant": dg.MetadataValue.bool(stats["recipe"]["conformant"]),
        "best_epoch": dg.MetadataValue.int(stats["best_epoch"] or 0),
        "valid_mAP50_95": dg.MetadataValue.float(round(float(stats["valid_mAP50_95"] or 0.0), 4)),
        "valid_mAP50": dg.MetadataValue.float(round(float(stats["valid_mAP50"] or 0.0), 4)),
        "epochs": dg.MetadataValue.int(stats["epochs_done"]),
        "wall_minutes": dg.MetadataValue.float(round(stats["wall_seconds"] / 60, 2)),
        "batch": dg.MetadataValue.json(stats["batch"]),
        "run_variant": dg.MetadataValue.text(stats["run_variant"]),
        "variants_tried": dg.MetadataValue.json(tried),
        "resumed": dg.MetadataValue.bool(bool(stats["resumed"])),
        "reused_finished_run": dg.MetadataValue.bool(skipped),
        "best_checkpoint": dg.MetadataValue.path(stats["best_checkpoint"]),
        "best_checkpoint_sha256": dg.MetadataValue.text(stats["best_checkpoint_sha256"]),
        # where it came from and what it wrote, as paths (the score and predictions name theirs too)
        "run_dir": dg.MetadataValue.path(str(Path(stats["best_checkpoint"]).parent.parent)),
        "last_checkpoint": dg.MetadataValue.path(str(stats["last_checkpoint"] or "")),
        "recipe_file": dg.MetadataValue.path(stats["recipe"]["file"]),
        "dataset_version": dg.MetadataValue.text(f"{stats['dataset']}@{stats['dataset_version']}"),
    }
    if not stats["recipe"]["conformant"]:
        meta["NON_CONFORMANT_RECIPE"] = dg.MetadataValue.json(stats["recipe"]["nonconformities"])
    if epochs:
        meta["curves"] = dg.MetadataValue.md(png_markdown(training_curves(epochs, title, stats["best_epoch"]),
                                                           "loss and valid mAP per epoch"))
    return meta


@dg.asset(key=["rf100vl", "checkpoint"], group_name="rf100vl", partitions_def=dataset_model_partitions,
          ins={"dataset": dg.AssetIn(key=dataset.key, partition_mapping=on_dataset, dagster_type=dg.Nothing),
               "pretrained": dg.AssetIn(key=pretrained.key, partition_mapping=on_model, dagster_type=dg.Nothing)},
          pool="gpu", kinds={"pytorch", "libreyolo"},
          op_tags=GPU_STEP_TAGS,
          description="Fine-tuned LibreYOLO weights: best epoch on valid mAP50-95 (`runs/<model>/<dataset>/<sig>/`).")
def checkpoint(context: dg.AssetExecutionContext, config: CheckpointRunConfig, home: BenchHome,
               lanes: GpuLanes) -> dg.MaterializeResult:
    ds_name, model_key = split_key(context)
    record = load_record(home.datasets_dir, ds_name)
    if record is None:
        raise dg.Failure(f"dataset {ds_name!r} has no stored version; materialize rf100vl/dataset first")
    try:
        model, recipe = model_recipe(home.path, model_key, recipe_override(config.recipe))
        require_trainable(recipe)  # the installed LibreYOLO can train this family, size and image size
        init = starting_point(home.path, model_key, recipe.recipe.pretrained.get(model.size))
    except (RecipeError, ValueError) as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    if not recipe.recipe.conformant:
        context.log.warning(f"recipe {recipe.path} is NOT protocol-conformant: {recipe.recipe.nonconformities()}")
    fault = {}
    if isinstance(config, CheckpointFaultConfig):
        if config.fault_oom_at_step >= 0:
            fault["oom_at_step"] = config.fault_oom_at_step
            fault["oom_only_if_physical_batch_above"] = config.fault_oom_only_above_batch or None
        if config.fault_sleep_per_step_s:
            fault["sleep_per_step_s"] = config.fault_sleep_per_step_s

    context.instance.add_run_tags(context.run.run_id, {"bench/worker": worker_name()})  # which box trained it
    with lanes.lease(holder=f"{context.run.run_id}:{context.partition_key}") as lane:
        context.log.info(f"worker {worker_name()}, lane {lane.index}: device {lane.device}, CUDA_VISIBLE_DEVICES="
                         f"{lane.cuda_visible_devices!r}, {lane.threads} thread(s)")
        req = TrainRequest(model=model, recipe=recipe, dataset=record, runs_dir=run_store.runs_root(home.path),
                           device=lane.device, timeout_s=config.timeout_minutes * 60, force=config.force,
                           fault=fault, lane=lane.index, init_weights=init)

        def launch(spec_path: Path, run_dir: Path, spec: TrainSpec):  # noqa: ANN202
            outcome = run_child(context, TRAIN_CHILD, spec_path, env=lane.child_env(), timeout_s=req.timeout_s,
                                log_path=run_store.child_log(run_dir), extras={"run_dir": str(run_dir)})
            if outcome.returncode not in (0, 86):
                tail = log_tail(run_store.child_log(run_dir))
                context.log.error(f"child exited {outcome.returncode}; last lines:\n{tail}")
            return outcome

        try:
            out = train_partition(req, launch, log=context.log.info)
        except TrainingFailed as exc:
            raise dg.Failure(description=str(exc), allow_retries=False) from None
    result = read_result(out.run_dir)
    epochs = [e.model_dump() for e in result.epochs] if result else []
    return dg.MaterializeResult(metadata=checkpoint_metadata(out.stats, epochs, out.skipped, out.variants_tried),
                                data_version=dg.DataVersion(out.stats["best_checkpoint_sha256"][:16]))


def _train_annotations(home: BenchHome, ds_name: str, version: str) -> dict | None:
    """The train split's COCO document of a stored dataset version, or None when that version is gone."""
    try:
        record = load_record(home.datasets_dir, ds_name, version)
    except FileNotFoundError:
        return None
    path = record.path / "train" / ANNOTATIONS_FILE if record else None
    return json.loads(path.read_bytes()) if path is not None and path.exists() else None


class LabelsReachedLossConfig(dg.Config):
    near_zero: float = Field(default=sanity.NEAR_ZERO_BOX_LOSS, description="Box loss at or below this on every "
                             "epoch counts as near zero; healthy runs: 0.1-7, collapsed ones ~1e-5 or 0.")


@dg.asset_check(asset=checkpoint, partitions_def=dataset_model_partitions, blocking=False,
                description="Labels reached the loss: a run whose box loss (result.json epochs[].losses) stays near "
                            "zero on every epoch while the train split has boxes fails, naming the training size "
                            "and the median object size at that size.")
def labels_reached_loss(context: dg.AssetCheckExecutionContext, config: LabelsReachedLossConfig,
                        home: BenchHome) -> dg.AssetCheckResult:
    ds_name, model_key = split_key(context)
    partition = f"{model_key}/{ds_name}"
    run = run_store.current_run(home.path, model_key, ds_name)
    if run is None:
        return check_result(Finding(False, f"{partition}: no finished training run to judge"))
    run_dir, stats = run
    result_file = run_store.result_path(run_dir)
    epochs = json.loads(result_file.read_text())["epochs"] if result_file.exists() else []
    imgsz = stats["signature_fields"]["imgsz"]
    train = _train_annotations(home, ds_name, stats["dataset_version"])
    if train is None:
        return check_result(Finding(False, f"{partition}: the dataset version {stats['dataset_version']} the run "
                                           "trained on is not stored; cannot count its train boxes"))
    finding = sanity.labels_reached_loss(partition, ds_name, epochs, len(train["annotations"]), imgsz,
                                         sanity.median_object_px(train, imgsz), config.near_zero)
    finding.facts["run_dir"] = str(run_dir)
    return check_result(finding)


@dg.asset_check(asset=checkpoint, partitions_def=dataset_model_partitions, blocking=False,
                description="Pretrained weights loaded: a run given init weights has its whole backbone and at least "
                            "90% of its tensors holding the file's values once LibreYOLO loaded it (it loads "
                            "non-strictly, so another family's or size's file would silently train from random "
                            "weights).")
def pretrained_weights_loaded(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    return _judge_current_run(context, home, sanity.weights_loaded)


@dg.asset_check(asset=checkpoint, partitions_def=dataset_model_partitions, blocking=False,
                description="Training finished: the current run trained every planned epoch (fewer only with early "
                            "stopping) and, for a conformant recipe, left valid mAP50-95 above zero.")
def training_finished(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    return _judge_current_run(context, home, sanity.training_finished)


def _judge_current_run(context: dg.AssetCheckExecutionContext, home: BenchHome,
                       judge: Callable[[str, dict[str, Any]], Finding]) -> dg.AssetCheckResult:
    """`judge(partition, stats)` on the partition's current run (a failing finding when there is none)."""
    ds_name, model_key = split_key(context)
    partition = f"{model_key}/{ds_name}"
    run = run_store.current_run(home.path, model_key, ds_name)
    if run is None:
        return check_result(Finding(False, f"{partition}: no finished training run to judge"))
    finding = judge(partition, run[1])
    finding.facts["run_dir"] = str(run[0])
    return check_result(finding)
