"""The cluster's credentials and addresses, without servers: the owner-only secrets file, what `--listen` and
`--allow` become (the addresses bound, PostgreSQL's client rules, Redis's configuration), and that nothing the
cluster writes besides secrets.env carries a password. The servers themselves: tests/platform/test_cluster.py
(loopback) and tests/platform/test_real_boxes.py (network namespaces)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from bench_assets.platform.cluster.layout import (
    ClusterError,
    ClusterState,
    Worker,
    cluster_env,
    dagster_yaml,
    parse_listen,
    pg_connect_kwargs,
    pg_hba_conf,
    redis_conf,
)
from bench_assets.platform.cluster.secrets import (
    SecretsError,
    cluster_process_env,
    ensure_secrets,
    new_secrets,
    read_secrets,
    secrets_path,
    write_secrets,
)


def _state(home: Path, listen: str = "10.231.0.1/30", allow: str = "") -> ClusterState:
    addresses, networks = parse_listen(listen, allow)
    return ClusterState(home=str(home), home_id="abc", code_hash="0" * 16, postgres_port=5433, redis_port=6380,
                        webserver_port=3000, code_server_port=4000, listen=addresses, allow=networks,
                        workers=[Worker(name="box1", lanes=1, queues=["gpu"])])


def test_secrets_file_is_owner_only_whatever_the_umask_and_reads_back(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        s = ensure_secrets(tmp_path)
    finally:
        os.umask(old)
    path = secrets_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_secrets(tmp_path) == s and s.generation == 1
    assert ensure_secrets(tmp_path) == s  # kept across `up`s: the database keeps its password
    assert s.pg_password != s.redis_password and len(s.pg_password) >= 32
    assert s.pg_password not in repr(s) and s.redis_password not in repr(s)  # a traceback shows no password
    assert not list(path.parent.glob(".secrets.env.*"))  # no temp file left beside it


def test_secrets_readable_by_others_missing_or_incomplete_are_refused_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(SecretsError, match="secrets.env is missing"):
        read_secrets(tmp_path)
    path = write_secrets(tmp_path, new_secrets())
    path.chmod(0o644)
    with pytest.raises(SecretsError, match=r"readable by others \(mode 0o644\).*chmod 600"):
        read_secrets(tmp_path)
    path.chmod(0o600)
    path.write_text("BENCH_PG_PASSWORD=x\nBENCH_SECRETS_GENERATION=1\n")
    with pytest.raises(SecretsError, match="field BENCH_REDIS_PASSWORD missing"):
        read_secrets(tmp_path)
    assert isinstance(SecretsError("x"), ClusterError)  # every cluster verb reports it as its own refusal


@pytest.mark.parametrize(("listen", "allow", "addresses", "networks"), [
    ("127.0.0.1", "", ["127.0.0.1"], ["127.0.0.1/32"]),
    ("10.231.0.1/30", "", ["10.231.0.1"], ["10.231.0.0/30"]),
    ("10.0.0.5", "10.0.1.0/24,10.0.2.7", ["10.0.0.5"], ["10.0.0.5/32", "10.0.1.0/24", "10.0.2.7/32"]),
    ("10.231.0.1/30,127.0.0.1", "", ["10.231.0.1", "127.0.0.1"], ["10.231.0.0/30", "127.0.0.1/32"]),
    ("fd00::1/64", "", ["fd00::1"], ["fd00::/64"]),
])
def test_listen_and_allow_become_the_bound_addresses_and_the_allowed_networks(
        listen: str, allow: str, addresses: list[str], networks: list[str]) -> None:
    assert parse_listen(listen, allow) == (addresses, networks)


@pytest.mark.parametrize(("listen", "allow", "message"), [
    ("0.0.0.0", "", "wildcard"), ("::", "", "wildcard"), ("head-box", "", "not an address"),
    ("10.0.0.5", "10.0.0.0/33", "not a network"), ("", "", "at least one address"),
])
def test_wildcards_and_malformed_addresses_are_refused(listen: str, allow: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listen(listen, allow)


def test_postgres_accepts_the_bench_role_by_password_from_exactly_the_allowed_networks() -> None:
    rules = [line.split() for line in pg_hba_conf(["10.231.0.0/30", "10.0.1.0/24"]).splitlines()
             if line.strip() and not line.startswith("#")]
    assert rules == [["host", "all", "bench", "10.231.0.0/30", "scram-sha-256"],
                     ["host", "all", "bench", "10.0.1.0/24", "scram-sha-256"]]  # no trust, no local, no other role


def test_redis_binds_the_listen_addresses_with_a_password_and_protected_mode(tmp_path: Path) -> None:
    state = _state(tmp_path, "10.231.0.1/30,10.231.0.9")
    conf = dict(line.split(" ", 1) for line in redis_conf(state, "pw-123", tmp_path).splitlines())
    assert conf["bind"] == "10.231.0.1 10.231.0.9" and conf["port"] == "6380"
    assert conf["requirepass"] == "pw-123" and conf["protected-mode"] == "yes"


def test_nothing_the_cluster_writes_but_secrets_env_carries_a_password(tmp_path: Path) -> None:
    write_secrets(tmp_path, new_secrets())
    s = read_secrets(tmp_path)
    state = _state(tmp_path)
    written = state.to_json() + dagster_yaml(state, max_concurrent_runs=3) + state.postgres_url + state.broker_url
    assert s.pg_password not in written and s.redis_password not in written
    storage = yaml.safe_load(dagster_yaml(state, 3))["storage"]["postgres"]["postgres_db"]
    assert storage["password"] == {"env": "BENCH_PG_PASSWORD"} and storage["hostname"] == {"env": "BENCH_PG_HOST"}
    assert "password" not in json.loads(state.to_json())  # the state names no credential field at all
    env = cluster_process_env(tmp_path, state)
    assert env["BENCH_CELERY_BROKER"] == f"redis://:{s.redis_password}@10.231.0.1:6380/0"
    assert env["BENCH_CELERY_BACKEND"].endswith("@10.231.0.1:6380/1") and env["BENCH_PG_PASSWORD"] == s.pg_password
    assert env["BENCH_SECRETS_GENERATION"] == "1"
    other_box = cluster_env(state, "a", "b", head="10.231.0.5")  # `join --head`: the head as that box reaches it
    assert other_box["BENCH_PG_HOST"] == "10.231.0.5" and "@10.231.0.5:6380/0" in other_box["BENCH_CELERY_BROKER"]


def test_the_celery_executor_reads_its_urls_from_the_environment_when_a_run_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor set on the Definitions holds the variables' names: the URL (with the Redis password) is resolved
    in the run's process, so it is in no definition, snapshot or run config."""
    from bench_assets.platform.cluster import executor

    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "state.json").write_text(_state(tmp_path).to_json())
    monkeypatch.setenv("BENCH_CLUSTER", "1")
    celery = executor.cluster_executor(tmp_path)
    for password in ("first-secret", "rotated-secret"):
        monkeypatch.setenv("BENCH_CELERY_BROKER", f"redis://:{password}@10.231.0.1:6380/0")
        monkeypatch.setenv("BENCH_CELERY_BACKEND", f"redis://:{password}@10.231.0.1:6380/1")
        config = celery.config_schema.resolve_config({}).value["config"]
        assert config["broker"].startswith(f"redis://:{password}@") and config["backend"].endswith(":6380/1")


