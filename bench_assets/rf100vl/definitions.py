"""The RF100-VL family: catalogue, datasets, pretrained weights, checkpoints, predictions, scores and submissions,
with their checks, jobs, schedules and the inbox sensor (`defs`), and what it hands the report (`contribution`): its
warehouse tables, its campaign checks on the warehouse and the RF100-VL report page."""

import dagster as dg

from bench_assets.platform.automation import sensor_interval_s
from bench_assets.platform.contribution import FamilyContribution
from bench_assets.platform.report_pages import Page
from bench_assets.rf100vl.campaign.priority import run_priority
from bench_assets.rf100vl.defs.campaign_view import campaign_status
from bench_assets.rf100vl.defs.checkpoint_assets import (
    checkpoint,
    labels_reached_loss,
    pretrained_weights_loaded,
    training_finished,
)
from bench_assets.rf100vl.defs.dataset_assets import catalog, dataset
from bench_assets.rf100vl.defs.dataset_checks import catalog_checks, dataset_checks
from bench_assets.rf100vl.defs.jobs import JOBS
from bench_assets.rf100vl.defs.launchpad import gate_warehouse_job, launch_campaign_job, rf100vl_campaign_launcher
from bench_assets.rf100vl.defs.partition_guard import rf100vl_partition_guard
from bench_assets.rf100vl.defs.plan_view import campaign_plan
from bench_assets.rf100vl.defs.prediction_assets import predicted_classes_exist, predictions
from bench_assets.rf100vl.defs.pretrained_assets import pretrained
from bench_assets.rf100vl.defs.schedules import (
    rescore_on_scoring_change,
    rf100vl_backfill,
    rf100vl_dataset_backfill,
)
from bench_assets.rf100vl.defs.score_assets import score_well_formed, scores
from bench_assets.rf100vl.defs.sensors import inbox_sensor
from bench_assets.rf100vl.defs.submission_assets import submission
from bench_assets.rf100vl.defs.warehouse_check_assets import warehouse_checks
from bench_assets.rf100vl.report.page import MARTS, render_page
from bench_assets.rf100vl.report.warehouse_tables import TABLES
from resources.gpu_lanes import GpuLanes

defs = dg.Definitions(
    assets=[catalog, dataset, pretrained, checkpoint, predictions, scores, submission, campaign_status, campaign_plan],
    asset_checks=[*catalog_checks, *dataset_checks, labels_reached_loss, pretrained_weights_loaded, training_finished,
                  predicted_classes_exist, score_well_formed],
    jobs=[*JOBS, launch_campaign_job, gate_warehouse_job],
    sensors=[inbox_sensor, rescore_on_scoring_change, rf100vl_partition_guard, rf100vl_campaign_launcher,
             dg.AutomationConditionSensorDefinition(  # the campaign view and plan refresh when a score lands
                 "rf100vl_automation", target=[campaign_status, campaign_plan],
                 default_status=dg.DefaultSensorStatus.RUNNING,
                 minimum_interval_seconds=sensor_interval_s(30))],
    schedules=[rf100vl_backfill, rf100vl_dataset_backfill],
    resources={"lanes": GpuLanes()},
)

contribution = FamilyContribution(
    name="rf100vl",
    tables=TABLES,
    reads=(dataset, checkpoint, scores, submission),
    warehouse_checks=tuple(warehouse_checks),
    pages=(Page("rf100vl", tuple(MARTS), render_page),),
    run_priority=run_priority,
)
