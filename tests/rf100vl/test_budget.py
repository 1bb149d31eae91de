"""`bench plan`'s four questions (campaign/budget.py, disk_plan.py, memory_plan.py) with hand-worked numbers, a
stand-in `nvidia-smi` printing what the real one prints, and the campaign's refusals before its first run."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bench_assets.rf100vl.campaign.budget import campaign_budget, preflight_refusals
from bench_assets.rf100vl.campaign.disk_plan import (
    DOCUMENTED_CHECKPOINT_BYTES,
    MARGIN_BYTES,
    RF100VL_BYTES,
    RF100VL_IMAGES,
    DatasetSize,
    cache_bytes_per_image,
    checkpoint_figure,
    dataset_sizes,
    disk_refusal,
    project_campaign_disk,
)
from bench_assets.rf100vl.campaign.memory_plan import (
    lane_memory_problem,
    lanes_that_fit,
    memory_figure,
    new_profile,
    save_profile,
    this_device,
)
from tests.conftest import REPO, bench_in_process, mount_namespace_prefix

BIG, MID = "flir-camera-objects", "underwater-objects"  # catalogue: 11809 and 7252 images (all splits)
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


def _finished_run(home: Path, model: str, dataset: str, *, imgsz: int = 640, weights: int = 0,
                  device: dict | None = None) -> None:
    d = home / "runs" / model / dataset / f"sig{imgsz}"
    (d / "weights").mkdir(parents=True)
    (d / "stats.json").write_text(json.dumps({"model": model, "dataset": dataset, "signature_fields": {"imgsz": imgsz},
                                              "device": device or {"device": "cpu"}}))
    if weights:
        (d / "weights" / "best.pt").write_bytes(bytes(weights // 2))
        (d / "weights" / "last.pt").write_bytes(bytes(weights - weights // 2))


@pytest.fixture
def fake_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An `nvidia-smi` on PATH that answers the plan's query the way the real one does (name, MiB, no units)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nvidia-smi"
    exe.write_text("#!/bin/sh\n"
                   "[ \"$1\" = --query-gpu=name,memory.total ] || exit 9\n"
                   "echo 'NVIDIA H100 80GB HBM3, 81559'\necho 'NVIDIA H100 80GB HBM3, 81559'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


def test_disk_projection_by_hand() -> None:
    sizes = {"a": DatasetSize(images=1000, stored_bytes=5_000_000), "b": DatasetSize(images=3000, stored_bytes=None)}
    disk = project_campaign_disk(sizes, runs=2, imgsz=416, cache=True, checkpoint_bytes_per_run=1e8,
                                 checkpoint_source="given", free_bytes=10**12)
    parts = {k: v["bytes"] for k, v in disk["parts"].items()}
    assert parts["datasets"] == round(3000 * RF100VL_BYTES / RF100VL_IMAGES)  # only b is fetched; a is on disk
    assert parts["checkpoints"] == 2 * 2 * 1e8  # two partitions x two replicate runs
    assert parts["cache"] == 4000 * 660_000 * 2  # every image of each run, at the measured 416 px size
    assert disk["needed_bytes"] == sum(parts.values()) and parts["margin"] == MARGIN_BYTES
    assert disk["ok"] and disk_refusal(disk, Path("/h")) is None
    source = disk["parts"]["datasets"]["source"]
    assert "1 to fetch" in source and "1 stored here" in source
    assert cache_bytes_per_image(1280) == 953_000 * 4  # an unmeasured size scales with the pixels
    no_cache = project_campaign_disk(sizes, runs=1, imgsz=640, cache=False, checkpoint_bytes_per_run=0,
                                     checkpoint_source="-", free_bytes=1)
    assert no_cache["parts"]["cache"]["bytes"] == 0 and not no_cache["ok"]
    refusal = disk_refusal(no_cache, Path("/h"))
    assert refusal is not None and "0.00 GB free" in refusal and f"{no_cache['needed_bytes'] / 1e9:.2f} GB" in refusal


def test_rf100vl_at_640_does_not_fit_250_gb_but_416_does_on_a_bigger_disk(tmp_path: Path) -> None:
    """The campaign guide's arithmetic: dataset 49 GB + checkpoints (up to 56 GB over 100 datasets) + ~156 GB of
    640 px sidecars > 250 GB; at 416 px the sidecars are ~108 GB and it fits."""
    from bench_assets.rf100vl.datasets.catalog import suite_members

    sizes = dataset_sizes(tmp_path, suite_members("rf100vl"))
    assert sum(s.images for s in sizes.values()) == RF100VL_IMAGES
    assert all(s.stored_bytes is None for s in sizes.values())
    ckpt = 560e6  # the guide's 56 GB of checkpoints over the 100 datasets
    at = {px: project_campaign_disk(sizes, runs=1, imgsz=px, cache=True, checkpoint_bytes_per_run=ckpt,
                                    checkpoint_source="-", free_bytes=250 * 10**9) for px in (640, 416)}
    assert not at[640]["ok"] and 255e9 < at[640]["needed_bytes"] < 265e9
    assert at[416]["ok"] and at[416]["parts"]["cache"]["bytes"] == pytest.approx(108.3e9, rel=0.01)


def test_checkpoint_figure_prefers_measured_runs_then_parameters(tmp_path: Path) -> None:
    value, source = checkpoint_figure(tmp_path, "yolo9-t", None)
    assert value == 2 * DOCUMENTED_CHECKPOINT_BYTES and source.startswith("documented default")
    by_params, source = checkpoint_figure(tmp_path, "yolo9-t", 2_000_000)
    assert by_params == pytest.approx(2 * 2e6 * DOCUMENTED_CHECKPOINT_BYTES / 9e6) and "2.0 M parameters" in source
    _finished_run(tmp_path, "yolo9-t", BIG, weights=3000)
    _finished_run(tmp_path, "yolo9-t", MID, weights=5000)
    _finished_run(tmp_path, "yolox-n", "other", weights=10**6)  # another model's runs never count
    measured = checkpoint_figure(tmp_path, "yolo9-t", 2_000_000)
    assert measured == (4000, "measured (2 finished run(s) of yolo9-t, median)")


def test_memory_is_measured_never_derived(tmp_path: Path) -> None:
    fig = memory_figure(tmp_path, "yolo9-t", 640, "gpu", "NVIDIA H100 80GB HBM3")
    assert fig["per_lane_mb"] is None and "bench models profile-memory yolo9-t" in fig["source"]
    # Finished runs at that size on that kind of lane: the median peak.
    _finished_run(tmp_path, "yolo9-t", BIG, device={"device": "0", "peak_vram_reserved_mb": 9000.0})
    _finished_run(tmp_path, "yolo9-t", MID, device={"device": "0", "peak_vram_reserved_mb": 11000.0})
    _finished_run(tmp_path, "yolo9-t", "c", imgsz=416, device={"device": "0", "peak_vram_reserved_mb": 1.0})
    _finished_run(tmp_path, "yolo9-t", "d", device={"device": "cpu", "peak_rss_mb": 2.0})
    fig = memory_figure(tmp_path, "yolo9-t", 640, "gpu", "NVIDIA H100 80GB HBM3")
    assert fig["per_lane_mb"] == 10000.0 and "2 finished run(s)" in fig["source"]
    assert memory_figure(tmp_path, "yolo9-t", 640, "cpu", "x")["per_lane_mb"] == 2.0
    # A profile wins, and says whether it was taken on this kind of device.
    prof = new_profile("yolo9-t", 640, 16, "gpu", 10_800.0, "profile step", "2026-12-01T12:00:00+00:00")
    save_profile(tmp_path, prof.__class__(**{**prof.__dict__, "device_name": "NVIDIA A10"}))
    here = memory_figure(tmp_path, "yolo9-t", 640, "gpu", "NVIDIA A10")
    there = memory_figure(tmp_path, "yolo9-t", 640, "gpu", "NVIDIA H100 80GB HBM3")
    assert here["per_lane_mb"] == 10_800.0 and here["source"].startswith("measured here (profile step")
    assert there["source"].startswith("measured on another kind of box (NVIDIA A10)")


def test_lanes_that_fit_and_the_refusal_text() -> None:
    assert lanes_that_fit(10_800, 81_559) == 6 and lanes_that_fit(6_200, 81_559) == 11  # 90% of the device
    assert lanes_that_fit(None, 81_559) is None and lanes_that_fit(10_800, None) is None
    assert lane_memory_problem(6, 10_800, 81_559, "GPU", "s") is None
    problem = lane_memory_problem(8, 10_800, 81_559, "GPU", "measured here")
    assert problem is not None and "8 lane(s) per GPU need 84.4 GB" in problem and "at most 6 lane(s)" in problem
    assert lane_memory_problem(64, None, 81_559, "GPU", "s") is None  # nothing measured: the plan says so instead


def test_this_device_reads_nvidia_smi(fake_gpu: None) -> None:
    assert this_device("gpu") == ("NVIDIA H100 80GB HBM3", 81559.0)
    name, total = this_device("cpu")
    assert name and total and total > 100  # this box's RAM in MB


def test_budget_waves_cost_and_the_memory_cap(tmp_path: Path, fake_gpu: None) -> None:
    waves = [("pilot", [MID]), ("rest", [BIG])]
    free = campaign_budget(tmp_path, "yolo9-t", waves, epochs=10, imgsz=640, disk_cache=True, gpus=2,
                           gpu_hour_price=2.5, now=NOW)
    m, c = free["makespan"], free["cost"]
    assert [w["wave"] for w in m["per_wave"]] == ["pilot", "rest"]
    assert m["seconds"] == pytest.approx(sum(w["makespan_s"] for w in m["per_wave"]))
    assert c["gpu_hours"] == pytest.approx(m["seconds"] / 3600 * 2, abs=1e-3)
    assert c["usd"] == pytest.approx(c["gpu_hours"] * 2.5, abs=0.01) and "2.5 USD" in c["source"]
    assert m["per_wave"][1]["finish"] == m["finish"] and m["per_wave"][0]["finish"] < m["finish"]
    assert set(m["options"]) == {"1", "2", "3", "4"}  # nothing measured: every jobs-per-GPU option is tried
    assert {k: bool(free[k]["source"]) for k in ("makespan", "disk", "memory", "cost")} == dict.fromkeys(
        ("makespan", "disk", "memory", "cost"), True)
    # A measured 30 GB per lane on an 80 GB card: two jobs per GPU at most, whatever the planner would like.
    save_profile(tmp_path, new_profile("yolo9-t", 640, 16, "gpu", 30_000.0, "profile step", "t"))
    capped = campaign_budget(tmp_path, "yolo9-t", waves, epochs=10, imgsz=640, disk_cache=True, gpus=2,
                             jobs_per_gpu=0, now=NOW)
    assert set(capped["makespan"]["options"]) == {"1", "2"} and capped["memory"]["lanes_that_fit"] == 2
    assert capped["memory"]["source"].startswith("measured here") and capped["cost"]["usd"] is None
    forced = campaign_budget(tmp_path, "yolo9-t", waves, epochs=10, imgsz=640, disk_cache=True, gpus=2,
                             jobs_per_gpu=4, now=NOW)
    assert "4 lane(s) per GPU need" in forced["memory"]["problem"] and "REFUSED" in forced["text"]
    empty = campaign_budget(tmp_path, "yolo9-t", [("pilot", []), ("rest", [BIG])], epochs=10, imgsz=640,
                            disk_cache=True, gpus=1, now=NOW)
    assert empty["makespan"]["per_wave"][0]["makespan_s"] == 0 and empty["partitions"] == 1


def test_bench_plan_json_answers_four_questions(tmp_path: Path) -> None:
    r = bench_in_process("plan", "--model", "yolo9-t", "--suite", "rf100vl", "--pilot", "rf20vl", "--gpus", "8",
                         "--gpu-hour-price", "2", "--json", home=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # The pilot wave: rf20vl and the kill-and-resume check on its smallest dataset (images outside test).
    assert [w["partitions"] for w in doc["makespan"]["per_wave"]] == [21, 80]
    for key in ("makespan", "disk", "memory", "cost"):
        assert doc[key]["source"], key
    from bench_assets.rf100vl.datasets.catalog import catalog_entry, suite_members

    pilot = [catalog_entry(n) for n in suite_members("rf20vl")]
    check = min(pilot, key=lambda e: (e.num_images - e.test_images, e.name))
    assert doc["disk"]["parts"]["cache"]["bytes"] == (RF100VL_IMAGES + check.num_images) * 953_000
    assert doc["disk"]["runs"] == 101
    assert doc["cost"]["usd"] == pytest.approx(doc["cost"]["gpu_hours"] * 2, abs=0.02)
    big = max(pilot, key=lambda e: e.num_images)
    reps = bench_in_process("plan", "--model", "yolo9-t", "--suite", "rf100vl", "--pilot", "rf20vl", "--gpus", "8",
                            "--replicates", "3", "--replicate-datasets", big.name, "--json", home=tmp_path)
    more = json.loads(reps.stdout)
    assert [w["partitions"] for w in more["makespan"]["per_wave"]] == [23, 80] and more["disk"]["runs"] == 103
    assert more["disk"]["parts"]["checkpoints"]["bytes"] == pytest.approx(
        doc["disk"]["parts"]["checkpoints"]["bytes"] * 103 / 101, rel=1e-9)
    bad = bench_in_process("plan", "--model", "yolo9-t", "--suite", "mini", "--pilot", "BIG,nope", home=tmp_path)
    assert bad.returncode == 2 and "--pilot names datasets outside the campaign: BIG, nope" in bad.stderr


def test_campaign_refuses_lanes_the_measured_memory_cannot_hold(tmp_path: Path) -> None:
    """Two CPU lanes of a model measured at half this box's RAM: refused before anything is registered."""
    _, ram_mb = this_device("cpu")
    save_profile(tmp_path, new_profile("yolo9-t", 160, 4, "cpu", ram_mb / 2, "profile step", "t"))
    assert preflight_refusals(tmp_path, "yolo9-t", ["mini-tiny"], imgsz=160, disk_cache=False,
                              lane_devices=["cpu"]) == []
    r = bench_in_process("campaign", "--model", "yolo9-t", "--suite", "mini", "--recipe", "smoke", "--lanes", "2",
                         home=tmp_path)
    assert r.returncode == 2 and "refused before the first run" in r.stderr
    assert "2 lane(s) per box (RAM) need" in r.stderr and "at most 1 lane(s)" in r.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "models").exists()
    assert preflight_refusals(tmp_path, "yolo9-t", ["mini-tiny"], imgsz=160, disk_cache=False,
                              lane_devices=None) == []  # a cluster's boxes plan their own lanes


