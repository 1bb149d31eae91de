"""`report/warehouse`: the single loader stage, the only writer of warehouse.duckdb."""

import dagster as dg

from bench_assets.augbench.assets import results as augbench_results
from bench_assets.report.warehouse import rebuild_warehouse
from bench_assets.rf100vl.checkpoint_assets import checkpoint
from bench_assets.rf100vl.dataset_assets import dataset
from bench_assets.rf100vl.score_assets import scores
from bench_assets.rf100vl.submission_assets import submission
from resources.bench_home import BenchHome


@dg.asset(key=["report", "warehouse"], group_name="report",
          deps=[dataset, checkpoint, scores, submission, augbench_results],
          pool="duckdb_writer", kinds={"duckdb"}, automation_condition=dg.AutomationCondition.eager(),
          description="DuckDB tables rebuilt from the artifacts on disk: datasets, dataset_splits, runs, epochs, "
                      "scores, submissions, augbench results (per repeat, pooled cells, planned cells), plus the "
                      "catalogue, suites, registered models and published numbers.")
def warehouse(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
    counts = rebuild_warehouse(home.path, home.warehouse_path)
    context.log.info(f"warehouse rebuilt at {home.warehouse_path}: {counts}")
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(home.warehouse_path)),
        **{f"rows_{table}": dg.MetadataValue.int(n) for table, n in counts.items()},
    })
