"""Where a cluster lives and what it is: the pure half of `bench cluster` (no processes started here).

A cluster is one PostgreSQL (Dagster's run, event and schedule storage), one Redis (the Celery broker and result
backend), one code server (the code location, loaded once and served to the daemon and the webserver), one Dagster
daemon and webserver, and one Celery worker per box. Everything it writes lives under
`BENCH_HOME/cluster/`; `state.json` there says what was started, where, and with which code.

    BENCH_HOME/
      .bench-home               the home's marker: a worker that cannot read it is not on the shared filesystem
      cluster/
        state.json              addresses, ports, pids, workers, the code hash (written by `bench cluster up`)
        secrets.env             the PostgreSQL and Redis passwords, owner-only (secrets.py); nowhere else
        dagster/dagster.yaml    the cluster's Dagster instance (PostgreSQL storage, queued runs, pools)
        workspace.yaml          the daemon's and the webserver's workspace: the cluster's code server
        postgres/ redis/        the servers' data directories
        logs/                   one log per server, daemon, webserver and worker
        workers/<name>/         a worker's heartbeat, its in-flight tasks and its lane locks
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench_assets.platform.fsutil import atomic_write_text
from bench_assets.platform.instance_template import template_run_coordinator

MARKER = ".bench-home"
GPU_QUEUE = "gpu"  # steps that train or predict (they hold a lane)
GPU_STEP_TAGS = {"dagster-celery/queue": GPU_QUEUE}  # op tags of the training and prediction assets
DEFAULT_QUEUE = "dagster"  # dagster-celery's default queue: every other step
HEARTBEAT_S = 5.0  # a worker touches its heartbeat this often
LOST_AFTER_S = 30.0  # a heartbeat older than this means the worker (or its box) is gone
DB_NAME = "dagster"
DB_USER = "bench"
CODE_DIRS = ("bench_assets", "resources")
LOOPBACK = "127.0.0.1"
LOCATION_NAME = "bench"  # the code location's name (workspace.yaml's)
# Celery settings shared by the executor (the run's side) and the workers (worker_app.py explains each).
CELERY_SETTINGS: dict[str, Any] = {
    "task_acks_late": False,
    "worker_prefetch_multiplier": 1,
    "worker_disable_prefetch": True,
    "broker_connection_retry_on_startup": True,
    "result_expires": 7 * 24 * 3600,
    "worker_hijack_root_logger": False,
}  # with definitions.py: the code every box must run identically


class ClusterError(RuntimeError):
    """What the cluster verbs refuse with: a message naming the server, file or setting and the fix."""


def cluster_dir(home: Path) -> Path:
    return home / "cluster"


def state_path(home: Path) -> Path:
    return cluster_dir(home) / "state.json"


def cluster_dagster_home(home: Path) -> Path:
    return cluster_dir(home) / "dagster"


def workspace_path(home: Path) -> Path:
    return cluster_dir(home) / "workspace.yaml"


def worker_dir(home: Path, name: str) -> Path:
    return cluster_dir(home) / "workers" / name


def task_records(home: Path, name: str) -> list[tuple[Path, dict[str, Any] | None]]:
    """Worker `name`'s in-flight task records (`workers/<name>/tasks/*.json`, worker_app), by name: each path with
    its record, None for one that cannot be read (being written or moved: still a task on that worker)."""
    out: list[tuple[Path, dict[str, Any] | None]] = []
    for path in sorted((worker_dir(home, name) / "tasks").glob("*.json")):
        try:
            out.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            out.append((path, None))
    return out


def log_path(home: Path, name: str) -> Path:
    return cluster_dir(home) / "logs" / f"{name}.log"


@dataclass
class Proc:
    """A process the cluster started: its pid, the command, its log."""

    pid: int
    argv: list[str]
    log: str


@dataclass
class Worker:
    name: str  # also its own queue: steps can be pinned to a box by name
    lanes: int
    queues: list[str]
    proc: Proc | None = None  # its pid means something on `host` only
    host: str = ""  # the box it runs on (`host_id()`); "" in a state written before workers could join
    joined: bool = False  # started by `bench cluster join` on its own box (not by `up`): `down` cannot stop it


@dataclass
class ClusterState:
    home: str
    home_id: str  # the marker's content: workers compare it with what they read from the shared home
    code_hash: str
    postgres_port: int
    redis_port: int
    webserver_port: int
    code_server_port: int = 0  # 0: a state written before the cluster had a code server of its own
    started_at: float = field(default_factory=time.time)
    servers: dict[str, Proc] = field(default_factory=dict)  # postgres, redis, code-server, daemon, webserver
    workers: list[Worker] = field(default_factory=list)
    listen: list[str] = field(default_factory=lambda: [LOOPBACK])  # where PostgreSQL and Redis listen
    allow: list[str] = field(default_factory=lambda: [f"{LOOPBACK}/32"])  # networks PostgreSQL accepts
    ui_host: str = LOOPBACK  # the webserver's address (the UI has no authentication of its own)
    tls: dict[str, str] = field(default_factory=dict)  # cert, key, ca under cluster/tls/ when `up --tls-cert` was given
    host: str = ""  # the head box's name (`host_id()`): its pids are judged there only

    @property
    def head(self) -> str:
        """The address the head's own processes (and, unless `join --head` says otherwise, workers) connect to."""
        return self.listen[0]

    @property
    def postgres_url(self) -> str:
        """Where the database is, for people (no password: that is in secrets.env only)."""
        return f"postgresql://{DB_USER}@{url_host(self.head)}:{self.postgres_port}/{DB_NAME}"

    @property
    def broker_url(self) -> str:
        """Where the broker is, for people (no password: that is in secrets.env only)."""
        return f"redis://{url_host(self.head)}:{self.redis_port}/0"

    @property
    def ports(self) -> dict[str, int]:
        """The port of each server that listens on one, by its name in `servers`."""
        return {"postgres": self.postgres_port, "redis": self.redis_port, "code-server": self.code_server_port,
                "webserver": self.webserver_port}

    @property
    def total_lanes(self) -> int:
        return sum(w.lanes for w in self.workers)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClusterState:
        d = dict(d)
        d["servers"] = {k: Proc(**v) for k, v in d.get("servers", {}).items()}
        d["workers"] = [Worker(**{**w, "proc": Proc(**w["proc"]) if w.get("proc") else None})
                        for w in d.get("workers", [])]
        return cls(**d)


