"""`bench doctor` finds dead runs, stuck pool slots and orphaned temps under a real BENCH_HOME, and fixes them."""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest

from bench_assets.platform.doctor import diagnose, doctor_main
from bench_assets.platform.instance import HOST_TAG, PID_TAG
from tests.platform.test_fault_litter import HOLD_SCRATCH, dead_pid, holding

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


def _run(instance: dg.DagsterInstance, status: dg.DagsterRunStatus, pid: int | None = None) -> str:
    tags = {PID_TAG: str(pid), HOST_TAG: socket.gethostname()} if pid is not None else {}
    run = dg.DagsterRun(job_name="campaign_job", run_id=str(uuid.uuid4()), status=status, tags=tags)
    instance.add_run(run)
    return run.run_id


def _claimed(instance: dg.DagsterInstance, pool: str) -> set[str]:
    return {s.run_id for s in instance.event_log_storage.get_concurrency_info(pool).claimed_slots}


def _plant(path: Path, size: int = 1000, age_s: float = 0.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    if age_s:
        t = time.time() - age_s
        os.utime(path, (t, t))
    return path


def _doctor(home: Path, fix: bool) -> tuple[int, list[str]]:
    lines: list[str] = []
    return doctor_main(home, fix, lines.append), lines


def test_doctor_on_a_clean_home_finds_nothing(instance: dg.DagsterInstance, bench_home: Path) -> None:
    _run(instance, dg.DagsterRunStatus.SUCCESS, pid=os.getpid())
    _plant(bench_home / "runs" / "m" / "d" / "result.json")
    assert _doctor(bench_home, False) == (0, [f"bench doctor: nothing to fix under {bench_home}"])
    assert _doctor(bench_home, True)[0] == 0


def test_doctor_finds_and_fixes_a_dead_run_a_stuck_slot_and_orphaned_temps(
        instance: dg.DagsterInstance, bench_home: Path, tmp_path: Path) -> None:
    gone = dead_pid()
    dead_run = _run(instance, dg.DagsterRunStatus.STARTED, pid=gone)
    instance.event_log_storage.claim_concurrency_slot("gpu", dead_run, "rf100vl__checkpoint")
    ended_run = _run(instance, dg.DagsterRunStatus.SUCCESS)
    instance.event_log_storage.claim_concurrency_slot("duckdb_writer", ended_run, "report__warehouse")
    old = 20 * 60
    scratch = bench_home / "datasets" / "ds" / f".tmp-version-{gone}-abcdefgh"
    orphans = [
        _plant(scratch / "train" / "a.jpg", 3000).parent.parent,
        _plant(bench_home / f".warehouse.duckdb.{gone}.tmp", 5000),
        _plant(bench_home / f".warehouse.duckdb.{gone}.tmp.wal", 100),
        _plant(bench_home / "runs" / "m" / "d" / "sig" / ".result.json.k3j_9zqa.tmp", age_s=old),
        # a prediction's work folder its killed child left (child/predict.py): found by its pid, whatever its age
        _plant(bench_home / "eval" / "m" / "d" / f".tmp-predict-{gone}-q1w2e3r4" / "data.yaml").parent,
    ]
    keep = [
        _plant(bench_home / "runs" / "m" / "d" / "sig" / ".stats.json.zz9_abcd.tmp"),  # fresh: a write in flight
        _plant(bench_home / "dagster" / "storage" / ".x.abcdefgh.tmp", age_s=old),  # the instance's own files
        _plant(bench_home / "report.duckdb"),
    ]
    with holding(HOLD_SCRATCH, str(bench_home / "staging"), "ds") as (_live, busy):
        keep.append(busy)
        findings = diagnose(bench_home, instance)
        assert {(f.kind, f.where) for f in findings} == {
            ("dead_run", dead_run), ("stuck_slot", ended_run),
            *(("orphan_temp", str(p.relative_to(bench_home))) for p in orphans)}

        code, lines = _doctor(bench_home, fix=False)
        assert code == 1
        assert any(dead_run in line and f"process {gone}" in line and "gpu" in line for line in lines), lines
        assert any(f".tmp-version-{gone}-abcdefgh" in line and "KiB" in line for line in lines), lines
        assert all(p.exists() for p in orphans)  # diagnosing changes nothing
        assert instance.get_run_by_id(dead_run).status == dg.DagsterRunStatus.STARTED
        assert _claimed(instance, "duckdb_writer") == {ended_run} and _claimed(instance, "gpu") == {dead_run}

        code, lines = _doctor(bench_home, fix=True)
        assert code == 0, lines
        assert lines[-1] == "bench doctor: everything fixed"
        assert not [p for p in orphans if p.exists()]
        assert all(p.exists() for p in keep)
        assert instance.get_run_by_id(dead_run).status == dg.DagsterRunStatus.FAILURE
        assert _claimed(instance, "gpu") == set() and _claimed(instance, "duckdb_writer") == set()
        assert diagnose(bench_home, instance) == []


def test_doctor_leaves_unowned_temps_while_a_run_is_in_progress(
        instance: dg.DagsterInstance, bench_home: Path) -> None:
    _run(instance, dg.DagsterRunStatus.STARTED, pid=os.getpid())  # this test process: alive
    work = _plant(bench_home / "runs" / "m" / "d" / "sig" / ".result.json.k3j_9zqa.tmp", age_s=3600)  # no owner pid

    code, lines = _doctor(bench_home, fix=True)
    assert code == 1
    assert any("run(s) in progress may own it" in line for line in lines), lines
    assert work.is_file()  # a long write may still be under way


def test_a_dead_run_a_later_command_already_fixed_is_still_said(instance: dg.DagsterInstance, bench_home: Path
                                                                 ) -> None:
    """`bench report` killed, then any bench command: it marks the dead run failed as it opens the instance (its
    slots freed), so the run is no problem left to fix, but `bench doctor` still says it died (it used to list
    nothing, and a run killed during the dbt build went unsaid)."""
    from bench_assets.platform.instance import open_instance

    gone = dead_pid()
    run_id = _run(instance, dg.DagsterRunStatus.STARTED, pid=gone)
    instance.event_log_storage.claim_concurrency_slot("duckdb_writer", run_id, "report_dbt_assets")
    later = open_instance(bench_home)  # what the next bench command does
    later.dispose()
    assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
    code, lines = _doctor(bench_home, False)
    assert code == 0 and lines[-1] == f"bench doctor: nothing to fix under {bench_home}"
    (said,) = [ln for ln in lines if run_id in ln]
    assert said.startswith(f"dead_run {run_id}: campaign_job died (process {gone} gone); already marked failed at ")
