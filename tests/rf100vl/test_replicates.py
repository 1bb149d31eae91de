"""Replicates for real: `bench campaign --replicates 2` on a private copy of the suite's one-box campaign trains
yolo9-t@seed1 on mini-tiny as its own partition (the seed in its key, its run signature and its training), leaves
the model's own runs alone, and the report shows the spread of the two seeds; the model keeps one leaderboard row.

One training (the replicate: 3 epochs of the smoke recipe on mini-tiny) and one `bench report` (its dbt build)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.platform.warehouse import query
from bench_assets.report.dbt_build import report_db_path
from bench_assets.rf100vl.training.runplan import parse_model, replicate_key
from tests.conftest import bench_in_process
from tests.shared_cache import private_copy
from tests.shared_training import CLUSTER_DATASETS, one_box_campaign

pytestmark = pytest.mark.slow


def test_replicate_key_grammar() -> None:
    assert replicate_key("yolo9-t", 2) == "yolo9-t@seed2"
    key = parse_model("yolo9-t@seed2")
    assert (key.family, key.size, key.seed, key.base, key.key) == ("yolo9", "t", 2, "yolo9-t", "yolo9-t@seed2")
    assert parse_model("yolo9-t").seed is None
    for bad in ("yolo9-t@seed0", "yolo9-t@seed", "yolo9-t@1", "yolo9-t@seed1@seed2"):
        with pytest.raises(ValueError, match="family-size@seedN"):
            parse_model(bad)
    with pytest.raises(ValueError, match="already a replicate"):
        replicate_key("yolo9-t@seed1", 2)


def _stats(home: Path, model: str, dataset: str) -> dict:
    part = home / "runs" / model / dataset
    return json.loads((part / (part / "CURRENT").read_text().strip() / "stats.json").read_text())


def _result(home: Path, model: str, dataset: str) -> dict:
    part = home / "runs" / model / dataset
    return json.loads((part / (part / "CURRENT").read_text().strip() / "result.json").read_text())


def test_replicates_train_as_their_own_partitions_and_the_report_shows_the_spread(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    folder = private_copy(one_box_campaign(tmp_path_factory), tmp_path / "campaign")
    home = folder / "home"
    before = {d: _stats(home, "yolo9-t", d)["run_signature"] for d in CLUSTER_DATASETS}
    r = bench_in_process("campaign", "--model", "yolo9-t", "--datasets", ",".join(CLUSTER_DATASETS), "--recipe",
                         str(folder / "recipe.json"), "--replicates", "2", "--replicate-datasets", "mini-tiny",
                         home=home)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "3 partitions of yolo9-t (2 seeds)" in r.stdout
    # The model's own runs were found finished and kept; the replicate trained with seed 1 under its own key.
    assert {d: _stats(home, "yolo9-t", d)["run_signature"] for d in CLUSTER_DATASETS} == before
    rep = _stats(home, "yolo9-t@seed1", "mini-tiny")
    own = _stats(home, "yolo9-t", "mini-tiny")
    assert (rep["seed"], rep["base_model"], rep["signature_fields"]["seed"]) == (1, "yolo9-t", 1)
    assert (own["seed"], "seed" in own["signature_fields"]) == (0, False)  # the model's signature is unchanged
    assert rep["init_weights"] == own["init_weights"]  # the same starting point: only the seed differs
    losses = [_result(home, m, "mini-tiny")["epochs"][0]["losses"] for m in ("yolo9-t", "yolo9-t@seed1")]
    assert losses[0] != losses[1]  # the seed reached the training
    assert not (home / "runs" / "yolo9-t@seed1" / "mini-large").exists()
    assert not (home / "submissions" / "yolo9-t@seed1.json").exists()
    warehouse = home / "warehouse.duckdb"
    rows = query(warehouse, "SELECT model, base_model, seed FROM scores WHERE is_current AND split = 'test' "
                            "AND dataset = 'mini-tiny' ORDER BY seed")
    assert [(x["model"], x["base_model"], x["seed"]) for x in rows] == [("yolo9-t", "yolo9-t", 0),
                                                                       ("yolo9-t@seed1", "yolo9-t", 1)]

    report = bench_in_process("report", home=home)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    db = report_db_path(home)
    spread = query(db, "SELECT * FROM rf100vl_seed_spread")
    scores = {x["seed"]: x for x in query(warehouse, "SELECT seed, mAP50_95 FROM scores WHERE is_current AND "
                                                     "split = 'test' AND dataset = 'mini-tiny'")}
    assert [(x["model"], x["dataset"], x["seeds"]) for x in spread] == [("yolo9-t", "mini-tiny", 2)]
    assert spread[0]["range_mAP50_95"] == pytest.approx(abs(scores[0]["mAP50_95"] - scores[1]["mAP50_95"]))
    assert [x["model"] for x in query(db, "SELECT model FROM rf100vl_leaderboard WHERE origin = 'ours'")] == [
        "yolo9-t"]
    page = next((home / "report").rglob("report.md")).read_text()
    assert "## Seed spread" in page and "| yolo9-t | mini-tiny | 2 |" in page


def _plant(home: Path, model: str, dataset: str, delta: float) -> float:
    """Shift the current test score file of (model, dataset) by `delta` (the planted defect); the new value."""
    from bench_assets.rf100vl.scoring.eval_store import current_score_pointer, score_path

    fp = current_score_pointer(home, model, dataset).read_text().strip()
    path = score_path(home, model, dataset, fp)
    rec = json.loads(path.read_text())
    rec["metrics"]["mAP50_95"] += delta
    path.write_text(json.dumps(rec))
    return rec["metrics"]["mAP50_95"]


def test_a_pilot_wave_its_kill_and_resume_check_and_the_gate(tmp_path_factory: pytest.TempPathFactory,
                                                             tmp_path: Path) -> None:
    """Pilot mini-tiny, then mini-large. The platform adds yolo9-t@resume on mini-tiny: killed after epoch 1 of 3
    and resumed in a fresh process, it scores what the uninterrupted run scored, so the gate is green and the rest
    follows. With the check's score planted 2 points off, the gate is red, the rest is not started (exit 3);
    --override-gate runs it, and the registration and the pilot_gate check say so."""
    folder = private_copy(one_box_campaign(tmp_path_factory), tmp_path / "campaign")
    home = folder / "home"
    argv = ("campaign", "--model", "yolo9-t", "--datasets", ",".join(CLUSTER_DATASETS), "--recipe",
            str(folder / "recipe.json"))
    r = bench_in_process(*argv, "--pilot", "mini-tiny", home=home)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "the pilot wave first (2)" in r.stdout
    check = _stats(home, "yolo9-t@resume", "mini-tiny")
    assert check["resumed"] is True and check["resumed_from_epoch"] == 2 and check["signature_fields"]["resume_check"]
    assert check["seed"] == _stats(home, "yolo9-t", "mini-tiny")["seed"] == 0
    for cond in ("complete", "resume", "sizes", "selection"):
        assert f"pilot gate {cond:9s} green" in r.stdout, r.stdout
    assert "|diff| 0.0000 within the noise" in r.stdout  # the resume reproduces the uninterrupted run bit for bit
    gate_line = r.stdout.index("pilot gate green")
    assert "mini-large|yolo9-t" in r.stdout[gate_line:]  # the rest ran after the gate

    planted = _plant(home, "yolo9-t@resume", "mini-tiny", 0.02)
    red = bench_in_process(*argv, home=home)  # the pilot is remembered from the registration
    assert red.returncode == 3, red.stdout[-3000:] + red.stderr[-3000:]
    assert "pilot gate resume    RED" in red.stdout and f"killed and resumed {planted:.4f}" in red.stdout
    assert "pilot gate red (resume): the rest of the campaign is not started" in red.stderr
    assert "mini-large|yolo9-t" not in red.stdout[red.stdout.index("pilot gate"):]

    over = bench_in_process(*argv, "--override-gate", home=home)
    assert over.returncode == 0, over.stdout[-3000:] + over.stderr[-3000:]
    assert "OVERRIDDEN (--override-gate)" in over.stderr and "mini-large|yolo9-t" in over.stdout
    entry = json.loads((home / "models" / "yolo9-t.json").read_text())
    assert entry["pilot"] == ["mini-tiny"] and [o["red"] for o in entry["gate_overrides"]] == [["resume"]]
    gate = query(home / "warehouse.duckdb", "SELECT pilot, gate_override FROM models WHERE model = 'yolo9-t'")[0]
    assert list(gate["pilot"]) == ["mini-tiny"] and json.loads(gate["gate_override"])["red"] == ["resume"]
    assert "pilot_gate" in over.stderr and "OVERRIDDEN" in over.stderr  # the check's warning, said by the load