def load_state(home: Path) -> ClusterState | None:
    """The cluster recorded under `home`, or None when none was started (or it was taken down)."""
    path = state_path(home)
    if not path.is_file():
        return None
    try:
        return ClusterState.from_dict(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{path}: not a cluster state file ({exc}); `bench cluster down` removes it") from exc


def save_state(home: Path, state: ClusterState) -> None:
    atomic_write_text(state_path(home), state.to_json())


def ensure_marker(home: Path) -> str:
    """The home's marker id, created once (random): a worker proves it sees this home by reading it."""
    path = home / MARKER
    if not path.is_file():
        atomic_write_text(path, secrets.token_hex(8) + "\n")
    return path.read_text().strip()


def code_hash(repo: Path) -> str:
    """SHA-256 over the paths and bytes of definitions.py and every .py under bench_assets/ and resources/ (plus
    the packaged YAML/CSV/JSON data they read): two boxes with the same hash run the same product code."""
    files = [repo / "definitions.py"]
    for d in CODE_DIRS:
        files += [p for p in (repo / d).rglob("*") if p.suffix in (".py", ".yaml", ".csv", ".json")
                  and "__pycache__" not in p.parts]
    h = hashlib.sha256()
    for p in sorted(files):
        h.update(p.relative_to(repo).as_posix().encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def url_host(address: str) -> str:
    """An address as a URL's host: IPv6 in brackets."""
    return f"[{address}]" if ":" in address else address


def parse_listen(listen: str, allow: str = "") -> tuple[list[str], list[str]]:
    """`--listen ADDR[/PREFIX][,...]` and `--allow CIDR[,...]` -> (addresses to bind, networks PostgreSQL accepts).

    An address given with its prefix (as `ip addr` shows it, e.g. 10.231.0.1/30) allows its network; a bare address
    allows itself only; `--allow` adds the networks of other boxes. Wildcards (0.0.0.0, ::) are refused: bind the
    addresses the boxes reach, so nothing listens where it was not asked to."""
    import ipaddress

    addresses, networks = [], []
    for item in [x.strip() for x in listen.split(",") if x.strip()]:
        try:
            iface = ipaddress.ip_interface(item)
        except ValueError:
            raise ValueError(f"--listen {item!r} is not an address (e.g. 10.0.0.5 or 10.0.0.5/24)") from None
        if iface.ip.is_unspecified:
            raise ValueError(f"--listen {item}: a wildcard listens on every address of the box; give the address "
                             "the other boxes reach (e.g. the private network's)")
        addresses.append(str(iface.ip))
        networks.append(str(iface.network if "/" in item else ipaddress.ip_network(iface.ip)))
    for item in [x.strip() for x in allow.split(",") if x.strip()]:
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ValueError(f"--allow {item!r} is not a network (e.g. 10.0.0.0/24)") from None
    if not addresses:
        raise ValueError("--listen needs at least one address")
    return list(dict.fromkeys(addresses)), list(dict.fromkeys(networks))


def is_loopback(address: str) -> bool:
    import ipaddress

    return ipaddress.ip_address(address).is_loopback


def pg_hba_conf(allow: list[str], tls: bool = False) -> str:
    """PostgreSQL's client rules: the `bench` role with its password (scram-sha-256) from exactly the allowed
    networks, over TCP (over TLS only, `hostssl`, when the cluster has certificates); nothing else (no trust, no
    other role, no other network, no plain connection under TLS: those find no rule and are refused)."""
    kind = "hostssl" if tls else "host"
    lines = ["# Written by `bench cluster up` (docs/scale-out.md): the bench role, by password, from these networks.",
             "# TYPE  DATABASE  USER   ADDRESS  METHOD"]
    lines += [f"{kind:7s} all       {DB_USER}  {net}  scram-sha-256" for net in allow]
    return "\n".join(lines) + "\n"


def redis_conf(state: ClusterState, password: str, data_dir: Path) -> str:
    """Redis's configuration, handed to it on its standard input (`redis-server -`): the password never appears on
    a command line or in a file other than secrets.env."""
    listen = ([f"port {state.redis_port}"] if not state.tls else
              ["port 0", f"tls-port {state.redis_port}", f'tls-cert-file "{state.tls["cert"]}"',
               f'tls-key-file "{state.tls["key"]}"', f'tls-ca-cert-file "{state.tls["ca"]}"', "tls-auth-clients no"])
    return "\n".join([
        *listen,
        f"bind {' '.join(state.listen)}",
        "protected-mode yes",
        f"requirepass {password}",
        f'dir "{data_dir}"',
        'save ""',
        "appendonly no",
    ]) + "\n"


def cluster_env(state: ClusterState, pg_password: str, redis_password: str, head: str | None = None
                ) -> dict[str, str]:
    """The variables every cluster process reads its connections from (dagster.yaml and the Celery executor name
    them; they are never written to a file but secrets.env): the head's address as this box reaches it, the ports
    and the credentials."""
    host = head or state.head
    scheme, query = "redis", ""
    if state.tls:  # the broker's certificate checked against the cluster's CA
        scheme, query = "rediss", f"?ssl_cert_reqs=required&ssl_ca_certs={state.tls['ca']}"
    redis = f"{scheme}://:{redis_password}@{url_host(host)}:{state.redis_port}"
    return {"BENCH_PG_HOST": host, "BENCH_PG_PORT": str(state.postgres_port), "BENCH_PG_PASSWORD": pg_password,
            "BENCH_CELERY_BROKER": f"{redis}/0{query}", "BENCH_CELERY_BACKEND": f"{redis}/1{query}",
            "BENCH_CLUSTER_HEAD": host}


def pg_connect_kwargs(state: ClusterState, host: str | None = None) -> dict[str, object]:
    """psycopg2.connect's arguments for the cluster's database (the password added by the caller): over TLS with
    the server's certificate checked against the cluster's CA when the cluster has certificates."""
    kw: dict[str, object] = {"host": host or state.head, "port": state.postgres_port, "user": DB_USER,
                             "dbname": DB_NAME, "connect_timeout": 10}
    if state.tls:
        kw.update(sslmode="verify-ca", sslrootcert=state.tls["ca"])
    return kw


def cluster_workspace_yaml(port: int) -> str:
    """The workspace the daemon and the webserver load: the cluster's one code server. With `-w workspace.yaml`
    each would start a code server of its own, and the daemon replaces its own every minute (Dagster's workspace
    refresh), loading the code location again each time."""
    return yaml.safe_dump({"load_from": [{"grpc_server": {"host": "127.0.0.1", "port": port,
                                                          "location_name": LOCATION_NAME}}]}, sort_keys=False)


def worker_queues(name: str) -> list[str]:
    """A worker takes GPU steps, every other step, and steps pinned to its own name."""
    return [GPU_QUEUE, DEFAULT_QUEUE, name]


def dagster_yaml(state: ClusterState, max_concurrent_runs: int) -> str:
    """The cluster's Dagster instance: PostgreSQL storage shared by every box, the product's run coordinator as
    the instance template names it (the daemon launches submitted runs, highest `dagster/priority` first; runs
    queued without one get their family's priority), dequeuing every 2 s, op-level pools whose slots a dead run
    gives back after 60 s, and run monitoring."""
    coordinator = template_run_coordinator()
    coordinator.setdefault("config", {})["dequeue_interval_seconds"] = 2
    block = yaml.safe_dump({"run_coordinator": coordinator}, sort_keys=False).rstrip("\n")
    tls_params = ("" if not state.tls else
                  f"      params:\n        sslmode: verify-ca\n        sslrootcert: \"{state.tls['ca']}\"\n")
    return f"""# Written by `bench cluster up`: the cluster's Dagster instance (docs/scale-out.md).
# The database's address and password come from the environment (BENCH_PG_*, from cluster/secrets.env).
storage:
  postgres:
    postgres_db:
      username: {DB_USER}
      password:
        env: BENCH_PG_PASSWORD
      hostname:
        env: BENCH_PG_HOST
      port:
        env: BENCH_PG_PORT
      db_name: {DB_NAME}
      scheme: postgresql+psycopg2
{tls_params}{block}
concurrency:
  runs:
    max_concurrent_runs: {max_concurrent_runs}
  pools:
    default_limit: 1
    granularity: op
run_monitoring:
  enabled: true
  poll_interval_seconds: 15
  free_slots_after_run_end_seconds: 60
telemetry:
  enabled: false
"""


def worker_env(state: ClusterState, worker: Worker, base: dict[str, str] | None = None) -> dict[str, str]:
    """What a worker process runs with: the cluster's instance and broker, its lanes (CPU lanes here; a GPU box
    sets BENCH_GPUS), its own lane-lock folder, and the identity the product records in stats.json and run tags."""
    home = Path(state.home)
    env = dict(os.environ if base is None else base)
    env.update({
        "BENCH_HOME": state.home,
        "DAGSTER_HOME": str(cluster_dagster_home(home)),
        "BENCH_CLUSTER": "1",
        "BENCH_WORKER": worker.name,
        "BENCH_LANE_DIR": str(worker_dir(home, worker.name) / "lanes"),
        "BENCH_CPU_LANES": str(worker.lanes),
        "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"),
    })
    return env


def heartbeat_age(home: Path, name: str, now: float | None = None) -> float | None:
    """Seconds since worker `name` last touched its heartbeat, None if it never did."""
    path = worker_dir(home, name) / "heartbeat"
    try:
        return (time.time() if now is None else now) - path.stat().st_mtime
    except FileNotFoundError:
        return None
