"""The launchpad a researcher sees: the training step's run config has described fields with working defaults,
and the fault-injection knobs appear only where BENCH_FAULT_INJECTION=1 is set (the tests set it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

PROBE = """
import json
from definitions import defs
out = {}
for key in (("rf100vl", "checkpoint"), ("rf100vl", "predictions"), ("rf100vl", "scores"), ("rf100vl", "dataset")):
    node = defs.resolve_asset_graph().get(__import__("dagster").AssetKey(list(key)))
    schema = node.assets_def.op.config_schema.as_field().config_type
    out["/".join(key)] = {name: field.description for name, field in schema.fields.items()}
print(json.dumps(out))
"""


def _config_fields(fault_injection: bool) -> dict[str, dict[str, str | None]]:
    env = {k: v for k, v in os.environ.items() if k != "BENCH_FAULT_INJECTION"}
    if fault_injection:
        env["BENCH_FAULT_INJECTION"] = "1"
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_researchers_see_described_fields_and_no_fault_injection() -> None:
    fields = _config_fields(fault_injection=False)
    assert set(fields["rf100vl/checkpoint"]) == {"recipe", "force", "timeout_minutes"}
    for asset, described in fields.items():
        for name, description in described.items():
            assert description and len(description) > 20, f"{asset}.{name} has no description for the launchpad"
    assert "registered" in fields["rf100vl/checkpoint"]["recipe"]


def test_fault_injection_only_behind_the_environment_variable() -> None:
    fields = _config_fields(fault_injection=True)["rf100vl/checkpoint"]
    assert {"fault_oom_at_step", "fault_oom_only_above_batch", "fault_sleep_per_step_s"} <= set(fields)


def test_a_mistyped_recipe_is_refused_with_the_names_that_exist(tmp_path) -> None:  # noqa: ANN001
    import pytest

    from bench_assets.rf100vl.training.models import model_recipe
    from bench_assets.rf100vl.training.recipes import RecipeError

    with pytest.raises(RecipeError) as err:
        model_recipe(tmp_path, "yolo9-t", "smok")
    assert "smok" in str(err.value) and "default, " in str(err.value) and "smoke" in str(err.value)


def test_a_mistyped_recipe_in_the_launchpad_never_becomes_a_run() -> None:
    """The recipe is an enum of the names that exist: Dagster refuses the config before it creates the run, so no
    failed run marks the partition's good earlier materialization Failed."""
    import dagster as dg
    import pytest

    from bench_assets.rf100vl.defs.jobs import train_job
    from definitions import defs

    job = defs.resolve_job_def(train_job.name)

    def config(recipe: str) -> dict:
        return {"ops": {"rf100vl__checkpoint": {"config": {"recipe": recipe}}}}

    for good in ("registered", "default", "smoke"):
        dg.validate_run_config(job, config(good))
    with pytest.raises(dg.DagsterInvalidConfigError, match="smok"):
        dg.validate_run_config(job, config("smok"))
