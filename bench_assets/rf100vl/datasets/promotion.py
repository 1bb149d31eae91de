"""What must hold before a dataset version may become CURRENT (pure functions, no Dagster).

These are the predicates of `rf100vl/dataset`'s two blocking asset checks. The store evaluates them on
a freshly placed version before promoting it, so a version that would fail a blocking check is never
current, not even for the moment between materialization and check; the checks evaluate the same
predicates on the current version afterwards (and catch files changed later).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench_assets.rf100vl.datasets.catalog import catalog_entry
from bench_assets.rf100vl.datasets.lock import lock_mismatches


def class_count_problem(name: str, num_classes: int) -> str | None:
    """Why the class count disqualifies a catalogue dataset, or None (also for non-catalogue names)."""
    entry = catalog_entry(name)
    if entry is None or entry.num_classes == num_classes:
        return None
    return (f"class_count_matches_catalog: the data has {num_classes} classes, the RF100-VL catalogue says "
            f"{entry.num_classes} for {name!r}; import the export of this dataset, or import other data under "
            "a name that is not in the catalogue")


def lock_problems(path: Path, lock: dict[str, Any]) -> list[str]:
    return [f"lock_matches_files: {m}" for m in lock_mismatches(path, lock)]


def blocking_problems(name: str, path: Path, lock: dict[str, Any], num_classes: int) -> list[str]:
    """Every reason the version of dataset `name` stored at `path` (with its lock and class count) may not become
    (or stay) CURRENT; empty when it may."""
    problems = lock_problems(path, lock)
    cc = class_count_problem(name, num_classes)
    return problems + ([cc] if cc else [])
