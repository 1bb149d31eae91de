"""Warehouse + report speed on a synthetic campaign of 20 models x 100 datasets.

Targets: the loader (`rebuild_warehouse`) plus the full dbt build of the report (`build_report_db`: every
staging model and mart, and every dbt test) <= 30 s on this machine; each campaign-check query <= 1 s.

Setup: `tests/synthetic_campaign.py::make_campaign(home, 20, 100)` writes the artifacts a finished campaign
leaves (2,000 run dirs with stats.json, result.json of 100 epochs and a small best.pt; 2,000 score records
with their predictions), plus one imported submission. Generation is not timed.

Measured (each `--repeat` times, median reported, fresh processes not needed: nothing is cached between
repeats except the OS page cache, which is warm):
- `rebuild_warehouse`: all tables into a new file, renamed into place;
- `build_report_db`: `dbt build` into a temp report DB, renamed into place, starting from the parse the previous
  build kept (what every build after the first does);
- baseline in the same run: the same build with no kept parse (the kept file removed first: dbt parses the whole
  project, as every build did before 2026-12-03), wall and CPU (user + system of the dbt process);
- baseline in the same run: `dbt parse` alone (dbt's own start-up and project parse, the floor of any dbt
  invocation), so the ratio says how much of the build is our SQL;
- each check of `bench_assets/rf100vl/report/warehouse_checks.py` against the built warehouse (provenance hashes
  the 6,000 small artifact files; its sha256 cache is emptied before each timing, so this is the cold cost).

    .venv/bin/python benchmarks/report_speed.py [--models 20] [--datasets 100] [--repeat 3]

The dbt test count of the project the build ran (from the parsed manifest, `prepare_manifest()`) is recorded
with the timings: the build's cost grows with it.

Prints a markdown table and one JSON line, writes the JSON (date, machine with the load average at the start,
command, dbt test and model counts, the figures) to `--output` (default `benchmarks/results/report_speed.json`,
which the docs quote); exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _result import RESULTS, command, machine_facts, now, shown, write_result  # noqa: E402

from bench_assets.augbench.warehouse_tables import TABLES as AUGBENCH_TABLES  # noqa: E402
from bench_assets.platform.warehouse import rebuild_warehouse  # noqa: E402
from bench_assets.rf100vl.report import warehouse_checks as cc  # noqa: E402
from bench_assets.rf100vl.report.warehouse_tables import TABLES as RF100VL_TABLES  # noqa: E402
from tests.synthetic_campaign import make_campaign  # noqa: E402

TABLES = (*RF100VL_TABLES, *AUGBENCH_TABLES)  # every table the report's loader builds

OUTPUT = RESULTS / "report_speed.json"
LOAD_AND_BUILD_TARGET_S = 30.0
CHECK_TARGET_S = 1.0


def _timed(fn, *args, **kwargs) -> tuple[float, object]:  # noqa: ANN001
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed_build(build_report_db, home: Path, *, kept_parse: bool) -> tuple[float, float, dict]:  # noqa: ANN001
    """(wall s, CPU s of dbt, marts) of one report build, from the kept parse or after removing it."""
    from bench_assets.report.dbt_build import kept_parses

    if not kept_parse:
        for kept in kept_parses():
            kept.unlink()
    cpu0 = _children_cpu_s()
    t, marts = _timed(build_report_db, home)
    return t, _children_cpu_s() - cpu0, marts


def _dbt_parse_seconds(home: Path) -> float:
    # A throw-away target (and log) folder: dbt_report/target/ holds the manifest the code location loads, which
    # only prepare_manifest() may write.
    with tempfile.TemporaryDirectory(prefix="bench-dbt-parse-") as scratch:
        env = {**os.environ, "BENCH_HOME": str(home), "DBT_TARGET_PATH": scratch, "DBT_LOG_PATH": scratch}
        t0 = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("dbt")), "parse", "--project-dir",
                        str(REPO / "dbt_report"), "--profiles-dir", str(REPO / "dbt_report"), "--quiet"], env=env,
                       check=True, capture_output=True)
        return time.perf_counter() - t0


def dbt_project_counts() -> dict[str, int]:
    """Tests, models and sources of the dbt project, from its manifest (parsed first when missing or stale)."""
    from bench_assets.report.dbt_project import prepare_manifest

    nodes = json.loads(prepare_manifest().read_text())
    kinds = [n["resource_type"] for n in nodes["nodes"].values()]
    return {"tests": kinds.count("test"), "models": kinds.count("model"), "sources": len(nodes["sources"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--datasets", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--output", type=Path, default=OUTPUT, help=f"result JSON (default {shown(OUTPUT)})")
    args = ap.parse_args()
    started, facts = now(), machine_facts()
    dbt_counts = dbt_project_counts()

    from bench_assets.report.dbt_build import build_report_db
    from bench_assets.rf100vl.submission.build import build_submission, import_submission

    work = Path(tempfile.mkdtemp(prefix="bench-report-speed-"))
    home = work / "bench"
    os.environ["BENCH_HOME"] = str(home)
    try:
        t_gen, _ = _timed(make_campaign, home, args.models, args.datasets, 0)
        doc = build_submission(home, "syna-t", tree={"commit": "x", "dirty": False, "changed_files": []})
        doc["model"]["name"] = "published-lab-m"
        (work / "published.json").write_text(json.dumps(doc))
        import_submission(home, work / "published.json")
        wh = home / "warehouse.duckdb"
        loads, builds, parses, full_builds, cpus, full_cpus = [], [], [], [], [], []
        counts: dict = {}
        marts: dict = {}
        for _ in range(args.repeat):
            t, counts = _timed(rebuild_warehouse, home, wh, TABLES)
            loads.append(t)
            t, cpu, _ = _timed_build(build_report_db, home, kept_parse=False)
            full_builds.append(t)
            full_cpus.append(cpu)
            t, cpu, marts = _timed_build(build_report_db, home, kept_parse=True)
            builds.append(t)
            cpus.append(cpu)
            parses.append(_dbt_parse_seconds(home))
        checks = {}
        cache = home / "cache" / "bench_sha.json"
        for fn in (cc.selection_vs_test, cc.adjacent_size_gap, cc.coverage, cc.protocol_conformance,
                   cc.scoring_integrity, cc.provenance):
            times = []
            for _ in range(args.repeat):
                cache.unlink(missing_ok=True)
                kwargs = {"cache_file": cache} if fn is cc.provenance else {}
                t, finding = _timed(fn, wh, **kwargs)
                times.append(t)
                if not finding.passed:
                    print(f"warning: {fn.__name__} failed on clean synthetic data: {finding.description}",
                          file=sys.stderr)
            checks[fn.__name__] = statistics.median(times)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    load, build, parse, full, cpu, full_cpu = (statistics.median(x) for x in
                                               (loads, builds, parses, full_builds, cpus, full_cpus))
    total = load + build
    print(f"synthetic campaign: {args.models} models x {args.datasets} datasets (+1 imported submission), "
          f"generated in {t_gen:.1f} s; rows: {counts}")
    print(f"marts: {marts}")
    print(f"dbt project: {dbt_counts['tests']} tests, {dbt_counts['models']} models; load average "
          f"{facts['load_average_1m']} at the start ({facts['cpus']} cpus)\n")
    print("| step | median s | target | ratio |")
    print("|---|---|---|---|")
    print(f"| loader (rebuild_warehouse) | {load:.2f} | | |")
    print(f"| dbt build of the report | {build:.2f} | | {build / parse:.2f}x `dbt parse` ({parse:.2f} s) |")
    print(f"| dbt build with no kept parse (baseline) | {full:.2f} | | CPU {full_cpu:.2f} s |")
    print(f"| loader + dbt build | {total:.2f} | <= {LOAD_AND_BUILD_TARGET_S:g} s | |")
    print(f"\ndbt build CPU: {cpu:.2f} s from the kept parse, {full_cpu:.2f} s without ({cpu / full_cpu:.2f}x)")
    for name, t in checks.items():
        print(f"| check `{name}` | {t:.3f} | <= {CHECK_TARGET_S:g} s | |")
    ok = total <= LOAD_AND_BUILD_TARGET_S and all(t <= CHECK_TARGET_S for t in checks.values())
    doc = {"benchmark": "report_speed", "date": started, "command": command(), "machine": facts,
           "load_average_1m_at_end": round(os.getloadavg()[0], 2), "repeat": args.repeat,
           "models": args.models, "datasets": args.datasets, "rows": counts, "marts": marts,
           "dbt_tests": dbt_counts["tests"], "dbt_models": dbt_counts["models"],
           "generation_s": round(t_gen, 2), "load_s": round(load, 3), "dbt_build_s": round(build, 3),
           "dbt_parse_s": round(parse, 3), "dbt_build_to_parse": round(build / parse, 3), "total_s": round(total, 3),
           "dbt_build_full_parse_s": round(full, 3), "dbt_build_cpu_s": round(cpu, 3),
           "dbt_build_full_parse_cpu_s": round(full_cpu, 3), "kept_parse_cpu_ratio": round(cpu / full_cpu, 3),
           "samples_s": {"load": [round(x, 3) for x in loads], "dbt_build": [round(x, 3) for x in builds],
                         "dbt_parse": [round(x, 3) for x in parses],
                         "dbt_build_full_parse": [round(x, 3) for x in full_builds],
                         "dbt_build_cpu": [round(x, 3) for x in cpus],
                         "dbt_build_full_parse_cpu": [round(x, 3) for x in full_cpus]},
           "checks_s": {k: round(v, 4) for k, v in checks.items()},
           "targets": {"load_and_build_s": LOAD_AND_BUILD_TARGET_S, "check_s": CHECK_TARGET_S}, "ok": ok}
    write_result(args.output, doc)
    print(json.dumps(doc))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
