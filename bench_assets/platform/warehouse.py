"""The warehouse engine: DuckDB tables rebuilt from the artifacts on disk (files are the truth).

A family declares its tables (`WarehouseTable`: name, column types, a builder over BENCH_HOME, a sort order);
`rebuild_warehouse` is the only code that writes `warehouse.duckdb`. It builds a complete new file beside the
old one and renames it into place, so a reader never sees a half-loaded warehouse and never meets a writer's
lock on the live file; an OS file lock serialises concurrent loaders so the last one to run always saw every
artifact placed before it started.

Types are never inferred from the rows: a table with no artifacts yet, or a column that happens to be all NULL,
still gets its declared type, so readers and dbt models see the same schema on an empty campaign as on a full
one. A builder that produces a column not declared (or misses one) fails the load loudly.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_assets.platform.duckdb_files import attached
from bench_assets.platform.fsutil import OWNER_RE, fsync_dir, host_id, owner_gone, owner_tag

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class WarehouseTable:
    """One warehouse table: its declared column types and the builder that reads its rows from BENCH_HOME."""

    name: str
    columns: dict[str, str]
    build: Callable[[Path], pd.DataFrame]
    order_by: str


def create_sql(table: WarehouseTable) -> str:
    cols = ", ".join(f'"{c}" {t}' for c, t in table.columns.items())
    return f"CREATE TABLE {table.name} ({cols})"


def insert_sql(table: WarehouseTable, frame: str) -> str:
    cols = ", ".join(f'CAST("{c}" AS {t})' for c, t in table.columns.items())
    return f"INSERT INTO {table.name} SELECT {cols} FROM {frame} ORDER BY {table.order_by}"


def column_drift(table: WarehouseTable, columns: list[str]) -> str | None:
    """A message when a builder's columns differ from the declared ones (None when they match)."""
    declared = set(table.columns)
    missing, extra = sorted(declared - set(columns)), sorted(set(columns) - declared)
    if not missing and not extra:
        return None
    return (f"warehouse table {table.name}: builder columns differ from its declaration "
            f"(missing {missing}, extra {extra})")


@contextmanager
def loader_lock(warehouse: Path, timeout_s: float = 600.0) -> Iterator[None]:
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    with open(warehouse.with_suffix(".lock"), "w") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{warehouse}: another loader held the lock for {timeout_s:g}s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def loader_temp_files(warehouse: Path) -> list[tuple[Path, int, str | None]]:
    """The loaders' scratch files beside `warehouse` (`.<name>.<pid>@<host>.tmp` and its `.wal`), with the pid and
    host of each (host None in names from before hosts were recorded)."""
    pattern = re.compile(rf"\.{re.escape(warehouse.name)}\.{OWNER_RE}\.tmp(\.wal)?")
    try:
        names = sorted(os.listdir(warehouse.parent))
    except FileNotFoundError:
        return []
    return [(warehouse.parent / n, int(m.group(1)), m.group(2)) for n in names if (m := pattern.fullmatch(n))]


def orphaned_loader_temps(warehouse: Path) -> list[Path]:
    """Scratch files of loaders that died mid-rebuild (killed, disk full): their pid is no live process of this
    box (another box's loader is never judged from here)."""
    return [p for p, pid, host in loader_temp_files(warehouse)
            if not (pid == os.getpid() and host in (None, host_id())) and owner_gone(pid, host)]


def rebuild_warehouse(home: Path, warehouse: Path, tables: Sequence[WarehouseTable]) -> dict[str, int]:
    """Rebuild every table from the artifacts under `home`; return row counts per table."""
    with loader_lock(warehouse):
        # A loader killed mid-rebuild leaves a scratch file as big as the warehouse; the lock says none is live.
        for leftover in orphaned_loader_temps(warehouse):
            leftover.unlink(missing_ok=True)
        names = [t.name for t in tables]
        if len(set(names)) != len(names):
            raise ValueError(f"warehouse tables declared twice: {sorted({n for n in names if names.count(n) > 1})}")
        frames = {t.name: (t, t.build(home)) for t in tables}
        tmp = warehouse.with_name(f".{warehouse.name}.{owner_tag()}.tmp")
        wal = tmp.with_name(tmp.name + ".wal")
        tmp.unlink(missing_ok=True)
        wal.unlink(missing_ok=True)
        try:
            with attached(tmp, read_only=False) as con:
                for table, df in frames.values():
                    con.execute(create_sql(table))  # typed even when empty (no artifacts of this kind yet)
                    if df.empty:
                        continue
                    drift = column_drift(table, list(df.columns))
                    if drift:
                        raise ValueError(drift)
                    con.register("frame", df)
                    con.execute(insert_sql(table, "frame"))
                    con.unregister("frame")
                con.execute("CHECKPOINT")
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, warehouse)
            fsync_dir(warehouse.parent)
        finally:
            tmp.unlink(missing_ok=True)
            wal.unlink(missing_ok=True)  # left by a failed write (disk full) before the checkpoint
    return {name: len(df) for name, (_, df) in frames.items()}


def query(warehouse: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    """Run a read-only query; the file is replaced whole on load, so readers never meet a writer."""
    if not warehouse.exists():
        raise FileNotFoundError(f"{warehouse}: no warehouse yet; materialize report/warehouse first")
    with attached(warehouse) as con:
        cur = con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
