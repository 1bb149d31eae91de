"""The state of the machine while a cell is measured: load average, CPU clock and frequency governor (Linux
`/proc` and `/sys`; None where the kernel does not expose them, e.g. in many VMs).

A cell is flagged `busy` when the 1-minute load average, at its start or its end, is above its thread budget
plus BUSY_MARGIN: our own measuring process accounts for about the budget, anything beyond means another
process competed for the cores. `clock_moved` is set when the mean CPU clock changed by more than
CLOCK_TOLERANCE between the start and the end of the cell (frequency scaling, thermal throttling).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUSY_MARGIN = 0.5  # load above thread budget + this = another process was running
CLOCK_TOLERANCE = 0.05  # relative change of the mean CPU clock that counts as "moved"


@dataclass(frozen=True)
class Snapshot:
    load_1m: float | None
    cpu_mhz: float | None


def load_1m() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def cpu_mhz(cpuinfo: str | None = None) -> float | None:
    """Mean of the `cpu MHz` lines of /proc/cpuinfo (None when there are none)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    values = [float(line.split(":", 1)[1]) for line in cpuinfo.splitlines() if line.startswith("cpu MHz")]
    return sum(values) / len(values) if values else None


def governor() -> str | None:
    """The frequency governor of cpu0 (`performance`, `powersave`, ...), None when cpufreq is not exposed."""
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip() or None
    except OSError:
        return None


def snapshot() -> Snapshot:
    return Snapshot(load_1m(), cpu_mhz())


def conditions(start: Snapshot, end: Snapshot, thread_budget: int) -> dict[str, Any]:
    """What a cell's result records about the machine: the highest load seen, `busy`, the clock at both ends
    and `clock_moved` (None when the clock is not exposed)."""
    loads = [v for v in (start.load_1m, end.load_1m) if v is not None]
    load = max(loads) if loads else None
    moved = None
    if start.cpu_mhz and end.cpu_mhz:
        moved = abs(end.cpu_mhz - start.cpu_mhz) / start.cpu_mhz > CLOCK_TOLERANCE
    return {"load_1m": load, "busy": load is not None and load > thread_budget + BUSY_MARGIN,
            "cpu_mhz_start": start.cpu_mhz, "cpu_mhz_end": end.cpu_mhz, "clock_moved": moved}


def machine_facts() -> dict[str, Any]:
    """Per repeat: the CPU clock and governor at its start, and the load average then."""
    return {"governor": governor(), "cpu_mhz": cpu_mhz(), "load_1m": load_1m(), "cpu_count": os.cpu_count()}
