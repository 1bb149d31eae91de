"""`bench cluster up / status / down / worker / join / rotate-secrets`: the servers on a head box (loopback by
default, or the addresses `--listen` names), workers started beside them or joined from other boxes, and the
credentials they share. The pieces are in `layout.py` (what and where), `servers.py` (processes) and `secrets.py`
(the passwords)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from bench_assets.platform.cluster import servers
from bench_assets.platform.cluster.layout import (
    LOOPBACK,
    LOST_AFTER_S,
    ClusterState,
    Proc,
    Worker,
    cluster_dagster_home,
    code_hash,
    ensure_marker,
    heartbeat_age,
    load_state,
    pg_connect_kwargs,
    save_state,
    state_path,
    task_records,
    worker_dir,
    worker_env,
    worker_queues,
)
from bench_assets.platform.cluster.secrets import cluster_process_env, ensure_secrets, read_secrets
from bench_assets.platform.cluster.servers import ClusterError
from bench_assets.platform.fsutil import atomic_write_text, host_id, pid_alive

REPO = Path(__file__).resolve().parents[3]  # the checkout holding definitions.py and workspace.yaml
HEAD_SERVERS = ("webserver", "daemon", "code-server")  # stopped together; _start_head starts them again


def _server_env(state: ClusterState) -> dict[str, str]:
    home = Path(state.home)
    env = dict(os.environ)
    env.update({"BENCH_HOME": state.home, "DAGSTER_HOME": str(cluster_dagster_home(home)), "BENCH_CLUSTER": "1",
                "BENCH_CPU_LANES": str(max(1, state.total_lanes))})
    env.update(cluster_process_env(home, state))
    return env


def cluster_up(home: Path, workers: int, lanes_per_worker: int, *, ports: dict[str, int] | None = None,
               listen: str = LOOPBACK, allow: str = "", ui_host: str = LOOPBACK, max_runs: int = 0,
               tls: dict[str, str] | None = None, say: Any = print) -> ClusterState:
    """Start PostgreSQL and Redis on the `listen` addresses (PostgreSQL accepting the `bench` role by password from
    the listen networks and `allow`), the code server (loopback), the daemon, the webserver (on `ui_host`) and
    `workers` local workers (0: the servers alone, workers join from their boxes); record them in state.json and
    the credentials in secrets.env. With `tls` (cert, key and optionally ca files) PostgreSQL and Redis take TLS
    connections only, checked by every client against the CA (the certificate itself when it is self-signed)."""
    from bench_assets.platform.cluster.layout import (
        cluster_workspace_yaml,
        dagster_yaml,
        is_loopback,
        parse_listen,
        workspace_path,
    )

    if workers < 0 or lanes_per_worker < 1:
        raise ClusterError("--workers must be 0 or more and --lanes-per-worker at least 1")
    try:
        addresses, networks = parse_listen(listen, allow)
        ui = parse_listen(ui_host)[0][0]
    except ValueError as exc:
        raise ClusterError(str(exc)) from None
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
                         postgres_port=servers.pick_port(ports.get("postgres", 0), "PostgreSQL", addresses),
                         redis_port=servers.pick_port(ports.get("redis", 0), "Redis", addresses),
                         webserver_port=servers.pick_port(ports.get("webserver", 0), "the Dagster webserver", [ui]),
                         code_server_port=servers.pick_port(ports.get("code-server", 0), "the code server"),
                         listen=addresses, allow=networks, ui_host=ui, host=host_id())
    state.workers = [Worker(name=f"box{i + 1}", lanes=lanes_per_worker, queues=worker_queues(f"box{i + 1}"),
                            host=host_id()) for i in range(workers)]
    from bench_assets.platform.cluster.secrets import secrets_path

    if not secrets_path(home).exists():
        _set_aside_passwordless_database(home, say)
    ensure_secrets(home)
    if tls:
        state.tls = install_tls(home, tls)
    if not is_loopback(ui):
        say(f"cluster: WARNING: the Dagster UI listens on {ui}:{state.webserver_port} and has no authentication of "
            "its own: anyone who reaches that address can launch and delete runs. Keep it on 127.0.0.1 and reach it "
            f"through an SSH tunnel (`ssh -L {state.webserver_port}:127.0.0.1:{state.webserver_port} HEAD`), or put "
            "an authenticating proxy in front of it (docs/scale-out.md)")
    save_state(home, state)  # first, so `bench cluster down` can stop whatever did start if a later step fails
    try:
        _start_servers(home, state, say)
        atomic_write_text(cluster_dagster_home(home) / "dagster.yaml",
                          dagster_yaml(state, max_concurrent_runs=max_runs or max(2, state.total_lanes + 1)))
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
                                                             workspace_path(home), state.ui_host)
        save_state(home, state)
    except Exception:
        say("cluster: start-up failed; stopping what did start")
        cluster_down(home, say=lambda _m: None)
        raise
    return state


class AlreadyUp(ClusterError):
    def __init__(self, state: ClusterState) -> None:
        super().__init__(f"a cluster is already up under {state.home} (webserver http://{state.ui_host}:"
                         f"{state.webserver_port}); `bench cluster status` shows it, `bench cluster down` stops it")
        self.state = state


def _start_servers(home: Path, state: ClusterState, say: Any) -> None:
    s = read_secrets(home)
    where = ",".join(state.listen)
    state.servers["postgres"] = servers.start_postgres(home, state, s.pg_password)
    save_state(home, state)
    say(f"cluster: PostgreSQL on {where}:{state.postgres_port} (pid {state.servers['postgres'].pid}), clients "
        f"from {', '.join(state.allow)} by password")
    state.servers["redis"] = servers.start_redis(home, state, s.redis_password)
    save_state(home, state)
    say(f"cluster: Redis on {where}:{state.redis_port} (pid {state.servers['redis'].pid}), password required")


def _prepare_instance(home: Path, state: ClusterState) -> None:
    """Create the Dagster schema in PostgreSQL and set the `gpu` pool to the cluster's lanes."""
    os.environ["DAGSTER_HOME"] = str(cluster_dagster_home(home))
    os.environ.update(cluster_process_env(home, state))
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        instance.event_log_storage.set_concurrency_slots("gpu", state.total_lanes)
        instance.event_log_storage.set_concurrency_slots("duckdb_writer", 1)


