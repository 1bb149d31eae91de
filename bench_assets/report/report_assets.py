"""`report/rendered`: the pages the families contribute (the RF100-VL report: markdown for pasting, a
self-contained HTML page, plots), rendered from the dbt marts, with every failing asset check listed first."""


from collections.abc import Callable, Iterable, Sequence

import dagster as dg

from bench_assets.platform.contribution import FamilyContribution, mart_key
from bench_assets.platform.report_pages import PageInputs
from resources.bench_home import BenchHome


def failing_checks(instance: dg.DagsterInstance, check_keys: Iterable[dg.AssetCheckKey]
                   ) -> list[tuple[str, str, str, str]]:
    """(check, asset, severity, description) of every check whose latest evaluation failed."""
    from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(check_keys))
    out = []
    for key, rec in sorted(latest.items(), key=lambda kv: (kv[0].asset_key.to_user_string(), kv[0].name)):
        if rec.status != AssetCheckExecutionRecordStatus.FAILED:
            continue
        ev = rec.event.dagster_event.event_specific_data if rec.event and rec.event.dagster_event else None
        severity = getattr(getattr(ev, "severity", None), "value", "ERROR")
        description = getattr(ev, "description", None) or "failed (no description; see the check's metadata)"
        out.append((key.name, key.asset_key.to_user_string(), severity, description))
    return out


def rendered_asset(contributions: Sequence[FamilyContribution],
                   every_check: Callable[[], Iterable[dg.AssetCheckKey]]) -> dg.AssetsDefinition:
    """`every_check`: the check keys of the whole code location (a run's own asset graph holds only its job's)."""
    pages = [p for c in contributions for p in c.pages]
    marts = sorted({m for p in pages for m in p.marts})

    @dg.asset(key=["report", "rendered"], group_name="report", kinds={"html", "markdown"},
              deps=[mart_key(m) for m in marts], pool="duckdb_writer",
              automation_condition=dg.AutomationCondition.eager(),
              description="The campaign report: report.md (for pasting), index.html (self-contained) and plots "
                          "(leaderboard beside published models, per-domain bars, valid vs test, per-dataset AP), "
                          "with failing checks and invalid submissions first.")
    def rendered(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
        findings = failing_checks(context.instance, every_check())
        inputs = PageInputs(report_db=home.report_db_path, warehouse_db=home.warehouse_path,
                            out_dir=home.report_dir, findings=findings)
        metadata: dict[str, dg.MetadataValue] = {}
        for page in pages:
            out = page.render(inputs)
            context.log.info(f"{page.name} page rendered: {out.html} "
                             + ", ".join(f"{n} {k}" for k, n in out.counts.items())
                             + f", {len(findings)} failing checks")
            metadata.update({
                "report": dg.MetadataValue.md(out.summary_md),
                "html": dg.MetadataValue.path(str(out.html)),
                "markdown": dg.MetadataValue.path(str(out.markdown)),
                **{k: dg.MetadataValue.int(n) for k, n in out.counts.items()},
            })
        metadata["failing_checks"] = dg.MetadataValue.int(len(findings))
        return dg.MaterializeResult(metadata=metadata)

    return rendered
