"""The code location, read like a table of contents: every domain of the platform and what they share."""

import dagster as dg

from bench_assets.augbench.definitions import defs as augbench
from bench_assets.report.definitions import defs as report
from bench_assets.rf100vl.definitions import defs as rf100vl
from resources.bench_home import BenchHome

shared = dg.Definitions(resources={"home": BenchHome()})

defs = dg.Definitions.merge(
    shared,
    rf100vl,  # catalogue, datasets, checkpoints, predictions, scores, submissions (+ checks, schedules, sensors)
    augbench,  # augmentation speed benchmark: media, per-library results (+ coverage check)
    report,  # warehouse loader + campaign checks, dbt marts, the rendered report
)
