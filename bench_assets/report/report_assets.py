"""`report/rendered`: the report people read (markdown for pasting, a self-contained HTML page, plots),
rendered from the dbt marts, with every failing asset check listed first."""

import dagster as dg

from bench_assets.report.render import render_report
from resources.bench_home import BenchHome

MARTS = ("leaderboard", "domain_scores", "dataset_scores", "weakest_datasets", "train_cost",
         "published_comparison", "model_comparison")


def failing_checks(instance: dg.DagsterInstance, check_keys: list[dg.AssetCheckKey]
                   ) -> list[tuple[str, str, str, str]]:
    """(check, asset, severity, description) of every check whose latest evaluation failed."""
    from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(check_keys)
    out = []
    for key, rec in sorted(latest.items(), key=lambda kv: (kv[0].asset_key.to_user_string(), kv[0].name)):
        if rec.status != AssetCheckExecutionRecordStatus.FAILED:
            continue
        ev = rec.event.dagster_event.event_specific_data if rec.event and rec.event.dagster_event else None
        severity = getattr(getattr(ev, "severity", None), "value", "ERROR")
        description = getattr(ev, "description", None) or "failed (no description; see the check's metadata)"
        out.append((key.name, key.asset_key.to_user_string(), severity, description))
    return out


@dg.asset(key=["report", "rendered"], group_name="report", kinds={"html", "markdown"},
          deps=[dg.AssetKey(["report", m]) for m in MARTS], pool="duckdb_writer",
          automation_condition=dg.AutomationCondition.eager(),
          description="The campaign report: report.md (for pasting), index.html (self-contained) and plots "
                      "(leaderboard beside published models, per-domain bars, valid vs test, per-dataset AP), "
                      "with failing checks and invalid submissions first.")
def rendered(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
    from definitions import defs  # every check of the code location (runs started by `bench` have no repository)

    checks = list(defs.resolve_asset_graph().asset_check_keys)
    findings = failing_checks(context.instance, checks)
    out = render_report(home.report_db_path, home.report_dir, warehouse_db=home.warehouse_path, findings=findings)
    context.log.info(f"report rendered: {out.html} ({out.models} models, {out.datasets} datasets, "
                     f"{len(findings)} failing checks)")
    return dg.MaterializeResult(metadata={
        "report": dg.MetadataValue.md(out.summary_md),
        "html": dg.MetadataValue.path(str(out.html)),
        "markdown": dg.MetadataValue.path(str(out.markdown)),
        "models": dg.MetadataValue.int(out.models),
        "datasets": dg.MetadataValue.int(out.datasets),
        "failing_checks": dg.MetadataValue.int(len(findings)),
    })
