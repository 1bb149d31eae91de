"""A pytest plugin (tests/conftest.py loads it): the suite's temporary files on a RAM-backed tmpfs when the machine
has one with room, not on the disk.

Creating files and folders costs kernel CPU on a disk filesystem: copying the synthetic campaign the rf100vl tests
copy for every test costs about three times the system CPU on these hosts' ext4 /tmp as on /dev/shm
(`benchmarks/tmpfs_copy.py`, quoted in docs/testing.md), and the suite creates such trees in nearly every test
(private copies, Dagster homes, run folders, DuckDB files). Nothing the tests assert depends on the disk:
durability across a power cut is not testable here, and `test_disk_full.py` mounts a small tmpfs of its own.

`TMPDIR` is set, for this process, the xdist workers and every process the tests start, to `ROOT_NAME` under
/dev/shm, and pytest's own temporary folders (`tmp_path`, the shared cache) follow it. Nothing changes when:
- `TMPDIR` is already set (the caller chose where temporary files go);
- `BENCH_TEST_TMPFS=0` (to run the suite on the disk, as a deployment writes);
- /dev/shm is not a tmpfs, is not writable, or has less than `MIN_FREE_GIB` free (a container's default /dev/shm is
  64 MB; Chromium needs /dev/shm too), or the machine has less than `MIN_FREE_GIB` of RAM available (the files are
  RAM).
The run's header says which (`temporary files: ...`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from bench_assets.platform.provenance import meminfo_gib

SHM = Path("/dev/shm")
MIN_FREE_GIB = 8.0  # a whole `make test` peaks well under this (docs/testing.md)
ROOT_NAME = f"bench-tests-{os.getuid()}"
CHOICE_ENV = "BENCH_TEST_TMPDIR_CHOICE"
OCTAL_SPACE = "\\040"  # how /proc/mounts writes a space in a path
_chosen: dict[str, str] = {}


def filesystem_type(path: Path, mounts: str | None = None) -> str | None:
    """The type of the filesystem `path` lies on: the mount in /proc/mounts (or `mounts`, its text) with the longest
    mount point that holds `path`; None where it cannot be read. A space in a mount point is written as octal 040."""
    try:
        text = mounts if mounts is not None else Path("/proc/mounts").read_text()
    except OSError:
        return None
    best, kind = -1, None
    resolved = path.resolve()
    for fields in (line.split() for line in text.splitlines()):
        if len(fields) < 3:
            continue
        point = Path(fields[1].replace(OCTAL_SPACE, " "))
        if resolved.is_relative_to(point) and len(point.parts) > best:
            best, kind = len(point.parts), fields[2]
    return kind


def tmpfs_root(environ: dict[str, str] | os._Environ[str], shm: Path = SHM, min_free_gib: float = MIN_FREE_GIB
               ) -> tuple[Path | None, str]:
    """(the folder to use, why) or (None, why not)."""
    if environ.get("TMPDIR"):
        return None, f"TMPDIR={environ['TMPDIR']} (set by the caller)"
    if environ.get("BENCH_TEST_TMPFS") == "0":
        return None, "on the disk (BENCH_TEST_TMPFS=0)"
    if filesystem_type(shm) != "tmpfs" or not os.access(shm, os.W_OK):
        return None, f"on the disk ({shm} is not a writable tmpfs)"
    st = os.statvfs(shm)
    free_gib = st.f_bavail * st.f_frsize / 2**30
    if free_gib < min_free_gib:
        return None, f"on the disk ({shm} has {free_gib:.1f} GiB free, under {min_free_gib:g})"
    available_gib = meminfo_gib("MemAvailable")
    if available_gib is not None and available_gib < min_free_gib:  # a tmpfs's size is a cap, not RAM set aside
        return None, f"on the disk ({available_gib:.1f} GiB of RAM available, under {min_free_gib:g})"
    root = shm / ROOT_NAME
    root.mkdir(mode=0o700, exist_ok=True)
    if root.is_symlink() or root.stat().st_uid != os.getuid():
        return None, f"on the disk ({root} is not this user's own folder)"
    root.chmod(0o700)  # a folder left by an older run with a looser mode
    return root, f"{root} (tmpfs, {free_gib:.0f} GiB free; BENCH_TEST_TMPFS=0 for the disk)"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # pytest's base temp is resolved lazily (the first tmp_path, or xdist handing each worker its folder), after
    # this; the workers and every child inherit TMPDIR.
    if hasattr(config, "workerinput"):
        return  # an xdist worker: it inherited the controller's TMPDIR
    root, why = tmpfs_root(os.environ)
    _chosen["why"] = why
    os.environ[CHOICE_ENV] = why  # for the workers' header-less view of it (tests/platform/test_suite_tmpfs.py)
    if root is not None:
        os.environ["TMPDIR"] = str(root)
        tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def pytest_report_header(config: pytest.Config) -> str | None:
    return f"temporary files: {_chosen['why']}" if "why" in _chosen else None
