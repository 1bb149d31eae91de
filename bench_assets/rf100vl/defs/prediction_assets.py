"""`rf100vl/predictions` [dataset x model]: the best checkpoint on `test`, saved as gzip COCO detections; its check
`predicted_classes_exist` (sanity.py) fails a file naming a category id the test split does not have."""

import gzip
import json
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from bench_assets.platform.check_results import check_result
from bench_assets.platform.cluster.layout import GPU_STEP_TAGS
from bench_assets.platform.findings import Finding
from bench_assets.platform.fsutil import atomic_write_json, atomic_write_text, sha256_file
from bench_assets.rf100vl.datasets.store import DatasetRecord, load_record
from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE
from bench_assets.rf100vl.defs.checkpoint_assets import checkpoint
from bench_assets.rf100vl.defs.partitions import dataset_model_partitions, split_key
from bench_assets.rf100vl.scoring import sanity
from bench_assets.rf100vl.scoring.eval_store import (
    CONF,
    MAX_DET,
    NMS_IOU,
    SPLIT,
    current_predictions_meta,
    current_predictions_pointer,
    fingerprint,
    prediction_inputs,
    predictions_meta_path,
    predictions_path,
)
from bench_assets.rf100vl.training.launcher import log_tail, run_child
from bench_assets.rf100vl.training.run_store import current_run
from bench_assets.rf100vl.training.specs import PredictResult, PredictSpec, predict_result_path
from resources.bench_home import BenchHome
from resources.gpu_lanes import GpuLanes

PREDICT_CHILD = "bench_assets.rf100vl.training.child.predict"


class PredictionsConfig(dg.Config):
    timeout_minutes: float = Field(default=120.0, description="Wall-clock limit of the prediction child, minutes.")
    force: bool = Field(default=False, description="Predict again even when predictions for the same checkpoint, "
                        "dataset version and settings exist; otherwise they are reused.")


def _current_training_run(home: BenchHome, model_key: str, ds_name: str) -> tuple[Path, dict[str, Any], DatasetRecord]:
    """(run dir, stats, dataset record) of the partition's finished training run; Failure when there is none or
    it was trained on another dataset version than the current one."""
    run = current_run(home.path, model_key, ds_name)
    record = load_record(home.datasets_dir, ds_name)
    if run is None or record is None:
        raise dg.Failure(f"{model_key}/{ds_name}: no finished training run (materialize rf100vl/checkpoint first)")
    run_dir, stats = run
    if stats["dataset_version"] != record.version:
        raise dg.Failure(f"{model_key}/{ds_name}: the checkpoint was trained on dataset version "
                         f"{stats['dataset_version']} but the current version is {record.version}; retrain")
    return run_dir, stats, record


def _verified_best_checkpoint(stats: dict[str, Any], partition: str) -> str:
    """The run's best checkpoint, once its SHA-256 matches the one stats.json recorded."""
    weights = stats["best_checkpoint"]
    try:
        actual = sha256_file(weights)
    except OSError as exc:
        raise dg.Failure(f"{partition}: best checkpoint {weights} is unreadable ({exc}); retrain "
                         "with force=true") from None
    if actual != stats["best_checkpoint_sha256"]:
        raise dg.Failure(f"{partition}: best checkpoint {weights} does not match its recorded SHA-256 "
                         "(corrupt or replaced); retrain with force=true")
    return weights


def _run_prediction_child(context: dg.AssetExecutionContext, config: PredictionsConfig, lanes: GpuLanes,
                          spec: PredictSpec, out: Path, fp: str, partition: str) -> PredictResult:
    """Run the prediction child on a leased lane (writing `out`); its result, or Failure with its log's tail."""
    log_path = out.with_name(f"{fp[:16]}.predict.log")
    with lanes.lease(holder=f"{context.run.run_id}:{context.partition_key}:predict") as lane:
        spec = spec.model_copy(update={"device": lane.device})
        spec_path = out.with_name(f"{fp[:16]}.predict_spec.json")
        atomic_write_json(spec_path, spec.model_dump())
        outcome = run_child(context, PREDICT_CHILD, spec_path, env=lane.child_env(),
                            timeout_s=config.timeout_minutes * 60, log_path=log_path)
    result_path = predict_result_path(out)
    if outcome.timed_out or outcome.returncode != 0 or not result_path.exists():
        raise dg.Failure(f"{partition}: prediction failed (exit {outcome.returncode}, timed out "
                         f"{outcome.timed_out}):\n{log_tail(log_path)}")
    return PredictResult.model_validate_json(result_path.read_text())


