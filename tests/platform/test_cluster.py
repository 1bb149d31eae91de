"""The cluster on loopback, really started: PostgreSQL, Redis, the Dagster daemon and webserver, two Celery workers
(`bench cluster up --workers 2`). A campaign spreads over both workers and scores exactly as on one box; killing one
worker's process group mid-training ends its run within a bounded time (the watchdog), the rest finishes on the
other worker, and a rerun resumes the lost partition. `bench cluster down` leaves no process.

Needs Debian's `redis-server` and `postgresql` (scripts/system_deps.sh installs them; `make test` runs it)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_assets.platform.cluster.secrets import export_cluster_env
from bench_assets.platform.cluster.servers import KILLED_AFTER_SIGTERM
from bench_assets.platform.fsutil import pid_alive
from tests.conftest import run_bench
from tests.platform.stop_report import killed_report
from tests.shared_training import CLUSTER_DATASETS, CLUSTER_EPOCHS, cluster_recipe, one_box_campaign

pytestmark = pytest.mark.slow

# The campaign the cluster runs (tests/shared_training.py): two of the mini suite (one partition per worker) with
# the smoke recipe cut to EPOCHS epochs (a recipe file the module writes). As few as still show it: the test is about
# the cluster training exactly what one box trains, which the per-epoch train loss shows to full precision whether or
# not the epochs learn much (they do not: test mAP50-95 stays near 0). Three, because the lost worker is killed once
# its partition wrote the last.pt of epoch 1 and must die mid-training: two epochs left (about 9 s on mini-tiny, the
# shorter of the two, on a Zen 3 host) for the test to see the checkpoint and kill; the lost partition then has epoch
# 1 from box1 and epochs 2-3 from box2. The one-box run is measured in the same run of the suite, every time
# (training is deterministic on one host, not across CPU kernels: docs/scale-out.md), once for this file and
# test_real_boxes.py.
DATASETS = CLUSTER_DATASETS
EPOCHS = CLUSTER_EPOCHS
RECIPE = Path(tempfile.gettempdir()) / f"bench-cluster-recipe-{os.getpid()}" / "yolo9-cluster.json"
CAMPAIGN = ("campaign", "--model", "yolo9-t", "--datasets", ",".join(DATASETS), "--recipe", str(RECIPE))
WATCHDOG_BOUND_S = 120  # heartbeat staleness 30 s + sensor interval 15 s + run termination, with slack
LOST: dict[str, str] = {}  # the partition the lost-worker test leaves half-trained, for the two tests after it
# The automations that rebuild the report and the campaign view after every score, turned off in the cluster's UI as
# the module starts: each rebuild is a run (and a dbt build) on the workers, about a fifth of this module's CPU, and
# what they do is shown by tests/report/test_ui_browser.py and test_automation.py. The cluster test shows training.
AUTOMATIONS_OFF = ("report_automation", "rf100vl_automation")


def _bench(home: Path, *args: str, timeout: float = 900, background: bool = False):  # noqa: ANN202
    return run_bench(*args, home=home, timeout=timeout, env={"DAGSTER_HOME": str(home / "cluster" / "dagster")},
                     background=background)


def _pids(home: Path) -> list[int]:
    state = json.loads((home / "cluster" / "state.json").read_text())
    pids = [p["pid"] for p in state["servers"].values()]
    return pids + [w["proc"]["pid"] for w in state["workers"] if w.get("proc")]


@pytest.fixture(scope="module")
def recipe() -> Iterator[Path]:
    """The smoke recipe with EPOCHS epochs, at RECIPE (CAMPAIGN names it): what the one-box run trained with."""
    RECIPE.parent.mkdir(parents=True, exist_ok=True)
    RECIPE.write_text(json.dumps(cluster_recipe(), indent=2))
    yield RECIPE
    shutil.rmtree(RECIPE.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(recipe: Path) -> Iterator[Path]:
    # PostgreSQL runs as the `postgres` user when the tests run as root: the home must be reachable by others.
    home = Path(tempfile.mkdtemp(prefix="bench-cluster-", dir="/tmp"))
    home.chmod(0o755)
    # Started as `bench cluster up &` in a script: with SIGINT ignored, which the servers must not inherit (the
    # code server then ignored SIGTERM too, and `down` and `rotate-secrets` below had to kill it after 20 s).
    up = _bench(home, "cluster", "up", "--workers", "2", timeout=300, background=True)
    assert up.returncode == 0, up.stdout + up.stderr
    pids = _pids(home)
    url = f"http://127.0.0.1:{json.loads((home / 'cluster' / 'state.json').read_text())['webserver_port']}"
    for sensor in AUTOMATIONS_OFF:
        _stop_sensor(url, sensor)
    try:
        yield home
    finally:
        down = _bench(home, "cluster", "down", timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr
        assert KILLED_AFTER_SIGTERM not in down.stdout, killed_report(down.stdout)  # every server stops on SIGTERM
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
            time.sleep(0.5)
        assert not [p for p in pids if pid_alive(p)], "bench cluster down left processes running"
        assert not (home / "cluster" / "state.json").exists()
        shutil.rmtree(home)  # ~350 MB per run; a failed teardown keeps it (the asserts above) for a post-mortem


@pytest.fixture(scope="module")
def one_box(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """What the campaign trains on one box (2 lanes, a fresh home, no cluster): the reference for the cluster's."""
    return _trained(one_box_campaign(tmp_path_factory) / "home")


