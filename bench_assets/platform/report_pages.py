"""A page of the rendered report, as a family contributes it: the marts it reads and a function that renders it
(pure; no Dagster): it gets the report and warehouse files, its output folder and the failing checks, and
returns what it wrote."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RenderedPage:
    """What rendering a page produced: the summary for the asset's metadata, its files, and counts."""

    summary_md: str
    html: Path
    markdown: Path
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PageInputs:
    report_db: Path  # the dbt marts
    warehouse_db: Path
    out_dir: Path
    findings: Sequence[tuple[str, str, str, str]]  # (check, asset, severity, description) of failing checks


@dataclass(frozen=True)
class Page:
    """A page of `report/rendered`, drawn from the named marts."""

    name: str
    marts: tuple[str, ...]
    render: Callable[[PageInputs], RenderedPage]
