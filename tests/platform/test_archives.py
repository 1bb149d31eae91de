from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from bench_assets.platform.archives import UnsafeArchiveError, dataset_root, safe_extract
from tests.conftest import CORPUS

TARS = CORPUS / "tars"


@pytest.mark.parametrize("tar,phrase", [("dotdot.tar", "'..'"), ("absolute.tar", "absolute path"),
                                         ("symlink.tar", "is a link")])
def test_unsafe_archives_are_refused_before_writing(tar: str, phrase: str, tmp_path: Path) -> None:
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(UnsafeArchiveError) as err:
        safe_extract(TARS / tar, dest)
    assert phrase in str(err.value) and tar in str(err.value)
    assert list(dest.iterdir()) == []  # nothing extracted, not even the safe members
    assert not (tmp_path / "escape.txt").exists()


def test_macos_junk_is_dropped_and_counted(tmp_path: Path) -> None:
    report = safe_extract(TARS / "good_macos.tar", tmp_path)
    assert len(report.dropped_junk) == 3
    names = [p.name for p in tmp_path.rglob("*")]
    assert not any(n == ".DS_Store" or n.startswith("._") or n == "__MACOSX" for n in names)
    assert (dataset_root(tmp_path) / "train" / "_annotations.coco.json").exists()


def test_not_a_tar(tmp_path: Path) -> None:
    bogus = tmp_path / "x.tar"
    bogus.write_bytes(b"definitely not a tar" * 100)
    with pytest.raises(UnsafeArchiveError, match="not a readable tar"):
        safe_extract(bogus, tmp_path)


def test_hardlink_inside_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.tar"
    with tarfile.open(path, "w") as tar:
        data = b"hello"
        info = tarfile.TarInfo("d/a.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("d/b.txt")
        link.type = tarfile.LNKTYPE
        link.linkname = "d/a.txt"
        tar.addfile(link)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UnsafeArchiveError, match="link"):
        safe_extract(path, out)
