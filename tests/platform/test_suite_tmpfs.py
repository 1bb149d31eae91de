"""Where the suite's temporary files go (tests/suite_tmpfs.py): /dev/shm when it is a writable tmpfs with room and the
caller chose nothing, the disk otherwise, and the run itself on the folder the plugin chose."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from bench_assets.platform.provenance import meminfo_gib
from tests import suite_tmpfs
from tests.suite_tmpfs import tmpfs_root

needs_shm = pytest.mark.skipif(suite_tmpfs.filesystem_type(Path("/dev/shm")) != "tmpfs",
                               reason="/dev/shm is not a tmpfs here")
# Lines as Linux writes /proc/mounts (from the hosts here, plus a mount point with a space, written as octal 040).
MOUNTS = """/dev/vda / ext4 rw,relatime,discard 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
/dev/vdb /dev/shm/disk\\040here ext4 rw,relatime 0 0
"""


def test_a_tmpdir_the_caller_set_is_kept() -> None:
    root, why = tmpfs_root({"TMPDIR": "/var/tmp"})
    assert root is None and why == "TMPDIR=/var/tmp (set by the caller)"


def test_the_switch_keeps_the_disk() -> None:
    root, why = tmpfs_root({"BENCH_TEST_TMPFS": "0"})
    assert root is None and "BENCH_TEST_TMPFS=0" in why


def test_the_filesystem_is_the_longest_mount_point_holding_the_path() -> None:
    assert suite_tmpfs.filesystem_type(Path("/dev/shm"), MOUNTS) == "tmpfs"
    assert suite_tmpfs.filesystem_type(Path("/dev/shm/a/b"), MOUNTS) == "tmpfs"  # a folder inside, not a mount point
    assert suite_tmpfs.filesystem_type(Path("/dev/shm/disk here/x"), MOUNTS) == "ext4"
    assert suite_tmpfs.filesystem_type(Path("/dev/shmx"), MOUNTS) == "ext4"  # a name that only starts alike
    assert suite_tmpfs.filesystem_type(Path("/proc/1"), MOUNTS) == "proc"
    assert suite_tmpfs.filesystem_type(Path("/x"), "garbage\n\n") is None


def test_a_folder_that_is_not_a_tmpfs_is_not_used() -> None:
    disk = Path(__file__).resolve().parent
    if suite_tmpfs.filesystem_type(disk) == "tmpfs":
        pytest.skip(f"{disk} is on a tmpfs here")
    root, why = tmpfs_root({}, shm=disk)
    assert root is None and why == f"on the disk ({disk} is not a writable tmpfs)"


@needs_shm
def test_too_little_room_keeps_the_disk() -> None:
    root, why = tmpfs_root({}, min_free_gib=1e9)
    assert root is None and "GiB free, under 1e+09" in why


def test_this_run_writes_where_the_plugin_chose(tmp_path: Path) -> None:
    choice = os.environ[suite_tmpfs.CHOICE_ENV]  # a KeyError: the plugin did not run
    root = suite_tmpfs.SHM / suite_tmpfs.ROOT_NAME
    if not choice.startswith(f"{root} "):
        pytest.skip(f"this run's temporary files: {choice}")
    assert os.environ["TMPDIR"] == str(root) == tempfile.gettempdir()
    assert tmp_path.is_relative_to(root) and (root.stat().st_mode & 0o777) == 0o700


def test_ram_is_read_from_meminfo() -> None:
    meminfo = "MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   16777216 kB\n"
    assert meminfo_gib("MemAvailable", meminfo) == 16.0 and meminfo_gib("MemTotal", meminfo) == 24576000 / 2**20
    assert meminfo_gib("MemAvailable", "MemTotal:       24576000 kB\n") is None
    assert meminfo_gib("Mem", meminfo) is None  # a whole field name, not a prefix
    assert meminfo_gib("MemAvailable", "MemAvailable: lots\n") is None
