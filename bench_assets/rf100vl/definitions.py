"""The RF100-VL domain: catalogue, datasets, their checks, the import job and the inbox sensor."""

import dagster as dg

from bench_assets.rf100vl.checks import catalog_checks, dataset_checks
from bench_assets.rf100vl.dataset_assets import catalog, dataset
from bench_assets.rf100vl.sensors import DATASET_JOB, inbox_sensor

dataset_job = dg.define_asset_job(DATASET_JOB, selection=dg.AssetSelection.assets(dataset),
                                  description="Fetch, verify and version-lock one dataset partition.")
catalog_job = dg.define_asset_job("rf100vl_catalog_job", selection=dg.AssetSelection.assets(catalog),
                                  description="The catalogue and the platform preflight checks.")

defs = dg.Definitions(
    assets=[catalog, dataset],
    asset_checks=[*catalog_checks, *dataset_checks],
    jobs=[dataset_job, catalog_job],
    sensors=[inbox_sensor],
)
