"""What the cluster's machinery costs at campaign size: run start-up, PostgreSQL event writes, partition pages.

Runs against a cluster that is up and has run a campaign (`bench cluster up --workers 2`, then `bench campaign
--model yolo9-t --suite mini --recipe smoke`), and measures, all in one go on this machine:

1. **Per run, from the cluster's own finished runs** (PostgreSQL event log): events per partition run, event-log
   bytes per event, and the run's phases: queued -> launched (the run queue), launched -> started (a run process
   starts and loads the code location), started -> ended (the steps). Start-up is reported as a share of the run.
2. **PostgreSQL writes at campaign size**: a scratch database on the cluster's own server; 400 runs x the measured
   events per run written through Dagster's `PostgresEventLogStorage`; events/s, and the whole campaign's write
   time against the simulated 8-lane makespan (`benchmarks/results/campaign_simulation.json`).
3. **The partitions page with 400 partitions**: a second webserver on the scratch database (same code location),
   first with the mini campaign's 4 (dataset, model) partitions materialized (the baseline), then with the
   catalogue's 100 datasets x 4 models; the GraphQL query of the asset's partition statuses and Chromium's load of
   `rf100vl/checkpoint`'s Partitions tab until a partition shows, medians, as ratios to the baseline.

    .venv/bin/python benchmarks/cluster_overhead.py --home /tmp/uiclu

Prints a markdown table and writes `benchmarks/results/cluster_overhead.json`. The scratch database and webserver
are removed at the end; the cluster's own database is only read. Not a test (wall-clock, machine-dependent).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SCRATCH_DB = "bench_overhead_scratch"
CAMPAIGN_RUNS = 400  # 100 datasets x 4 models
ASSET = ["rf100vl", "checkpoint"]
MODELS = ["model-a", "model-b", "model-c", "model-d"]
STATUS_QUERY = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode {
  partitionKeysByDimension { name partitionKeys }
  assetPartitionStatuses { __typename ... on MultiPartitionStatuses { primaryDimensionName
    ranges { primaryDimStartKey primaryDimEndKey secondaryDim { __typename
      ... on DefaultPartitionStatuses { materializedPartitions failedPartitions } } } } } } } }"""


def _phase_seconds(inst: Any, run_id: str) -> dict[str, float]:
    import dagster as dg

    first: dict[str, float] = {}
    n = 0
    for e in inst.all_logs(run_id):
        n += 1
        if e.dagster_event is not None:
            first.setdefault(e.dagster_event.event_type_value, e.timestamp)
    t = {k: first.get(v.value) for k, v in (("queued", dg.DagsterEventType.RUN_ENQUEUED),
                                             ("launched", dg.DagsterEventType.RUN_STARTING),
                                             ("started", dg.DagsterEventType.RUN_START),
                                             ("ended", dg.DagsterEventType.RUN_SUCCESS))}
    out = {"events": float(n)}
    if all(t.values()):
        out.update(queue_s=t["launched"] - t["queued"], startup_s=t["started"] - t["launched"],
                   steps_s=t["ended"] - t["started"])
    return out


def cluster_runs(inst: Any) -> list[dict[str, float]]:
    """Phases of every successful (dataset, model) partition run on the cluster."""
    import dagster as dg

    runs = [r for r in inst.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS]))
            if r.tags.get("dagster/partition", "").count("|") == 1]
    return [p for p in (_phase_seconds(inst, r.run_id) for r in runs) if "startup_s" in p]


def _psql(state: Any, sql: str, db: str = "postgres") -> str:
    from bench_assets.platform.cluster.layout import DB_USER
    from bench_assets.platform.cluster.servers import find_binary

    argv = [find_binary("psql"), "-h", "127.0.0.1", "-p", str(state.postgres_port), "-U", DB_USER, "-d", db,
            "-Atc", sql]
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def event_bytes(state: Any) -> dict[str, float]:
    from bench_assets.platform.cluster.layout import DB_NAME

    rows = int(_psql(state, "select count(*) from event_logs", DB_NAME))
    size = int(_psql(state, "select pg_total_relation_size('event_logs')", DB_NAME))
    return {"event_rows": rows, "event_log_bytes": size, "bytes_per_event": size / max(rows, 1)}


