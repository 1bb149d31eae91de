"""The RF100-VL family: catalogue, datasets, checkpoints, predictions, scores and submissions, with their checks,
jobs, schedules and the inbox sensor (`defs`), and what it hands the report (`contribution`): its warehouse
tables, its campaign checks on the warehouse and the RF100-VL report page."""

import dagster as dg

from bench_assets.platform.contribution import FamilyContribution
from bench_assets.platform.report_pages import Page
from bench_assets.rf100vl.campaign_view import campaign_status
from bench_assets.rf100vl.checkpoint_assets import checkpoint, labels_reached_loss, training_finished
from bench_assets.rf100vl.checks import catalog_checks, dataset_checks
from bench_assets.rf100vl.dataset_assets import catalog, dataset
from bench_assets.rf100vl.jobs import JOBS
from bench_assets.rf100vl.partition_guard import rf100vl_partition_guard
from bench_assets.rf100vl.prediction_assets import predicted_classes_exist, predictions
from bench_assets.rf100vl.report_page import MARTS, render_page
from bench_assets.rf100vl.schedules import (
    rescore_on_scoring_change,
    rf100vl_backfill,
    rf100vl_dataset_backfill,
)
from bench_assets.rf100vl.score_assets import score_well_formed, scores
from bench_assets.rf100vl.sensors import inbox_sensor
from bench_assets.rf100vl.submission_assets import submission
from bench_assets.rf100vl.warehouse_check_assets import warehouse_checks
from bench_assets.rf100vl.warehouse_tables import TABLES
from resources.gpu_lanes import GpuLanes

defs = dg.Definitions(
    assets=[catalog, dataset, checkpoint, predictions, scores, submission, campaign_status],
    asset_checks=[*catalog_checks, *dataset_checks, labels_reached_loss, training_finished, predicted_classes_exist,
                  score_well_formed],
    jobs=list(JOBS),
    sensors=[inbox_sensor, rescore_on_scoring_change, rf100vl_partition_guard,
             dg.AutomationConditionSensorDefinition(  # the campaign view refreshes itself when a score lands
                 "rf100vl_automation", target=[campaign_status], default_status=dg.DefaultSensorStatus.RUNNING,
                 minimum_interval_seconds=30)],
    schedules=[rf100vl_backfill, rf100vl_dataset_backfill],
    resources={"lanes": GpuLanes()},
)

contribution = FamilyContribution(
    name="rf100vl",
    tables=TABLES,
    reads=(dataset, checkpoint, scores, submission),
    warehouse_checks=tuple(warehouse_checks),
    pages=(Page("rf100vl", tuple(MARTS), render_page),),
)
