"""`rf100vl/campaign_status`: the campaign view in the UI says what `bench status` says, per model, with a plot."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import dagster as dg
import pytest

from tests.synthetic_campaign import make_campaign

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


def test_campaign_status_counts_every_state_and_agrees_with_bench_status(bench_home: Path, instance) -> None:  # noqa: ANN001
    from bench_assets.rf100vl.defs.campaign_view import campaign_status_result
    from tests.conftest import bench_in_process

    make_campaign(bench_home, n_models=2, n_datasets=6, seed=4)
    names = sorted(p.name for p in (bench_home / "datasets").iterdir())
    for ds in names[:2]:  # not scored: missing, then failed
        for score in (bench_home / "eval" / "syna-t" / ds).glob("*.score*"):
            score.unlink()
        (bench_home / "eval" / "syna-t" / ds / "CURRENT.score").unlink(missing_ok=True)
    instance.add_run(dg.DagsterRun(job_name="rf100vl_campaign_job", run_id=str(uuid.uuid4()),
                                   status=dg.DagsterRunStatus.FAILURE,
                                   tags={"dagster/partition": f"{names[1]}|syna-t"}))  # failed

    result = campaign_status_result(bench_home, instance)
    rows = {r["model"]: r for r in result.metadata["rows"].value}
    assert (rows["syna-t"]["done"], rows["syna-t"]["failed"], rows["syna-t"]["missing"]) == (4, 1, 1)
    assert rows["syna-s"]["done"] == rows["syna-s"]["partitions"] == 6 and rows["syna-s"]["eta_h"] == 0
    assert rows["syna-t"]["eta_h"] > 0 and rows["syna-t"]["eta_source"]
    md = result.metadata["status"].value
    assert "| syna-t |" in md and "4/6 (67%)" in md and "data:image/png;base64," in md
    # Which partitions are not done, by state, not only how many.
    assert f"- **failed** (1): `{names[1]} | syna-t`" in md and f"- **missing** (1): `{names[0]} | syna-t`" in md
    assert result.metadata["not_done"].value == {f"{names[1]}|syna-t": "failed", f"{names[0]}|syna-t": "missing"}

    cli = {m["model"]: m for m in json.loads(bench_in_process("status", "--json", home=bench_home).stdout)}
    for model, row in rows.items():  # the same counts and ETA as the terminal's view
        states = list(cli[model]["states"].values())
        assert {s: states.count(s) for s in ("done", "failed", "missing")} == {s: row[s] for s in
                                                                               ("done", "failed", "missing")}
        assert round(cli[model]["eta_seconds"] / 3600, 2) == row["eta_h"]


def test_campaign_status_is_in_the_location_and_refreshes_after_scores() -> None:
    from definitions import defs

    # bench demo builds both with this job, so the UI shows them without a running daemon.
    view = defs.resolve_job_def("rf100vl_campaign_view_job")
    assert {k.to_user_string() for k in view.asset_layer.executable_asset_keys} == {
        "rf100vl/campaign_status", "rf100vl/campaign_plan"}

    node = defs.resolve_asset_graph().get(dg.AssetKey(["rf100vl", "campaign_status"]))
    assert dg.AssetKey(["rf100vl", "scores"]) in node.parent_keys
    assert node.automation_condition is not None
    assert "rf100vl_automation" in {s.name for s in defs.sensors}
