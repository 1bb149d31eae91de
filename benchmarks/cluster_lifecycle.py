"""How long `bench cluster rotate-secrets` and `bench cluster down` take on a loopback cluster (docs/scale-out.md
quotes both): `bench cluster up --workers W --lanes 1` on a fresh home, then `rotate-secrets` N times, then `down`,
each timed as the user runs it (a `bench` process, wall seconds). Repeated `--repeat` times on fresh homes; the
medians are what the doc quotes. `--background` starts each `bench` as a script's background job does (`bench cluster
up &`): with SIGINT ignored, which every server it starts inherits unless `bench` resets it.

    .venv/bin/python benchmarks/cluster_lifecycle.py [--workers 1] [--rotations 2] [--repeat 2] [--background]

Needs the servers `bench cluster up` needs (scripts/system_deps.sh). Writes
`benchmarks/results/cluster_lifecycle.json`. Not a test (wall-clock, machine-dependent).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _result import REPO, RESULTS, command, git_state, machine_facts, now, write_result

BENCH = REPO / ".venv" / "bin" / "bench"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _timed(home: Path, *args: str, background: bool = False) -> float:
    env = {**os.environ, "BENCH_HOME": str(home), "OMP_NUM_THREADS": "1"}
    started = time.monotonic()
    out = subprocess.run([str(BENCH), "cluster", *args], env=env, capture_output=True, text=True, timeout=600,
                         preexec_fn=_ignore_sigint if background else None)
    seconds = time.monotonic() - started
    if out.returncode != 0:
        raise SystemExit(f"bench cluster {' '.join(args)} exited {out.returncode}:\n{out.stdout[-2000:]}"
                         f"{out.stderr[-2000:]}")
    return round(seconds, 2)


def one_round(workers: int, rotations: int, background: bool) -> dict[str, object]:
    home = Path(tempfile.mkdtemp(prefix="bench-lifecycle-"))
    home.chmod(0o711)  # the postgres user enters the home to reach its data folder
    try:
        up = _timed(home, "up", "--workers", str(workers), "--lanes", "1", background=background)
        rotate = [_timed(home, "rotate-secrets", background=background) for _ in range(rotations)]
        down = _timed(home, "down", background=background)
        return {"up_s": up, "rotate_s": rotate, "down_s": down}
    finally:
        subprocess.run([str(BENCH), "cluster", "down"], env={**os.environ, "BENCH_HOME": str(home)},
                       capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--rotations", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--background", action="store_true", help="start each bench with SIGINT ignored, as `... &` does")
    ap.add_argument("--output", type=Path, default=RESULTS / "cluster_lifecycle.json")
    a = ap.parse_args()
    rounds = [one_round(a.workers, a.rotations, a.background) for _ in range(a.repeat)]
    rotate = [s for r in rounds for s in r["rotate_s"]]  # type: ignore[union-attr]
    doc = {"benchmark": "cluster_lifecycle", "date": now(), "command": command(), "machine": machine_facts(),
           "git": git_state(), "workers": a.workers, "sigint_ignored": a.background, "rounds": rounds,
           "median_rotate_s": round(statistics.median(rotate), 1),
           "median_down_s": round(statistics.median(r["down_s"] for r in rounds), 1),  # type: ignore[misc]
           "load_average_1m_at_end": round(os.getloadavg()[0], 2)}
    write_result(a.output, doc)
    print(f"rotate-secrets median {doc['median_rotate_s']} s over {len(rotate)}, down median "
          f"{doc['median_down_s']} s over {len(rounds)} ({a.workers} worker(s))")


if __name__ == "__main__":
    main()
