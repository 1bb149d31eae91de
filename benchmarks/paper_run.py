"""A paper run of the augmentation benchmark, with what the docs quote from it written to a committed result file.

Runs, in a BENCH_HOME of its own (`--home`, default a temp dir removed afterwards unless `--keep`):

1. `bench augbench run --config CONFIG [--num-items N] [--num-runs R] [--workers W] [--batch-size B] [--rounds K]
   --no-report`, timed from spawn to exit (the paper run's wall time; the libraries run one after another);
2. `bench report` (the warehouse load, the dbt marts and both reports), timed, unless `--no-report`;
3. the augbench tables of the warehouse, loaded in this process into a scratch file of the home, and the
   `augbench_coverage` and `augbench_consistency` checks on them.

The result JSON (`--output`, default `benchmarks/results/paper_run_<config>.json` at the config's own size with all
its transforms, `paper_run_<config>_reduced.json` otherwise) holds the date, the machine (load average at the start,
sampled every 15 s during the run and at the end: the machine may be shared), this command and the bench commands,
the git commit, library versions, wall times, the planned cells and their count by status, the `unstable` (CV >
0.15) and early-stopped cells, both checks, and one summary row per cell (status, reason, median items/s, CV,
speed-up over AlbumentationsX). `tests/platform/test_doc_figures.py` checks the figures docs/augbench.md quotes
from it.

    .venv/bin/python benchmarks/paper_run.py                                    # the full RGB micro paper run
    .venv/bin/python benchmarks/paper_run.py --config configs/paper/rgb-dataloader.yaml \\
        --num-items 16 --num-runs 1 --workers 2 --batch-size 8                   # a family at reduced size
    .venv/bin/python benchmarks/paper_run.py --transforms HorizontalFlip,Rotate --num-items 20 --num-runs 2 \\
        --output benchmarks/results/paper_run_rgb-micro_smoke.json               # a quick check of the script

`--transforms A,B,...` runs a subset of the config's transforms (a copy of the config with that list, same name,
written into the home). Exits with bench's exit code, or 1 when a check fails or a run at the config's own size
takes over 30 min (the paper target). Not a test: never run by pytest.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _result import RESULTS, command, git_state, machine_facts, minutes, now, shown, write_result

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_CONFIG = REPO / "configs" / "paper" / "rgb-micro.yaml"
TARGET_WALL_S = 30 * 60  # a paper row family at its own size (docs/augbench.md); not judged on a reduced run
LOAD_SAMPLE_S = 15.0


class LoadSampler:
    """The 1-minute load average every LOAD_SAMPLE_S seconds while the run goes on."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(LOAD_SAMPLE_S):
            self.samples.append(round(os.getloadavg()[0], 2))

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        s = self.samples
        return {"every_s": LOAD_SAMPLE_S, "samples": len(s), "median": statistics.median(s) if s else None,
                "max": max(s) if s else None}


def bench(argv: list[str], home: Path) -> tuple[float, int]:
    """`bench ARGV` as a child process in `home` (its output to stderr); (wall s, exit code)."""
    env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "bench_assets.cli", *argv], cwd=REPO, env=env,
                       stdout=sys.stderr, stderr=sys.stderr)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        print(f"warning: bench {shlex.join(argv)} exited {r.returncode} after {wall:.0f} s (BENCH_HOME={home})",
              file=sys.stderr)
    return wall, r.returncode