def start_worker(home: Path, state: ClusterState, worker: Worker) -> Any:
    argv = [sys.executable, "-m", "bench_assets.cli", "cluster", "worker", "--name", worker.name,
            "--lanes", str(worker.lanes)]
    return servers.spawn(home, f"worker-{worker.name}", argv, worker_env(state, worker), REPO)


def _check_box(home: Path) -> ClusterState:
    """This box sees the shared home (its marker) and runs the cluster's code, or a ClusterError saying which."""
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
    return state


def _celery_argv(name: str, lanes: int) -> list[str]:
    return [servers.dagster_bin("celery"), "-A", "bench_assets.platform.cluster.worker_app", "worker",
            "-Q", ",".join(worker_queues(name)), "-c", str(lanes), "-n", f"{name}@%h",
            "--prefetch-multiplier", "1", "--disable-prefetch",
            "-P", "prefork", "--without-gossip", "--without-mingle", "-l", "INFO"]


def _worker_process_env(home: Path, state: ClusterState, name: str, lanes: int, head: str | None = None
                        ) -> dict[str, str]:
    env = worker_env(state, Worker(name=name, lanes=lanes, queues=worker_queues(name)))
    env.update(cluster_process_env(home, state, head))
    env["BENCH_HOST_ID"] = host_id()
    return env


def run_worker(home: Path, name: str, lanes: int) -> int:
    """Check that this box sees the home and runs the same code, then become a Celery worker (exec): the verb
    `bench cluster up` starts its local workers with."""
    state = _check_box(home)
    worker_dir(home, name).mkdir(parents=True, exist_ok=True)
    env = _worker_process_env(home, state, name, lanes, os.environ.get("BENCH_CLUSTER_HEAD") or None)
    argv = _celery_argv(name, lanes)
    sys.stdout.flush()
    os.execve(argv[0], argv, env)
    return 0  # not reached


# ----------------------------------------------------------------------------------------- a box joins the cluster

STOP_FILE = "stop"  # in a worker's folder: `bench cluster down` asks a joined worker to finish and exit


def _on_this_box(w: Worker) -> bool:
    """Whether worker `w`'s pid can be judged here: it runs on this box (a state from before hosts were recorded
    holds only workers `up` started here)."""
    return w.host in ("", host_id())


