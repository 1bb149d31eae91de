"""A campaign started from the UI: the launchpad job's typed choices register it the way `bench campaign` does, and
the launcher sensor's decisions (datasets and weights first, the pilot wave, the warehouse reload, the gate) on
plain data, then on a real instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from bench_assets.platform.findings import Finding
from bench_assets.rf100vl.defs.launchpad import (
    LaunchCampaignConfig,
    ModelChoice,
    launch_campaign_job,
    model_choices,
    next_step,
    request_path,
    rf100vl_campaign_launcher,
)
from resources.bench_home import BenchHome

DOC = {"id": "r1", "model": "yolo9-t", "override_gate": False,
       "waves": [{"name": "pilot", "partitions": [["a", "yolo9-t", 30], ["a", "yolo9-t@resume", 30]]},
                 {"name": "rest", "partitions": [["b", "yolo9-t", 90]]}]}


def _gate(*red: str) -> Any:
    rows = [{"name": n, "passed": n not in red, "detail": "..."} for n in ("complete", "resume", "sizes", "selection")]
    return lambda: Finding(not red, "yolo9-t: pilot gate " + ("red: resume: off" if red else "green"), rows)


def _keys(step: Any) -> list[str]:
    return [r.run_key for r in step.runs]


def test_the_launcher_decides_wave_by_wave() -> None:
    facts = {"missing_datasets": [], "weights_missing": False, "statuses": {}, "stale_since": None,
             "gate": _gate()}
    first = next_step(DOC, **{**facts, "missing_datasets": ["a", "b"]})
    assert [(r.job_name, r.partition_key) for r in first.runs] == [("rf100vl_dataset_job", "a"),
                                                                   ("rf100vl_dataset_job", "b")]
    weights = next_step(DOC, **{**facts, "weights_missing": True})
    assert [(r.job_name, r.partition_key) for r in weights.runs] == [("rf100vl_pretrained_job", "yolo9-t")]
    pilot = next_step(DOC, **facts)
    assert _keys(pilot) == ["r1:pilot:a|yolo9-t", "r1:pilot:a|yolo9-t@resume"]
    assert pilot.runs[0].partition_key == dg.MultiPartitionKey({"dataset": "a", "model": "yolo9-t"})
    assert pilot.runs[0].tags["dagster/priority"] == "30" and "2 pilot partition(s) not finished" in pilot.waiting
    done = {"a|yolo9-t": "SUCCESS", "a|yolo9-t@resume": "SUCCESS"}
    stale = next_step(DOC, **{**facts, "statuses": done, "stale_since": 1234.0})
    assert _keys(stale) == ["r1:warehouse:1234"] and stale.runs[0].job_name == "rf100vl_gate_warehouse_job"
    green = next_step(DOC, **{**facts, "statuses": done})
    assert _keys(green)[-1] == "r1:rest:b|yolo9-t" and green.waiting is None and green.overridden is None
    red = next_step(DOC, **{**facts, "statuses": done, "gate": _gate("resume")})
    assert red.runs == [] and red.waiting == "pilot gate red: yolo9-t: pilot gate red: resume: off"
    over = next_step({**DOC, "override_gate": True}, **{**facts, "statuses": done, "gate": _gate("resume")})
    assert _keys(over)[-1] == "r1:rest:b|yolo9-t" and over.overridden == ["resume"]
    failed = next_step(DOC, **{**facts, "statuses": {**done, "a|yolo9-t": "FAILURE"}})
    assert "a|yolo9-t" in failed.waiting and "rest" not in " ".join(_keys(failed))
    single = next_step({**DOC, "waves": DOC["waves"][1:]}, **facts)
    assert _keys(single) == ["r1:rest:b|yolo9-t"] and single.waiting is None


def test_the_model_choices_are_the_trainable_families_with_recipes() -> None:
    keys = model_choices()
    assert "yolo9-t" in keys and "rfdetr-n" in keys and len(keys) == len(set(keys))
    assert {m.value for m in ModelChoice} == set(keys)


@pytest.mark.integration
def test_the_launchpad_registers_and_the_launcher_asks_for_the_datasets(bench_home: Path,
                                                                        instance: dg.DagsterInstance) -> None:
    home = BenchHome(root=str(bench_home))
    config = {"model": "yolo9_t", "recipe": "smoke", "suite": "mini", "datasets": ["mini-tiny", "mini-shapes"],
              "pilot": "datasets", "pilot_datasets": ["mini-tiny"], "replicates": 2}
    result = launch_campaign_job.execute_in_process(
        run_config={"ops": {"launch_campaign": {"config": config}}}, instance=instance, resources={"home": home})
    assert result.success
    entry = json.loads((bench_home / "models" / "yolo9-t.json").read_text())
    assert (entry["recipe"], entry["suite"], entry["pilot"]) == ("smoke", "mini", ["mini-tiny"])
    assert json.loads((bench_home / "models" / "yolo9-t@seed1.json").read_text())["recipe"] == "smoke"
    assert {"yolo9-t", "yolo9-t@seed1", "yolo9-t@resume"} <= set(instance.get_dynamic_partitions("rf100vl_model"))
    doc = json.loads(request_path(bench_home, "yolo9-t").read_text())
    assert [w["name"] for w in doc["waves"]] == ["pilot", "rest"]
    assert sorted((d, m) for d, m, _ in doc["waves"][0]["partitions"]) == [
        ("mini-tiny", "yolo9-t"), ("mini-tiny", "yolo9-t@resume"), ("mini-tiny", "yolo9-t@seed1")]
    # Nothing is stored yet: the launcher imports the datasets first (mini's generator; nothing downloads).
    out = rf100vl_campaign_launcher(dg.build_sensor_context(instance=instance, resources={"home": home}))
    assert sorted(r.partition_key for r in out.run_requests) == ["mini-shapes", "mini-tiny"]
    assert {r.job_name for r in out.run_requests} == {"rf100vl_dataset_job"}
    bad = launch_campaign_job.execute_in_process(
        run_config={"ops": {"launch_campaign": {"config": {**config, "pilot_datasets": ["nope"]}}}},
        instance=instance, resources={"home": home}, raise_on_error=False)
    assert not bad.success
    failure = bad.failure_data_for_node("launch_campaign")
    assert "--pilot names datasets outside the campaign: nope" in failure.error.message
    with pytest.raises(Exception, match="not_a_model"):
        LaunchCampaignConfig(model="not_a_model")
