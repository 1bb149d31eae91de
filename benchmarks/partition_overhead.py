"""Per-partition overhead of a campaign launched from the CLI (`bench campaign`).

What it measures: the wall time `bench campaign` adds per (dataset, model) partition when the partition's own
work is already done. On a BENCH_HOME where `bench demo` finished, every partition of the mini suite is reused
(checkpoint, predictions and scores found current), so a partition's run is almost pure orchestration:
starting whatever executes it, loading the code location, opening the instance, creating the run, the reuse
checks and the run's events.

    bench campaign --model yolo9-t --recipe smoke --lanes 1 --datasets mini-tiny              (1 partition)
    bench campaign --model yolo9-t --recipe smoke --lanes 1 --suite mini                      (4 partitions)

per-partition overhead = (wall(4) - wall(1)) / 3, so the fixed cost of the command (its own start, registering,
the submission build and the warehouse load) cancels. One lane: partitions run one after another.

    .venv/bin/python benchmarks/partition_overhead.py --home /tmp/demo_home            # this checkout
    .venv/bin/python benchmarks/partition_overhead.py --home /tmp/h --repo /tmp/old     # another checkout
                                                                                        # (PYTHONPATH=REPO)

Without --home it runs `bench demo --no-augbench` into a fresh temp dir first (about 3 minutes). Prints a
markdown table and one JSON line. Not a test: never run by pytest; wall-clock numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def bench(repo: Path, home: Path, *args: str) -> float:
    env = {**os.environ, "BENCH_HOME": str(home), "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "bench_assets.cli", *args], cwd=repo, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"bench {' '.join(args)} exited {r.returncode}:\n{r.stderr[-3000:]}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, help="a BENCH_HOME where `bench demo` finished (default: run it first)")
    ap.add_argument("--repo", type=Path, default=REPO, help="the checkout to measure (default: this one)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    if args.home is None:
        bench(args.repo, home, "demo", "--no-augbench")
    common = ("campaign", "--model", "yolo9-t", "--recipe", "smoke", "--lanes", "1")
    bench(args.repo, home, *common, "--suite", "mini")  # warm-up: caches, manifest, pyc
    one, four = [], []
    for _ in range(args.runs):
        one.append(bench(args.repo, home, *common, "--datasets", "mini-tiny"))
        four.append(bench(args.repo, home, *common, "--suite", "mini"))
    t1, t4 = statistics.median(one), statistics.median(four)
    per = (t4 - t1) / 3
    print("| checkout | runs | 1 partition s (median) | 4 partitions s (median) | per-partition overhead s |")
    print("|---|---:|---:|---:|---:|")
    print(f"| {args.repo} | {args.runs} | {t1:.2f} | {t4:.2f} | **{per:.2f}** |")
    print(json.dumps({"repo": str(args.repo), "home": str(home), "runs": args.runs, "one_partition_s": one,
                      "four_partitions_s": four, "per_partition_overhead_s": round(per, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
