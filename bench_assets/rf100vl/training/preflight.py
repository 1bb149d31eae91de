"""Preflight facts a campaign needs before it spends GPU hours (pure functions, no Dagster)."""

from __future__ import annotations

import ast
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# Measured size of LibreYOLO's resized-image disk cache per image (REFERENCE.md section 2).
CACHE_BYTES_PER_IMAGE = {640: 953_000, 416: 660_000}
DEFAULT_CACHE_IMGSZ = 640

# Every TrainConfig field the platform passes to LibreYOLO's train(); a missing one would be
# silently ignored or rejected only after the GPU queue had started.
PLATFORM_TRAIN_FIELDS = (
    "data", "epochs", "imgsz", "batch", "device", "workers", "seed", "eval_interval", "patience",
    "ema", "amp", "amp_dtype", "cuda_graph", "cache", "max_det", "eval_max_det", "faster_coco_eval",
    "save_period", "nbs", "lr0", "no_aug_epochs", "resume", "project", "name", "exist_ok",
)


@dataclass(frozen=True)
class DiskProjection:
    free_bytes: int
    dataset_bytes: int
    cache_bytes: int
    margin_bytes: int

    @property
    def needed_bytes(self) -> int:
        return self.dataset_bytes + self.cache_bytes + self.margin_bytes

    @property
    def ok(self) -> bool:
        return self.free_bytes >= self.needed_bytes


def project_disk(free_bytes: int, dataset_bytes: int, num_images: int, imgsz: int = DEFAULT_CACHE_IMGSZ,
                 margin_bytes: int = 1 << 30) -> DiskProjection:
    """Disk a dataset needs for training: its files again (staging) plus the resized-image cache."""
    per_image = CACHE_BYTES_PER_IMAGE.get(imgsz) or int(CACHE_BYTES_PER_IMAGE[640] * (imgsz / 640) ** 2)
    return DiskProjection(free_bytes, dataset_bytes, num_images * per_image, margin_bytes)


def describe_projection(where: Path, projections: dict[int, DiskProjection]) -> str:
    """The projection in words: needed vs free, for each cache size (the default size decides the verdict)."""
    gb = 1e9
    default = projections.get(DEFAULT_CACHE_IMGSZ) or next(iter(projections.values()))
    sizes = ", ".join(f"{p.needed_bytes / gb:.2f} GB with the {k} px cache" for k, p in projections.items())
    if default.ok:
        verdict = "enough"
    else:
        fits = [k for k, p in projections.items() if p.ok]
        verdict = ("NOT enough for the default cache: training may stop on a full disk; free space or move "
                   "BENCH_HOME" + (f", or cache at {fits[0]} px" if fits else ""))
    return (f"training needs {sizes} (the dataset's {default.dataset_bytes / gb:.3f} GB again, LibreYOLO's "
            f"resized-image cache and a {default.margin_bytes / gb:.0f} GB margin); "
            f"{default.free_bytes / gb:.2f} GB free under {where}: {verdict}")


def unwritable_dirs(dirs: list[Path]) -> dict[str, str]:
    """Directories that cannot be created or written, with the reason (empty when all are fine)."""
    bad: dict[str, str] = {}
    for d in dirs:
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".write-probe-", dir=d)
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            bad[str(d)] = f"{exc.__class__.__name__}: {exc.strerror or exc}"
    return bad


def trainconfig_fields(package: str = "libreyolo") -> tuple[str, set[str]]:
    """(installed version, TrainConfig field names) read from the installed source without importing
    it: importing libreyolo pulls in torch (~6 s), which a preflight must not pay."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{package} is not installed in this environment")
    path = Path(spec.submodule_search_locations[0]) / "training" / "config.py"
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TrainConfig":
            names = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            return metadata.version(package), names
    raise LookupError(f"{path}: no TrainConfig class found (LibreYOLO layout changed?)")


def missing_train_fields(available: set[str], required: tuple[str, ...] = PLATFORM_TRAIN_FIELDS) -> list[str]:
    return [f for f in required if f not in available]
