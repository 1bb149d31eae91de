"""The backfill schedule: every night, request the missing and failed partitions of the registered models.

Off by default (turn it on in the UI for a campaign). Which models: all registered ones, or the list in
`BENCH_BACKFILL_MODELS` (comma-separated). Datasets without a stored version get a dataset run first;
the rest get a campaign run per (dataset, model), longest first via the `dagster/priority` tag. Running
and queued partitions are left alone, so a slow campaign is never double-booked.
"""

import os

import dagster as dg

from bench_assets.platform.automation import sensor_interval_s
from bench_assets.rf100vl.campaign.progress import campaign_progress
from bench_assets.rf100vl.datasets.store import load_record
from bench_assets.rf100vl.defs.jobs import campaign_job, dataset_job, latest_runs, rescore_job
from resources.paths import bench_home_path

MAX_REQUESTS = 200  # per tick; the run queue and the gpu pool pace them


def _models() -> list[str] | None:
    return [m for m in os.environ.get("BENCH_BACKFILL_MODELS", "").split(",") if m] or None


def plan_backfill(home, instance: dg.DagsterInstance, models: list[str] | None  # noqa: ANN001
                  ) -> tuple[list[str], list[tuple[str, str, int, str]]]:
    """(datasets with no stored version, [(dataset, model, train images, state)] to run, longest first)."""
    from bench_assets.rf100vl.defs.partitions import (
        DATASET_PARTITIONS_NAME,
        known_names,
        register_model_partition,
        register_partitions,
        unknown_names,
    )

    needs_data: set[str] = set()
    todo: list[tuple[str, str, int, str]] = []
    known = known_names(home)
    for prog in campaign_progress(home, latest_runs(instance), models):
        names = [d for d, s in prog.states.items() if s in ("missing", "failed")]
        gone = unknown_names(DATASET_PARTITIONS_NAME, names, known)  # removed since the model listed them
        names = [n for n in names if n not in gone]
        if not names:
            continue
        register_partitions(instance, names)
        register_model_partition(instance, prog.model)
        for name in names:
            rec = load_record(home / "datasets", name)
            if rec is None:
                needs_data.add(name)
            else:
                todo.append((name, prog.model, rec.manifest["splits"]["train"]["images"], prog.states[name]))
    todo.sort(key=lambda t: (-t[2], t[0], t[1]))
    return sorted(needs_data), todo


@dg.schedule(name="rf100vl_backfill", cron_schedule="0 2 * * *", job=campaign_job,
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="Nightly: run the missing and failed dataset x model partitions of the registered models "
                         "(BENCH_BACKFILL_MODELS narrows the list), longest first.")
def rf100vl_backfill(context: dg.ScheduleEvaluationContext):  # noqa: ANN201
    _, todo = plan_backfill(bench_home_path(), context.instance, _models())
    if not todo:
        return dg.SkipReason("every expected partition is done, running or queued (or waits for its dataset)")
    return [dg.RunRequest(partition_key=dg.MultiPartitionKey({"dataset": ds, "model": model}),
                          tags={"dagster/priority": str(images), "bench/backfill": state})
            for ds, model, images, state in todo[:MAX_REQUESTS]]


@dg.schedule(name="rf100vl_dataset_backfill", cron_schedule="0 1 * * *", job=dataset_job,
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="Nightly, before rf100vl_backfill: fetch the datasets a registered model's suite needs "
                         "and that are not stored yet.")
def rf100vl_dataset_backfill(context: dg.ScheduleEvaluationContext):  # noqa: ANN201
    needs_data, _ = plan_backfill(bench_home_path(), context.instance, _models())
    if not needs_data:
        return dg.SkipReason("every dataset the registered models need is stored")
    return [dg.RunRequest(partition_key=n, tags={"bench/backfill": "dataset"}) for n in needs_data[:MAX_REQUESTS]]


def stale_scores(home) -> list[tuple[str, str]]:  # noqa: ANN001
    """(dataset, model) whose current score was computed by a different version of scoring.py or of the
    evaluator libraries (hotcoco, pycocotools)."""
    from bench_assets.rf100vl.scoring.eval_store import (
        all_current_score_pointers,
        current_score,
        scoring_code_sha256,
        scoring_engines,
    )

    code, engines = scoring_code_sha256(), scoring_engines()
    out = []
    for pointer in all_current_score_pointers(home):
        model, dataset = pointer.parent.parent.name, pointer.parent.name
        rec = current_score(home, model, dataset)
        if rec is not None and (rec["inputs"]["scoring_code_sha256"] != code
                                or rec["inputs"].get("engines") != engines):
            out.append((dataset, model))
    return out


@dg.sensor(name="rf100vl_rescore_on_scoring_change", job=rescore_job, minimum_interval_seconds=sensor_interval_s(300),
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="When scoring.py or an evaluator library (hotcoco, pycocotools) changes, re-score every "
                       "current partition from its saved predictions (no retraining); one request per partition "
                       "and scoring version.")
def rescore_on_scoring_change(context: dg.SensorEvaluationContext):  # noqa: ANN201
    from bench_assets.platform.fsutil import canonical_json_sha256
    from bench_assets.rf100vl.scoring.eval_store import scoring_code_sha256, scoring_engines

    stale = stale_scores(bench_home_path())
    if not stale:
        return dg.SkipReason("every current score was computed by the current scoring code and evaluators")
    code = canonical_json_sha256([scoring_code_sha256(), scoring_engines()])[:16]
    return [dg.RunRequest(run_key=f"rescore:{ds}|{model}:{code}",
                          partition_key=dg.MultiPartitionKey({"dataset": ds, "model": model}))
            for ds, model in stale]
