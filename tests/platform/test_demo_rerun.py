"""`bench demo` run again after a kill: its early warehouse load (after the datasets, before the campaign resumes)
meets the killed run's failed partitions and an incomplete campaign. That is the campaign in progress, not a
failure of the load: coverage is judged by the loads at the end (the campaign's, the report's), and a demo that
ends complete exits 0. Shown with `--datasets-only` (the same early load, without the training)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import bench_in_process

pytestmark = pytest.mark.integration


def test_an_incomplete_campaign_does_not_fail_the_early_warehouse_load(bench_home: Path,
                                                                       instance: dg.DagsterInstance) -> None:
    from bench_assets.rf100vl.training.models import ModelEntry, models_dir

    models_dir(bench_home).mkdir(parents=True)
    (models_dir(bench_home) / "yolo9-t.json").write_text(json.dumps(
        ModelEntry(model="yolo9-t", recipe="smoke", suite="mini").model_dump()))
    # What the killed demo left: its training run of mini-dense failed (the process group was SIGKILLed).
    instance.add_run(dg.DagsterRun(job_name="rf100vl_campaign_job", run_id=str(uuid.uuid4()),
                                   status=dg.DagsterRunStatus.FAILURE,
                                   tags={"dagster/partition": "mini-dense|yolo9-t"}))
    r = bench_in_process("demo", "--datasets-only", home=bench_home)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "(expected here) check coverage" in r.stderr and "failed mini-dense" in r.stderr
    assert "warehouse load failed" not in r.stderr
    assert sorted(p.name for p in (bench_home / "datasets").iterdir()) == [
        "mini-dense", "mini-large", "mini-shapes", "mini-tiny"]
