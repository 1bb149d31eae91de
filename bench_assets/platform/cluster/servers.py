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
from typing import Any

from bench_assets.platform.cluster.layout import (  # ClusterError: the cluster verbs' error, raised here too
    DB_NAME,
    DB_USER,
    LOOPBACK,
    ClusterError,
    ClusterState,
    Proc,
    cluster_dir,
    log_path,
    pg_hba_conf,
    redis_conf,
    url_host,
)
from bench_assets.platform.fsutil import default_signals, exited, host_id, pid_alive, proc_stat_fields

KILLED_AFTER_SIGTERM = "after SIGTERM and is killed"  # in stop_groups' warning; the cluster tests look for it
INSTALL_HINT = "install the servers with `sudo apt-get install -y redis-server postgresql` (scripts/system_deps.sh)"


def find_binary(name: str) -> str:
    """A server binary from PATH, or Debian's PostgreSQL folder (/usr/lib/postgresql/<major>/bin)."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return candidate
    raise ClusterError(f"{name} not found: {INSTALL_HINT}")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def port_free(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(_family(host)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def pick_port(wanted: int, what: str, hosts: tuple[str, ...] | list[str] = (LOOPBACK,)) -> int:
    """`wanted` when given (refused with the reason if taken on any of `hosts`), else a port free on all of them."""
    if wanted:
        taken = [h for h in hosts if not port_free(wanted, h)]
        if taken:
            raise ClusterError(f"port {wanted} for {what} is in use on {', '.join(taken)} (or that address is not "
                               "on this box): pass another port, or 0 to let `bench cluster up` choose a free one")
        return wanted
    for _ in range(50):
        with socket.socket(_family(hosts[0])) as s:
            s.bind((hosts[0], 0))
            port = s.getsockname()[1]
        if all(port_free(port, h) for h in hosts[1:]):
            return port
    raise ClusterError(f"no port free on all of {', '.join(hosts)} for {what}")


def spawn(home: Path, name: str, argv: list[str], env: dict[str, str], cwd: Path, stdin_text: str | None = None
          ) -> Proc:
    """Start `argv` in a new session with its output in the cluster's log for `name` (`stdin_text`, when given, is
    written to its standard input: configuration that must not be on a command line), SIGINT and SIGTERM at their
    default action whatever this process ignores (fsutil.default_signals): `stop_groups` stops it with SIGTERM."""
    log = log_path(home, name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE, env=env, cwd=cwd,
                             start_new_session=True, preexec_fn=default_signals)
        if stdin_text is not None:
            assert p.stdin is not None
            p.stdin.write(stdin_text.encode())
            p.stdin.close()
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


def stop_group(proc: Proc, timeout_s: float = 20.0, say: Callable[[str], Any] | None = None) -> bool:
    """SIGTERM the process group `proc` leads, SIGKILL what is left after `timeout_s`; True if it was running."""
    return bool(stop_groups([proc], timeout_s, say))


def stop_groups(procs: list[Proc], timeout_s: float = 20.0, say: Callable[[str], Any] | None = None) -> list[Proc]:
    """stop_group for several groups at once: every one is signalled, then all are waited for together (the
    slowest sets the time, not the sum); the ones that were running. A group still running `timeout_s` after
    SIGTERM is killed, and `say` (when given) is told which: a server that ignores SIGTERM is a fault to fix, not
    a stop to make quietly."""
    running = [p for p in procs if pid_alive(p.pid)]
    left = list(running)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if sig == signal.SIGKILL and say is not None:
            for p in left:
                members = "; ".join(running_members(p.pid)) or "?"
                say(f"cluster: WARNING: {Path(p.log).stem or Path(p.argv[0]).name} (pid {p.pid}) was still running "
                    f"{timeout_s:.0f} s {KILLED_AFTER_SIGTERM}; still running: {members}; its log: {p.log}")
        for p in list(left):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                left.remove(p)
        deadline = time.monotonic() + timeout_s
        pause = 0.01  # most groups are gone within milliseconds of the signal: look again soon, then every 0.2 s
        while left and time.monotonic() < deadline:
            left = [p for p in left if _group_alive(p.pid)]
            if left:
                time.sleep(pause)
                pause = min(0.2, pause * 2)
        if not left:
            break
    return running


def _group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is left running (our own exited children are reaped first)."""
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
    return group_has_running_member(pgid)


