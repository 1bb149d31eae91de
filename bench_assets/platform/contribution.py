"""What a benchmark family hands the report: its warehouse tables, its checks on the warehouse, its pages.

The report (`bench_assets/report/`) imports no family. `definitions.py` hands it every family (its `defs` and
its `FamilyContribution`); from those it builds the loader (`report/warehouse`, depending on every asset the
tables read), attaches the warehouse checks, and renders the pages in `report/rendered`. A new family
contributes the same way and needs no edit to the report or to this platform.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import dagster as dg

from bench_assets.platform.report_pages import Page
from bench_assets.platform.warehouse import WarehouseTable

# The loader's asset: families attach their warehouse checks to this key (the report defines the asset).
WAREHOUSE_KEY = dg.AssetKey(["report", "warehouse"])


def mart_key(name: str) -> dg.AssetKey:
    """The asset key of a dbt mart (the report's dbt assets key every model `report/<name>`)."""
    return dg.AssetKey(["report", name])


@dataclass(frozen=True)
class FamilyContribution:
    name: str
    tables: tuple[WarehouseTable, ...] = ()
    reads: tuple[Any, ...] = ()  # assets (or asset keys) the table builders read: the loader depends on them
    warehouse_checks: tuple[dg.AssetChecksDefinition, ...] = ()  # checks on WAREHOUSE_KEY
    pages: tuple[Page, ...] = ()
    # A run's tags -> its `dagster/priority` when queued without one (None: not this family's to order); the
    # instance's run coordinator calls it (platform/run_queue.py; listed in resources/dagster.yaml).
    run_priority: Callable[[Mapping[str, str]], str | None] | None = None


class Family(Protocol):
    """A benchmark family as `definitions.py` lists it: a module with its own `defs` and its `contribution`."""

    defs: dg.Definitions
    contribution: FamilyContribution
