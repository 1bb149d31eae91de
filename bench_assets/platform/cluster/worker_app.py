"""The Celery app a cluster worker runs (`celery -A bench_assets.platform.cluster.worker_app worker ...`, started by
`bench cluster worker`): dagster-celery's step task on the cluster's Redis, plus what makes a lost box visible.

- A heartbeat: the worker's main process touches `workers/<name>/heartbeat` every HEARTBEAT_S seconds. Killing the
  worker (or losing its box) stops it; the watchdog (`watchdog.py`, a sensor in the daemon) then fails the runs
  whose steps that worker held, instead of letting them wait for a result that never comes.
- In-flight records: each task writes `workers/<name>/tasks/<task id>.json` (run id, step keys, pid) when it starts
  and moves it to `done/` when it ends, so the watchdog knows which runs a lost worker held.
- Its task children die with the worker (PR_SET_PDEATHSIG), so a killed worker leaves no step running headless.

Settings (`CELERY_SETTINGS`, shared with the executor): early acknowledgement (a task is never run twice; a lost
one is failed by the watchdog and its partition resumes from last.pt on the next campaign), and no prefetch
(`worker_disable_prefetch`: a worker takes a message only when a process is free, so a busy worker neither hoards
queued steps another box could run nor, when it dies, strands a reserved message until Redis's visibility timeout
of an hour returns it), and results in Redis.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from bench_assets.platform.cluster.layout import CELERY_SETTINGS, HEARTBEAT_S, load_state, worker_dir
from bench_assets.platform.fsutil import atomic_write_text

_PR_SET_PDEATHSIG = 1


def _home() -> Path:
    home = os.environ.get("BENCH_HOME")
    if not home:
        raise RuntimeError("BENCH_HOME is not set: start workers with `bench cluster worker` (docs/scale-out.md)")
    return Path(home)


def _name() -> str:
    return os.environ.get("BENCH_WORKER", "worker")


def make_worker_app() -> Any:
    from celery import signals
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    state = load_state(_home())
    if state is None:
        raise RuntimeError(f"no cluster under {_home()}: run `bench cluster up` first")
    broker, backend = os.environ.get("BENCH_CELERY_BROKER"), os.environ.get("BENCH_CELERY_BACKEND")
    if not broker or not backend:
        raise RuntimeError("BENCH_CELERY_BROKER is not set: start workers with `bench cluster worker` or `bench "
                           "cluster join` (they read the credentials from cluster/secrets.env)")
    app = make_app({"broker": broker, "backend": backend, "config_source": CELERY_SETTINGS})
    create_task(app)
    signals.worker_ready.connect(_start_heartbeat, weak=False)
    signals.worker_process_init.connect(_die_with_parent, weak=False)
    signals.task_prerun.connect(_task_started, weak=False)
    signals.task_postrun.connect(_task_ended, weak=False)
    return app


def _start_heartbeat(**_kw: Any) -> None:
    path = worker_dir(_home(), _name()) / "heartbeat"
    path.parent.mkdir(parents=True, exist_ok=True)

    def beat() -> None:
        asked = False
        while True:
            path.touch()
            if not asked and _must_restart():
                asked = True
                os.kill(os.getpid(), signal.SIGTERM)  # Celery's warm shutdown: running steps finish first
            time.sleep(HEARTBEAT_S)

    path.touch()
    threading.Thread(target=beat, name="bench-heartbeat", daemon=True).start()


def _must_restart() -> bool:
    """`bench cluster down` asked this worker to stop (its stop file), or the credentials it started with were
    rotated (secrets.env's generation moved on): it then finishes and exits (`join` starts it again)."""
    from bench_assets.platform.cluster.secrets import SecretsError, read_secrets

    if (worker_dir(_home(), _name()) / "stop").exists():
        return True
    started = os.environ.get("BENCH_SECRETS_GENERATION")
    try:
        return started is not None and read_secrets(_home()).generation != int(started)
    except (SecretsError, ValueError):
        return False


def _die_with_parent(**_kw: Any) -> None:
    """A task process is killed with its worker (Linux), as a lost box would take it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _task_record(task_id: str) -> Path:
    return worker_dir(_home(), _name()) / "tasks" / f"{task_id}.json"


def _task_started(task_id: str | None = None, args: Any = None, kwargs: Any = None, **_kw: Any) -> None:
    packed = (kwargs or {}).get("execute_step_args_packed") or ((args or [None])[0])
    run_id, step_keys = _step_of(packed)
    record = {"task_id": task_id, "run_id": run_id, "step_keys": step_keys, "pid": os.getpid(),
              "worker": _name(), "started": time.time()}
    path = _task_record(task_id or "unknown")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record))


def _step_of(packed: Any) -> tuple[str | None, list[str] | None]:
    """(run id, step keys) of a dagster-celery task from its packed ExecuteStepArgs (passed as a keyword)."""
    try:
        from dagster._grpc.types import ExecuteStepArgs
        from dagster._serdes import unpack_value

        step = unpack_value(packed, as_type=ExecuteStepArgs)
        return step.run_id, list(step.step_keys_to_execute or [])
    except Exception:  # noqa: BLE001 - a task that is not a dagster step: recorded without a run
        return None, None


def _task_ended(task_id: str | None = None, **_kw: Any) -> None:
    """The record moves to done/ (what `bench cluster status` counts as steps done)."""
    src = _task_record(task_id or "unknown")
    dst = src.parent.parent / "done" / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.exists():
        src.replace(dst)


app = make_worker_app()
