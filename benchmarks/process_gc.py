"""What the garbage collector costs a process that imports what the project's processes import: during the imports
and at exit, the figures docs/testing.md quotes for `bench_assets/platform/process_gc.py`.

For each stack (what a training, prediction or weights child imports; the Dagster code location a `bench` command
or a run pool worker loads; both, as a pytest worker holds them), starts a fresh interpreter REPEAT times in each
of five ways, the ways alternating:
- `normal`: imports, then returns as a Python program does (finalization, its full collections included);
- `frozen`: imports, then `exit_process(0)` (`gc.freeze()`, then `sys.exit`);
- `immediate`: imports, then `os._exit(0)`: no finalization at all, the floor to subtract;
- `paused_immediate`: imports inside `collections_paused()`, then `os._exit(0)`;
- `paused_frozen`: imports inside `collections_paused()`, then `exit_process(0)`: how the children run now.
Each process's CPU (user + system, `RUSAGE_CHILDREN` around it) and wall are recorded. The collections during the
imports cost `immediate` - `paused_immediate`; the exit costs a way's median minus `immediate`'s. Single runs vary
on a shared host: the medians are what to read.

    .venv/bin/python benchmarks/process_gc.py [--repeat 7]

Writes `benchmarks/results/process_gc.json` (date, machine, command, medians per stack and way, the derived costs,
every run). Informational: no target, never run by pytest.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import textwrap
import time

from _result import REPO, RESULTS, command, git_state, machine_facts, now, write_result

CHILD = "import torch, torchvision, libreyolo, bench_assets.rf100vl.training.child.train"
LOCATION = ("from pathlib import Path\nfrom bench_assets.platform.location import load_definitions\n"
            "load_definitions(Path('definitions.py')).get_repository_def()")
STACKS = {"training child": CHILD, "code location": LOCATION, "both": f"{CHILD}\n{LOCATION}"}
EXIT = "from bench_assets.platform.process_gc import exit_process\nexit_process(0)"
IMMEDIATE = "import os\nos._exit(0)"
PAUSED = "from bench_assets.platform.process_gc import collections_paused\nwith collections_paused():\n"
WAYS = {
    "normal": lambda imports: imports,
    "frozen": lambda imports: f"{imports}\n{EXIT}",
    "immediate": lambda imports: f"{imports}\n{IMMEDIATE}",
    "paused_immediate": lambda imports: f"{PAUSED}{textwrap.indent(imports, '    ')}\n{IMMEDIATE}",
    "paused_frozen": lambda imports: f"{PAUSED}{textwrap.indent(imports, '    ')}\n{EXIT}",
}
FIGURES = ("wall_s", "cpu_s")


def one_process(code: str) -> dict[str, float]:
    """A fresh interpreter running `code`: its wall and CPU seconds."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=REPO, check=True,
                   env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    after, t1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall_s": round(t1 - t0, 4), "cpu_s": round(cpu, 4)}


def costs(m: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The collections' share, from one stack's medians per way."""
    def diff(a: str, b: str) -> dict[str, float]:
        return {k: round(m[a][k] - m[b][k], 3) for k in FIGURES}

    return {"import_collections": diff("immediate", "paused_immediate"), "exit_normal": diff("normal", "immediate"),
            "exit_frozen": diff("frozen", "immediate"), "saved": diff("normal", "paused_frozen")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    runs: dict[str, dict[str, list[dict[str, float]]]] = {s: {w: [] for w in WAYS} for s in STACKS}
    for i in range(args.repeat):
        for stack, imports in STACKS.items():
            for way, make in WAYS.items():
                runs[stack][way].append(one_process(make(imports)))
        print(f"round {i + 1}/{args.repeat} done", file=sys.stderr)
    medians = {s: {w: {k: round(statistics.median(r[k] for r in rs), 3) for k in FIGURES} for w, rs in by_way.items()}
               for s, by_way in runs.items()}
    derived = {s: costs(m) for s, m in medians.items()}
    for s, c in derived.items():
        print(f"{s:15s}: CPU in collections during the imports {c['import_collections']['cpu_s']:.2f} s; to exit "
              f"{c['exit_normal']['cpu_s']:.2f} s as a program returns, {c['exit_frozen']['cpu_s']:.2f} s frozen; "
              f"whole process {medians[s]['normal']['cpu_s']:.2f} s -> {medians[s]['paused_frozen']['cpu_s']:.2f} s")
    write_result(RESULTS / "process_gc.json", {
        "benchmark": "process_gc", "date": now(), "machine": machine_facts(), "command": command(),
        "git": git_state(), "repeat": args.repeat, "stacks": STACKS,
        "ways": {w: make("<imports>") for w, make in WAYS.items()}, "median": medians, "costs": derived,
        "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
