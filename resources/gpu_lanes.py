"""The GPU execution resource: which lanes exist and a lease on one of them for a step."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from resources.lanes import Lane, lanes_from_env, lease_lane
from resources.paths import bench_home_path


class GpuLanes(dg.ConfigurableResource):
    """Lanes = GPUs x jobs_per_gpu, or `cpu_lanes` CPU lanes when no GPU is listed.

    Defaults come from the environment (BENCH_GPUS, BENCH_JOBS_PER_GPU, BENCH_CPU_LANES,
    BENCH_THREADS_PER_LANE) so `bench` and the UI see the same lanes; the `gpu` pool limit is set to
    the lane count by `bench`.
    """

    gpus: str = ""
    jobs_per_gpu: int = 0
    cpu_lanes: int = 0
    threads_per_lane: int = 0
    lease_timeout_s: float = 6 * 3600.0

    def lanes(self) -> list[Lane]:
        return lanes_from_env(gpus=self.gpus, jobs_per_gpu=self.jobs_per_gpu, cpu_lanes=self.cpu_lanes,
                              threads_per_lane=self.threads_per_lane)

    @contextmanager
    def lease(self, holder: str) -> Iterator[Lane]:
        with lease_lane(self.lanes(), lane_dir(), holder, self.lease_timeout_s) as lane:
            yield lane


def lane_dir() -> Path:
    """Where this box's lane locks live: BENCH_HOME/lanes, or BENCH_LANE_DIR when set (a cluster worker has its own:
    on a shared BENCH_HOME every box would otherwise lock the same lane files for different GPUs)."""
    return Path(os.environ.get("BENCH_LANE_DIR") or Path(bench_home_path()) / "lanes")
