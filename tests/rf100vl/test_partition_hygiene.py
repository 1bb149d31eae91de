"""Partitions that cannot rot: only known datasets and registered models become partitions (the registration path
refuses the rest with the reason; the guard sensor removes what the UI added past it), and `bench datasets|models
remove NAME [--purge]` deletes a partition with its materialization status, keeping the files unless --purge.

Real sqlite Dagster instance (`instance` fixture) and the real CLI (`run_bench`)."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.event_api import PartitionKeyFilter

from bench_assets.cli.location import run_job
from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.datasets.sources import SourceSpec, register
from bench_assets.rf100vl.defs.jobs import dataset_job
from bench_assets.rf100vl.defs.partition_guard import rf100vl_partition_guard
from bench_assets.rf100vl.defs.partitions import (
    DATASET_PARTITIONS_NAME,
    MODEL_PARTITIONS_NAME,
    KnownNames,
    register_model_partition,
    register_partitions,
    unknown_names,
)
from resources.bench_home import BenchHome
from tests.conftest import bench_in_process

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

DATASET_KEY = dg.AssetKey(["rf100vl", "dataset"])
SCORES_KEY = dg.AssetKey(["rf100vl", "scores"])
SUBMISSION_KEY = dg.AssetKey(["rf100vl", "submission"])


def _datasets(instance) -> list[str]:  # noqa: ANN001
    return sorted(instance.get_dynamic_partitions(DATASET_PARTITIONS_NAME))


def _models(instance) -> list[str]:  # noqa: ANN001
    return sorted(instance.get_dynamic_partitions(MODEL_PARTITIONS_NAME))


def _events(instance, key: dg.AssetKey, partition: str) -> int:  # noqa: ANN001
    """Materializations and planned/failed materializations of one partition of an asset, as the UI counts them."""
    n = len(instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]),
                                            limit=100).records)
    return n + len(instance.fetch_failed_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=100).records)


def _checks_run(instance, name: str) -> int:  # noqa: ANN001
    from definitions import defs

    keys = defs.resolve_asset_graph().get_check_keys_for_assets({DATASET_KEY})
    return sum(len(instance.event_log_storage.get_asset_check_execution_history(
        k, limit=20, partition_filter=PartitionKeyFilter(key=name))) for k in keys)


# ----------------------------------------------------------------------------------------------- the rule


def test_rule_names_the_set_the_name_and_the_fix(tmp_path: Path) -> None:
    known = KnownNames(home=tmp_path, datasets=frozenset({"actions", "mini-tiny"}), models=frozenset({"yolo9-t"}))
    assert unknown_names(DATASET_PARTITIONS_NAME, ["actions", "mini-tiny"], known) == {}
    bad = unknown_names(DATASET_PARTITIONS_NAME, ["actions", "not-a-dataset", "bad name!"], known)
    assert sorted(bad) == ["bad name!", "not-a-dataset"]
    assert bad["not-a-dataset"].startswith("rf100vl_dataset: 'not-a-dataset' is not a known dataset")
    assert "bench datasets import PATH --name not-a-dataset" in bad["not-a-dataset"]
    assert "invalid dataset name 'bad name!'" in bad["bad name!"]
    models = unknown_names(MODEL_PARTITIONS_NAME, ["yolo9-t", "yolo9-zz", "not-a-model"], known)
    assert sorted(models) == ["not-a-model", "yolo9-zz"]
    assert "'yolo9-zz' is not a registered model" in models["yolo9-zz"]
    assert "bench campaign --model yolo9-zz" in models["yolo9-zz"]
    assert "not a family-size model key" in models["not-a-model"]


def test_registration_refuses_unknown_names_and_adds_nothing(instance, bench_home: Path) -> None:
    with pytest.raises(ValueError) as exc:
        register_partitions(instance, ["mini-tiny", "not-a-dataset"])
    msg = str(exc.value)
    assert "rf100vl_dataset" in msg and "'not-a-dataset'" in msg and "bench datasets import" in msg
    assert "mini-tiny" not in msg
    assert _datasets(instance) == []  # all or nothing: the known name was not added either

    with pytest.raises(ValueError, match=r"rf100vl_model: 'yolo9-zz' is not a registered model.*bench campaign"):
        register_model_partition(instance, "yolo9-zz")
    assert _models(instance) == []

    # Known: catalogue, mini, a source recorded (an import, a synthetic dataset), a stored version, an inbox entry.
    register(bench_home / "sources", "lab-shapes", SourceSpec(kind="local", path="/nowhere"))
    (bench_home / "datasets" / "stored-only" / "0123456789ab").mkdir(parents=True)
    (bench_home / "inbox" / "dropped").mkdir(parents=True)
    names = ["actions", "mini-tiny", "lab-shapes", "stored-only", "dropped"]
    assert sorted(register_partitions(instance, names)) == sorted(names)
    # Models: a default recipe's family-size key, and one recorded under BENCH_HOME/models.
    atomic_write_json(bench_home / "models" / "custom-x.json", {"model": "custom-x", "recipe": "default"})
    register_model_partition(instance, "yolo9-t")
    register_model_partition(instance, "custom-x")
    assert _models(instance) == ["custom-x", "yolo9-t"]


# --------------------------------------------------------------------------------------------- the guard


def test_guard_removes_names_added_past_registration_and_keeps_known_ones(instance, bench_home: Path) -> None:
    from definitions import defs

    register(bench_home / "sources", "lab-shapes", SourceSpec(kind="local", path="/nowhere"))
    # What the UI's "Add a partition" does: straight onto the instance, no validation.
    instance.add_dynamic_partitions(DATASET_PARTITIONS_NAME, ["not-a-dataset", "actions", "mini-tiny", "lab-shapes"])
    instance.add_dynamic_partitions(MODEL_PARTITIONS_NAME, ["yolo9-zz", "yolo9-t"])
    # Status recorded against the junk name (one of its dataset x model partitions): it must go with the name.
    junk = "not-a-dataset|yolo9-t"
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=SCORES_KEY, partition=junk))
    assert _events(instance, SCORES_KEY, junk) == 1

    ctx = dg.build_sensor_context(instance=instance, resources={"home": BenchHome()}, definitions=defs)
    result = rf100vl_partition_guard(ctx)
    assert isinstance(result, dg.SkipReason)
    text = result.skip_message
    assert "removed 2 unknown partition(s)" in text
    assert "rf100vl_dataset/not-a-dataset: rf100vl_dataset: 'not-a-dataset' is not a known dataset" in text
    assert "rf100vl_model/yolo9-zz: rf100vl_model: 'yolo9-zz' is not a registered model" in text
    assert _datasets(instance) == ["actions", "lab-shapes", "mini-tiny"]
    assert _models(instance) == ["yolo9-t"]
    assert _events(instance, SCORES_KEY, junk) == 0  # its status went with it

    again = rf100vl_partition_guard(dg.build_sensor_context(instance=instance, resources={"home": BenchHome()},
                                                            definitions=defs))
    assert "every dataset and model partition is a known dataset or a registered model" in again.skip_message
    assert _datasets(instance) == ["actions", "lab-shapes", "mini-tiny"] and _models(instance) == ["yolo9-t"]


def test_guard_removes_nothing_when_bench_home_is_missing(instance, bench_home: Path, tmp_path: Path) -> None:
    """An unmounted home would make every imported dataset look unknown: the guard judges nothing then."""
    register(bench_home / "sources", "lab-shapes", SourceSpec(kind="local", path="/nowhere"))
    instance.add_dynamic_partitions(DATASET_PARTITIONS_NAME, ["lab-shapes", "not-a-dataset"])
    ctx = dg.build_sensor_context(instance=instance, resources={"home": BenchHome(root=str(tmp_path / "gone"))})
    assert "nothing removed" in rf100vl_partition_guard(ctx).skip_message
    assert _datasets(instance) == ["lab-shapes", "not-a-dataset"]


def test_sensor_is_in_the_location_and_runs_by_default() -> None:
    from definitions import defs

    sensor = defs.resolve_sensor_def("rf100vl_partition_guard")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == 30


# --------------------------------------------------------------------------------------------- bench remove


def test_datasets_remove_keeps_files_purge_removes_them(instance, bench_home: Path) -> None:
    register(bench_home / "sources", "mini-tiny", SourceSpec(kind="mini", suites=["mini"]))
    register_partitions(instance, ["mini-tiny", "mini-shapes"])
    assert run_job(instance, dataset_job, partition_key="mini-tiny").success
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=SCORES_KEY, partition="mini-tiny|yolo9-t"))
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=SCORES_KEY, partition="mini-shapes|yolo9-t"))
    assert _events(instance, DATASET_KEY, "mini-tiny") == 1 and _checks_run(instance, "mini-tiny") > 0
    stored = bench_home / "datasets" / "mini-tiny"
    assert (stored / "CURRENT").exists()

    res = bench_in_process("datasets", "remove", "mini-tiny", home=bench_home)
    assert res.returncode == 0, res.stderr
    assert "dataset mini-tiny: partition removed from rf100vl_dataset; status wiped" in res.stdout
    assert "files kept (`--purge` removes them): datasets/mini-tiny, sources/mini-tiny.json" in res.stdout
    assert _datasets(instance) == ["mini-shapes"]
    assert _events(instance, DATASET_KEY, "mini-tiny") == 0
    assert "mini-tiny" not in instance.get_materialized_partitions(DATASET_KEY)
    assert _checks_run(instance, "mini-tiny") == 0
    assert _events(instance, SCORES_KEY, "mini-tiny|yolo9-t") == 0  # the dataset x model partitions too
    assert _events(instance, SCORES_KEY, "mini-shapes|yolo9-t") == 1  # another dataset's untouched
    assert (stored / "CURRENT").exists() and (bench_home / "sources" / "mini-tiny.json").exists()

    # Added again, it starts unmaterialized (the old status does not come back), and its files are still there.
    register_partitions(instance, ["mini-tiny"])
    assert "mini-tiny" not in instance.get_materialized_partitions(DATASET_KEY)
    assert instance.get_latest_materialization_event(DATASET_KEY) is None

    res = bench_in_process("datasets", "remove", "mini-tiny", "--purge", home=bench_home)
    assert res.returncode == 0, res.stderr
    assert "  removed datasets/mini-tiny\n  removed sources/mini-tiny.json\n" in res.stdout
    assert not stored.exists() and not (bench_home / "sources" / "mini-tiny.json").exists()
    assert _datasets(instance) == ["mini-shapes"]
    assert not list(bench_home.glob(".tmp-purge-*"))  # the scratch the purge moved things into is gone


def test_models_remove_purge_removes_runs_eval_and_registration(instance, bench_home: Path) -> None:
    register_model_partition(instance, "yolo9-t")
    register_model_partition(instance, "yolox-n")
    run = bench_home / "runs" / "yolo9-t" / "mini-tiny" / "sig"
    run.mkdir(parents=True)
    (run / "stats.json").write_text("{}")
    (bench_home / "eval" / "yolo9-t" / "mini-tiny").mkdir(parents=True)
    atomic_write_json(bench_home / "models" / "yolo9-t.json", {"model": "yolo9-t", "recipe": "default"})
    atomic_write_json(bench_home / "submissions" / "yolo9-t.json", {})
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=SUBMISSION_KEY, partition="yolo9-t"))
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=SCORES_KEY, partition="mini-tiny|yolo9-t"))
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=SCORES_KEY, partition="mini-tiny|yolox-n"))

    res = bench_in_process("models", "remove", "yolo9-t", "--purge", home=bench_home)
    assert res.returncode == 0, res.stderr
    assert "model yolo9-t: partition removed from rf100vl_model" in res.stdout
    for rel in ("runs/yolo9-t", "eval/yolo9-t", "models/yolo9-t.json", "submissions/yolo9-t.json"):
        assert f"  removed {rel}\n" in res.stdout
        assert not (bench_home / rel).exists()
    assert _models(instance) == ["yolox-n"]
    assert _events(instance, SUBMISSION_KEY, "yolo9-t") == 0
    assert _events(instance, SCORES_KEY, "mini-tiny|yolo9-t") == 0
    assert _events(instance, SCORES_KEY, "mini-tiny|yolox-n") == 1


def test_remove_unknown_name_fails_clearly(instance, bench_home: Path) -> None:
    register_partitions(instance, ["mini-tiny"])
    res = bench_in_process("datasets", "remove", "not-a-dataset", home=bench_home)
    assert res.returncode == 1
    assert res.stderr.startswith("bench: unknown dataset 'not-a-dataset': no partition of rf100vl_dataset")
    assert "nothing removed" in res.stderr and "Traceback" not in res.stderr
    res = bench_in_process("models", "remove", "yolo9-zz", "--purge", home=bench_home)
    assert res.returncode == 1 and "unknown model 'yolo9-zz'" in res.stderr and "Traceback" not in res.stderr
    assert _datasets(instance) == ["mini-tiny"]


# ------------------------------------------------------------------------------------------------- augbench


def test_augbench_config_partitions_must_be_registered(instance, bench_home: Path) -> None:
    from bench_assets.augbench.partitions import CONFIG_PARTITIONS_NAME, guard_configs, register_config_partition

    with pytest.raises(ValueError, match=r"augbench_config: 'my-typo' is not a registered augbench config.*"
                                         r"bench augbench plan --config FILE"):
        register_config_partition(instance, "my-typo")
    resolved = bench_home / "augbench" / "rgb-micro-smoke" / "config.resolved.json"
    resolved.parent.mkdir(parents=True)
    resolved.write_text(json.dumps({"name": "rgb-micro-smoke"}))
    register_config_partition(instance, "rgb-micro-smoke")
    instance.add_dynamic_partitions(CONFIG_PARTITIONS_NAME, ["my-typo"])
    removed = guard_configs(instance, bench_home, [])
    assert [n for n, _ in removed] == ["my-typo"] and "not a registered augbench config" in removed[0][1]
    assert list(instance.get_dynamic_partitions(CONFIG_PARTITIONS_NAME)) == ["rgb-micro-smoke"]
