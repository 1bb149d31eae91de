"""augbench checks on `report/warehouse` (where every library's results meet), in the duckdb_writer pool."""

import dagster as dg

from bench_assets.augbench import warehouse_checks as wc
from bench_assets.platform.check_results import check_result
from bench_assets.platform.contribution import WAREHOUSE_KEY
from resources.bench_home import BenchHome


@dg.asset_check(asset=WAREHOUSE_KEY, name="augbench_coverage", pool="duckdb_writer", blocking=False,
                description="Every planned augbench cell of every registered config has a terminal status in its "
                            "latest repeat; missing and error cells are listed.")
def augbench_coverage(home: BenchHome) -> dg.AssetCheckResult:
    return check_result(wc.coverage(home.warehouse_path))


@dg.asset_check(asset=WAREHOUSE_KEY, name="augbench_consistency", pool="duckdb_writer", blocking=False,
                description="Inside one paper table (config), every library was measured on the same hardware "
                            "label, thread policy and media hash.")
def augbench_consistency(home: BenchHome) -> dg.AssetCheckResult:
    return check_result(wc.consistency(home.warehouse_path))


augbench_warehouse_checks = [augbench_coverage, augbench_consistency]
