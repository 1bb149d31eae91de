"""`rf100vl/campaign_plan`: `bench plan` in the UI, predicted against actual, for every registered model.

Per model (replicates and kill-and-resume checks aside): the four answers of `campaign/budget.py` for its whole
campaign (every dataset of its suite, done or not) on this box's lanes (the GPUs `BENCH_GPUS` names, else the CPU
lanes) and a price per GPU-hour given as run config: makespan per wave, disk, memory per lane and cost, each with
its source; beside them what happened so far (partitions finished, hours between the first run's start and the
last run's end, the disk its runs take). A table and a plot (predicted makespan per wave against the elapsed
hours; disk needed by part against the free space). Rebuilt by the automation when a score lands, and on demand.
"""

import datetime as dt
import json
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from bench_assets.platform.automation import after_upstream_updates
from bench_assets.platform.document import blank_figure, figure_png, plot_context
from bench_assets.rf100vl.defs.score_assets import scores
from resources.bench_home import BenchHome

PLOT_DPI = 100
GB = 1e9


class CampaignPlanConfig(dg.Config):
    gpu_hour_price: float = Field(default=0.0, ge=0.0, description="USD per GPU-hour for the cost (0: not given; "
                                                                   "take it from a live offer).")


def actual(home: Path, model: str) -> dict[str, Any]:
    """What the model's finished runs show: how many, hours from the first start to the last finish, their bytes."""
    from bench_assets.rf100vl.training.run_store import finished_run_dirs, runs_root, stats_path

    starts, ends, runs = [], [], 0
    for run_dir in finished_run_dirs(home):
        st = json.loads(stats_path(run_dir).read_text())
        if st.get("model") != model:
            continue
        runs += 1
        try:
            starts.append(dt.datetime.fromisoformat(st["started"]))
            ends.append(dt.datetime.fromisoformat(st["finished"]))
        except (KeyError, TypeError, ValueError):
            continue
    root = runs_root(home) / model
    used = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink()) if root.is_dir() else 0
    hours = (max(ends) - min(starts)).total_seconds() / 3600 if starts and ends else None
    return {"finished_runs": runs, "elapsed_h": None if hours is None else round(hours, 3), "runs_bytes": used}


def model_plan(home: Path, model: str, price: float | None) -> dict[str, Any]:
    """The budget of a registered model's whole campaign on this box's lanes, with what happened so far."""
    from bench_assets.rf100vl.campaign.budget import campaign_budget
    from bench_assets.rf100vl.campaign.progress import campaign_lanes
    from bench_assets.rf100vl.datasets.catalog import suite_members
    from bench_assets.rf100vl.training.models import model_recipe, read_entry
    from bench_assets.rf100vl.training.pretrained import read_lock
    from bench_assets.rf100vl.training.runplan import parse_model
    from resources.lanes import lanes_from_env

    entry = read_entry(home, model)
    names = suite_members(entry.suite) if entry and entry.suite else list(entry.datasets if entry else [])
    pilot = [d for d in names if d in set(entry.pilot if entry else [])]
    waves = [("pilot", pilot), ("rest", [d for d in names if d not in pilot])] if pilot else [("all", names)]
    _, recipe = model_recipe(home, model)
    size = recipe.recipe.size(parse_model(model).size, recipe.path)
    lanes = lanes_from_env()
    gpus = len({lane.cuda_visible_devices for lane in lanes if lane.cuda_visible_devices})
    per_gpu = len(lanes) // gpus if gpus else 0
    doc = campaign_budget(home, model, waves, epochs=recipe.recipe.protocol.epochs, imgsz=size.imgsz,
                          disk_cache=recipe.recipe.protocol.cache == "disk", gpus=gpus, jobs_per_gpu=per_gpu,
                          cpu_lanes=campaign_lanes(home), gpu_hour_price=price,
                          pretrained_params=(read_lock(home, model) or {}).get("params"))
    doc["actual"] = actual(home, model)
    doc["datasets"] = len(names)
    return doc


