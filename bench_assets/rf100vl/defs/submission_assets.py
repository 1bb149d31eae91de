"""`rf100vl/submission` [model]: the model's va.submission.v1 file, computed from the artifacts."""

import json

import dagster as dg

from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.defs.partitions import model_partitions, on_model
from bench_assets.rf100vl.defs.score_assets import scores
from bench_assets.rf100vl.submission.build import SubmissionError, build_submission, submission_path
from resources.bench_home import BenchHome


@dg.asset(key=["rf100vl", "submission"], group_name="rf100vl", partitions_def=model_partitions,
          deps=[dg.AssetDep(scores, partition_mapping=on_model)], kinds={"json"},
          description="va.submission.v1 per model: headline over the campaign's datasets, valid_submission and "
                      "every invalid reason computed from scores, run stats and dataset locks.")
def submission(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
    model = context.partition_key
    try:
        doc = build_submission(home.path, model)
    except SubmissionError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    out = submission_path(home.path, model)
    atomic_write_json(out, doc)
    rf = doc["rf100vl"]
    if not rf["valid_submission"]:
        context.log.warning(f"{model}: not submittable: " + "; ".join(rf["invalid_reasons"]))
    acc = doc["accuracy"]
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(out)),
            "valid_submission": dg.MetadataValue.bool(rf["valid_submission"]),
            "invalid_reasons": dg.MetadataValue.json(rf["invalid_reasons"]),
            "datasets": dg.MetadataValue.int(len(rf["datasets"])),
            "mAP50_95": dg.MetadataValue.float(acc["mAP_50_95"] if acc["mAP_50_95"] is not None else float("nan")),
            "mAP50": dg.MetadataValue.float(acc["mAP_50"] if acc["mAP_50"] is not None else float("nan")),
            "domain_means": dg.MetadataValue.json(rf["domain_means"]),
        },
        data_version=dg.DataVersion(json.dumps([rf["dataset_versions_sha256"], acc["mAP_50_95"],
                                                rf["invalid_reasons"]])[:200]),
    )
