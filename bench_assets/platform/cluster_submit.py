"""Submitting a campaign's runs to the cluster and watching them finish: what `bench campaign` and `bench train`
do while a cluster is up (the same runs the run pool would execute in this process otherwise).

Each run goes to the webserver's GraphQL API (`submitJobExecution`, as the UI's launchpad does) with its partition
tags and `dagster/priority` (train images: the daemon's queue dequeues the longest first); the daemon launches it;
its steps go to the workers through Redis. Nothing is submitted unless every server answers first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench_assets.platform.cluster.layout import ClusterState
from bench_assets.platform.cluster.servers import ClusterError, require_servers
from bench_assets.platform.instance import RunOutcome
from bench_assets.platform.run_pool import PoolResult, PoolRun

LOCATION = "bench"  # workspace.yaml's location name
TERMINAL = ("SUCCESS", "FAILURE", "CANCELED")


def partition_tags(partition: str | dict[str, str] | None) -> dict[str, str]:
    """Dagster's partition tags for a run: one key, or a multi-partition's key plus one tag per dimension."""
    if partition is None:
        return {}
    if isinstance(partition, str):
        return {"dagster/partition": partition}
    tags = {f"dagster/partition/{dim}": key for dim, key in partition.items()}
    tags["dagster/partition"] = "|".join(partition[d] for d in sorted(partition))
    return tags


def submit(state: ClusterState, runs: list[PoolRun], *, launched_by: str = "cli-cluster") -> list[tuple[PoolRun, str]]:
    """Submit every run (in order) and return (run, run id); refuses before the first one if a server is down."""
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    require_servers(state)
    client = DagsterGraphQLClient("127.0.0.1", port_number=state.webserver_port, timeout=60)
    out = []
    for r in runs:
        tags = {**r.tags, **partition_tags(r.partition), "bench/launched_by": launched_by}
        try:
            run_id = client.submit_job_execution(r.job_name, repository_location_name=LOCATION,
                                                 run_config=r.run_config or {}, tags=tags)
        except DagsterGraphQLClientError as exc:
            raise ClusterError(f"submitting {r.job_name} {r.label} to the cluster failed after {len(out)} of "
                               f"{len(runs)} runs: {exc}") from exc
        out.append((r, run_id))
    return out


def outcome(instance: Any, run_id: str) -> RunOutcome:
    """The run's result as the terminal reports it: failed steps' messages and failed checks."""
    import dagster as dg

    run = instance.get_run_by_id(run_id)
    errors: list[str] = []
    warnings: list[str] = []
    records = instance.get_records_for_run(run_id, of_type={dg.DagsterEventType.STEP_FAILURE,
                                                              dg.DagsterEventType.ASSET_CHECK_EVALUATION,
                                                              dg.DagsterEventType.RUN_FAILURE,
                                                              dg.DagsterEventType.ENGINE_EVENT}).records
    for rec in records:
        ev = rec.event_log_entry.dagster_event
        if ev is None:
            continue
        if ev.event_type == dg.DagsterEventType.STEP_FAILURE:
            err = ev.event_specific_data.error
            parts = []
            while err is not None:
                parts.append(err.message.strip())
                err = err.cause
            errors.append(f"{ev.step_key}: " + " <- ".join(parts))
        elif ev.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            check = ev.event_specific_data
            if not check.passed:
                line = f"check {check.check_name} on {check.asset_key.to_user_string()}: {check.description or ''}"
                (warnings if check.severity == dg.AssetCheckSeverity.WARN else errors).append(line)
        elif ev.event_type == dg.DagsterEventType.ENGINE_EVENT and "is lost" in (rec.event_log_entry.message or ""):
            errors.append(rec.event_log_entry.message)
    if run is not None and run.status != dg.DagsterRunStatus.SUCCESS and not errors:
        errors.append(f"run ended {run.status.value}")
    ok = run is not None and run.status == dg.DagsterRunStatus.SUCCESS and not errors
    return RunOutcome(run_id=run_id, success=ok, errors=errors, warnings=warnings)


def wait(instance: Any, submitted: list[tuple[PoolRun, str]], on_result: Callable[[PoolResult], None] | None = None,
         poll_s: float = 2.0, timeout_s: float | None = None) -> list[PoolResult]:
    """Poll the instance until every submitted run has ended; report each as it ends."""
    import dagster as dg

    start = time.monotonic()
    pending = dict((run_id, r) for r, run_id in submitted)
    results: list[PoolResult] = []
    while pending:
        records = instance.get_run_records(dg.RunsFilter(run_ids=list(pending)))
        for rec in records:
            run = rec.dagster_run
            if run.status.value in TERMINAL:
                r = pending.pop(run.run_id)
                result = PoolResult(r, outcome(instance, run.run_id), time.monotonic() - start)
                results.append(result)
                if on_result:
                    on_result(result)
        if pending:
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                raise ClusterError(f"{len(pending)} run(s) still unfinished after {timeout_s:.0f} s: "
                                   f"{', '.join(pending)}")
            time.sleep(poll_s)
    return results