def test_with_certificates_both_servers_take_tls_only_and_every_client_checks_the_ca(tmp_path: Path) -> None:
    state = _state(tmp_path)
    state.tls = {"cert": "/h/tls/cert.pem", "key": "/h/tls/key.pem", "ca": "/h/tls/ca.pem"}
    rules = [line.split()[0] for line in pg_hba_conf(state.allow, tls=True).splitlines() if not line.startswith("#")]
    assert rules == ["hostssl"]  # a plain-text connection finds no rule
    conf = redis_conf(state, "pw", tmp_path)
    assert "port 0\n" in conf and "tls-port 6380\n" in conf and 'tls-ca-cert-file "/h/tls/ca.pem"' in conf
    env = cluster_env(state, "a", "b")
    assert env["BENCH_CELERY_BROKER"] == ("rediss://:b@10.231.0.1:6380/0?ssl_cert_reqs=required&"
                                          "ssl_ca_certs=/h/tls/ca.pem")
    params = yaml.safe_load(dagster_yaml(state, 3))["storage"]["postgres"]["postgres_db"]["params"]
    assert params == {"sslmode": "verify-ca", "sslrootcert": "/h/tls/ca.pem"}
    assert pg_connect_kwargs(state)["sslmode"] == "verify-ca"
    state.tls = {}
    assert "params" not in yaml.safe_load(dagster_yaml(state, 3))["storage"]["postgres"]["postgres_db"]
    assert "sslmode" not in pg_connect_kwargs(state)


def test_tls_files_are_copied_to_the_shared_home_with_the_key_owner_only(tmp_path: Path) -> None:
    from bench_assets.platform.cluster.lifecycle import install_tls

    (tmp_path / "c.pem").write_text("CERT")
    (tmp_path / "k.pem").write_text("KEY")
    out = install_tls(tmp_path / "home", {"cert": str(tmp_path / "c.pem"), "key": str(tmp_path / "k.pem")})
    assert Path(out["ca"]).read_text() == "CERT"  # self-signed: the certificate is its own CA
    assert stat.S_IMODE(Path(out["key"]).stat().st_mode) == 0o600 and Path(out["key"]).read_text() == "KEY"
    with pytest.raises(ClusterError, match="--tls-key .* is not a readable file"):
        install_tls(tmp_path / "home", {"cert": str(tmp_path / "c.pem"), "key": str(tmp_path / "missing.pem")})


