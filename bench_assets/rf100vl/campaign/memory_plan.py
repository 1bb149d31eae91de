"""Memory per lane, measured, never derived: what one training job of a model at an image size holds at its peak
(VRAM reserved on a GPU lane, resident memory on a CPU lane), and how many such jobs fit a device.

A figure comes from, in order of preference:

1. **a profile** (`bench models profile-memory MODEL`: one short epoch through the campaign's own training child at
   the recipe's image size and physical batch, stored under `BENCH_HOME/profiles/memory/`);
2. **finished runs** of the model at that image size on that kind of lane (the peak their stats.json records);

and says whether it was measured on this kind of device or on another one (a peak measured on an H100 says little
about an A10). Parameter counts and GFLOPs are never used: yolox-s holds 6.2 GB per lane and yolov9s 10.8 GB at
640 px, batch 16, although yolov9s is not 1.7x larger (REFERENCE.md).

Pure apart from reading and writing the stored profiles and run records.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Any

from bench_assets.platform.fsutil import atomic_write_json, host_id
from bench_assets.rf100vl.training.run_store import finished_run_dirs, stats_path

PROFILES_DIR = ("profiles", "memory")
HEADROOM = 0.9  # plan lanes into 90% of a device's memory: allocator fragmentation, the CUDA context, the OS


@dataclass(frozen=True)
class MemoryProfile:
    model: str
    imgsz: int
    batch: int
    kind: str  # "gpu" (peak VRAM reserved) or "cpu" (peak resident set of the training process)
    peak_mb: float
    device_name: str  # the GPU's name, or the CPU's model name
    device_total_mb: float | None
    host: str
    measured_at: str
    how: str  # "profile step" or "run <dir>"


def profile_path(home: Path, model: str, imgsz: int, kind: str) -> Path:
    return home.joinpath(*PROFILES_DIR) / f"{model}__{imgsz}px__{kind}.json"


def save_profile(home: Path, profile: MemoryProfile) -> Path:
    path = profile_path(home, profile.model, profile.imgsz, profile.kind)
    atomic_write_json(path, asdict(profile))
    return path


def load_profile(home: Path, model: str, imgsz: int, kind: str) -> MemoryProfile | None:
    path = profile_path(home, model, imgsz, kind)
    try:
        return MemoryProfile(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a memory profile ({exc}); delete it and run `bench models profile-memory "
                         f"{model}` again") from exc


def run_peaks(home: Path, model: str, imgsz: int, kind: str) -> list[tuple[float, str]]:
    """(peak MB, run dir) of every finished run of `model` at `imgsz` on a `kind` lane that recorded its peak."""
    out = []
    for run_dir in finished_run_dirs(home):
        try:
            st = json.loads(stats_path(run_dir).read_text())
            if st["model"] != model or int(st["signature_fields"]["imgsz"]) != imgsz:
                continue
            dev = st["device"]
            on_gpu = dev.get("device") not in (None, "cpu")
            peak = dev.get("peak_vram_reserved_mb") if on_gpu else dev.get("peak_rss_mb")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if ("gpu" if on_gpu else "cpu") == kind and peak:
            out.append((float(peak), str(run_dir)))
    return out


def this_device(kind: str) -> tuple[str, float | None]:
    """(name, total MB) of this box's device of `kind`: the first GPU nvidia-smi lists, or the CPU and its RAM.
    ("", None) for a GPU when nvidia-smi is missing or fails. Reads no torch: a plan must stay light."""
    if kind == "gpu":
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return "", None
        try:
            out = subprocess.run([exe, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=20, check=True).stdout
            name, total = out.strip().splitlines()[0].rsplit(",", 1)
            return name.strip(), float(total)
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return "", None
    return cpu_name(), os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20


def cpu_name() -> str:
    from bench_assets.platform.provenance import first_cpu

    return first_cpu().get("model name") or "unknown CPU"


def memory_figure(home: Path, model: str, imgsz: int, kind: str, device_name: str) -> dict[str, Any]:
    """{per_lane_mb, source, measured_on}: the stored profile first, else the median peak of finished runs; the
    source says whether the device it was measured on is this box's (`device_name`). per_lane_mb None when nothing
    was measured (the source says how to measure it)."""
    prof = load_profile(home, model, imgsz, kind)
    if prof is not None:
        where = _where(prof.device_name, device_name)
        return {"per_lane_mb": prof.peak_mb, "measured_on": prof.device_name,
                "source": f"measured {where} (profile step, {prof.host}, {prof.measured_at}, batch {prof.batch})"}
    peaks = run_peaks(home, model, imgsz, kind)
    if peaks:
        return {"per_lane_mb": median(p for p, _ in peaks), "measured_on": None,
                "source": f"measured by {len(peaks)} finished run(s) of {model} at {imgsz} px (median peak)"}
    what = "VRAM" if kind == "gpu" else "resident memory"
    return {"per_lane_mb": None, "measured_on": None,
            "source": f"not measured: run `bench models profile-memory {model}` on the {kind.upper()} box "
                      f"(about a minute) for its peak {what} at {imgsz} px; parameter counts do not predict it"}


def _where(measured_on: str, here: str) -> str:
    return "here" if measured_on and measured_on == here else f"on another kind of box ({measured_on or 'unknown'})"


def lanes_that_fit(per_lane_mb: float | None, device_total_mb: float | None, headroom: float = HEADROOM) -> int | None:
    """How many jobs of `per_lane_mb` fit one device of `device_total_mb` (None when either is unknown)."""
    if not per_lane_mb or not device_total_mb:
        return None
    return int(device_total_mb * headroom // per_lane_mb)


def lane_memory_problem(lanes_per_device: int, per_lane_mb: float | None, device_total_mb: float | None,
                        device: str, source: str) -> str | None:
    """Why `lanes_per_device` jobs do not fit one device (None when they fit or nothing was measured)."""
    fit = lanes_that_fit(per_lane_mb, device_total_mb)
    if fit is None or lanes_per_device <= fit:
        return None
    assert per_lane_mb is not None and device_total_mb is not None
    return (f"{lanes_per_device} lane(s) per {device} need {lanes_per_device * per_lane_mb / 1024:.1f} GB "
            f"({per_lane_mb / 1024:.2f} GB each, {source}) but {HEADROOM:.0%} of its {device_total_mb / 1024:.1f} GB "
            f"holds {fit}: run at most {fit} lane(s) per device (BENCH_JOBS_PER_GPU / --lanes)")


def new_profile(model: str, imgsz: int, batch: int, kind: str, peak_mb: float, how: str,
                measured_at: str) -> MemoryProfile:
    name, total = this_device(kind)
    return MemoryProfile(model=model, imgsz=imgsz, batch=batch, kind=kind, peak_mb=round(peak_mb, 1),
                         device_name=name, device_total_mb=round(total, 1) if total else None, host=host_id(),
                         measured_at=measured_at, how=how)
