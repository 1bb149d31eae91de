"""Built report homes that several tests only read, each built once per run of the suite (tests/shared_cache.py).

- `hand_written_report`: the hand-written RF100-VL warehouse of tests/report/test_dbt_report.py and the augbench
  warehouse of tests/augbench/test_paper_report.py in one warehouse.duckdb (the two families' marts read disjoint
  tables), built by `build_report_db` once for both modules.
- `published_imports_report`: a one-model synthetic campaign over all 100 RF100-VL datasets with the genuine
  published leaderboard entry imported through `bench submission import` and the campaign's own built submission
  imported under another name, then `bench report` (both subprocesses, end to end), for
  tests/rf100vl/test_published_submission.py.

A test that changes what it is given works on `private_copy` of it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.shared_cache import shared

CLEAN_TREE = {"commit": "0" * 40, "dirty": False, "changed_files": []}
PUBLISHED = Path(__file__).resolve().parent / "rf100vl" / "published" / "yolov9-t.published.json"
SUBMISSION_NOW = "2026-11-30T00:00:00Z"


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def hand_written_rows() -> dict[str, list[dict[str, Any]]]:
    """Both hand-written warehouses' rows as one: every table of the RF100-VL one, the augbench tables of the other."""
    from tests.augbench.test_paper_report import augbench_rows
    from tests.report.test_dbt_report import warehouse_rows

    rows = warehouse_rows()
    for table, table_rows in augbench_rows().items():
        assert not rows.get(table), f"both hand-written warehouses fill {table}"
        rows[table] = table_rows
    return rows


def hand_written_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """(home, the row counts `build_report_db` returned) of the hand-written warehouse; read it, never write it."""
    from bench_assets.report.dbt_build import build_report_db
    from tests.report.test_dbt_report import write_warehouse

    rows = hand_written_rows()

    def build(home: Path) -> None:
        write_warehouse(home / "warehouse.duckdb", rows)
        counts = build_report_db(home)
        (home / "counts.json").write_text(json.dumps(counts, sort_keys=True))

    home = shared(tmp_path_factory, "hand-written-report", {"rows": _digest(rows)}, build)
    return home, json.loads((home / "counts.json").read_text())


def _completed(res: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return {"returncode": res.returncode, "stdout": res.stdout, "stderr": res.stderr}


def published_imports_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding `bench/` (the home, report built), `built.json` (syna-t's submission as built before
    anything was imported), `import.json` and `report.json` (returncode, stdout, stderr of `bench submission import`
    of the published entry and of `bench report`); read it, never write it."""
    from bench_assets.rf100vl.submission.build import build_submission, import_submission
    from tests.conftest import run_bench
    from tests.synthetic_campaign import make_campaign

    def build(folder: Path) -> None:
        home = folder / "bench"
        make_campaign(home, n_models=1, n_datasets=100, seed=3)
        built = build_submission(home, "syna-t", tree=CLEAN_TREE, now=SUBMISSION_NOW)
        (folder / "built.json").write_text(json.dumps(built))
        res = run_bench("submission", "import", str(PUBLISHED), home=home)
        (folder / "import.json").write_text(json.dumps(_completed(res)))
        again = copy.deepcopy(built)  # round trip: the built file imported under another name
        again["model"]["name"] = "syna-t-again"
        file = folder / "again.json"
        file.write_text(json.dumps(again))
        import_submission(home, file)
        res = run_bench("report", home=home)
        (folder / "report.json").write_text(json.dumps(_completed(res)))

    args = {"campaign": [1, 100, 3], "published": hashlib.sha256(PUBLISHED.read_bytes()).hexdigest()[:16]}
    return shared(tmp_path_factory, "published-imports-report", args, build)


def completed(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    """A subprocess result the builder recorded (`import` or `report`), as `run_bench` returned it."""
    doc = json.loads((folder / f"{name}.json").read_text())
    return subprocess.CompletedProcess([name], doc["returncode"], doc["stdout"], doc["stderr"])
