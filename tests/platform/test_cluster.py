"""The cluster on loopback, really started: PostgreSQL, Redis, the Dagster daemon and webserver, two Celery workers
(`bench cluster up --workers 2`). A campaign spreads over both workers and scores exactly as on one box; killing one
worker's process group mid-training ends its run within a bounded time (the watchdog), the rest finishes on the
other worker, and a rerun resumes the lost partition. `bench cluster down` leaves no process.

Needs Debian's `redis-server` and `postgresql` (scripts/system_deps.sh installs them; `make test` runs it)."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_bench

pytestmark = pytest.mark.slow

# The one-box demo's scores (`bench demo`: yolo9-t, smoke recipe, the mini suite), to full precision.
ONE_BOX = {"mini-dense": 0.7110682497387923, "mini-large": 0.6643807207075387, "mini-shapes": 0.638042056306471,
           "mini-tiny": 0.36776009701810514}
WATCHDOG_BOUND_S = 120  # heartbeat staleness 30 s + sensor interval 15 s + run termination, with slack


def _bench(home: Path, *args: str, timeout: float = 900):  # noqa: ANN202
    return run_bench(*args, home=home, timeout=timeout, env={"DAGSTER_HOME": str(home / "cluster" / "dagster")})


def _pids(home: Path) -> list[int]:
    state = json.loads((home / "cluster" / "state.json").read_text())
    pids = [p["pid"] for p in state["servers"].values()]
    return pids + [w["proc"]["pid"] for w in state["workers"] if w.get("proc")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(scope="module")
def cluster() -> Iterator[Path]:
    # PostgreSQL runs as the `postgres` user when the tests run as root: the home must be reachable by others.
    home = Path(tempfile.mkdtemp(prefix="bench-cluster-", dir="/tmp"))
    home.chmod(0o755)
    up = _bench(home, "cluster", "up", "--workers", "2", timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    pids = _pids(home)
    try:
        yield home
    finally:
        down = _bench(home, "cluster", "down", timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.5)
        assert not [p for p in pids if _alive(p)], "bench cluster down left processes running"
        assert not (home / "cluster" / "state.json").exists()


def test_status_lists_servers_and_workers(cluster: Path) -> None:
    out = _bench(cluster, "cluster", "status", "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert {s["name"] for s in status["servers"]} == {"postgres", "redis", "daemon", "webserver"}
    assert all(s["alive"] and s["pid"] > 0 for s in status["servers"])
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
    argv = [sys.executable, "-m", "bench_assets.cli", "campaign", "--model", "yolo9-t", "--suite", "mini",
            "--recipe", "smoke"]
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
    # The rerun (box2 alone) resumes the lost partition from its last.pt; every score equals the one-box run's.
    second = _bench(cluster, "campaign", "--model", "yolo9-t", "--suite", "mini", "--recipe", "smoke")
    assert second.returncode == 0, second.stdout + second.stderr
    stats = [json.loads(p.read_text()) for p in (cluster / "runs" / "yolo9-t").glob("*/*/stats.json")]
    by_ds = {s["dataset"]: s for s in stats}
    lost = by_ds[partition.split("|")[0]]
    assert lost["resumed"] is True and lost["worker"] == "box2", lost  # box1 held it when it died
    assert {s["worker"] for s in stats} <= {"box1", "box2"}
    assert _scores(cluster) == ONE_BOX


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
    with dg.DagsterInstance.get() as inst:
        return inst.get_run_by_id(run_id).tags["dagster/partition"]


def _kill_wallclock(killed_monotonic: float) -> float:
    return time.time() - (time.monotonic() - killed_monotonic)


def _run_end_time(home: Path, run_id: str) -> float:
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home / "cluster" / "dagster")
    with dg.DagsterInstance.get() as inst:
        rec = inst.get_run_records(dg.RunsFilter(run_ids=[run_id]))[0]
        assert rec.dagster_run.status in (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.FAILURE)
        return rec.end_time


def _scores(home: Path) -> dict[str, float]:
    import duckdb

    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        return dict(con.sql("select dataset, mAP50_95 from scores where is_current and model = 'yolo9-t'").fetchall())


def test_campaign_refuses_when_redis_is_down_and_submits_nothing(cluster: Path) -> None:
    state = json.loads((cluster / "cluster" / "state.json").read_text())
    redis = state["servers"]["redis"]["pid"]
    os.kill(redis, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(redis):
        time.sleep(0.2)
    out = _bench(cluster, "campaign", "--model", "yolo9-t", "--suite", "mini", "--recipe", "smoke", timeout=120)
    assert out.returncode == 1 and "Redis" in out.stderr and "bench cluster" in out.stderr, out.stderr
    assert "submitted" not in out.stdout
