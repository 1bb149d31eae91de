"""Canonical store: versions are content-addressed, immutable, and failures change nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench_assets.rf100vl.datasets.lock import LOCK_FILE, lock_mismatches
from bench_assets.rf100vl.datasets.sources import SourceSpec, local_spec
from bench_assets.rf100vl.datasets.store import current_version, iter_versions, load_record, materialize_dataset
from bench_assets.rf100vl.datasets.verify import DatasetInvalid
from tests.conftest import broken


def _import(home: Path, name: str, path: Path):  # noqa: ANN202
    return materialize_dataset(home, name, local_spec(path), home / "cache")


def test_same_content_same_version_changed_content_new_version(tmp_path: Path) -> None:
    home = tmp_path / "home"
    src = broken("valid_base", tmp_path)
    first = _import(home, "ds", src)
    assert first.created and len(first.version) == 12
    again = _import(home, "ds", src)
    assert again.version == first.version and not again.created
    before = {p: p.read_bytes() for p in first.path.rglob("*") if p.is_file()}

    ann = src / "test" / "_annotations.coco.json"
    doc = json.loads(ann.read_text())
    doc["annotations"][0]["bbox"][0] += 1.0
    ann.write_text(json.dumps(doc))
    changed = _import(home, "ds", src)
    assert changed.created and changed.version != first.version
    assert current_version(home / "datasets", "ds") == changed.version
    assert [v for _, v in iter_versions(home / "datasets")] == sorted([first.version, changed.version])
    assert {p: p.read_bytes() for p in first.path.rglob("*") if p.is_file()} == before  # old version untouched


def test_failed_import_leaves_earlier_version_and_current(tmp_path: Path) -> None:
    home = tmp_path / "home"
    good = _import(home, "ds", broken("valid_base", tmp_path))
    with pytest.raises(DatasetInvalid):
        _import(home, "ds", broken("bbox_outside", tmp_path))
    assert current_version(home / "datasets", "ds") == good.version
    assert [n for n, _ in iter_versions(home / "datasets")] == ["ds"]
    assert not any(p.name.startswith(".tmp") for p in (home / "datasets" / "ds").iterdir())
    assert not list((home / "staging").iterdir())
    assert lock_mismatches(good.path, good.lock) == []


def test_lock_detects_tampering(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rec = _import(home, "ds", broken("valid_base", tmp_path))
    assert lock_mismatches(rec.path, rec.lock) == []
    img = next((rec.path / "valid").glob("*.png"))
    img.write_bytes(img.read_bytes() + b"x")
    (rec.path / "train" / "extra.jpg").write_bytes(b"stray")
    problems = lock_mismatches(rec.path, rec.lock)
    assert any(p.startswith("valid: bytes") for p in problems)
    assert any(p.startswith("train: num_files") for p in problems)


def test_lock_detects_annotation_edit(tmp_path: Path) -> None:
    rec = _import(tmp_path / "home", "ds", broken("valid_base", tmp_path))
    ann = rec.path / "test" / "_annotations.coco.json"
    ann.write_text(ann.read_text().replace('"iscrowd":0', '"iscrowd":1', 1))
    assert any("annotations_sha256" in p for p in lock_mismatches(rec.path, rec.lock))


def test_tar_and_directory_imports_agree(tmp_path: Path) -> None:
    from tests.conftest import CORPUS

    home = tmp_path / "home"
    from_dir = _import(home, "a", broken("valid_base", tmp_path))
    from_tar = _import(home, "b", CORPUS / "tars" / "good_macos.tar")
    assert from_dir.lock["splits"] == from_tar.lock["splits"]
    assert len(from_tar.manifest["dropped_junk"]) == 3


def test_record_roundtrip(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rec = _import(home, "ds", broken("valid_base", tmp_path))
    loaded = load_record(home / "datasets", "ds")
    assert loaded is not None and loaded.lock == json.loads((rec.path / LOCK_FILE).read_text())


def test_mini_generated_source(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rec = materialize_dataset(home, "mini-tiny", SourceSpec(kind="mini"), home / "cache")
    assert rec.manifest["num_classes"] == 2 and rec.lock["source"]["kind"] == "mini"
    shutil.rmtree(home / "datasets")
    again = materialize_dataset(home, "mini-tiny", SourceSpec(kind="mini"), home / "cache")
    assert again.version == rec.version  # deterministic generator -> same content version


def _flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))  # same name, same byte count, same declared pixel size


def test_lock_names_an_image_edited_to_the_same_size(tmp_path: Path) -> None:
    rec = _import(tmp_path / "home", "ds", broken("valid_base", tmp_path))
    assert rec.lock["format"] == "bench.dataset-lock.v2"
    img = sorted((rec.path / "test").glob("*.png"))[0]
    size = img.stat().st_size
    _flip_one_byte(img)
    assert img.stat().st_size == size
    problems = lock_mismatches(rec.path, rec.lock)
    assert problems == [f"test: 1 image(s) changed content since the lock (SHA-256 differs), first: ['{img.name}']"]


def test_lock_hashes_come_from_verification_and_equal_a_fresh_hash_of_the_files(tmp_path: Path) -> None:
    from bench_assets.platform.fsutil import sha256_file
    from bench_assets.rf100vl.datasets.lock import build_lock, image_hashes

    rec = _import(tmp_path / "home", "ds", broken("valid_base", tmp_path))
    for split, hashes in rec.lock["images"].items():
        files = sorted(f for f in (rec.path / split).iterdir() if f.name != "_annotations.coco.json")
        assert hashes == {f.name: sha256_file(f) for f in files} == image_hashes(rec.path / split)
    recomputed = build_lock("ds", rec.path, rec.lock["source"], rec.lock["source_version"],
                            roboflow=rec.lock["roboflow"])  # no hashes given: every file read here
    assert recomputed == rec.lock


def test_lock_with_hand_edited_image_hashes_is_refused(tmp_path: Path) -> None:
    rec = _import(tmp_path / "home", "ds", broken("valid_base", tmp_path))
    forged = json.loads(json.dumps(rec.lock))
    name = next(iter(forged["images"]["valid"]))
    forged["images"]["valid"][name] = "0" * 64
    assert lock_mismatches(rec.path, forged) == [
        f"valid: 1 image(s) changed content since the lock (SHA-256 differs), first: ['{name}']"]
    forged["images"]["valid"] = dict(rec.lock["images"]["valid"])
    forged["splits"]["valid"]["images_sha256"] = "0" * 64  # aggregate no longer the hash of the per-image ones
    assert lock_mismatches(rec.path, forged) == [
        "valid: images_sha256 does not match the lock's image hashes (lock edited by hand?)"]
    del forged["images"]["train"]
    assert "train: the lock has no image hashes for this split (lock edited by hand?)" in lock_mismatches(
        rec.path, forged)


def test_legacy_lock_without_image_hashes_is_checked_on_what_it_records(tmp_path: Path) -> None:
    from bench_assets.rf100vl.datasets.lock import legacy_lock_note, version_of

    rec = _import(tmp_path / "home", "ds", broken("valid_base", tmp_path))
    assert legacy_lock_note(rec.lock) is None
    legacy = json.loads(json.dumps(rec.lock))
    legacy["format"] = "bench.dataset-lock.v1"
    del legacy["images"]
    for facts in legacy["splits"].values():
        del facts["images_sha256"]
    legacy["version"] = version_of(legacy["splits"])
    assert lock_mismatches(rec.path, legacy) == []
    assert "re-import" in legacy_lock_note(legacy)
    _flip_one_byte(sorted((rec.path / "test").glob("*.png"))[0])
    assert lock_mismatches(rec.path, legacy) == []  # what v1 cannot see, and why the note exists
    (rec.path / "test" / "_annotations.coco.json").write_text("{}")
    assert any(p.startswith("test: cannot read") for p in lock_mismatches(rec.path, legacy))
    legacy["format"] = "bench.dataset-lock.v0"
    assert lock_mismatches(rec.path, legacy)[0].endswith("expected 'bench.dataset-lock.v2'")
