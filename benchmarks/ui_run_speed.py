"""A light job launched from the UI against the same job run by `bench`: the UI run within 2x of the CLI.

The UI path is the real one: `bench ui` (dagster dev: webserver, daemon, run queue, a run process per run) on a
throw-away BENCH_HOME, runs submitted through the webserver's GraphQL API as the Launch button does. The CLI path
is what `bench` does: the same job executed in-process on the same instance. Jobs: the warehouse rebuild with its
eight checks (`warehouse_job`, on a synthetic campaign of 4 models x 8 datasets) and one dataset partition
(`rf100vl_dataset_job`, mini-tiny, regenerated and verified).

Two figures per job, medians of `--repeat` runs:
- **run time**: the run's own start to end (the "Duration" the UI shows), against the CLI's execution wall;
  the target (issue 14): UI <= 2x CLI;
- **click to done**: submission to success, which adds the run queue and the run process's start-up (reported, no
  target: it is the price of running outside the webserver's process).

    .venv/bin/python benchmarks/ui_run_speed.py [--repeat 3]

Prints a markdown table and one JSON line, writes `benchmarks/results/ui_run_speed.json`, exits 1 when a run-time
ratio exceeds 2. Not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TARGET = 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ui(port: int, proc: subprocess.Popen, timeout_s: float = 300) -> None:
    from dagster_graphql import DagsterGraphQLClient

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            client = DagsterGraphQLClient("127.0.0.1", port_number=port, timeout=10)
            client._execute("{ repositoriesOrError { __typename } }")  # noqa: SLF001
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(1)
    raise RuntimeError(f"bench ui did not answer on port {port} within {timeout_s:.0f} s")


def ui_run(port: int, instance: Any, job: str, tags: dict[str, str]) -> dict[str, float]:
    import dagster as dg
    from dagster_graphql import DagsterGraphQLClient

    client = DagsterGraphQLClient("127.0.0.1", port_number=port, timeout=60)
    t0 = time.time()
    run_id = client.submit_job_execution(job, repository_location_name="bench", tags=tags)
    while True:
        rec = instance.get_run_records(dg.RunsFilter(run_ids=[run_id]))[0]
        if rec.dagster_run.is_finished:
            break
        time.sleep(0.2)
    assert rec.dagster_run.status == dg.DagsterRunStatus.SUCCESS, f"{job} {tags}: {rec.dagster_run.status}"
    return {"run_s": rec.end_time - rec.start_time, "click_to_done_s": rec.end_time - t0}


def cli_run(instance: Any, job: Any, partition_key: str | None) -> float:
    from bench_assets.cli.location import run_job

    t0 = time.perf_counter()
    outcome = run_job(instance, job, partition_key=partition_key)
    assert outcome.success, outcome.errors
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "ui_run_speed.json")
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bench-ui-speed-")) / "bench"
    os.environ.update({"BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"), "OMP_NUM_THREADS": "1"})
    from bench_assets.cli.location import load_location
    from bench_assets.platform.instance import open_instance
    from bench_assets.report.jobs import warehouse_job
    from bench_assets.rf100vl.defs.jobs import dataset_job
    from bench_assets.rf100vl.defs.partitions import register_partitions
    from tests.synthetic_campaign import make_campaign

    make_campaign(home, n_models=4, n_datasets=8, seed=0)
    instance = open_instance(home)
    register_partitions(instance, ["mini-tiny"])
    load_location()
    jobs = [("warehouse_job", warehouse_job, None), ("rf100vl_dataset_job mini-tiny", dataset_job, "mini-tiny")]
    cli = {name: [cli_run(instance, job, key) for _ in range(args.repeat)] for name, job, key in jobs}

    port = _free_port()
    log = home.parent / "bench_ui.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bench_assets.cli", "ui", "--port", str(port)], cwd=REPO,
                                env=dict(os.environ), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ui(port, proc)
        ui = {name: [ui_run(port, instance, job.name, {"dagster/partition": key} if key else {})
                     for _ in range(args.repeat)] for name, job, key in jobs}
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)

    rows = []
    for name, _, _ in jobs:
        c = statistics.median(cli[name])
        u = statistics.median(r["run_s"] for r in ui[name])
        k = statistics.median(r["click_to_done_s"] for r in ui[name])
        rows.append({"job": name, "cli_s": c, "ui_run_s": u, "ui_click_to_done_s": k, "ratio": u / c})
    result = {"date": dt.date.today().isoformat(), "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
              "machine": f"{os.cpu_count()} CPUs", "target_ratio": TARGET, "rows": rows,
              "raw": {"cli": cli, "ui": ui}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("| job | CLI (in-process) | UI run | UI / CLI | UI click to done |\n|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['job']} | {r['cli_s']:.2f} s | {r['ui_run_s']:.2f} s | x{r['ratio']:.2f} | "
              f"{r['ui_click_to_done_s']:.1f} s |")
    print(json.dumps(result))
    return 0 if all(r["ratio"] <= TARGET for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
