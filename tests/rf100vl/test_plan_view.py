"""`rf100vl/campaign_plan` on the suite's one-box campaign (read only): the plan of the whole campaign predicted
from this model's own measured runs, beside what those runs took, as a table and a plot in the UI's metadata."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import dagster as dg
import pytest

from bench_assets.rf100vl.defs.plan_view import campaign_plan
from resources.bench_home import BenchHome
from tests.shared_training import CLUSTER_DATASETS, one_box_campaign

pytestmark = pytest.mark.slow


def test_the_plan_asset_shows_predicted_against_actual(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = one_box_campaign(tmp_path_factory) / "home"
    stats = [json.loads(p.read_text()) for p in (home / "runs" / "yolo9-t").rglob("stats.json")]
    result = dg.materialize([campaign_plan], instance=dg.DagsterInstance.ephemeral(),
                            resources={"home": BenchHome(root=str(home))},
                            run_config={"ops": {"rf100vl__campaign_plan": {"config": {"gpu_hour_price": 2.0}}}})
    assert result.success
    meta = result.asset_materializations_for_node("rf100vl__campaign_plan")[0].metadata
    (row,) = meta["rows"].value
    assert (row["model"], row["datasets"], row["finished_runs"]) == ("yolo9-t", len(CLUSTER_DATASETS), len(stats))
    assert row["makespan_source"] == f"measured ({len(stats)} runs of yolo9-t)"  # its own runs, on a CPU lane
    assert row["elapsed_h"] is not None and 0 < row["elapsed_h"] < 1 and row["predicted_h"] > 0
    assert row["memory_per_lane_gb"] > 0 and row["memory_source"].startswith("measured by")  # the runs' peak RSS
    assert row["runs_gb"] > 0 and row["disk_fits"] is True
    assert row["cost_usd"] is None and row["cost_source"] == "no GPUs in the plan (--gpus N)"  # CPU lanes: no GPU
    md = meta["plan"].value
    assert "| yolo9-t | 2 / 2 |" in md and "Sources:" in md
    png = base64.b64decode(re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", md).group(1))
    assert png.startswith(b"\x89PNG")
    assert not (Path(home) / "profiles").exists()  # the plan reads; it writes nothing into the home
