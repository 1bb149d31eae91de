"""The cluster's credentials: one file, `BENCH_HOME/cluster/secrets.env`, readable by its owner only.

It holds the PostgreSQL password of the `bench` role, the Redis password (`requirepass`) and a generation number
that `bench cluster rotate-secrets` raises. Nothing else stores them: `state.json`, `dagster.yaml`, the workspace,
logs, run config, tags and the warehouse carry none. The processes that need them get them from this file through
their environment (`cluster_env`): `dagster.yaml` names the password as `{env: BENCH_PG_PASSWORD}`, the Celery
executor its broker as `{env: BENCH_CELERY_BROKER}`, and Redis reads its configuration from its standard input, so
no password is ever on a command line (which every user of a box can read in `ps`).

A box that joins reads the file from the shared home: the same user (uid) on every box, as the shared home needs
anyway. A file that others can read is refused, with the command that fixes it.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from bench_assets.platform.cluster.layout import ClusterError

SECRETS_NAME = "secrets.env"
KEYS = ("BENCH_PG_PASSWORD", "BENCH_REDIS_PASSWORD", "BENCH_SECRETS_GENERATION")


class SecretsError(ClusterError):
    pass


@dataclass(frozen=True)
class Secrets:
    pg_password: str
    redis_password: str
    generation: int

    def __repr__(self) -> str:  # a traceback or a log line that prints one shows no password
        return f"Secrets(generation={self.generation}, passwords hidden)"

    def values(self) -> tuple[str, str]:
        return self.pg_password, self.redis_password


def secrets_path(home: Path) -> Path:
    return home / "cluster" / SECRETS_NAME


def new_secrets(generation: int = 1) -> Secrets:
    """Fresh random passwords (URL-safe: they go into connection URLs without escaping)."""
    return Secrets(pg_password=secrets.token_urlsafe(24), redis_password=secrets.token_urlsafe(24),
                   generation=generation)


def write_secrets(home: Path, s: Secrets) -> Path:
    """Write the file atomically, created 0600 (never readable by others, not even between create and chmod)."""
    path = secrets_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = (f"# bench cluster credentials: owner-only (0600); `bench cluster rotate-secrets` replaces them\n"
            f"BENCH_PG_PASSWORD={s.pg_password}\nBENCH_REDIS_PASSWORD={s.redis_password}\n"
            f"BENCH_SECRETS_GENERATION={s.generation}\n")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def read_secrets(home: Path) -> Secrets:
    """The cluster's credentials, or SecretsError naming the file and the fix (missing, readable by others,
    a key missing)."""
    path = secrets_path(home)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise SecretsError(f"{path} is missing: the cluster's credentials are written there by `bench cluster up`; "
                           "is BENCH_HOME the shared home the head box uses?") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretsError(f"{path} is readable by others (mode {oct(st.st_mode & 0o777)}): it holds the cluster's "
                           f"passwords; run `chmod 600 {path}` and `bench cluster rotate-secrets`")
    values: dict[str, str] = {}
    try:
        text = path.read_text()
    except PermissionError:
        raise SecretsError(f"{path} cannot be read by this user: run every box as the user that owns the shared "
                           "home") from None
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    missing = [k for k in KEYS if not values.get(k)]
    if missing:
        raise SecretsError(f"{path}: field {', '.join(missing)} missing; `bench cluster rotate-secrets` writes a "
                           "complete file")
    try:
        generation = int(values["BENCH_SECRETS_GENERATION"])
    except ValueError:
        raise SecretsError(f"{path}: field BENCH_SECRETS_GENERATION is not an integer; `bench cluster "
                           "rotate-secrets` writes a complete file") from None
    return Secrets(values["BENCH_PG_PASSWORD"], values["BENCH_REDIS_PASSWORD"], generation)


def ensure_secrets(home: Path) -> Secrets:
    """The home's credentials, created on the first `bench cluster up` and kept across restarts (the database
    keeps its password)."""
    if secrets_path(home).exists():
        return read_secrets(home)
    s = new_secrets()
    write_secrets(home, s)
    return s


def cluster_process_env(home: Path, state: object, head: str | None = None) -> dict[str, str]:
    """`layout.cluster_env` with this home's credentials, and the generation a worker compares with the file's to
    know it must restart."""
    from bench_assets.platform.cluster.layout import ClusterState, cluster_env

    assert isinstance(state, ClusterState)
    s = read_secrets(home)
    return {**cluster_env(state, s.pg_password, s.redis_password, head),
            "BENCH_SECRETS_GENERATION": str(s.generation)}


def export_cluster_env(home: Path) -> bool:
    """Put the cluster's connection variables into this process's environment while a cluster is up under `home`
    (what `dagster.yaml` and the executor read); False when none is."""
    from bench_assets.platform.cluster.layout import load_state

    state = load_state(home)
    if state is None:
        return False
    os.environ.update(cluster_process_env(home, state, os.environ.get("BENCH_CLUSTER_HEAD") or None))
    return True
