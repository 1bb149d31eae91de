"""The product's Dagster instance under BENCH_HOME, and executing a job's run on it in this process.

Every CLI verb goes through a Dagster run on this instance, so the UI shows the same history as
the terminal. Runs execute in-process (one step at a time here): a partition's own step is the
expensive part and process start-up would only add seconds. Many partitions at once go through
`run_pool.py` (worker processes that each execute runs like this).
"""

from __future__ import annotations

import fcntl
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_assets.platform.fsutil import atomic_write_text, host_id, pid_alive
from bench_assets.platform.instance_template import template_text, upgraded
from resources.lanes import lanes_from_env

if TYPE_CHECKING:
    import dagster as dg



def dagster_home(home: Path) -> Path:
    """The product instance's folder: the cluster's (PostgreSQL) while one is up under `home`, else home/dagster."""
    from bench_assets.platform.cluster.layout import cluster_dagster_home, load_state

    if load_state(home) is not None:
        return cluster_dagster_home(home)
    return home / "dagster"


def prepare_home(home: Path) -> Path:
    """Create BENCH_HOME and its Dagster instance folder; point DAGSTER_HOME at it. While a cluster is up the
    instance is the cluster's (its PostgreSQL must answer, or the error says how to restart it)."""
    from bench_assets.platform.cluster.layout import load_state
    from bench_assets.platform.cluster.servers import require_postgres

    state = load_state(home)
    if state is not None:
        from bench_assets.platform.cluster.secrets import export_cluster_env

        export_cluster_env(home)  # dagster.yaml names the database's address and password by these variables
        require_postgres(state)
    dh = dagster_home(home)
    dh.mkdir(parents=True, exist_ok=True)
    cfg = dh / "dagster.yaml"
    if not cfg.exists():  # two processes may get here at once: each writes a private temp file
        atomic_write_text(cfg, template_text())
    elif (new := upgraded(cfg.read_text())) is not None:  # a home from before the run coordinator moved
        atomic_write_text(cfg, new)
    os.environ["DAGSTER_HOME"] = str(dh)
    os.environ["BENCH_HOME"] = str(home)
    return dh


def pool_limits(home: Path | None = None) -> dict[str, int]:
    """`gpu`: one slot per lane (BENCH_GPUS x BENCH_JOBS_PER_GPU, or BENCH_CPU_LANES; a cluster's: every worker's
    lanes together); `duckdb_writer`: 1."""
    from bench_assets.platform.cluster.layout import load_state

    state = load_state(home) if home is not None else None
    return {"gpu": state.total_lanes if state is not None else len(lanes_from_env()), "duckdb_writer": 1}


def open_instance(home: Path, *, reconcile: bool = True) -> dg.DagsterInstance:
    """The product instance. `reconcile=False` leaves dead runs as they are (`bench doctor` reports them)."""
    import dagster as dg

    dh = prepare_home(home)
    # Two CLI processes starting at once would both create the sqlite storages and one would fail.
    with open(dh / ".init.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        instance = dg.DagsterInstance.get()
        for pool, limit in pool_limits(home).items():
            if instance.event_log_storage.get_concurrency_info(pool).slot_count != limit:
                instance.event_log_storage.set_concurrency_slots(pool, limit)
        if reconcile:
            reconcile_stale_runs(instance)
        fcntl.flock(lock, fcntl.LOCK_UN)
    return instance


PID_TAG = "bench/pid"
HOST_TAG = "bench/host"
RECONCILED_TAG = "bench/dead_marked_failed"  # when a later bench command found the run's process gone


def dead_cli_runs(instance: dg.DagsterInstance) -> list[tuple[dg.DagsterRun, int]]:
    """(run, pid) of STARTED/STARTING runs launched by a `bench` process on this host that is gone."""
    import dagster as dg

    host = host_id()
    out = []
    records = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED,
                                                              dg.DagsterRunStatus.STARTING]))
    for rec in records:
        tags = rec.dagster_run.tags
        if tags.get(HOST_TAG) != host or not tags.get(PID_TAG, "").isdigit():
            continue
        if not pid_alive(int(tags[PID_TAG])):
            out.append((rec.dagster_run, int(tags[PID_TAG])))
    return out