def subset_config(config: Path, transforms: list[str], home: Path) -> Path:
    """A copy of `config` measuring only `transforms` (names checked by bench's own config loader)."""
    import yaml

    doc = yaml.safe_load(config.read_text())
    doc["transforms"] = transforms
    out = home / "configs" / config.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def summarize_cells(home: Path, config_name: str) -> dict[str, Any]:
    """Load the augbench tables into a scratch warehouse of the home; cells, counts and both checks."""
    from bench_assets.augbench import warehouse_checks
    from bench_assets.augbench.warehouse_tables import TABLES
    from bench_assets.platform.warehouse import query, rebuild_warehouse

    wh = home / "paper_run_warehouse.duckdb"
    rebuild_warehouse(home, wh, TABLES)
    planned = query(wh, "SELECT library, transform, planned_status FROM augbench_planned WHERE config = ? "
                        "ORDER BY library, transform", [config_name])
    cells = query(wh, """
        SELECT library, transform, status, reason, repeats, runs, median, cv, unstable, preflight_throughput,
               busy_repeats, speedup_vs_reference, hardware, library_version
        FROM augbench_cells WHERE config = ? ORDER BY library, transform""", [config_name])
    by_status: dict[str, int] = {}
    for c in cells:
        by_status[c["status"]] = by_status.get(c["status"], 0) + 1
    terminal = sum(n for s, n in by_status.items() if s != "error")
    checks = {}
    for name, fn in (("augbench_coverage", warehouse_checks.coverage),
                     ("augbench_consistency", warehouse_checks.consistency)):
        finding = fn(wh)
        checks[name] = {"passed": finding.passed, "description": finding.description}

    def r(x: Any, n: int) -> Any:
        return round(x, n) if isinstance(x, float) else x

    return {
        "planned_cells": len(planned), "cells": len(cells), "terminal_cells": terminal, "by_status": by_status,
        "unstable_ok_cells": sum(1 for c in cells if c["status"] == "ok" and c["unstable"]),
        "busy_ok_cells": sum(1 for c in cells if c["status"] == "ok" and (c["busy_repeats"] or 0) > 0),
        "early_stopped": [{"library": c["library"], "transform": c["transform"],
                           "preflight_items_per_s": r(c["preflight_throughput"], 1)}
                          for c in cells if c["status"] == "early_stopped"],
        "errors": [{"library": c["library"], "transform": c["transform"], "reason": c["reason"]}
                   for c in cells if c["status"] == "error"],
        "hardware": sorted({c["hardware"] for c in cells if c["hardware"]}),
        "checks": checks,
        "per_cell": [{"library": c["library"], "transform": c["transform"], "status": c["status"],
                      "reason": c["reason"], "repeats": c["repeats"], "runs": c["runs"],
                      "median_items_per_s": r(c["median"], 3), "cv": r(c["cv"], 4), "unstable": c["unstable"],
                      "preflight_items_per_s": r(c["preflight_throughput"], 3),
                      "speedup_vs_albumentationsx": r(c["speedup_vs_reference"], 4),
                      "library_version": c["library_version"]} for c in cells],
    }