def group_has_running_member(pgid: int, proc: Path = Path("/proc")) -> bool:
    """Whether a process of group `pgid` that has not exited is left. An exited process stays a zombie until its
    parent reaps it, and a server `up` started is init's child once `up` returns: an init that reaps every couple of
    seconds made each stop wait for that (measured: 2 s per group). True where `proc` cannot tell."""
    return not proc.is_dir() or bool(running_members(pgid, proc))


def running_members(pgid: int, proc: Path = Path("/proc")) -> list[str]:
    """The processes of group `pgid` that have not exited, one line each: pid, state letter, the kernel function it
    sleeps in and its command line (what a stop that had to kill names: which member held on, and where)."""
    out = []
    if not proc.is_dir():
        return out
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # gone since the listing
            continue
        state, _ppid, pgrp = proc_stat_fields(stat)[:3]
        if int(pgrp) != pgid or exited(state):
            continue
        # Whitespace collapsed: an argument with newlines (a `python -c` script) must not break the line.
        command = " ".join(_read(Path(entry.path, "cmdline")).replace(chr(0), " ").split())
        out.append(f"pid {entry.name} ({state}, {_read(Path(entry.path, 'wchan')) or '-'}) {command[:160]}")
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


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


def start_postgres(home: Path, state: ClusterState, password: str) -> Proc:
    """PostgreSQL on the state's addresses only, the `bench` role with `password` (scram-sha-256), client rules for
    exactly the allowed networks (`pg_hba_conf`, rewritten at every start). The password goes to initdb in an
    owner-only file it removes at once and to the tools in their environment, never on a command line."""
    base = cluster_dir(home) / "postgres"
    data, sock = base / "data", base / "run"
    _check_traversable(base)
    prefix = _as_postgres()
    first = not (data / "PG_VERSION").exists()
    for d in (data, sock):
        d.mkdir(parents=True, exist_ok=True)
    pw = pwd.getpwnam("postgres") if prefix else None
    if pw is not None:
        for d in (base, data, sock):
            os.chown(d, pw.pw_uid, pw.pw_gid)
    data.chmod(0o700)
    log = base / "server.log"
    if first:
        pwfile = base / ".initdb-password"  # owner-only, for initdb's --pwfile, removed as soon as it has read it
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, (password + "\n").encode())
            os.close(fd)
            if pw is not None:
                os.chown(pwfile, pw.pw_uid, pw.pw_gid)
            _run([*prefix, find_binary("initdb"), "-D", str(data), "-U", DB_USER, "--auth=scram-sha-256",
                  f"--pwfile={pwfile}", "-E", "UTF8", "--no-instructions"], "initdb")
        finally:
            pwfile.unlink(missing_ok=True)
    hba = data / "pg_hba.conf"
    hba.write_text(pg_hba_conf(state.allow, tls=bool(state.tls)))
    owned = [hba]
    options = (f"-p {state.postgres_port} -k {sock} -c listen_addresses={','.join(state.listen)} "
               "-c password_encryption=scram-sha-256")
    if state.tls:  # the server's own copies: PostgreSQL refuses a key others can read, and reads it as `postgres`
        for name in ("cert", "key"):
            copy = data / f"server.{name}"
            copy.write_bytes(Path(state.tls[name]).read_bytes())
            owned.append(copy)
        options += f" -c ssl=on -c ssl_cert_file={data / 'server.cert'} -c ssl_key_file={data / 'server.key'}"
    for f in owned:
        if pw is not None:
            os.chown(f, pw.pw_uid, pw.pw_gid)
        f.chmod(0o600)
    _run([*prefix, find_binary("pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60",
          "start"], "pg_ctl start")
    pid = int((data / "postmaster.pid").read_text().split()[0])
    if first:
        tls = {"PGSSLMODE": "verify-ca", "PGSSLROOTCERT": state.tls["ca"]} if state.tls else {}
        _run([find_binary("createdb"), "-h", state.head, "-p", str(state.postgres_port), "-U", DB_USER, DB_NAME],
             "createdb", env={**os.environ, "PGPASSWORD": password, **tls})
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


def _run(argv: list[str], what: str, stdin_text: str | None = None, env: dict[str, str] | None = None) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, env=env,
                       **({"input": stdin_text} if stdin_text is not None else {"stdin": subprocess.DEVNULL}))
    if r.returncode != 0:
        raise ClusterError(f"{what} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")


