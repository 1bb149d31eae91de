"""A pytest plugin (tests/conftest.py loads it): pytest's processes end as the project's own do, without the
interpreter's last garbage collections (`bench_assets/platform/process_exit.py`).

An xdist worker that ran the suite holds torch, Dagster and the code location, and the controller waits for both
workers to exit before it prints the run's summary: such a process spends about 1.7 s of CPU in those collections,
0.3 s without them (`benchmarks/process_exit.py`, "both", quoted in docs/testing.md). Nothing is lost: the run's
last hook has reported everything, and each test's files are written by then."""

from __future__ import annotations

import pytest

from bench_assets.platform.process_exit import skip_final_collections


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    skip_final_collections()
