"""The report domain: the warehouse loader (dbt models and the rendered report come later)."""

import dagster as dg

from bench_assets.report.check_assets import campaign_checks
from bench_assets.report.loader_assets import warehouse

warehouse_job = dg.define_asset_job("warehouse_job", selection=dg.AssetSelection.assets(warehouse),
                                    description="Rebuild warehouse.duckdb from the artifacts on disk and run the "
                                                "campaign checks against it.")

# Evaluates the loader's eager condition, so a dataset materialized from the UI, a backfill or the
# inbox sensor reaches the warehouse without anyone launching the loader by hand.
report_automation = dg.AutomationConditionSensorDefinition(
    "report_automation", target=dg.AssetSelection.assets(warehouse),
    default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=30,
)

defs = dg.Definitions(assets=[warehouse], asset_checks=campaign_checks, jobs=[warehouse_job],
                      sensors=[report_automation])