def reconcile_stale_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the CLI runs whose process is gone (killed, power cut) and free their pool slots.

    Without this a SIGKILLed `bench` run stays STARTED and keeps its `gpu` slot forever, so the next
    run of the campaign waits on a lane nobody holds. (Runs launched from the UI are covered by the
    daemon's run monitoring, enabled in dagster.yaml.)
    """
    import datetime as dt

    stale = []
    for run, pid in dead_cli_runs(instance):
        # bench doctor lists these too, so a dead run never goes unsaid because a later command fixed it first
        instance.add_run_tags(run.run_id, {RECONCILED_TAG: dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
        instance.report_run_failed(run, f"process {pid} that ran it is gone (killed?); "
                                        "marked failed by bench so its pool slots are freed")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        stale.append(run.run_id)
    return stale


@dataclass
class RunOutcome:
    run_id: str
    success: bool
    errors: list[str]
    warnings: list[str] | None = None  # WARN-severity check failures (e.g. a campaign still in flight)


def _warnings(result: Any) -> list[str]:
    import dagster as dg

    return [f"check {ev.asset_check_key.name} warns on {ev.asset_key.to_user_string()}: {ev.description}"
            for ev in result.get_asset_check_evaluations()
            if not ev.passed and ev.severity == dg.AssetCheckSeverity.WARN]


def _errors(result: Any) -> list[str]:
    import dagster as dg

    out: list[str] = []
    for ev in result.all_events:
        if ev.event_type_value == "STEP_FAILURE":
            err = ev.event_specific_data.error
            parts = []
            while err is not None:  # Dagster wraps user errors: the cause holds the real message
                parts.append(err.message.strip().removeprefix("dagster._core.definitions.events.Failure: "))
                err = err.cause
            out.append(" <- ".join(p for p in parts if "Error occurred while executing op" not in p) or "step failed")
    for ev in result.get_asset_check_evaluations():
        if not ev.passed and ev.severity != dg.AssetCheckSeverity.WARN:
            detail = ev.description or str({k: v.value for k, v in ev.metadata.items()})
            out.append(f"check {ev.asset_check_key.name} failed on {ev.asset_key.to_user_string()}: {detail}")
    return out


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """SIGTERM's handler as it was before the block. Dagster's in-process execution leaves SIGTERM with SIGINT's
    handler when a run ends (its mapping for Kubernetes). In a process started with SIGINT ignored (a script's
    background job, a pytest-xdist worker) SIGTERM was then ignored for good: `kill` no longer stopped `bench`,
    and every child it started afterwards (pool workers, dbt, cluster servers) inherited the ignored SIGTERM."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread can set handlers
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if before is not None:  # None: a handler set outside Python, which cannot be put back from here
            signal.signal(signal.SIGTERM, before)


def execute(instance: dg.DagsterInstance, job: dg.JobDefinition, *, partition_key: str | None = None,
            run_config: dict[str, Any] | None = None, tags: dict[str, str] | None = None,
            checks_only: bool = False, asset_graph: Any = None) -> RunOutcome:
    """Run `job` (resolved against its Definitions) in this process. `checks_only` runs just the asset checks
    of the job's assets (on what is stored now, materializing nothing): how stored datasets are re-verified;
    it needs the code location's `asset_graph` to find them."""
    from bench_assets.platform.terminal_log import terminal_logger_def, verbose

    if checks_only:
        checks = asset_graph.get_check_keys_for_assets(set(job.asset_layer.selected_asset_keys))
        job = job.get_subset(asset_selection=set(), asset_check_selection=set(checks))
    # The terminal gets failures without stack traces (the event log keeps them; --verbose prints them).
    job = job.with_logger_defs({"bench_terminal": terminal_logger_def()})
    reconcile_stale_runs(instance)  # a killed earlier run must not keep the pool slot this run needs
    config = {"loggers": {"bench_terminal": {"config": {"log_level": os.environ.get("BENCH_LOG_LEVEL", "INFO"),
                                                        "verbose": verbose()}}},
              **(run_config or {})}
    run_tags = {"bench/launched_by": "cli", PID_TAG: str(os.getpid()), HOST_TAG: host_id(), **(tags or {})}
    with _sigterm_kept():
        result = job.execute_in_process(instance=instance, partition_key=partition_key, run_config=config,
                                        raise_on_error=False, tags=run_tags)
    errors = _errors(result)
    # A failed check is a failure for the terminal too, blocking or not: loud beats silent.
    return RunOutcome(run_id=result.run_id, success=result.success and not errors, errors=errors,
                      warnings=_warnings(result))


def add_partitions(instance: dg.DagsterInstance, partitions_name: str, names: list[str]) -> list[str]:
    """Add the dynamic partitions that do not exist yet; return the new ones."""
    known = set(instance.get_dynamic_partitions(partitions_name))
    new = [n for n in names if n not in known]
    if new:
        instance.add_dynamic_partitions(partitions_name, new)
    return new


def _keys_of(partitions_def: Any, partitions_name: str, names: set[str], stored: set[str]) -> list[str]:
    """The stored partition keys of an asset partitioned by `partitions_def` that involve one of `names` of the
    dynamic partition set `partitions_name`: the key itself, or a multi-partition key with it in that dimension."""
    import dagster as dg

    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        return sorted(stored & names) if partitions_def.name == partitions_name else []
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        # Multi-partition keys are stored as the dimensions' keys joined by "|" in the definition's dimension order.
        dims = [i for i, d in enumerate(partitions_def.partitions_defs)
                if isinstance(d.partitions_def, dg.DynamicPartitionsDefinition)
                and d.partitions_def.name == partitions_name]
        width = len(partitions_def.partitions_defs)
        return sorted(k for k in stored if len(parts := k.split("|")) == width and any(parts[i] in names for i in dims))
    return []


def remove_partitions(instance: dg.DagsterInstance, partitions_name: str, names: list[str],
                      assets: list[tuple[dg.AssetKey, Any]]) -> dict[str, int]:
    """Delete the dynamic partitions `names` of `partitions_name` and wipe their status: every event record
    (materializations, planned and failed materializations, observations, their tags) and check execution of
    those partition keys of each asset in `assets` ((asset key, partitions definition) pairs: partitioned by the
    set alone or as a dimension of a multi-partition), then each touched asset's cached partition status, so a
    name added again later starts unmaterialized. Run records and their logs stay (the history of what ran).

    Dagster 1.13's `instance.wipe_asset_partitions` raises NotImplementedError on its SQL event logs (sqlite,
    PostgreSQL), so the records are deleted here through the storage's index connection, as its own
    `wipe_asset` and `delete_events` do. Returns the number of event records and check executions removed.
    """
    import sqlalchemy as db
    from dagster._core.storage.event_log.schema import (
        AssetCheckExecutionsTable,
        AssetEventTagsTable,
        AssetKeyTable,
        SqlEventLogStorageTable,
    )
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    removed = {"events": 0, "check_executions": 0}
    wanted = set(names)
    if not isinstance(storage, SqlEventLogStorage):
        raise TypeError(f"cannot wipe partition status in a {type(storage).__name__} event log")
    has_checks = storage.has_table("asset_check_executions")
    for asset_key, partitions_def in assets:
        if partitions_def is None:
            continue
        key = asset_key.to_string()
        ev, chk = SqlEventLogStorageTable, AssetCheckExecutionsTable
        with storage.index_connection() as conn:
            stored = {r[0] for r in conn.execute(
                db.select(ev.c.partition).where(ev.c.asset_key == key, ev.c.partition.isnot(None)).distinct())}
            if has_checks:
                stored |= {r[0] for r in conn.execute(
                    db.select(chk.c.partition).where(chk.c.asset_key == key, chk.c.partition.isnot(None)).distinct())}
            keys = _keys_of(partitions_def, partitions_name, wanted, stored)
            if not keys:
                continue
            ids = [r[0] for r in conn.execute(db.select(ev.c.id).where(ev.c.asset_key == key,
                                                                     ev.c.partition.in_(keys)))]
            if ids:
                conn.execute(AssetEventTagsTable.delete().where(AssetEventTagsTable.c.event_id.in_(ids)))
                conn.execute(ev.delete().where(ev.c.id.in_(ids)))
            if has_checks:
                removed["check_executions"] += conn.execute(
                    chk.delete().where(chk.c.asset_key == key, chk.c.partition.in_(keys))).rowcount or 0
            # The asset's latest materialization may have been one of them: without the stored copy, Dagster
            # reads the latest from the event log, which no longer has it.
            conn.execute(AssetKeyTable.update().values(last_materialization=None)
                         .where(AssetKeyTable.c.asset_key == key))
        removed["events"] += len(ids)
        storage.wipe_asset_cached_status(asset_key)
    for name in names:
        instance.delete_dynamic_partition(partitions_name, name)
    return removed
