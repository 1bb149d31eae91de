"""A pytest plugin (tests/conftest.py loads it): pytest's processes treat the garbage collector as the project's own
processes do (`bench_assets/platform/process_gc.py`).

- Collection imports every test module, and with them Dagster, scipy, pandas and DuckDB: the collector is paused
  from `pytest_configure` to the end of collection, and what is alive then (modules, classes, parametrized
  values: alive for the whole run) is frozen, so the full collections during the tests no longer walk it.
- A test that imported a library (NEW_MODULES or more modules since the last freeze: torch, kornia, scipy, a Dagster
  run's libraries) is followed by one collection and a freeze of what survives it. CPython's full collections
  otherwise walk the library's objects again each time the survivors grow by a quarter, for the rest of the run
  (in `make test-fast` most of the CPU its full collections took was walks over torch). The price: an object alive
  at a freeze that later becomes garbage only a collection finds (a cycle) is never collected, nor finalized.
- At the end, one collection (a finalizer raising in it is still reported), then the process exits without
  pytest's two more nor the interpreter's last ones. An xdist worker that ran the suite holds torch, Dagster and
  the code location, and the controller waits for both workers to exit before it prints the run's summary.

`benchmarks/process_gc.py` measures both on the stacks a worker holds (quoted in docs/testing.md). Nothing is lost at
exit: the run's last hook has reported everything, and each test's files are written by then."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from bench_assets.platform.process_gc import collections_paused, skip_final_collections

_collection = ExitStack()  # holds the paused block from pytest_configure until the tests start
NEW_MODULES = 100  # imported by one test since the last freeze: a library came in (torch and torchvision: ~2,000)
_modules_frozen = [0]  # len(sys.modules) at the last freeze


def _resume() -> None:
    _collection.close()  # once: closing it again does nothing
    _modules_frozen[0] = len(sys.modules)


def freeze_new_libraries(modules: int) -> bool:
    """After a test: when `modules` (len(sys.modules)) grew by NEW_MODULES since the last freeze, collect once and
    freeze what survives (modules, classes, caches: alive for the rest of the run). True when it froze."""
    if modules - _modules_frozen[0] < NEW_MODULES:
        return False
    gc.collect()
    gc.freeze()
    _modules_frozen[0] = modules
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _collection.enter_context(collections_paused())


def pytest_collection_finish(session: pytest.Session) -> None:
    _resume()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    _resume()  # the xdist controller collects nothing: its collector resumes here


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        return (yield)
    finally:
        freeze_new_libraries(len(sys.modules))  # after the test's teardown: its own garbage is collected first


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """One full collection, then freeze what survives. pytest's unraisable-exception plugin collects twice more as it
    unconfigures (each a walk over every object alive: 0.3 s of CPU in a worker holding torch and Dagster); the
    freeze leaves those walks nothing to visit. Its hook is still installed during this collection, so a finalizer
    that raises here is reported as before (tests/platform/test_suite_gc.py)."""
    _resume()
    gc.collect()
    gc.freeze()
    skip_final_collections()
