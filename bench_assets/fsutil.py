"""Durable file writes: every artifact lands under its final name whole or not at all.

A kill at any moment leaves either the old file or the new one, never a truncated mix, because
we write to a temporary name in the same directory, fsync it, rename it over the target and fsync
the directory so the rename itself survives a power cut.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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


@contextmanager
def staging_dir(parent: Path, prefix: str) -> Iterator[Path]:
    """A scratch directory next to its final home (same filesystem, so a rename can place it).

    Removed on exit unless the caller renamed it away.
    """
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{prefix}-", dir=parent))
    try:
        yield tmp
    finally:
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