def test_status_lists_servers_and_workers(cluster: Path) -> None:
    out = _bench(cluster, "cluster", "status", "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert {s["name"] for s in status["servers"]} == {"postgres", "redis", "code-server", "daemon", "webserver"}
    assert all(s["alive"] and s["pid"] > 0 for s in status["servers"])
    assert all(s["port"] > 0 for s in status["servers"] if s["name"] != "daemon")
    assert [w["name"] for w in status["workers"]] == ["box1", "box2"]
    for w in status["workers"]:
        assert w["alive"] and w["lanes"] == 1 and w["queue"] == w["name"]
        assert {"pid", "steps_running", "steps_done"} <= set(w)
    again = _bench(cluster, "cluster", "up", "--workers", "2", timeout=60)
    assert again.returncode == 0 and "already up" in again.stdout, again.stdout + again.stderr


def test_worker_refuses_another_code_version_or_home(cluster: Path, tmp_path: Path) -> None:
    state_file = cluster / "cluster" / "state.json"
    state = json.loads(state_file.read_text())
    other = tmp_path / "other-home"
    (other / "cluster").mkdir(parents=True)
    (other / "cluster" / "state.json").write_text(json.dumps(state))  # the state, but not the home's marker
    out = _bench(other, "cluster", "worker", "--name", "stray", timeout=60)
    assert out.returncode == 1 and "marker" in out.stderr, out.stderr
    (other / ".bench-home").write_text(state["home_id"] + "\n")
    (other / "cluster" / "state.json").write_text(json.dumps({**state, "code_hash": "0" * 16}))
    out = _bench(other, "cluster", "worker", "--name", "stray", timeout=60)
    assert out.returncode == 1 and "code version mismatch" in out.stderr, out.stderr


def test_campaign_spreads_over_workers_with_one_box_scores_and_survives_a_lost_worker(cluster: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import REPO

    env = {**os.environ, "BENCH_HOME": str(cluster), "DAGSTER_HOME": str(cluster / "cluster" / "dagster")}
    argv = [sys.executable, "-m", "bench_assets.cli", *CAMPAIGN]
    first = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Kill box1's whole process group (its box) once its training step has written a last.pt.
    victim, partition = _wait_for_training_with_checkpoint(cluster, "box1", timeout_s=300)
    state = json.loads((cluster / "cluster" / "state.json").read_text())
    box1 = next(w for w in state["workers"] if w["name"] == "box1")
    killed_at = time.monotonic()
    os.killpg(box1["proc"]["pid"], signal.SIGKILL)
    out, _ = first.communicate(timeout=900)
    took = time.monotonic() - killed_at
    assert first.returncode == 1, out  # the lost partition failed, loudly
    assert f"{partition}" in out and "is lost" in out, out
    assert took < 900
    ended = _run_end_time(cluster, victim) - _kill_wallclock(killed_at)
    assert ended < WATCHDOG_BOUND_S, f"the lost worker's run ended {ended:.0f} s after the kill"
    assert not list((cluster / "runs" / "yolo9-t" / partition.split("|")[0]).glob("*/stats.json"))
    LOST["partition"] = partition  # the next two tests finish it: a UI backfill, then the CLI campaign


def test_ui_backfill_resumes_the_lost_partition_longest_first_on_the_lanes(cluster: Path) -> None:
    """A backfill of rf100vl/checkpoint launched in the cluster's UI (All datasets x All models, "Launch backfill"):
    it finishes; the lost partition resumes from its last.pt with per-epoch progress and ETA in its run log (seen
    on the run's page), the finished one is reused, every run carries the longest-first priority (the run
    coordinator's: train images), and box2's single lane never runs two training steps at once."""
    assert LOST, "runs after the lost-worker test, which leaves one partition half-trained"
    state = json.loads((cluster / "cluster" / "state.json").read_text())
    url = f"http://127.0.0.1:{state['webserver_port']}"
    lost_ds = LOST["partition"].split("|")[0]
    with _browser_page(url) as page:
        dialog = _open_launch_dialog(page, "rf100vl/checkpoint")  # past "Are you sure?" if Dagster asks
        _select_all_partitions(dialog, expect_text=f"{len(DATASETS)} partitions")
        before = {b["id"] for b in _backfills(url)}
        dialog.get_by_role("button", name="Launch backfill").click()
        backfill = _wait_for_new_backfill(url, before, timeout_s=60)
        final = _wait_for_backfill(url, backfill, timeout_s=900)
        assert final == "COMPLETED_SUCCESS", final
        page.goto(f"/runs/b/{backfill}")
        _expect(page.get_by_text("Succeeded", exact=True).first).to_be_visible()
        _expect(page.get_by_text("100% completed")).to_be_visible()

        runs = _backfill_runs(cluster, backfill)
        assert sorted(runs) == sorted(DATASETS), runs  # one run per dataset partition, each succeeded
        assert all(r["status"] == "SUCCESS" and r["worker"] == "box2" for r in runs.values()), runs
        page.goto(f"/runs/{runs[lost_ds]['run_id']}")  # the resumed run's log, as a person reads it
        page.get_by_placeholder(re.compile("Filter")).first.fill("eta=")
        _expect(page.get_by_text(re.compile(r"epoch \d+/\d+ .* eta=")).first).to_be_visible()

    images = {ds: int(r["priority"]) for ds, r in runs.items()}
    assert images == _train_images(cluster)  # what `bench campaign` sets, given by the run coordinator
    # The queue's order is not asserted here: Dagster's backfill daemon submits the runs one by one, and a queue
    # tick that starts after the first two are queued launches both (seen here: mini-dense and mini-large went
    # before mini-shapes, queued 0.5 s later, which then waited for a run slot). What the product controls is
    # the priority every queued run carries (above); the queue honours it among the runs it sees
    # (tests/rf100vl/test_backfill_and_status.py, docs/scale-out.md).
    logs = {ds: _run_log(cluster, r["run_id"]) for ds, r in runs.items()}
    assert "resuming at epoch" in logs[lost_ds] and "eta=" in logs[lost_ds], logs[lost_ds][-3000:]
    for ds in set(runs) - {lost_ds}:
        assert "found; skipping" in logs[ds], logs[ds][-3000:]  # reused, not retrained
    spans = sorted(r["checkpoint_span"] for r in runs.values())  # one lane: one training step at a time
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans


def test_rerun_completes_the_campaign_with_one_box_scores(cluster: Path, one_box: dict[str, dict[str, Any]]) -> None:
    """The CLI campaign after the lost worker and the UI backfill: it predicts and scores the resumed partition;
    each dataset's train loss and valid mAP50-95 at every epoch and its test mAP50-95 equal the one-box run's, to
    full precision (the lost partition's epochs before the kill on box1, after it on box2)."""
    assert LOST, "runs after the lost-worker test"
    second = _bench(cluster, *CAMPAIGN)
    assert second.returncode == 0, second.stdout + second.stderr
    stats = [json.loads(p.read_text()) for p in (cluster / "runs" / "yolo9-t").glob("*/*/stats.json")]
    by_ds = {s["dataset"]: s for s in stats}
    lost = by_ds[LOST["partition"].split("|")[0]]
    assert lost["resumed"] is True and lost["worker"] == "box2", lost  # box1 held it when it died
    assert {s["worker"] for s in stats} <= {"box1", "box2"}
    trained = _trained(cluster)
    assert sorted(trained) == sorted(one_box) == sorted(DATASETS), (trained, one_box)
    for ds in DATASETS:
        assert [e[0] for e in one_box[ds]["epochs"]] == list(range(1, EPOCHS + 1)), one_box[ds]
        assert all(loss is not None and loss > 0 for _, loss, _ in one_box[ds]["epochs"]), one_box[ds]
        assert trained[ds] == one_box[ds], f"{ds}: the cluster trained {trained[ds]}, one box {one_box[ds]}"


def _wait_for_training_with_checkpoint(home: Path, worker: str, timeout_s: float) -> tuple[str, str]:
    """(run id, partition key) of the checkpoint step `worker` is running, once its run dir holds a last.pt."""
    tasks = home / "cluster" / "workers" / worker / "tasks"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for rec in tasks.glob("*.json"):
            try:
                task = json.loads(rec.read_text())
            except ValueError:
                continue
            if "rf100vl__checkpoint" not in (task.get("step_keys") or []):
                continue
            partition = _partition_of(home, task["run_id"])
            dataset = partition.split("|")[0]
            if list((home / "runs" / "yolo9-t" / dataset).glob("*/weights/last.pt")):
                return task["run_id"], partition
        time.sleep(0.5)
    raise AssertionError(f"{worker} never trained with a last.pt on disk within {timeout_s:.0f} s")


def _partition_of(home: Path, run_id: str) -> str:
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home / "cluster" / "dagster")
    export_cluster_env(home)  # dagster.yaml names the database's address and password by environment variables
    with dg.DagsterInstance.get() as inst:
        return inst.get_run_by_id(run_id).tags["dagster/partition"]


def _kill_wallclock(killed_monotonic: float) -> float:
    return time.time() - (time.monotonic() - killed_monotonic)


def _run_end_time(home: Path, run_id: str) -> float:
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home / "cluster" / "dagster")
    export_cluster_env(home)  # dagster.yaml names the database's address and password by environment variables
    with dg.DagsterInstance.get() as inst:
        rec = inst.get_run_records(dg.RunsFilter(run_ids=[run_id]))[0]
        assert rec.dagster_run.status in (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.FAILURE)
        return rec.end_time