def doc_sentence(r: dict[str, Any]) -> str:
    """The run in the words docs/augbench.md uses (tests/platform/test_doc_figures.py::_paper_run checks them)."""
    st = r["by_status"]
    early = ", ".join(f"{e['library']} {e['transform']}, preflight {e['preflight_items_per_s']:.1f} items/s"
                      for e in r["early_stopped"])
    checks = ", ".join(f"`{name}` {'passes' if c['passed'] else 'FAILS'}" for name, c in r["checks"].items())
    n_transforms = len({c["transform"] for c in r["per_cell"]})
    subset = "" if r["transforms"] == "paper" else f" ({', '.join(r['transforms'])})"
    errors = len(r["errors"])
    plural = "s" if r["num_runs"] != 1 else ""
    return (f"`{r['command']}` ({n_transforms} transforms x {len(r['libraries'])} CPU libraries, "
            f"{r['num_items']:,} items, {r['num_runs']} run{plural}{subset}; {r['date'][:10]}, load average "
            f"{r['machine']['load_average_1m']:.2f} at the start): {r['run_wall']} wall. "
            f"{r['terminal_cells']}/{r['planned_cells']} cells terminal: {st.get('ok', 0)} ok, "
            f"{st.get('early_stopped', 0)} early-stopped" + (f" ({early})" if early else "")
            + f", {st.get('unsupported', 0)} unsupported with reasons, "
            + (f"{errors} in error" if errors else "no cell in error") + f"; {checks}; "
            f"{r['unstable_ok_cells']} of {st.get('ok', 0)} ok cells are flagged `unstable` (CV > 0.15)."
            + ("" if r["report_wall_s"] is None else
               f" `bench report` after it (dbt marts + both reports): {r['report_wall_s']:.0f} s."))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    ap.add_argument("--num-items", type=int)
    ap.add_argument("--num-runs", type=int)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--transforms", help="comma-separated subset of the config's transforms")
    ap.add_argument("--no-report", action="store_true", help="skip the timed `bench report`")
    ap.add_argument("--home", type=Path, help="BENCH_HOME for the run (default: a temp dir, removed afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the temp BENCH_HOME")
    ap.add_argument("--output", type=Path, help="result JSON (default benchmarks/results/paper_run_<config>.json, "
                                                "_reduced.json when any size flag or --transforms is given)")
    args = ap.parse_args()

    from bench_assets.augbench.config import load_config

    overrides = {"num_items": args.num_items, "num_runs": args.num_runs, "workers": args.workers,
                 "batch_size": args.batch_size}
    reduced = any(v is not None for v in overrides.values()) or bool(args.transforms) or args.rounds != 1
    base = load_config(args.config)
    output = args.output or RESULTS / f"paper_run_{base.name}{'_reduced' if reduced else ''}.json"
    started, facts, git = now(), machine_facts(), git_state()
    home = args.home.expanduser().resolve() if args.home else Path(tempfile.mkdtemp(prefix="paper_run_"))
    temp = args.home is None
    try:
        config = args.config
        if args.transforms:
            config = subset_config(args.config, [t.strip() for t in args.transforms.split(",") if t.strip()], home)
        cfg = load_config(config, overrides)  # what bench will run: refuses a bad override or transform here
        run_argv = ["augbench", "run", "--config", str(config),
                    *[x for k, v in overrides.items() if v is not None for x in (f"--{k.replace('_', '-')}", str(v))],
                    *(("--rounds", str(args.rounds)) if args.rounds != 1 else ()), "--no-report"]
        with LoadSampler() as load:
            run_wall, run_exit = bench(run_argv, home)
        report_wall, report_exit = (None, None) if args.no_report else bench(["report"], home)
        cells = summarize_cells(home, cfg.name)
        from bench_assets.augbench.naming import iter_results_files
        from bench_assets.augbench.results import read_results

        versions = {}
        for path in iter_results_files(home):
            doc = read_results(path)
            if doc is not None and doc.config_name == cfg.name and doc.repeats:
                versions[doc.library] = doc.repeats[-1].versions
    finally:
        if temp and not args.keep:
            shutil.rmtree(home, ignore_errors=True)

    transforms = cfg.transforms if isinstance(cfg.transforms, list) else None
    result = {
        "benchmark": "paper_run", "date": started, "command": command(),
        "bench_commands": [f"bench {shlex.join(shown(a) for a in run_argv)}".replace(str(home), "BENCH_HOME")]
        + ([] if args.no_report else ["bench report"]),
        "machine": facts, "load_average_1m_during_run": load.summary(),
        "load_average_1m_at_end": round(os.getloadavg()[0], 2), "git": git,
        "config": cfg.name, "config_file": shown(args.config), "reduced": reduced,
        "media": cfg.media, "mode": cfg.mode, "device": cfg.device, "libraries": list(cfg.libraries),
        "transforms": "paper" if transforms is None else transforms,
        "num_items": cfg.num_items, "num_runs": cfg.num_runs, "warmup": cfg.warmup, "rounds": args.rounds,
        "workers": cfg.workers, "batch_size": cfg.batch_size,
        "run_wall_s": round(run_wall, 1), "run_wall": minutes(run_wall), "run_exit_code": run_exit,
        "target_wall_s": None if reduced else TARGET_WALL_S,
        "within_target": None if reduced else run_wall <= TARGET_WALL_S,
        "report_wall_s": None if report_wall is None else round(report_wall, 1), "report_exit_code": report_exit,
        "home_kept": not temp or args.keep, "home": str(home) if not temp or args.keep else None,
        "versions": versions,
        **cells,
    }
    write_result(output, result)
    ok_checks = all(c["passed"] for c in cells["checks"].values())
    for name, c in cells["checks"].items():
        print(f"{name}: {'pass' if c['passed'] else 'FAIL'}: {c['description']}")
    print(f"load average: {facts['load_average_1m']} at the start, during {load.summary()}\n")
    print(f"For docs/augbench.md (the figures tests/platform/test_doc_figures.py checks against {shown(output)}):\n")
    print(doc_sentence(result))
    if not reduced:
        print(f"target: {minutes(run_wall)} wall against <= {minutes(TARGET_WALL_S)}: "
              f"{'PASS' if run_wall <= TARGET_WALL_S else 'FAIL'}")
    ok_wall = reduced or run_wall <= TARGET_WALL_S
    return run_exit or (report_exit or 0) or (0 if ok_checks and ok_wall else 1)


if __name__ == "__main__":
    sys.exit(main())
