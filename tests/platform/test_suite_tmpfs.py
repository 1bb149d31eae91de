"""Where the suite's temporary files go (tests/suite_tmpfs.py): /dev/shm when it is a writable tmpfs with room and the
caller chose nothing, the disk otherwise, and the run itself on the folder the plugin chose."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests import suite_tmpfs
from tests.suite_tmpfs import tmpfs_root

needs_shm = pytest.mark.skipif(not suite_tmpfs._is_tmpfs(Path("/dev/shm")), reason="/dev/shm is not a tmpfs here")


def test_a_tmpdir_the_caller_set_is_kept() -> None:
    root, why = tmpfs_root({"TMPDIR": "/var/tmp"})
    assert root is None and why == "TMPDIR=/var/tmp (set by the caller)"


def test_the_switch_keeps_the_disk() -> None:
    root, why = tmpfs_root({"BENCH_TEST_TMPFS": "0"})
    assert root is None and "BENCH_TEST_TMPFS=0" in why


def test_a_folder_that_is_not_a_tmpfs_is_not_used(tmp_path: Path) -> None:
    root, why = tmpfs_root({}, shm=tmp_path)
    assert root is None and why == f"on the disk ({tmp_path} is not a writable tmpfs)"


@needs_shm
def test_too_little_room_keeps_the_disk() -> None:
    root, why = tmpfs_root({}, min_free_gib=1e9)
    assert root is None and "GiB free, under 1e+09" in why


def test_this_run_writes_where_the_plugin_chose(tmp_path: Path) -> None:
    choice = os.environ[suite_tmpfs.CHOICE_ENV]  # a KeyError: the plugin did not run
    if not choice.startswith("/"):
        pytest.skip(f"this run's temporary files: {choice}")
    root = Path(choice.split(" ")[0])
    assert os.environ["TMPDIR"] == str(root) == tempfile.gettempdir()
    assert tmp_path.is_relative_to(root) and (root.stat().st_mode & 0o777) == 0o700


def test_ram_available_is_read_from_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   16777216 kB\n")
    assert suite_tmpfs.mem_available_gib(meminfo) == 16.0
    meminfo.write_text("MemTotal:       24576000 kB\n")
    assert suite_tmpfs.mem_available_gib(meminfo) is None
    assert suite_tmpfs.mem_available_gib(tmp_path / "absent") is None