def _trained(home: Path) -> dict[str, dict[str, Any]]:
    """dataset -> its test mAP50-95 and, per epoch of the current run, (epoch, train loss, valid mAP50-95), to full
    precision: any numeric difference in training shows in the losses, where a near-zero mAP alone would not."""
    import duckdb

    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        scores = dict(con.sql("SELECT dataset, mAP50_95 FROM scores WHERE is_current AND model = 'yolo9-t'").fetchall())
        epochs = con.sql("SELECT e.dataset, e.epoch, e.train_loss, e.valid_mAP50_95 FROM epochs e "
                         "JOIN runs r USING (model, dataset, run_signature) WHERE r.is_current AND e.model = 'yolo9-t' "
                         "ORDER BY e.dataset, e.epoch").fetchall()
    return {ds: {"test_mAP50_95": m, "epochs": [(e, loss, v) for d, e, loss, v in epochs if d == ds]}
            for ds, m in scores.items()}


def test_campaign_refuses_when_redis_is_down_and_submits_nothing(cluster: Path) -> None:
    state = json.loads((cluster / "cluster" / "state.json").read_text())
    redis = state["servers"]["redis"]["pid"]
    os.kill(redis, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and pid_alive(redis):
        time.sleep(0.2)
    out = _bench(cluster, "campaign", "--model", "yolo9-t", "--suite", "mini", "--recipe", "smoke", timeout=120)
    assert out.returncode == 1 and "Redis" in out.stderr and "bench cluster" in out.stderr, out.stderr
    assert "submitted" not in out.stdout


def test_a_rotation_that_cannot_reach_redis_changes_nothing_and_restarts_the_head(cluster: Path) -> None:
    """Runs after the Redis-down test (Redis is still dead): rotate-secrets fails naming Redis and the fix,
    PostgreSQL keeps the old password, secrets.env keeps its generation, and the head's code server, daemon and
    webserver (stopped before the passwords change) are running again with the old credentials."""
    from bench_assets.platform.cluster.layout import load_state, pg_connect_kwargs
    from bench_assets.platform.cluster.secrets import read_secrets

    before = read_secrets(cluster)
    old_pids = {n: p["pid"] for n, p in json.loads((cluster / "cluster" / "state.json").read_text())["servers"].items()}
    out = _bench(cluster, "cluster", "rotate-secrets", timeout=180)
    assert out.returncode == 1 and "Redis" in out.stderr and "nothing was rotated" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert KILLED_AFTER_SIGTERM not in out.stdout, killed_report(out.stdout)  # the head's servers stopped on SIGTERM
    assert read_secrets(cluster).generation == before.generation
    import psycopg2

    psycopg2.connect(**pg_connect_kwargs(load_state(cluster)), password=before.pg_password).close()
    servers = json.loads((cluster / "cluster" / "state.json").read_text())["servers"]
    for name in ("code-server", "daemon", "webserver"):
        assert servers[name]["pid"] != old_pids[name] and pid_alive(servers[name]["pid"]), (name, out.stdout)


# --- the UI backfill's helpers ----------------------------------------------------------------------------


@contextlib.contextmanager
def _browser_page(url: str) -> Iterator[Any]:
    """A Chromium page on the cluster's webserver (Debian's browser, as in tests/report/test_ui_browser.py)."""
    from playwright.sync_api import expect, sync_playwright

    from tests.report.test_ui_browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, answer_nux

    expect.set_options(timeout=TIMEOUT_MS)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1600, "height": 1000}, base_url=url)
            context.set_default_timeout(TIMEOUT_MS)
            page = context.new_page()
            answer_nux(page, url)  # the "Join the Dagster community" popup, answered before any click
            yield page
            browser.close()
    finally:
        expect.set_options(timeout=5_000)


