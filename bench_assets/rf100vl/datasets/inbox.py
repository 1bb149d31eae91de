"""Entries of BENCH_HOME/inbox/: the dataset name an entry imports as, and the marker file that tells the person
who dropped it why it was refused (`<name>.refused.txt`, removed when the entry imports)."""

from __future__ import annotations

from pathlib import Path

from bench_assets.platform.fsutil import atomic_write_text

REFUSED_SUFFIX = ".refused.txt"

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")


def inbox_name(path: Path) -> str:
    for suffix in TAR_SUFFIXES:
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)]
    return path.name


def refusal_marker(entry: Path) -> Path:
    return entry.parent / f"{inbox_name(entry)}{REFUSED_SUFFIX}"


def write_refusal(entry: Path, reason: str) -> bool:
    """Write (or update) the marker beside a refused inbox entry; True when its text changed."""
    marker = refusal_marker(entry)
    text = f"{entry.name} was not imported.\n\n{reason.strip()}\n\nFix it and drop it again (or rename it).\n"
    if marker.exists() and marker.read_text() == text:
        return False
    atomic_write_text(marker, text)
    return True


def clear_refusal(entry: Path) -> None:
    refusal_marker(entry).unlink(missing_ok=True)
