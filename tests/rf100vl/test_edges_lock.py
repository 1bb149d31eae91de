"""Edge cases of bench_assets/rf100vl/datasets/lock.py (format v2, per-image SHA-256) that kill mutants the other tests
let survive (issue 15, docs/testing.md "Mutation testing"). Hashes are checked against hashlib on the documented
canonical text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bench_assets.platform.fsutil import canonical_json_sha256
from bench_assets.rf100vl.datasets import lock
from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE, SPLITS


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_image_ids_hash_is_the_sha256_of_the_sorted_ids_one_per_line() -> None:
    assert lock.image_ids_sha256([10, 2, 1]) == _sha("1\n2\n10")  # numeric order, not text order
    assert lock.image_ids_sha256(["b", "a"]) == _sha("a\nb")
    assert lock.image_ids_sha256([]) == _sha("")
    # mixed types sort by type name first ("<class 'int'>" < "<class 'str'>"), then by value
    assert lock.image_ids_sha256(["b", 3, "a", 1]) == _sha("1\n3\na\nb")


def _split(root: Path, name: str, images: list[tuple[int, str, bytes]]) -> Path:
    d = root / name
    d.mkdir(parents=True)
    doc = {"images": [{"id": i, "file_name": f} for i, f, _ in images], "annotations": [], "categories": []}
    (d / ANNOTATIONS_FILE).write_text(json.dumps(doc))
    for _, f, data in images:
        (d / f).write_bytes(data)
    return d


def _dataset(root: Path) -> Path:
    _split(root, "train", [(1, "a.jpg", b"12345"), (2, "b.jpg", b"67")])
    _split(root, "valid", [(5, "c.jpg", b"x")])
    _split(root, "test", [(9, "d.jpg", b"yyyy"), (3, "e.jpg", b"")])
    return root


def test_split_facts_count_the_image_files_but_not_the_annotation_file_or_folders(tmp_path: Path) -> None:
    d = _split(tmp_path, "train", [(2, "a.jpg", b"12345"), (1, "b.jpg", b"67")])
    (d / "sub").mkdir()
    facts = lock.split_facts(d)
    assert facts["annotations_sha256"] == hashlib.sha256((d / ANNOTATIONS_FILE).read_bytes()).hexdigest()
    assert facts["image_ids_sha256"] == _sha("1\n2")
    assert (facts["num_images"], facts["num_files"], facts["bytes"]) == (2, 2, 7)
    # ids passed in are used instead of the file's
    assert lock.split_facts(d, [7])["image_ids_sha256"] == _sha("7") and lock.split_facts(d, [7])["num_images"] == 1


def test_the_lock_of_a_dataset_and_its_version(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    built = lock.build_lock("ds", root, {"kind": "local"}, "v0", roboflow={"version_id": 4})
    assert built["format"] == "bench.dataset-lock.v2" and built["dataset"] == "ds"
    assert built["source"] == {"kind": "local"} and built["source_version"] == "v0"
    assert built["roboflow"] == {"version_id": 4}
    assert list(built["splits"]) == list(SPLITS)
    assert built["splits"]["test"]["image_ids_sha256"] == _sha("3\n9") and built["splits"]["train"]["bytes"] == 7
    assert built["version"] == canonical_json_sha256({s: built["splits"][s] for s in SPLITS})[:12]
    assert lock.version_of(built["splits"]) == built["version"] and len(built["version"]) == 12
    with_ids = lock.build_lock("ds", root, {}, None, image_ids={"valid": [5, 6]})
    assert with_ids["splits"]["valid"]["num_images"] == 2 and with_ids["splits"]["train"]["num_images"] == 2
    assert with_ids["roboflow"] is None
    assert lock.lock_mismatches(root, built) == []


@pytest.mark.parametrize("roboflow, expected", [({"version_id": 3}, 3), ({"version_id": "3"}, None),
                                                ({}, None), (None, None)])
def test_roboflow_version(roboflow: dict | None, expected: int | None) -> None:
    assert lock.roboflow_version({"roboflow": roboflow}) == expected
    assert lock.roboflow_version({}) is None


def test_listing_mismatches_name_absent_and_unlisted_files(tmp_path: Path) -> None:
    d = _split(tmp_path, "valid", [(1, "a.jpg", b"1"), (2, "b.jpg", b"2")])
    assert lock.listing_mismatches(d) == []
    (d / "a.jpg").unlink()
    for n in range(5):
        (d / f"z{n}.jpg").write_bytes(b"")
    assert lock.listing_mismatches(d) == [
        "valid: 1 listed image(s) absent from the folder, first: ['a.jpg']",
        "valid: 5 file(s) in the folder that no image lists, first: ['z0.jpg', 'z1.jpg', 'z2.jpg']"]
    doc = {"images": [{"id": 1, "file_name": n} for n in ("p", "q", "r", "s", "b.jpg")]}
    assert lock.listing_mismatches(d, doc)[0] == "valid: 4 listed image(s) absent from the folder, first: " \
                                                 "['p', 'q', 'r']"


def test_lock_mismatches_of_each_kind(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    good = lock.build_lock("ds", root, {}, None)

    assert lock.lock_mismatches(root, {**good, "format": "v0"}) == [
        f"{root / 'lock.json'}: format 'v0', expected 'bench.dataset-lock.v2'"]

    no_valid = {**good, "splits": {s: f for s, f in good["splits"].items() if s != "valid"}}
    assert lock.lock_mismatches(root, no_valid) == ["valid: not in the lock"]

    assert lock.lock_mismatches(root, {**good, "version": "0" * 12}) == [
        "version '000000000000' does not match the split facts (lock edited by hand?)"]

    (root / "train" / "b.jpg").write_bytes(b"678")
    changed = ["train: 1 image(s) changed content since the lock (SHA-256 differs), first: ['b.jpg']",
               "train: bytes is 8, lock says 7"]
    assert lock.lock_mismatches(root, good) == changed

    (root / "test" / ANNOTATIONS_FILE).write_text("{")
    out = lock.lock_mismatches(root, good)
    assert out[:2] == changed
    assert out[2].startswith("test: cannot read (JSONDecodeError: ") and len(out) == 3


def test_lock_mismatches_list_every_split_and_the_listing(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    good = lock.build_lock("ds", root, {}, None)
    (root / "valid" / "stray.txt").write_bytes(b"s")
    (root / "test" / "e.jpg").unlink()
    out = lock.lock_mismatches(root, good)
    assert out == [
        "valid: 1 file(s) in the folder that no image lists, first: ['stray.txt']",
        "valid: 1 file(s) not in the lock, first: ['stray.txt']",
        "valid: num_files is 2, lock says 1",
        "valid: bytes is 2, lock says 1",
        "test: 1 listed image(s) absent from the folder, first: ['e.jpg']",
        "test: 1 locked image(s) gone, first: ['e.jpg']",
        "test: num_files is 1, lock says 2"]


def test_legacy_lock_note_names_the_format_and_the_fix() -> None:
    assert lock.legacy_lock_note({"format": "bench.dataset-lock.v1"}) == (
        "lock format 'bench.dataset-lock.v1' records no image hashes: an image edited to the same size goes "
        "unnoticed; re-import the dataset (bench datasets import) to record them")
    assert lock.legacy_lock_note({"format": lock.LOCK_FORMAT}) is None
    assert lock.legacy_lock_note({}) is None


def _canon(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def test_images_hash_is_the_canonical_json_of_the_per_image_hashes(tmp_path: Path) -> None:
    d = _split(tmp_path, "train", [(1, "b.jpg", b"67"), (2, "a.jpg", b"12345")])
    per_image = {"a.jpg": _sha("12345"), "b.jpg": _sha("67")}
    assert lock.image_hashes(d) == per_image
    text = '{"a.jpg":"' + _sha("12345") + '","b.jpg":"' + _sha("67") + '"}'
    assert lock.images_sha256(per_image) == _canon(per_image) == _sha(text)
    # without hashes the files are read; given hashes are used as they are (even wrong ones)
    assert lock.split_facts(d)["images_sha256"] == _canon(per_image)
    assert lock.split_facts(d, hashes={"a.jpg": "0"})["images_sha256"] == _canon({"a.jpg": "0"})
    assert lock.split_facts(d, hashes={})["images_sha256"] == _canon({})


def test_build_lock_takes_the_hashes_verification_computed(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    given = {"train": {"a.jpg": "1", "b.jpg": "2"}}
    built = lock.build_lock("ds", root, {}, None, hashes=given)
    assert built["images"]["train"] == given["train"]
    assert built["splits"]["train"]["images_sha256"] == _canon(given["train"])
    # splits it was not given hashes for are read from the files
    assert built["images"]["valid"] == {"c.jpg": _sha("x")}
    assert built["splits"]["valid"]["images_sha256"] == _canon({"c.jpg": _sha("x")})


def test_image_hash_mismatches_of_one_split() -> None:
    actual = {"a": "1", "b": "2", "new1": "3", "new2": "4"}
    locked = {"a": "1", "b": "9", "gone": "5"}
    assert lock.image_hash_mismatches("valid", actual, locked) == [
        "valid: 1 image(s) changed content since the lock (SHA-256 differs), first: ['b']",
        "valid: 1 locked image(s) gone, first: ['gone']",
        "valid: 2 file(s) not in the lock, first: ['new1', 'new2']"]
    many = {f"f{i}": "0" for i in range(5)}
    assert lock.image_hash_mismatches("test", many, {k: "1" for k in many}) == [
        "test: 5 image(s) changed content since the lock (SHA-256 differs), first: ['f0', 'f1', 'f2']"]
    assert lock.image_hash_mismatches("test", {}, many) == ["test: 5 locked image(s) gone, first: ['f0', 'f1', 'f2']"]
    assert lock.image_hash_mismatches("test", many, {}) == [
        "test: 5 file(s) not in the lock, first: ['f0', 'f1', 'f2']"]
    assert lock.image_hash_mismatches("test", many, dict(many)) == []


def test_a_split_left_out_of_the_lock_does_not_stop_the_later_splits(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    good = lock.build_lock("ds", root, {}, None)
    (root / "test" / "d.jpg").write_bytes(b"zzzz")  # same size, new content
    changed = "test: 1 image(s) changed content since the lock (SHA-256 differs), first: ['d.jpg']"
    no_train = {**good, "splits": {s: f for s, f in good["splits"].items() if s != "train"}}
    assert lock.lock_mismatches(root, no_train) == ["train: not in the lock", changed]
    no_hashes = {**good, "images": {s: h for s, h in good["images"].items() if s != "valid"}}
    assert lock.lock_mismatches(root, no_hashes) == [
        "valid: the lock has no image hashes for this split (lock edited by hand?)", changed]
    (root / "valid" / ANNOTATIONS_FILE).write_text("[]")
    out = lock.lock_mismatches(root, good)
    assert out == ["valid: cannot read (TypeError: list indices must be integers or slices, not str)", changed]
