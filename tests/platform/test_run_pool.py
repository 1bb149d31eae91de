"""The run pool `bench campaign` uses: runs in order, at most `workers` at once, each worker process reused for
many runs, and a worker that dies fails only the run it held."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_assets.platform.run_pool import PoolRun, run_all
from tests.platform import pool_location

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


def _run(label: str, log: Path, action: str = "sleep", seconds: float = 0.3) -> PoolRun:
    config = {"ops": {"step": {"config": {"log": str(log), "label": label, "action": action, "seconds": seconds}}}}
    return PoolRun(label=label, job_name=pool_location.pool_job.name, run_config=config)


def _overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def test_runs_in_order_on_at_most_n_reused_workers(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    runs = [_run(f"r{i}", log) for i in range(6)]
    seen: list[str] = []
    results = run_all(runs, workers=2, home=tmp_path / "home", load=pool_location.load,
                      on_result=lambda r: seen.append(r.run.label))
    assert [r.outcome.success for r in results] == [True] * 6 and sorted(seen) == [f"r{i}" for i in range(6)]
    entries = pool_location.read_log(log)
    assert len({e["pid"] for e in entries}) == 2  # two workers, each reused (no process per run)
    assert not any(_overlap(a, b) and _overlap(b, c) and _overlap(a, c)
                   for a in entries for b in entries for c in entries if len({a["label"], b["label"], c["label"]}) == 3)
    for pid in {e["pid"] for e in entries}:  # handed out in list order: each worker's runs come in that order
        mine = [int(e["label"][1:]) for e in sorted(entries, key=lambda e: e["start"]) if e["pid"] == pid]
        assert mine == sorted(mine)


def test_a_failed_run_and_a_dead_worker_fail_only_their_own_run(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    runs = [_run("ok-1", log), _run("fails", log, "fail"), _run("dies", log, "die"), _run("ok-2", log),
            _run("ok-3", log)]
    results = {r.run.label: r for r in run_all(runs, workers=1, home=tmp_path / "home", load=pool_location.load)}
    assert {k for k, r in results.items() if r.outcome.success} == {"ok-1", "ok-2", "ok-3"}
    assert any("fails failed on purpose" in e for e in results["fails"].outcome.errors)
    died = results["dies"].outcome
    assert not died.success and "the worker process executing it died (exit code -9)" in died.errors[0]
    pids = {e["label"]: e["pid"] for e in pool_location.read_log(log)}
    assert pids["ok-1"] == pids["fails"] != pids["ok-2"]  # a fresh worker took over after the death


def test_runs_per_worker_one_gives_every_run_a_fresh_process(tmp_path: Path) -> None:
    """A measurement that must not inherit a warm process (augbench rounds) retires each worker after its run."""
    log = tmp_path / "log.jsonl"
    runs = [_run(f"r{i}", log, seconds=0.05) for i in range(3)]
    results = run_all(runs, workers=1, home=tmp_path / "home", load=pool_location.load, runs_per_worker=1)
    assert [r.outcome.success for r in results] == [True] * 3
    entries = sorted(pool_location.read_log(log), key=lambda e: e["start"])
    assert [e["label"] for e in entries] == ["r0", "r1", "r2"] and len({e["pid"] for e in entries}) == 3
