"""Partition definitions of the RF100-VL domain (dataset names and model keys are registered at run time)."""

import warnings

import dagster as dg

# Beta in dagster 1.13, and exactly the mapping dataset x model partitions need onto dataset partitions.
warnings.filterwarnings("ignore", message="Class `MultiToSingleDimensionPartitionMapping` is currently in beta")

DATASET_PARTITIONS_NAME = "rf100vl_dataset"
MODEL_PARTITIONS_NAME = "rf100vl_model"
dataset_partitions = dg.DynamicPartitionsDefinition(name=DATASET_PARTITIONS_NAME)
model_partitions = dg.DynamicPartitionsDefinition(name=MODEL_PARTITIONS_NAME)
# Multi-partition keys order dimensions alphabetically: "dataset|model".
dataset_model_partitions = dg.MultiPartitionsDefinition({"dataset": dataset_partitions, "model": model_partitions})
on_dataset = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="dataset")
on_model = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="model")


def split_key(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> tuple[str, str]:
    """(dataset, model) of a dataset x model partition."""
    keys = context.partition_key.keys_by_dimension  # type: ignore[union-attr]
    return keys["dataset"], keys["model"]


def register_partitions(instance: dg.DagsterInstance, names: list[str]) -> list[str]:
    """Add dataset partitions that do not exist yet; return the new ones."""
    from bench_assets.platform.instance import add_partitions

    return add_partitions(instance, DATASET_PARTITIONS_NAME, names)


def register_model_partition(instance: dg.DagsterInstance, model: str) -> None:
    from bench_assets.platform.instance import add_partitions

    add_partitions(instance, MODEL_PARTITIONS_NAME, [model])
