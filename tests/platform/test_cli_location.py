"""`bench` loads the code location from the file workspace.yaml names, and only a verb that builds the report
parses dbt first: a dataset import never prepares the manifest, `bench report` does (a spy counts the calls)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench_assets.platform.location import load_definitions, workspace_python_file
from tests.conftest import REPO, broken

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

SPY = ("import sys; from bench_assets.report import dbt_project; calls = []; original = dbt_project.prepare_manifest; "
       "dbt_project.prepare_manifest = lambda **kw: (calls.append(1), original(**kw))[1]; "
       "from bench_assets.cli import main; code = main(sys.argv[1:]); print('MANIFEST PREPARES', len(calls)); "
       "sys.exit(code)")


def _bench_with_spy(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    return subprocess.run([sys.executable, "-c", SPY, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def test_only_runs_that_build_the_report_prepare_the_dbt_manifest(tmp_path: Path) -> None:
    home = tmp_path / "bench"
    imported = _bench_with_spy(home, "datasets", "import", str(broken("valid_base", tmp_path)), "--name", "lab")
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert "MANIFEST PREPARES 0" in imported.stdout  # dataset run + warehouse load: no dbt
    report = _bench_with_spy(home, "report")
    assert report.returncode == 0, report.stderr[-3000:]
    assert "MANIFEST PREPARES 1" in report.stdout


def test_the_location_is_the_file_the_workspace_names() -> None:
    path = workspace_python_file(REPO / "workspace.yaml")
    assert path == REPO / "definitions.py"
    import definitions

    assert load_definitions(path) is definitions.defs  # the same module object, not a second import
