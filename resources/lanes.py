"""Execution lanes: GPUs x jobs-per-GPU (or N CPU lanes on a box without GPUs), leased per step.

A Dagster pool caps how many training steps run at once, but not which device each one gets. A
lane lease is an OS file lock per lane, so it is released by the kernel even when the step that
held it crashes or is SIGKILLed.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass(frozen=True)
class Lane:
    index: int
    device: str  # what the child passes to LibreYOLO: "cpu" or "0" (its only visible GPU)
    cuda_visible_devices: str  # "" on CPU lanes
    threads: int

    def child_env(self) -> dict[str, str]:
        env = {k: str(self.threads) for k in THREAD_ENV}
        env["CUDA_VISIBLE_DEVICES"] = self.cuda_visible_devices
        env["BENCH_LANE"] = str(self.index)
        return env


def plan_lanes(gpus: list[str], jobs_per_gpu: int, cpu_lanes: int, threads_per_lane: int) -> list[Lane]:
    if jobs_per_gpu < 1 or cpu_lanes < 1 or threads_per_lane < 1:
        raise ValueError("jobs_per_gpu, cpu_lanes and threads_per_lane must be >= 1")
    if gpus:
        return [Lane(i * jobs_per_gpu + j, "0", g, threads_per_lane)
                for i, g in enumerate(gpus) for j in range(jobs_per_gpu)]
    return [Lane(i, "cpu", "", threads_per_lane) for i in range(cpu_lanes)]


def lanes_from_env(env: dict[str, str] | None = None, *, gpus: str = "", jobs_per_gpu: int = 0,
                   cpu_lanes: int = 0, threads_per_lane: int = 0) -> list[Lane]:
    """BENCH_GPUS="0,1" BENCH_JOBS_PER_GPU=2 -> 4 GPU lanes; no BENCH_GPUS -> BENCH_CPU_LANES CPU lanes.

    The one place the lane variables are read; a non-empty/non-zero keyword wins over its variable."""
    env = dict(os.environ if env is None else env)
    listed = gpus or env.get("BENCH_GPUS", "")
    return plan_lanes([g.strip() for g in listed.split(",") if g.strip()],
                      jobs_per_gpu or int(env.get("BENCH_JOBS_PER_GPU", "1")),
                      cpu_lanes or int(env.get("BENCH_CPU_LANES", "1")),
                      threads_per_lane or int(env.get("BENCH_THREADS_PER_LANE", "1")))


class NoLaneFree(TimeoutError):
    pass


@contextmanager
def lease_lane(lanes: list[Lane], lock_dir: Path, holder: str, timeout_s: float = 3600.0,
               poll_s: float = 0.5) -> Iterator[Lane]:
    """Hold one free lane for the duration of the block (first free lane in index order)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    while True:
        for lane in lanes:
            fh = open(lock_dir / f"lane-{lane.index}.lock", "a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            try:
                fh.seek(0)
                fh.truncate()
                fh.write(json.dumps({"holder": holder, "pid": os.getpid(), "since": time.time()}))
                fh.flush()
                yield lane
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
            return
        if time.monotonic() > deadline:
            raise NoLaneFree(f"no lane free among {len(lanes)} after {timeout_s:g}s (lock dir {lock_dir})")
        time.sleep(poll_s)