def plan_rows(plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for p in plans:
        m, d, mem, c, a = p["makespan"], p["disk"], p["memory"], p["cost"], p["actual"]
        rows.append({"model": p["model"], "datasets": p["datasets"], "finished_runs": a["finished_runs"],
                     "predicted_h": round(m["seconds"] / 3600, 3), "elapsed_h": a["elapsed_h"],
                     "makespan_source": m["source"], "disk_needed_gb": round(d["needed_bytes"] / GB, 2),
                     "disk_free_gb": round(d["free_bytes"] / GB, 2), "disk_fits": d["ok"],
                     "runs_gb": round(a["runs_bytes"] / GB, 3),
                     "memory_per_lane_gb": None if mem["per_lane_mb"] is None else round(mem["per_lane_mb"] / 1024, 2),
                     "memory_source": mem["source"], "gpu_hours": c["gpu_hours"], "cost_usd": c["usd"],
                     "cost_source": c["source"]})
    return rows


def plan_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | finished / datasets | predicted h | elapsed h | disk needed / free GB | memory per lane GB "
             "| GPU-hours | cost USD |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        elapsed = "-" if r["elapsed_h"] is None else f"{r['elapsed_h']:.2f}"
        mem = "not measured" if r["memory_per_lane_gb"] is None else f"{r['memory_per_lane_gb']:.2f}"
        cost = "-" if r["cost_usd"] is None else f"{r['cost_usd']:.2f}"
        lines.append(f"| {r['model']} | {r['finished_runs']} / {r['datasets']} | {r['predicted_h']:.2f} | {elapsed} "
                     f"| {r['disk_needed_gb']:.2f} / {r['disk_free_gb']:.2f}{'' if r['disk_fits'] else ' (NO)'} "
                     f"| {mem} | {r['gpu_hours']:.2f} | {cost} |")
    sources = [f"- {r['model']}: makespan {r['makespan_source']}; memory {r['memory_source']}; cost {r['cost_source']}"
               for r in rows]
    return "\n".join(lines) + "\n\nSources:\n" + "\n".join(sources)


def plan_plot(plans: list[dict[str, Any]]) -> bytes:
    """Left: predicted makespan per wave (stacked) and the hours elapsed so far, per model. Right: disk needed by
    part (stacked) against the free space."""
    with plot_context():
        fig = blank_figure(10.0, 1.6 + 0.5 * max(1, len(plans)))
        left, right = fig.subplots(1, 2)
        names = [p["model"] for p in plans]
        start = [0.0] * len(plans)
        waves = sorted({w["wave"] for p in plans for w in p["makespan"]["per_wave"]})
        for wave, colour in zip(waves, ("#1565c0", "#90caf9", "#5c6bc0"), strict=False):
            hours = [next((w["makespan_s"] / 3600 for w in p["makespan"]["per_wave"] if w["wave"] == wave), 0.0)
                     for p in plans]
            left.barh(names, hours, left=start, color=colour, label=f"predicted: {wave}")
            start = [a + b for a, b in zip(start, hours, strict=True)]
        elapsed = [p["actual"]["elapsed_h"] for p in plans]
        left.scatter([e for e in elapsed if e is not None], [n for n, e in zip(names, elapsed, strict=True)
                                                             if e is not None],
                     color="#c62828", marker="D", zorder=3, label="elapsed so far")
        left.set_xlabel("hours")
        left.invert_yaxis()
        left.legend(loc="lower left", bbox_to_anchor=(0, 1.02), frameon=False, ncols=2)
        start = [0.0] * len(plans)
        for part, colour in (("datasets", "#8d6e63"), ("checkpoints", "#2e7d32"), ("cache", "#f9a825"),
                             ("margin", "#bdbdbd")):
            gb = [p["disk"]["parts"][part]["bytes"] / GB for p in plans]
            right.barh(names, gb, left=start, color=colour, label=part)
            start = [a + b for a, b in zip(start, gb, strict=True)]
        for i, p in enumerate(plans):
            right.plot([p["disk"]["free_bytes"] / GB] * 2, [i - 0.4, i + 0.4], color="#c62828")
        right.set_xlabel("GB (red line: free under BENCH_HOME)")
        right.invert_yaxis()
        right.set_yticks(range(len(names)), [""] * len(names))
        right.legend(loc="lower left", bbox_to_anchor=(0, 1.02), frameon=False, ncols=4)
        return figure_png(fig, PLOT_DPI)


def campaign_plan_result(home: Path, price: float | None) -> dg.MaterializeResult:
    from bench_assets.rf100vl.report.plots import png_markdown
    from bench_assets.rf100vl.training.models import iter_entries
    from bench_assets.rf100vl.training.runplan import parse_model

    models = [e.model for e in iter_entries(home) if parse_model(e.model).key == parse_model(e.model).base]
    plans = [model_plan(home, m, price) for m in models]
    rows = plan_rows(plans)
    md = plan_markdown(rows) if rows else "No model registered yet."
    if rows:
        md += "\n\n" + png_markdown(plan_plot(plans), "predicted makespan per wave against elapsed; disk by part")
    return dg.MaterializeResult(metadata={
        "plan": dg.MetadataValue.md(md), "models": dg.MetadataValue.int(len(rows)),
        "rows": dg.MetadataValue.json(rows),
        "plans": dg.MetadataValue.json([{k: v for k, v in p.items() if k != "text"} for p in plans])})


@dg.asset(key=["rf100vl", "campaign_plan"], group_name="rf100vl", deps=[scores],
          automation_condition=after_upstream_updates("after a score lands"),
          description="`bench plan` for every registered model, predicted against actual: makespan per wave, disk, "
                      "memory per lane and cost with their sources, and the hours and disk its runs took so far.")
def campaign_plan(context: dg.AssetExecutionContext, config: CampaignPlanConfig, home: BenchHome
                  ) -> dg.MaterializeResult:
    return campaign_plan_result(home.path, config.gpu_hour_price or None)
