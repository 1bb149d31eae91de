"""A pid means something on its own box only: temp names record `<pid>@<host>`, and a box judges (sweeps, reports
as orphaned) only its own writers' leftovers on a home it shares with other boxes. Names from before hosts were
recorded (a bare pid) are this box's, as they always were."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench_assets.platform.doctor import _temp_reason
from bench_assets.platform.fsutil import (
    host_id,
    owner_tag,
    scratch_orphaned,
    scratch_owner,
    staging_dir,
    sweep_orphans,
)
from bench_assets.platform.warehouse import loader_temp_files, orphaned_loader_temps


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """A pid that was a process of this box and is gone."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_host_id_is_a_safe_name_and_the_environment_can_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_HOST_ID", "gpu box.2/a")
    assert host_id() == "gpu-box-2-a" and owner_tag() == f"{os.getpid()}@gpu-box-2-a"
    monkeypatch.delenv("BENCH_HOST_ID")
    assert host_id() and all(c.isalnum() or c in "-_" for c in host_id())


def test_a_scratch_folder_names_its_owner_and_only_this_boxs_dead_owners_are_swept(tmp_path: Path,
                                                                                    dead_pid: int) -> None:
    with staging_dir(tmp_path, "dataset") as live:
        assert scratch_owner(live.name, "dataset") == (os.getpid(), host_id())
        assert not scratch_orphaned(live, "dataset")
    mine = tmp_path / f".tmp-dataset-{dead_pid}@{host_id()}-abcd1234"
    legacy = tmp_path / f".tmp-dataset-{dead_pid}-efgh5678"  # a bare pid: from before hosts were recorded
    other = tmp_path / f".tmp-dataset-{dead_pid}@far-box-2-ijkl9012"  # that pid is far-box-2's, maybe alive there
    for p in (mine, legacy, other):
        p.mkdir()
    assert scratch_owner(other.name) == (dead_pid, "far-box-2")
    assert [p.name for p in sweep_orphans(tmp_path, "dataset")] == sorted([mine.name, legacy.name])
    assert other.exists() and not scratch_orphaned(other, "dataset")


def test_warehouse_loader_scratch_of_another_box_is_left_alone(tmp_path: Path, dead_pid: int) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    mine = tmp_path / f".warehouse.duckdb.{dead_pid}@{host_id()}.tmp"
    other = tmp_path / f".warehouse.duckdb.{dead_pid}@far-box.tmp.wal"
    legacy = tmp_path / f".warehouse.duckdb.{dead_pid}.tmp"
    for p in (mine, other, legacy):
        p.write_bytes(b"x")
    assert {(p.name, host) for p, _, host in loader_temp_files(warehouse)} == {
        (mine.name, host_id()), (other.name, "far-box"), (legacy.name, None)}
    assert sorted(orphaned_loader_temps(warehouse)) == sorted([mine, legacy])


def test_doctor_reports_this_boxs_dead_writers_temps_and_not_another_boxs(tmp_path: Path, dead_pid: int) -> None:
    run = tmp_path / "runs" / "m" / "d" / "sig" / "weights"
    run.mkdir(parents=True)
    mine = run / f".last.pt.{dead_pid}@{host_id()}.tmp"
    other = run / f".last.pt.{dead_pid}@far-box.tmp"
    live = run / f".best.pt.{owner_tag()}.tmp"
    for p in (mine, other, live):
        p.write_bytes(b"x")
        os.utime(p, (1, 1))  # untouched for ages: age alone must not make another box's temp an orphan
    reason = _temp_reason(tmp_path, mine, False)
    assert reason is not None and "untouched" in reason[0]
    assert _temp_reason(tmp_path, other, False) is None
    assert _temp_reason(tmp_path, live, False) is None
    wh = tmp_path / f".warehouse.duckdb.{dead_pid}@far-box.tmp"
    wh.write_bytes(b"x")
    assert _temp_reason(tmp_path, wh, False) is None
