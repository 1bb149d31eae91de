"""Removing a dataset or model partition (`bench datasets|models remove NAME [--purge]`): the partition and its
status (every event record and check result of its partition keys, on every asset partitioned by it) go; its files
(`partitions.owned_paths`) stay unless purged. A purge moves every path into one scratch folder first and the
partition is removed only when all moved (a failure moves them back), so a remove happens whole or not at all."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import remove_path, staging_dir
from bench_assets.platform.instance import remove_partitions
from bench_assets.rf100vl.datasets.sources import NAME_RE
from bench_assets.rf100vl.defs.partitions import DATASET_PARTITIONS_NAME, MODEL_PARTITIONS_NAME, owned_paths


class RemovalRefused(ValueError):
    """Nothing was removed: the name is unknown, or runs of it are queued or running."""


@dataclass(frozen=True)
class Removal:
    partitions_name: str
    was_partition: bool
    wiped: dict[str, int]  # "events", "check_executions"
    owned: tuple[str, ...]  # the partition's files, relative to BENCH_HOME
    purged: bool  # whether `owned` were removed (else kept)


def runs_in_flight(instance: Any, dimension: str, name: str) -> list[str]:
    """Ids of queued or running runs of the partition `name` (alone, or as the `dimension` of a multi-partition)."""
    import dagster as dg
    from dagster._core.storage.dagster_run import NOT_FINISHED_STATUSES

    out = []
    for tag in ("dagster/partition", f"dagster/partition/{dimension}"):
        records = instance.get_run_records(dg.RunsFilter(statuses=NOT_FINISHED_STATUSES, tags={tag: name}))
        out += [r.dagster_run.run_id for r in records]
    return sorted(set(out))


def remove_partition(instance: Any, home: Path, kind: str, name: str, purge: bool,
                     assets: Callable[[], Sequence[Any]]) -> Removal:
    """Remove partition `name` of `kind` ("dataset" or "model") and its status from every asset `assets()`
    returns that is partitioned by it (called only once the removal is allowed: loading the definitions costs
    seconds), and its files when `purge`; RemovalRefused (naming why and what to do) removes nothing."""
    partitions_name = DATASET_PARTITIONS_NAME if kind == "dataset" else MODEL_PARTITIONS_NAME
    is_partition = name in instance.get_dynamic_partitions(partitions_name)
    # Only a plain name can own files (never a path: `../x` stays a partition name, not a folder to delete).
    owned = [p for p in owned_paths(home, kind, name) if p.exists() or p.is_symlink()] if NAME_RE.match(name) else []
    if not is_partition and not owned:
        listing = "`bench datasets list`" if kind == "dataset" else f"{home / 'models'}"
        raise RemovalRefused(f"unknown {kind} {name!r}: no partition of {partitions_name} and no stored files under "
                             f"{home} by that name; nothing removed ({listing} shows what there is)")
    busy = runs_in_flight(instance, kind, name)
    if busy:
        raise RemovalRefused(f"{kind} {name!r} has {len(busy)} run(s) queued or running ({', '.join(busy)}); nothing "
                             "removed: wait for them or terminate them in the UI, then remove it")
    partitioned = assets()
    purged = owned if purge else []
    with staging_dir(home, "purge") as trash:
        moved: list[tuple[Path, Path]] = []
        try:
            for i, path in enumerate(purged):
                dest = trash / f"{i}-{path.name}"
                os.rename(path, dest)
                moved.append((path, dest))
            wiped = remove_partitions(instance, partitions_name, [name], partitioned)
        except BaseException:
            for path, dest in reversed(moved):
                os.rename(dest, path)
            raise
        for _, dest in moved:
            remove_path(dest)
    return Removal(partitions_name, is_partition, wiped, tuple(p.relative_to(home).as_posix() for p in owned), purge)
