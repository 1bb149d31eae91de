"""Partition definitions of the RF100-VL domain (dataset names are registered at run time)."""

import dagster as dg

DATASET_PARTITIONS_NAME = "rf100vl_dataset"
dataset_partitions = dg.DynamicPartitionsDefinition(name=DATASET_PARTITIONS_NAME)
