"""The dataset asset, its checks and the loader, materialized on a real sqlite Dagster instance."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from bench_assets.cli.location import run_job
from bench_assets.platform.warehouse import rebuild_warehouse
from bench_assets.report.jobs import warehouse_job
from bench_assets.rf100vl.defs.jobs import DATASET_OP, dataset_job
from bench_assets.rf100vl.defs.partitions import register_import, register_partitions
from tests.conftest import CORPUS, broken
from tests.tables import ALL_TABLES

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

DATASET_KEY = dg.AssetKey(["rf100vl", "dataset"])


def _import(instance, name: str, path: Path):  # noqa: ANN001, ANN202
    register_import(instance, name, path)
    cfg = {"ops": {DATASET_OP: {"config": {"source": str(path)}}}}
    return run_job(instance, dataset_job, partition_key=name, run_config=cfg)


def _checks(instance, name: str) -> dict[str, bool | None]:  # noqa: ANN001
    """Latest completed result of each dataset check for one partition (None: never evaluated)."""
    from definitions import defs

    out: dict[str, bool | None] = {}
    for key in defs.resolve_asset_graph().get_check_keys_for_assets({DATASET_KEY}):
        history = instance.event_log_storage.get_asset_check_execution_history(
            key, limit=20, partition_filter=PartitionKeyFilter(key=name))
        done = [r for r in history if r.status in (AssetCheckExecutionRecordStatus.SUCCEEDED,
                                                    AssetCheckExecutionRecordStatus.FAILED)]
        out[key.name] = None if not done else done[0].status == AssetCheckExecutionRecordStatus.SUCCEEDED
    return out


def test_mini_partition_materializes_with_metadata_and_green_checks(instance, bench_home: Path) -> None:
    register_partitions(instance, ["mini-dense"])
    outcome = run_job(instance, dataset_job, partition_key="mini-dense")
    assert outcome.success, outcome.errors
    ev = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=DATASET_KEY,
                                                               asset_partitions=["mini-dense"]), limit=1)
    meta = ev.records[0].asset_materialization.metadata
    assert meta["classes"].value == 1
    assert meta["max_annotations_per_image"].value >= 40
    assert meta["preview"].value.startswith("![samples with boxes](data:image/jpeg;base64,")
    for key in ("train_images", "valid_images", "test_images", "size_on_disk_mb", "megapixels_max", "splits"):
        assert key in meta
    checks = _checks(instance, "mini-dense")
    assert checks == {"lock_matches_files": True, "splits_non_empty": True, "hygiene": True,
                      "class_count_matches_catalog": True, "ground_truth_scores_perfect": True,
                      "disk_projection": True, "boxes_within_max_det": True}


def test_bad_partition_fails_alone_and_loses_nothing(instance, bench_home: Path, tmp_path: Path) -> None:
    good = _import(instance, "good", broken("valid_base", tmp_path))
    assert good.success
    assert run_job(instance, warehouse_job).success
    wh = bench_home / "warehouse.duckdb"
    before = duckdb.connect(str(wh), read_only=True).execute("SELECT * FROM datasets").fetchall()

    for case in ("bad_json", "truncated_image", "bbox_outside"):
        bad = _import(instance, case, broken(case, tmp_path))
        assert not bad.success
        assert len(bad.errors) == 1 and "fix:" in bad.errors[0], bad.errors
    bad_tar = _import(instance, "dotdot", CORPUS / "tars" / "dotdot.tar")
    assert not bad_tar.success and "'..'" in bad_tar.errors[0]

    # re-import of a broken version of `good` keeps the good version current
    bad_good = _import(instance, "good", broken("unknown_category", tmp_path))
    assert not bad_good.success and "category" in bad_good.errors[0]
    assert run_job(instance, warehouse_job).success
    after = duckdb.connect(str(wh), read_only=True).execute("SELECT * FROM datasets").fetchall()
    assert after == before
    assert _checks(instance, "good")["lock_matches_files"] is True


def test_blocking_lock_predicate_blocks_a_version_whose_files_changed_after_placement(instance, bench_home,
                                                                                     tmp_path) -> None:
    assert _import(instance, "ds", broken("valid_base", tmp_path)).success
    from bench_assets.rf100vl.datasets.store import current_version, load_record

    rec = load_record(bench_home / "datasets", "ds")
    ann = rec.path / "train" / "_annotations.coco.json"
    ann.write_text(ann.read_text() + " ")
    # same content re-imported -> same version already stored -> the promotion gate sees the tampered file
    outcome = _import(instance, "ds", broken("valid_base", tmp_path / "again"))
    assert not outcome.success
    assert len(outcome.errors) == 1 and "lock_matches_files: train: annotations_sha256" in outcome.errors[0]
    assert "BLOCKED" in outcome.errors[0]
    assert current_version(bench_home / "datasets", "ds") is None  # a blocked version is never current


def test_lock_check_on_stored_files_fails_after_tampering(instance, bench_home, tmp_path) -> None:
    assert _import(instance, "ds", broken("valid_base", tmp_path)).success
    from bench_assets.rf100vl.datasets.store import load_record

    rec = load_record(bench_home / "datasets", "ds")
    assert run_job(instance, dataset_job, partition_key="ds", checks_only=True).success
    (rec.path / "test" / "extra.png").write_bytes(b"unlisted")
    outcome = run_job(instance, dataset_job, partition_key="ds", checks_only=True)
    assert not outcome.success
    assert [e for e in outcome.errors if "lock_matches_files" in e and "no image lists" in e], outcome.errors
    assert _checks(instance, "ds")["lock_matches_files"] is False


def test_hygiene_check_catches_planted_id_zero(instance, bench_home: Path, tmp_path: Path) -> None:
    assert _import(instance, "ds", broken("valid_base", tmp_path)).success
    from bench_assets.rf100vl.datasets.store import load_record

    rec = load_record(bench_home / "datasets", "ds")
    ann = rec.path / "valid" / "_annotations.coco.json"
    doc = json.loads(ann.read_text())
    doc["annotations"][0]["id"] = 0
    ann.write_text(json.dumps(doc))
    outcome = run_job(instance, dataset_job, partition_key="ds", checks_only=True)  # re-check what is stored
    assert _checks(instance, "ds")["hygiene"] is False
    assert not outcome.success


def test_warehouse_rebuilds_identically_from_artifacts(instance, bench_home: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert _import(instance, name, broken("valid_base" if name == "a" else "bbox_slightly_outside",
                                               tmp_path / name)).success
    wh = bench_home / "warehouse.duckdb"
    rebuild_warehouse(bench_home, wh, ALL_TABLES)
    q = "SELECT * EXCLUDE (path) FROM datasets ORDER BY dataset"
    first = duckdb.connect(str(wh), read_only=True).execute(q).fetchall()
    splits = duckdb.connect(str(wh), read_only=True).execute("SELECT count(*) FROM dataset_splits").fetchone()
    wh.unlink()
    counts = rebuild_warehouse(bench_home, wh, ALL_TABLES)
    artifact_tables = {t: counts[t] for t in ("datasets", "dataset_splits", "runs", "epochs", "scores")}
    assert artifact_tables == {"datasets": 2, "dataset_splits": 6, "runs": 0, "epochs": 0, "scores": 0}
    assert splits == (6,)
    assert duckdb.connect(str(wh), read_only=True).execute(q).fetchall() == first
