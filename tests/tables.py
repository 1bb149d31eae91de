"""Every warehouse table the families declare, by name (what the report's loader builds), for tests that create
warehouse files by hand."""

from bench_assets.augbench.warehouse_tables import TABLES as AUGBENCH_TABLES
from bench_assets.platform import warehouse
from bench_assets.rf100vl.report.warehouse_tables import TABLES as RF100VL_TABLES

ALL_TABLES = (*RF100VL_TABLES, *AUGBENCH_TABLES)
TABLES = {t.name: t for t in ALL_TABLES}
TABLE_SCHEMAS = {t.name: t.columns for t in ALL_TABLES}


def create_sql(name: str) -> str:
    return warehouse.create_sql(TABLES[name])
