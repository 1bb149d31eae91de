"""How long the test suite takes: `make test`'s pytest run (or `make test-fast`'s selection with `--fast`) timed
whole, with the CPU time it used and where the time went by file, written to a committed result file.

Runs `python -m pytest -q -n WORKERS` from the repository root exactly as the Makefile does (the same selection, the
same workers, the same environment: one thread per native pool, bytecode caches on), with a JUnit XML report in a
temp dir for the per-test times. The CPU time is user + system of the pytest process tree
(`getrusage(RUSAGE_CHILDREN)` around it, as `/usr/bin/time` measures): the cluster test's servers and Celery workers
are daemons reaped by init, so their CPU is not in it; the machine's busy time from `/proc/stat` over the run (every
process, so the suite's own on an otherwise idle machine) includes them. Per-file seconds are the sum of the file's
test times (setup, call and teardown; a module fixture's setup is counted on the file's first test) on the worker
that ran it: the file's share of one worker, not of the machine.

The result JSON (`benchmarks/results/suite_time.json`, `suite_time_fast.json` with `--fast`) holds the date, the
machine (load average at the start and at the end: a shared machine slows the run), this command, the git commit, the
wall and CPU time, the outcome counts, every file's seconds and the 15 slowest tests. docs/testing.md quotes it and
`tests/platform/test_doc_figures.py` checks the quote.

    .venv/bin/python benchmarks/suite_time.py            # make test's run: ~25-40 min on 2 cores
    .venv/bin/python benchmarks/suite_time.py --fast     # make test-fast's: ~1-1.5 min

Needs what `make test` installs first (`scripts/system_deps.sh`: Chromium, Redis, PostgreSQL). Exits with pytest's
exit code. Not a test: never run by pytest.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from _result import RESULTS, command, git_state, machine_facts, minutes, now, write_result

REPO = Path(__file__).resolve().parent.parent
FAST_SELECTION = "not slow and not integration"  # the Makefile's test-fast target


def machine_busy_s() -> float | None:
    """CPU seconds every CPU of the machine has been busy since boot (not idle, not waiting on I/O): /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # user nice system idle iowait irq softirq steal


def pytest_args(workers: int, fast: bool = False, junit: Path | None = None) -> list[str]:
    """`make test`'s pytest command line (`make test-fast`'s with `fast`), with a JUnit report when asked."""
    args = [sys.executable, "-m", "pytest", "-q", "-n", str(workers), "-p", "no:cacheprovider"]
    return args + ([f"--junitxml={junit}"] if junit else []) + (["-m", FAST_SELECTION] if fast else [])


def makefile_env() -> dict[str, str]:
    """This environment as the Makefile passes it to pytest: bytecode caches on, one thread per native pool."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return env


def file_of(case: ET.Element) -> str:
    """tests/rf100vl/test_campaign.py from a JUnit testcase (classname `tests.rf100vl.test_campaign[.Class]`)."""
    parts = case.get("classname", "").split(".")
    while parts and not parts[-1].startswith("test_"):  # a class inside the file
        parts.pop()
    return "/".join(parts) + ".py" if parts else "?"


def read_junit(path: Path) -> dict[str, Any]:
    """Outcome counts, seconds and test count per file, and the slowest tests, from pytest's JUnit XML."""
    outcomes = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    per_file: dict[str, list[float]] = defaultdict(list)
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0.0)
        kinds = {child.tag for child in case}
        if "error" in kinds:
            outcomes["errors"] += 1
        elif "failure" in kinds:
            outcomes["failed"] += 1
        elif "skipped" in kinds:
            outcomes["skipped"] += 1
        else:
            outcomes["passed"] += 1
        f = file_of(case)
        per_file[f].append(seconds)
        tests.append({"test": f"{f}::{case.get('name')}", "seconds": round(seconds, 1)})
    files = sorted(({"file": f, "seconds": round(sum(s), 1), "tests": len(s)} for f, s in per_file.items()),
                   key=lambda r: -r["seconds"])
    slowest = sorted(tests, key=lambda r: -r["seconds"])[:15]
    return {"outcomes": outcomes, "tests": len(tests), "files": files, "slowest": slowest}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="make test-fast's selection (no Dagster runs, dbt, servers)")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (the Makefile's TEST_WORKERS)")
    ap.add_argument("--output", type=Path)
    args = ap.parse_args(argv)
    output = args.output or RESULTS / ("suite_time_fast.json" if args.fast else "suite_time.json")

    started_at, facts = now(), machine_facts()
    env = makefile_env()
    with tempfile.TemporaryDirectory(prefix="suite-time-") as tmp:
        junit = Path(tmp) / "junit.xml"
        before, busy_before = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy_s()
        t0 = time.perf_counter()
        code = subprocess.run(pytest_args(args.workers, args.fast, junit), cwd=REPO, env=env).returncode
        wall = time.perf_counter() - t0
        after, busy_after = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy_s()
        if not junit.exists():
            print(f"suite_time: pytest exited {code} without a report; nothing written", file=sys.stderr)
            return code or 1
        found = read_junit(junit)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    end_load = os.getloadavg()
    doc = {
        "benchmark": "suite_time", "date": started_at, "machine": facts,
        "load_average_at_end_1m": round(end_load[0], 2), "command": command(), "git": git_state(),
        "selection": f"make test-fast (-m '{FAST_SELECTION}')" if args.fast else "make test (the whole suite)",
        "workers": args.workers, "pytest_exit_code": code,
        "wall": minutes(wall), "cpu": minutes(cpu), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "cpu_per_wall": round(cpu / wall, 2),
        "machine_busy_s": None if busy_before is None or busy_after is None else round(busy_after - busy_before, 1),
        **found,
    }
    write_result(output, doc)
    o = found["outcomes"]
    print(f"{found['tests']} tests: {o['passed']} passed, {o['failed']} failed, {o['errors']} errors, "
          f"{o['skipped']} skipped in {minutes(wall)} wall, {minutes(cpu)} CPU in pytest's process tree "
          f"({cpu / wall:.2f} cores busy), machine busy {doc['machine_busy_s']} s")
    for row in found["files"][:10]:
        print(f"  {row['seconds']:8.1f} s  {row['file']} ({row['tests']} tests)")
    return code


if __name__ == "__main__":
    sys.exit(main())