def scratch_url(state: Any) -> str:
    return state.postgres_url.rsplit("/", 1)[0] + f"/{SCRATCH_DB}"


def write_rate(url: str, runs: int, events_per_run: int) -> dict[str, float]:
    """Events/s writing `runs` runs' worth of step log events through Dagster's Postgres event log storage."""
    from dagster._core.events.log import EventLogEntry
    from dagster_postgres import PostgresEventLogStorage

    storage = PostgresEventLogStorage(url, should_autocreate_tables=True)
    start = time.perf_counter()
    for i in range(runs):
        run_id = f"overhead-{i:04d}"
        for j in range(events_per_run):
            storage.store_event(EventLogEntry(error_info=None, level=20, user_message=f"epoch {j} loss=1.0 eta=9s",
                                              run_id=run_id, timestamp=time.time(), step_key="rf100vl__checkpoint",
                                              job_name="rf100vl_campaign_job", dagster_event=None))
    took = time.perf_counter() - start
    storage.dispose()
    return {"events": runs * events_per_run, "seconds": took, "events_per_s": runs * events_per_run / took}


def _graphql(url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query, "variables": variables}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        doc = json.loads(resp.read())
    if doc.get("errors"):
        raise RuntimeError(f"GraphQL errors: {doc['errors']}")
    return doc["data"]


def page_timings(url: str, first_key: str, n_partitions: int, repeats: int) -> dict[str, float]:
    from playwright.sync_api import expect, sync_playwright

    from tests.report.test_ui_browser import CHROMIUM, CHROMIUM_ARGS

    query_s = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        data = _graphql(url, STATUS_QUERY, {"key": {"path": ASSET}})
        query_s.append(time.perf_counter() - t0)
    dims = {d["name"]: d["partitionKeys"] for d in data["assetNodeOrError"]["partitionKeysByDimension"]}
    assert len(dims["dataset"]) * len(dims["model"]) == n_partitions, {k: len(v) for k, v in dims.items()}
    load_s = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            t0 = time.perf_counter()
            page.goto(f"{url}/assets/{'/'.join(ASSET)}?view=partitions")
            expect(page.get_by_text(first_key, exact=True).first).to_be_visible(timeout=120_000)
            load_s.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    return {"partitions": n_partitions, "status_query_s": statistics.median(query_s),
            "page_load_s": statistics.median(load_s)}


def materialize(inst: Any, datasets: list[str], models: list[str]) -> None:
    import dagster as dg

    from bench_assets.rf100vl.defs.partitions import register_model_partition, register_partitions

    register_partitions(inst, datasets)
    for m in models:
        register_model_partition(inst, m)
        for ds in datasets:
            inst.report_runless_asset_event(dg.AssetMaterialization(asset_key=ASSET, partition=f"{ds}|{m}"))


