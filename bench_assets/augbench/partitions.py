"""augbench partitions: configs (one row family each, registered by `bench augbench plan/run`) x libraries.

A config partition must be a registered config (BENCH_HOME/augbench/<config>/config.resolved.json, written by
`bench augbench plan/run`): `register_config_partition` refuses any other name, and `augbench_partition_guard`
removes names added past it (the UI's "Add a partition"), with their status.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

from bench_assets.augbench.naming import augbench_dir, resolved_config_file
from bench_assets.augbench.support import LIBRARIES
from bench_assets.platform.automation import sensor_interval_s
from resources.bench_home import BenchHome

warnings.filterwarnings("ignore", message="Class `MultiToSingleDimensionPartitionMapping` is currently in beta")

CONFIG_PARTITIONS_NAME = "augbench_config"
config_partitions = dg.DynamicPartitionsDefinition(name=CONFIG_PARTITIONS_NAME)
library_partitions = dg.StaticPartitionsDefinition(list(LIBRARIES))
# Multi-partition keys order dimensions alphabetically: "config|library".
config_library_partitions = dg.MultiPartitionsDefinition({"config": config_partitions, "library": library_partitions})
on_config = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="config")


def split_key(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension  # type: ignore[union-attr]
    return keys["config"], keys["library"]


def registered_config_names(home: Path) -> frozenset[str]:
    root = augbench_dir(home)
    return frozenset(p.parent.name for p in root.glob("*/config.resolved.json")) if root.is_dir() else frozenset()


def config_problem(name: str, home: Path, registered: frozenset[str]) -> str | None:
    """Why `name` may not be a config partition (None: it may)."""
    if name in registered:
        return None
    return (f"{CONFIG_PARTITIONS_NAME}: {name!r} is not a registered augbench config: no "
            f"{resolved_config_file(home, name)}; fix: register it with `bench augbench plan --config FILE` "
            "(the config's `name` is the partition)")


def register_config_partition(instance: dg.DagsterInstance, config_name: str, *, home: Path | None = None) -> None:
    """Add a config partition; ValueError (nothing added) when the config is not registered."""
    from bench_assets.platform.instance import add_partitions
    from resources.paths import bench_home_path

    home = home or bench_home_path()
    problem = config_problem(config_name, home, registered_config_names(home))
    if problem:
        raise ValueError(f"refusing to add a partition to {CONFIG_PARTITIONS_NAME}: {problem}")
    add_partitions(instance, CONFIG_PARTITIONS_NAME, [config_name])


def guard_configs(instance: dg.DagsterInstance, home: Path, assets: list) -> list[tuple[str, str]]:
    """Remove every config partition that is not a registered config; (name, reason) per removed name."""
    from bench_assets.platform.instance import remove_partitions

    listed = list(instance.get_dynamic_partitions(CONFIG_PARTITIONS_NAME))
    registered = registered_config_names(home)  # read after listing: a config is recorded before it is added
    unknown = {n: r for n in listed if (r := config_problem(n, home, registered))}
    if unknown:
        remove_partitions(instance, CONFIG_PARTITIONS_NAME, sorted(unknown), assets)
    return sorted(unknown.items())


@dg.sensor(name="augbench_partition_guard", minimum_interval_seconds=sensor_interval_s(30),
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Removes augbench config partitions that are not a registered config (e.g. typed into the "
                       "UI's 'Add a partition'), with their status, and says why per name.")
def augbench_partition_guard(context: dg.SensorEvaluationContext, home: BenchHome) -> dg.SkipReason:
    if not home.path.is_dir():
        return dg.SkipReason(f"BENCH_HOME {home.path} is not there; nothing judged, nothing removed")
    graph = context.repository_def.asset_graph if context.repository_def else None
    assets = [(n.key, n.partitions_def) for n in graph.asset_nodes if n.partitions_def] if graph else []
    removed = guard_configs(context.instance, home.path, assets)
    for name, reason in removed:
        context.log.warning(f"removed partition {name!r} of {CONFIG_PARTITIONS_NAME}: {reason}")
    if not removed:
        return dg.SkipReason("every augbench config partition is a registered config")
    return dg.SkipReason(f"removed {len(removed)} unknown config partition(s): "
                         + "; ".join(f"{n}: {r}" for n, r in removed))
