"""The code location, read like a table of contents: every domain of the platform and what they share."""

import dagster as dg

from bench_assets.report.definitions import defs as report
from bench_assets.rf100vl.definitions import defs as rf100vl
from resources.bench_home import BenchHome

shared = dg.Definitions(resources={"home": BenchHome()})

defs = dg.Definitions.merge(
    shared,
    rf100vl,  # catalogue, datasets (+ checks, inbox sensor)
    report,  # warehouse loader
)
