"""A pytest plugin (tests/conftest.py loads it): pytest's processes treat the garbage collector as the project's own
processes do (`bench_assets/platform/process_gc.py`).

- Collection imports every test module, and with them Dagster, scipy, pandas and DuckDB: the collector is paused
  from `pytest_configure` to the end of collection, and what is alive then (modules, classes, parametrized
  values: alive for the whole run) is frozen, so the full collections during the tests no longer walk it.
- At the end, the process exits without the interpreter's last collections. An xdist worker that ran the suite
  holds torch, Dagster and the code location, and the controller waits for both workers to exit before it prints
  the run's summary.

`benchmarks/process_gc.py` measures both on the stacks a worker holds (quoted in docs/testing.md). Nothing is lost at
exit: the run's last hook has reported everything, and each test's files are written by then."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from bench_assets.platform.process_gc import collections_paused, skip_final_collections

_collection = ExitStack()  # holds the paused block from pytest_configure until the tests start


def _resume() -> None:
    _collection.close()  # once: closing it again does nothing


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _collection.enter_context(collections_paused())


def pytest_collection_finish(session: pytest.Session) -> None:
    _resume()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    _resume()  # the xdist controller collects nothing: its collector resumes here


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _resume()
    skip_final_collections()
