"""`make demo` timed from a fresh BENCH_HOME, with what the docs quote from it written to a committed result file.

Runs `bench demo` (the mini suite's four datasets, yolo9-t with the smoke recipe on 2 CPU lanes, predictions and
scores, the reduced augbench, the report) in a home of its own (`--home`, default a temp dir removed afterwards
unless `--keep`), timed from spawn to exit, then reads the warehouse it built: each dataset's test mAP50-95 and the
valid mAP50-95 of the epoch its training selected, and the per-partition training wall time.

The result JSON (`--output`, default `benchmarks/results/demo_run.json`) holds the date, the machine (load average at
the start and at the end: the machine may be shared), this command, the git commit (and how many tracked files
differed from it), the wall time, bench's exit code and the per-dataset figures. docs/training.md quotes it and
`tests/platform/test_doc_figures.py` checks the quote.

    .venv/bin/python benchmarks/demo_run.py

Exits with bench's exit code. Not a test: never run by pytest (about 3-5 min on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _result import RESULTS, command, git_state, machine_facts, minutes, now, shown, write_result

REPO = Path(__file__).resolve().parent.parent
MODEL = "yolo9-t"  # bench_assets/cli/demo.py DEMO_MODEL


def per_dataset(warehouse: Path) -> dict[str, dict[str, Any]]:
    """dataset -> test mAP50-95 (scores), valid mAP50-95 of the selected epoch and training wall seconds (runs)."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute("""
            SELECT s.dataset, s.mAP50_95, r.valid_mAP50_95, r.best_epoch, r.epochs_done, r.wall_seconds
            FROM scores s JOIN runs r ON r.model = s.model AND r.dataset = s.dataset AND r.is_current
            WHERE s.is_current AND s.model = ? ORDER BY s.dataset""", [MODEL]).fetchall()
    return {d: {"test_mAP50_95": t, "valid_mAP50_95": v, "best_epoch": b, "epochs_done": e, "train_wall_s": w}
            for d, t, v, b, e, w in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, help="BENCH_HOME to use (must not exist; default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the home afterwards")
    ap.add_argument("--output", type=Path, default=RESULTS / "demo_run.json")
    args = ap.parse_args(argv)

    home = args.home or Path(tempfile.mkdtemp(prefix="bench-demo-")) / "bench"
    if home.exists() and any(home.iterdir()):
        ap.error(f"{home} is not empty: the demo is timed from a fresh BENCH_HOME")
    started_at, facts = now(), machine_facts()
    env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    bench = [str(REPO / ".venv" / "bin" / "bench"), "demo"]
    t0 = time.perf_counter()
    proc = subprocess.run(bench, cwd=REPO, env=env)
    wall = time.perf_counter() - t0
    load_end = [round(x, 2) for x in os.getloadavg()]
    datasets = per_dataset(home / "warehouse.duckdb") if (home / "warehouse.duckdb").exists() else {}
    doc = {"date": started_at, "machine": facts, "load_average_at_end": load_end, "command": command(),
           "bench_command": "bench demo (BENCH_HOME fresh, OMP/MKL/OpenBLAS 1 thread)", "git": git_state(),
           "exit_code": proc.returncode, "wall_s": round(wall, 1), "wall": minutes(wall), "model": MODEL,
           "datasets": datasets}
    write_result(args.output, doc)
    print(f"bench demo: exit {proc.returncode}, {minutes(wall)}; " + ", ".join(
        f"{d} {r['test_mAP50_95']:.4f} / {r['valid_mAP50_95']:.4f}" for d, r in datasets.items()), file=sys.stderr)
    if not args.keep and args.home is None:
        shutil.rmtree(home.parent, ignore_errors=True)
    elif args.keep:
        print(f"kept {shown(home)}", file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
