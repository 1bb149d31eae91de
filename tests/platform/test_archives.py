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


def _zip(path: Path) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("ds/train/_annotations.coco.json", "{}")
    return path


@pytest.mark.parametrize("name,content,what", [
    ("text.tar", b"definitely not a tar" * 100, "it is plain text"),
    ("random.tar", bytes(range(256)) * 40, "it is unknown binary data"),
    ("empty.tar.gz", b"", "it is an empty file"),
    ("image.tar", (CORPUS / "broken" / "valid_base" / "train" / "img_0000_png.rf.0000c0ffee000000.png").read_bytes(),
     "it is a PNG image"),
    ("gz.tar.gz", __import__("gzip").compress(b"no tar inside" * 100, mtime=0),
     "it is gzip-compressed data that is not a tar"),
], ids=["text", "random", "empty", "image", "gzip"])  # not the bytes: gzip writes the time, a worker's ids differ
def test_a_file_that_is_no_tar_is_named_for_what_it_is(tmp_path: Path, name: str, content: bytes, what: str) -> None:
    bogus = tmp_path / name
    bogus.write_bytes(content)
    with pytest.raises(UnsafeArchiveError) as err:
        safe_extract(bogus, tmp_path)
    message = str(err.value)
    assert f"{bogus}: not a tar archive: {what}; give a tar (.tar, .tar.gz" in message
    assert "ReadError" not in message and "method" not in message  # no exception reprs


def test_a_zip_is_named_a_zip(tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchiveError, match="not a tar archive: it is a zip archive; give a tar"):
        safe_extract(_zip(tmp_path / "dataset.tar"), tmp_path)


def test_a_tar_bomb_is_refused_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_assets.platform import archives

    monkeypatch.setattr(archives, "MAX_MEMBERS", 50)  # the real limit is 50,000: the same code path, faster
    bomb = tmp_path / "bomb.tar"
    with tarfile.open(bomb, "w") as tar:
        for i in range(60):
            info = tarfile.TarInfo(f"ds/junk/{i}")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UnsafeArchiveError, match="more than 50 members; no dataset archive holds that many"):
        safe_extract(bomb, out)
    assert list(out.iterdir()) == []


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
