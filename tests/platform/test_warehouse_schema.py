"""Warehouse tables have their declared types even with no artifacts, and builder drift is loud."""

from __future__ import annotations

from pathlib import Path

from bench_assets.platform.duckdb_files import attached
from bench_assets.platform.warehouse import column_drift, rebuild_warehouse
from bench_assets.rf100vl.datasets.sources import local_spec
from bench_assets.rf100vl.datasets.store import materialize_dataset
from tests.conftest import broken
from tests.tables import ALL_TABLES, TABLE_SCHEMAS, TABLES


def _types(wh: Path, table: str) -> dict[str, str]:
    with attached(wh) as con:
        return {c[0]: c[1] for c in con.execute(f"DESCRIBE {table}").fetchall()}


def test_empty_home_gives_every_table_its_typed_schema(tmp_path: Path) -> None:
    wh = tmp_path / "warehouse.duckdb"
    vendored = {"catalog": 100, "suites": 124, "published": 28}  # reference tables shipped with the code
    assert rebuild_warehouse(tmp_path / "home", wh, ALL_TABLES) == {t: vendored.get(t, 0) for t in TABLES}
    assert len(TABLES) == len(ALL_TABLES) == 14  # no family declares a table twice
    for table, schema in TABLE_SCHEMAS.items():
        assert _types(wh, table) == schema, table


def test_all_null_columns_keep_their_types(tmp_path: Path) -> None:
    """A non-catalogue dataset has no domain: the column is still VARCHAR, not DuckDB's NULL type."""
    home = tmp_path / "home"
    materialize_dataset(home, "lab", local_spec(broken("valid_base", tmp_path)), home / "cache")
    wh = tmp_path / "warehouse.duckdb"
    rebuild_warehouse(home, wh, ALL_TABLES)
    types = _types(wh, "datasets")
    assert types["domain"] == "VARCHAR" and types["catalog_num_classes"] == "BIGINT"
    assert types["class_names"] == "VARCHAR[]"


def test_column_drift_is_reported() -> None:
    cols = list(TABLE_SCHEMAS["runs"])
    assert column_drift(TABLES["runs"], cols) is None
    msg = column_drift(TABLES["runs"], [*cols[1:], "surprise"])
    assert msg is not None and "missing ['model']" in msg and "extra ['surprise']" in msg


def test_a_table_declared_twice_is_refused(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(ValueError, match="declared twice: \\['runs'\\]"):
        rebuild_warehouse(tmp_path / "home", tmp_path / "w.duckdb", (*ALL_TABLES, TABLES["runs"]))
