"""`bench cluster up / status / down / worker`: one machine standing in for a cluster (loopback), and the worker
verb a real GPU box runs. The pieces are in `layout.py` (what and where) and `servers.py` (processes)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from bench_assets.platform.cluster import servers
from bench_assets.platform.cluster.layout import (
    ClusterState,
    Worker,
    cluster_dagster_home,
    code_hash,
    ensure_marker,
    heartbeat_age,
    load_state,
    save_state,
    state_path,
    worker_dir,
    worker_env,
    worker_queues,
)
from bench_assets.platform.cluster.servers import ClusterError
from bench_assets.platform.fsutil import atomic_write_text, pid_alive

REPO = Path(__file__).resolve().parents[3]  # the checkout holding definitions.py and workspace.yaml


def _server_env(state: ClusterState) -> dict[str, str]:
    home = Path(state.home)
    env = dict(os.environ)
    env.update({"BENCH_HOME": state.home, "DAGSTER_HOME": str(cluster_dagster_home(home)), "BENCH_CLUSTER": "1",
                "BENCH_CPU_LANES": str(max(1, state.total_lanes))})
    return env


def cluster_up(home: Path, workers: int, lanes_per_worker: int, *, ports: dict[str, int] | None = None,
               say: Any = print) -> ClusterState:
    """Start PostgreSQL, Redis, the code server, the daemon, the webserver and `workers` workers; record them in
    state.json."""
    from bench_assets.platform.cluster.layout import cluster_workspace_yaml, dagster_yaml, workspace_path

    if workers < 1 or lanes_per_worker < 1:
        raise ClusterError("--workers and --lanes-per-worker must be at least 1")
    existing = load_state(home)
    if existing is not None:
        alive = servers.alive(existing)
        if any(alive.values()):
            raise AlreadyUp(existing)
        say(f"cluster: {state_path(home)} records a cluster that is no longer running; starting a new one")
    ports = ports or {}
    home.mkdir(parents=True, exist_ok=True)
    for binary in ("redis-server", "initdb", "pg_ctl", "createdb"):
        servers.find_binary(binary)  # every missing server is refused before anything starts
    state = ClusterState(home=str(home), home_id=ensure_marker(home), code_hash=code_hash(REPO),
                         postgres_port=servers.pick_port(ports.get("postgres", 0), "PostgreSQL"),
                         redis_port=servers.pick_port(ports.get("redis", 0), "Redis"),
                         webserver_port=servers.pick_port(ports.get("webserver", 0), "the Dagster webserver"),
                         code_server_port=servers.pick_port(ports.get("code-server", 0), "the code server"))
    state.workers = [Worker(name=f"box{i + 1}", lanes=lanes_per_worker, queues=worker_queues(f"box{i + 1}"))
                     for i in range(workers)]
    save_state(home, state)  # first, so `bench cluster down` can stop whatever did start if a later step fails
    try:
        _start_servers(home, state, say)
        atomic_write_text(cluster_dagster_home(home) / "dagster.yaml",
                          dagster_yaml(state, max_concurrent_runs=max(2, state.total_lanes + 1)))
        _prepare_instance(home, state)
        for w in state.workers:
            w.proc = start_worker(home, state, w)
            save_state(home, state)
        for w in state.workers:
            servers.wait_for(lambda w=w: heartbeat_age(home, w.name) is not None, f"worker {w.name}", w.proc, 120)
        state.servers["code-server"] = servers.start_code_server(home, _server_env(state), REPO,
                                                                 state.code_server_port)
        save_state(home, state)
        atomic_write_text(workspace_path(home), cluster_workspace_yaml(state.code_server_port))
        state.servers["daemon"] = servers.start_daemon(home, _server_env(state), REPO, workspace_path(home))
        save_state(home, state)
        state.servers["webserver"] = servers.start_webserver(home, _server_env(state), REPO, state.webserver_port,
                                                             workspace_path(home))
        save_state(home, state)
    except Exception:
        say("cluster: start-up failed; stopping what did start")
        cluster_down(home, say=lambda _m: None)
        raise
    return state


class AlreadyUp(ClusterError):
    def __init__(self, state: ClusterState) -> None:
        super().__init__(f"a cluster is already up under {state.home} (webserver http://127.0.0.1:"
                         f"{state.webserver_port}); `bench cluster status` shows it, `bench cluster down` stops it")
        self.state = state


def _start_servers(home: Path, state: ClusterState, say: Any) -> None:
    state.servers["postgres"] = servers.start_postgres(home, state.postgres_port)
    save_state(home, state)
    say(f"cluster: PostgreSQL on 127.0.0.1:{state.postgres_port} (pid {state.servers['postgres'].pid})")
    state.servers["redis"] = servers.start_redis(home, state.redis_port)
    save_state(home, state)
    say(f"cluster: Redis on 127.0.0.1:{state.redis_port} (pid {state.servers['redis'].pid})")


def _prepare_instance(home: Path, state: ClusterState) -> None:
    """Create the Dagster schema in PostgreSQL and set the `gpu` pool to the cluster's lanes."""
    os.environ["DAGSTER_HOME"] = str(cluster_dagster_home(home))
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        instance.event_log_storage.set_concurrency_slots("gpu", state.total_lanes)
        instance.event_log_storage.set_concurrency_slots("duckdb_writer", 1)


