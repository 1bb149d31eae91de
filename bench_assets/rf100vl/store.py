"""The canonical dataset store: `BENCH_HOME/datasets/<name>/<version>/` plus a `CURRENT` pointer.

A version folder is written under a temporary name and renamed into place whole; once placed it is
never modified. Re-importing identical content lands on the same version (nothing is rewritten);
changed content gets a new version beside the old one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_assets.fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text, place_dir, staging_dir
from bench_assets.rf100vl.catalog import catalog_entry
from bench_assets.rf100vl.lock import LOCK_FILE, build_lock
from bench_assets.rf100vl.preview import sample_grid
from bench_assets.rf100vl.sources import SourceSpec, fetch
from bench_assets.rf100vl.verify import ANNOTATIONS_FILE, SPLITS, VerifiedDataset, verify_dataset

MANIFEST_FILE = "dataset.json"
PREVIEW_FILE = "preview.jpg"
CURRENT_FILE = "CURRENT"


@dataclass
class DatasetRecord:
    name: str
    version: str
    path: Path
    manifest: dict[str, Any]
    lock: dict[str, Any]
    created: bool  # False when identical content was already stored


def current_version(datasets_dir: Path, name: str) -> str | None:
    p = datasets_dir / name / CURRENT_FILE
    return p.read_text().strip() if p.exists() else None


def load_record(datasets_dir: Path, name: str, version: str | None = None) -> DatasetRecord | None:
    version = version or current_version(datasets_dir, name)
    if version is None:
        return None
    path = datasets_dir / name / version
    return DatasetRecord(
        name=name, version=version, path=path,
        manifest=json.loads((path / MANIFEST_FILE).read_text()),
        lock=json.loads((path / LOCK_FILE).read_text()),
        created=False,
    )


def iter_versions(datasets_dir: Path) -> list[tuple[str, str]]:
    """(name, version) of every placed version; temporary folders are skipped."""
    out = []
    if not datasets_dir.exists():
        return out
    for ds in sorted(p for p in datasets_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for v in sorted(p for p in ds.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if (v / LOCK_FILE).exists() and (v / MANIFEST_FILE).exists():
                out.append((ds.name, v.name))
    return out


def _write_canonical(verified: VerifiedDataset, out: Path, move: bool) -> None:
    for split in SPLITS:
        (out / split).mkdir(parents=True)
        doc = verified.coco[split]
        for img in doc["images"]:
            src = verified.root / split / img["file_name"]
            dst = out / split / img["file_name"]
            if move:
                os.replace(src, dst)
            else:
                shutil.copyfile(src, dst)
        atomic_write_bytes(out / split / ANNOTATIONS_FILE, json.dumps(doc, separators=(",", ":")).encode())


def _manifest(name: str, spec: SourceSpec, verified: VerifiedDataset, lock: dict[str, Any],
              dropped_junk: list[str]) -> dict[str, Any]:
    entry = catalog_entry(name)
    return {
        "dataset": name,
        "version": lock["version"],
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": spec.describe(),
        "source_version": lock["source_version"],
        "suites": spec.suites,
        "catalog": None if entry is None else {"domain": entry.domain, "num_classes": entry.num_classes,
                                               "num_images": entry.num_images},
        "num_classes": len(verified.categories),
        "dropped_junk": dropped_junk,
        **verified.summary(),
    }


def materialize_dataset(home: Path, name: str, spec: SourceSpec, hf_cache: Path,
                        log: Callable[[str], None] = lambda _: None, deep: bool = False) -> DatasetRecord:
    """Fetch, verify, normalise and place one dataset; return what was stored.

    On any error nothing under `datasets/<name>/` changes: earlier versions and CURRENT stay as they were.
    """
    datasets_dir = home / "datasets"
    with staging_dir(home / "staging", name) as stage:
        log(f"fetching {name} from {spec.describe()['kind']} source")
        fetched = fetch(spec, name, stage, hf_cache)
        log(f"verifying {fetched.root}")
        verified = verify_dataset(fetched.root, deep=deep)
        with staging_dir(datasets_dir / name, "version") as out:
            _write_canonical(verified, out, move=fetched.owned)
            lock = build_lock(name, out, spec.describe(), fetched.source_version,
                              image_ids={s: [i["id"] for i in verified.coco[s]["images"]] for s in SPLITS})
            manifest = _manifest(name, spec, verified, lock, fetched.dropped_junk)
            final = datasets_dir / name / lock["version"]
            created = False
            if not final.exists():
                atomic_write_bytes(out / PREVIEW_FILE, sample_grid(out / "train", verified.coco["train"]))
                atomic_write_json(out / LOCK_FILE, lock)
                atomic_write_json(out / MANIFEST_FILE, manifest)
                created = place_dir(out, final)
    atomic_write_text(datasets_dir / name / CURRENT_FILE, lock["version"] + "\n")
    record = load_record(datasets_dir, name, lock["version"])
    assert record is not None
    record.created = created
    log(f"{name}: version {record.version} ({'new' if created else 'unchanged, already stored'})")
    return record
