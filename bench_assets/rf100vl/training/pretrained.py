"""Pretrained weights a model fine-tunes from: the layout of `BENCH_HOME/pretrained/`, what makes a file acceptable for
a model key, and importing one.

    pretrained/<model>/weights.pt     the file a run of <model> starts from (a local copy: nothing downloads later)
    pretrained/<model>/lock.json      what it is: name, source, sha256, bytes, parameters, the load counts

A file is accepted for `family-size` only when it loads into that family and size (`child/weights.py` counts, against
a from-scratch model, the tensors the file provides by name and shape): the file's own metadata names no other family
or size, the whole backbone loads, and at least `MIN_LOADED_SHARE` of all tensors do (a COCO-pretrained head differs
from a fine-tuned one only in its class tensors). LibreYOLO itself loads such a file non-strictly and trains on from
random weights wherever it did not match, which is the silent failure this refuses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import atomic_write_json, fsync_dir, sha256_file
from bench_assets.rf100vl.training.families import check_trainable
from bench_assets.rf100vl.training.runplan import parse_model

PRETRAINED_DIR = "pretrained"
WEIGHTS_FILE = "weights.pt"
LOCK_FILE = "lock.json"
MIN_LOADED_SHARE = 0.9


class PretrainedError(ValueError):
    """A weights file that cannot serve as a model's starting point, with the file, the reason and the fix."""


def pretrained_root(home: Path) -> Path:
    return home / PRETRAINED_DIR


def model_dir(home: Path, model_key: str) -> Path:
    """`pretrained/<model>/`; a replicate (`yolo9-t@seed1`) starts from the weights of the model it repeats."""
    return pretrained_root(home) / parse_model(model_key).base


def weights_path(home: Path, model_key: str) -> Path:
    return model_dir(home, model_key) / WEIGHTS_FILE


def read_lock(home: Path, model_key: str) -> dict[str, Any] | None:
    path = model_dir(home, model_key) / LOCK_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def list_locks(home: Path) -> list[dict[str, Any]]:
    root = pretrained_root(home)
    return [json.loads(p.read_text()) for p in sorted(root.glob(f"*/{LOCK_FILE}"))] if root.is_dir() else []


def load_problems(family: str, size: str, inspection: dict[str, Any]) -> list[str]:
    """Why the inspected file is not a starting point for `family-size` (empty when it is)."""
    problems = []
    meta = inspection.get("file_meta", {})
    if meta.get("model_family") not in (None, family):
        problems.append(f"the file says it holds {meta['model_family']} weights, not {family}")
    if meta.get("size") not in (None, size):
        problems.append(f"the file says it holds size {meta['size']!r}, not {size!r}")
    bb, bb_total = inspection["backbone_loaded"], inspection["backbone_tensors"]
    if bb < bb_total:
        problems.append(f"only {bb} of the {bb_total} tensors of {family}-{size}'s {inspection['backbone']} load "
                        "from it (by name and shape)")
    loaded, total = inspection["loaded_tensors"], inspection["model_tensors"]
    if total and loaded / total < MIN_LOADED_SHARE:
        problems.append(f"only {loaded} of {family}-{size}'s {total} tensors load from it "
                        f"({inspection['shape_mismatches']} differ in shape), under {MIN_LOADED_SHARE:.0%}")
    return problems


def inspect_file(family: str, size: str, path: Path) -> dict[str, Any]:
    """`child/weights.py` run in a child process (it imports torch and LibreYOLO); PretrainedError when it cannot read
    the file as weights at all."""
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    proc = subprocess.run([sys.executable, "-m", "bench_assets.rf100vl.training.child.weights", family, size,
                           str(path)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise PretrainedError(f"{path}: cannot be read as {family}-{size} weights: {reason}; fix: pass a LibreYOLO "
                              f"checkpoint (.pt) of {family}-{size}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def import_weights(home: Path, model_key: str, path: Path, *, name: str | None = None,
                   source: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check `path` for `model_key`, copy it to `pretrained/<model>/weights.pt` and write its lock (both atomically);
    the lock. PretrainedError naming the file and each reason when it is refused (nothing is written then)."""
    model = parse_model(model_key)
    check_trainable(model.family, model.size)
    path = path.expanduser().resolve()
    if not path.is_file():
        raise PretrainedError(f"{path}: no such file; fix: pass the path of a {model_key} weights file (.pt)")
    inspection = inspect_file(model.family, model.size, path)
    problems = load_problems(model.family, model.size, inspection)
    if problems:
        raise PretrainedError(f"{path}: not a starting point for {model_key}: " + "; ".join(problems)
                              + f"; fix: import a {model_key} checkpoint (`bench models families` names the "
                                "published ones)")
    dest = model_dir(home, model_key)
    dest.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".weights-", dir=dest)
    os.close(fd)
    try:
        shutil.copyfile(path, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        copied = sha256_file(Path(tmp))
        if copied != inspection["sha256"]:
            raise PretrainedError(f"{path}: changed while it was imported (sha256 {inspection['sha256']} when read, "
                                  f"{copied} when copied); fix: import it again once nothing writes it")
        os.replace(tmp, dest / WEIGHTS_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(dest)
    lock = {"model": model.base, "family": model.family, "size": model.size, "name": name or path.name,
            "sha256": inspection["sha256"], "bytes": inspection["bytes"], "params": inspection["file_params"],
            "source": source or {"kind": "file", "path": str(path)},
            "loaded_tensors": inspection["loaded_tensors"], "model_tensors": inspection["model_tensors"],
            "backbone": inspection["backbone"], "backbone_loaded": inspection["backbone_loaded"],
            "backbone_tensors": inspection["backbone_tensors"], "file_meta": inspection["file_meta"],
            "imported_at": datetime.now(UTC).isoformat(timespec="seconds")}
    atomic_write_json(dest / LOCK_FILE, lock)
    return lock


def starting_point(home: Path, model_key: str, ref: Any | None) -> dict[str, Any] | None:
    """What a run of `model_key` starts from: the stored weights (name, sha256, source, local path) when its recipe
    names weights (`ref`, a recipes.PretrainedRef) and any are stored, None when the recipe names none.
    PretrainedError when the recipe names weights and none are stored, or the stored file is not the one locked: a
    campaign must not spend GPU hours training from scratch by accident."""
    if ref is None:
        return None
    lock = read_lock(home, model_key)
    path = weights_path(home, model_key)
    if lock is None or not path.is_file():
        raise PretrainedError(f"the recipe starts {model_key} from {ref.name} ({ref.repo}) but no pretrained weights "
                              f"are stored under {model_dir(home, model_key)}; fix: `bench weights import FILE "
                              f"--model {model_key} --name {ref.name}` (or materialize rf100vl/pretrained)")
    sha = sha256_file(path)
    if sha != lock["sha256"]:
        raise PretrainedError(f"{path}: sha256 {sha} is not the {lock['sha256']} its lock records (the file changed "
                              f"after import); fix: import the weights again")
    return {"name": lock["name"], "sha256": sha, "source": lock["source"], "path": str(path)}
