"""The report's jobs, selected by asset key (the loader is built from the families' contributions, so its
object exists only inside `build_defs`; its key is fixed)."""

import dagster as dg

from bench_assets.platform.contribution import WAREHOUSE_KEY

# Everything downstream of the loader: dbt marts (+ dbt tests), the rendered pages and any family page asset
# that reads the marts (the augbench paper report).
REPORT_SELECTION = dg.AssetSelection.assets(WAREHOUSE_KEY).downstream()

warehouse_job = dg.define_asset_job(
    "warehouse_job", selection=dg.AssetSelection.assets(WAREHOUSE_KEY),
    description="Rebuild warehouse.duckdb from the artifacts on disk and run the warehouse checks against it.")
report_job = dg.define_asset_job(
    "report_job", selection=REPORT_SELECTION,
    description="The whole report from the artifacts: warehouse (+ checks), dbt build of the marts "
                "(+ dbt tests), then report.md / index.html with plots and every family's pages.")
