"""`rf100vl/campaign_status`: where every registered model's campaign stands, in the UI (what `bench status` prints).

Per model: done, running, queued, failed and missing partitions of its suite and the ETA of the rest (the lane
planner's longest-first makespan with the cost model, as `bench status`), as a table and a stacked-bar plot in the
asset's metadata. Rebuilt by the report automation whenever a checkpoint or a score lands, and on demand.
"""

from pathlib import Path
from typing import Any

import dagster as dg

from bench_assets.platform.automation import after_upstream_updates
from bench_assets.platform.document import blank_figure, figure_png, plot_context
from bench_assets.rf100vl.campaign.progress import (
    STATES,
    ModelProgress,
    campaign_lanes,
    campaign_progress,
    remaining_eta,
)
from bench_assets.rf100vl.defs.score_assets import scores
from resources.bench_home import BenchHome

STATE_COLOURS = {"done": "#2e7d32", "running": "#1565c0", "queued": "#90caf9", "failed": "#c62828",
                 "missing": "#bdbdbd"}
PLOT_DPI = 100


def status_rows(progress: list[ModelProgress], etas: dict[str, tuple[float, str]]) -> list[dict[str, Any]]:
    """One row per model: its suite, partitions per state, share done, ETA in hours and where its costs came from."""
    rows = []
    for p in progress:
        eta_s, source = etas.get(p.model, (None, "no estimate"))
        total = len(p.states)
        rows.append({"model": p.model, "suite": p.suite, "partitions": total,
                     **{s: p.count(s) for s in STATES},
                     "done_pct": round(100.0 * p.count("done") / total, 1) if total else 0.0,
                     "eta_h": None if eta_s is None else round(eta_s / 3600, 2), "eta_source": source})
    return rows


def status_markdown(rows: list[dict[str, Any]], lanes: int) -> str:
    head = "| model | suite | " + " | ".join(STATES) + " | done | ETA |\n|---|---|" + "---:|" * (len(STATES) + 2)
    lines = [head]
    for r in rows:
        eta = "finished" if r["eta_h"] == 0 else ("-" if r["eta_h"] is None else f"{r['eta_h']:.1f} h")
        lines.append(f"| {r['model']} | {r['suite']} | " + " | ".join(str(r[s]) for s in STATES)
                     + f" | {r['done']}/{r['partitions']} ({r['done_pct']:.0f}%) | {eta} |")
    return "\n".join(lines) + f"\n\nETA on {lanes} lane(s), longest first, partitions running now counted in full."


def pending_markdown(progress: list[ModelProgress]) -> str:
    """Which (dataset, model) partitions are not done, by state: what a researcher looks for first."""
    lines = []
    for state in STATES:
        if state == "done":
            continue
        pairs = [f"{d} | {p.model}" for p in progress for d, s in sorted(p.states.items()) if s == state]
        if pairs:
            more = f" and {len(pairs) - 40} more" if len(pairs) > 40 else ""
            shown = ", ".join(f"`{x}`" for x in pairs[:40]) + more
            lines.append(f"- **{state}** ({len(pairs)}): {shown}")
    return "Not done yet, by state (dataset | model):\n\n" + "\n".join(lines) if lines else "Every partition is done."


def status_plot(rows: list[dict[str, Any]]) -> bytes:
    """Horizontal stacked bars: partitions per state for each model, the legend above the bars."""
    with plot_context():
        fig = blank_figure(7.0, 1.2 + 0.45 * max(1, len(rows)))
        ax = fig.add_subplot()
        names = [r["model"] for r in rows]
        left = [0] * len(rows)
        for state in STATES:
            widths = [r[state] for r in rows]
            ax.barh(names, widths, left=left, color=STATE_COLOURS[state], label=state)
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_xlabel("partitions (datasets of the model's suite)")
        ax.invert_yaxis()
        ax.legend(ncols=len(STATES), loc="lower left", bbox_to_anchor=(0, 1.02), frameon=False)
        return figure_png(fig, PLOT_DPI)


def campaign_status_result(home: Path, instance: Any) -> dg.MaterializeResult:
    from bench_assets.rf100vl.defs.jobs import latest_runs
    from bench_assets.rf100vl.report.plots import png_markdown

    progress = campaign_progress(home, latest_runs(instance))
    lanes = campaign_lanes(home)
    etas = {p.model: remaining_eta(home, p, lanes) for p in progress}
    rows = status_rows(progress, etas)
    md = status_markdown(rows, lanes) + "\n\n" + pending_markdown(progress)
    if rows:
        md += "\n\n" + png_markdown(status_plot(rows), "partitions per state and model")
    return dg.MaterializeResult(metadata={
        "status": dg.MetadataValue.md(md),
        "models": dg.MetadataValue.int(len(rows)),
        "partitions": dg.MetadataValue.int(sum(r["partitions"] for r in rows)),
        "done": dg.MetadataValue.int(sum(r["done"] for r in rows)),
        "failed": dg.MetadataValue.int(sum(r["failed"] for r in rows)),
        "lanes": dg.MetadataValue.int(lanes),
        "rows": dg.MetadataValue.json(rows),
        "not_done": dg.MetadataValue.json({f"{d}|{p.model}": s for p in progress for d, s in sorted(p.states.items())
                                          if s != "done"}),
    })


@dg.asset(key=["rf100vl", "campaign_status"], group_name="rf100vl", deps=[scores],
          automation_condition=after_upstream_updates("after a score lands"),
          description="Where every registered model's campaign stands: done, running, queued, failed and missing "
                      "partitions and the ETA of the rest (as `bench status`), as a table and a plot.")
def campaign_status(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
    return campaign_status_result(home.path, context.instance)
