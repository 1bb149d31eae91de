"""augbench partitions: configs (one row family each, registered by `bench augbench plan/run`) x libraries."""

import warnings

import dagster as dg

from bench_assets.augbench.support import LIBRARIES

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


def register_config_partition(instance: dg.DagsterInstance, config_name: str) -> None:
    from bench_assets.platform.instance import add_partitions

    add_partitions(instance, CONFIG_PARTITIONS_NAME, [config_name])
