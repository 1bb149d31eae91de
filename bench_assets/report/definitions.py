"""The report domain: the warehouse loader and its campaign checks, the dbt report (marts + dbt tests as
checks) and the rendered report."""

import dagster as dg

from bench_assets.augbench.report_assets import paper_report
from bench_assets.report.check_assets import campaign_checks
from bench_assets.report.dbt_assets import report_dbt_assets
from bench_assets.report.loader_assets import warehouse
from bench_assets.report.report_assets import rendered

warehouse_job = dg.define_asset_job("warehouse_job", selection=dg.AssetSelection.assets(warehouse),
                                    description="Rebuild warehouse.duckdb from the artifacts on disk and run the "
                                                "campaign checks against it.")
report_job = dg.define_asset_job(
    "report_job", selection=dg.AssetSelection.assets(warehouse, report_dbt_assets, rendered, paper_report),
    description="The whole report from the artifacts: warehouse (+ campaign checks), dbt build of the marts "
                "(+ dbt tests), then report.md / index.html with plots and the augbench paper report.")

# Evaluates the eager conditions of the loader, the dbt models and the rendered report, so a dataset
# materialized from the UI, a backfill or the inbox sensor reaches the report without anyone launching it.
report_automation = dg.AutomationConditionSensorDefinition(
    "report_automation", target=dg.AssetSelection.assets(warehouse, report_dbt_assets, rendered, paper_report),
    default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=30,
)

defs = dg.Definitions(assets=[warehouse, report_dbt_assets, rendered], asset_checks=campaign_checks,
                      jobs=[warehouse_job, report_job], sensors=[report_automation])
