"""Shared fixtures: a throw-away BENCH_HOME with a real Dagster instance (sqlite) inside it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.suite_cost",  # wall, CPU and the ten most expensive files at the end of every run
    "tests.suite_schedule",  # the workers take the system tests first, on one worker, then the costliest files
    "tests.suite_tmpfs",  # temporary files on /dev/shm where it has room: file creation costs far less CPU there
    "tests.suite_gc",  # no garbage collections while collection imports, none at exit (Dagster, torch)
]

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "corpus"
BENCH = [sys.executable, "-m", "bench_assets.cli"]
# The checkpoint's fault-injection config (CUDA OOM at a step, slow steps) exists only where this is set when the
# code location loads: here and in every `bench` / Dagster process the tests start. Researchers never see it.
os.environ["BENCH_FAULT_INJECTION"] = "1"


def pytest_configure(config: pytest.Config) -> None:
    # A fresh clone has no dbt manifest (dbt_report/target is ignored); the code location needs one.
    from bench_assets.report.dbt_project import prepare_manifest

    prepare_manifest()


@pytest.fixture
def bench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "bench"
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    monkeypatch.delenv("BENCH_HF_REPO", raising=False)
    monkeypatch.delenv("ROBOFLOW_API_KEY", raising=False)
    return home


@pytest.fixture
def instance(bench_home: Path) -> Iterator[object]:
    from bench_assets.platform.instance import open_instance

    inst = open_instance(bench_home)
    yield inst
    inst.dispose()


@pytest.fixture(scope="session")
def mini_raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four mini datasets in the raw Roboflow layout, generated once per run of the suite for every worker
    (tests/shared_cache.py); read only."""
    from bench_assets.rf100vl.datasets.catalog import MINI_SUITE
    from bench_assets.rf100vl.datasets.mini import generate_mini_dataset
    from tests.shared_cache import shared

    def build(root: Path) -> None:
        for name in MINI_SUITE:
            generate_mini_dataset(name, root / "raw" / name)

    return shared(tmp_path_factory, "mini-raw", {"datasets": list(MINI_SUITE)}, build) / "raw"


def broken(case: str, tmp_path: Path) -> Path:
    """A private copy of a corpus dataset (tests may modify it)."""
    dst = tmp_path / case
    shutil.copytree(CORPUS / "broken" / case, dst)
    return dst


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_bench(*args: str, home: Path, timeout: float = 300, env: dict[str, str] | None = None,
              background: bool = False) -> subprocess.CompletedProcess[str]:
    """`bench ARGS` in a process of its own: for tests that show what a process boundary does (a kill, exit codes
    seen by a shell, concurrent processes, what a fresh interpreter loads). `background`: started as a script's
    background job starts it (`bench ... &`), with SIGINT ignored."""
    full_env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"), **(env or {})}
    return subprocess.run([*BENCH, *args], cwd=REPO, env=full_env, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_ignore_sigint if background else None)


def mount_namespace_prefix() -> list[str] | None:
    """A command prefix that runs its argument in a private mount namespace with mount rights (a test mounts a small
    tmpfs there, nothing on the host), or None where unshare is missing or refused."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for prefix in ([unshare, "-rm"], [unshare, "-m"]):
        probe = subprocess.run([*prefix, "true"], capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


def bench_in_process(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`bench ARGS` through its `main()` in this process, with the environment `run_bench` gives and put back
    after: the same verbs, runs, exit codes and messages, without a fresh interpreter loading Dagster and the code
    location for every call (the location loads once per pytest worker)."""
    import contextlib
    import io

    from bench_assets.cli import main

    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    os.environ.update({"BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"), **(env or {})})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(["bench", *args], code, out.getvalue(), err.getvalue())
