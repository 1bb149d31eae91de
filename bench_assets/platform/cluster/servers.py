"""Starting and stopping the cluster's processes: PostgreSQL, Redis, the Dagster daemon and webserver, and the
Celery workers. Each is started in its own session (process group), so `bench cluster down` can stop exactly
what `bench cluster up` started, and killing one worker's group is what losing one box looks like."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from bench_assets.platform.cluster.layout import DB_NAME, DB_USER, ClusterState, Proc, cluster_dir, log_path
from bench_assets.platform.fsutil import pid_alive

INSTALL_HINT = "install the servers with `sudo apt-get install -y redis-server postgresql` (scripts/system_deps.sh)"


class ClusterError(RuntimeError):
    pass


def find_binary(name: str) -> str:
    """A server binary from PATH, or Debian's PostgreSQL folder (/usr/lib/postgresql/<major>/bin)."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return candidate
    raise ClusterError(f"{name} not found: {INSTALL_HINT}")


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_port(wanted: int, what: str) -> int:
    """`wanted` when given (refused with the reason if taken), else a free loopback port."""
    if wanted:
        if not port_free(wanted):
            raise ClusterError(f"port {wanted} for {what} is in use on 127.0.0.1: pass another port, or 0 to let "
                               "`bench cluster up` choose a free one")
        return wanted
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(home: Path, name: str, argv: list[str], env: dict[str, str], cwd: Path) -> Proc:
    """Start `argv` in a new session with its output in the cluster's log for `name`."""
    log = log_path(home, name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                             start_new_session=True)
    return Proc(pid=p.pid, argv=argv, log=str(log))


