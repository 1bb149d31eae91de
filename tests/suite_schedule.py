"""A pytest plugin (tests/conftest.py loads it): the order in which `make test`'s xdist workers take the suite's files.

pytest-xdist's `--dist loadfile` hands out one file at a time, the files with the most tests first. Test count is not
cost: the three system tests (6 tests each) went last, ran side by side on the two workers and slowed each other
down several times over (their servers, daemons, training children and Chromium fight for the same two cores, and
each waits on the others' work: the browser test's module setup took 23 s alone and 141 s in the suite).
This plugin keeps loadfile (a file's tests stay on one worker, module fixtures and order hold) with two changes:
- the system tests are one unit of work, run one after another on one worker, so they never overlap each other;
- that unit goes first, then the other files from the most expensive down (longest first packs two workers best),
  then the rest in xdist's own order. The costs are a measured run's (HEAVY_FILES); a file missing from the list
  only runs later, never wrongly.

Only the order changes: every test runs, with the same fixtures, as with plain loadfile."""

from __future__ import annotations

from typing import Any

import pytest

SYSTEM_SCOPE = "system tests (one worker, one after another)"
SYSTEM_FILES = ("tests/platform/test_cluster.py", "tests/platform/test_real_boxes.py",
                "tests/report/test_ui_browser.py")
# The files that cost one worker 15 s or more, most expensive first: seconds per file of a whole `make test` run
# (benchmarks/results/suite_time_against.json, "this"), the system tests left out.
HEAVY_FILES = (
    "tests/rf100vl/test_campaign.py",
    "tests/rf100vl/test_replicates.py",
    "tests/rf100vl/test_children.py",
    "tests/rf100vl/test_family_children.py",
    "tests/rf100vl/test_pretrained.py",
    "tests/rf100vl/test_cli.py",
    "tests/augbench/test_pipeline.py",
    "tests/augbench/test_paper_report.py",
    "tests/report/test_dbt_report.py",
    "tests/rf100vl/test_pretrained_hub.py",
    "tests/report/test_report_pipeline.py",
    "tests/report/test_ui.py",
    "tests/rf100vl/test_published_submission.py",
    "tests/augbench/test_adapters.py",
)


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the system tests' shared unit."""
    path = nodeid.split("::", 1)[0]
    return SYSTEM_SCOPE if path in SYSTEM_FILES else path


def rank(scope: str) -> int:
    """Lower goes first: the system tests, then HEAVY_FILES in order, then everything else (equal rank)."""
    if scope == SYSTEM_SCOPE:
        return 0
    return 1 + HEAVY_FILES.index(scope) if scope in HEAVY_FILES else 1 + len(HEAVY_FILES)


def next_scope(queue: list[str]) -> str:
    """The scope to hand out next from the queue (xdist's order among equals)."""
    return min(queue, key=rank)  # min keeps the first of equal ranks


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
