"""The RF100-VL jobs: what `bench`, the schedules and the sensors launch. Every other module refers to a job
through these objects (its `.name` where Dagster wants a name), never through a string of its own."""

from typing import Any

import dagster as dg

from bench_assets.rf100vl.defs.checkpoint_assets import checkpoint
from bench_assets.rf100vl.defs.dataset_assets import catalog, dataset
from bench_assets.rf100vl.defs.prediction_assets import predictions
from bench_assets.rf100vl.defs.pretrained_assets import pretrained
from bench_assets.rf100vl.defs.score_assets import scores
from bench_assets.rf100vl.defs.submission_assets import submission

dataset_job = dg.define_asset_job("rf100vl_dataset_job", selection=dg.AssetSelection.assets(dataset),
                                  description="Fetch, verify and version-lock one dataset partition.")
pretrained_job = dg.define_asset_job("rf100vl_pretrained_job", selection=dg.AssetSelection.assets(pretrained),
                                    description="Acquire, check and lock one model's pretrained weights.")
catalog_job = dg.define_asset_job("rf100vl_catalog_job", selection=dg.AssetSelection.assets(catalog),
                                  description="The catalogue and the platform preflight checks.")
campaign_job = dg.define_asset_job(
    "rf100vl_campaign_job", selection=dg.AssetSelection.assets(checkpoint, predictions, scores),
    description="Train, predict and score one dataset x model partition (resumable; finished steps are reused).")
train_job = dg.define_asset_job("rf100vl_train_job", selection=dg.AssetSelection.assets(checkpoint),
                                description="Fine-tune one dataset x model partition on a leased lane.")
eval_job = dg.define_asset_job("rf100vl_eval_job", selection=dg.AssetSelection.assets(predictions, scores),
                               description="Predict test with the finished checkpoint and score it (no training).")
submission_job = dg.define_asset_job("rf100vl_submission_job", selection=dg.AssetSelection.assets(submission),
                                     description="Build one model's va.submission.v1 file from its current scores.")
campaign_view_job = dg.define_asset_job(
    "rf100vl_campaign_view_job", selection=dg.AssetSelection.assets(["rf100vl", "campaign_status"],
                                                                     ["rf100vl", "campaign_plan"]),
    description="Rebuild the campaign view and the plan (what the automation does after a score lands).")
rescore_job = dg.define_asset_job("rf100vl_rescore_job", selection=dg.AssetSelection.assets(scores),
                                  description="Recompute scores from saved predictions, without retraining.")

JOBS = (dataset_job, pretrained_job, catalog_job, train_job, campaign_job, eval_job, rescore_job, submission_job,
        campaign_view_job)
# The jobs whose runs make a (dataset, model) partition's progress (`bench status`, the coverage check).
CAMPAIGN_JOBS = (campaign_job, train_job, eval_job)
# The op of the dataset asset, for run config ({"ops": {DATASET_OP: {"config": ...}}}).
DATASET_OP = dataset.op.name
PRETRAINED_OP = pretrained.op.name


def latest_runs(instance: Any) -> dict[str, str]:
    """partition key ("dataset|model") -> status name of its newest campaign/train/eval run."""
    out: dict[str, str] = {}
    for job in CAMPAIGN_JOBS:
        for rec in instance.get_run_records(filters=dg.RunsFilter(job_name=job.name), limit=100_000):
            key = rec.dagster_run.tags.get("dagster/partition")
            if key is None:
                continue
            prev = out.get(key)
            if prev is None or rec.create_timestamp.timestamp() > prev[1]:
                out[key] = (rec.dagster_run.status.value, rec.create_timestamp.timestamp())  # type: ignore[assignment]
    return {k: v[0] for k, v in out.items()}  # type: ignore[index]
