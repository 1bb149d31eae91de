"""The canonical dataset store: `BENCH_HOME/datasets/<name>/<version>/` plus a `CURRENT` pointer.

A version folder is written under a temporary name and renamed into place whole; once placed it is
never modified. Re-importing identical content lands on the same version (nothing is rewritten);
changed content gets a new version beside the old one.

A placed version becomes `CURRENT` only after the dataset's blocking checks pass on it (the same
predicates `rf100vl/dataset`'s blocking asset checks evaluate: `promotion.blocking_problems`). A version
that fails them stays on disk with `<version>.blocked.json` beside it naming the reasons; `CURRENT`
keeps pointing at the previous good version, and a blocked version is never current.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import (
    DiskSpaceError,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    ensure_free_space,
    free_space,
    human_bytes,
    place_dir,
    staging_dir,
)
from bench_assets.rf100vl.datasets.catalog import catalog_entry
from bench_assets.rf100vl.datasets.lock import LOCK_FILE, build_lock
from bench_assets.rf100vl.datasets.preview import sample_grid
from bench_assets.rf100vl.datasets.promotion import blocking_problems
from bench_assets.rf100vl.datasets.sources import SourceSpec, fetch
from bench_assets.rf100vl.datasets.verify import (
    ANNOTATIONS_FILE,
    FILE_NAME_FIX,
    PROTOCOL_MAX_DET,
    SPLITS,
    DatasetInvalid,
    Problem,
    VerifiedDataset,
    file_name_problem,
    verify_dataset,
)

MANIFEST_FILE = "dataset.json"
ROBOFLOW_READMES = ("README.dataset.txt", "README.roboflow.txt")
PREVIEW_FILE = "preview.jpg"
CURRENT_FILE = "CURRENT"
BLOCKED_SUFFIX = ".blocked.json"


class DatasetBlocked(RuntimeError):
    """A placed version failed a blocking check: it stays on disk, marked blocked, and is not promoted."""

    def __init__(self, name: str, version: str, path: Path, problems: list[str], current: str | None):
        self.problems = problems
        kept = f"CURRENT stays {current}" if current else "the dataset has no current version"
        super().__init__(
            f"dataset {name}: version {version} is BLOCKED and was not made current ({kept}):\n"
            + "\n".join(f"  - {p}" for p in problems)
            + f"\n  it stays on disk at {path} (listed as blocked by `bench datasets list`); campaigns never use it")


@dataclass
class DatasetRecord:
    name: str
    version: str
    path: Path
    manifest: dict[str, Any]
    lock: dict[str, Any]
    created: bool  # False when identical content was already stored


def blocked_path(datasets_dir: Path, name: str, version: str) -> Path:
    return datasets_dir / name / f"{version}{BLOCKED_SUFFIX}"


def blocked_versions(datasets_dir: Path, name: str) -> dict[str, dict[str, Any]]:
    """version -> its blocked record ({"version", "reasons", "blocked_at"}) for every blocked version."""
    folder = datasets_dir / name
    if not folder.is_dir():
        return {}
    return {p.name.removesuffix(BLOCKED_SUFFIX): json.loads(p.read_text())
            for p in sorted(folder.glob(f"*{BLOCKED_SUFFIX}"))}


def current_version(datasets_dir: Path, name: str) -> str | None:
    """The version campaigns use; never a blocked one."""
    p = datasets_dir / name / CURRENT_FILE
    if not p.exists():
        return None
    version = p.read_text().strip()
    return None if blocked_path(datasets_dir, name, version).exists() else version


def why_no_current(datasets_dir: Path, name: str) -> str:
    """A sentence for 'this dataset has no usable version', naming blocked versions and their reasons."""
    blocked = blocked_versions(datasets_dir, name)
    if not blocked:
        return f"dataset {name!r} has no stored version; materialize rf100vl/dataset first"
    newest = max(blocked.values(), key=lambda b: b.get("blocked_at", ""))
    return (f"dataset {name!r} has no usable version: version {newest['version']} is blocked "
            f"({'; '.join(newest['reasons'])}); import a corrected copy")


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


def version_stored(version_dir: Path) -> bool:
    """Whether a version folder holds a placed version: its lock and its manifest both on disk."""
    return (version_dir / LOCK_FILE).is_file() and (version_dir / MANIFEST_FILE).is_file()


def iter_versions(datasets_dir: Path) -> list[tuple[str, str]]:
    """(name, version) of every placed version; temporary folders are skipped."""
    out = []
    if not datasets_dir.exists():
        return out
    for ds in sorted(p for p in datasets_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for v in sorted(p for p in ds.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if version_stored(v):
                out.append((ds.name, v.name))
    return out


def _contained_pair(src_dir: Path, dst_dir: Path, split: str, file_name: str) -> tuple[Path, Path]:
    """(source, destination) of one image, both proven to lie directly in their (resolved) split folders.

    Verification already refused unsafe names; this second gate re-checks right before the copy, so
    nothing can be read from outside the source split or written outside the new version's split: the
    name is a bare file name, the source is not a link, and the destination does not exist yet.
    """
    src, dst = src_dir / file_name, dst_dir / file_name
    if file_name_problem(file_name) is not None or src.is_symlink() or dst.exists():
        raise DatasetInvalid(src_dir.parent, [Problem(split, ANNOTATIONS_FILE, "images[].file_name",
                                                      f"{file_name!r} does not lie directly in the split folder "
                                                      "(or is listed twice)", FILE_NAME_FIX)])
    return src, dst


def _write_canonical(verified: VerifiedDataset, out: Path, move: bool) -> None:
    for split in SPLITS:
        (out / split).mkdir(parents=True)
        src_dir, dst_dir = (verified.root / split).resolve(), (out / split).resolve()
        doc = verified.coco[split]
        for img in doc["images"]:
            src, dst = _contained_pair(src_dir, dst_dir, split, img["file_name"])
            if move:
                os.replace(src, dst)
            else:
                shutil.copyfile(src, dst, follow_symlinks=False)
        atomic_write_bytes(out / split / ANNOTATIONS_FILE, json.dumps(doc, separators=(",", ":")).encode())


def folder_bytes(spec: SourceSpec) -> int | None:
    """Bytes a local folder source will be copied as (a tar checks its own size as it extracts)."""
    if spec.kind != "local" or not spec.path or not Path(spec.path).is_dir():
        return None
    return sum(f.stat().st_size for f in Path(spec.path).rglob("*") if f.is_file() and not f.is_symlink())


def unreferenced_files(verified: VerifiedDataset, examples: int = 5) -> dict[str, Any]:
    """The files of the fetched dataset folder that no split references (neither an annotation file nor an image
    its COCO lists): not stored, so recorded and said ({files, bytes, examples})."""
    keep = {f"{s}/{ANNOTATIONS_FILE}" for s in SPLITS} | set(ROBOFLOW_READMES)  # the export's own (read into the lock)
    keep |= {f"{s}/{img['file_name']}" for s in SPLITS for img in verified.coco[s]["images"]}
    count, size, names = 0, 0, []
    for path in sorted(verified.root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        rel = path.relative_to(verified.root).as_posix()
        if rel in keep:
            continue
        count += 1
        size += path.stat().st_size
        if len(names) < examples:
            names.append(rel)
    return {"files": count, "bytes": size, "examples": names}


def _manifest(name: str, spec: SourceSpec, verified: VerifiedDataset, lock: dict[str, Any],
              dropped_junk: list[str], dropped: dict[str, Any]) -> dict[str, Any]:
    entry = catalog_entry(name)
    return {
        "dataset": name,
        "version": lock["version"],
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": spec.describe(),
        "source_version": lock["source_version"],
        "roboflow": lock["roboflow"],
        "suites": spec.suites,
        "catalog": None if entry is None else {"domain": entry.domain, "num_classes": entry.num_classes,
                                               "num_images": entry.num_images},
        "num_classes": len(verified.categories),
        "dropped_junk": dropped_junk,
        "dropped_unreferenced": dropped,
        **verified.summary(),
    }


def _place(home: Path, name: str, spec: SourceSpec, hf_cache: Path, log: Callable[[str], None],
           deep: bool) -> tuple[str, bool]:
    """Fetch, verify, normalise and place one version (not promoted); return (version, newly created)."""
    datasets_dir = home / "datasets"
    needed: int | None = folder_bytes(spec)
    try:
        if needed is not None:
            ensure_free_space(home, needed)  # a folder is copied once (a tar checks before it extracts)
        with staging_dir(home / "staging", name) as stage:
            log(f"fetching {name} from {spec.describe()['kind']} source")
            fetched = fetch(spec, name, stage, hf_cache)
            log(f"verifying {fetched.root}")
            verified = verify_dataset(fetched.root, deep=deep)
            needed = sum(st.image_bytes for st in verified.stats.values())
            over = {s: st.images_over_max_det for s, st in verified.stats.items() if st.images_over_max_det}
            if over:
                log(f"{name}: WARNING: " + "; ".join(
                    f"{s}: {n} of {verified.stats[s].images} image(s) have more than {PROTOCOL_MAX_DET} boxes (max "
                    f"{verified.stats[s].boxes_per_image_max:,})" for s, n in over.items())
                    + f": the protocol scores {PROTOCOL_MAX_DET} detections per image, so recall on them stays below 1 "
                      "whatever the model")
            dropped = unreferenced_files(verified)
            if dropped["files"] or fetched.dropped_junk:
                log(f"{name}: not stored: {dropped['files']} file(s), {human_bytes(dropped['bytes'])}, that no "
                    f"annotation references (first: {', '.join(dropped['examples'])}); "
                    f"{len(fetched.dropped_junk)} macOS junk file(s)")
            with staging_dir(datasets_dir / name, "version") as out:
                _write_canonical(verified, out, move=fetched.owned)
                lock = build_lock(name, out, spec.describe(), fetched.source_version,
                                  image_ids={s: [i["id"] for i in verified.coco[s]["images"]] for s in SPLITS},
                                  roboflow=fetched.roboflow, hashes=verified.image_sha256)
                manifest = _manifest(name, spec, verified, lock, fetched.dropped_junk, dropped)
                final = datasets_dir / name / lock["version"]
                created = False
                if not final.exists():
                    atomic_write_bytes(out / PREVIEW_FILE, sample_grid(out / "train", verified.coco["train"]))
                    atomic_write_json(out / LOCK_FILE, lock)
                    atomic_write_json(out / MANIFEST_FILE, manifest)
                    created = place_dir(out, final)
    except OSError as exc:
        if exc.errno == errno.ENOSPC and not isinstance(exc, DiskSpaceError):
            raise DiskSpaceError(home, needed, free_space(home)) from None
        raise
    return lock["version"], created


def materialize_dataset(home: Path, name: str, spec: SourceSpec, hf_cache: Path,
                        log: Callable[[str], None] = lambda _: None, deep: bool = False) -> DatasetRecord:
    """Fetch, verify, normalise and place one dataset, promote it when its blocking checks pass; return it.

    On any error nothing under `datasets/<name>/` changes: earlier versions and CURRENT stay as they were
    (no empty `datasets/<name>/` is left behind either). A version failing a blocking check is placed,
    marked blocked and reported with `DatasetBlocked`; CURRENT does not move.
    """
    datasets_dir = home / "datasets"
    folder_existed = (datasets_dir / name).exists()
    try:
        version, created = _place(home, name, spec, hf_cache, log, deep)
    except BaseException:
        if not folder_existed:
            try:
                (datasets_dir / name).rmdir()  # only when empty: a failed first import leaves no folder
            except OSError:
                pass
        raise
    record = load_record(datasets_dir, name, version)
    assert record is not None
    record.created = created
    problems = blocking_problems(record.name, record.path, record.lock, int(record.manifest["num_classes"]))
    if problems:
        atomic_write_json(blocked_path(datasets_dir, name, version), {
            "version": version, "reasons": problems,
            "blocked_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
        raise DatasetBlocked(name, version, record.path, problems, current_version(datasets_dir, name))
    blocked_path(datasets_dir, name, version).unlink(missing_ok=True)  # it passes now (e.g. catalogue fixed)
    atomic_write_text(datasets_dir / name / CURRENT_FILE, version + "\n")
    log(f"{name}: version {record.version} ({'new' if created else 'unchanged, already stored'}), current")
    return record
