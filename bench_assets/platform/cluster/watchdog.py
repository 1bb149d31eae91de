"""Losing a box never hangs a campaign: runs whose steps a lost worker held are failed within a bounded time.

With dagster-celery a run's process waits for each step's Celery result. If the worker running the step dies
with its box (kill -9 of the worker's process group), no result ever comes: by default the run would wait
forever (tasks are acknowledged early, so Celery never redelivers them, which also means a step is never run
twice). The watchdog closes that gap: every worker touches a heartbeat file and records the tasks it runs
(`worker_app.py`); a worker whose heartbeat is older than LOST_AFTER_S is lost, and each task it held is marked
failed in Celery's result backend (with the reason, also written to the run's event log), so the run waiting for
it fails like any failed step and its process ends. (Terminating the run instead leaves its process waiting: the
executor revokes its tasks, then waits for a revoked state that only a live worker writes.) Its pool slots are
freed by the instance (`free_slots_after_run_end_seconds`). The next `bench campaign` resumes the partition from
its `last.pt`.

Bound: LOST_AFTER_S (30 s) + the sensor's interval (15 s) after the box stops.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from bench_assets.platform.automation import sensor_interval_s
from bench_assets.platform.cluster.layout import LOST_AFTER_S, ClusterState, heartbeat_age, task_records, worker_dir


@dataclass(frozen=True)
class LostTask:
    worker: str
    task_id: str
    run_id: str
    step_keys: tuple[str, ...]
    heartbeat_age_s: float | None


def lost_workers(home: Path, state: ClusterState, now: float | None = None,
                 lost_after_s: float = LOST_AFTER_S) -> dict[str, float | None]:
    """{worker: heartbeat age} of the workers whose heartbeat is older than `lost_after_s` (or missing while the
    worker has tasks on record)."""
    out: dict[str, float | None] = {}
    for w in state.workers:
        age = heartbeat_age(home, w.name, now)
        if age is None or age > lost_after_s:
            out[w.name] = age
    return out


def lost_tasks(home: Path, state: ClusterState, now: float | None = None,
               lost_after_s: float = LOST_AFTER_S) -> list[LostTask]:
    """The in-flight task records of lost workers (pure apart from reading the records)."""
    out = []
    for name, age in lost_workers(home, state, now, lost_after_s).items():
        for _path, rec in task_records(home, name):
            if rec is not None and rec.get("run_id"):
                out.append(LostTask(name, str(rec.get("task_id")), rec["run_id"], tuple(rec.get("step_keys") or ()),
                                    age))
    return out


def retire(home: Path, task: LostTask) -> None:
    """Move a handled record out of the worker's in-flight folder (kept under lost/ for the post-mortem)."""
    src = worker_dir(home, task.worker) / "tasks" / f"{task.task_id}.json"
    dst = worker_dir(home, task.worker) / "lost" / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.exists():
        src.replace(dst)


def fail_lost_runs(instance: Any, home: Path, state: ClusterState, log: Any = None) -> list[str]:
    """Fail every lost task in the Celery result backend, so the run waiting for it gets an answer: the executor
    reads a failure, fails the run with the reason, and the run's process ends normally (a revoke or a terminate
    would leave it waiting for a result no dead worker will write). Returns the affected run ids."""
    ended = []
    backend = None
    for task in lost_tasks(home, state):
        run = instance.get_run_by_id(task.run_id)
        if run is not None and not run.is_finished:
            age = "never" if task.heartbeat_age_s is None else f"{task.heartbeat_age_s:.0f} s ago"
            reason = (f"worker {task.worker} is lost (last heartbeat {age}) while running step(s) "
                      f"{', '.join(task.step_keys) or '?'}: failing the step so the campaign does not wait for it; "
                      "the next `bench campaign` resumes the partition from its last checkpoint")
            instance.report_engine_event(reason, run)
            if log is not None:
                log.warning(f"run {task.run_id}: {reason}")
            backend = backend or _result_backend(state)
            backend.mark_as_failure(task.task_id, WorkerLost(reason))
            ended.append(task.run_id)
        retire(home, task)
    return ended


class WorkerLost(Exception):
    """The exception a lost task's result carries (the run's failure names the worker and the step)."""


def _result_backend(state: ClusterState) -> Any:
    from celery import Celery

    from bench_assets.platform.cluster.layout import CELERY_SETTINGS
    from bench_assets.platform.cluster.secrets import cluster_process_env

    env = {**cluster_process_env(Path(state.home), state), **{k: v for k, v in os.environ.items()
                                                              if k in ("BENCH_CELERY_BROKER", "BENCH_CELERY_BACKEND")}}
    return Celery("dagster", broker=env["BENCH_CELERY_BROKER"], backend=env["BENCH_CELERY_BACKEND"],
                  config_source=CELERY_SETTINGS).backend


def watchdog_sensor() -> Any:
    """A sensor that applies `fail_lost_runs` every 15 s while a cluster is up (a no-op otherwise)."""
    from bench_assets.platform.cluster.layout import load_state
    from resources.paths import bench_home_path

    @dg.sensor(name="cluster_watchdog", minimum_interval_seconds=sensor_interval_s(15),
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Fails the steps a lost cluster worker held (heartbeat older than "
                           f"{LOST_AFTER_S:.0f} s), so a campaign never hangs on a dead box (docs/scale-out.md).")
    def cluster_watchdog(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        home = Path(bench_home_path())
        state = load_state(home)
        if state is None:
            return dg.SkipReason("no cluster is up")
        ended = fail_lost_runs(context.instance, home, state, context.log)
        lost = lost_workers(home, state)
        return dg.SkipReason(f"{len(lost)} lost worker(s) {sorted(lost)}; failed the steps of {len(ended)} run(s)"
                             if lost else f"all {len(state.workers)} worker(s) alive at {time.strftime('%H:%M:%S')}")

    return cluster_watchdog
