"""Campaign scheduling for the CLI: which (dataset, model) partitions, in what order, on how many lanes.

Each partition is one Dagster run on the product instance, started as its own `bench _exec` process
so that up to `lanes` train at once (the `gpu` pool and the lane leases keep them apart). Longest
first: the datasets with the most training images start first, so one long pole does not start
last and set the makespan.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_assets.rf100vl.store import load_record


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


@dataclass
class Finished:
    run: PartitionRun
    returncode: int
    seconds: float


def run_partitions(runs: list[PartitionRun], job: str, lanes: int, run_config: dict[str, Any] | None = None,
                   env: dict[str, str] | None = None) -> list[Finished]:
    """Run each partition's job in a `bench _exec` child, at most `lanes` at a time, in list order."""
    pending = list(runs)
    active: list[tuple[PartitionRun, subprocess.Popen, float]] = []
    done: list[Finished] = []
    while pending or active:
        while pending and len(active) < max(1, lanes):
            run = pending.pop(0)
            cmd = [sys.executable, "-m", "bench_assets.cli", "_exec", job, run.key,
                   "--priority", str(run.train_images)]
            if run_config:
                cmd += ["--config", json.dumps(run_config)]
            active.append((run, subprocess.Popen(cmd, env=env), time.monotonic()))
        time.sleep(0.2)
        still = []
        for run, proc, t0 in active:
            if proc.poll() is None:
                still.append((run, proc, t0))
            else:
                done.append(Finished(run, proc.returncode, time.monotonic() - t0))
        active = still
    return done