# ------------------------------------------------------------------------------------------------------- Redis


def start_redis(home: Path, state: ClusterState, password: str) -> Proc:
    """Redis on the state's addresses with `requirepass` and protected mode, configured on its standard input."""
    data = cluster_dir(home) / "redis"
    data.mkdir(parents=True, exist_ok=True)
    argv = [find_binary("redis-server"), "-"]
    proc = spawn(home, "redis", argv, dict(os.environ), data, stdin_text=redis_conf(state, password, data))
    wait_for(lambda: redis_ping(state.redis_port, password, state.head, state.tls.get("ca")), "redis-server", proc,
             30)
    return proc


def redis_command(host: str, port: int, password: str | None, *args: str, timeout: float = 2.0,
                  ca: str | None = None) -> list[bytes]:
    """Send AUTH (when a password is given) and one command in Redis's protocol; the raw reply lines. With `ca`,
    over TLS, the server's certificate checked against that CA (not its name: boxes reach it by address)."""
    def encode(parts: tuple[str, ...]) -> bytes:
        return f"*{len(parts)}\r\n".encode() + b"".join(f"${len(p.encode())}\r\n{p}\r\n".encode() for p in parts)

    payload = (encode(("AUTH", password)) if password else b"") + encode(args)
    raw = socket.create_connection((host, port), timeout=timeout)
    if ca:
        import ssl

        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        raw = ctx.wrap_socket(raw, server_hostname=host)
    with raw as s:
        s.sendall(payload)
        want = 2 if password else 1
        buf = b""
        while buf.count(b"\r\n") < want:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    return buf.split(b"\r\n")[:want]


def redis_ping(port: int, password: str | None = None, host: str = LOOPBACK, ca: str | None = None) -> bool:
    try:
        return redis_command(host, port, password, "PING", timeout=1, ca=ca)[-1].startswith(b"+PONG")
    except OSError:
        return False


def require_postgres(state: ClusterState) -> None:
    """The cluster's PostgreSQL answers, or a ClusterError naming it and how to bring it back."""
    if not postgres_ready(state.postgres_port, state.head):
        raise ClusterError(f"the cluster's PostgreSQL ({state.head}:{state.postgres_port}, recorded in "
                           f"{state.home}/cluster/state.json) is not answering: restart the cluster with "
                           "`bench cluster down && bench cluster up`, or `bench cluster down` to work without it")


def require_servers(state: ClusterState) -> None:
    """Everything a campaign submission needs answers (checked before anything is submitted)."""
    from bench_assets.platform.cluster.secrets import read_secrets

    require_postgres(state)
    if not redis_ping(state.redis_port, read_secrets(Path(state.home)).redis_password, state.head,
                      state.tls.get("ca")):
        raise ClusterError(f"the cluster's Redis ({state.head}:{state.redis_port}) is not answering: restart the "
                           "cluster with `bench cluster down && bench cluster up`; nothing was submitted")
    if not webserver_up(state.webserver_port, state.ui_host):
        raise ClusterError(f"the cluster's Dagster webserver ({state.ui_host}:{state.webserver_port}) is not "
                           "answering: restart the cluster with `bench cluster down && bench cluster up`; "
                           "nothing was submitted")
    on_head = state.host in ("", host_id())  # the daemon's pid means something on the head box only
    if "daemon" not in state.servers or (on_head and not pid_alive(state.servers["daemon"].pid)):
        raise ClusterError("the cluster's Dagster daemon is not running (it launches submitted runs): restart the "
                           "cluster with `bench cluster down && bench cluster up`; nothing was submitted")


def postgres_ready(port: int, host: str = LOOPBACK) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
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


def webserver_up(port: int, host: str = LOOPBACK) -> bool:
    try:
        with urllib.request.urlopen(f"http://{url_host(host)}:{port}/server_info", timeout=2) as r:
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


def start_webserver(home: Path, env: dict[str, str], repo: Path, port: int, workspace: Path,
                    host: str = LOOPBACK) -> Proc:
    argv = [dagster_bin("dagster-webserver"), "-w", str(workspace), "-h", host, "-p", str(port)]
    proc = spawn(home, "webserver", argv, env, repo)
    wait_for(lambda: webserver_up(port, host), "dagster-webserver", proc, 120)
    return proc


def alive(state: ClusterState) -> dict[str, bool]:
    return {name: pid_alive(p.pid) for name, p in state.servers.items()}
