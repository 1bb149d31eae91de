"""The augmentation speed benchmark family: media and per-library results with their checks, and the jobs `bench
augbench run` launches (`defs`); and what it hands the report (`contribution`): its warehouse tables, its checks
on the warehouse and its paper page of `report/rendered`."""

import dagster as dg

from bench_assets.augbench.assets import cells_complete, media, results
from bench_assets.augbench.jobs import media_job, results_job
from bench_assets.augbench.paper_report import MARTS, render_page
from bench_assets.augbench.partitions import augbench_partition_guard
from bench_assets.augbench.warehouse_check_assets import augbench_warehouse_checks
from bench_assets.augbench.warehouse_tables import TABLES
from bench_assets.platform.contribution import FamilyContribution
from bench_assets.platform.report_pages import Page

defs = dg.Definitions(assets=[media, results], asset_checks=[cells_complete],
                      jobs=[media_job, results_job], sensors=[augbench_partition_guard])

contribution = FamilyContribution(name="augbench", tables=TABLES, reads=(results,),
                                  warehouse_checks=tuple(augbench_warehouse_checks),
                                  pages=(Page("augbench", tuple(MARTS), render_page),))
