"""Every warehouse table the families declare, by name (what the report's loader builds), for tests that create
warehouse files by hand, and the dbt Python models loaded as modules."""

import importlib.util
import sys
from types import ModuleType

from bench_assets.augbench.warehouse_tables import TABLES as AUGBENCH_TABLES
from bench_assets.platform import warehouse
from bench_assets.rf100vl.report.warehouse_tables import TABLES as RF100VL_TABLES
from resources.paths import REPO_ROOT

ALL_TABLES = (*RF100VL_TABLES, *AUGBENCH_TABLES)
TABLES = {t.name: t for t in ALL_TABLES}
TABLE_SCHEMAS = {t.name: t.columns for t in ALL_TABLES}


def create_sql(name: str) -> str:
    return warehouse.create_sql(TABLES[name])


def dbt_python_model(name: str) -> ModuleType:
    """A dbt Python model of `dbt_report/models/` loaded as a module (its helpers tested directly)."""
    path = next((REPO_ROOT / "dbt_report" / "models").rglob(f"{name}.py"))
    spec = importlib.util.spec_from_file_location(f"dbt_model_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
