"""`bench plan`: the four questions answered before the first GPU-hour of a campaign, each figure with its source.

- **makespan**: the lane planner per wave (waves run one after another: the pilot, then the rest), `plan.py`;
- **disk**: datasets to fetch + checkpoints + cache sidecars against the free space of BENCH_HOME, `disk_plan.py`;
- **memory**: the measured peak per lane of the model at the recipe's image size, how many lanes fit a device, and
  whether the lanes planned fit (the makespan only tries jobs per GPU that fit), `memory_plan.py`;
- **cost**: GPU-hours (GPUs x each wave's makespan: the boxes are held for the wave) x the price per GPU-hour the
  user gives, per wave.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import free_space
from bench_assets.rf100vl.campaign.disk_plan import checkpoint_figure, dataset_sizes, project_campaign_disk
from bench_assets.rf100vl.campaign.memory_plan import lane_memory_problem, lanes_that_fit, memory_figure, this_device
from bench_assets.rf100vl.campaign.plan import plan_campaign


def campaign_budget(home: Path, model: str, waves: list[tuple[str, list[str]]], *, epochs: int, imgsz: int,
                    disk_cache: bool, gpus: int, jobs_per_gpu: int = 0, cpu_lanes: int = 1,
                    sharing_cost: float | None = None, gpu_hour_price: float | None = None,
                    pretrained_params: int | None = None, now: dt.datetime | None = None) -> dict[str, Any]:
    """The plan of `model` over `waves` ([(name, datasets still to run)], run in order; a dataset named more than
    once is trained that many times: replicates, the kill-and-resume check)."""
    now = now or dt.datetime.now().astimezone()
    kind = "gpu" if gpus > 0 else "cpu"
    device_name, device_total = this_device(kind)
    mem = memory_figure(home, model, imgsz, kind, device_name)
    fit = lanes_that_fit(mem["per_lane_mb"], device_total)

    per_wave, start, options = [], now, None
    chosen_jobs = jobs_per_gpu
    for name, datasets in waves:
        p = plan_campaign(home, model, datasets, epochs=epochs, gpus=gpus, jobs_per_gpu=chosen_jobs,
                          cpu_lanes=cpu_lanes, sharing_cost=sharing_cost, max_jobs_per_gpu=fit, now=start)
        if gpus and not chosen_jobs:  # the first (pilot) wave's suggestion holds for the campaign
            chosen_jobs = p["jobs_per_gpu"]
        options = options or p["options"]
        start = start + dt.timedelta(seconds=p["makespan_s"])
        gpu_hours = p["makespan_s"] / 3600 * gpus
        per_wave.append({"wave": name, "partitions": len(datasets), "makespan_s": p["makespan_s"],
                         "finish": start.isoformat(timespec="minutes"), "gpu_hours": round(gpu_hours, 3),
                         "cost_usd": None if gpu_hour_price is None else round(gpu_hours * gpu_hour_price, 2),
                         "cost_source": p["cost_source"]})
    todo = [d for _, ds in waves for d in ds]
    sizes = dataset_sizes(home, sorted(set(todo)))
    ckpt, ckpt_source = checkpoint_figure(home, model, pretrained_params)
    runs = {d: todo.count(d) for d in sizes}
    disk = project_campaign_disk(sizes, runs=runs, imgsz=imgsz, cache=disk_cache,
                                 checkpoint_bytes_per_run=ckpt, checkpoint_source=ckpt_source,
                                 free_bytes=free_space(home))
    disk["source"] = f"free space of {home}; " + "; ".join(f"{k}: {v['source']}" for k, v in disk["parts"].items())
    lanes = (chosen_jobs or 1) if gpus else cpu_lanes
    device = "GPU" if gpus else "box (RAM)"
    memory = {"kind": kind, "imgsz": imgsz, "per_lane_mb": mem["per_lane_mb"], "device": device_name or None,
              "device_total_mb": device_total, "lanes_that_fit": fit, "lanes_planned": lanes,
              "problem": lane_memory_problem(lanes, mem["per_lane_mb"], device_total, device, mem["source"]),
              "source": mem["source"] + ("" if device_total else "; this box's GPU memory is unknown (no nvidia-smi)")}
    gpu_hours = sum(w["gpu_hours"] for w in per_wave)
    cost = {"gpu_hour_price_usd": gpu_hour_price, "gpu_hours": round(gpu_hours, 3),
            "usd": None if gpu_hour_price is None or not gpus else round(gpu_hours * gpu_hour_price, 2),
            "per_wave": [{"wave": w["wave"], "gpu_hours": w["gpu_hours"], "usd": w["cost_usd"]} for w in per_wave],
            "source": ("no GPUs in the plan (--gpus N)" if not gpus else
                       "no price given (--gpu-hour-price USD, from a live offer)" if gpu_hour_price is None else
                       f"GPU-hours x {gpu_hour_price} USD per GPU-hour (given); GPU-hours from the makespan")}
    makespan = {"seconds": sum(w["makespan_s"] for w in per_wave), "finish": start.isoformat(timespec="minutes"),
                "jobs_per_gpu": chosen_jobs if gpus else None,
                "lanes": (gpus * (chosen_jobs or 1)) if gpus else cpu_lanes,
                "per_wave": per_wave, "options": options,
                "source": "; ".join(sorted({w["cost_source"] for w in per_wave})) or "nothing left to run"}
    doc = {"model": model, "epochs": epochs, "gpus": gpus, "partitions": len(todo), "makespan": makespan,
           "disk": disk, "memory": memory, "cost": cost}
    doc["text"] = plan_text(doc)
    return doc


def plan_text(doc: dict[str, Any]) -> str:
    gb = 1e9
    m, d, mem, c = doc["makespan"], doc["disk"], doc["memory"], doc["cost"]
    where = f"{doc['gpus']} GPU(s) x {m['jobs_per_gpu']} job(s)" if doc["gpus"] else f"{m['lanes']} CPU lane(s)"
    lines = [f"{doc['model']}: {doc['partitions']} partition(s) to run, {doc['epochs']} epochs, on {where}", "",
             "makespan", "  wave        partitions  makespan h  GPU-hours  cost USD  finish"]
    for w in m["per_wave"]:
        usd = "-" if w["cost_usd"] is None else f"{w['cost_usd']:.2f}"
        lines.append(f"  {w['wave']:<10s}  {w['partitions']:10d}  {w['makespan_s'] / 3600:10.2f}  {w['gpu_hours']:9.2f}"
                     f"  {usd:>8s}  {w['finish']}")
    lines += [f"  source: {m['source']}", "", f"disk: needs {d['needed_bytes'] / gb:.2f} GB, "
              f"{d['free_bytes'] / gb:.2f} GB free: {'fits' if d['ok'] else 'DOES NOT FIT'}"]
    lines += [f"  {k:<11s} {v['bytes'] / gb:8.2f} GB  {v['source']}" for k, v in d["parts"].items()]
    per = "not measured" if mem["per_lane_mb"] is None else f"{mem['per_lane_mb'] / 1024:.2f} GB per lane"
    fits = "" if mem["lanes_that_fit"] is None else f"; {mem['lanes_that_fit']} fit one device"
    lines += ["", f"memory ({mem['kind'].upper()}, {mem['imgsz']} px): {per}{fits}; {mem['lanes_planned']} planned",
              f"  source: {mem['source']}"]
    if mem["problem"]:
        lines.append(f"  REFUSED: {mem['problem']}")
    usd = "-" if c["usd"] is None else f"{c['usd']:.2f} USD"
    lines += ["", f"cost: {c['gpu_hours']:.2f} GPU-hours, {usd}", f"  source: {c['source']}"]
    return "\n".join(lines)


def preflight_refusals(home: Path, model: str, datasets: list[str], *, imgsz: int, disk_cache: bool,
                       lane_devices: list[str] | None, pretrained_params: int | None = None) -> list[str]:
    """Why a campaign must not start (empty when it may): its disk projection (a dataset named twice trains twice)
    does not fit BENCH_HOME, or the lanes
    of this box (`lane_devices`: each lane's device, "cpu" or a GPU id; None on a cluster, whose boxes plan their
    own lanes) need more memory than the measured peak per lane allows."""
    from bench_assets.rf100vl.campaign.disk_plan import disk_refusal

    ckpt, ckpt_source = checkpoint_figure(home, model, pretrained_params)
    disk = project_campaign_disk(dataset_sizes(home, sorted(set(datasets))),
                                 runs={d: datasets.count(d) for d in datasets}, imgsz=imgsz, cache=disk_cache,
                                 checkpoint_bytes_per_run=ckpt, checkpoint_source=ckpt_source,
                                 free_bytes=free_space(home))
    out = [r for r in (disk_refusal(disk, home),) if r]
    if lane_devices:
        gpu_lanes = [d for d in lane_devices if d != "cpu"]
        kind = "gpu" if gpu_lanes else "cpu"
        per_device = max(gpu_lanes.count(d) for d in set(gpu_lanes)) if gpu_lanes else len(lane_devices)
        name, total = this_device(kind)
        mem = memory_figure(home, model, imgsz, kind, name)
        problem = lane_memory_problem(per_device, mem["per_lane_mb"], total, "GPU" if gpu_lanes else "box (RAM)",
                                      mem["source"])
        out += [problem] if problem else []
    return out
