"""`bench ui` starts the real Dagster UI on loopback against the product instance and stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import BENCH, REPO

pytestmark = pytest.mark.slow
QUERY = '{ assetNodes { assetKey { path } } workspaceOrError { __typename } }'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(port: int) -> dict | None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": QUERY}).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())
    except OSError:
        return None


def _pids_with_home(home: Path) -> list[int]:
    """Processes whose environment points at this BENCH_HOME (dagster dev and everything it started)."""
    marker = f"BENCH_HOME={home}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in (proc / "environ").read_bytes().split(b"\0"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_ui_serves_assets_and_stops_on_signal(bench_home: Path, sig: signal.Signals) -> None:
    port = _free_port()
    env = {**os.environ, "BENCH_HOME": str(bench_home), "DAGSTER_HOME": str(bench_home / "dagster")}
    proc = subprocess.Popen([*BENCH, "ui", "--port", str(port)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        keys: list[str] = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            data = _graphql(port)
            nodes = (data or {}).get("data", {}).get("assetNodes") or []
            keys = ["/".join(n["assetKey"]["path"]) for n in nodes]
            if keys:
                break
            time.sleep(2)
        assert {"rf100vl/catalog", "rf100vl/dataset", "report/warehouse"} <= set(keys), keys
        assert (bench_home / "dagster" / "dagster.yaml").exists()
        assert len(_pids_with_home(bench_home)) >= 3  # bench, dagster dev, webserver/daemon/code server
        proc.send_signal(sig)
        proc.wait(timeout=60)
        assert proc.returncode == 0, proc.stdout.read() if proc.stdout else ""
        deadline = time.monotonic() + 20
        while _pids_with_home(bench_home) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _pids_with_home(bench_home) == []  # webserver, daemon and code servers are gone too
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
