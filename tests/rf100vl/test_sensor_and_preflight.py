from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

from bench_assets.rf100vl.defs.jobs import catalog_job, dataset_job
from bench_assets.rf100vl.defs.partitions import DATASET_PARTITIONS_NAME
from bench_assets.rf100vl.defs.sensors import inbox_requests, inbox_sensor
from bench_assets.rf100vl.training.preflight import (
    PLATFORM_TRAIN_FIELDS,
    missing_train_fields,
    project_disk,
    trainconfig_fields,
    unwritable_dirs,
)
from resources.bench_home import BenchHome
from tests.conftest import CORPUS

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    for p in [path, *path.rglob("*")]:
        os.utime(p, (old, old))


def test_inbox_sensor_registers_partition_and_requests_run(instance, bench_home: Path) -> None:
    inbox = bench_home / "inbox"
    shutil.copytree(CORPUS / "broken" / "valid_base", inbox / "lab-shapes")
    shutil.copy(CORPUS / "tars" / "good.tar", inbox / "from-tar.tar")
    _age(inbox / "lab-shapes", 60)
    _age(inbox / "from-tar.tar", 60)
    ctx = dg.build_sensor_context(instance=instance, resources={"home": BenchHome()})
    result = inbox_sensor(ctx)
    assert result.dynamic_partitions_requests[0].partition_keys == ["from-tar", "lab-shapes"]
    keys = sorted(r.partition_key for r in result.run_requests)
    assert keys == ["from-tar", "lab-shapes"]
    req = next(r for r in result.run_requests if r.partition_key == "lab-shapes")
    assert req.run_config["ops"]["rf100vl__dataset"]["config"]["source"] == str(inbox / "lab-shapes")

    # the run it asks for imports the dataset
    from bench_assets.cli.location import run_job

    instance.add_dynamic_partitions(DATASET_PARTITIONS_NAME, ["lab-shapes"])
    outcome = run_job(instance, dataset_job, partition_key="lab-shapes", run_config=req.run_config)
    assert outcome.success, outcome.errors
    assert (bench_home / "datasets" / "lab-shapes" / "CURRENT").exists()


def test_inbox_waits_for_copies_to_settle_and_dedups_by_content(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    shutil.copytree(CORPUS / "broken" / "valid_base", inbox / "fresh")
    _age(inbox / "fresh", 0)  # just copied in
    new, runs, skipped = inbox_requests(inbox, set(), now=time.time())
    assert not runs and "settle" in skipped[0]
    _age(inbox / "fresh", 60)
    _, first, _ = inbox_requests(inbox, set(), now=time.time())
    _, same, _ = inbox_requests(inbox, {"fresh"}, now=time.time())
    assert first[0].run_key == same[0].run_key  # unchanged content: the sensor's run_key dedups it
    (inbox / "fresh" / "train" / "_annotations.coco.json").write_text("{}")
    _age(inbox / "fresh", 60)
    new, changed, _ = inbox_requests(inbox, {"fresh"}, now=time.time())
    assert not new and changed[0].run_key != first[0].run_key
    (inbox / "bad name!").mkdir()
    _, _, skipped = inbox_requests(inbox, set(), now=time.time() + 100)
    assert any("not a valid dataset name" in s for s in skipped)


def test_disk_projection() -> None:
    p = project_disk(free_bytes=10 * 10**9, dataset_bytes=2 * 10**9, num_images=1000)
    assert p.cache_bytes == 953_000 * 1000 and p.ok
    tight = project_disk(free_bytes=3 * 10**9, dataset_bytes=2 * 10**9, num_images=1000)
    assert not tight.ok
    assert project_disk(0, 0, 100, imgsz=416).cache_bytes == 66_000_000


def test_unwritable_dirs(tmp_path: Path) -> None:
    blocker = tmp_path / "runs"
    blocker.write_text("a file where a directory should be")
    bad = unwritable_dirs([tmp_path / "datasets", blocker])
    assert list(bad) == [str(blocker)]


def test_installed_libreyolo_has_every_field_the_platform_sets() -> None:
    version, fields = trainconfig_fields()
    assert version == "1.6.0"
    assert missing_train_fields(fields) == []
    assert missing_train_fields(fields - {"eval_max_det"}) == ["eval_max_det"]
    assert "amp_dtype" in PLATFORM_TRAIN_FIELDS


def test_catalog_preflight_checks_pass(instance) -> None:
    from bench_assets.cli.location import run_job

    outcome = run_job(instance, catalog_job)
    assert outcome.success, outcome.errors