def _select_all_partitions(dialog: Any, expect_text: str, timeout_s: float = 60) -> None:
    """Click each dimension's "All" in the launch dialog until it counts `expect_text` (a click before the
    dialog has loaded the partitions selects nothing)."""
    buttons = dialog.get_by_role("button", name="All", exact=True)
    deadline = time.monotonic() + timeout_s
    while expect_text not in dialog.inner_text():
        assert time.monotonic() < deadline, dialog.inner_text()
        for i in range(buttons.count()):  # dataset, then model
            buttons.nth(i).click()
        time.sleep(1)


def _open_launch_dialog(page: Any, asset: str) -> Any:
    from tests.report.test_ui_browser import _open_launch_dialog as open_dialog

    return open_dialog(page, asset)


def _expect(locator: Any) -> Any:
    from playwright.sync_api import expect

    return expect(locator)


@contextlib.contextmanager
def _instance(home: Path) -> Iterator[Any]:
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home / "cluster" / "dagster")
    export_cluster_env(home)  # dagster.yaml names the database's address and password by environment variables
    with dg.DagsterInstance.get() as inst:
        yield inst


def _graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    import urllib.request

    req = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query, "variables": variables or {}}
                                                                   ).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["data"]


def _stop_sensor(url: str, name: str, timeout_s: float = 60) -> None:
    """Turn a sensor off as the UI's toggle does (the stopSensor mutation), and see it stay stopped.

    A tick the daemon has in flight can undo a stop: it reads the sensor's state, then writes it back with a new
    cursor and the status it read (Dagster's asset daemon, `mark_sensor_state_for_tick` and the cursor update), so
    a stop that lands between the two is lost and the sensor keeps launching runs. So the stop is checked once no
    tick is in flight, twice a second apart (the write-back can come just before its tick is recorded), and sent
    again if it was lost; a tick that starts later reads the stopped state."""
    selector = (f'sensorSelector: {{repositoryLocationName: "bench", repositoryName: "__repository__", '
                f'sensorName: "{name}"}}')
    query = (f"{{ sensorOrError({selector}) {{ ... on Sensor {{ id sensorState {{ status ticks(limit: 1) "
             "{ status } } } } }")
    deadline, quiet = time.monotonic() + timeout_s, 0
    while True:
        sensor = _graphql(url, query)["sensorOrError"]
        state = sensor["sensorState"]
        in_flight = bool(state["ticks"]) and state["ticks"][0]["status"] == "STARTED"
        quiet = quiet + 1 if state["status"] == "STOPPED" and not in_flight else 0
        if quiet == 2:
            return
        assert time.monotonic() < deadline, (name, state)
        if state["status"] != "STOPPED":
            stopped = _graphql(url, "mutation($id: String) { stopSensor(id: $id) { ... on StopSensorMutationResult { "
                                    "instigationState { status } } ... on PythonError { message } } }",
                               {"id": sensor["id"]})["stopSensor"]
            assert stopped.get("instigationState", {}).get("status") == "STOPPED", (name, stopped)
        time.sleep(1 if quiet else 0.5)


