"""The report domain: the warehouse loader (dbt models and the rendered report come later)."""

import dagster as dg

from bench_assets.report.loader_assets import warehouse

warehouse_job = dg.define_asset_job("warehouse_job", selection=dg.AssetSelection.assets(warehouse),
                                    description="Rebuild warehouse.duckdb from the artifacts on disk.")

defs = dg.Definitions(assets=[warehouse], jobs=[warehouse_job])
