"""The automation condition of assets that summarise partitioned inputs (the warehouse, the campaign view)."""

import dagster as dg


def after_upstream_updates(label: str) -> dg.AutomationCondition:
    """Materialize after any upstream partition is materialized (from the UI, a backfill, a sensor or the CLI),
    once per change, never while a materialization runs. Not `eager()`: it also waits until no upstream partition
    is missing or in progress, which never holds for partitioned inputs (a campaign's unfinished partitions,
    augbench cells the plan never runs), so a re-materialized score never reached the report."""
    return (dg.AutomationCondition.any_deps_updated().since_last_handled()
            & ~dg.AutomationCondition.in_progress()).with_label(label)
