"""The augbench jobs `bench augbench run` launches (referred to through these objects)."""

import dagster as dg

from bench_assets.augbench.assets import media, results

media_job = dg.define_asset_job("augbench_media_job", selection=dg.AssetSelection.assets(media),
                                         description="Build one config's media set (content-hashed).")
results_job = dg.define_asset_job(
    "augbench_results_job", selection=dg.AssetSelection.assets(results),
    description="Measure one (config, library) partition once more and append the repeat.")
