"""Training, predictions and scores on a real instance with real LibreYOLO children (tiny CPU runs).

One module-scoped BENCH_HOME: mini-tiny trained 2 epochs at 128 px with a test recipe, then the
resume, fallback, timeout and bad-input paths on top of it.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from bench_assets.report.jobs import warehouse_job
from bench_assets.rf100vl.defs.jobs import campaign_job, dataset_job, eval_job, rescore_job, train_job
from bench_assets.rf100vl.training.recipes import RECIPES_DIR
from tests.conftest import BENCH, REPO

pytestmark = pytest.mark.slow
CHILD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _recipe(tmp: Path, name: str, **protocol) -> Path:  # noqa: ANN003
    doc = json.loads((RECIPES_DIR / "yolo9.json").read_text())
    del doc["pretrained"]  # these campaigns train from scratch (no pretrained weights are stored in the test homes)
    doc["protocol"].update({"epochs": 2, "precision": "fp32", "cuda_graph": False, "cache": False, **protocol})
    doc["sizes"]["t"] = {"imgsz": 128, "lr0": 0.01, "physical_batch": 8, "fallback_physical_batch": 4}
    doc["train"] = {"workers": 0, "no_aug_epochs": 1}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    h = tmp_path_factory.mktemp("campaign") / "bench"
    os.environ.update({"BENCH_HOME": str(h), "DAGSTER_HOME": str(h / "dagster"), **CHILD_ENV})
    return h


@pytest.fixture(scope="module")
def inst(home: Path):  # noqa: ANN201
    from bench_assets.cli.location import run_job
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.datasets.sources import SourceSpec, register
    from bench_assets.rf100vl.defs.partitions import register_model_partition, register_partitions

    instance = open_instance(home)
    for name in ("mini-tiny", "mini-shapes"):
        register(home / "sources", name, SourceSpec(kind="mini", suites=["mini"]))
        register_partitions(instance, [name])
        assert run_job(instance, dataset_job, partition_key=name).success
    register_model_partition(instance, "yolo9-t")
    yield instance
    instance.dispose()


def _training_children() -> list[str]:
    """Training children of this test's BENCH_HOME (their spec path lies under it)."""
    home = os.environ["BENCH_HOME"]
    out = subprocess.run(["pgrep", "-af", "bench_assets.rf100vl.training.child.train"], capture_output=True, text=True)
    return [line.split()[0] for line in out.stdout.splitlines() if home in line]


def _key(ds: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"dataset": ds, "model": "yolo9-t"})


def _run(inst, job: str, ds: str, **checkpoint_cfg):  # noqa: ANN001, ANN003, ANN202
    from bench_assets.cli.location import run_job

    cfg = {"ops": {"rf100vl__checkpoint": {"config": checkpoint_cfg}}} if checkpoint_cfg else None
    return run_job(inst, job, partition_key=_key(ds), run_config=cfg)


def _meta(inst, asset: str, ds: str) -> dict:  # noqa: ANN001
    recs = inst.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(["rf100vl", asset]),
                                                             asset_partitions=[str(_key(ds))]), limit=1).records
    return {k: v.value for k, v in recs[0].asset_materialization.metadata.items()}


