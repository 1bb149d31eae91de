"""A pytest plugin (tests/conftest.py loads it): the order in which `make test`'s xdist workers take the suite's files.

pytest-xdist's `--dist loadfile` hands out one file at a time, the files with the most tests first. Test count is not
cost: the three system tests (6 tests each) went last, ran side by side on the two workers and slowed each other
down several times over (their servers, daemons, training children and Chromium fight for the same two cores, and
each waits on the others' work: the browser test's module setup took 23 s alone and 141 s in the suite).
This plugin keeps loadfile (a file's tests stay on one worker, module fixtures and order hold) with two changes:
- the system tests are one unit of work, run one after another on one worker, so they never overlap each other;
- that unit goes first, then the files a measured run found costly (HEAVY_S or more of one worker), most expensive
  first (longest first packs two workers best), then the rest in xdist's own order. The costs are read from the last
  committed side-by-side measurement (COSTS: benchmarks/results/suite_time_against.json, this tree's run), so
  re-measuring re-orders; a file the measurement does not know (new, renamed) only runs later, never wrongly, and
  without the file the order is xdist's after the system tests.

Only the order changes: every test runs, with the same fixtures, as with plain loadfile."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

SYSTEM_SCOPE = "system tests (one worker, one after another)"
SYSTEM_FILES = ("tests/platform/test_cluster.py", "tests/platform/test_real_boxes.py",
                "tests/report/test_ui_browser.py")
COSTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "suite_time_against.json"
HEAVY_S = 5.0  # a file that took one worker this long or more is handed out by its cost; cheaper ones in xdist's order


def heavy_files(result: dict[str, Any]) -> tuple[str, ...]:
    """The files of a suite_time result (its "this" run) that cost HEAVY_S or more, most expensive first, the
    system tests left out (they go first as one unit)."""
    files = [f for f in result.get("this", {}).get("files", [])
             if f.get("seconds", 0) >= HEAVY_S and f.get("file") not in SYSTEM_FILES]
    return tuple(f["file"] for f in sorted(files, key=lambda f: -f["seconds"]))


@cache
def measured_heavy_files(path: Path = COSTS) -> tuple[str, ...]:
    """heavy_files of the committed measurement; none when it is missing or unreadable (xdist's order then)."""
    try:
        return heavy_files(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # a file of another shape too
        return ()


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the system tests' shared unit."""
    path = nodeid.split("::", 1)[0]
    return SYSTEM_SCOPE if path in SYSTEM_FILES else path


def rank(scope: str, heavy: tuple[str, ...] | None = None) -> int:
    """Lower goes first: the system tests, then the heavy files in order (the measured ones unless `heavy` is given),
    then everything else (equal rank)."""
    heavy = measured_heavy_files() if heavy is None else heavy
    if scope == SYSTEM_SCOPE:
        return 0
    return 1 + heavy.index(scope) if scope in heavy else 1 + len(heavy)


def next_scope(queue: list[str], heavy: tuple[str, ...] | None = None) -> str:
    """The scope to hand out next from the queue (xdist's order among equals)."""
    return min(queue, key=lambda scope: rank(scope, heavy))  # min keeps the first of equal ranks


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist", None) != "loadfile":
        return None  # another --dist was asked for: xdist's own
    from xdist.scheduler import LoadFileScheduling

    class CostOrderedFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            self.workqueue.move_to_end(next_scope(list(self.workqueue)), last=False)
            super()._assign_work_unit(node)

    return CostOrderedFileScheduling(config, log)
