"""A head box and a worker box that are separate hosts on a network, and a stranger on another: three network
namespaces (tests/platform/netns.py) with their own addresses, made and torn down here.

The head runs `bench cluster up --listen 10.231.N.1/30 --workers 0` (the servers alone); the far box runs `bench
cluster join --head 10.231.N.1` and the mini campaign's steps run there. PostgreSQL and Redis take TLS only (a
self-signed certificate made here, `up --tls-cert/--tls-key`): every client checks it, and plain text gets nothing.
The campaign starts from a private copy of the one-box campaign test_cluster.py compares with
(tests/shared_training.py): its checkpoints are reused, its predictions and scores are removed, so the far box
predicts and scores, and the scores must equal the one box's. Nothing listens on an address that was not asked for;
the stranger, and anyone without the password, gets nothing from PostgreSQL or Redis; the credentials are in no file
of the home but secrets.env and nowhere in the event log; `bench cluster rotate-secrets` locks the old ones out and
the joined box comes back with the new ones.

Needs root (namespaces) and the servers `make test` installs; skipped with the reason where namespaces cannot be
made."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench_assets.platform.cluster.servers import KILLED_AFTER_SIGTERM
from tests.conftest import REPO
from tests.platform import netns
from tests.platform.stop_report import killed_report
from tests.shared_cache import private_copy
from tests.shared_training import CLUSTER_DATASETS, one_box_campaign

pytestmark = pytest.mark.slow

PROBE_TIMEOUT_S = 5


@dataclass
class Boxes:
    hosts: netns.Hosts
    home: Path
    recipe: Path
    reference: Path  # the one-box campaign's home (read only)
    join: subprocess.Popen[bytes]
    join_log: Path


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_PG_", "BENCH_CELERY_", "BENCH_CLUSTER"))}
    env.update(BENCH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"), OMP_NUM_THREADS="1", **extra)
    return env


def _bench(b: Boxes, role: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(b.hosts.cmd(role, [sys.executable, "-m", "bench_assets.cli", *args]), cwd=REPO,
                          env=_env(b.home), capture_output=True, text=True, timeout=timeout)


def _py(b: Boxes, role: str, code: str, **env: str) -> str:
    """Python `code` run in `role`'s namespace (secrets passed in the environment, never on a command line)."""
    out = subprocess.run(b.hosts.cmd(role, [sys.executable, "-c", code]), cwd=REPO, env=_env(b.home, **env),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip()


PG_PROBE = """
import os, psycopg2
tls = {"sslmode": "verify-ca", "sslrootcert": os.environ["CA"]} if os.environ.get("CA") else {"sslmode": "disable"}
try:
    psycopg2.connect(host=os.environ["H"], port=int(os.environ["P"]), user="bench", password=os.environ["PW"],
                     dbname="dagster", connect_timeout=5, **tls).close()
    print("CONNECTED")
except Exception as exc:
    print("REFUSED", str(exc).strip().splitlines()[0])
"""
REDIS_PROBE = """
import os
from bench_assets.platform.cluster.servers import redis_command
try:
    print(" ".join(r[:40].decode() for r in redis_command(os.environ["H"], int(os.environ["P"]),
                                                          os.environ.get("PW") or None, "KEYS", "*",
                                                          ca=os.environ.get("CA") or None)).strip() or "NOTHING")
except OSError as exc:
    print("UNREACHABLE", type(exc).__name__)
"""
TCP_PROBE = """
import os, socket
for port in os.environ["PORTS"].split(","):
    try:
        socket.create_connection((os.environ["H"], int(port)), timeout=3).close()
        print(port, "OPEN")
    except OSError as exc:
        print(port, type(exc).__name__)
"""


def _state(b: Boxes) -> dict[str, Any]:
    return json.loads((b.home / "cluster" / "state.json").read_text())


def _secrets(b: Boxes) -> dict[str, str]:
    lines = (b.home / "cluster" / "secrets.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def _pg(b: Boxes, role: str, host: str, password: str, tls: bool = True) -> str:
    """A PostgreSQL login from `role`: over TLS checked against the cluster's CA, or in plain text."""
    return _py(b, role, PG_PROBE, H=host, P=str(_state(b)["postgres_port"]), PW=password,
               CA=_state(b)["tls"]["ca"] if tls else "")


def _redis(b: Boxes, role: str, host: str, password: str = "", tls: bool = True) -> str:
    return _py(b, role, REDIS_PROBE, H=host, P=str(_state(b)["redis_port"]), PW=password,
               CA=_state(b)["tls"]["ca"] if tls else "")


def _wait_for_heartbeat(b: Boxes, after: float, timeout_s: float = 120) -> None:
    beat = b.home / "cluster" / "workers" / "far" / "heartbeat"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if beat.exists() and beat.stat().st_mtime > after:
            return
        assert b.join.poll() is None, b.join_log.read_text()[-3000:]
        time.sleep(0.5)
    raise AssertionError(f"the far box never beat after {after}: {b.join_log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def boxes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Boxes]:
    reason = netns.available()
    if reason:
        pytest.skip(reason)
    reference = one_box_campaign(tmp_path_factory)
    base = Path(tempfile.mkdtemp(prefix="bench-boxes-", dir="/tmp"))
    base.chmod(0o755)  # PostgreSQL runs as `postgres` when the tests run as root: the home must be reachable
    copy = private_copy(reference, base / "campaign")
    home = copy / "home"
    shutil.rmtree(home / "eval")  # predictions and scores: the far box makes them again
    hosts = netns.make()
    join_log = base / "join.log"
    b = Boxes(hosts, home, copy / "recipe.json", reference / "home", None, join_log)  # type: ignore[arg-type]
    try:
        cert, key = base / "head-cert.pem", base / "head-key.pem"  # self-signed: its own CA
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(cert), "-days", "2", "-subj", "/CN=bench-head", "-addext",
                        f"subjectAltName=IP:{hosts.address('head')}"], check=True, capture_output=True)
        up = _bench(b, "head", "cluster", "up", "--listen", hosts.head_network, "--workers", "0",
                    "--tls-cert", str(cert), "--tls-key", str(key))
        assert up.returncode == 0, up.stdout + up.stderr
        url = f"http://127.0.0.1:{_state(b)['webserver_port']}"
        _py(b, "head", "from tests.platform.test_cluster import AUTOMATIONS_OFF, _stop_sensor\n"
                       f"for s in AUTOMATIONS_OFF: _stop_sensor({url!r}, s)")
        started = time.time()
        with open(join_log, "wb") as log:
            b.join = subprocess.Popen(
                hosts.cmd("far", [sys.executable, "-m", "bench_assets.cli", "cluster", "join", "--head",
                                  hosts.address("head"), "--name", "far", "--lanes", "1"]),
                cwd=REPO, env=_env(home, BENCH_HOST_ID="far-box"), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        _wait_for_heartbeat(b, started - 1)
        yield b
    finally:
        down = _bench(b, "head", "cluster", "down", timeout=120)
        if b.join is not None:
            try:
                b.join.wait(timeout=60)  # `down` asked the joined worker to stop: join exits by itself
            except subprocess.TimeoutExpired:
                os.killpg(b.join.pid, signal.SIGKILL)
                b.join.wait(timeout=30)
                raise AssertionError(f"join did not exit after `bench cluster down`: {join_log.read_text()[-2000:]}"
                                     ) from None
        netns.remove(hosts)
        assert down.returncode == 0, down.stdout + down.stderr
        assert KILLED_AFTER_SIGTERM not in down.stdout, killed_report(down.stdout)  # every server stops on SIGTERM
        assert b.join is None or b.join.returncode == 0, join_log.read_text()[-3000:]
        shutil.rmtree(base, ignore_errors=True)


def _scores(home: Path) -> dict[str, float]:
    import duckdb

    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        return dict(con.sql("SELECT dataset, mAP50_95 FROM scores WHERE is_current AND model = 'yolo9-t'").fetchall())


def test_the_campaign_runs_on_the_joined_box_and_scores_as_one_box(boxes: Boxes) -> None:
    status = json.loads(_bench(boxes, "head", "cluster", "status", "--json").stdout)
    far = next(w for w in status["workers"] if w["name"] == "far")
    assert far["joined"] and far["host"] == "far-box" and far["alive"] and far["lanes"] == 1, far
    assert status["listen"] == [boxes.hosts.address("head")]
    assert status["allow"] == [f"10.231.{boxes.hosts.subnet}.0/30"]
    out = _bench(boxes, "head", "campaign", "--model", "yolo9-t", "--datasets", ",".join(CLUSTER_DATASETS),
                 "--recipe", str(boxes.recipe), timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    done = [json.loads(p.read_text()) for p in (boxes.home / "cluster" / "workers" / "far" / "done").glob("*.json")]
    steps = {k for d in done for k in d["step_keys"] or []}
    assert {"rf100vl__checkpoint", "rf100vl__predictions", "rf100vl__scores"} <= steps, steps
    assert {d["worker"] for d in done} == {"far"}
    assert _scores(boxes.home) == _scores(boxes.reference)  # the far box predicted and scored as one box did
    runs = [json.loads(line) for line in _runs(boxes).splitlines()]
    ok = {r["tags"].get("dagster/partition") for r in runs if r["job"] == "rf100vl_campaign_job"
          and r["status"] == "SUCCESS"}
    assert {f"{d}|yolo9-t" for d in CLUSTER_DATASETS} <= ok, runs


def test_nothing_listens_on_an_address_not_asked_for(boxes: Boxes) -> None:
    state = _state(boxes)
    head = dict((port, addr) for addr, port in netns.listening(boxes.hosts, "head"))
    assert head[state["postgres_port"]] == head[state["redis_port"]] == boxes.hosts.address("head")
    assert head[state["webserver_port"]] == head[state["code_server_port"]] == "127.0.0.1"  # head-local only
    assert set(head.values()) <= {boxes.hosts.address("head"), "127.0.0.1"}, head  # no wildcard, no other address
    assert netns.listening(boxes.hosts, "far") == [] and netns.listening(boxes.hosts, "stranger") == []


def test_a_stranger_or_a_client_without_the_password_gets_nothing(boxes: Boxes) -> None:
    s, state, head = _secrets(boxes), _state(boxes), boxes.hosts.address("head")
    assert _pg(boxes, "far", head, s["BENCH_PG_PASSWORD"]) == "CONNECTED"  # the joined box, with the password
    refused = _pg(boxes, "far", head, "not-the-password")
    assert refused.startswith("REFUSED") and "password authentication failed" in refused, refused
    plain = _pg(boxes, "far", head, s["BENCH_PG_PASSWORD"], tls=False)  # the password in clear text: no rule for it
    assert plain.startswith("REFUSED") and "no encryption" in plain, plain
    # the stranger reaches the listen address, from a network not allowed: refused even with the password
    stranger = _pg(boxes, "stranger", head, s["BENCH_PG_PASSWORD"])
    assert stranger.startswith("REFUSED") and "no pg_hba.conf entry" in stranger, stranger
    for role in ("stranger", "far"):
        assert _redis(boxes, role, head).startswith("-NOAUTH"), role  # KEYS without a password
        assert _redis(boxes, role, head, "not-the-password").startswith("-WRONGPASS"), role
    assert _redis(boxes, "far", head, s["BENCH_REDIS_PASSWORD"]).startswith("+OK *")  # AUTH ok, then a list
    plain = _redis(boxes, "far", head, s["BENCH_REDIS_PASSWORD"], tls=False)  # TLS port, plain text: no answer
    assert plain in ("NOTHING", "UNREACHABLE ConnectionResetError"), plain
    # the head's other address was not asked for: nothing answers there on any of the cluster's ports
    ports = ",".join(str(state[k]) for k in ("postgres_port", "redis_port", "webserver_port", "code_server_port"))
    probe = _py(boxes, "stranger", TCP_PROBE, H=boxes.hosts.address("head_stranger_side"), PORTS=ports)
    assert all(line.endswith("ConnectionRefusedError") for line in probe.splitlines()), probe


def test_the_credentials_are_in_no_file_of_the_home_and_not_in_the_event_log(boxes: Boxes) -> None:
    secrets_file = boxes.home / "cluster" / "secrets.env"
    assert secrets_file.stat().st_mode & 0o777 == 0o600
    passwords = [v.encode() for k, v in _secrets(boxes).items() if k.endswith("PASSWORD")]
    found = []
    for path in boxes.home.rglob("*"):
        if path.is_file() and path != secrets_file:
            data = path.read_bytes()
            found += [str(path) for p in passwords if p in data]
    assert not found, found
    leaked = _py(boxes, "head", """
import os, psycopg2
con = psycopg2.connect(host=os.environ["H"], port=int(os.environ["P"]), user="bench", password=os.environ["PW"],
                       dbname="dagster", sslmode="verify-ca", sslrootcert=os.environ["CA"])
cur = con.cursor()
total = 0
for table, column in (("event_logs", "event"), ("runs", "run_body"), ("snapshots", "snapshot_body"),
                      ("run_tags", "value")):
    cur.execute(f"SELECT count(*) FROM {table} WHERE position(%s in {column}::text) > 0 OR "
                f"position(%s in {column}::text) > 0", (os.environ["PW"], os.environ["RPW"]))
    total += cur.fetchone()[0]
cur.execute("SELECT count(*) FROM event_logs")
print(total, cur.fetchone()[0])
""", H=boxes.hosts.address("head"), P=str(_state(boxes)["postgres_port"]), PW=_secrets(boxes)["BENCH_PG_PASSWORD"],
                 RPW=_secrets(boxes)["BENCH_REDIS_PASSWORD"], CA=_state(boxes)["tls"]["ca"])
    hits, events = map(int, leaked.split())
    assert events > 100 and hits == 0, leaked  # the campaign's events are there, with no password in any


RUNS_PROBE = """
import json, os
from pathlib import Path
import dagster as dg
from bench_assets.platform.cluster.secrets import export_cluster_env
home = Path(os.environ["BENCH_HOME"])
os.environ["DAGSTER_HOME"] = str(home / "cluster" / "dagster")
export_cluster_env(home)
with dg.DagsterInstance.get() as inst:
    for rec in inst.get_run_records(limit=50):
        run = rec.dagster_run
        print(json.dumps({"run": run.run_id, "job": run.job_name, "status": run.status.value,
                          "created": rec.create_timestamp.isoformat(), "tags": {k: v for k, v in run.tags.items()
                          if k.startswith(("dagster/partition", "dagster/sensor", "dagster/backfill", "dagster/tick",
                                           "dagster/auto_materialize", "dagster/from_automation_condition"))}}))
"""


def _runs(b: Boxes) -> str:
    """Every run the cluster's instance holds (job, status, creation time, partition and the sensor or automation
    that asked for it), one JSON line each, read from the head box."""
    return _py(b, "head", RUNS_PROBE)


RUNS_IN_PROGRESS_PROBE = """
import os
from pathlib import Path
from bench_assets.platform.cluster.lifecycle import unfinished_runs
print("\\n".join(unfinished_runs(Path(os.environ["BENCH_HOME"]))))
"""


def _blocking_rotation(b: Boxes, state: Any) -> list[str]:
    """What rotate-secrets refuses on: the workers' step records, then the runs in progress (read on the head)."""
    from bench_assets.platform.cluster.lifecycle import running_steps

    return running_steps(b.home, state) or [line for line in _py(b, "head", RUNS_IN_PROGRESS_PROBE).splitlines()
                                            if line]


def _wait_until_rotation_is_allowed(b: Boxes, timeout_s: float = 90) -> None:
    """What rotate-secrets' refusal tells a person to do: wait until no worker has a step on record and no run is in
    progress. Having to wait after the campaign is reported as a warning (which run, which steps, and every run of
    the instance), and a wait that does not end fails the test: rotation would be refused for good."""
    from bench_assets.platform.cluster.layout import load_state

    state = load_state(b.home)
    assert state is not None
    start, first = time.monotonic(), _blocking_rotation(b, state)
    busy = first
    while busy:
        assert time.monotonic() - start < timeout_s, (f"still refused after {timeout_s:.0f} s: {busy}; "
                                                      f"the instance's runs:\n{_runs(b)}")
        time.sleep(1)
        busy = _blocking_rotation(b, state)
    if first:
        warnings.warn(f"rotate-secrets waited {time.monotonic() - start:.0f} s after the campaign for {first}; "
                      f"the instance's runs:\n{_runs(b)}", stacklevel=1)


def test_rotated_credentials_lock_the_old_ones_out_and_the_joined_box_comes_back(boxes: Boxes) -> None:
    old, head = _secrets(boxes), boxes.hosts.address("head")
    _wait_until_rotation_is_allowed(boxes)
    rotated_at = time.time()
    out = _bench(boxes, "head", "cluster", "rotate-secrets", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert KILLED_AFTER_SIGTERM not in out.stdout, killed_report(out.stdout)  # the head's servers stopped on SIGTERM
    new = _secrets(boxes)
    assert new["BENCH_SECRETS_GENERATION"] == str(int(old["BENCH_SECRETS_GENERATION"]) + 1)
    assert new["BENCH_PG_PASSWORD"] != old["BENCH_PG_PASSWORD"]
    assert "password authentication failed" in _pg(boxes, "far", head, old["BENCH_PG_PASSWORD"])
    assert _pg(boxes, "far", head, new["BENCH_PG_PASSWORD"]) == "CONNECTED"
    assert _redis(boxes, "far", head, old["BENCH_REDIS_PASSWORD"]).startswith("-WRONGPASS")
    deadline = time.monotonic() + 120
    while "restarts with the rotated credentials" not in boxes.join_log.read_text():
        assert time.monotonic() < deadline, boxes.join_log.read_text()[-3000:]
        time.sleep(1)
    _wait_for_heartbeat(boxes, max(rotated_at, time.time()))  # the new worker's, once the old one has exited
    status = json.loads(_bench(boxes, "head", "cluster", "status", "--json").stdout)
    assert next(w for w in status["workers"] if w["name"] == "far")["alive"]
    assert all(s["alive"] for s in status["servers"]), status["servers"]


def test_join_says_which_check_failed(boxes: Boxes, tmp_path: Path) -> None:
    """From a network not allowed, at an address where nothing listens, with stale credentials, or without the
    shared home: `join` refuses before it registers or starts anything, naming what failed."""
    head = boxes.hosts.address("head")
    stranger = _bench(boxes, "stranger", "cluster", "join", "--head", head, "--name", "s", "--lanes", "1")
    assert stranger.returncode == 1 and "database (PostgreSQL)" in stranger.stderr, stranger.stderr
    assert "no pg_hba.conf entry" in stranger.stderr and "--allow" in stranger.stderr, stranger.stderr
    nowhere = _bench(boxes, "stranger", "cluster", "join", "--head", boxes.hosts.address("head_stranger_side"),
                     "--name", "s", "--lanes", "1")
    assert nowhere.returncode == 1 and "cannot be reached from this box" in nowhere.stderr, nowhere.stderr
    # a home with the cluster's state and marker but old credentials (a copy made before a rotation)
    stale = tmp_path / "stale-home"
    shutil.copytree(boxes.home / "cluster", stale / "cluster", ignore=shutil.ignore_patterns("postgres", "logs"))
    shutil.copy(boxes.home / ".bench-home", stale / ".bench-home")
    from bench_assets.platform.cluster.secrets import new_secrets, write_secrets

    write_secrets(stale, new_secrets())
    wrong = subprocess.run(boxes.hosts.cmd("far", [sys.executable, "-m", "bench_assets.cli", "cluster", "join",
                                                   "--head", head, "--name", "s", "--lanes", "1"]),
                           cwd=REPO, env=_env(stale), capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 1 and "refused this box's password" in wrong.stderr, wrong.stderr
    (stale / ".bench-home").write_text("another-home\n")
    elsewhere = subprocess.run(boxes.hosts.cmd("far", [sys.executable, "-m", "bench_assets.cli", "cluster", "join",
                                                       "--head", head, "--name", "s", "--lanes", "1"]),
                               cwd=REPO, env=_env(stale), capture_output=True, text=True, timeout=120)
    assert elsewhere.returncode == 1 and "marker" in elsewhere.stderr, elsewhere.stderr
    assert [w["name"] for w in _state(boxes)["workers"]] == ["far"]  # none of them registered
