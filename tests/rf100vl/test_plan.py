"""The lane planner's cost model and plan (`bench plan`, `bench status`'s ETA): hand-worked numbers."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bench_assets.rf100vl.campaign.cost_model import (
    DEFAULT_S_PER_IMAGE_EPOCH,
    FIXED_S,
    cost_model,
    partition_images,
    sharing_slowdown,
)
from bench_assets.rf100vl.campaign.plan import plan_campaign, suggest

BIG, MID = "flir-camera-objects", "underwater-objects"  # catalogue: 11809 - 500 and 7252 - 500 images outside test


def _stats(home: Path, model: str, dataset: str, *, wall: float, epochs_done: int, device: str) -> None:
    d = home / "runs" / model / dataset / "sig"
    d.mkdir(parents=True)
    (d / "stats.json").write_text(json.dumps({"model": model, "dataset": dataset, "wall_seconds": wall,
                                              "epochs_done": epochs_done, "device": {"device": device}}))


def test_sharing_slowdown_and_suggestion() -> None:
    assert sharing_slowdown(1) == 1.0 and sharing_slowdown(2) == pytest.approx(1.6)
    assert sharing_slowdown(3, cost=0.5) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        sharing_slowdown(0)
    assert suggest({1: 10.0, 2: 9.6, 3: 9.4, 4: 9.5}) == 2  # 9.6 is within 5% of 9.4; fewer jobs win
    assert suggest({1: 10.0, 2: 20.0}) == 1
    assert suggest({1: 10.0, 2: 9.0}) == 2  # 10 is 11% above 9


def test_cost_model_prefers_this_models_measured_runs_on_the_same_lane_kind(tmp_path: Path) -> None:
    images = partition_images(tmp_path, [BIG])[BIG]
    assert images == 11809 - 500  # not stored here: the catalogue's images outside test
    documented = cost_model(tmp_path, "yolo9-t", epochs=100, device="gpu")
    assert documented.source == "documented model (gpu)"
    assert documented.seconds(1000) == pytest.approx(1000 * 100 * DEFAULT_S_PER_IMAGE_EPOCH["gpu"] + FIXED_S)
    _stats(tmp_path, "yolox-n", BIG, wall=images * 10 * 0.02, epochs_done=10, device="0")  # 0.02 s/image-epoch
    other = cost_model(tmp_path, "yolo9-t", epochs=100, device="gpu")
    assert other.source.startswith("measured (1 runs, other models)") and other.s_per_image_epoch == pytest.approx(0.02)
    _stats(tmp_path, "yolo9-t", MID, wall=(7252 - 500) * 5 * 0.04, epochs_done=5, device="0")
    mine = cost_model(tmp_path, "yolo9-t", epochs=100, device="gpu", jobs_per_gpu=2, sharing_cost=0.5)
    assert mine.source == "measured (1 runs of yolo9-t)" and mine.s_per_image_epoch == pytest.approx(0.04)
    assert mine.seconds(100) == pytest.approx(100 * 100 * 0.04 * 1.5 + FIXED_S)  # two jobs share the GPU
    assert cost_model(tmp_path, "yolo9-t", epochs=100, device="cpu").source == "documented model (cpu)"  # GPU runs


def test_plan_picks_jobs_per_gpu_and_finish_time(tmp_path: Path) -> None:
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
    doc = plan_campaign(tmp_path, "yolo9-t", [BIG, MID], epochs=10, gpus=2, now=now)
    gpu_rate = DEFAULT_S_PER_IMAGE_EPOCH["gpu"]
    per = {name: n * 10 * gpu_rate for name, n in partition_images(tmp_path, [BIG, MID]).items()}
    one = doc["options"]["1"]
    assert one["lanes"] == 2 and one["makespan_s"] == pytest.approx(per[BIG] + FIXED_S)  # one job per lane
    two = doc["options"]["2"]
    assert two["makespan_s"] == pytest.approx(per[BIG] * 1.6 + FIXED_S)  # only slower: more lanes than jobs
    assert doc["jobs_per_gpu"] == 1 and doc["suggested"]
    assert doc["finish"] == (now + dt.timedelta(seconds=one["makespan_s"])).isoformat(timespec="minutes")
    fixed = plan_campaign(tmp_path, "yolo9-t", [BIG, MID], epochs=10, gpus=1, jobs_per_gpu=2, now=now)
    assert list(fixed["options"]) == ["2"] and not fixed["suggested"]
    assert fixed["makespan_s"] == pytest.approx(per[BIG] * 1.6 + FIXED_S)
    cpu = plan_campaign(tmp_path, "yolo9-t", [BIG, MID], epochs=10, gpus=0, cpu_lanes=1, now=now)
    assert cpu["makespan_s"] == pytest.approx(sum(n * 10 * DEFAULT_S_PER_IMAGE_EPOCH["cpu"] + FIXED_S
                                                  for n in partition_images(tmp_path, [BIG, MID]).values()))


def test_an_embedded_mini_dataset_not_generated_yet_counts_its_images(tmp_path: Path) -> None:
    from bench_assets.rf100vl.datasets.mini import MINI_DATASETS

    splits = MINI_DATASETS["mini-tiny"].splits
    assert partition_images(tmp_path, ["mini-tiny"]) == {"mini-tiny": splits["train"] + splits["valid"]}
