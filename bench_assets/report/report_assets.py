"""`report/rendered`: the pages the families contribute (the RF100-VL report and the augbench paper page:
markdown for pasting, a self-contained HTML page, plots), rendered from the dbt marts, with every failing asset
check listed first; a page that fails to render fails the asset after the other pages are written."""


import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import dagster as dg

from bench_assets.platform.automation import eager_until_requested
from bench_assets.platform.check_results import check_result
from bench_assets.platform.contribution import WAREHOUSE_KEY, FamilyContribution, mart_key
from bench_assets.platform.findings import Finding
from bench_assets.platform.report_pages import PageInputs, RenderedPage
from resources.bench_home import BenchHome

FRESH_CHECK = "marts_fresh"
IMAGE_LINK = re.compile(r"!\[([^\]]*)\]\(([^)\s]+\.png)\)")


def marts_fresh(warehouse_at: float | None, marts_at: dict[str, float | None]) -> Finding:
    """Every mart a page shows was built after the warehouse's latest rebuild: otherwise the page shows numbers
    from before it (a mart skipped or failed in the last report build)."""
    if warehouse_at is None:
        return Finding(False, "the warehouse was never materialized: the pages show nothing current")
    stale = [{"mart": m, "built_at": at, "warehouse_at": warehouse_at} for m, at in sorted(marts_at.items())
             if at is None or at < warehouse_at]
    if stale:
        names = ", ".join(r["mart"] for r in stale)
        return Finding(False, f"{len(stale)} of {len(marts_at)} marts the pages show are older than the warehouse "
                              f"({names}): the report mixes old and new numbers; materialize the report (bench "
                              "report, or report_job in the UI)", rows=stale)
    return Finding(True, f"all {len(marts_at)} marts the pages show were built after the warehouse's latest rebuild")


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
              automation_condition=eager_until_requested(),
              check_specs=[dg.AssetCheckSpec(FRESH_CHECK, asset=["report", "rendered"], blocking=False,
                                             description="Every mart the pages show was built after the "
                                                         "warehouse's latest rebuild.")],
              description="Every family's page, each with failing checks first: the campaign report (report.md "
                          "for pasting, a self-contained index.html, plots: leaderboard beside published models, "
                          "per-domain bars, valid vs test, per-dataset AP) and the augbench paper page "
                          "(report/augbench/: paper table, speedups, coverage, winners). Metadata keys carry the "
                          "page's name.")
    def rendered(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
        findings = failing_checks(context.instance, every_check())
        inputs = PageInputs(report_db=home.report_db_path, warehouse_db=home.warehouse_path,
                            out_dir=home.report_dir, findings=findings)
        metadata: dict[str, dg.MetadataValue] = {"failing_checks": dg.MetadataValue.int(len(findings))}
        failed: list[str] = []
        for page in pages:
            try:
                out = page.render(inputs)
            except Exception as exc:  # one page's bad marts must not cost the other pages their render
                context.log.error(f"{page.name} page failed: {type(exc).__name__}: {exc}")
                failed.append(f"{page.name}: {type(exc).__name__}: {exc}")
                continue
            context.log.info(f"{page.name} page rendered: {out.html} "
                             + ", ".join(f"{n} {k}" for k, n in out.counts.items())
                             + f", {len(findings)} failing checks")
            metadata.update(page_metadata(page.name, out))
        if failed:
            raise dg.Failure(description=f"{len(failed)} of {len(pages)} pages failed to render (the others were "
                                         f"written): " + "; ".join(failed), metadata=metadata)
        fresh = check_result(marts_fresh(_materialized_at(context.instance, WAREHOUSE_KEY),
                                         {m: _materialized_at(context.instance, mart_key(m)) for m in marts}))
        return dg.MaterializeResult(metadata=metadata, check_results=[dg.AssetCheckResult(
            check_name=FRESH_CHECK, passed=fresh.passed, severity=fresh.severity, description=fresh.description,
            metadata=fresh.metadata)])

    return rendered


def page_metadata(name: str, out: RenderedPage) -> dict[str, dg.MetadataValue]:
    """A page's metadata on `report/rendered`, every key prefixed with the page's name: its summary, the whole
    page with its plots embedded, its files and its counts."""
    return {f"{name}_{key}": value for key, value in {
        "report": dg.MetadataValue.md(out.summary_md),
        "full_report": dg.MetadataValue.md(inline_images(out.markdown.read_text(), out.markdown.parent)),
        "html": dg.MetadataValue.path(str(out.html)),
        "markdown": dg.MetadataValue.path(str(out.markdown)),
        "plots": dg.MetadataValue.json([str(p) for p in out.plots]),
        **{k: dg.MetadataValue.int(n) for k, n in out.counts.items()},
    }.items()}


def inline_images(markdown: str, folder: Path) -> str:
    """`markdown` with every image it links from `folder` embedded as a data URI, so the whole report, plots
    included, reads in the UI's metadata panel (a relative link would point at nothing there)."""
    import base64

    def embed(match: re.Match[str]) -> str:
        path = folder / match.group(2)
        if match.group(2).startswith(("data:", "http:", "https:", "/")) or not path.is_file():
            return match.group(0)
        return f"![{match.group(1)}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})"

    return IMAGE_LINK.sub(embed, markdown)


def _materialized_at(instance: dg.DagsterInstance, key: dg.AssetKey) -> float | None:
    event = instance.get_latest_materialization_event(key)
    return event.timestamp if event is not None else None
