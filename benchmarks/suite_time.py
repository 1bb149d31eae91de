"""How long the test suite takes: `make test`'s pytest run (or `make test-fast`'s selection with `--fast`) timed
whole, with the CPU time it used and where the time went by file, written to a committed result file.

Runs `python -m pytest -q -n WORKERS` from the repository root exactly as the Makefile does (the same selection, the
same workers, the same environment: one thread per native pool, bytecode caches on), with a JUnit XML report in a
temp dir for the per-test times. Before the timed run the checkout's bytecode caches are written (`compileall` and one
`pytest --collect-only`, untimed), as an edit loop's second run finds them: a fresh worktree otherwise pays for
compiling and assertion rewriting, which says nothing about the tests. The CPU time is user + system of the pytest
process tree (`getrusage(RUSAGE_CHILDREN)` around it, as `/usr/bin/time` measures): the cluster test's servers and
Celery workers are daemons reaped by init, so their CPU is not in it; the machine's busy time from `/proc/stat` over
the run (every process, so the suite's own on an otherwise idle machine) includes them. Per-file seconds are the sum
of the file's test times (setup, call and teardown; a module fixture's setup is counted on the file's first test) on
the worker that ran it: the file's share of one worker, not of the machine.

The result JSON (`benchmarks/results/suite_time.json`, `suite_time_fast.json` with `--fast`) holds the date, the
machine (load average at the start and at the end: a shared machine slows the run), this command, the git commit, the
wall and CPU time, the outcome counts, every file's seconds and the 15 slowest tests. docs/testing.md quotes it and
`tests/platform/test_doc_figures.py` checks the quote.

    .venv/bin/python benchmarks/suite_time.py            # make test's run: ~25-40 min on 2 cores
    .venv/bin/python benchmarks/suite_time.py --fast     # make test-fast's: ~1-1.5 min
    .venv/bin/python benchmarks/suite_time.py --against a4f80b8 [--fast] [--repeat 3]   # side by side, one file

`--repeat N` (with `--against`) alternates the two suites N times and compares the medians: two runs of
test-fast on one idle host differ by up to a sixth, more than the difference a change makes.

`--against COMMIT` runs that commit's suite first (a detached git worktree in a temp dir, `PYTHONPATH` pointing at
it so every `bench` and child process imports its code), then this checkout's, on the same machine with the same
venv, workers and arguments, and writes `suite_time_against.json` (`suite_time_against_fast.json`): both runs, the
ratios this/that of wall time and of the machine's busy CPU seconds, and the test ids: every id of that commit must
still be here or have its move recorded in `benchmarks/suite_moves.json` (`{"old id": "new id"}`); the ones that
are neither are listed as `missing`.

Needs what `make test` installs first (`scripts/system_deps.sh`: Chromium, Redis, PostgreSQL). Exits with pytest's
exit code. Not a test: never run by pytest.
"""

from __future__ import annotations

import argparse
import json
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

from bench_assets.platform.provenance import machine_busy_s

REPO = Path(__file__).resolve().parent.parent
FAST_SELECTION = "not slow and not integration"  # the Makefile's test-fast target


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


def test_id(case: ET.Element) -> str:
    """pytest's node id of a JUnit testcase: `tests/x/test_y.py::Class::test_z[param]` (the class when there is one)."""
    parts = case.get("classname", "").split(".")
    inner = []
    while parts and not parts[-1].startswith("test_"):
        inner.insert(0, parts.pop())
    return "::".join([file_of(case), *inner, case.get("name", "?")])


def read_junit(path: Path) -> dict[str, Any]:
    """Outcome counts, seconds and test count per file, the slowest tests and every test id, from pytest's JUnit
    XML."""
    outcomes = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    per_file: dict[str, list[float]] = defaultdict(list)
    tests, ids = [], []
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
        ids.append(test_id(case))
    files = sorted(({"file": f, "seconds": round(sum(s), 1), "tests": len(s)} for f, s in per_file.items()),
                   key=lambda r: -r["seconds"])
    slowest = sorted(tests, key=lambda r: -r["seconds"])[:15]
    return {"outcomes": outcomes, "tests": len(tests), "files": files, "slowest": slowest, "ids": sorted(ids)}


