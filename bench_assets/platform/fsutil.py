"""Durable file writes: every artifact lands under its final name whole or not at all.

A kill at any moment leaves either the old file or the new one, never a truncated mix, because
we write to a temporary name in the same directory, fsync it, rename it over the target and fsync
the directory so the rename itself survives a power cut.

Scratch folders carry their owner's pid (`.tmp-<prefix>-<pid>-<random>`), so the next writer of the
same kind can tell a killed process's leftovers from a live one's work in progress and sweep them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class DiskSpaceError(OSError):
    """Not enough free space for a write; names the path, the space needed and the space free."""

    def __init__(self, path: Path, needed: int | None, free: int):
        need = f"about {needed / 1e6:,.1f} MB" if needed else "more than is free"
        super().__init__(28, f"not enough disk space under {path}: this needs {need}, {free / 1e6:,.1f} MB free; "
                             "free space there or point BENCH_HOME at a larger disk")  # 28: ENOSPC

    def __str__(self) -> str:
        return str(self.strerror)  # the sentence, without OSError's "[Errno 28]" prefix


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def free_space(path: Path) -> int:
    """Free bytes on the file system holding `path` (or its nearest existing parent)."""
    probe = Path(path)
    while not probe.exists():
        probe = probe.parent
    return shutil.disk_usage(probe).free


def ensure_free_space(path: Path, needed: int, margin: int = 16 << 20) -> None:
    """Refuse, before writing anything, a write of `needed` bytes under `path` that cannot fit."""
    free = free_space(path)
    if free < needed + margin:
        raise DiskSpaceError(path, needed + margin, free)


def canonical_json_sha256(obj: Any) -> str:
    """SHA-256 of `obj` as canonical JSON (sorted keys, no spaces, ASCII): the one identity hash of a structure
    (run signatures, score fingerprints, dataset versions, submission identities)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sha256_file(path: Path) -> str:
    """The SHA-256 hex digest of a file's bytes, read in chunks (the one implementation in the platform)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any, *, indent: int | None = 2) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent, sort_keys=True, default=str) + "\n")


LEGACY_SCRATCH_MAX_AGE_S = 3600.0  # a scratch folder named before pids were recorded: orphaned after an hour
SCRATCH_RANDOM = r"[a-z0-9_]{8}"  # the tail tempfile.mkdtemp/mkstemp add
# This process's scratch folders that are still in use: its own pid is alive, yet a folder with that pid may
# be a leftover of an earlier process that had the same pid (a container restarted with the same pid).
_LIVE_SCRATCH: set[tuple[int, int]] = set()  # (st_dev, st_ino): the same folder whatever path names it
_LIVE_LOCK = threading.RLock()


def host_id() -> str:
    """This box's name where a pid is recorded beside it (`BENCH_HOST_ID`, else the host name, reduced to
    letters, digits, `-` and `_`): a pid means something on its own box only."""
    import socket

    raw = os.environ.get("BENCH_HOST_ID") or socket.gethostname() or "localhost"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw)[:63]


HOST_RE = r"[A-Za-z0-9_-]{1,63}"  # what `host_id()` gives
OWNER_RE = rf"(\d+)(?:@({HOST_RE}))?"  # `<pid>@<host>` in a temp name; a bare pid in names from before hosts


def owner_tag() -> str:
    """`<pid>@<host>`: who writes a temp file or folder, as its name records it (a pid is judged on its host)."""
    return f"{os.getpid()}@{host_id()}"


def owner_gone(pid: int, host: str | None) -> bool:
    """Whether the writer `pid` on `host` is known to be gone: only a process of this box can be judged (a name
    without a host is from before hosts were recorded: this box's). Another box's writer is never judged dead."""
    if host is not None and host != host_id():
        return False
    return not pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a running process on this host (a zombie, killed but not yet reaped, is not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (not Linux) or it just exited: the kill probe said alive
    return not exited(proc_stat_fields(stat)[0])


def default_signals() -> None:
    """Popen's `preexec_fn` for a server or other long-lived child: SIGINT and SIGTERM back to their default action
    before it execs. An ignored signal stays ignored across exec, and a script's background job (`bench cluster up &`,
    `nohup ... &`) starts with SIGINT ignored. A Dagster server then ignores SIGTERM too: as it starts it gives SIGTERM
    SIGINT's disposition (`setup_interrupt_handlers` in dagster/_utils/interrupts.py, its Kubernetes mapping), so the
    code server outlived every SIGTERM and `bench cluster down` killed it only after its 20 s timeout."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def exited(state: str) -> bool:
    """Whether a /proc/<pid>/stat state letter is that of a process that has exited: Z (a zombie, not yet reaped)
    or X (dead)."""
    return state in ("Z", "X")


