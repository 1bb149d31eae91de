"""Many runs at once: worker processes that each load the code location once and execute the runs they are
handed in-process, at most `workers` at a time, in the order given.

This replaces one `bench _exec` process per partition (interpreter start, `import dagster`, the code location
and the instance paid again for every partition). A worker that dies (killed, out of memory) fails only the
run it held: the scheduler sees its process end without an answer, records the failure, and starts a fresh
worker for the runs still waiting. Each run is an ordinary Dagster run on the instance (tagged with the pid
of the worker that executes it, so a run whose worker is gone is reconciled like any dead CLI run).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_assets.platform.instance import RunOutcome

# The spawn start method: a fresh interpreter per worker (forking a process that holds Dagster's threads and
# an open instance is not safe).
_CONTEXT = multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class PoolRun:
    """One run to execute: the job's name in the code location, a partition (a dict of dimension -> key for a
    multi-partition), run config and tags."""

    label: str
    job_name: str
    partition: str | dict[str, str] | None = None
    run_config: dict[str, Any] | None = None
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class PoolResult:
    run: PoolRun
    outcome: RunOutcome
    seconds: float  # handed to a worker -> answer received (a fresh worker's start-up counts for its first run)


def _execute(instance: Any, defs: Any, run: PoolRun) -> RunOutcome:
    import dagster as dg

    from bench_assets.platform.instance import execute

    key = dg.MultiPartitionKey(run.partition) if isinstance(run.partition, dict) else run.partition
    return execute(instance, defs.resolve_job_def(run.job_name), partition_key=key, run_config=run.run_config,
                   tags=run.tags or None)


def _worker(conn: Any, home: str, load: Callable[[], Any]) -> None:
    from bench_assets.platform.instance import open_instance
    from bench_assets.platform.process_gc import collections_paused, skip_final_collections

    with collections_paused():  # Dagster and the code location, loaded for the life of the worker
        instance = open_instance(Path(home))
        defs = load()
    while True:
        run = conn.recv()
        if run is None:
            skip_final_collections()  # its exit without the last collections over Dagster and the code location
            return
        try:
            outcome = _execute(instance, defs, run)
        except Exception as exc:  # noqa: BLE001 - the scheduler reports it as this run's failure
            outcome = RunOutcome(run_id="", success=False, errors=[f"{type(exc).__name__}: {exc}"])
        conn.send(outcome)


@dataclass
class _Worker:
    process: Any
    conn: Any
    run: PoolRun | None = None
    started: float = 0.0
    done: int = 0  # runs answered


def _ask_exit(w: _Worker) -> None:
    try:
        w.conn.send(None)
    except (BrokenPipeError, OSError):
        pass


def _reap(w: _Worker) -> None:
    """Wait for a worker asked to exit (killed if it does not within 30 s)."""
    w.process.join(timeout=30)
    if w.process.is_alive():
        w.process.kill()


def _retire(w: _Worker) -> None:
    _ask_exit(w)
    _reap(w)


def _answer(w: _Worker) -> RunOutcome | None:
    """The worker's outcome when it sent one; None when it has not (or died before it could)."""
    try:
        return w.conn.recv() if w.conn.poll() else None
    except (EOFError, OSError):
        return None


def _start_worker(home: Path, load: Callable[[], Any]) -> _Worker:
    parent, child = _CONTEXT.Pipe()
    process = _CONTEXT.Process(target=_worker, args=(child, str(home), load), daemon=False)
    process.start()
    child.close()
    return _Worker(process, parent)


def _hand_out(pending: deque[PoolRun], pool: list[_Worker], workers: int, start: Callable[[], _Worker]) -> None:
    """Give the next runs to idle workers, in order, starting workers up to the limit."""
    while pending:
        worker = next((w for w in pool if w.run is None), None)
        if worker is None:
            if len(pool) >= max(1, workers):
                return
            worker = start()
            pool.append(worker)
        worker.run, worker.started = pending.popleft(), time.monotonic()
        worker.conn.send(worker.run)


def run_all(runs: Iterable[PoolRun], *, workers: int, home: Path, load: Callable[[], Any],
            on_result: Callable[[PoolResult], None] | None = None,
            runs_per_worker: int | None = None) -> list[PoolResult]:
    """Execute every run, at most `workers` at once, in order; `load` (picklable: a module-level function)
    returns the code location's Definitions inside a worker. `runs_per_worker`: retire a worker after that
    many runs (1 = every run in a fresh process, as a measurement that must not inherit a warm process wants)."""
    pending = deque(runs)
    pool: list[_Worker] = []
    results: list[PoolResult] = []

    def finish(w: _Worker, outcome: RunOutcome) -> None:
        assert w.run is not None
        result = PoolResult(w.run, outcome, time.monotonic() - w.started)
        w.run = None
        w.done += 1
        results.append(result)
        if on_result:
            on_result(result)
        if runs_per_worker and w.done >= runs_per_worker and w.process.is_alive():
            _retire(w)
            pool.remove(w)

    try:
        while pending or any(w.run for w in pool):
            _hand_out(pending, pool, workers, lambda: _start_worker(home, load))
            busy = [w for w in pool if w.run is not None]
            ready = multiprocessing.connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for w in busy:
                if w.conn in ready or w.process.sentinel in ready:
                    outcome = _answer(w)
                    if outcome is not None:
                        finish(w, outcome)
                    elif not w.process.is_alive():  # the worker died holding this run
                        w.process.join()
                        finish(w, RunOutcome(run_id="", success=False, errors=[
                            f"the worker process executing it died (exit code {w.process.exitcode}); the run is "
                            "reconciled as failed and the partition resumes when the campaign is run again"]))
                        pool.remove(w)
    finally:  # every worker is asked first, so they wind down together
        for w in pool:
            _ask_exit(w)
        for w in pool:
            _reap(w)
    return results
