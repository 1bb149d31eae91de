"""What every benchmark's result file under `benchmarks/results/` records besides its figures: when it ran, on what
machine (with the load average at the start: the machine is shared), and the command that produced it.

The docs quote these files and `tests/platform/test_doc_figures.py` checks each quoted figure against them, so a
figure in the docs always names a file, and the file names the command that reproduces it."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench_assets.platform.provenance import first_cpu, meminfo_gib

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def machine_facts() -> dict[str, Any]:
    """Python, platform, core count, CPU model, memory and the 1/5/15-minute load averages right now."""
    load = os.getloadavg()
    facts: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                             "machine": platform.machine(), "cpus": os.cpu_count(),
                             "load_average_1m": round(load[0], 2), "load_average_5m": round(load[1], 2),
                             "load_average_15m": round(load[2], 2)}
    try:
        info = first_cpu()
        if "model name" in info:
            facts["cpu_model"] = info["model name"]
        # The kind of host: CPU kernels (and so trained weights) differ between kinds (docs/scale-out.md)
        facts["cpu_family_model"] = f"{info.get('cpu family', '?')}/{info.get('model', '?')}"
        facts["cpu_avx512"] = "avx512f" in info.get("flags", "").split()
        total = meminfo_gib("MemTotal")
        if total is not None:
            facts["memory_gib"] = round(total, 1)
    except OSError:
        pass
    return facts


def shown(x: Path | str) -> str:
    """A path relative to the repository when it lies inside it (commands read the same on every checkout)."""
    p = Path(x)
    if p.is_absolute() and p.is_relative_to(REPO):
        return str(p.relative_to(REPO))
    return str(x)


def command() -> str:
    """This process's command line as it would be typed at the repository root."""
    exe = Path(sys.executable)
    python = ".venv/bin/python" if exe.parent == REPO / ".venv" / "bin" else str(exe)
    return shlex.join([python, shown(Path(sys.argv[0]).resolve()), *sys.argv[1:]])


def minutes(seconds: float) -> str:
    """26 min 02 s: how the docs write a long run's wall time."""
    s = round(seconds)
    return f"{s // 60} min {s % 60:02d} s"


def git_state() -> dict[str, Any]:
    """The checkout a run measured: HEAD and how many tracked files differ from it."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True).stdout.strip()

    changed = [line for line in git("status", "--porcelain", "--untracked-files=no").splitlines() if line]
    return {"commit": git("rev-parse", "HEAD"), "changed_tracked_files": len(changed)}


def write_result(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {shown(path)}", file=sys.stderr)
    return path
