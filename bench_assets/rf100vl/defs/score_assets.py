"""`rf100vl/scores` [dataset x model]: COCO AP at maxDets 500 from the saved predictions only."""

import json
from pathlib import Path

import dagster as dg
from pydantic import Field

from bench_assets.platform.check_results import check_result
from bench_assets.platform.findings import Finding
from bench_assets.platform.fsutil import atomic_write_json, atomic_write_text
from bench_assets.rf100vl.datasets.store import load_record
from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE
from bench_assets.rf100vl.defs.partitions import dataset_model_partitions, split_key
from bench_assets.rf100vl.defs.prediction_assets import predictions
from bench_assets.rf100vl.scoring import sanity
from bench_assets.rf100vl.scoring.eval_store import (
    MAX_DET,
    SPLIT,
    current_predictions_meta,
    current_score,
    current_score_pointer,
    fingerprint,
    predictions_path,
    score_inputs,
    score_path,
    score_record,
)
from resources.bench_home import BenchHome


class ScoresConfig(dg.Config):
    force: bool = Field(default=False, description="Score again even when a score for the same predictions and "
                        "scoring code exists; otherwise it is reused.")


def compute_scores(home_path: Path, model_key: str, ds_name: str, pred_meta: dict,
                   force: bool = False) -> tuple[dict, bool]:
    """(score record, recomputed?) for one partition, from the saved predictions file only. Predictions over
    max_det on an image are scored as pycocotools scores them (not refused: `strict=False`); the record's
    `max_det_cut` and `warnings` say so, and the asset logs it as an error of the prediction step."""
    from bench_assets.rf100vl.scoring import coco as scoring
    from bench_assets.rf100vl.scoring.loading import load_json_any

    record = load_record(home_path / "datasets", ds_name)
    gt_file = record.path / SPLIT / ANNOTATIONS_FILE
    pred_file = predictions_path(home_path, model_key, ds_name, pred_meta["fingerprint"])
    inputs = score_inputs(pred_meta, pred_file, gt_file)
    fp = fingerprint(inputs)
    out = score_path(home_path, model_key, ds_name, fp)
    if out.exists() and not force:
        atomic_write_text(current_score_pointer(home_path, model_key, ds_name), fp)
        return json.loads(out.read_text()), False
    gt = load_json_any(gt_file)
    dets = load_json_any(pred_file)
    both = scoring.score_both(gt, dets, max_det=MAX_DET, source=str(pred_file), strict=False)
    rec = score_record(fp, inputs, ds_name, model_key, record.version, both, pred_meta["inputs"])
    atomic_write_json(out, rec)
    atomic_write_text(current_score_pointer(home_path, model_key, ds_name), fp)
    return rec, True


@dg.asset(key=["rf100vl", "scores"], group_name="rf100vl", partitions_def=dataset_model_partitions,
          deps=[predictions], kinds={"coco"},
          description="13 COCO metrics at maxDets 500 (hotcoco headline, pycocotools parity audit of the metrics and "
                      "the precision/recall arrays; detections over max_det reported, never refused).")
def scores(context: dg.AssetExecutionContext, config: ScoresConfig, home: BenchHome) -> dg.MaterializeResult:
    from bench_assets.rf100vl.scoring.results import (
        GroundTruthInvalid,
        InputUnreadable,
        PredictionsInvalid,
        ScoreUndefined,
    )

    ds_name, model_key = split_key(context)
    meta = current_predictions_meta(home.path, model_key, ds_name)
    if meta is None:
        raise dg.Failure(f"{model_key}/{ds_name}: no saved predictions (materialize rf100vl/predictions first)")
    try:
        rec, recomputed = compute_scores(home.path, model_key, ds_name, meta, config.force)
    except (PredictionsInvalid, GroundTruthInvalid, ScoreUndefined, InputUnreadable) as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    m = rec["metrics"]
    warnings = rec.get("warnings", [])  # absent from records written before warnings existed
    for warning in warnings:
        context.log.warning(warning)
    if rec["parity"]["differing"]:
        context.log.error(f"fast and reference backends disagree: {rec['parity']}")
    cut = rec.get("max_det_cut") or {"images_over": 0, "detections_cut": 0}  # absent from older records
    if cut["images_over"]:
        context.log.error(f"{model_key}/{ds_name}: our predictions carry more than {MAX_DET} detections on "
                          f"{cut['images_over']} image(s), which the prediction step must never write (scored as "
                          f"pycocotools scores them; {cut['detections_cut']} detection(s) not evaluated)")
    # AP to 4 decimals for reading in the UI; the score file keeps full precision (tables and checks read it)
    meta_out = {k: dg.MetadataValue.float(round(float(v), 4)) for k, v in m.items() if v is not None}
    meta_out.update({
        "fingerprint": dg.MetadataValue.text(rec["fingerprint"]),
        # the score's own file and the two it was computed from (their fingerprints differ from the score's)
        "score_file": dg.MetadataValue.path(str(score_path(home.path, model_key, ds_name, rec["fingerprint"]))),
        "predictions_file": dg.MetadataValue.path(str(predictions_path(home.path, model_key, ds_name,
                                                                       meta["fingerprint"]))),
        "ground_truth_file": dg.MetadataValue.path(str(load_record(home.path / "datasets", ds_name).path / SPLIT
                                                       / ANNOTATIONS_FILE)),
        "headline_backend": dg.MetadataValue.text(rec["backend"]),
        "engine": dg.MetadataValue.text(rec.get("engine", "")),
        "parity": dg.MetadataValue.json(rec["parity"]),
        "recomputed": dg.MetadataValue.bool(recomputed),
        "undefined_metrics": dg.MetadataValue.json([k for k, v in m.items() if v is None]),
        "images": dg.MetadataValue.int(rec["num_images"]),
        "detections": dg.MetadataValue.int(rec["num_dets"]),
        "warnings": dg.MetadataValue.json(warnings),
        # facts for an asset check: our own predictions over max_det per image are a bug of the prediction step
        "images_over_max_det": dg.MetadataValue.int(cut["images_over"]),
        "detections_cut": dg.MetadataValue.int(cut["detections_cut"]),
        "max_det_cut": dg.MetadataValue.json(rec.get("max_det_cut") or cut),
    })
    return dg.MaterializeResult(metadata=meta_out, data_version=dg.DataVersion(rec["fingerprint"][:16]))


@dg.asset_check(asset=scores, partitions_def=dataset_model_partitions, blocking=False,
                description="Score well formed: the headline mAP50-95 is an AP in [0, 1] (never pycocotools' -1) and "
                            "the fast backend's parity with the reference evaluator is recorded and holds.")
def score_well_formed(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    ds_name, model_key = split_key(context)
    record = current_score(home.path, model_key, ds_name)
    if record is None:
        return check_result(Finding(False, f"{model_key}/{ds_name}: no current score"))
    return check_result(sanity.score_well_formed(f"{model_key}/{ds_name}", record))
