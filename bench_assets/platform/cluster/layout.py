"""Where a cluster lives and what it is: the pure half of `bench cluster` (no processes started here).

A cluster is one PostgreSQL (Dagster's run, event and schedule storage), one Redis (the Celery broker and result
backend), one code server (the code location, loaded once and served to the daemon and the webserver), one Dagster
daemon and webserver, and one Celery worker per box. Everything it writes lives under
`BENCH_HOME/cluster/`; `state.json` there says what was started, where, and with which code.

    BENCH_HOME/
      .bench-home               the home's marker: a worker that cannot read it is not on the shared filesystem
      cluster/
        state.json              ports, pids, workers, the code hash (written by `bench cluster up`)
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
    proc: Proc | None = None


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

    @property
    def postgres_url(self) -> str:
        return f"postgresql+psycopg2://{DB_USER}@127.0.0.1:{self.postgres_port}/{DB_NAME}"

    @property
    def broker_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def backend_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/1"

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
    return f"""# Written by `bench cluster up`: the cluster's Dagster instance (docs/scale-out.md).
storage:
  postgres:
    postgres_url: "{state.postgres_url}"
{block}
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