SMALL_DISK_SCRIPT = r"""
import contextlib, io, json, sys
from bench_assets.cli import main

def bench(home, *argv):
    import os
    os.environ.update(BENCH_HOME=home, DAGSTER_HOME=home + "/dagster")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}

small, big = sys.argv[1], sys.argv[2]
plan = ["plan", "--model", "yolo9-t", "--suite", "mini", "--recipe", "smoke", "--json"]
result = {"plan_small": bench(small, *plan), "plan_big": bench(big, *plan),
          "campaign_small": bench(small, "campaign", "--model", "yolo9-t", "--suite", "mini", "--recipe", "smoke")}
print("RESULT " + json.dumps(result))
"""


@pytest.mark.integration
def test_disk_refusal_on_a_small_filesystem(tmp_path: Path) -> None:
    """BENCH_HOME on a 1 GB tmpfs (in a private mount namespace): the mini campaign's checkpoints and margin do not
    fit, so `bench campaign` refuses before its first run, naming the numbers; on a 4 GB one the plan fits."""
    prefix = mount_namespace_prefix()
    if prefix is None:
        pytest.skip("no private mount namespace here (unshare missing or refused); the small-disk test needs one")
    small, big = tmp_path / "small", tmp_path / "big"
    small.mkdir()
    big.mkdir()
    shell = (f"mount -t tmpfs -o size=1g tmpfs {small} && mount -t tmpfs -o size=4g tmpfs {big} && "
             f"exec {sys.executable} -c \"$0\" {small} {big}")
    r = subprocess.run([*prefix, "sh", "-c", shell, SMALL_DISK_SCRIPT], cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, r.stdout[-2000:] + r.stderr[-4000:]
    out = json.loads(line[len("RESULT "):])
    small_plan, big_plan = (json.loads(out[k]["out"])["disk"] for k in ("plan_small", "plan_big"))
    assert small_plan["free_bytes"] <= 2**30 < big_plan["free_bytes"]
    assert not small_plan["ok"] and big_plan["ok"] and small_plan["needed_bytes"] == big_plan["needed_bytes"]
    camp = out["campaign_small"]
    assert camp["code"] == 2 and "refused before the first run" in camp["err"], camp
    need, free = small_plan["needed_bytes"] / 1e9, small_plan["free_bytes"] / 1e9
    assert f"the campaign needs {need:.2f} GB but {small} has {free:.2f} GB free" in camp["err"]


@pytest.mark.slow
def test_profile_step_measures_and_the_plan_uses_it(tmp_path: Path) -> None:
    """The real profile epoch (smoke recipe: yolo9-t at 160 px, batch 4, through the campaign's training child on
    this CPU): its peak resident memory is stored with this box's CPU, and `bench plan` then says "measured here"."""
    r = bench_in_process("models", "profile-memory", "yolo9-t", "--recipe", "smoke", home=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    stored = json.loads((tmp_path / "profiles" / "memory" / "yolo9-t__160px__cpu.json").read_text())
    assert stored["batch"] == 4 and stored["how"] == "profile step" and stored["device_name"] == this_device("cpu")[0]
    assert 200 < stored["peak_mb"] < 8000 and "peak resident memory" in r.stdout
    plan = bench_in_process("plan", "--model", "yolo9-t", "--suite", "mini", "--recipe", "smoke", "--json",
                            home=tmp_path)
    memory = json.loads(plan.stdout)["memory"]
    assert memory["per_lane_mb"] == stored["peak_mb"] and memory["source"].startswith("measured here (profile step")
    assert memory["lanes_that_fit"] == int(this_device("cpu")[1] * 0.9 // stored["peak_mb"])
