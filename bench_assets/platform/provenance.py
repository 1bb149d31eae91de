"""Where a number came from: the source tree's commit and cleanliness, installed package versions, and a label of
the hardware it was measured on. Recorded beside results by every family (submissions, augbench result files)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from resources.paths import REPO_ROOT


def source_tree(repo: Path = REPO_ROOT) -> dict[str, Any]:
    """The commit and whether the working tree had uncommitted changes (a dirty tree is not reproducible)."""
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=20, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=20, check=True).stdout
        return {"commit": commit, "dirty": bool(status.strip()), "changed_files": status.splitlines()[:20]}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "changed_files": []}


def package_versions(*dists: str) -> dict[str, str]:
    out = {}
    for d in dists:
        try:
            out[d] = importlib.metadata.version(d)
        except importlib.metadata.PackageNotFoundError:
            out[d] = "not installed"
    return out


def first_cpu(cpuinfo: str | None = None) -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (`model name`, `cpu family`, `model`, `flags`, ...); {} where
    it cannot be read."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return {}
    lines = cpuinfo.split("\n\n")[0].splitlines()
    return {k.strip(): v.strip() for k, sep, v in (line.partition(":") for line in lines) if sep}


def hardware_label(device: str) -> str:
    """What the numbers were measured on, for the result file and the consistency check."""
    cpu = first_cpu().get("model name") or platform.processor() or platform.machine()
    label = f"{cpu} x{os.cpu_count()} ({platform.system()} {platform.machine()})"
    if device == "cuda":
        try:
            import torch

            label += f" + {torch.cuda.get_device_name(0)}"
        except Exception:  # noqa: BLE001 - no CUDA: the adapters report the cells unsupported
            label += " + (no CUDA device)"
    return label


def meminfo_gib(field: str, meminfo: str | None = None) -> float | None:
    """A /proc/meminfo field (`MemTotal`, `MemAvailable`, ...) in GiB; None where /proc or the field is absent."""
    try:
        text = meminfo if meminfo is not None else Path("/proc/meminfo").read_text()
        for line in text.splitlines():
            if line.split(":", 1)[0] == field:
                return int(line.split()[1]) / 2**20  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def hardware_facts() -> dict[str, Any]:
    """The machine as a submission's `hardware` block describes it: CPU model and cores, RAM, and the first
    CUDA device (name, memory, CUDA version) when torch sees one. Reads torch only if it is already imported."""
    import sys

    cpu = first_cpu().get("model name") or platform.processor() or platform.machine()
    total = meminfo_gib("MemTotal")
    ram_gb = None if total is None else round(total)
    facts: dict[str, Any] = {"cpu": cpu, "cpu_cores": os.cpu_count(), "ram_gb": ram_gb, "gpu": None,
                             "gpu_memory_gb": None, "cuda_version": None, "driver_version": None}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        facts.update(gpu=props.name, gpu_memory_gb=round(props.total_memory / 2**30, 1),
                     cuda_version=torch.version.cuda)
    return facts


def machine_busy_s(stat: str | None = None) -> float | None:
    """CPU seconds every CPU of the machine has been busy since boot (not idle, not waiting on I/O), from /proc/stat;
    the difference over a run is the CPU the run cost on an otherwise idle machine. None where /proc is absent."""
    try:
        text = stat if stat is not None else Path("/proc/stat").read_text()
        fields = [int(x) for x in text.splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # user nice system idle iowait irq softirq steal