def _materialization(fp: str, out: Path, result: PredictResult, stats: dict[str, Any],
                     inputs: dict[str, Any]) -> dg.MaterializeResult:
    """What the materialization records: the fingerprint (as data version), the file, counts and provenance."""
    return dg.MaterializeResult(
        metadata={
            "fingerprint": dg.MetadataValue.text(fp),
            "path": dg.MetadataValue.path(str(out)),
            "checkpoint": dg.MetadataValue.path(stats["best_checkpoint"]),  # the input, beside its sha256
            "images": dg.MetadataValue.int(result.images),
            "detections": dg.MetadataValue.int(result.detections),
            "weights_sha256": dg.MetadataValue.text(stats["best_checkpoint_sha256"]),
            "image_ids_sha256": dg.MetadataValue.text(inputs["image_ids_sha256"]),
            "protocol": dg.MetadataValue.json({"split": SPLIT, "conf": CONF, "iou": NMS_IOU, "max_det": MAX_DET}),
        },
        data_version=dg.DataVersion(fp[:16]),
    )


@dg.asset(key=["rf100vl", "predictions"], group_name="rf100vl", partitions_def=dataset_model_partitions,
          deps=[checkpoint], pool="gpu", kinds={"pytorch", "coco"},
          op_tags=GPU_STEP_TAGS,
          description="Test-split detections of the best checkpoint (conf 0.001, NMS IoU 0.65, max 500/image).")
def predictions(context: dg.AssetExecutionContext, config: PredictionsConfig, home: BenchHome,
                lanes: GpuLanes) -> dg.MaterializeResult:
    ds_name, model_key = split_key(context)
    run_dir, stats, record = _current_training_run(home, model_key, ds_name)
    weights = _verified_best_checkpoint(stats, f"{model_key}/{ds_name}")
    imgsz = stats["signature_fields"]["imgsz"]
    inputs = prediction_inputs(stats, record.lock, imgsz)
    fp = fingerprint(inputs)
    out = predictions_path(home.path, model_key, ds_name, fp)
    meta_path = predictions_meta_path(home.path, model_key, ds_name, fp)
    if out.exists() and meta_path.exists() and not config.force:
        context.log.info(f"predictions {fp[:16]} already exist for these inputs; not recomputed")
        result = PredictResult.model_validate(json.loads(meta_path.read_text())["result"])
    else:
        spec = PredictSpec(family=stats["family"], size=stats["variant"], num_classes=stats["data"]["num_classes"],
                           class_names=stats["data"]["names"], weights=weights, dataset_dir=str(record.path),
                           split=SPLIT, imgsz=imgsz, conf=CONF, iou=NMS_IOU, max_det=MAX_DET, out_path=str(out))
        result = _run_prediction_child(context, config, lanes, spec, out, fp, f"{model_key}/{ds_name}")
        atomic_write_json(meta_path, {"fingerprint": fp, "inputs": inputs, "result": result.model_dump(),
                                      "predictions_sha256": sha256_file(out), "run_dir": str(run_dir)})
    atomic_write_text(current_predictions_pointer(home.path, model_key, ds_name), fp + "\n")
    return _materialization(fp, out, result, stats, inputs)


@dg.asset_check(asset=predictions, partitions_def=dataset_model_partitions, blocking=False,
                description="Every predicted category id is one of the test split's categories (unknown ids are "
                            "listed with their detection counts).")
def predicted_classes_exist(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    ds_name, model_key = split_key(context)
    partition = f"{model_key}/{ds_name}"
    meta = current_predictions_meta(home.path, model_key, ds_name)
    if meta is None:
        return check_result(Finding(False, f"{partition}: no current predictions to judge"))
    version = meta["inputs"]["dataset_version"]
    try:
        record = load_record(home.datasets_dir, ds_name, version)
    except FileNotFoundError:
        record = None
    if record is None:
        return check_result(Finding(False, f"{partition}: dataset version {version} the predictions were made on "
                                           "is not stored"))
    test = json.loads((record.path / SPLIT / ANNOTATIONS_FILE).read_bytes())
    path = predictions_path(home.path, model_key, ds_name, meta["fingerprint"])
    dets = json.loads(gzip.decompress(path.read_bytes()))
    finding = sanity.predicted_classes_exist(partition, dets, test["categories"])
    finding.facts.update(predictions=str(path), dataset_version=version)
    return check_result(finding)