def wait_for(check: Callable[[], bool], what: str, proc: Proc | None, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        if proc is not None and not pid_alive(proc.pid):
            raise ClusterError(f"{what} exited during start-up; its log: {proc.log}\n{tail(proc.log)}")
        time.sleep(0.3)
    raise ClusterError(f"{what} did not come up within {timeout_s:.0f} s; its log: "
                       f"{proc.log if proc else '(none)'}\n{tail(proc.log) if proc else ''}")


def tail(path: str, lines: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop_group(proc: Proc, timeout_s: float = 20.0) -> bool:
    """SIGTERM the process group `proc` leads, SIGKILL what is left after `timeout_s`; True if it was running."""
    if not pid_alive(proc.pid):
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _group_alive(proc.pid):
                return True
            time.sleep(0.2)
    return True


def _group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is left (our own exited children are reaped first)."""
    try:
        os.waitpid(pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -------------------------------------------------------------------------------------------------- PostgreSQL


def _as_postgres() -> list[str]:
    """Run PostgreSQL's tools as the `postgres` user when we are root (the server refuses to run as root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise ClusterError(f"running as root and there is no `postgres` user to run the server as: {INSTALL_HINT}") \
            from exc
    return [shutil.which("runuser") or "runuser", "-u", "postgres", "--"]


def _check_traversable(path: Path) -> None:
    """As root the server runs as `postgres`, which must be able to reach its data folder."""
    if os.geteuid() != 0:
        return
    for parent in [*reversed(path.parents)]:
        if parent.exists() and not (parent.stat().st_mode & 0o001):
            raise ClusterError(f"the `postgres` user cannot reach {path}: {parent} is not searchable by others "
                               f"(mode {oct(parent.stat().st_mode & 0o777)}); use a BENCH_HOME under a folder "
                               f"others can enter, or `chmod o+x {parent}`")


def start_postgres(home: Path, port: int) -> Proc:
    base = cluster_dir(home) / "postgres"
    data, sock = base / "data", base / "run"
    _check_traversable(base)
    prefix = _as_postgres()
    first = not (data / "PG_VERSION").exists()
    for d in (data, sock):
        d.mkdir(parents=True, exist_ok=True)
    if prefix:
        pw = pwd.getpwnam("postgres")
        for d in (base, data, sock):
            os.chown(d, pw.pw_uid, pw.pw_gid)
    data.chmod(0o700)
    log = base / "server.log"
    if first:
        _run([*prefix, find_binary("initdb"), "-D", str(data), "-U", DB_USER, "--auth=trust", "-E", "UTF8",
              "--no-instructions"], "initdb")
    options = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1"
    _run([*prefix, find_binary("pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60",
          "start"], "pg_ctl start")
    pid = int((data / "postmaster.pid").read_text().split()[0])
    if first:
        _run([find_binary("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", DB_USER, DB_NAME], "createdb")
    return Proc(pid=pid, argv=["pg_ctl", "start", "-D", str(data), "-o", options], log=str(log))


def stop_postgres(home: Path, proc: Proc) -> bool:
    data = cluster_dir(home) / "postgres" / "data"
    if not pid_alive(proc.pid):
        return False
    try:
        _run([*_as_postgres(), find_binary("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], "pg_ctl stop")
    except ClusterError:
        stop_group(Proc(proc.pid, proc.argv, proc.log))
    return True


def _run(argv: list[str], what: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise ClusterError(f"{what} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")


# ------------------------------------------------------------------------------------------------------- Redis


def start_redis(home: Path, port: int) -> Proc:
    data = cluster_dir(home) / "redis"
    data.mkdir(parents=True, exist_ok=True)
    argv = [find_binary("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data),
            "--save", "", "--appendonly", "no", "--protected-mode", "yes"]
    proc = spawn(home, "redis", argv, dict(os.environ), data)
    wait_for(lambda: redis_ping(port), "redis-server", proc, 30)
    return proc


def redis_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def require_postgres(state: ClusterState) -> None:
    """The cluster's PostgreSQL answers, or a ClusterError naming it and how to bring it back."""
    if not postgres_ready(state.postgres_port):
        raise ClusterError(f"the cluster's PostgreSQL (127.0.0.1:{state.postgres_port}, recorded in "
                           f"{state.home}/cluster/state.json) is not answering: restart the cluster with "
                           "`bench cluster down && bench cluster up`, or `bench cluster down` to work without it")


def require_servers(state: ClusterState) -> None:
    """Everything a campaign submission needs answers (checked before anything is submitted)."""
    require_postgres(state)
    if not redis_ping(state.redis_port):
        raise ClusterError(f"the cluster's Redis (127.0.0.1:{state.redis_port}) is not answering: restart the "
                           "cluster with `bench cluster down && bench cluster up`; nothing was submitted")
    if not webserver_up(state.webserver_port):
        raise ClusterError(f"the cluster's Dagster webserver (127.0.0.1:{state.webserver_port}) is not answering: "
                           "restart the cluster with `bench cluster down && bench cluster up`; nothing was submitted")
    if "daemon" not in state.servers or not pid_alive(state.servers["daemon"].pid):
        raise ClusterError("the cluster's Dagster daemon is not running (it launches submitted runs): restart the "
                           "cluster with `bench cluster down && bench cluster up`; nothing was submitted")


def postgres_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------------------- daemon and webserver


def dagster_bin(name: str) -> str:
    """A console script of this interpreter's environment (dagster-daemon, dagster-webserver, celery)."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise ClusterError(f"{name} not found next to {sys.executable}: run `make setup`")
    return found


def webserver_up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def code_server_up(port: int) -> bool:
    """Whether the code server on `port` answers with the code location loaded (not only listening)."""
    from dagster._grpc.client import DagsterGrpcClient

    try:
        return bool(DagsterGrpcClient(port=port, host="127.0.0.1").list_repositories())
    except Exception:  # noqa: BLE001 - not listening yet, or still loading the code
        return False


def start_code_server(home: Path, env: dict[str, str], repo: Path, port: int) -> Proc:
    """One code server for the daemon and the webserver (what `dagster dev` does): the code location loads once."""
    from bench_assets.platform.cluster.layout import LOCATION_NAME

    argv = [dagster_bin("dagster"), "code-server", "start", "-f", str(repo / "definitions.py"), "-a", "defs",
            "-d", str(repo), "-h", "127.0.0.1", "-p", str(port), "--location-name", LOCATION_NAME]
    proc = spawn(home, "code-server", argv, env, repo)
    wait_for(lambda: code_server_up(port), "the code server", proc, 180)
    return proc


def start_daemon(home: Path, env: dict[str, str], repo: Path, workspace: Path) -> Proc:
    return spawn(home, "daemon", [dagster_bin("dagster-daemon"), "run", "-w", str(workspace)], env, repo)


def start_webserver(home: Path, env: dict[str, str], repo: Path, port: int, workspace: Path) -> Proc:
    argv = [dagster_bin("dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port)]
    proc = spawn(home, "webserver", argv, env, repo)
    wait_for(lambda: webserver_up(port), "dagster-webserver", proc, 120)
    return proc


def alive(state: ClusterState) -> dict[str, bool]:
    return {name: pid_alive(p.pid) for name, p in state.servers.items()}
