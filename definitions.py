"""The code location, read like a table of contents: every domain of the platform and what they share.

Domains are imported as modules (not their `defs` under new names) so this module holds exactly one
`Definitions` object: `dagster definitions validate -f definitions.py` and the other `-f` commands need that.
"""

import dagster as dg

from bench_assets.augbench import definitions as augbench
from bench_assets.report import definitions as report
from bench_assets.rf100vl import definitions as rf100vl
from resources.bench_home import BenchHome

defs = dg.Definitions.merge(
    dg.Definitions(resources={"home": BenchHome()}),  # shared by every domain
    rf100vl.defs,  # catalogue, datasets, checkpoints, predictions, scores, submissions (+ checks, schedules, sensors)
    augbench.defs,  # augmentation speed benchmark: media, per-library results (+ coverage check)
    report.defs,  # warehouse loader + campaign checks, dbt marts, the rendered report
)
