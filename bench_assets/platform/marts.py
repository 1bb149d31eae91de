"""Reading what a report page needs from a DuckDB file, checked against what it expects (pure; duckdb passed in).

Both report pages read marts by column name; a mart renamed or a column dropped in a dbt model must fail with
the table and the columns it lacks, never render an empty table. Each page words its own error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def table_columns(con: Any) -> dict[tuple[str, str], list[str]]:
    """(schema, table) -> columns in order, names lowercased (DuckDB matches identifiers case-insensitively)."""
    rows = con.execute("SELECT table_schema, table_name, column_name FROM information_schema.columns "
                       "WHERE table_catalog = current_database() ORDER BY table_schema, table_name, "
                       "ordinal_position").fetchall()
    out: dict[tuple[str, str], list[str]] = {}
    for schema, table_name, column in rows:
        out.setdefault((schema.lower(), table_name.lower()), []).append(column)
    return out


def missing_columns(wanted: Sequence[str], present: Sequence[str]) -> list[str]:
    """The wanted columns the table lacks (compared case-insensitively), in the wanted order."""
    have = {c.lower() for c in present}
    return [c for c in wanted if c.lower() not in have]