def worker_alive(home: Path, w: Worker) -> bool:
    """A worker on this box: its process; on another box: a heartbeat younger than LOST_AFTER_S (its pid means
    nothing here)."""
    if _on_this_box(w) and not w.joined:
        return bool(w.proc and pid_alive(w.proc.pid))
    age = heartbeat_age(home, w.name)
    return age is not None and age < LOST_AFTER_S


def join_checks(home: Path, head: str | None) -> tuple[ClusterState, str]:
    """What `bench cluster join` checks before it runs a worker, each with its own error: the shared home (marker),
    the code version, the credentials file, the broker and the database reached at `head` with the credentials.
    Returns the state and the head address used."""
    state = _check_box(home)
    s = read_secrets(home)
    host = head or state.head
    try:
        reply = servers.redis_command(host, state.redis_port, s.redis_password, "PING", timeout=5,
                                      ca=state.tls.get("ca"))
    except OSError as exc:
        raise ClusterError(f"the broker (Redis) at {host}:{state.redis_port} cannot be reached from this box "
                           f"({exc.strerror or exc}): is --head the head box's address on a network `bench cluster "
                           "up --listen` named, and is the port open between the boxes?") from None
    if not reply or not reply[-1].startswith(b"+PONG"):
        raise ClusterError(f"the broker (Redis) at {host}:{state.redis_port} refused this box's password "
                           f"({reply[0].decode(errors='replace')[:80] if reply else 'no answer'}): "
                           f"{home}/cluster/secrets.env is not the one the head uses (rotated since?)")
    try:
        import psycopg2

        psycopg2.connect(**pg_connect_kwargs(state, host), password=s.pg_password).close()
    except Exception as exc:  # noqa: BLE001 - psycopg2's OperationalError says which (never the password)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterError(f"the database (PostgreSQL) at {host}:{state.postgres_port} refused this box: {first}; "
                           "is this box's network in `bench cluster up --allow`, and secrets.env current?") from None
    return state, host