def partition_pages(state: Any, repeats: int) -> list[dict[str, float]]:
    import dagster as dg

    from bench_assets.platform.cluster import servers
    from bench_assets.platform.cluster.layout import Proc
    from bench_assets.rf100vl.datasets.catalog import MINI_SUITE, load_catalog

    work = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    dh = work / "dagster"
    dh.mkdir()
    (dh / "dagster.yaml").write_text(f'storage:\n  postgres:\n    postgres_url: "{scratch_url(state)}"\n'
                                     "telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(dh), "BENCH_HOME": str(work / "home")}
    port = servers.pick_port(0, "scratch webserver")
    proc = subprocess.Popen([servers.dagster_bin("dagster-webserver"), "-w", str(REPO / "workspace.yaml"),
                             "-h", "127.0.0.1", "-p", str(port)], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    out = []
    try:
        os.environ["DAGSTER_HOME"] = str(dh)
        with dg.DagsterInstance.get() as inst:
            deadline = time.monotonic() + 180
            while not servers.webserver_up(port):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the scratch webserver did not come up")
                time.sleep(1)
            mini = list(MINI_SUITE)
            materialize(inst, mini, MODELS[:1])
            out.append(page_timings(url, mini[0], len(mini), repeats))
            rest = [n for n in load_catalog() if n not in mini][: 100 - len(mini)]
            materialize(inst, rest, MODELS[:1])  # the mini ones stay: 100 datasets in all
            materialize(inst, mini + rest, MODELS[1:])
            out.append(page_timings(url, mini[0], 100 * len(MODELS), repeats))
    finally:
        servers.stop_group(Proc(pid=proc.pid, argv=[], log=""))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="BENCH_HOME of a cluster that is up and ran a campaign")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "cluster_overhead.json")
    args = ap.parse_args()

    import dagster as dg

    from bench_assets.platform.cluster.layout import cluster_dagster_home, load_state

    state = load_state(args.home)
    if state is None:
        sys.exit(f"no cluster under {args.home}: `bench cluster up` there first, then run a campaign on it")
    os.environ["DAGSTER_HOME"] = str(cluster_dagster_home(args.home))
    with dg.DagsterInstance.get() as inst:
        runs = cluster_runs(inst)
    if not runs:
        sys.exit(f"the cluster under {args.home} has no finished partition run: run `bench campaign` on it first")
    med = {k: statistics.median(r[k] for r in runs) for k in ("events", "queue_s", "startup_s", "steps_s")}
    per_run = {"runs": len(runs), **med, "startup_share": med["startup_s"] / (med["startup_s"] + med["steps_s"]),
               **event_bytes(state)}

    _psql(state, f"drop database if exists {SCRATCH_DB}")
    _psql(state, f"create database {SCRATCH_DB}")
    try:
        writes = write_rate(scratch_url(state), CAMPAIGN_RUNS, int(round(med["events"])))
        pages = partition_pages(state, args.repeats)
    finally:
        _psql(state, f"drop database if exists {SCRATCH_DB} with (force)")

    sim = json.loads((REPO / "benchmarks" / "results" / "campaign_simulation.json").read_text())
    makespan_h = next(r["makespan_h"] for r in sim["rows"] if r["lanes"] == 8)
    writes["campaign_share_of_8_lane_makespan"] = writes["seconds"] / (makespan_h * 3600)
    base, big = pages
    result = {
        "date": dt.date.today().isoformat(),
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "machine": f"{os.cpu_count()} CPUs, loopback cluster under {args.home}",
        "per_run": per_run, "postgres_writes": writes, "partition_pages": pages,
        "page_ratios_400_vs_4": {"status_query": big["status_query_s"] / base["status_query_s"],
                                 "page_load": big["page_load_s"] / base["page_load_s"]},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("| measure | value |\n|---|---:|")
    print(f"| finished partition runs measured | {len(runs)} |")
    print(f"| events per partition run (median) | {med['events']:.0f} |")
    print(f"| event-log bytes per event | {per_run['bytes_per_event']:.0f} |")
    print(f"| queued -> launched (median) | {med['queue_s']:.1f} s |")
    print(f"| launched -> started: run process + code load (median) | {med['startup_s']:.1f} s |")
    print(f"| started -> ended: the steps (median) | {med['steps_s']:.1f} s |")
    print(f"| PostgreSQL event writes | {writes['events_per_s']:.0f} events/s |")
    print(f"| a 400-run campaign's events, written serially | {writes['seconds']:.0f} s "
          f"({100 * writes['campaign_share_of_8_lane_makespan']:.3f}% of the 8-lane makespan) |")
    for p in pages:
        print(f"| {p['partitions']} partitions: status query / Partitions tab load | {p['status_query_s']:.2f} s / "
              f"{p['page_load_s']:.2f} s |")
    r = result["page_ratios_400_vs_4"]
    print(f"| 400 vs 4 partitions | query x{r['status_query']:.2f}, page x{r['page_load']:.2f} |")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
