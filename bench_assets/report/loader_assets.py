"""`report/warehouse`: the single loader stage, the only writer of warehouse.duckdb.

Built from what the families contribute: the tables they declare and the assets those tables read (so a
re-materialized dataset, checkpoint or score is upstream of the warehouse). The report imports no family.
"""


from collections.abc import Sequence

import dagster as dg

from bench_assets.platform.contribution import WAREHOUSE_KEY, FamilyContribution
from bench_assets.platform.warehouse import rebuild_warehouse
from resources.bench_home import BenchHome

# Rebuild after any upstream partition is materialized (from the UI, a backfill, a sensor or the CLI), once per
# change, never while a rebuild runs. Not `eager()`: it also waits until no upstream partition is missing or in
# progress, which never holds for partitioned inputs (a campaign's unfinished partitions, augbench cells the plan
# never runs), so a re-materialized score never reached the report.
AFTER_UPSTREAM_UPDATES = (dg.AutomationCondition.any_deps_updated().since_last_handled()
                          & ~dg.AutomationCondition.in_progress()).with_label("after upstream updates")


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
