"""The augmentation speed benchmark domain: media and per-library results with their checks, and the jobs
`bench augbench run` launches."""

import dagster as dg

from bench_assets.augbench.assets import cells_complete, media, results
from bench_assets.augbench.check_assets import augbench_warehouse_checks
from bench_assets.augbench.report_assets import paper_report

augbench_media_job = dg.define_asset_job("augbench_media_job", selection=dg.AssetSelection.assets(media),
                                         description="Build one config's media set (content-hashed).")
augbench_results_job = dg.define_asset_job(
    "augbench_results_job", selection=dg.AssetSelection.assets(results),
    description="Measure one (config, library) partition once more and append the repeat.")

defs = dg.Definitions(assets=[media, results, paper_report], asset_checks=[cells_complete, *augbench_warehouse_checks],
                      jobs=[augbench_media_job, augbench_results_job])
