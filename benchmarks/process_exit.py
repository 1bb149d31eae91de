"""What a process's exit costs after it imported what the project's processes import, with and without the
interpreter's last garbage collections: the figure docs/testing.md quotes for `bench_assets/platform/process_exit.py`.

For each stack (what a training or prediction child imports; the Dagster code location a `bench` command or a run
pool worker loads; both, as a pytest worker holds them), starts a fresh interpreter that imports it and then ends in
one of three ways, REPEAT times each, the ways alternating:
- `normal`: returns, as a Python program does (the interpreter's finalization, its full collections included);
- `frozen`: `exit_process(0)` (`gc.freeze()`, then `sys.exit`), as the project's processes end now;
- `immediate`: `os._exit(0)` right after the imports: no finalization at all, the floor to subtract.
Each process's CPU (user + system, `RUSAGE_CHILDREN` around it) and wall are recorded. The exit's own cost is a
way's median minus `immediate`'s. Single runs vary on a shared host: the medians are what to read.

    .venv/bin/python benchmarks/process_exit.py [--repeat 7]

Writes `benchmarks/results/process_exit.json` (date, machine, command, medians per stack and way, every run).
Informational: no target, never run by pytest.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

from _result import REPO, RESULTS, command, git_state, machine_facts, now, write_result

LOCATION = ("from pathlib import Path\nfrom bench_assets.platform.location import load_definitions\n"
            "load_definitions(Path('definitions.py')).get_repository_def()")
STACKS = {
    "training child": "import bench_assets.rf100vl.training.child.train, torch, torchvision, libreyolo",
    "code location": LOCATION,
    "both": "import bench_assets.rf100vl.training.child.train, torch, torchvision, libreyolo\n" + LOCATION,
}
ENDINGS = {
    "normal": "",
    "frozen": "from bench_assets.platform.process_exit import exit_process; exit_process(0)",
    "immediate": "import os; os._exit(0)",
}


def one_process(code: str) -> dict[str, float]:
    """A fresh interpreter running `code`: its wall and CPU seconds."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=REPO, check=True,
                   env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    after, t1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall_s": round(t1 - t0, 4), "cpu_s": round(cpu, 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    runs: dict[str, dict[str, list[dict[str, float]]]] = {s: {e: [] for e in ENDINGS} for s in STACKS}
    for i in range(args.repeat):
        for stack, imports in STACKS.items():
            for ending, last in ENDINGS.items():
                runs[stack][ending].append(one_process(f"{imports}\n{last}"))
        print(f"round {i + 1}/{args.repeat} done", file=sys.stderr)
    medians = {s: {e: {k: round(statistics.median(r[k] for r in rs), 3) for k in ("wall_s", "cpu_s")}
                   for e, rs in by_end.items()} for s, by_end in runs.items()}
    exit_cost = {s: {e: {k: round(m[e][k] - m["immediate"][k], 3) for k in ("wall_s", "cpu_s")}
                     for e in ("normal", "frozen")} for s, m in medians.items()}
    for s, c in exit_cost.items():
        print(f"{s:15s}: exit CPU {c['normal']['cpu_s']:.2f} s as a program returns, {c['frozen']['cpu_s']:.2f} s "
              f"with exit_process (process CPU medians {medians[s]['normal']['cpu_s']:.2f} / "
              f"{medians[s]['frozen']['cpu_s']:.2f} / {medians[s]['immediate']['cpu_s']:.2f} s)")
    write_result(RESULTS / "process_exit.json", {
        "benchmark": "process_exit", "date": now(), "machine": machine_facts(), "command": command(),
        "git": git_state(), "repeat": args.repeat, "stacks": STACKS, "endings": ENDINGS, "median": medians,
        "exit_cost": exit_cost, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