def warm(repo: Path, env: dict[str, str], fast: bool) -> None:
    """The bytecode caches of the checkout at `repo` written before it is timed, as a second `make test` in the same
    checkout finds them: every module compiled, and every test file's assertion rewrite cached by one collection.
    Both sides of `--against` get the same, so neither pays for a cold tree the other does not."""
    dirs = [d for d in ("bench_assets", "benchmarks", "tests", "scripts") if (repo / d).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *dirs], cwd=repo, env=env, capture_output=True)
    collect = [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"]
    subprocess.run(collect + (["-m", FAST_SELECTION] if fast else []), cwd=repo, env=env, capture_output=True)


def run_suite(repo: Path, workers: int, fast: bool) -> dict[str, Any]:
    """`make test`'s pytest run (`make test-fast`'s with `fast`) of the checkout at `repo`, timed after `warm`:
    wall, CPU of the pytest process tree, the machine's busy seconds, outcomes, per-file seconds and every test id."""
    env = {**makefile_env(), "PYTHONPATH": str(repo)}
    warm(repo, env, fast)
    with tempfile.TemporaryDirectory(prefix="suite-time-") as tmp:
        junit = Path(tmp) / "junit.xml"
        before, busy_before = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy_s()
        t0 = time.perf_counter()
        code = subprocess.run(pytest_args(workers, fast, junit), cwd=repo, env=env).returncode
        wall = time.perf_counter() - t0
        after, busy_after = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy_s()
        if not junit.exists():
            raise SystemExit(f"suite_time: pytest exited {code} in {repo} without a report; nothing written")
        found = read_junit(junit)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"pytest_exit_code": code, "wall": minutes(wall), "cpu": minutes(cpu), "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "cpu_per_wall": round(cpu / wall, 2),
            "machine_busy_s": None if busy_before is None or busy_after is None else round(busy_after - busy_before, 1),
            **found}


def say(run: dict[str, Any], label: str = "") -> None:
    o = run["outcomes"]
    print(f"{label}{run['tests']} tests: {o['passed']} passed, {o['failed']} failed, {o['errors']} errors, "
          f"{o['skipped']} skipped in {run['wall']} wall, {run['cpu']} CPU in pytest's process tree "
          f"({run['cpu_per_wall']:.2f} cores busy), machine busy {run['machine_busy_s']} s")
    for row in run["files"][:10]:
        print(f"  {row['seconds']:8.1f} s  {row['file']} ({row['tests']} tests)")


MOVES = REPO / "benchmarks" / "suite_moves.json"