def start_worker(home: Path, state: ClusterState, worker: Worker) -> Any:
    argv = [sys.executable, "-m", "bench_assets.cli", "cluster", "worker", "--name", worker.name,
            "--lanes", str(worker.lanes)]
    return servers.spawn(home, f"worker-{worker.name}", argv, worker_env(state, worker), REPO)


def run_worker(home: Path, name: str, lanes: int) -> int:
    """Check that this box sees the home and runs the same code, then become a Celery worker (exec)."""
    state = load_state(home)
    if state is None:
        raise ClusterError(f"no cluster recorded under {home} (state.json missing): is BENCH_HOME the shared home, "
                           "and was `bench cluster up` run?")
    marker = home / ".bench-home"
    if not marker.is_file() or marker.read_text().strip() != state.home_id:
        raise ClusterError(f"this box cannot see the home's marker {marker} (or it differs): BENCH_HOME must be the "
                           "same shared filesystem on every box (docs/scale-out.md); refusing to start")
    mine = code_hash(REPO)
    if mine != state.code_hash:
        raise ClusterError(f"code version mismatch: this checkout ({REPO}) hashes to {mine}, the cluster runs "
                           f"{state.code_hash}; deploy the same commit on every box and restart the workers")
    worker_dir(home, name).mkdir(parents=True, exist_ok=True)
    env = worker_env(state, Worker(name=name, lanes=lanes, queues=worker_queues(name)))
    argv = [servers.dagster_bin("celery"), "-A", "bench_assets.platform.cluster.worker_app", "worker",
            "-Q", ",".join(worker_queues(name)), "-c", str(lanes), "-n", f"{name}@%h",
            "--prefetch-multiplier", "1", "--disable-prefetch",
            "-P", "prefork", "--without-gossip", "--without-mingle", "-l", "INFO"]
    sys.stdout.flush()
    os.execve(argv[0], argv, env)
    return 0  # not reached


def cluster_down(home: Path, say: Any = print) -> list[str]:
    """Stop every process state.json records (workers first, PostgreSQL last); remove state.json."""
    state = load_state(home)
    if state is None:
        say(f"cluster: nothing recorded under {home}; nothing to stop")
        return []
    stopped = []
    for w in state.workers:
        if w.proc and servers.stop_group(w.proc):
            stopped.append(f"worker {w.name}")
    for name in ("webserver", "daemon", "code-server", "redis"):
        proc = state.servers.get(name)
        if proc and servers.stop_group(proc):
            stopped.append(name)
    if "postgres" in state.servers and servers.stop_postgres(home, state.servers["postgres"]):
        stopped.append("postgres")
    state_path(home).unlink(missing_ok=True)
    say(f"cluster: stopped {', '.join(stopped) or 'nothing (all were already gone)'}")
    return stopped


def cluster_status(home: Path) -> dict[str, Any]:
    """What `bench cluster status --json` prints: servers and workers, each with pid, alive, and for workers
    queue, lanes, heartbeat age and steps running/done (from the worker's task records and the event log)."""
    state = load_state(home)
    if state is None:
        return {"up": False, "home": str(home), "servers": [], "workers": []}
    done = _steps_done_by_worker(home)
    srv = [{"name": n, "pid": p.pid, "alive": pid_alive(p.pid), "log": p.log,
            **({"port": state.ports[n]} if n in state.ports else {})}
           for n, p in state.servers.items()]
    wk = []
    for w in state.workers:
        running = len(list((worker_dir(home, w.name) / "tasks").glob("*.json")))
        age = heartbeat_age(home, w.name)
        wk.append({"name": w.name, "pid": w.proc.pid if w.proc else None,
                   "alive": bool(w.proc and pid_alive(w.proc.pid)), "queue": w.name, "queues": w.queues,
                   "lanes": w.lanes, "heartbeat_age_s": None if age is None else round(age, 1),
                   "steps_running": running, "steps_done": done.get(w.name, 0),
                   "log": w.proc.log if w.proc else None})
    return {"up": True, "home": state.home, "code_hash": state.code_hash,
            "webserver": f"http://127.0.0.1:{state.webserver_port}", "postgres_url": state.postgres_url,
            "broker": state.broker_url, "lanes": state.total_lanes, "servers": srv, "workers": wk,
            "started_at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.started_at))}


def _steps_done_by_worker(home: Path) -> dict[str, int]:
    """Finished steps per worker, counted from the `done` records workers keep (worker_app)."""
    out: dict[str, int] = {}
    base = home / "cluster" / "workers"
    for d in base.glob("*/done"):
        out[d.parent.name] = len(list(d.glob("*.json")))
    return out
