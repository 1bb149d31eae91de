"""Extract a dataset tar without trusting it.

Refused (the whole archive, before anything is written): absolute member names, names with `..`,
device files and FIFOs, and links whose target leaves the extraction root. Dropped and counted:
macOS junk (`__MACOSX/`, `._*`, `.DS_Store`). Hard links and symlinks that stay inside the root are
refused too: a detection dataset has no use for them and they complicate every later hash.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bench_assets.platform.fsutil import ensure_free_space


class UnsafeArchiveError(ValueError):
    pass


@dataclass
class ExtractionReport:
    files: int = 0
    dropped_junk: list[str] = field(default_factory=list)


def is_macos_junk(path: PurePosixPath) -> bool:
    return any(p == "__MACOSX" or p == ".DS_Store" or p.startswith("._") for p in path.parts)


def _check_member(archive: Path, member: tarfile.TarInfo) -> None:
    name = PurePosixPath(member.name)
    fix = "rebuild the archive with relative paths inside one top folder"
    if name.is_absolute() or member.name.startswith("/"):
        raise UnsafeArchiveError(f"{archive}: member {member.name!r} has an absolute path; {fix}")
    if ".." in name.parts:
        raise UnsafeArchiveError(f"{archive}: member {member.name!r} contains '..' (path traversal); {fix}")
    if member.issym() or member.islnk():
        raise UnsafeArchiveError(
            f"{archive}: member {member.name!r} is a link to {member.linkname!r}; "
            "links are not allowed in dataset archives, archive the real files instead"
        )
    if not (member.isfile() or member.isdir()):
        raise UnsafeArchiveError(f"{archive}: member {member.name!r} is not a regular file or directory")


def safe_extract(archive: Path, dest: Path) -> ExtractionReport:
    """Extract `archive` (any compression tarfile understands) into the existing directory `dest`."""
    report = ExtractionReport()
    try:
        tar = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise UnsafeArchiveError(f"{archive}: not a readable tar archive ({exc}); re-download or re-pack it") from exc
    with tar:
        members = tar.getmembers()
        keep: list[tarfile.TarInfo] = []
        for m in members:
            _check_member(archive, m)
            if is_macos_junk(PurePosixPath(m.name)):
                if m.isfile():
                    report.dropped_junk.append(m.name)
                continue
            keep.append(m)
        ensure_free_space(dest, sum(m.size for m in keep if m.isfile()))  # refuse before a byte is written
        for m in keep:
            target = dest / m.name
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(m)
            if src is None:
                raise UnsafeArchiveError(f"{archive}: member {m.name!r} could not be read")
            with src, open(target, "wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
            report.files += 1
    return report


def dataset_root(extracted: Path) -> Path:
    """The folder holding train/valid/test: the extraction root or its single top folder."""
    if (extracted / "train").is_dir():
        return extracted
    children = [c for c in extracted.iterdir() if c.is_dir() and not c.name.startswith(".")]
    if len(children) == 1 and (children[0] / "train").is_dir():
        return children[0]
    return extracted
