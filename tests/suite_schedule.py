"""A pytest plugin (tests/conftest.py loads it): the order in which `make test`'s xdist workers take the suite's files.

pytest-xdist's `--dist loadfile` hands out one file at a time, the files with the most tests first. Test count is not
cost: the three system tests (6 tests each) went last, ran side by side on the two workers and slowed each other
down several times over (their servers, daemons, training children and Chromium fight for the same two cores, and
each waits on the others' work: the browser test's module setup took 23 s alone and 141 s in the suite).
This plugin keeps loadfile (a file's tests stay on one worker, module fixtures and order hold) with three changes:
- the system tests are one unit of work, run one after another on one worker, so they never overlap each other;
- the light files whose tests import torch in the pytest worker (TORCH_FILES) are one unit too, so one worker pays
  for importing torch and torchvision (test-fast's largest import) where each worker that took one of them paid
  it: `make test-fast` selects two of them, which its workers used to split;
- the system unit goes first, then the units a measured run found costly (HEAVY_S or more of one worker, a unit's
  files summed), most expensive first (longest first packs two workers best), then the rest in xdist's own order.
  The costs are read from the last committed side-by-side measurement (COSTS:
  benchmarks/results/suite_time_against.json, this tree's run), so re-measuring re-orders; a file the measurement
  does not know (new, renamed) only runs later, never wrongly, and without the file the order is xdist's after the
  system tests.

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
TORCH_SCOPE = "files importing torch in the worker (one worker)"
TORCH_FILES = ("tests/augbench/test_adapters.py", "tests/augbench/test_equivalence.py",
               "tests/augbench/test_runners.py", "tests/rf100vl/test_child_checkpoints.py")
UNITS = {SYSTEM_SCOPE: SYSTEM_FILES, TORCH_SCOPE: TORCH_FILES}
HEAVY_S = 5.0  # a unit that took one worker this long or more is handed out by its cost; cheaper ones in xdist's order


def heavy_files(result: dict[str, Any]) -> tuple[str, ...]:
    """The units (files, or TORCH_SCOPE for its files together) of a suite_time result (its "this" run) that cost
    HEAVY_S or more, most expensive first, the system tests left out (they go first as one unit)."""
    cost: dict[str, float] = {}
    for f in result.get("this", {}).get("files", []):
        scope = scope_of(f["file"])
        cost[scope] = cost.get(scope, 0.0) + f.get("seconds", 0)
    heavy = [(scope, s) for scope, s in cost.items() if s >= HEAVY_S and scope != SYSTEM_SCOPE]
    return tuple(scope for scope, _ in sorted(heavy, key=lambda item: -item[1]))


@cache
def measured_heavy_files(path: Path = COSTS) -> tuple[str, ...]:
    """heavy_files of the committed measurement; none when it is missing or unreadable (xdist's order then)."""
    try:
        return heavy_files(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # a file of another shape too
        return ()


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the unit (UNITS) its file shares."""
    path = nodeid.split("::", 1)[0]
    return next((scope for scope, files in UNITS.items() if path in files), path)


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
