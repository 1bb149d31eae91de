"""`bench doctor`: find, and with --fix repair, what faults leave behind under BENCH_HOME.

A kill -9, a power cut or a full disk can leave: pool slots held by runs that ended, runs still marked
STARTED whose process is gone, and scratch files and folders nobody will finish. Each writer sweeps its
own kind when it next starts; the doctor sweeps them all at once and says what each one costs.

It never removes what a live process may still be writing: scratch named with a pid is removed only when
that pid is gone; scratch without one (temp files of atomic writes, the prediction child's work folder)
only when nothing in it changed for ten minutes and no run is in progress.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench_assets.platform.fsutil import (
    OWNER_RE,
    host_id,
    human_bytes,
    is_scratch_name,
    owner_gone,
    path_age_s,
    pid_alive,
    remove_path,
    scratch_orphaned,
    scratch_pid,
)
from bench_assets.platform.fsutil import (
    SCRATCH_RANDOM as _RANDOM,
)

if TYPE_CHECKING:
    import dagster as dg

POOLS = ("gpu", "duckdb_writer")
UNOWNED_TEMP_MAX_AGE_S = 600.0  # a temp without an owner pid is orphaned when untouched this long
# `.<name>.<random>.tmp` (fsutil.atomic_write_bytes, mkstemp) or `.<name>.<pid>@<host>.tmp` (child
# atomic_torch_save; `.<name>.<pid>.tmp` before hosts were recorded)
_ATOMIC_TEMP = re.compile(rf"\..+?\.(?:{OWNER_RE}|{_RANDOM})\.tmp")
_WRITE_PROBE = re.compile(rf"\.write-probe-{_RANDOM}")  # preflight.unwritable_dirs
_ACTIVE = ("STARTED", "STARTING", "CANCELING")


@dataclass(frozen=True)
class Finding:
    """One problem: what it is, where, how big, and what --fix does about it."""

    kind: str  # "stuck_slot" | "dead_run" | "orphan_temp"
    where: str  # a run id or a path relative to BENCH_HOME
    what: str
    fix: str
    size_bytes: int | None = None
    deferred: str | None = None  # why --fix leaves it for now
    run_id: str | None = None
    path: Path | None = None

    def line(self) -> str:
        size = f" ({human_bytes(self.size_bytes)})" if self.size_bytes is not None else ""
        later = f" (not now: {self.deferred})" if self.deferred else ""
        return f"{self.kind} {self.where}{size}: {self.what} -> fix: {self.fix}{later}"


def _tree_bytes(path: Path) -> int:
    if path.is_symlink() or not path.is_dir():
        try:
            return path.lstat().st_size
        except OSError:
            return 0
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


# --- runs and pool slots ----------------------------------------------------------------------------------


def _slots_by_run(instance: dg.DagsterInstance) -> dict[str, dict[str, int]]:
    """run id -> pool -> steps of the run holding a slot of the pool or queued for one."""
    steps: dict[str, dict[str, set[str]]] = {}
    for pool in POOLS:
        info = instance.event_log_storage.get_concurrency_info(pool)
        for s in [*info.claimed_slots, *info.pending_steps]:  # a claimed step is also listed as assigned pending
            steps.setdefault(s.run_id, {}).setdefault(pool, set()).add(s.step_key)
    return {run_id: {pool: len(keys) for pool, keys in pools.items()} for run_id, pools in steps.items()}


def _pools_text(pools: dict[str, int]) -> str:
    return ", ".join(f"{n} slot(s) of pool {p}" for p, n in sorted(pools.items()))


def _run_findings(instance: dg.DagsterInstance) -> tuple[list[Finding], int]:
    """Dead runs and stuck slots, and how many runs are really in progress."""
    import dagster as dg

    from bench_assets.platform.instance import dead_cli_runs

    held = _slots_by_run(instance)
    findings = []
    dead = dead_cli_runs(instance)
    dead_ids = {run.run_id for run, _ in dead}
    for run, pid in dead:
        slots = f"; holds {_pools_text(held[run.run_id])}" if run.run_id in held else ""
        findings.append(Finding(
            "dead_run", run.run_id, f"{run.job_name} is {run.status.value} but its process {pid} on this host is "
            f"gone (killed?){slots}", "mark it failed and free its pool slots", run_id=run.run_id))
    for run_id, pools in sorted(held.items()):
        if run_id in dead_ids:
            continue
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status.value in _ACTIVE:
            continue
        state = f"run {run.job_name} ended {run.status.value}" if run is not None else "no such run"
        findings.append(Finding(
            "stuck_slot", run_id, f"{_pools_text(pools)} held, but {state}", "free the run's slots",
            size_bytes=None, run_id=run_id))
    active = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus(s) for s in _ACTIVE]))
    in_progress = sum(1 for rec in active if rec.dagster_run.run_id not in dead_ids)
    return findings, in_progress


# --- temp files and folders ------------------------------------------------------------------------------


def _temp_reason(home: Path, path: Path, is_dir: bool) -> tuple[str, bool] | None:
    """(why `path` is an orphaned temp, whether that rests on age alone), or None when it is not one."""
    from bench_assets.platform.warehouse import loader_temp_files

    name = path.name
    if is_scratch_name(name):
        if not scratch_orphaned(path):
            return None
        pid = scratch_pid(name)
        if pid is None:
            return "scratch folder of an older version, untouched for over an hour", False
        return f"scratch of process {pid}, which is gone", False
    if path.parent == home and not is_dir:
        for p, pid, host in loader_temp_files(home / "warehouse.duckdb"):
            if p == path:
                mine = pid == os.getpid() and host in (None, host_id())
                gone = not mine and owner_gone(pid, host)
                return (f"warehouse rebuild scratch of process {pid}, which is gone", False) if gone else None
    unowned = not is_dir and (_ATOMIC_TEMP.fullmatch(name) or _WRITE_PROBE.fullmatch(name))
    if not unowned:
        return None
    m = _ATOMIC_TEMP.fullmatch(name)
    if m and m.group(1) and (m.group(2) not in (None, host_id()) or pid_alive(int(m.group(1)))):
        return None  # `.<name>.<pid>@<host>.tmp` of a live writer, or of a writer on another box (not judged here)
    age = path_age_s(path)
    if age <= UNOWNED_TEMP_MAX_AGE_S:
        return None
    return f"temp file of an interrupted write, untouched for {age / 60:.0f} min", True


def _temp_findings(home: Path, runs_in_progress: int) -> list[Finding]:
    findings = []
    for root, dirs, files in os.walk(home):
        here = Path(root)
        if here == home:
            dirs[:] = [d for d in dirs if d != "dagster"]  # the instance's own storage: not ours to touch
        skip = set()
        for name, is_dir in [(d, True) for d in dirs] + [(f, False) for f in files]:
            if not name.startswith("."):
                continue
            path = here / name
            if is_dir and is_scratch_name(name):
                skip.add(name)  # a scratch folder is litter or in use as a whole: what is inside is its own
            reason = _temp_reason(home, path, is_dir)
            if reason is None:
                continue
            skip.add(name)
            why, by_age = reason
            deferred = (f"{runs_in_progress} run(s) in progress may own it; rerun when they end"
                        if by_age and runs_in_progress else None)
            findings.append(Finding("orphan_temp", str(path.relative_to(home)), why,
                                    "remove it", size_bytes=_tree_bytes(path), deferred=deferred, path=path))
        dirs[:] = [d for d in dirs if d not in skip]
    return findings


# --- the verb ----------------------------------------------------------------------------------------------


def marked_dead_runs(instance: dg.DagsterInstance, limit: int = 20) -> list[str]:
    """The runs a later `bench` command already marked failed because their process was gone (newest first): no
    longer problems, but every run that died is said, whoever fixed it."""
    import dagster as dg

    from bench_assets.platform.instance import PID_TAG, RECONCILED_TAG

    failed = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]), limit=500)
    records = [r for r in failed if RECONCILED_TAG in r.dagster_run.tags][:limit]
    return [f"dead_run {r.dagster_run.run_id}: {r.dagster_run.job_name} died (process "
            f"{r.dagster_run.tags.get(PID_TAG, '?')} gone); already marked failed at "
            f"{r.dagster_run.tags[RECONCILED_TAG]} by a later bench command, its pool slots freed" for r in records]


def diagnose(home: Path, instance: dg.DagsterInstance) -> list[Finding]:
    """Every problem found, runs and slots first; changes nothing."""
    findings, in_progress = _run_findings(instance)
    return findings + _temp_findings(home, in_progress)


def fix(home: Path, instance: dg.DagsterInstance, findings: list[Finding]) -> list[str]:
    """Repair what `diagnose` found (each item re-checked first); one line per action taken or declined."""
    from bench_assets.platform.instance import reconcile_stale_runs

    done = []
    if any(f.kind == "dead_run" for f in findings):
        for run_id in reconcile_stale_runs(instance):
            done.append(f"marked run {run_id} failed (its process is gone) and freed its pool slots")
    for f in findings:
        if f.kind == "stuck_slot" and f.run_id is not None:
            run = instance.get_run_by_id(f.run_id)
            if run is not None and run.status.value in _ACTIVE:
                done.append(f"left run {f.run_id}'s slots: it is {run.status.value} again")
                continue
            instance.event_log_storage.free_concurrency_slots_for_run(f.run_id)
            done.append(f"freed the pool slots of run {f.run_id} ({f.what})")
        elif f.kind == "orphan_temp" and f.path is not None:
            if f.deferred:
                done.append(f"left {f.where}: {f.deferred}")
            elif f.path.exists() and _temp_reason(home, f.path, f.path.is_dir() and not f.path.is_symlink()):
                remove_path(f.path)
                size = f" ({human_bytes(f.size_bytes)})" if f.size_bytes is not None else ""
                done.append(f"removed {f.where}{size}")
    return done


def doctor_main(home: Path, repair: bool, out: Callable[[str], None]) -> int:
    """Report every problem (one line each); with `fix`, repair them. 0: nothing left; 1: problems remain."""
    from bench_assets.platform.instance import open_instance

    instance = open_instance(home, reconcile=False)  # dead runs are findings here, not silently fixed
    try:
        findings = diagnose(home, instance)
        for line in marked_dead_runs(instance):
            out(line)
        if not findings:
            out(f"bench doctor: nothing to fix under {home}")
            return 0
        for f in findings:
            out(f.line())
        if not repair:
            out(f"bench doctor: {len(findings)} problem(s); run `bench doctor --fix` to repair them")
            return 1
        for line in fix(home, instance, findings):
            out(line)
        left = diagnose(home, instance)
        if left:
            out(f"bench doctor: {len(left)} problem(s) remain:")
            for f in left:
                out(f.line())
            return 1
        out("bench doctor: everything fixed")
        return 0
    finally:
        instance.dispose()
