"""Does our RGB micro paper run rank the libraries the way the published benchmark does?

Runs `bench augbench run --config configs/paper/rgb-micro.yaml --num-items N --num-runs R --no-report` in a
BENCH_HOME of its own (`--home`, default a temp dir removed afterwards unless `--keep`), reads the latest repeat of
each `<library>.results.json`, keeps the median items/s of every `ok` cell and compares them with a published
table of the AlbumentationsX benchmark through `bench_assets.augbench.agreement`, chosen by `--published`:

- `x86` (default): the paper's run, `bench_assets/augbench/data/published_rgb_micro_cpu_x86.csv` (Linux x86_64,
  Google Cloud c4-standard-16, AlbumentationsX 2.2.6, torchvision 0.26.0, Kornia 0.8.2, Pillow 12.2.0, 2,000
  ImageNet images x 3 runs);
- `macos`: the website's run, `bench_assets/augbench/data/published_rgb_micro_cpu.csv` (Apple Silicon macOS,
  AlbumentationsX 2.2.5, same torchvision / Kornia / Pillow, 2,000 ImageNet images x 5 runs);

provenance of each in the `.meta.json` beside it. Compared:

- per library L != albumentationsx, the ratio r = L / albumentationsx on each transform both sides measured, ours
  and published (absolute speeds depend on the machine, ratios far less);
- Spearman rank correlation of our ratios against the published ones, per library (target >= 0.85 each);
- same-winner share: (transform, L) pairs where the faster of L and albumentationsx agrees (target >= 90%);
- outliers: pairs whose ratios differ by more than 3x, each needing an explanation in
  `bench_assets/augbench/data/published_outliers.csv` (`transform,library,table,explanation`; the rows of the
  chosen table and those with an empty table).

`--results DIR` compares result files already on disk instead of running (DIR is a BENCH_HOME, its `augbench/`
folder or a config folder; files of other configs are ignored).

    .venv/bin/python benchmarks/augbench_vs_published.py
    .venv/bin/python benchmarks/augbench_vs_published.py --num-items 20 --num-runs 1        # smoke (not judged)
    .venv/bin/python benchmarks/augbench_vs_published.py --results ~/bench                    # existing results
    .venv/bin/python benchmarks/augbench_vs_published.py --results ~/bench --published macos  # the macOS table

Prints markdown tables and one JSON line, writes the JSON (indented, with the date, machine facts and the command)
to `--output` (default `benchmarks/results/augbench_vs_published.json` for x86,
`benchmarks/results/augbench_vs_published_macos.json` for macos); exits 1 when a target is missed (judged only at the
default size or larger: >= 200 items, >= 3 runs). Not a test: never run by pytest.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _result import machine_facts  # noqa: E402  (benchmarks/, this script's folder)
from _result import shown as _shown  # noqa: E402

from bench_assets.augbench import agreement  # noqa: E402

DEFAULT_CONFIG = REPO / "configs" / "paper" / "rgb-micro.yaml"
OUTPUTS = {"x86": REPO / "benchmarks" / "results" / "augbench_vs_published.json",
           "macos": REPO / "benchmarks" / "results" / "augbench_vs_published_macos.json"}  # default --output
DEFAULT_OUTPUT = OUTPUTS[agreement.DEFAULT_PUBLISHED]
DEFAULTS = {"num_items": 200, "num_runs": 3}  # judged at this size or larger


def run_bench(config: Path, home: Path, num_items: int, num_runs: int,
              rounds: int = 1) -> tuple[list[str], float, int]:
    """`bench augbench run` as a child process (its output goes to stderr); (argv, wall s, exit code).

    A non-zero exit with result files written (cells in error, e.g. a spec the installed library version does not
    take) is reported and compared anyway: those cells are listed as not measured."""
    argv = [sys.executable, "-m", "bench_assets.cli", "augbench", "run", "--config", str(config),
            "--num-items", str(num_items), "--num-runs", str(num_runs), "--no-report",
            *(("--rounds", str(rounds)) if rounds > 1 else ())]
    env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    r = subprocess.run(argv, cwd=REPO, env=env, stdout=sys.stderr, stderr=sys.stderr)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        print(f"warning: {shlex.join(argv)} exited {r.returncode} after {wall:.0f} s (BENCH_HOME={home}); "
              "comparing the cells it measured", file=sys.stderr)
    return argv, wall, r.returncode


def result_files(root: Path, config_name: str) -> list[Path]:
    from bench_assets.augbench.naming import RESULTS_SUFFIX

    return sorted(p for p in root.rglob(f"*{RESULTS_SUFFIX}") if "dagster" not in p.parts
                  and p.parent.name == config_name)


def collect(files: list[Path]) -> tuple[dict[tuple[str, str], float], dict[str, Any]]:
    """Our medians {(library, transform): items/s} of `ok` cells, and what the run was. A cell's median is taken
    over the timed passes of every repeat run with the latest repeat's config (the warehouse's pooling: with
    `--rounds R`, all R fresh-process repeats), when the latest repeat's cell is ok."""
    from bench_assets.augbench.results import read_results
    from bench_assets.augbench.stats import summarize

    ours: dict[tuple[str, str], float] = {}
    info: dict[str, Any] = {"files": [], "statuses": {}, "libraries": {}}
    for path in files:
        doc = read_results(path)
        if doc is None or not doc.repeats:
            continue
        rep = doc.repeats[-1]
        pool = [r for r in doc.repeats if r.config_sha256 == rep.config_sha256]
        counts: dict[str, int] = {}
        for c in rep.cells:
            counts[c.status] = counts.get(c.status, 0) + 1
            passes = [t for r in pool for cell in r.cells if cell.transform == c.transform and cell.status == "ok"
                      for t in cell.throughputs]
            median = summarize(passes)["median"] if c.status == "ok" and passes else None
            if median is not None and median > 0:
                ours[(c.library, c.transform)] = float(median)
        info["files"].append(str(path))
        info["statuses"][doc.library] = counts
        info["libraries"][doc.library] = {
            "repeat": rep.repeat, "repeats_pooled": len(pool), "started": rep.started, "finished": rep.finished,
            "hardware": rep.hardware,
            "versions": rep.versions, "threads": rep.threads, "media": rep.media_description,
            "num_items": doc.config.get("num_items"), "num_runs": doc.config.get("num_runs"),
            "config_sha256": rep.config_sha256, "git": rep.git}
    return ours, info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    ap.add_argument("--num-items", type=int, default=DEFAULTS["num_items"])
    ap.add_argument("--num-runs", type=int, default=DEFAULTS["num_runs"])
    ap.add_argument("--rounds", type=int, default=1,
                    help="bench augbench run --rounds R: every library R times in fresh processes, seeded order; "
                         "the medians pool all R repeats")
    ap.add_argument("--home", type=Path, help="BENCH_HOME for the run (default: a temp dir, removed afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the temp BENCH_HOME")
    ap.add_argument("--results", type=Path, help="compare the result files under this folder; do not run")
    ap.add_argument("--published", choices=list(agreement.PUBLISHED), default=agreement.DEFAULT_PUBLISHED,
                    help="published table to compare with (default %(default)s)")
    ap.add_argument("--output", type=Path,
                    help="JSON to write (default: " + ", ".join(f"{_shown(p)} for {k}" for k, p in OUTPUTS.items())
                    + ")")
    ap.add_argument("--details", action="store_true", help="print every compared (transform, library) pair")
    args = ap.parse_args()
    if args.output is None:
        args.output = OUTPUTS.get(args.published, REPO / "benchmarks" / "results"
                                  / f"augbench_vs_published_{args.published}.json")

    from bench_assets.augbench.config import load_config

    config_name = load_config(args.config).name
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    facts = machine_facts()
    bench_argv: list[str] | None = None
    wall = None
    bench_exit: int | None = None
    temp = None
    if args.results:
        root = args.results.expanduser()
    else:
        if args.home:
            root = args.home.expanduser()
        else:
            temp = root = Path(tempfile.mkdtemp(prefix="augbench_vs_published_"))
    try:
        if not args.results:
            bench_argv, wall, bench_exit = run_bench(args.config, root, args.num_items, args.num_runs, args.rounds)
        files = result_files(root, config_name)
        if not files:
            raise SystemExit(f"no {config_name} result files under {root}")
        ours, info = collect(files)
    finally:
        if temp is not None and not args.keep:
            shutil.rmtree(temp, ignore_errors=True)

    meta = agreement.load_meta(table=args.published)
    source = {"table": args.published, "csv": _shown(agreement.PUBLISHED[args.published][0]),
              **{k: meta.get(k) for k in ("repository", "commit", "commit_date", "source_paths")}}
    result = agreement.compare(ours, source=source, table=args.published)
    sizes = [(v["num_items"] or 0, v["num_runs"] or 0) for v in info["libraries"].values()]
    judged = bool(sizes) and all(n >= DEFAULTS["num_items"] and r >= DEFAULTS["num_runs"] for n, r in sizes)

    libs = info["libraries"]
    hw = sorted({v["hardware"] for v in libs.values()})
    print(f"{config_name}: {len(ours)} ok cells of ours over {', '.join(libs)} "
          f"({', '.join(f'{n} items x {r} runs' for n, r in sorted(set(sizes)))}); hardware {'; '.join(hw)}; "
          f"python {facts['python']}, {facts['cpus']} cpus, load average {facts['load_average_1m']}"
          + (f"; run took {wall:.0f} s" if wall is not None else f"; results read from {root}"))
    run = meta.get("published_run") or {}
    hw_pub = meta.get("hardware_stated") or {}
    print(f"published table {args.published}: {meta['repository']} @ {meta['commit'][:7]}"
          f" (commit {str(meta.get('commit_date') or 'date not recorded')[:25].split('T')[0]}; run published "
          f"{str(run.get('published_at_utc') or '?')[:10]}), {hw_pub.get('machine', '?')}, "
          f"{hw_pub.get('platform', '?')}\n")
    for lib, counts in info["statuses"].items():
        print(f"- {lib}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    print()
    print(result.markdown(details=args.details))
    verdict = ("PASS" if result.passes else "FAIL") if judged else "NOT JUDGED (below the target's size)"
    print(f"\n{verdict}")

    doc = {
        "benchmark": "augbench_vs_published", "date": started, "config": config_name, "published": args.published,
        "num_items": sizes[0][0] if len(set(sizes)) == 1 else None,
        "num_runs": sizes[0][1] if len(set(sizes)) == 1 else None,
        "command": shlex.join([_shown(Path(sys.executable)), *sys.argv]),
        "bench_command": (f"BENCH_HOME={_shown(root)} bench " + shlex.join(_shown(a) for a in bench_argv[3:]))
        if bench_argv else None,
        "results_root": _shown(root), "home_kept": temp is None or args.keep,
        "run_wall_s": round(wall, 1) if wall is not None else None, "bench_exit_code": bench_exit,
        "machine": facts, "hardware": hw,
        "versions": {lib: v["versions"] for lib, v in libs.items()},
        "sizes": {lib: {"num_items": v["num_items"], "num_runs": v["num_runs"], "repeat": v["repeat"]}
                  for lib, v in libs.items()},
        "statuses": info["statuses"], "ok_cells": len(ours),
        "ours_median_items_per_s": {f"{t}/{lib}": round(v, 3) for (lib, t), v in sorted(ours.items())},
        "agreement": result.to_dict(),
        "judged": judged, "pass": result.passes if judged else None,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2) + "\n")
    line = {k: doc[k] for k in ("benchmark", "date", "config", "published", "num_items", "num_runs", "ok_cells",
                                "judged", "pass")}
    line.update({"spearman": {lib.library: lib.spearman for lib in result.libraries},
                 "same_winner": result.same_winner,
                 "same_winner_by_library": {lib.library: lib.same_winner for lib in result.libraries},
                 "pairs": {lib.library: lib.pairs for lib in result.libraries},
                 "outliers": len(result.outliers), "unexplained": [list(x) for x in
                                                                   doc["agreement"]["unexplained"]],
                 "output": str(args.output)})
    print(json.dumps(line))
    return 0 if result.passes or not judged else 1


if __name__ == "__main__":
    sys.exit(main())
