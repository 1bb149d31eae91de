"""Campaign scheduling for the CLI: which (dataset, model) partitions, in what order.

Each partition is one Dagster run on the product instance, executed by the platform's run pool so that up to
`lanes` train at once (the `gpu` pool and the lane leases keep them apart). Longest first: the datasets with
the most training images start first, so one long pole does not start last and set the makespan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_assets.platform.run_pool import PoolRun
from bench_assets.rf100vl.datasets.store import load_record


@dataclass(frozen=True)
class PartitionRun:
    dataset: str
    model: str
    train_images: int

    @property
    def key(self) -> str:
        return f"{self.dataset}|{self.model}"  # multi-partition keys: dimensions in alphabetical order


def longest_first(home: Path, model: str, datasets: list[str]) -> list[PartitionRun]:
    runs = []
    for name in datasets:
        rec = load_record(home / "datasets", name)
        runs.append(PartitionRun(name, model, rec.manifest["splits"]["train"]["images"] if rec else 0))
    return sorted(runs, key=lambda r: (-r.train_images, r.dataset))


def pool_runs(runs: list[PartitionRun], job: Any, *, force: bool = False) -> list[PoolRun]:
    """The runs of `job` (a job object) for these partitions, in order, with their priority tag."""
    from bench_assets.rf100vl.defs.checkpoint_assets import checkpoint

    config = {"ops": {checkpoint.op.name: {"config": {"force": True}}}} if force else None
    return [PoolRun(label=r.key, job_name=job.name, partition={"dataset": r.dataset, "model": r.model},
                    run_config=config, tags={"dagster/priority": str(r.train_images)}) for r in runs]
