"""The trained mini checkpoint the suite shares: yolo9-t on mini-tiny, two epochs at 128 px, trained once per run of
the suite (tests/shared_cache.py) by the training child exactly as `test_children.py` runs it.

`test_children.py` asserts what that run wrote (result, checkpoints, progress lines); `test_pretrained.py` imports
its best.pt as "our own weights". Both only read it: a test that would change the run or the dataset copies it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.shared_cache import REPO, shared

IMGSZ = 128
CLASSES = ["disc", "block"]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def train_spec(dataset: Path, run_dir: Path, **kw: Any) -> dict[str, Any]:
    spec: dict[str, Any] = dict(family="yolo9", size="t", num_classes=2, class_names=CLASSES, dataset_dir=str(dataset),
                                run_dir=str(run_dir), epochs=2, imgsz=IMGSZ, physical_batch=4, effective_batch=4,
                                workers=0, seed=0)
    spec.update(kw)
    return spec


def stored_mini_tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mini-tiny, canonicalised exactly as the platform stores it (the stored version's folder). Read only."""
    def build(folder: Path) -> None:
        from bench_assets.rf100vl.datasets.sources import SourceSpec
        from bench_assets.rf100vl.datasets.store import materialize_dataset

        record = materialize_dataset(folder / "home", "mini-tiny", SourceSpec(kind="mini"), folder / "cache")
        (folder / "path.txt").write_text(str(record.path))

    return Path((shared(tmp_path_factory, "mini-tiny-stored", {}, build) / "path.txt").read_text())


def trained_yolo9_tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Two epochs, standalone (no Pipes), accumulating 2 micro-batches per optimizer step, with the fault switch
    armed at step 2 for physical batches above 4 only (it must not fire). (run dir, the child's exit and output)."""
    dataset = stored_mini_tiny(tmp_path_factory)

    def build(folder: Path) -> None:
        spec = folder / "spec.json"
        spec.write_text(json.dumps(train_spec(dataset, folder / "run", effective_batch=8,
                                              fault={"oom_at_step": 2, "oom_only_if_physical_batch_above": 4})))
        proc = subprocess.run([sys.executable, "-m", "bench_assets.rf100vl.training.child.train", str(spec)],
                              cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=600)
        (folder / "child.json").write_text(json.dumps({"returncode": proc.returncode, "stdout": proc.stdout,
                                                       "stderr": proc.stderr}))

    folder = shared(tmp_path_factory, "yolo9-t-mini-tiny-2ep", {"dataset": str(dataset)}, build)
    child = json.loads((folder / "child.json").read_text())
    proc = subprocess.CompletedProcess(["train", str(folder / "spec.json")], child["returncode"], child["stdout"],
                                       child["stderr"])
    return folder / "run", proc


# The campaign both cluster tests run (tests/platform/test_cluster.py on loopback, test_real_boxes.py across network
# namespaces): two of the mini suite with the smoke recipe cut to CLUSTER_EPOCHS epochs. test_cluster.py explains the
# choice of datasets and epochs.
CLUSTER_DATASETS = ("mini-large", "mini-tiny")
CLUSTER_EPOCHS = 3


def cluster_recipe() -> dict[str, Any]:
    """The smoke recipe of yolo9 with CLUSTER_EPOCHS epochs (what the cluster tests write to a recipe file)."""
    from bench_assets.rf100vl.training.recipes import RECIPES_DIR

    doc = json.loads((RECIPES_DIR / "smoke" / "yolo9.json").read_text())
    doc["protocol"]["epochs"] = CLUSTER_EPOCHS
    return doc


def one_box_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cluster tests' campaign run on one box (2 lanes, a fresh home, no cluster), once per run of the suite:
    `recipe.json` and `home/` (datasets, runs, scores, warehouse) in the returned folder. test_cluster.py compares
    the cluster's training with it; test_real_boxes.py starts from a private copy of it, so the namespaced cluster
    reuses its checkpoints instead of training again. Read only."""
    from tests.conftest import run_bench

    def build(folder: Path) -> None:
        recipe = folder / "recipe.json"
        recipe.write_text(json.dumps(cluster_recipe(), indent=2))
        home = folder / "home"
        out = run_bench("campaign", "--model", "yolo9-t", "--datasets", ",".join(CLUSTER_DATASETS), "--recipe",
                        str(recipe), "--lanes", "2", home=home, timeout=1800)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    return shared(tmp_path_factory, "one-box-campaign", {"datasets": CLUSTER_DATASETS, "epochs": CLUSTER_EPOCHS},
                  build)
