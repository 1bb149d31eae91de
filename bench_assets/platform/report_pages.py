"""A page of the rendered report, as a family contributes it, and the frame every page is built on.

A `Page` names the marts it reads and a function that renders it (pure; no Dagster): it gets the report and
warehouse files, the report folder and the failing checks, and returns what it wrote. `report/rendered` renders
every family's pages, so `marts_fresh` covers each mart a page shows.

The frame: read named columns of named tables in a fixed order, failing with the file, the table and the fix
when one is missing (`read_tables`); keep a page's summary for Dagster metadata under a size cap, its plot
re-drawn smaller until it fits (`summary_with_plot`); write the plots, delete the page's plots of an earlier
render, and write the pages last, so a page never names a plot that is not there (`write_page`). duckdb is
imported inside functions: the code location imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_assets.platform.document import png_data_uri
from bench_assets.platform.duckdb_files import attached
from bench_assets.platform.fsutil import atomic_write_bytes, atomic_write_text
from bench_assets.platform.marts import missing_columns, table_columns

SUMMARY_MAX_BYTES = 300_000  # Dagster keeps a page's summary in its event log: keep it small
Row = dict[str, Any]
# Table -> (the columns read, by name; its ORDER BY), so a page's output never depends on scan order.
TableSpec = Mapping[str, tuple[tuple[str, ...], str]]


@dataclass(frozen=True)
class RenderedPage:
    """What rendering a page produced: the summary for the asset's metadata, its files, and counts."""

    summary_md: str
    html: Path
    markdown: Path
    counts: dict[str, int] = field(default_factory=dict)
    plots: tuple[Path, ...] = ()


@dataclass(frozen=True)
class PageInputs:
    report_db: Path  # the dbt marts
    warehouse_db: Path
    out_dir: Path  # BENCH_HOME/report: a page writes here or into its own folder below it
    findings: Sequence[tuple[str, str, str, str]]  # (check, asset, severity, description) of failing checks


@dataclass(frozen=True)
class Page:
    """A page of `report/rendered`, drawn from the named marts."""

    name: str
    marts: tuple[str, ...]
    render: Callable[[PageInputs], RenderedPage]


class MartSchemaError(ValueError):
    """A database lacks a table or a column a page reads."""


# ---------------------------------------------------------------------------------------------- reading


def number(x: Any) -> float | None:
    """A mart value as a float; None for NULL and NaN."""
    if x is None:
        return None
    v = float(x)
    return None if math.isnan(v) else v


def check_columns(db: Path, table: str, wanted: Sequence[str], present: Sequence[str], reader: str,
                  error: type[MartSchemaError] = MartSchemaError) -> None:
    """Fail naming the file, the table, the columns it lacks and has, and the module that reads them."""
    lacking = missing_columns(wanted, list(present))
    if lacking:
        raise error(f"{db}: table {table} lacks column(s) {', '.join(lacking)} (it has: {', '.join(present)}); "
                    f"fix the dbt model or the columns {reader} reads")


def select_rows(con: Any, table: str, columns: Sequence[str], order_by: str) -> list[Row]:
    cols = ", ".join(f'"{c}"' for c in columns)
    rows = con.execute(f'SELECT {cols} FROM main."{table}" ORDER BY {order_by}').fetchall()
    return [dict(zip(columns, r, strict=True)) for r in rows]


def read_tables(db: Path, spec: TableSpec, reader: str, error: type[MartSchemaError] = MartSchemaError
                ) -> tuple[dict[str, list[Row]], bool]:
    """Every table's rows (columns by name, in the spec's order) and whether the tables are absent altogether
    (none of them in any schema: dbt has not built them yet; each table then has no rows). A table missing while
    others exist, or a missing column, fails naming it and where it was found instead."""
    db = Path(db)
    if not db.is_file():
        raise FileNotFoundError(f"{db}: no report database; build it with `dbt build` (the report assets)")
    with attached(db) as con:
        tables = table_columns(con)
        missing = [t for t in spec if ("main", t) not in tables]
        if len(missing) == len(spec) and not any(t in spec for _, t in tables):
            return {t: [] for t in spec}, True
        if missing:
            where = {t: sorted(s for s, name in tables if name == t) for t in missing}
            detail = "; ".join(f"{t} (found in schema {', '.join(s)})" if s else t for t, s in where.items())
            raise error(f"{db}: table(s) missing from schema main: {detail}; build them with `dbt build` (the "
                        f"report assets) or fix the model names")
        out = {}
        for table, (columns, order_by) in spec.items():
            check_columns(db, table, columns, tables[("main", table)], reader, error)
            out[table] = select_rows(con, table, columns, order_by)
    return out, False


# ---------------------------------------------------------------------------------------------- the summary


def summary_with_plot(text: str, draw: Callable[[int], bytes], alt: str, dpis: Sequence[int], *,
                      what: str = "plot", cap: int = SUMMARY_MAX_BYTES) -> str:
    """`text` with one plot embedded as a data URI, drawn at each of `dpis` in turn until the whole fits under
    `cap` bytes; without the plot (and saying so) when none fits. The full-size plots stay in the page itself."""
    for dpi in dpis:
        candidate = text + f"\n![{alt}]({png_data_uri(draw(dpi))})\n"
        if len(candidate.encode("utf-8")) <= cap:
            return candidate
    return text + f"\n({what} left out: too large for metadata; see index.html)\n"


# ---------------------------------------------------------------------------------------------- writing


def write_page(out_dir: Path, images: Mapping[str, bytes], files: Mapping[str, str], ours: Callable[[str], bool],
               pages: Mapping[str, str]) -> dict[str, Path]:
    """Write the plots drawn (plot key -> PNG bytes, named by `files`), delete the PNGs of `out_dir` that are
    `ours` but not drawn this time (a plot of an earlier render would contradict this one), then the pages
    (file name -> text), last. Returns plot key -> path written."""
    written: dict[str, Path] = {}
    for key, png in images.items():
        path = out_dir / files[key]
        atomic_write_bytes(path, png)
        written[key] = path
    keep = {p.name for p in written.values()}
    for old in sorted(out_dir.glob("*.png")):
        if ours(old.name) and old.name not in keep:
            old.unlink(missing_ok=True)
    for name, text in pages.items():
        atomic_write_text(out_dir / name, text)
    return written
