"""The code location as `bench` sees it, and running one of its jobs on the product instance.

`bench` loads the code location from the Python file workspace.yaml names (as `dagster -f` would) and refers to
jobs through the objects the families and the report export (`rf100vl.jobs.dataset_job`, `report.jobs.report_job`);
a job object's name resolves it in the loaded location, with its resources bound.

Only a process that builds the report parses dbt (`builds_report=True` prepares the manifest first); every other
run loads the location from the manifest as it is (`dbt_project.load_without_preparing`).
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from bench_assets.platform.instance import RunOutcome, execute
from bench_assets.platform.location import load_definitions, workspace_python_file
from resources.paths import REPO_ROOT

WORKSPACE = REPO_ROOT / "workspace.yaml"
_loaded: dict[str, Any] = {}


def load_location(*, builds_report: bool = False) -> dg.Definitions:
    """The code location's Definitions (loaded once per process)."""
    from bench_assets.report import dbt_project

    if "defs" not in _loaded:
        if builds_report:
            dbt_project.prepare_manifest()  # the dbt assets load from it (a fresh clone or an edited model)
        else:
            dbt_project.load_without_preparing()
        # Whether the dbt assets were defined from a manifest matching the project (always so after a prepare).
        _loaded["dbt_current"] = dbt_project.manifest_is_fresh()
        _loaded["defs"] = load_definitions(workspace_python_file(WORKSPACE))
    if builds_report and not _loaded["dbt_current"]:
        raise RuntimeError("this process loaded the code location from a stale or missing dbt manifest; a verb that "
                           "builds the report must call load_location(builds_report=True) before its first run")
    return _loaded["defs"]


def load_for_runs() -> dg.Definitions:
    """What a run-pool worker loads (a module-level function, so it pickles): the location without dbt."""
    return load_location(builds_report=False)


def run_job(instance: dg.DagsterInstance, job: Any, *, partition_key: str | None = None,
            run_config: dict[str, Any] | None = None, tags: dict[str, str] | None = None,
            checks_only: bool = False) -> RunOutcome:
    """Run `job` (a job object a family or the report exports) in this process."""
    from bench_assets.report.jobs import report_job

    defs = load_location(builds_report=job is report_job)
    return execute(instance, defs.resolve_job_def(job.name), partition_key=partition_key, run_config=run_config,
                   tags=tags, checks_only=checks_only,
                   asset_graph=defs.resolve_asset_graph() if checks_only else None)
