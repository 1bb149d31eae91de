"""Canonical store: versions are content-addressed, immutable, and failures change nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench_assets.rf100vl.lock import LOCK_FILE, lock_mismatches
from bench_assets.rf100vl.sources import SourceSpec, local_spec
from bench_assets.rf100vl.store import current_version, iter_versions, load_record, materialize_dataset
from bench_assets.rf100vl.verify import DatasetInvalid
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
