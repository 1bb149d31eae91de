"""A pytest plugin (tests/conftest.py loads it): the suite's cost at the end of every run, as `make test` prints the
slowest tests: wall time, the machine's busy CPU seconds over the run (every process: the suite's own on an otherwise
idle machine, servers and training children included), the CPU of pytest's own process tree reaped so far, and the
ten files that cost the most (the sum of their tests' setup, call and teardown seconds on the worker that ran them).
benchmarks/suite_time.py measures the same figures into a result file."""

from __future__ import annotations

import resource
import time
from collections import defaultdict

import pytest

from bench_assets.platform.provenance import machine_busy_s

FILES_SHOWN = 10
_state: dict[str, object] = {}
_per_file: dict[str, float] = defaultdict(float)
_tests_per_file: dict[str, set[str]] = defaultdict(set)


def _tree_cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def pytest_sessionstart(session: pytest.Session) -> None:
    _state.update(t0=time.perf_counter(), busy0=machine_busy_s(), cpu0=_tree_cpu_s())


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::")[0]
    _per_file[path] += report.duration
    _tests_per_file[path].add(report.nodeid)


def cost_lines(wall: float, busy: float | None, tree_cpu: float, per_file: dict[str, float],
               tests: dict[str, set[str]]) -> list[str]:
    """The summary's lines."""
    busy_text = "not measured" if busy is None else f"{busy:.0f} s ({busy / wall:.2f} cores)"
    lines = [f"wall {wall:.0f} s; machine busy {busy_text}; pytest's process tree {tree_cpu:.0f} s CPU"]
    for path, seconds in sorted(per_file.items(), key=lambda kv: -kv[1])[:FILES_SHOWN]:
        lines.append(f"{seconds:8.1f} s  {path} ({len(tests[path])} tests)")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or "t0" not in _state or not _per_file:
        return  # an xdist worker (the controller sums every worker's reports), or nothing ran
    busy0 = _state["busy0"]
    busy1 = machine_busy_s()
    busy = None if busy0 is None or busy1 is None else busy1 - float(busy0)  # type: ignore[arg-type]
    wall = time.perf_counter() - float(_state["t0"])  # type: ignore[arg-type]
    terminalreporter.section(f"suite cost: the {FILES_SHOWN} most expensive files")
    for line in cost_lines(wall, busy, _tree_cpu_s() - float(_state["cpu0"]), _per_file,  # type: ignore[arg-type]
                           _tests_per_file):
        terminalreporter.write_line(line)