def _backfills(url: str) -> list[dict[str, str]]:
    import urllib.request

    query = "{ partitionBackfillsOrError(limit: 20) { ... on PartitionBackfills { results { id status } } } }"
    req = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["data"]["partitionBackfillsOrError"]["results"]


def _wait_for_new_backfill(url: str, before: set[str], timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        new = [b["id"] for b in _backfills(url) if b["id"] not in before]
        if new:
            return new[0]
        time.sleep(0.5)
    raise AssertionError(f"the UI launched no backfill within {timeout_s:.0f} s")


def _wait_for_backfill(url: str, backfill: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    status = "?"
    while time.monotonic() < deadline:
        status = next(b["status"] for b in _backfills(url) if b["id"] == backfill)
        if status not in ("REQUESTED", "CANCELING", "FAILING"):
            return status
        time.sleep(2)
    raise AssertionError(f"backfill {backfill} still {status} after {timeout_s:.0f} s")


def _backfill_runs(home: Path, backfill: str) -> dict[str, dict[str, Any]]:
    """{dataset: run id, status, worker, priority, its training step's span}."""
    import dagster as dg

    out = {}
    with _instance(home) as inst:
        for run in inst.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill})):
            events = [e for e in inst.all_logs(run.run_id) if e.dagster_event is not None]
            step = (dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS)
            train = [e.timestamp for e in events
                     if e.dagster_event.step_key == "rf100vl__checkpoint" and e.dagster_event.event_type in step]
            out[run.tags["dagster/partition"].split("|")[0]] = {
                "run_id": run.run_id, "status": run.status.value, "worker": run.tags.get("bench/worker"),
                "priority": run.tags.get("dagster/priority"),
                "checkpoint_span": (min(train, default=0.0), max(train, default=0.0))}
    return out


def _run_log(home: Path, run_id: str) -> str:
    with _instance(home) as inst:
        return "\n".join(e.user_message or "" for e in inst.all_logs(run_id))


def _train_images(home: Path) -> dict[str, int]:
    from bench_assets.rf100vl.datasets.store import load_record

    return {ds: int(load_record(home / "datasets", ds).manifest["splits"]["train"]["images"]) for ds in DATASETS}