def proc_stat_fields(stat: str) -> list[str]:
    """The fields of a /proc/<pid>/stat line after the command name: state, ppid, pgrp, ... (the name, in
    parentheses, may itself hold spaces and parentheses, so the line is split after its last one)."""
    return stat.rsplit(")", 1)[1].split()


def path_age_s(path: Path) -> float:
    """Seconds since `path` or anything below it was last modified (the newest mtime in the tree)."""
    newest = 0.0
    stack = [path]
    while stack:
        p = stack.pop()
        try:
            st = p.lstat()
        except OSError:
            continue
        newest = max(newest, st.st_mtime)
        if p.is_dir() and not p.is_symlink():
            try:
                stack.extend(p.iterdir())
            except OSError:
                pass
    return time.time() - newest


def remove_path(path: Path) -> None:
    """Remove a file, link or folder tree; a concurrent remover getting there first is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def scratch_owner(name: str, prefix: str | None = None) -> tuple[int, str | None] | None:
    """(pid, host) of the owner a scratch folder's name records (host None in names from before hosts were
    recorded), None for a legacy name without a pid (or not a scratch name).

    With `prefix`, the name must be that kind's; without, the prefix is whatever comes before
    `-<pid>@<host>-<random>`.
    """
    head = re.escape(f".tmp-{prefix}-") if prefix is not None else r"\.tmp-.+?-"
    m = re.fullmatch(rf"{head}{OWNER_RE}-{SCRATCH_RANDOM}", name)
    return (int(m.group(1)), m.group(2)) if m else None


def scratch_pid(name: str, prefix: str | None = None) -> int | None:
    """The owner pid recorded in a scratch folder's name (`scratch_owner` without the host)."""
    owner = scratch_owner(name, prefix)
    return owner[0] if owner else None


def is_scratch_name(name: str, prefix: str | None = None) -> bool:
    head = re.escape(f".tmp-{prefix}-") if prefix is not None else r"\.tmp-.+-"
    return re.fullmatch(rf"{head}({OWNER_RE}-)?{SCRATCH_RANDOM}", name) is not None


def scratch_orphaned(path: Path, prefix: str | None = None) -> bool:
    """Whether the scratch folder `path` belongs to no live writer: its owner pid is gone (or is this process,
    which is not using it), or, for a legacy name without a pid, nothing in it changed for an hour."""
    if not is_scratch_name(path.name, prefix):
        return False
    owner = scratch_owner(path.name, prefix)
    if owner is None:
        return path_age_s(path) > LEGACY_SCRATCH_MAX_AGE_S
    pid, host = owner
    if pid == os.getpid() and host in (None, host_id()):
        with _LIVE_LOCK:
            return _identity(path) not in _LIVE_SCRATCH
    return owner_gone(pid, host)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def sweep_orphans(parent: Path, prefix: str) -> list[Path]:
    """Remove `parent/.tmp-<prefix>-*` scratch left by writers that were killed; return what was removed.

    A live process's scratch is never touched, so concurrent writers of the same kind are safe.
    """
    removed = []
    try:
        entries = sorted(parent.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    with _LIVE_LOCK:
        for p in entries:
            if scratch_orphaned(p, prefix):
                remove_path(p)
                removed.append(p)
    return removed


@contextmanager
def staging_dir(parent: Path, prefix: str) -> Iterator[Path]:
    """A scratch directory next to its final home (same filesystem, so a rename can place it).

    Removed on exit unless the caller renamed it away. Leftovers of killed writers of the same kind in
    `parent` are swept first, so a kill -9 costs disk only until the next writer starts.
    """
    parent.mkdir(parents=True, exist_ok=True)
    with _LIVE_LOCK:  # another thread must not sweep this folder between its creation and its registration
        sweep_orphans(parent, prefix)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{prefix}-{owner_tag()}-", dir=parent))
        st = tmp.stat()
        identity = (st.st_dev, st.st_ino)
        _LIVE_SCRATCH.add(identity)
    try:
        yield tmp
    finally:
        with _LIVE_LOCK:
            _LIVE_SCRATCH.discard(identity)
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def place_dir(tmp: Path, final: Path) -> bool:
    """Rename a fully written directory to its final name.

    Returns False (and leaves `final` untouched) when `final` already exists: placed artifacts
    are immutable, so an existing one is never overwritten.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    files = [f for f in tmp.rglob("*") if f.is_file() and not f.is_symlink()]
    # fsync releases the GIL: overlapping thousands of them takes a fraction of doing them in turn.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(_fsync_file, files))
    for d in sorted({f.parent for f in files}):
        fsync_dir(d)
    try:
        os.rename(tmp, final)
    except OSError:
        if final.exists():
            return False
        raise
    fsync_dir(final.parent)
    return True
