"""Version lock of a canonical dataset: what exactly a score was computed on.

Per split: SHA-256 of the (normalised) annotation file, a SHA-256 of the sorted image ids, the number
of files, their total bytes and (format v2) a SHA-256 over the per-image SHA-256s; the per-image hashes
themselves sit in the lock's `images` block, so a changed image is named. The dataset version is a short
hash over the split facts, so the same content always gets the same version and changed content can
never reuse an old one.

Locks written before image hashes existed (format v1) are still read and checked on what they record;
`legacy_lock_note` says their image contents are unchecked and how to fix that (re-import).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import canonical_json_sha256, sha256_file
from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE, SPLITS

LOCK_FILE = "lock.json"
LOCK_FORMAT = "bench.dataset-lock.v2"
LEGACY_LOCK_FORMATS = ("bench.dataset-lock.v1",)  # no per-image hashes: read, checked on what they record
VERSION_HEX = 12
_SHOWN = 3


def image_ids_sha256(image_ids: list[Any]) -> str:
    canon = "\n".join(str(i) for i in sorted(image_ids, key=lambda v: (str(type(v)), v)))
    return hashlib.sha256(canon.encode()).hexdigest()


def images_sha256(image_hashes: dict[str, str]) -> str:
    """One SHA-256 over a split's per-image hashes (file name -> SHA-256), independent of their order."""
    return canonical_json_sha256(image_hashes)


def image_hashes(split_dir: Path) -> dict[str, str]:
    """SHA-256 of every file of a split folder but its annotation file, by file name."""
    return {f.name: sha256_file(f) for f in sorted(split_dir.iterdir())
            if f.is_file() and f.name != ANNOTATIONS_FILE}


def split_facts(split_dir: Path, image_ids: list[Any] | None = None,
                hashes: dict[str, str] | None = None) -> dict[str, Any]:
    """Lock facts of one split folder. Pass `image_ids` when the JSON is already parsed and `hashes` (file
    name -> SHA-256) when the images were hashed as they were verified; otherwise every file is read here."""
    ann = split_dir / ANNOTATIONS_FILE
    if image_ids is None:
        image_ids = [i["id"] for i in json.loads(ann.read_bytes())["images"]]
    files = [f for f in split_dir.iterdir() if f.is_file() and f.name != ANNOTATIONS_FILE]
    return {
        "annotations_sha256": sha256_file(ann),
        "image_ids_sha256": image_ids_sha256(image_ids),
        "num_images": len(image_ids),
        "num_files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "images_sha256": images_sha256(image_hashes(split_dir) if hashes is None else hashes),
    }


def version_of(splits: dict[str, dict[str, Any]]) -> str:
    return canonical_json_sha256({s: splits[s] for s in SPLITS})[:VERSION_HEX]


