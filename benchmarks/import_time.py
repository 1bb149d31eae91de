"""Import-time benchmark of the Dagster code location.

Target: `import definitions` (the code location) takes <= 3 s on the reference machine, and loading it
imports neither torch nor libreyolo (nor kornia).

Every measurement runs in a fresh interpreter (cwd = repo root), N times (the cases interleaved), and reports
median and min wall time of the whole `python -c "import X"` process (interpreter start-up included, as a code
server pays it). Baselines measured in the same run: `import dagster` (the floor any code location
pays) and `import torch` (what one heavy import at load would add).

    .venv/bin/python benchmarks/import_time.py            # N=5
    .venv/bin/python benchmarks/import_time.py --runs 9

Prints a markdown table and one JSON line, writes the JSON (date, machine with the load average at the start,
command, the figures) to `--output` (default `benchmarks/results/import_time.json`, which the docs quote); exits 1
when the target is missed. Not a test: never run by pytest, wall-clock numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _result import RESULTS, command, machine_facts, now, shown, write_result

REPO = Path(__file__).resolve().parent.parent
OUTPUT = RESULTS / "import_time.json"
TARGET_S = 3.0
HEAVY = ("torch", "torchvision", "libreyolo", "kornia", "pandas", "duckdb", "PIL", "cv2", "matplotlib")
FORBIDDEN = ("torch", "libreyolo", "kornia")
CASES = (
    ("definitions", "import definitions", "code location (target)"),
    ("dagster", "import dagster", "baseline"),
    ("torch", "import torch", "reference: one heavy import"),
)


def time_import(code: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


def heavy_modules_loaded() -> list[str]:
    probe = (
        "import sys, json; import definitions; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh interpreters per case (default 5)")
    ap.add_argument("--output", type=Path, default=OUTPUT, help=f"result JSON (default {shown(OUTPUT)})")
    args = ap.parse_args()
    started, facts = now(), machine_facts()

    # One untimed warm-up per case so the first timed run does not pay for a cold page cache; then the cases
    # round-robin, so a change in the machine's load falls on every case alike (the ratios are what is compared).
    for _, stmt, _ in CASES:
        time_import(stmt, 1)
    times: dict[str, list[float]] = {key: [] for key, _, _ in CASES}
    for _ in range(args.runs):
        for key, stmt, _ in CASES:
            times[key] += time_import(stmt, 1)
    results = {key: {"median_s": statistics.median(ts), "min_s": min(ts)} for key, ts in times.items()}
    heavy = heavy_modules_loaded()
    forbidden = [m for m in heavy if m in FORBIDDEN]

    base = results["dagster"]["median_s"]
    print(f"python {platform.python_version()}, {platform.machine()}, {facts['cpus']} cpus, load average "
          f"{facts['load_average_1m']} at the start, runs={args.runs} per case\n")
    print("| import | what | median s | min s | ratio to `import dagster` |")
    print("|---|---|---:|---:|---:|")
    for key, stmt, what in CASES:
        r = results[key]
        print(f"| `{stmt}` | {what} | {r['median_s']:.2f} | {r['min_s']:.2f} | {r['median_s'] / base:.2f}x |")
    print(f"\nheavy modules imported by `import definitions`: {', '.join(heavy) or 'none'}")
    print(f"(checked: {', '.join(HEAVY)}; forbidden: {', '.join(FORBIDDEN)})\n")

    ok_time = results["definitions"]["median_s"] <= TARGET_S
    ok = ok_time and not forbidden
    verdict = "PASS" if ok else "FAIL"
    print(f"{verdict}: definitions median {results['definitions']['median_s']:.2f} s (target <= {TARGET_S:g} s), "
          f"forbidden imports: {forbidden or 'none'}")
    doc = {
        "benchmark": "import_time",
        "date": started,
        "command": command(),
        "machine": facts,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "runs": args.runs,
        "results": {k: {m: round(v, 3) for m, v in r.items()} for k, r in results.items()},
        "ratio_definitions_to_dagster": round(results["definitions"]["median_s"] / base, 3),
        "ratio_torch_to_dagster": round(results["torch"]["median_s"] / base, 3),
        "heavy_imported": heavy,
        "forbidden_imported": forbidden,
        "target_s": TARGET_S,
        "pass": ok,
    }
    write_result(args.output, doc)
    print(json.dumps(doc))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
