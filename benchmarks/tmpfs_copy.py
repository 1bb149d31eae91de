"""What creating a tree of files costs on the disk against /dev/shm (tmpfs): the figure docs/testing.md quotes for
why the tests' temporary files go to RAM (tests/suite_tmpfs.py).

Makes the clean synthetic campaign the rf100vl tests copy for every test (`tests/synthetic_campaign.py`, 4 models x
6 datasets, as `tests/rf100vl/conftest.py` makes it), then copies it with `shutil.copytree` REPEAT times into a
folder on each filesystem, alternating, and records each copy's wall, user and system CPU (`getrusage` of this
process). The disk folder is under `--disk` (default /tmp, where pytest puts its folders without the plugin), the
RAM one under `/dev/shm`. Single copies vary a lot on a shared host: the medians are what to read.

    .venv/bin/python benchmarks/tmpfs_copy.py [--repeat 9]

Writes `benchmarks/results/tmpfs_copy.json` (date, machine, command, the file and folder counts, medians per
filesystem and every copy). Informational: no target, never run by pytest.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _result import REPO, RESULTS, command, git_state, machine_facts, now, write_result

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tests.synthetic_campaign import make_campaign  # noqa: E402

CAMPAIGN = {"n_models": 4, "n_datasets": 6, "seed": 1}  # tests/rf100vl/conftest.py's clean_campaign


def _cpu() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def copy_cost(src: Path, dst: Path) -> dict[str, float]:
    """One copytree of `src` to `dst`: wall, user and system seconds."""
    (u0, s0), t0 = _cpu(), time.perf_counter()
    shutil.copytree(src, dst)
    (u1, s1), t1 = _cpu(), time.perf_counter()
    return {"wall_s": t1 - t0, "user_s": u1 - u0, "sys_s": s1 - s0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--disk", type=Path, default=Path("/tmp"))
    args = ap.parse_args()
    places = {"disk": args.disk, "tmpfs": Path("/dev/shm")}
    folders = {name: Path(tempfile.mkdtemp(prefix="bench-tmpfs-copy-", dir=where)) for name, where in places.items()}
    try:
        src = folders["disk"] / "src"
        make_campaign(src, **CAMPAIGN)
        files = sum(1 for p in src.rglob("*") if p.is_file())
        dirs = sum(1 for p in src.rglob("*") if p.is_dir())
        size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in places}
        for i in range(args.repeat):
            for name, folder in folders.items():
                runs[name].append(copy_cost(src, folder / f"copy{i}"))
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    medians = {name: {k: round(statistics.median(r[k] for r in rs), 4) for k in ("wall_s", "user_s", "sys_s")}
               for name, rs in runs.items()}
    for name, m in medians.items():
        print(f"{name:5s} ({places[name]}): median wall {m['wall_s']:.3f} s, user {m['user_s']:.3f} s, "
              f"system {m['sys_s']:.3f} s per copy of {files} files in {dirs} folders")
    write_result(RESULTS / "tmpfs_copy.json", {
        "benchmark": "tmpfs_copy", "date": now(), "machine": machine_facts(), "command": command(), "git": git_state(),
        "campaign": CAMPAIGN, "tree": {"files": files, "folders": dirs, "bytes": size},
        "places": {k: str(v) for k, v in places.items()},
        "repeat": args.repeat, "median": medians, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
