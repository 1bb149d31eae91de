"""The report domain, composed from what the families contribute: the warehouse loader (+ the families'
warehouse checks), the dbt report (marts + dbt tests as checks) and the rendered pages."""

from __future__ import annotations

import dagster as dg

from bench_assets.platform.automation import sensor_interval_s
from bench_assets.platform.contribution import Family
from bench_assets.report.dbt_assets import report_dbt_assets
from bench_assets.report.jobs import REPORT_SELECTION, report_job, warehouse_job
from bench_assets.report.loader_assets import warehouse_asset
from bench_assets.report.report_assets import rendered_asset


def build_defs(*families: Family) -> dg.Definitions:
    contributions = [f.contribution for f in families]
    warehouse = warehouse_asset(contributions)
    rendered = rendered_asset(contributions, lambda: every_check(families, own))
    # Evaluates the eager conditions of the loader, the dbt models and the pages, so a dataset materialized
    # from the UI, a backfill or the inbox sensor reaches the report without anyone launching it.
    report_automation = dg.AutomationConditionSensorDefinition(
        "report_automation", target=REPORT_SELECTION,
        default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=sensor_interval_s(30),
    )
    # report_dbt_assets is None only in a `bench` process that never builds the report and found no manifest
    own = dg.Definitions(assets=[a for a in (warehouse, report_dbt_assets, rendered) if a is not None],
                         asset_checks=[chk for c in contributions for chk in c.warehouse_checks],
                         jobs=[warehouse_job, report_job], sensors=[report_automation])
    return own


def every_check(families: tuple[Family, ...], own: dg.Definitions) -> list[dg.AssetCheckKey]:
    """Every asset check of the code location (the report lists the failing ones first): the checks each
    definition carries, read off the definitions (resolving them would need the location's resources)."""
    keys: set[dg.AssetCheckKey] = set()
    for defs in (*(f.defs for f in families), own):
        for definition in (*(defs.assets or ()), *(defs.asset_checks or ())):
            keys |= set(getattr(definition, "check_keys", ()))
    return sorted(keys, key=str)
