"""Campaign scheduling for the CLI and the launchpad: which (dataset, model) partitions, in what order, in which wave.

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


def register_replicates(instance: Any, home: Path, model: str, names: list[str], replicates: int,
                         replicate_datasets: str | None) -> list[tuple[str, list[str]]]:
    """Register `model@seed1` .. `model@seed{K-1}` with the model's recipe on the chosen datasets (each its own
    model partition: the seed is in its key and its run signature); [(key, datasets)]."""
    from bench_assets.rf100vl.defs.partitions import register_campaign
    from bench_assets.rf100vl.training.models import registered_recipe
    from bench_assets.rf100vl.training.runplan import replicate_key

    if replicates <= 1:
        return []
    chosen = [d for d in (replicate_datasets or "").split(",") if d] or names
    outside = sorted(set(chosen) - set(names))
    if outside:
        raise ValueError(f"--replicate-datasets names datasets outside the campaign (or without data): "
                         f"{', '.join(outside)}")
    out = []
    for seed in range(1, replicates):
        key = replicate_key(model, seed)
        rep_names, _ = register_campaign(instance, home, key, registered_recipe(home, model), None, ",".join(chosen))
        out.append((key, rep_names))
    return out


def campaign_waves(instance: Any, home: Path, model: str, names: list[str], replicates: int,
                    replicate_datasets: str | None, *, gated: bool) -> list[tuple[str, list[Any]]]:
    """The partitions to run, as waves: [("all", ...)], or with a registered pilot (`gated`: a campaign that
    scores) [("pilot", the pilot datasets, their replicates and the kill-and-resume check), ("rest", ...)]."""
    from bench_assets.rf100vl.defs.partitions import register_campaign
    from bench_assets.rf100vl.training.models import read_entry, registered_recipe
    from bench_assets.rf100vl.training.runplan import resume_check_key

    partitions = longest_first(home, model, names)
    for key, rep_names in register_replicates(instance, home, model, names, replicates, replicate_datasets):
        partitions += longest_first(home, key, rep_names)
    entry = read_entry(home, model)
    pilot = set(entry.pilot if entry else []) & set(names)
    if not gated or not pilot:
        return [("all", partitions)]
    # The kill-and-resume check runs on the smallest pilot dataset: the cheapest one that still trains all epochs.
    check = min((r for r in partitions if r.model == model and r.dataset in pilot),
                key=lambda r: (r.train_images, r.dataset))
    key = resume_check_key(model)
    register_campaign(instance, home, key, registered_recipe(home, model), None, check.dataset)
    first = [r for r in partitions if r.dataset in pilot] + longest_first(home, key, [check.dataset])
    return [("pilot", first), ("rest", [r for r in partitions if r.dataset not in pilot])]
