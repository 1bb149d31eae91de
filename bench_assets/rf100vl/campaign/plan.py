"""The lane planner: a campaign's predicted makespan and finish time on N GPUs (`bench plan`), from per-dataset
sizes and the cost model (`cost_model.py`), scheduled longest first (`lane_plan.py`), for 1-4 jobs per GPU."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from bench_assets.rf100vl.campaign.cost_model import SHARING_COST, cost_model, durations, partition_images
from bench_assets.rf100vl.campaign.lane_plan import longest_first

JOBS_PER_GPU_TRIED = (1, 2, 3, 4)
GOOD_ENOUGH = 1.05  # suggest the fewest jobs per GPU whose makespan is within 5% of the best


def suggest(makespans: dict[int, float]) -> int:
    """The fewest jobs per GPU within GOOD_ENOUGH of the shortest makespan (fewer jobs: less memory, simpler)."""
    best = min(makespans.values())
    return min(k for k, m in makespans.items() if m <= best * GOOD_ENOUGH)


def repeated_images(images: dict[str, int], datasets: list[str]) -> dict[str, int]:
    """Images per partition when `datasets` names a dataset more than once (its replicates, the kill-and-resume
    check): each repeat is a partition of its own, `name#1`, `name#2`, ..."""
    out: dict[str, int] = {}
    seen: dict[str, int] = {}
    for name in datasets:
        k = seen.get(name, 0)
        seen[name] = k + 1
        out[name if k == 0 else f"{name}#{k}"] = images[name]
    return out


def plan_campaign(home: Path, model: str, datasets: list[str], *, epochs: int, gpus: int, jobs_per_gpu: int = 0,
                  cpu_lanes: int = 1, sharing_cost: float | None = None, max_jobs_per_gpu: int | None = None,
                  now: dt.datetime | None = None) -> dict[str, Any]:
    """The makespan for 1-4 jobs per GPU (only those that fit `max_jobs_per_gpu`, the measured memory's limit, when
    given) or for `cpu_lanes` CPU lanes, and the suggested (or given) jobs per GPU. A dataset named twice in
    `datasets` is trained twice (a replicate)."""
    now = now or dt.datetime.now().astimezone()
    images = repeated_images(partition_images(home, sorted(set(datasets))), datasets)
    cost = SHARING_COST if sharing_cost is None else sharing_cost
    options: dict[int, dict[str, Any]] = {}
    if gpus > 0:
        tried = [k for k in JOBS_PER_GPU_TRIED if max_jobs_per_gpu is None or k <= max(1, max_jobs_per_gpu)]
        for k in tried if not jobs_per_gpu else (jobs_per_gpu,):
            m = cost_model(home, model, epochs, "gpu", k, cost)
            plan = longest_first(durations(images, m), gpus * k)
            options[k] = {"lanes": gpus * k, "makespan_s": plan.makespan, "lower_bound_s": plan.lower_bound,
                          "busy_share": plan.busy_share, "source": m.source, "s_per_image_epoch": m.s_per_image_epoch,
                          "slowdown": m.slowdown}
        chosen = jobs_per_gpu or suggest({k: o["makespan_s"] for k, o in options.items()})
    else:
        m = cost_model(home, model, epochs, "cpu")
        plan = longest_first(durations(images, m), cpu_lanes)
        options[1] = {"lanes": cpu_lanes, "makespan_s": plan.makespan, "lower_bound_s": plan.lower_bound,
                      "busy_share": plan.busy_share, "source": m.source, "s_per_image_epoch": m.s_per_image_epoch,
                      "slowdown": 1.0}
        chosen = 1
    pick = options[chosen]
    finish = now + dt.timedelta(seconds=pick["makespan_s"])
    doc = {"model": model, "partitions": len(datasets), "epochs": epochs, "gpus": gpus,
           "images_outside_test": sum(images.values()), "jobs_per_gpu": chosen if gpus else None,
           "suggested": not jobs_per_gpu and gpus > 0, "makespan_s": pick["makespan_s"],
           "finish": finish.isoformat(timespec="minutes"), "cost_source": pick["source"],
           "options": {str(k): v for k, v in options.items()}}
    doc["text"] = _text(doc, options, chosen, gpus)
    return doc


def _text(doc: dict[str, Any], options: dict[int, dict[str, Any]], chosen: int, gpus: int) -> str:
    where = f"{gpus} GPU(s)" if gpus else f"{options[1]['lanes']} CPU lane(s)"
    lines = [f"{doc['model']}: {doc['partitions']} partition(s) to run, {doc['images_outside_test']} images outside "
             f"test, {doc['epochs']} epochs, on {where}; cost per image-epoch: {doc['cost_source']}"]
    if gpus:
        lines.append("jobs/GPU  lanes  makespan h  lower bound h  busy")
        for k, o in options.items():
            mark = "  <- suggested" if k == chosen and doc["suggested"] else ("  <- chosen" if k == chosen else "")
            lines.append(f"{k:8d}  {o['lanes']:5d}  {o['makespan_s'] / 3600:10.2f}  {o['lower_bound_s'] / 3600:13.2f}"
                         f"  {o['busy_share']:5.1%}{mark}")
    lines.append(f"predicted makespan {doc['makespan_s'] / 3600:.2f} h: finished around {doc['finish']}")
    return "\n".join(lines)
