"""`report/warehouse`: the single loader stage, the only writer of warehouse.duckdb.

Built from what the families contribute: the tables they declare and the assets those tables read (so a
re-materialized dataset, checkpoint or score is upstream of the warehouse). The report imports no family.
"""


from collections.abc import Sequence

import dagster as dg

from bench_assets.platform.automation import after_upstream_updates
from bench_assets.platform.contribution import WAREHOUSE_KEY, FamilyContribution
from bench_assets.platform.warehouse import rebuild_warehouse
from resources.bench_home import BenchHome

AFTER_UPSTREAM_UPDATES = after_upstream_updates("after upstream updates")


def warehouse_asset(contributions: Sequence[FamilyContribution]) -> dg.AssetsDefinition:
    tables = tuple(t for c in contributions for t in c.tables)
    reads = [r for c in contributions for r in c.reads]
    names = ", ".join(t.name for t in tables)

    @dg.asset(key=WAREHOUSE_KEY, group_name="report", deps=reads, pool="duckdb_writer", kinds={"duckdb"},
              automation_condition=AFTER_UPSTREAM_UPDATES,
              description=f"DuckDB tables rebuilt from the artifacts on disk: {names}.")
    def warehouse(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
        counts = rebuild_warehouse(home.path, home.warehouse_path, tables)
        context.log.info(f"warehouse rebuilt at {home.warehouse_path}: {counts}")
        return dg.MaterializeResult(metadata={
            "path": dg.MetadataValue.path(str(home.warehouse_path)),
            **{f"rows_{table}": dg.MetadataValue.int(n) for table, n in counts.items()},
        })

    return warehouse
