"""A run executed in `bench`'s own process leaves the process's SIGTERM as it found it.

Dagster's in-process execution ends by giving SIGTERM whatever handler SIGINT has. A process started with SIGINT
ignored (a script's background job, a pytest-xdist worker) then ignored SIGTERM for good, and so did every child
it started afterwards: `kill` no longer stopped it, nor the servers `bench cluster down` stops with TERM. Found in
the suite: a cluster-stop test failed after an earlier test's in-process campaign had run in the same worker."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.platform import pool_location


def _kernel_ignores(sig: int) -> bool:
    """Whether the kernel's view of this process (what a child inherits through exec) has `sig` ignored."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    raise AssertionError("no SigIgn line in /proc/self/status")


@pytest.fixture
def started_in_background() -> Iterator[None]:
    """This process as a script's background job starts: SIGINT ignored, SIGTERM at its default."""
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGTERM, saved[1])


def _config(tmp_path: Path) -> dict:
    return {"ops": {"step": {"config": {"log": str(tmp_path / "log.jsonl"), "label": "one", "seconds": 0.0}}}}


def test_dagster_alone_leaves_sigterm_ignored(started_in_background: None, tmp_path: Path) -> None:
    """The upstream behaviour the guard exists for (when this fails, Dagster changed and the guard can go)."""
    import dagster as dg

    result = pool_location.pool_job.execute_in_process(instance=dg.DagsterInstance.ephemeral(),
                                                       run_config=_config(tmp_path))
    assert result.success
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN and _kernel_ignores(signal.SIGTERM)


def test_a_run_in_process_keeps_sigterm_and_a_later_child_still_stops(started_in_background: None, tmp_path: Path,
                                                                      bench_home: Path) -> None:
    from bench_assets.platform.instance import execute, open_instance

    outcome = execute(open_instance(bench_home), pool_location.pool_job, run_config=_config(tmp_path))
    assert outcome.success, outcome.errors
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and not _kernel_ignores(signal.SIGTERM)
    # What the guard protects: a child started afterwards (a server, a pool worker) still stops on TERM.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        child.terminate()
        assert child.wait(timeout=20) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()