def compare_ids(before: list[str], after: list[str], moves: dict[str, str]) -> dict[str, Any]:
    """Which test ids of the earlier run are here, moved (recorded in `moves` and the new id present) or missing."""
    here = set(after)
    moved = {old: new for old, new in moves.items() if old in before and old not in here and new in here}
    missing = sorted(t for t in before if t not in here and t not in moved)
    return {"before": len(before), "after": len(after), "kept": sum(t in here for t in before), "moved": moved,
            "missing": missing, "added": len(here - set(before))}


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 3)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One side of `--against` over its repeats: the run of median wall time (its files, slowest tests and ids),
    with the median wall, CPU and busy seconds of all of them and each run's own in `runs`."""
    ordered = sorted(runs, key=lambda r: r["wall_s"])
    mid = dict(ordered[len(ordered) // 2])

    def med(key: str) -> float | None:
        values = sorted(r[key] for r in runs if r[key] is not None)
        return values[len(values) // 2] if values else None

    mid.update(wall_s=med("wall_s"), cpu_s=med("cpu_s"), machine_busy_s=med("machine_busy_s"),
               pytest_exit_code=max(r["pytest_exit_code"] for r in runs),
               runs=[{k: r[k] for k in ("wall_s", "cpu_s", "machine_busy_s", "pytest_exit_code")} for r in runs])
    mid.update(wall=minutes(mid["wall_s"]), cpu=minutes(mid["cpu_s"]),
               cpu_per_wall=round(mid["cpu_s"] / mid["wall_s"], 2))
    return mid


def against(commit: str, workers: int, fast: bool, repeat: int = 1) -> dict[str, Any]:
    """That commit's suite, then this checkout's, side by side; with `repeat` > 1 they alternate that many times
    and each side reports its medians (a busy neighbour or a slow minute then lands on both sides)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{commit}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    baselines, currents = [], []
    with tempfile.TemporaryDirectory(prefix="suite-against-") as tmp:
        tree = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha], check=True,
                       capture_output=True)
        try:
            (tree / ".venv").symlink_to(REPO / ".venv")  # tests that run .venv/bin/bench find it
            for i in range(repeat):
                print(f"suite_time: the suite of {sha[:12]} (in {tree}), run {i + 1} of {repeat}", flush=True)
                baselines.append(run_suite(tree, workers, fast))
                say(baselines[-1], f"{sha[:12]}: ")
                print(f"suite_time: the suite of this checkout, run {i + 1} of {repeat}", flush=True)
                currents.append(run_suite(REPO, workers, fast))
                say(currents[-1], "this checkout: ")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)
    baseline, current = median_run(baselines), median_run(currents)
    moves = json.loads(MOVES.read_text()) if MOVES.is_file() else {}
    return {"against": {"commit": sha, **baseline}, "this": {"git": git_state(), **current},
            "wall_ratio": ratio(current["wall_s"], baseline["wall_s"]),
            "machine_busy_ratio": ratio(current["machine_busy_s"], baseline["machine_busy_s"]),
            "cpu_ratio": ratio(current["cpu_s"], baseline["cpu_s"]),
            "ids": compare_ids(baseline["ids"], current["ids"], moves)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="make test-fast's selection (no Dagster runs, dbt, servers)")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (the Makefile's TEST_WORKERS)")
    ap.add_argument("--against", metavar="COMMIT", help="run that commit's suite first and compare (one result file)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --against: alternate the two suites this many times and compare medians")
    ap.add_argument("--output", type=Path)
    args = ap.parse_args(argv)
    name = "suite_time_against" if args.against else "suite_time"
    output = args.output or RESULTS / f"{name}{'_fast' if args.fast else ''}.json"

    started_at, facts = now(), machine_facts()
    head = {"benchmark": name, "date": started_at, "machine": facts, "command": command(),
            "selection": f"make test-fast (-m '{FAST_SELECTION}')" if args.fast else "make test (the whole suite)",
            "workers": args.workers}
    if args.against:
        doc = {**head, "repeat": args.repeat, **against(args.against, args.workers, args.fast, args.repeat)}
        doc["load_average_at_end_1m"] = round(os.getloadavg()[0], 2)
        write_result(output, doc)
        ids = doc["ids"]
        print(f"wall x{doc['wall_ratio']}, machine busy x{doc['machine_busy_ratio']}, pytest CPU x{doc['cpu_ratio']}; "
              f"test ids: {ids['kept']} of {ids['before']} kept, {len(ids['moved'])} moved, {len(ids['missing'])} "
              f"missing, {ids['added']} added -> {output}")
        return doc["this"]["pytest_exit_code"] or doc["against"]["pytest_exit_code"]
    run = run_suite(REPO, args.workers, args.fast)
    run.pop("ids")
    doc = {**head, "load_average_at_end_1m": round(os.getloadavg()[0], 2), "git": git_state(), **run}
    write_result(output, doc)
    say(run)
    return run["pytest_exit_code"]


if __name__ == "__main__":
    sys.exit(main())