def test_train_predict_score_then_reuse(inst, home: Path, tmp_path_factory) -> None:  # noqa: ANN001
    recipe = _recipe(tmp_path_factory.mktemp("r"), "tiny")
    from bench_assets.rf100vl.training.models import register_model

    register_model(home, "yolo9-t", str(recipe), datasets=["mini-tiny"])  # coverage is judged against this list
    out = _run(inst, campaign_job, "mini-tiny")
    assert out.success, out.errors
    ck = _meta(inst, "checkpoint", "mini-tiny")
    assert ck["epochs"] == 2 and ck["reused_finished_run"] is False and ck["run_variant"] == "standard"
    assert ck["recipe_conformant"] is False and "NON_CONFORMANT_RECIPE" in ck
    assert ck["curves"].startswith("![loss and valid mAP per epoch](data:image/png;base64,")
    pred = _meta(inst, "predictions", "mini-tiny")
    assert pred["protocol"] == {"split": "test", "conf": 0.001, "iou": 0.65, "max_det": 500}
    sc = _meta(inst, "scores", "mini-tiny")
    assert sc["headline_backend"] == "fast" and sc["parity"]["differing"] == []
    assert 0.0 <= sc["mAP50_95"] <= 1.0
    # A score traced to its files, as paths: its own, the predictions it scored, the ground truth; the predictions
    # name the checkpoint they came from, the checkpoint its run, recipe and dataset version.
    assert json.loads(Path(sc["score_file"]).read_text())["fingerprint"] == sc["fingerprint"]
    assert sc["predictions_file"] == pred["path"] and Path(sc["ground_truth_file"]).is_file()
    assert pred["checkpoint"] == ck["best_checkpoint"] and Path(ck["run_dir"], "stats.json").is_file()
    assert Path(ck["last_checkpoint"]).is_file() and Path(ck["recipe_file"]) == recipe
    assert ck["dataset_version"].startswith("mini-tiny@")

    run_dir = next((home / "runs" / "yolo9-t" / "mini-tiny").glob("*/stats.json")).parent
    stats = json.loads((run_dir / "stats.json").read_text())
    for field in ("recipe", "run_signature", "best_epoch", "valid_mAP50", "valid_mAP50_95", "wall_seconds",
                  "resumed", "batch", "data"):
        assert field in stats
    dets = json.loads(gzip.decompress(Path(pred["path"]).read_bytes()))
    assert all(round(v, 2) == v for d in dets[:200] for v in d["bbox"])

    again = _run(inst, campaign_job, "mini-tiny")
    assert again.success, again.errors
    assert _meta(inst, "checkpoint", "mini-tiny")["reused_finished_run"] is True
    assert _meta(inst, "scores", "mini-tiny")["recomputed"] is False

    from bench_assets.cli.location import run_job

    assert run_job(inst, warehouse_job).success
    con = duckdb.connect(str(home / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM runs WHERE dataset='mini-tiny'").fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM epochs WHERE dataset='mini-tiny'").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM scores WHERE is_current").fetchone() == (1,)


def test_oom_restarts_with_fallback_batch_and_keeps_effective_batch(inst, home: Path) -> None:  # noqa: ANN001
    out = _run(inst, train_job, "mini-shapes", fault_oom_at_step=1, fault_oom_only_above_batch=4)
    assert out.success, out.errors
    ck = _meta(inst, "checkpoint", "mini-shapes")
    assert ck["variants_tried"] == ["standard", "oom_fallback"] and ck["run_variant"] == "oom_fallback"
    assert ck["batch"] == {"physical": 4, "effective": 16, "accumulation": 4}
    statuses = [json.loads(p.read_text())["state"]
                for p in (home / "runs" / "yolo9-t" / "mini-shapes").glob("*/bench_status.json")]
    assert sorted(statuses) == ["done", "oom"]  # the OOM run's files stay, under its own signature


def test_kill_mid_training_then_resume(inst, home: Path, tmp_path_factory) -> None:  # noqa: ANN001
    recipe = _recipe(tmp_path_factory.mktemp("r"), "resume", epochs=3)
    from bench_assets.rf100vl.training.models import register_model

    register_model(home, "yolo9-t", str(recipe))
    cfg = json.dumps({"ops": {"rf100vl__checkpoint": {"config": {"fault_sleep_per_step_s": 0.6}}}})
    env = {**os.environ}
    # One partition's run in a process of its own (as a run-pool worker holds it), to be killed mid-training.
    script = ("import json, sys; import dagster as dg; from bench_assets.cli.location import run_job; "
              "from bench_assets.platform.instance import open_instance; from bench_assets.rf100vl.defs.jobs import "
              "train_job; from resources.paths import bench_home_path; "
              "run_job(open_instance(bench_home_path()), train_job, run_config=json.loads(sys.argv[1]), "
              "partition_key=dg.MultiPartitionKey({'dataset': 'mini-tiny', 'model': 'yolo9-t'}))")
    proc = subprocess.Popen([sys.executable, "-c", script, cfg], cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    last = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list((home / "runs" / "yolo9-t" / "mini-tiny").glob("*/weights/last.pt"))
        fresh = [p for p in found if (p.parent.parent / "signature.json").exists()
                 and json.loads((p.parent.parent / "signature.json").read_text())["epochs"] == 3]
        if fresh:
            last = fresh[0]
            break
        time.sleep(0.5)
    assert last is not None, "no last.pt appeared"
    os.killpg(proc.pid, signal.SIGKILL)  # bench and its Dagster step; the child must die with them
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _training_children():
        time.sleep(0.2)
    assert _training_children() == [], "the training child outlived the killed step (it would keep a lane busy)"
    out = _run(inst, train_job, "mini-tiny")
    assert out.success, out.errors
    stats = json.loads((last.parent.parent / "stats.json").read_text())
    assert stats["resumed"] is True and stats["resumed_from_epoch"] >= 2 and stats["epochs_done"] == 3


def test_timeout_kills_child_tree_and_fails_only_that_partition(inst, home: Path) -> None:  # noqa: ANN001
    out = _run(inst, train_job, "mini-shapes", force=True, timeout_minutes=0.05,
               fault_sleep_per_step_s=2.0)
    assert not out.success and any("timed out" in e for e in out.errors), out.errors
    time.sleep(1)
    assert _training_children() == []
    assert _run(inst, campaign_job, "mini-tiny").success  # the other partition is untouched


def test_bad_recipe_fails_its_partition_with_the_field(inst, home: Path, tmp_path_factory) -> None:  # noqa: ANN001
    """The model's registered recipe file was edited into a bad one after registration (registration itself
    refuses a bad recipe): training that partition fails, naming the field. The registration is put back after."""
    from bench_assets.rf100vl.training.models import models_dir, register_model

    entry = models_dir(home) / "yolo9-t.json"
    registered = entry.read_bytes() if entry.exists() else None  # earlier tests' small recipe, later tests use it
    bad = tmp_path_factory.mktemp("r") / "bad.json"
    doc = json.loads((RECIPES_DIR / "yolo9.json").read_text())
    bad.write_text(json.dumps(doc))
    register_model(home, "yolo9-t", recipe=str(bad), datasets=["mini-tiny"])
    try:
        doc["protocol"]["epochz"] = 3
        bad.write_text(json.dumps(doc))
        out = _run(inst, train_job, "mini-tiny")
        assert not out.success and any("protocol.epochz" in e for e in out.errors), out.errors
    finally:
        if registered is None:
            entry.unlink()
        else:
            entry.write_bytes(registered)


def test_corrupt_predictions_fail_scoring_clearly(inst, home: Path) -> None:  # noqa: ANN001
    from bench_assets.rf100vl.scoring.eval_store import current_predictions_meta, predictions_path

    meta = current_predictions_meta(home, "yolo9-t", "mini-tiny")
    path = predictions_path(home, "yolo9-t", "mini-tiny", meta["fingerprint"])
    original = path.read_bytes()
    dets = json.loads(gzip.decompress(original)) or [{"image_id": 0, "category_id": 0, "bbox": [1, 1, 2, 2],
                                                      "score": 0.5}]
    dets[0]["image_id"] = 987654
    dets[-1]["score"] = float("nan")
    path.write_bytes(gzip.compress(json.dumps(dets).encode()))
    try:
        from bench_assets.cli.location import run_job

        out = run_job(inst, rescore_job, partition_key=_key("mini-tiny"))
        assert not out.success
        text = " ".join(out.errors)
        assert "987654" in text or "unknown image" in text, text
    finally:
        path.write_bytes(original)


def test_corrupt_checkpoint_fails_predictions_then_retrains(inst, home: Path) -> None:  # noqa: ANN001
    from bench_assets.rf100vl.training.run_store import current_run

    run_dir, stats = current_run(home, "yolo9-t", "mini-tiny")
    best = Path(stats["best_checkpoint"])
    best.write_bytes(best.read_bytes()[:1000])  # a truncated checkpoint
    out = _run(inst, eval_job, "mini-tiny")
    assert not out.success and any("does not match its recorded SHA-256" in e for e in out.errors), out.errors
    again = _run(inst, train_job, "mini-tiny")
    assert again.success, again.errors
    assert any(p.name.startswith(run_dir.name + ".corrupt-") for p in run_dir.parent.iterdir())
    assert _run(inst, eval_job, "mini-tiny").success


def test_rescore_reports_drift(inst, home: Path) -> None:  # noqa: ANN001
    from bench_assets.cli.location import run_job
    from bench_assets.rf100vl.scoring.rescore import rescore_all

    assert run_job(inst, campaign_job, partition_key=_key("mini-tiny")).success
    assert rescore_all(home, model="yolo9-t") == 0
    score_file = sorted((home / "eval" / "yolo9-t" / "mini-tiny").glob("*.score.json"),
                        key=lambda p: p.stat().st_mtime)[-1]
    rec = json.loads(score_file.read_text())
    rec["metrics"]["mAP50"] = (rec["metrics"]["mAP50"] or 0.0) + 0.01  # a recorded number that is wrong
    score_file.write_text(json.dumps(rec))
    assert rescore_all(home, model="yolo9-t") == 1


def test_bench_train_cli_runs_partitions_longest_first(inst, home: Path, tmp_path_factory) -> None:  # noqa: ANN001
    recipe = _recipe(tmp_path_factory.mktemp("r"), "cli", epochs=1)
    # Scores left by earlier tests came from another recipe: after retraining they would (rightly) fail
    # protocol_conformance ("recipe is not the registered one"); this test is about training only.
    shutil.rmtree(home / "eval" / "yolo9-t", ignore_errors=True)
    r = subprocess.run([*BENCH, "train", "--model", "yolo9-t", "--datasets", "mini-tiny,mini-shapes", "--recipe",
                        str(recipe), "--lanes", "2"], cwd=REPO, env=dict(os.environ), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "2 partitions of yolo9-t, longest first, on 2 lane(s)" in r.stdout
    rows = [line.split()[0] for line in r.stdout.splitlines() if "|yolo9-t" in line and " ok " in line]
    assert sorted(rows) == ["mini-shapes|yolo9-t", "mini-tiny|yolo9-t"]
    priorities = {run.tags.get("dagster/priority") for run in inst.get_runs(limit=5)
                  if run.job_name == train_job.name}
    assert {"48", "20"} <= priorities  # train-image counts order the queue
