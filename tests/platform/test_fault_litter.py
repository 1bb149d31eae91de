"""A killed writer's scratch is swept when the next writer of its kind starts; a live writer's never is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_assets.platform.fsutil import host_id, staging_dir, sweep_orphans
from bench_assets.platform.warehouse import rebuild_warehouse
from bench_assets.report.dbt_build import _report_build
from tests.conftest import REPO
from tests.tables import ALL_TABLES

HOLD_SCRATCH = """
import sys, time
from pathlib import Path
from bench_assets.platform.fsutil import staging_dir
with staging_dir(Path(sys.argv[1]), sys.argv[2]) as tmp:
    (tmp / "payload.bin").write_bytes(b"x" * 100_000)
    print(tmp, flush=True)
    time.sleep(600)
"""

HOLD_REPORT_BUILD = """
import sys, time
from pathlib import Path
from bench_assets.report.dbt_build import _report_build
home = Path(sys.argv[1])
with _report_build(home / "report.duckdb", home / "warehouse.duckdb", start_from_live=False) as build:
    print(build.scratch, flush=True)
    time.sleep(600)
"""


@contextmanager
def holding(code: str, *args: str) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A real process that made a scratch folder and sits in it; killed on exit if still running."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line, f"the writer exited with {proc.wait()} before making its scratch"
        yield proc, Path(line)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def kill9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()  # reaped: the pid is gone, as after any kill -9 of a CLI process


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(proc.stdout)


def test_killed_writers_scratch_is_swept_at_the_next_start_and_a_live_ones_survives(tmp_path: Path) -> None:
    parent = tmp_path / "staging"
    with (holding(HOLD_SCRATCH, str(parent), "ds") as (killed, orphan),
          holding(HOLD_SCRATCH, str(parent), "ds") as (_live, busy)):
        assert orphan.name.startswith(f".tmp-ds-{killed.pid}@{host_id()}-")
        kill9(killed)
        assert (orphan / "payload.bin").is_file()  # the kill left it behind
        other_kind = parent / f".tmp-media-{killed.pid}-abcdefgh"
        other_kind.mkdir()
        same_pid_earlier = parent / f".tmp-ds-{os.getpid()}-abcdefgh"  # a previous process with this pid
        same_pid_earlier.mkdir()

        with staging_dir(parent, "ds") as mine:
            assert not orphan.exists()
            assert not same_pid_earlier.exists()
            assert (busy / "payload.bin").is_file()  # a concurrent writer's work in progress
            assert other_kind.exists()  # swept by its own kind's next writer, not this one
            with staging_dir(parent, "ds") as nested:  # this process's own live scratch is in use too
                assert mine.is_dir() and nested.is_dir()
            assert mine.is_dir()
        assert not mine.exists()  # a normal exit still removes the scratch
        assert (busy / "payload.bin").is_file()
    assert sweep_orphans(parent, "media") == [other_kind]


def test_legacy_scratch_without_a_pid_is_swept_only_after_an_hour(tmp_path: Path) -> None:
    old, fresh = tmp_path / ".tmp-ds-abcdefgh", tmp_path / ".tmp-ds-ijklmnop"
    for d in (old, fresh):
        d.mkdir()
        (d / "f").write_bytes(b"x")
    two_hours_ago = os.path.getmtime(old) - 7200
    for p in (old / "f", old):
        os.utime(p, (two_hours_ago, two_hours_ago))
    assert sweep_orphans(tmp_path, "ds") == [old]
    assert fresh.exists()


def test_killed_report_build_scratch_is_swept_by_the_next_report_build(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rebuild_warehouse(home, home / "warehouse.duckdb", ALL_TABLES)
    with holding(HOLD_REPORT_BUILD, str(home)) as (killed, orphan):
        assert orphan.parent == home and orphan.name.startswith(".tmp-report-")
        kill9(killed)
        assert (orphan / "warehouse.duckdb").exists()
        with _report_build(home / "report.duckdb", home / "warehouse.duckdb", start_from_live=False) as build:
            assert not orphan.exists()
            assert build.scratch.is_dir()
    assert not [p for p in home.iterdir() if p.name.startswith(".tmp-report-")]


def test_dead_loaders_temp_files_are_removed_at_the_next_rebuild(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    gone = dead_pid()
    leftovers = [home / f".warehouse.duckdb.{gone}.tmp", home / f".warehouse.duckdb.{gone}.tmp.wal"]
    for p in leftovers:
        p.write_bytes(b"\0" * 50_000)
    with holding(HOLD_SCRATCH, str(tmp_path / "elsewhere"), "x") as (live, _):
        live_one = home / f".warehouse.duckdb.{live.pid}.tmp"  # a pid that is alive is never assumed dead
        live_one.write_bytes(b"\0")
        rebuild_warehouse(home, home / "warehouse.duckdb", ALL_TABLES)
        assert not [p for p in leftovers if p.exists()]
        assert live_one.exists()
    assert (home / "warehouse.duckdb").is_file()
    assert not (home / f".warehouse.duckdb.{os.getpid()}.tmp").exists()
