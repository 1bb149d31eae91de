"""The backfill schedules, the rescore-on-code-change sensor and `bench status` over a synthetic campaign."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import dagster as dg
import pytest

from bench_assets.rf100vl.campaign.progress import campaign_progress, classify
from bench_assets.rf100vl.defs.jobs import latest_runs
from bench_assets.rf100vl.defs.schedules import (
    rescore_on_scoring_change,
    rf100vl_backfill,
    rf100vl_dataset_backfill,
)
from bench_assets.rf100vl.training.models import ModelEntry, models_dir
from tests.conftest import bench_in_process
from tests.synthetic_campaign import make_campaign

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


def _add_run(instance: dg.DagsterInstance, key: str, status: dg.DagsterRunStatus) -> None:
    instance.add_run(dg.DagsterRun(job_name="rf100vl_campaign_job", run_id=str(uuid.uuid4()), status=status,
                                   tags={"dagster/partition": key}))


@pytest.fixture
def campaign(bench_home: Path, instance: dg.DagsterInstance) -> tuple[Path, list[str]]:
    make_campaign(bench_home, n_models=2, n_datasets=6, seed=2)
    names = sorted(p.name for p in (bench_home / "datasets").iterdir())
    return bench_home, names


def test_classify_prefers_files_then_the_newest_run() -> None:
    assert classify(True, "FAILURE") == "done"
    assert classify(False, "STARTED") == "running"
    assert classify(False, "QUEUED") == "queued"
    assert classify(False, "FAILURE") == "failed"
    assert classify(False, "SUCCESS") == "missing"  # a run succeeded but its score is gone: redo it
    assert classify(False, None) == "missing"


def test_backfill_requests_missing_and_failed_partitions_only(campaign, instance: dg.DagsterInstance) -> None:
    home, names = campaign
    for model, ds in (("syna-t", names[0]), ("syna-s", names[1]), ("syna-s", names[2]), ("syna-t", names[3])):
        (home / "eval" / model / ds / "CURRENT.score").unlink()
        for p in (home / "eval" / model / ds).glob("*.score.json"):
            p.unlink()
    _add_run(instance, f"{names[1]}|syna-s", dg.DagsterRunStatus.FAILURE)
    _add_run(instance, f"{names[2]}|syna-s", dg.DagsterRunStatus.STARTED)
    _add_run(instance, f"{names[3]}|syna-t", dg.DagsterRunStatus.NOT_STARTED)  # waiting to start

    states = {p.model: p.states for p in campaign_progress(home, latest_runs(instance))}
    assert states["syna-t"][names[0]] == "missing" and states["syna-s"][names[1]] == "failed"
    assert states["syna-s"][names[2]] == "running" and states["syna-t"][names[3]] == "queued"

    requests = rf100vl_backfill(dg.build_schedule_context(instance=instance))
    keys = [(r.partition_key.keys_by_dimension["dataset"], r.partition_key.keys_by_dimension["model"])
            for r in requests]
    assert sorted(keys) == sorted([(names[0], "syna-t"), (names[1], "syna-s")])  # not the running/queued ones
    images = [int(r.tags["dagster/priority"]) for r in requests]
    assert images == sorted(images, reverse=True)  # longest first
    assert {r.tags["bench/backfill"] for r in requests} == {"missing", "failed"}
    assert isinstance(rf100vl_dataset_backfill(dg.build_schedule_context(instance=instance)), dg.SkipReason)


def test_dataset_backfill_fetches_what_a_suite_needs(campaign, instance: dg.DagsterInstance) -> None:
    home, names = campaign
    (models_dir(home) / "synb-t.json").write_text(json.dumps(
        ModelEntry(model="synb-t", recipe=str(home / "recipes" / "syna.json"), suite="mini").model_dump()))
    requests = rf100vl_dataset_backfill(dg.build_schedule_context(instance=instance))
    assert sorted(r.partition_key for r in requests) == ["mini-dense", "mini-large", "mini-shapes", "mini-tiny"]
    assert "mini-tiny" in instance.get_dynamic_partitions("rf100vl_dataset")
    assert isinstance(rf100vl_backfill(dg.build_schedule_context(instance=instance)), dg.SkipReason)


def test_rescore_sensor_requests_partitions_scored_by_older_code(campaign, instance: dg.DagsterInstance) -> None:
    home, names = campaign
    ctx = dg.build_sensor_context(instance=instance)
    assert isinstance(rescore_on_scoring_change(ctx), dg.SkipReason)
    edir = home / "eval" / "syna-s" / names[4]
    score = edir / f"{(edir / 'CURRENT.score').read_text().strip()[:16]}.score.json"
    doc = json.loads(score.read_text())
    doc["inputs"]["scoring_code_sha256"] = "f" * 64
    score.write_text(json.dumps(doc))
    requests = rescore_on_scoring_change(dg.build_sensor_context(instance=instance))
    assert [r.partition_key.keys_by_dimension for r in requests] == [{"dataset": names[4], "model": "syna-s"}]
    assert requests[0].run_key.startswith(f"rescore:{names[4]}|syna-s:")


def test_rescore_sensor_requests_partitions_scored_by_another_evaluator_version(
        campaign, instance: dg.DagsterInstance) -> None:
    """A score computed with another hotcoco (or pycocotools) version is stale: the fingerprint names the
    evaluators, and the sensor asks for a rescore of that partition only."""
    home, names = campaign
    edir = home / "eval" / "syna-t" / names[2]
    score = edir / f"{(edir / 'CURRENT.score').read_text().strip()[:16]}.score.json"
    doc = json.loads(score.read_text())
    assert any(e.startswith("hotcoco ") for e in doc["inputs"]["engines"])
    doc["inputs"]["engines"] = ["hotcoco 0.0.1", *doc["inputs"]["engines"][1:]]
    score.write_text(json.dumps(doc))
    requests = rescore_on_scoring_change(dg.build_sensor_context(instance=instance))
    assert [r.partition_key.keys_by_dimension for r in requests] == [{"dataset": names[2], "model": "syna-t"}]


def test_bench_status_prints_progress_and_eta(campaign, instance: dg.DagsterInstance) -> None:
    home, names = campaign
    (home / "eval" / "syna-t" / names[0] / "CURRENT.score").unlink()
    for p in (home / "eval" / "syna-t" / names[0]).glob("*.score.json"):
        p.unlink()
    _add_run(instance, f"{names[0]}|syna-t", dg.DagsterRunStatus.FAILURE)
    res = bench_in_process("status", home=home, env={"BENCH_CPU_LANES": "2"})
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("syna-t"))
    assert line.split()[2:7] == ["5", "0", "0", "1", "0"]
    assert "h on 2 lane(s)" in line
    assert f"failed: {names[0]}" in res.stdout
    done = next(x for x in res.stdout.splitlines() if x.startswith("syna-s"))
    assert done.split()[2:7] == ["6", "0", "0", "0", "0"] and "finished" in done
    res = bench_in_process("status", "--json", "--model", "syna-t", home=home)
    rows = json.loads(res.stdout)
    assert [r["model"] for r in rows] == ["syna-t"] and rows[0]["states"][names[0]] == "failed"


def test_runs_queued_without_a_priority_get_the_longest_first_one(campaign, instance: dg.DagsterInstance) -> None:
    """A backfill launched from the UI queues runs without `dagster/priority`; the product's run coordinator gives
    each (dataset, model) run its dataset's training images (what `bench campaign` sets) as it is queued, before
    the daemon can dequeue it, and leaves runs that have a priority or no (dataset, model) key."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
    from dagster._core.run_coordinator import SubmitRunContext
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    from bench_assets.platform.run_queue import PriorityRunCoordinator
    from bench_assets.rf100vl.datasets.store import load_record

    home, names = campaign
    assert isinstance(instance.run_coordinator, PriorityRunCoordinator)  # what the home's dagster.yaml names

    origin = RemoteJobOrigin(RemoteRepositoryOrigin(InProcessCodeLocationOrigin(
        LoadableTargetOrigin(python_file="definitions.py")), "__repository__"), "__ASSET_JOB")  # queued runs need one

    def submit(job: str, tags: dict[str, str]) -> dg.DagsterRun:
        run = dg.DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.NOT_STARTED,
                            tags=tags, remote_job_origin=origin)
        instance.add_run(run)
        return instance.run_coordinator.submit_run(SubmitRunContext(run, workspace=None))

    queued = {name: submit("__ASSET_JOB", {"dagster/partition": f"{name}|syna-t"}) for name in names[:3]}
    for name, run in queued.items():
        images = load_record(home / "datasets", name).manifest["splits"]["train"]["images"]
        assert run.status == dg.DagsterRunStatus.QUEUED
        assert instance.get_run_by_id(run.run_id).tags["dagster/priority"] == str(images)
    keep = submit("__ASSET_JOB", {"dagster/partition": f"{names[3]}|syna-t", "dagster/priority": "7"})
    assert instance.get_run_by_id(keep.run_id).tags["dagster/priority"] == "7"
    other = submit("rf100vl_dataset_job", {"dagster/partition": names[4]})
    assert "dagster/priority" not in instance.get_run_by_id(other.run_id).tags
    unknown = submit("__ASSET_JOB", {"dagster/partition": "no-such-dataset|syna-t"})  # nothing stored: no priority
    assert unknown.status == dg.DagsterRunStatus.QUEUED
    assert "dagster/priority" not in instance.get_run_by_id(unknown.run_id).tags