def build_lock(dataset: str, root: Path, source: dict[str, Any], source_version: str | None,
               image_ids: dict[str, list[Any]] | None = None,
               roboflow: dict[str, Any] | None = None,
               hashes: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """The lock of the canonical dataset under `root`. `version` is our content hash; `roboflow` (the Roboflow
    project and integer version the data was exported from, when the source knows it) sits beside it.
    `hashes` (split -> file name -> SHA-256) are the image hashes verification computed as it read each file;
    without them every image under `root` is read and hashed here."""
    images = {s: (hashes or {}).get(s) or image_hashes(root / s) for s in SPLITS}
    splits = {s: split_facts(root / s, (image_ids or {}).get(s), images[s]) for s in SPLITS}
    return {
        "format": LOCK_FORMAT,
        "dataset": dataset,
        "version": version_of(splits),
        "roboflow": roboflow,
        "source": source,
        "source_version": source_version,
        "splits": splits,
        "images": images,
    }


def roboflow_version(lock: dict[str, Any]) -> int | None:
    """The Roboflow version id a stored version was exported from (None: the source did not say)."""
    rf = lock.get("roboflow") or {}
    return rf.get("version_id") if isinstance(rf.get("version_id"), int) else None


def listing_mismatches(split_dir: Path, doc: dict[str, Any] | None = None) -> list[str]:
    """How the image files of a canonical split differ from the images its annotation file lists.

    The canonical form holds exactly the listed images beside `_annotations.coco.json`: a listed image
    that is absent, or a file nobody lists, means the version is not what its lock describes.
    Pass `doc` when the annotation file is already parsed.
    """
    doc = doc if doc is not None else json.loads((split_dir / ANNOTATIONS_FILE).read_bytes())
    listed = {str(i.get("file_name")) for i in doc["images"]}
    present = {f.name for f in split_dir.iterdir() if f.name != ANNOTATIONS_FILE}
    out = []
    if missing := sorted(listed - present):
        out.append(f"{split_dir.name}: {len(missing)} listed image(s) absent from the folder, first: {missing[:3]}")
    if extra := sorted(present - listed):
        out.append(f"{split_dir.name}: {len(extra)} file(s) in the folder that no image lists, first: {extra[:3]}")
    return out


def legacy_lock_note(lock: dict[str, Any]) -> str | None:
    """What a lock written before image hashes cannot check, and the fix (None for a current lock)."""
    if lock.get("format") in LEGACY_LOCK_FORMATS:
        return (f"lock format {lock.get('format')!r} records no image hashes: an image edited to the same size "
                "goes unnoticed; re-import the dataset (bench datasets import) to record them")
    return None


def image_hash_mismatches(split: str, actual: dict[str, str], locked: dict[str, str]) -> list[str]:
    """The images of one split whose content differs from the lock, or that appeared or vanished."""
    out = []
    if changed := sorted(n for n in actual.keys() & locked.keys() if actual[n] != locked[n]):
        out.append(f"{split}: {len(changed)} image(s) changed content since the lock (SHA-256 differs), "
                   f"first: {changed[:_SHOWN]}")
    if gone := sorted(locked.keys() - actual.keys()):
        out.append(f"{split}: {len(gone)} locked image(s) gone, first: {gone[:_SHOWN]}")
    if new := sorted(actual.keys() - locked.keys()):
        out.append(f"{split}: {len(new)} file(s) not in the lock, first: {new[:_SHOWN]}")
    return out


def lock_mismatches(root: Path, lock: dict[str, Any]) -> list[str]:
    """Every way the files under `root` differ from `lock` (empty when they match).

    A current lock has every image's SHA-256: each file is read and hashed again, and a changed image is named.
    A legacy (v1) lock is checked on the facts it records (see `legacy_lock_note`)."""
    out: list[str] = []
    fmt = lock.get("format")
    if fmt != LOCK_FORMAT and fmt not in LEGACY_LOCK_FORMATS:
        return [f"{root / LOCK_FILE}: format {fmt!r}, expected {LOCK_FORMAT!r}"]
    legacy = fmt in LEGACY_LOCK_FORMATS
    locked_images = lock.get("images") or {}
    for split in SPLITS:
        expected = lock["splits"].get(split)
        if expected is None:
            out.append(f"{split}: not in the lock")
            continue
        if not legacy and not isinstance(locked_images.get(split), dict):
            out.append(f"{split}: the lock has no image hashes for this split (lock edited by hand?)")
            continue
        try:
            doc = json.loads((root / split / ANNOTATIONS_FILE).read_bytes())  # parsed once for both
            hashes = None if legacy else image_hashes(root / split)
            actual = split_facts(root / split, [i["id"] for i in doc["images"]], hashes or {})
            out += listing_mismatches(root / split, doc)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            out.append(f"{split}: cannot read ({exc.__class__.__name__}: {exc})")
            continue
        if hashes is not None:
            named = image_hash_mismatches(split, hashes, locked_images[split])
            out += named
            if not named and images_sha256(locked_images[split]) != expected.get("images_sha256"):
                out.append(f"{split}: images_sha256 does not match the lock's image hashes (lock edited by hand?)")
        for key, want in expected.items():
            if key == "images_sha256" and hashes is not None:
                continue  # compared image by image above
            if actual.get(key) != want:
                out.append(f"{split}: {key} is {actual.get(key)!r}, lock says {want!r}")
    if not out and version_of(lock["splits"]) != lock.get("version"):
        out.append(f"version {lock.get('version')!r} does not match the split facts (lock edited by hand?)")
    return out
