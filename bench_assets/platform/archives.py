"""Extract a dataset tar without trusting it.

Refused (the whole archive, before anything is written): a file that is no tar (named for what it is: a zip, an
image, ...), more than MAX_MEMBERS members, absolute member names, names with `..`, device files and FIFOs, and
links whose target leaves the extraction root. Dropped and counted:
macOS junk (`__MACOSX/`, `._*`, `.DS_Store`). Hard links and symlinks that stay inside the root are
refused too: a detection dataset has no use for them and they complicate every later hash.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bench_assets.platform.fsutil import ensure_free_space

# More members than this is no dataset archive: RF100-VL's largest dataset has 11,809 images (4x that, plus room).
MAX_MEMBERS = 50_000
# What a file that is not a tar is, by its first bytes (a tar itself has no magic at offset 0).
MAGIC = ((b"PK\x03\x04", "a zip archive"), (b"PK\x05\x06", "an empty zip archive"), (b"7z\xbc\xaf", "a 7-Zip archive"),
         (b"Rar!", "a RAR archive"), (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
         (b"%PDF", "a PDF document"))
GIVE_INSTEAD = ("give a tar (.tar, .tar.gz, .tar.bz2 or .tar.xz) of the dataset folder (train/, valid/, test/), or the "
                "extracted folder itself")


class UnsafeArchiveError(ValueError):
    pass


def what_file_is(path: Path) -> str:
    """What a file is by its first bytes, in words ("a zip archive", "JSON text", "empty", "unknown binary data")."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not head:
        return "an empty file"
    for magic, name in MAGIC:
        if head.startswith(magic):
            return name
    if head[:2] == b"\x1f\x8b":
        return "gzip-compressed data that is not a tar"
    if head.lstrip()[:1] in (b"{", b"["):
        return "JSON text"
    try:
        head.decode("utf-8")
        return "plain text"
    except UnicodeDecodeError:
        return "unknown binary data"


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


def _members(archive: Path, tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The archive's members, refused past MAX_MEMBERS (counted from the headers, before anything is written)."""
    members: list[tarfile.TarInfo] = []
    try:
        for m in tar:
            members.append(m)
            if len(members) > MAX_MEMBERS:
                raise UnsafeArchiveError(
                    f"{archive}: more than {MAX_MEMBERS:,} members; no dataset archive holds that many (RF100-VL's "
                    "largest dataset has 11,809 images): nothing was extracted; pack only the dataset folder")
    except tarfile.TarError as exc:
        raise UnsafeArchiveError(f"{archive}: the tar is damaged after {len(members)} member(s) ({exc}); "
                                 "re-download or re-pack it") from None
    return members


def safe_extract(archive: Path, dest: Path) -> ExtractionReport:
    """Extract `archive` (any compression tarfile understands) into the existing directory `dest`."""
    report = ExtractionReport()
    try:
        tar = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError):
        raise UnsafeArchiveError(f"{archive}: not a tar archive: it is {what_file_is(archive)}; {GIVE_INSTEAD}"
                                 ) from None
    with tar:
        members = _members(archive, tar)
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