def _register(home: Path, name: str, lanes: int, pid: int) -> ClusterState:
    """Add (or replace) worker `name` in state.json as joined from this box, and raise the `gpu` pool to the
    cluster's lanes. Refused when a worker of that name is alive on another box."""
    import fcntl

    with open(home / "cluster" / ".state.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = load_state(home)
        if state is None:
            raise ClusterError(f"no cluster recorded under {home}: it went down while this box was joining")
        same = [w for w in state.workers if w.name == name]
        if same and worker_alive(home, same[0]) and same[0].host != host_id():
            raise ClusterError(f"a worker named {name} is alive on {same[0].host or 'the head'}: choose another "
                               "--name (it is also the worker's own queue)")
        state.workers = [w for w in state.workers if w.name != name]
        state.workers.append(Worker(name=name, lanes=lanes, queues=worker_queues(name), host=host_id(), joined=True,
                                    proc=Proc(pid=pid, argv=["bench", "cluster", "join"], log="")))
        save_state(home, state)
    os.environ.update(cluster_process_env(home, state, os.environ.get("BENCH_CLUSTER_HEAD") or None))
    os.environ["DAGSTER_HOME"] = str(cluster_dagster_home(home))
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        instance.event_log_storage.set_concurrency_slots("gpu", state.total_lanes)
    return state


def join(home: Path, head: str | None, name: str, lanes: int, say: Any = print) -> int:
    """`bench cluster join`: check (`join_checks`), register, then run this box's Celery worker as a child and keep
    it running: when `bench cluster rotate-secrets` writes new credentials the worker finishes its steps and exits,
    and is started again with them; `bench cluster down` asks it to stop, and join exits 0."""
    import subprocess

    if lanes < 1:
        raise ClusterError("--lanes must be at least 1")
    state, host = join_checks(home, head)
    os.environ["BENCH_CLUSTER_HEAD"] = host
    wdir = worker_dir(home, name)
    wdir.mkdir(parents=True, exist_ok=True)
    (wdir / STOP_FILE).unlink(missing_ok=True)
    state = _register(home, name, lanes, os.getpid())
    if state.total_lanes + 1 > _run_limit(home):
        say(f"cluster: WARNING: the cluster now has {state.total_lanes} lanes but runs at most {_run_limit(home)} "
            "runs at once (`bench cluster up --max-runs`); lanes beyond that stay idle")
    say(f"cluster: {name} joined from {host_id()} with {lanes} lane(s); broker and database at {host}")
    while True:
        env = _worker_process_env(home, state, name, lanes, host)
        child = subprocess.Popen(_celery_argv(name, lanes), env=env, preexec_fn=_die_with_parent)
        code = child.wait()
        if (wdir / STOP_FILE).exists():
            say(f"cluster: {name} stopped (`bench cluster down`)")
            return 0
        if read_secrets(home).generation != int(env["BENCH_SECRETS_GENERATION"]):
            say(f"cluster: {name} restarts with the rotated credentials")
            state, host = join_checks(home, host)
            continue
        return code


def _die_with_parent() -> None:
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _run_limit(home: Path) -> int:
    import yaml

    try:
        doc = yaml.safe_load((cluster_dagster_home(home) / "dagster.yaml").read_text())
        return int(doc["concurrency"]["runs"]["max_concurrent_runs"])
    except (OSError, KeyError, TypeError, ValueError):
        return 0


def cluster_down(home: Path, say: Any = print) -> list[str]:
    """Stop every process state.json records (workers first, PostgreSQL last); remove state.json. A worker that
    joined from another box is asked to stop (its folder's stop file); its pid is not this box's to signal."""
    state = load_state(home)
    if state is None:
        say(f"cluster: nothing recorded under {home}; nothing to stop")
        return []
    stopped = []
    local = {}
    for w in state.workers:
        if w.joined or not _on_this_box(w):
            (worker_dir(home, w.name) / STOP_FILE).touch()
            stopped.append(f"worker {w.name} (asked to stop on {w.host or 'its box'})")
        elif w.proc:
            local[w.name] = w.proc
    running = servers.stop_groups(list(local.values()), say=say)  # this box's workers together, before the head
    stopped += [f"worker {n}" for n, p in local.items() if p in running]
    head = {n: state.servers[n] for n in HEAD_SERVERS if n in state.servers}
    running = servers.stop_groups(list(head.values()), say=say)  # together: none of them needs another to stop
    stopped += [n for n, p in head.items() if p in running]
    if "redis" in state.servers and servers.stop_group(state.servers["redis"], say=say):
        stopped.append("redis")
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
    addresses = {"postgres": ",".join(state.listen), "redis": ",".join(state.listen), "code-server": LOOPBACK,
                 "webserver": state.ui_host}
    srv = [{"name": n, "pid": p.pid, "alive": pid_alive(p.pid), "log": p.log,
            **({"port": state.ports[n], "address": addresses[n]} if n in state.ports else {})}
           for n, p in state.servers.items()]
    wk = []
    for w in state.workers:
        running = len(task_records(home, w.name))
        age = heartbeat_age(home, w.name)
        wk.append({"name": w.name, "pid": w.proc.pid if w.proc else None, "host": w.host, "joined": w.joined,
                   "alive": worker_alive(home, w), "queue": w.name, "queues": w.queues,
                   "lanes": w.lanes, "heartbeat_age_s": None if age is None else round(age, 1),
                   "steps_running": running, "steps_done": done.get(w.name, 0),
                   "log": w.proc.log if w.proc else None})
    return {"up": True, "home": state.home, "code_hash": state.code_hash,
            "webserver": f"http://{state.ui_host}:{state.webserver_port}", "postgres_url": state.postgres_url,
            "broker": state.broker_url, "listen": state.listen, "allow": state.allow, "head_host": state.host,
            "lanes": state.total_lanes, "servers": srv, "workers": wk,
            "started_at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.started_at))}


def _steps_done_by_worker(home: Path) -> dict[str, int]:
    """Finished steps per worker, counted from the `done` records workers keep (worker_app)."""
    out: dict[str, int] = {}
    base = home / "cluster" / "workers"
    for d in base.glob("*/done"):
        out[d.parent.name] = len(list(d.glob("*.json")))
    return out


def running_steps(home: Path, state: ClusterState) -> list[str]:
    """The steps the workers have on record as running (their tasks/ records, worker_app), one line each: worker,
    run id, step keys and for how long, so a refusal names what it waits for."""
    out = []
    for w in state.workers:
        for path, task in task_records(home, w.name):
            if task is None:
                out.append(f"{w.name} ({path.name})")
                continue
            since = f", for {time.time() - float(task['started']):.0f} s" if task.get("started") else ""
            out.append(f"{w.name} (run {task.get('run_id')}, steps {task.get('step_keys')}, "
                       f"pid {task.get('pid')}{since})")
    return out


RUN_IN_PROGRESS = ("STARTING", "STARTED", "CANCELING")  # a queued run starts after the rotation, with the new ones


def unfinished_runs(home: Path) -> list[str]:
    """`runs_in_progress` of the cluster's instance under `home` (PostgreSQL must answer). The credentials the
    instance's dagster.yaml reads from the environment are set for the query only: the processes a rotation starts
    afterwards must not inherit the old ones."""
    import dagster as dg

    from bench_assets.platform.cluster.secrets import export_cluster_env

    saved = dict(os.environ)
    try:
        export_cluster_env(home)
        with dg.DagsterInstance.from_config(str(cluster_dagster_home(home))) as instance:
            return runs_in_progress(instance)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def runs_in_progress(instance: Any) -> list[str]:
    """The runs `instance` holds as starting, started or canceling, one line each: run id, job, status, partition,
    the sensor that asked for it and for how long, so a refusal names what it waits for. A run is in progress
    between its steps too, when no worker has a step of it on record."""
    import dagster as dg

    statuses = [dg.DagsterRunStatus(s) for s in RUN_IN_PROGRESS]
    out = []
    for rec in instance.get_run_records(dg.RunsFilter(statuses=statuses), limit=50):
        run, tags = rec.dagster_run, rec.dagster_run.tags
        extra = "".join(f", {label} {tags[key]}" for label, key in (("partition", "dagster/partition"),
                                                                    ("sensor", "dagster/sensor_name"))
                        if key in tags)
        since = rec.start_time or rec.create_timestamp.timestamp()
        out.append(f"run {run.run_id} ({run.job_name}, {run.status.value}{extra}, for {time.time() - since:.0f} s)")
    return out


def rotate_secrets(home: Path, *, force: bool = False, say: Any = print) -> int:
    """`bench cluster rotate-secrets`, on the head box: new passwords for PostgreSQL (sent as a SCRAM verifier, so
    the clear password never reaches the server or its log) and Redis (`CONFIG SET requirepass`), written to
    secrets.env; the head's code server, daemon, webserver and local workers restarted with them; joined workers
    see the new generation, finish and are restarted by their `join`. Refused while steps run (a running step
    opens new database connections with the old password) or runs are in progress (their run process is in the
    code server's process group, which is stopped) unless `force`. Returns the new generation.

    The head's processes are stopped before the passwords change and started after, with whichever credentials
    secrets.env then holds (the new ones, or the old ones when the rotation failed): a daemon stopped after the
    change cannot reach its database any more and took 12-22 s to exit instead of 2 s."""
    from bench_assets.platform.cluster.layout import DB_USER
    from bench_assets.platform.cluster.secrets import new_secrets, write_secrets

    state = load_state(home)
    if state is None:
        raise ClusterError(f"no cluster is up under {home}: nothing to rotate")
    if state.host not in ("", host_id()):
        raise ClusterError(f"run `bench cluster rotate-secrets` on the head box ({state.host}): it restarts the "
                           "servers' processes there")
    busy = running_steps(home, state)
    if busy and not force:
        raise ClusterError(f"steps are running on {', '.join(busy)}: they would lose the database when the password "
                           "changes; wait until `bench cluster status` shows none running, or pass --force")
    servers.require_postgres(state)  # before anything stops: the run check and the rotation both need it
    runs = [] if force else unfinished_runs(home)
    if runs:
        raise ClusterError(f"runs are in progress: {'; '.join(runs)}: each runs in the head's code server's process "
                           "group, which the rotation stops, and its next step would connect with the old password; "
                           "wait until they finish (the UI's Runs page lists them), or pass --force")
    old = read_secrets(home)
    new = new_secrets(old.generation + 1)
    import psycopg2
    from psycopg2.extensions import encrypt_password

    def set_pg(password: str, login: str) -> None:
        con = psycopg2.connect(**pg_connect_kwargs(state), password=login)
        try:
            con.autocommit = True
            verifier = encrypt_password(password, DB_USER, con, "scram-sha-256")
            with con.cursor() as cur:
                cur.execute(f"ALTER ROLE {DB_USER} PASSWORD %s", (verifier,))
        finally:
            con.close()

    # Stopped while their credentials still work (they exit in seconds), all three at once.
    servers.stop_groups([state.servers[n] for n in HEAD_SERVERS if n in state.servers], say=say)
    try:
        set_pg(new.pg_password, old.pg_password)
        try:
            reply = servers.redis_command(state.head, state.redis_port, old.redis_password, "CONFIG", "SET",
                                          "requirepass", new.redis_password, ca=state.tls.get("ca"))
            if not reply or not reply[-1].startswith(b"+OK"):
                raise ClusterError(f"Redis refused the new password: {reply[-1][:80]!r}" if reply
                                   else "Redis: no answer")
        except (OSError, ClusterError) as exc:
            set_pg(old.pg_password, new.pg_password)  # both keep the old credentials
            if isinstance(exc, ClusterError):
                raise
            raise ClusterError(f"Redis at {state.head}:{state.redis_port} did not answer ({exc}): nothing was "
                               "rotated, the old credentials stand; fix: bring Redis back (`bench cluster "
                               "down`, then `bench cluster up`), then rotate again") from exc
        write_secrets(home, new)
        say(f"cluster: credentials rotated (generation {new.generation}); restarting the head's processes")
    finally:  # with secrets.env as it now is: the new credentials, or the old ones when the rotation failed
        _start_head(home, state)
        save_state(home, state)
    for w in state.workers:
        if not w.joined and _on_this_box(w):
            if w.proc:
                servers.stop_group(w.proc, say=say)
            w.proc = start_worker(home, state, w)
    save_state(home, state)
    joined = [w.name for w in state.workers if w.joined]
    if joined:
        say(f"cluster: joined workers {', '.join(joined)} restart themselves with the new credentials")
    return new.generation


def _start_head(home: Path, state: ClusterState) -> None:
    """Start the head's code server, daemon and webserver (their records updated in `state`, not saved)."""
    from bench_assets.platform.cluster.layout import cluster_workspace_yaml, workspace_path

    env = _server_env(state)
    state.servers["code-server"] = servers.start_code_server(home, env, REPO, state.code_server_port)
    atomic_write_text(workspace_path(home), cluster_workspace_yaml(state.code_server_port))
    state.servers["daemon"] = servers.start_daemon(home, env, REPO, workspace_path(home))
    state.servers["webserver"] = servers.start_webserver(home, env, REPO, state.webserver_port, workspace_path(home),
                                                         state.ui_host)


def install_tls(home: Path, given: dict[str, str]) -> dict[str, str]:
    """Copy the certificate, key and CA the user gave into `cluster/tls/` on the shared home (the key owner-only),
    so every box reads the same files; the CA defaults to the certificate (a self-signed one is its own CA)."""
    folder = home / "cluster" / "tls"
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in ("cert", "key", "ca"):
        src = given.get(name) or (given.get("cert") if name == "ca" else None)
        if not src or not Path(src).is_file():
            raise ClusterError(f"--tls-{name} {src!r} is not a readable file: give the PEM files of the server's "
                               "certificate and key (and the CA that signed it, unless it is self-signed)")
        dst = folder / f"{name}.pem"
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if name == "key" else 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(Path(src).read_bytes())
        out[name] = str(dst)
    os.chmod(out["key"], 0o600)
    return out


def _set_aside_passwordless_database(home: Path, say: Any) -> None:
    """A home whose cluster ran before credentials existed has a PostgreSQL data folder whose `bench` role has no
    password: the new rules would lock everyone out of it. It is moved aside (its runs' history stays readable by
    starting a PostgreSQL on it by hand; the files under BENCH_HOME are the truth either way) and a new one made."""
    data = home / "cluster" / "postgres" / "data"
    if not (data / "PG_VERSION").exists():
        return
    aside = data.with_name(f"data.before-passwords-{time.strftime('%Y%m%d-%H%M%S')}")
    data.rename(aside)
    say(f"cluster: {data} was made before the cluster had passwords; moved to {aside.name} and a new database is "
        "created (the run history shown in the UI starts again; artifacts under BENCH_HOME are unchanged)")
