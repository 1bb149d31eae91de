"""The code location, read like a table of contents: the benchmark families, the report composed from what
they contribute, and the resources they share.

A family is a module with `defs` (its assets, checks, jobs, schedules, sensors) and `contribution` (its warehouse
tables, warehouse checks and report pages). Adding a family is one import and one entry in FAMILIES
(docs/architecture.md). Families are imported as modules, so this module holds exactly one `Definitions`
object: `dagster definitions validate -f definitions.py` and the other `-f` commands need that.
"""

import dagster as dg

from bench_assets.augbench import definitions as augbench
from bench_assets.platform.cluster.executor import cluster_executor
from bench_assets.platform.cluster.watchdog import watchdog_sensor
from bench_assets.platform.contribution import Family
from bench_assets.report import definitions as report
from bench_assets.rf100vl import definitions as rf100vl
from resources.bench_home import BenchHome
from resources.paths import bench_home_path

FAMILIES = (
    rf100vl,  # catalogue, datasets, checkpoints, predictions, scores, submissions (+ checks, schedules, sensors)
    augbench,  # augmentation speed benchmark: media, per-library results, paper report (+ checks)
)


def build_location(families: tuple[Family, ...]) -> dg.Definitions:
    """Every family's own definitions, the report composed from their contributions, the shared resources, and the
    executor: the Celery executor while a cluster is up (docs/scale-out.md), else in-process, so a run launched from
    the UI executes its steps and checks in its own process as `bench` does (Dagster's default, one process per
    step and check, made light UI runs 25-40x slower than the CLI; training and prediction run in their own child
    processes either way); and the watchdog that fails runs a lost cluster worker held."""
    return dg.Definitions.merge(
        dg.Definitions(resources={"home": BenchHome()},
                       executor=cluster_executor(bench_home_path()) or dg.in_process_executor,
                       sensors=[watchdog_sensor()]),  # shared by every family and the report
        *(family.defs for family in families),
        report.build_defs(*families),  # warehouse (+ the families' checks), dbt marts, rendered pages
    )


defs = build_location(FAMILIES)
