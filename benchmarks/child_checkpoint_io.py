"""What the training child saves by not touching checkpoints more than it must: the three checkpoint operations of a
yolo9-t child that `child/train.py` avoids, each timed against what it replaced, in one process, on the checkpoints
of a real training.

Trains yolo9-t for 2 epochs on the embedded mini-tiny (the product's child, `python -m
bench_assets.rf100vl.training.child.train`, as the tests run it), then, on the `last.pt` and `best.pt` it wrote:
- **read**: the epoch and best epoch as the child read them before, `torch.load(mmap=True, weights_only=False)` (the
  pickle run, every tensor mapped), against `checkpoint_file.checkpoint_scalars` (data.pkl alone);
- **save**: one checkpoint dict to two files (LibreYOLO's last.pt and best.pt of an epoch that is the best so far) by
  the child's atomic `torch.save` twice against it once and `common.atomic_copy_file`;
- **reload**: what `_Hooks.skip_reload` skips, the wrapper's `_load_weights(best.pt)` after training, against
  nothing.
Each is the CPU time (user + system, this process) of REPEAT runs, alternating the two ways; the medians and their
ratio are what to read. `per_run` adds them up for one 2-epoch run (what the child does as it ends: two reads, up
to two epochs that write both files, one reload), beside the child's own CPU for the training. Not a test: never run
by pytest.

    .venv/bin/python benchmarks/child_checkpoint_io.py [--repeat 7]

Writes `benchmarks/results/child_checkpoint_io.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _result import REPO, RESULTS, command, git_state, machine_facts, now, write_result

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn: Callable[[], Any]) -> float:
    start = _cpu()
    fn()
    return _cpu() - start


def _train(base: Path) -> tuple[Path, float]:
    """A 2-epoch yolo9-t child on mini-tiny (stored as the platform stores it): its run folder and its CPU seconds."""
    from bench_assets.rf100vl.datasets.sources import SourceSpec
    from bench_assets.rf100vl.datasets.store import materialize_dataset
    from tests.shared_training import child_env, train_spec

    record = materialize_dataset(base / "home", "mini-tiny", SourceSpec(kind="mini"), base / "cache")
    spec = base / "spec.json"
    spec.write_text(json.dumps(train_spec(Path(record.path), base / "run")))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "bench_assets.rf100vl.training.child.train", str(spec)], cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"the training child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return base / "run", (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _pairs(repeat: int, old: Callable[[], Any], new: Callable[[], Any]) -> dict[str, Any]:
    olds, news = [], []
    for _ in range(repeat):
        olds.append(_timed(old))
        news.append(_timed(new))
    o, n = statistics.median(olds), statistics.median(news)
    return {"old_cpu_s": [round(x, 4) for x in olds], "new_cpu_s": [round(x, 4) for x in news],
            "median_old_s": round(o, 4), "median_new_s": round(n, 4), "ratio": round(n / o, 4) if o else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--output", type=Path, default=RESULTS / "child_checkpoint_io.json")
    a = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    import torch

    from bench_assets.rf100vl.training.child.checkpoint_file import checkpoint_scalars
    from bench_assets.rf100vl.training.child.common import atomic_copy_file, build_model, install_atomic_torch_save

    torch.set_num_threads(1)
    install_atomic_torch_save()  # both ways write as the child does: temp file, fsync, rename
    with tempfile.TemporaryDirectory(prefix="child-ckpt-io-") as tmp:
        base = Path(tmp)
        start = time.monotonic()
        run, child_cpu = _train(base)
        train_wall = time.monotonic() - start
        last, best = run / "weights" / "last.pt", run / "weights" / "best.pt"
        if not last.is_file() or not best.is_file():
            raise SystemExit(f"the child wrote no last.pt/best.pt under {run / 'weights'}")
        meta = torch.load(last, map_location="cpu", weights_only=False)
        if checkpoint_scalars(last)["epoch"] != meta["epoch"]:
            raise SystemExit("checkpoint_scalars and torch.load disagree on the epoch")
        out = base / "out"
        out.mkdir()

        def read_old() -> Any:
            d = torch.load(last, map_location="cpu", mmap=True, weights_only=False)
            return d["epoch"], d.get("best_epoch")

        def read_new() -> Any:
            d = checkpoint_scalars(last)
            return d["epoch"], d.get("best_epoch")

        def save_old() -> None:
            torch.save(meta, out / "best.pt")
            torch.save(meta, out / "last.pt")

        def save_new() -> None:
            torch.save(meta, out / "best.pt")
            atomic_copy_file(out / "best.pt", out / "last.pt")

        model = build_model("yolo9", "t", 2, "cpu")
        results = {
            "read": _pairs(a.repeat, read_old, read_new),
            "save": _pairs(a.repeat, save_old, save_new),
            "reload": _pairs(a.repeat, lambda: model._load_weights(str(best)), lambda: None),
        }
        sizes = {"last_pt_bytes": last.stat().st_size, "best_pt_bytes": best.stat().st_size}
    training = {"family": "yolo9", "size": "t", "epochs": 2, "dataset": "mini-tiny",
                "child_cpu_s": round(child_cpu, 2), "wall_s": round(train_wall, 2)}
    counts = {"read": 2, "save": 2, "reload": 1}
    saved = sum(n * (results[k]["median_old_s"] - results[k]["median_new_s"]) for k, n in counts.items())
    per_run = {"counts": counts, "saved_cpu_s": round(saved, 4)}
    doc = {"benchmark": "child_checkpoint_io", "date": now(), "machine": machine_facts(), "command": command(),
           "git": git_state(), "repeat": a.repeat, "training": training, **sizes, **results,
           "per_run": per_run}
    write_result(a.output, doc)
    for name in ("read", "save", "reload"):
        r = results[name]
        print(f"{name}: median {r['median_old_s']:.3f} s -> {r['median_new_s']:.3f} s CPU")
    print(f"the child's training: {child_cpu:.1f} CPU s; wrote {a.output}")


if __name__ == "__main__":
    main()
