"""Version lock of a canonical dataset: what exactly a score was computed on.

Per split: SHA-256 of the (normalised) annotation file, a SHA-256 of the sorted image ids, the number
of files and their total bytes. The dataset version is a short hash over those facts, so the same
content always gets the same version and changed content can never reuse an old one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import canonical_json_sha256, sha256_file
from bench_assets.rf100vl.verify import ANNOTATIONS_FILE, SPLITS

LOCK_FILE = "lock.json"
LOCK_FORMAT = "bench.dataset-lock.v1"
VERSION_HEX = 12


def image_ids_sha256(image_ids: list[Any]) -> str:
    canon = "\n".join(str(i) for i in sorted(image_ids, key=lambda v: (str(type(v)), v)))
    return hashlib.sha256(canon.encode()).hexdigest()


def split_facts(split_dir: Path, image_ids: list[Any] | None = None) -> dict[str, Any]:
    """Lock facts of one split folder. Pass `image_ids` when the JSON is already parsed."""
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
    }


def version_of(splits: dict[str, dict[str, Any]]) -> str:
    return canonical_json_sha256({s: splits[s] for s in SPLITS})[:VERSION_HEX]


def build_lock(dataset: str, root: Path, source: dict[str, Any], source_version: str | None,
               image_ids: dict[str, list[Any]] | None = None,
               roboflow: dict[str, Any] | None = None) -> dict[str, Any]:
    """The lock of the canonical dataset under `root`. `version` is our content hash; `roboflow` (the Roboflow
    project and integer version the data was exported from, when the source knows it) sits beside it."""
    splits = {s: split_facts(root / s, (image_ids or {}).get(s)) for s in SPLITS}
    return {
        "format": LOCK_FORMAT,
        "dataset": dataset,
        "version": version_of(splits),
        "roboflow": roboflow,
        "source": source,
        "source_version": source_version,
        "splits": splits,
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


def lock_mismatches(root: Path, lock: dict[str, Any]) -> list[str]:
    """Every way the files under `root` differ from `lock` (empty when they match)."""
    out: list[str] = []
    if lock.get("format") != LOCK_FORMAT:
        return [f"{root / LOCK_FILE}: format {lock.get('format')!r}, expected {LOCK_FORMAT!r}"]
    for split in SPLITS:
        expected = lock["splits"].get(split)
        if expected is None:
            out.append(f"{split}: not in the lock")
            continue
        try:
            doc = json.loads((root / split / ANNOTATIONS_FILE).read_bytes())  # parsed once for both
            actual = split_facts(root / split, [i["id"] for i in doc["images"]])
            out += listing_mismatches(root / split, doc)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            out.append(f"{split}: cannot read ({exc.__class__.__name__}: {exc})")
            continue
        for key, want in expected.items():
            if actual.get(key) != want:
                out.append(f"{split}: {key} is {actual.get(key)!r}, lock says {want!r}")
    if not out and version_of(lock["splits"]) != lock.get("version"):
        out.append(f"version {lock.get('version')!r} does not match the split facts (lock edited by hand?)")
    return out