def test_a_database_made_before_passwords_is_set_aside_not_locked(tmp_path: Path) -> None:
    from bench_assets.platform.cluster.lifecycle import _set_aside_passwordless_database

    data = tmp_path / "cluster" / "postgres" / "data"
    data.mkdir(parents=True)
    (data / "PG_VERSION").write_text("15\n")
    said: list[str] = []
    _set_aside_passwordless_database(tmp_path, said.append)
    aside = list(data.parent.glob("data.before-passwords-*"))
    assert not data.exists() and len(aside) == 1 and (aside[0] / "PG_VERSION").exists()
    assert "moved to" in said[0] and "artifacts under BENCH_HOME are unchanged" in said[0]
    _set_aside_passwordless_database(tmp_path, said.append)  # nothing there now: nothing moved, nothing said
    assert len(said) == 1


def test_rotation_is_refused_while_a_step_is_on_record_naming_its_run_and_steps(tmp_path: Path) -> None:
    from bench_assets.platform.cluster.layout import save_state, worker_dir
    from bench_assets.platform.cluster.lifecycle import rotate_secrets

    save_state(tmp_path, _state(tmp_path))
    tasks = worker_dir(tmp_path, "box1") / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "t-1.json").write_text(json.dumps({"task_id": "t-1", "run_id": "run-abc", "pid": 4242,
                                                "step_keys": ["rf100vl__scores"], "started": 0}))
    (tasks / "t-2.json").write_text("{half a rec")  # being written: still a step on that worker
    with pytest.raises(ClusterError) as refused:
        rotate_secrets(tmp_path)
    message = str(refused.value)
    assert "steps are running on box1 (run run-abc, steps ['rf100vl__scores'], pid 4242" in message, message
    assert "box1 (t-2.json)" in message and "--force" in message, message
    assert not secrets_path(tmp_path).exists()  # refused before anything changed


def test_a_run_in_progress_is_named_with_its_partition_and_sensor_and_finished_or_unstarted_ones_are_not() -> None:
    """What rotate-secrets also refuses on: a run started, starting or canceling holds no step record between
    its steps, yet its process is in the code server's group that the rotation stops."""
    import dagster as dg

    from bench_assets.platform.cluster.lifecycle import runs_in_progress

    with dg.DagsterInstance.ephemeral() as instance:
        assert runs_in_progress(instance) == []
        tags = {"dagster/partition": "mini-tiny|yolo9-t", "dagster/sensor_name": "report_automation"}
        for run_id, status in (("started-1", "STARTED"), ("canceling-1", "CANCELING"), ("created-1", "NOT_STARTED"),
                               ("done-1", "SUCCESS"), ("failed-1", "FAILURE")):
            run_tags = tags if run_id == "started-1" else {}
            instance.add_run(dg.DagsterRun(job_name="rf100vl_campaign_job", run_id=run_id,
                                           status=dg.DagsterRunStatus(status), tags=run_tags))
        found = runs_in_progress(instance)
    assert len(found) == 2, found
    started = next(line for line in found if "started-1" in line)
    assert started.startswith("run started-1 (rf100vl_campaign_job, STARTED, partition mini-tiny|yolo9-t, "
                              "sensor report_automation, for "), started
    assert any(line.startswith("run canceling-1 (rf100vl_campaign_job, CANCELING, for ") for line in found), found


def test_the_run_query_reads_the_clusters_instance_and_leaves_no_credential_behind(tmp_path: Path) -> None:
    """rotate-secrets starts the head's processes after this query: the old passwords it exported for the
    query must be gone from its environment by then. The instance here keeps the cluster's folder but stores in
    sqlite (no PostgreSQL in a unit test)."""
    import dagster as dg

    from bench_assets.platform.cluster.layout import cluster_dagster_home, save_state
    from bench_assets.platform.cluster.lifecycle import unfinished_runs

    save_state(tmp_path, _state(tmp_path))
    write_secrets(tmp_path, new_secrets())
    folder = cluster_dagster_home(tmp_path)
    folder.mkdir(parents=True)
    (folder / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {folder}\ntelemetry:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(folder)) as instance:
        instance.add_run(dg.DagsterRun(job_name="warehouse_job", run_id="w-1", status=dg.DagsterRunStatus.STARTED))
    before = dict(os.environ)
    found = unfinished_runs(tmp_path)
    assert [line.split(" (")[0] for line in found] == ["run w-1"], found
    assert dict(os.environ) == before
    assert read_secrets(tmp_path).pg_password not in "".join(os.environ.values())


def test_rotation_with_the_database_down_is_refused_naming_it_before_anything_changes(tmp_path: Path) -> None:
    """No step on record, but PostgreSQL does not answer: the refusal names it and the fix, instead of a traceback
    from the run check (or, before the check, from the password change after the head's servers were stopped)."""
    import socket

    from bench_assets.platform.cluster.layout import save_state
    from bench_assets.platform.cluster.lifecycle import rotate_secrets

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    state = _state(tmp_path, listen="127.0.0.1")
    state.postgres_port = port
    save_state(tmp_path, state)
    write_secrets(tmp_path, new_secrets())
    before = secrets_path(tmp_path).read_text()
    with pytest.raises(ClusterError, match=f"PostgreSQL \\(127.0.0.1:{port}.*is not answering"):
        rotate_secrets(tmp_path)
    assert secrets_path(tmp_path).read_text() == before
