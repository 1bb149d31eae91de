"""The partition guard: names added to the dataset or model partitions past `register_partitions` (the UI's
"Add a partition" takes any text) are removed, with the reason, before they fail at run time, stay red and
block the backfills above them.

`rf100vl_partition_guard` (running by default, every 30 s) lists both dynamic partition sets, judges each name by
the registration rule (`partitions.unknown_names`: a known dataset, a registered model) and removes the unknown
ones with their status (`platform.instance.remove_partitions`). A known name is never removed: the partitions
are listed before what is known is read, so a name registered after its source or model was recorded (every
path that registers one records it first) is always seen as known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from bench_assets.platform.automation import sensor_interval_s
from bench_assets.platform.instance import remove_partitions
from bench_assets.rf100vl.defs.partitions import (
    DATASET_PARTITIONS_NAME,
    MODEL_PARTITIONS_NAME,
    known_names,
    unknown_names,
)
from resources.bench_home import BenchHome

GUARDED = (DATASET_PARTITIONS_NAME, MODEL_PARTITIONS_NAME)


def partition_assets(asset_graph: Any) -> list[tuple[dg.AssetKey, Any]]:
    """(key, partitions definition) of every partitioned asset of a location's asset graph."""
    return [(node.key, node.partitions_def) for node in asset_graph.asset_nodes if node.partitions_def is not None]


def guard_partitions(instance: dg.DagsterInstance, home: Path, assets: list[tuple[dg.AssetKey, Any]]
                     ) -> list[tuple[str, str, str]]:
    """Remove every unknown name of the guarded partition sets; return (partition set, name, reason) per name."""
    listed = {p: list(instance.get_dynamic_partitions(p)) for p in GUARDED}
    known = known_names(home)  # read after listing: see the module docstring
    removed = []
    for partitions_name, names in listed.items():
        unknown = unknown_names(partitions_name, names, known)
        if unknown:
            remove_partitions(instance, partitions_name, sorted(unknown), assets)
            removed += [(partitions_name, name, unknown[name]) for name in sorted(unknown)]
    return removed


@dg.sensor(name="rf100vl_partition_guard", minimum_interval_seconds=sensor_interval_s(30),
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Removes dataset and model partitions that are not a known dataset or a registered model "
                       "(e.g. typed into the UI's 'Add a partition'), with their status, and says why per name.")
def rf100vl_partition_guard(context: dg.SensorEvaluationContext, home: BenchHome) -> dg.SkipReason:
    if not home.path.is_dir():  # an unmounted home would make every imported dataset look unknown
        return dg.SkipReason(f"BENCH_HOME {home.path} is not there; nothing judged, nothing removed")
    assets = partition_assets(context.repository_def.asset_graph) if context.repository_def else []
    removed = guard_partitions(context.instance, home.path, assets)
    for partitions_name, name, reason in removed:
        context.log.warning(f"removed partition {name!r} of {partitions_name}: {reason}")
    if not removed:
        return dg.SkipReason("every dataset and model partition is a known dataset or a registered model")
    return dg.SkipReason(f"removed {len(removed)} unknown partition(s): "
                         + "; ".join(f"{p}/{n}: {r}" for p, n, r in removed))
