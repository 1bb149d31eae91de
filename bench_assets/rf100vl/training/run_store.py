"""The layout of `BENCH_HOME/runs/`, as `datasets/store.py` owns `datasets/` and `scoring/eval_store.py` owns `eval/`.

    runs/<model>/<dataset>/CURRENT              names the finished run the partition's predictions use
    runs/<model>/<dataset>/<signature>/         one training run (a run signature: scripts/runplan.py)
        train_spec.json                         what the step handed the child
        signature.json                          the fields the run signature hashes
        child.log                               the child's output
        bench_status.json                       this platform's state of the run (LibreYOLO writes its own status.json)
        result.json                             what the child hands back (epochs, losses, selection)
        init_load.json                          how much of the init weights loaded (kept across a resume)
        stats.json                              the run's record once finished (what every reader reads)
        weights/{best,last}.pt                  the selected checkpoint and the resume state

Every other module asks this one for these names. Pure pathlib and json.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import atomic_write_text

RUNS_DIR = "runs"
CURRENT_FILE = "CURRENT"
SPEC_FILE = "train_spec.json"
SIGNATURE_FILE = "signature.json"
CHILD_LOG = "child.log"
STATUS_FILE = "bench_status.json"  # LibreYOLO writes its own status.json in the run dir
RESULT_FILE = "result.json"
INIT_LOAD_FILE = "init_load.json"
STATS_FILE = "stats.json"
WEIGHTS_DIR = "weights"
BEST_WEIGHTS = "best.pt"
LAST_WEIGHTS = "last.pt"


def runs_root(home: Path) -> Path:
    return home / RUNS_DIR


def partition_dir(home: Path, model_key: str, dataset: str) -> Path:
    """`runs/<model>/<dataset>/`: every run of one (dataset, model) partition and its CURRENT pointer."""
    return runs_root(home) / model_key / dataset


def signature_dir(runs_dir: Path, model_key: str, dataset: str, signature: str) -> Path:
    """`runs/<model>/<dataset>/<signature[:16]>/`: the run dir of one run signature (`runs_dir` is `runs_root`)."""
    return runs_dir / model_key / dataset / signature[:16]


def current_pointer(home: Path, model_key: str, dataset: str) -> Path:
    return partition_dir(home, model_key, dataset) / CURRENT_FILE


def point_current(run_dir: Path) -> None:
    """Make `run_dir` the partition's current run (atomic)."""
    atomic_write_text(run_dir.parent / CURRENT_FILE, run_dir.name + "\n")


def is_current(run_dir: Path) -> bool:
    """Whether the partition's CURRENT pointer names this run dir."""
    pointer = run_dir.parent / CURRENT_FILE
    return pointer.exists() and pointer.read_text().strip() == run_dir.name


def current_run_dir(home: Path, model_key: str, dataset: str) -> Path | None:
    """The run dir CURRENT names, or None when the partition has no finished run."""
    pointer = current_pointer(home, model_key, dataset)
    return pointer.parent / pointer.read_text().strip() if pointer.exists() else None


def current_run(home: Path, model_key: str, dataset: str) -> tuple[Path, dict[str, Any]] | None:
    """(run dir, stats) of the finished run a partition's predictions use, or None."""
    run_dir = current_run_dir(home, model_key, dataset)
    if run_dir is None:
        return None
    return run_dir, json.loads(stats_path(run_dir).read_text())


def current_stats(home: Path, model_key: str, dataset: str) -> dict[str, Any] | None:
    """The current run's stats.json, or None when there is no current run or its stats.json is missing."""
    run_dir = current_run_dir(home, model_key, dataset)
    if run_dir is None or not stats_path(run_dir).exists():
        return None
    return json.loads(stats_path(run_dir).read_text())


def stats_path(run_dir: Path) -> Path:
    return run_dir / STATS_FILE


def init_load_path(run_dir: Path) -> Path:
    return run_dir / INIT_LOAD_FILE


def result_path(run_dir: Path) -> Path:
    return run_dir / RESULT_FILE


def status_path(run_dir: Path) -> Path:
    return run_dir / STATUS_FILE


def spec_path(run_dir: Path) -> Path:
    return run_dir / SPEC_FILE


def signature_path(run_dir: Path) -> Path:
    return run_dir / SIGNATURE_FILE


def child_log(run_dir: Path) -> Path:
    return run_dir / CHILD_LOG


def weights_dir(run_dir: Path) -> Path:
    return run_dir / WEIGHTS_DIR


def last_weights(run_dir: Path) -> Path:
    return weights_dir(run_dir) / LAST_WEIGHTS


def best_weights(run_dir: Path) -> Path:
    return weights_dir(run_dir) / BEST_WEIGHTS


def finished_run_dirs(home: Path) -> list[Path]:
    """Every run dir with a stats.json (finished runs, current or not), sorted."""
    root = runs_root(home)
    return sorted(p.parent for p in root.glob(f"*/*/*/{STATS_FILE}")) if root.exists() else []


def model_partitions(home: Path, model_key: str) -> Iterator[Path]:
    """`runs/<model>/<dataset>/` of every dataset the model has runs for, sorted."""
    root = runs_root(home) / model_key
    if root.exists():
        yield from sorted(p for p in root.iterdir() if p.is_dir())
