"""The dbt report reads the warehouse without writing it; the code location stays import-light."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from bench_assets.platform.warehouse import rebuild_warehouse
from bench_assets.rf100vl.datasets.sources import local_spec
from bench_assets.rf100vl.datasets.store import materialize_dataset
from tests.conftest import REPO, broken
from tests.tables import ALL_TABLES

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


def test_dbt_staging_builds_over_the_warehouse_read_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    materialize_dataset(home, "ds", local_spec(broken("valid_base", tmp_path)), home / "cache")
    rebuild_warehouse(home, home / "warehouse.duckdb", ALL_TABLES)
    before = (home / "warehouse.duckdb").read_bytes()
    env = {**os.environ, "BENCH_HOME": str(home), "DBT_LOG_PATH": str(tmp_path / "dbt-logs"),
           "DBT_TARGET_PATH": str(tmp_path / "dbt-target")}
    r = subprocess.run([str(Path(sys.executable).parent / "dbt"), "build", "--project-dir", "dbt_report",
                        "--profiles-dir", "dbt_report"], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (home / "warehouse.duckdb").read_bytes() == before  # dbt never writes the warehouse
    con = duckdb.connect(str(home / "report.duckdb"), read_only=True)
    con.execute(f"ATTACH '{home / 'warehouse.duckdb'}' AS warehouse (READ_ONLY)")
    assert con.execute("SELECT dataset, num_classes FROM stg_warehouse__datasets").fetchall() == [("ds", 2)]


def test_code_location_import_is_light() -> None:
    code = ("import sys, definitions; heavy = [m for m in ('torch', 'libreyolo', 'kornia', 'torchvision', "
            "'duckdb', 'pandas', 'cv2') if m in sys.modules]; print(','.join(heavy))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def test_standard_dagster_cli_loads_the_code_location_from_its_file(tmp_path: Path) -> None:
    """`dagster ... -f definitions.py` needs exactly one Definitions object at module scope."""
    dagster = Path(sys.executable).with_name("dagster")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    r = subprocess.run([str(dagster), "definitions", "validate", "-f", "definitions.py"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "All code locations passed validation" in r.stdout + r.stderr


def test_the_report_lists_every_check_of_the_location() -> None:
    """`report/rendered` heads the report with failing checks; it must see every check, not just its job's."""
    import definitions
    from bench_assets.report.definitions import build_defs, every_check

    resolved = set(definitions.defs.resolve_asset_graph().asset_check_keys)
    assert set(every_check(definitions.FAMILIES, build_defs(*definitions.FAMILIES))) == resolved
    # dataset checks, warehouse checks of both families and dbt tests are all there
    names = {k.name for k in resolved}
    assert {"lock_matches_files", "selection_vs_test", "augbench_coverage", "cells_complete"} <= names
    assert any(k.asset_key.path[:1] == ["report"] and k.asset_key.path[-1] == "rf100vl_leaderboard" for k in resolved)


def test_the_architecture_contract_holds() -> None:
    """`lint-imports` (pyproject.toml [tool.importlinter]): families and report independent, the platform imports
    none of them nor the CLI, resources/ nothing from bench_assets, nobody imports definitions, rf100vl's stages in
    order below its Dagster shells, only rf100vl's training children import torch and LibreYOLO, no cycles."""
    r = subprocess.run([str(Path(sys.executable).with_name("lint-imports"))], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "0 broken" in r.stdout and "8 kept" in r.stdout


def test_the_instance_template_lists_exactly_the_families_run_priorities() -> None:
    """The run coordinator calls what `resources/dagster.yaml` names; that list is the families' contributions."""
    import definitions
    from bench_assets.platform.instance_template import template_run_coordinator
    from bench_assets.platform.run_queue import function_name

    asked = [function_name(f.contribution.run_priority) for f in definitions.FAMILIES if f.contribution.run_priority]
    assert asked and template_run_coordinator()["config"]["priorities"] == asked


def _imported_roots(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(), filename=str(path))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    return {n.split(".")[0] for n in names}


def test_dbt_python_models_are_self_contained_and_the_product_never_imports_them() -> None:
    """A dbt Python model runs inside dbt's process with only what dbt hands it: importing `bench_assets` there would
    tie the report's build to the product's import graph (and its heavy imports), which `lint-imports` cannot see
    because `dbt_report/` is no package. The other way, product code reading a model's file would hide a second copy
    of a mart's logic."""
    models = sorted((REPO / "dbt_report" / "models").rglob("*.py"))
    assert models, "no dbt Python model found: update this test"
    ours = {"bench_assets", "resources", "definitions", "tests"}
    assert {str(m.relative_to(REPO)): sorted(_imported_roots(m) & ours) for m in models} == {
        str(m.relative_to(REPO)): [] for m in models}
    stems = {m.stem for m in models}
    readers = [str(p.relative_to(REPO)) for root in ("bench_assets", "resources") for p in (REPO / root).rglob("*.py")
               if "dbt_report/models" in p.read_text() or _imported_roots(p) & stems]
    assert readers == []
