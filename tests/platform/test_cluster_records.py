"""The workers' in-flight task records (`workers/<name>/tasks/*.json`, written by worker_app) as the head reads them:
one reader (`layout.task_records`) for the watchdog's lost tasks, `bench cluster status`'s count and rotate-secrets'
refusal. No servers."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bench_assets.platform.cluster.layout import ClusterState, Worker, task_records, worker_dir
from bench_assets.platform.cluster.lifecycle import running_steps
from bench_assets.platform.cluster.watchdog import lost_tasks


def _records(home: Path) -> None:
    tasks = worker_dir(home, "box1") / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "a.json").write_text(json.dumps({"task_id": "a", "run_id": "run-1", "step_keys": ["rf100vl__scores"],
                                              "pid": 7, "started": time.time() - 65}))
    (tasks / "b.json").write_text(json.dumps({"task_id": "b", "run_id": None}))  # not a dagster step
    (tasks / "c.json").write_text('{"task_id": "c", "run_')  # being written


def test_one_reader_serves_the_watchdog_and_the_refusal(tmp_path: Path) -> None:
    _records(tmp_path)
    state = ClusterState(home=str(tmp_path), home_id="x", code_hash="0", postgres_port=1, redis_port=2,
                         webserver_port=3, workers=[Worker(name="box1", lanes=1, queues=["gpu"])])
    assert [(p.name, rec is None) for p, rec in task_records(tmp_path, "box1")] == [
        ("a.json", False), ("b.json", False), ("c.json", True)]
    assert task_records(tmp_path, "nobody") == []
    assert running_steps(tmp_path, state) == [
        "box1 (run run-1, steps ['rf100vl__scores'], pid 7, for 65 s)",
        "box1 (run None, steps None, pid None)", "box1 (c.json)"]
    # no heartbeat: the worker is lost, and only its record naming a run is a lost step
    (lost,) = lost_tasks(tmp_path, state)
    assert (lost.worker, lost.task_id, lost.run_id, lost.step_keys) == ("box1", "a", "run-1", ("rf100vl__scores",))
    beat = worker_dir(tmp_path, "box1") / "heartbeat"
    beat.touch()
    assert lost_tasks(tmp_path, state) == []  # a live worker's records are its running steps, not lost ones
    os.utime(beat, (time.time() - 3600, time.time() - 3600))
    assert len(lost_tasks(tmp_path, state)) == 1
