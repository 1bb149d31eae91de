"""Predictions are read as strictly as COCO writes them: numbers are JSON numbers, ids JSON integers, nothing
is converted; every refusal names the file, the item, the value and the fix; an empty list scores 0.0 with a
warning on every path (`bench score`, the score record and the `rf100vl/scores` asset, `bench rescore`).

The inputs are the files of `tests/corpus/predictions/` (one defect each against `valid.json`), scored with
the real pycocotools and faster-coco-eval.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench_assets.rf100vl.scoring import eval_store as evaluation
from bench_assets.rf100vl.scoring.coco import parity, score, score_both
from bench_assets.rf100vl.scoring.loading import load_json_any
from bench_assets.rf100vl.scoring.results import BACKENDS, PredictionsInvalid
from bench_assets.rf100vl.scoring.validation import validate_predictions
from tests.conftest import bench_in_process

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "corpus" / "predictions"
GT = CASES / "gt.json"
FIX_IMAGE_IDS = "fix: write image ids as JSON integers matching the ground truth's images[].id"
FIX_CATEGORY_IDS = "fix: write category ids as JSON integers from the ground truth's categories[].id [0, 1]"
FIX_BBOX = "fix: write bbox as [x, y, width, height], 4 finite JSON numbers in pixels"
FIX_SCORE = "fix: write the post-sigmoid confidence as a JSON number in [0, 1]"

# file -> the one problem it must be refused with (where, the value as the file spells it, what it is, the fix)
REFUSED = {
    "bbox_string.json": f'[2].bbox[0]: "500.0" is a string, not a JSON number; {FIX_BBOX}',
    "bbox_bool.json": f"[4].bbox[3]: true is a boolean, not a JSON number; {FIX_BBOX}",
    "bbox_nan.json": f"[6].bbox[2]: NaN is not finite; {FIX_BBOX}",
    "bbox_infinity.json": f"[7].bbox[1]: Infinity is not finite; {FIX_BBOX}",
    "image_id_string.json": f'[3].image_id: "2" is a string; {FIX_IMAGE_IDS}',
    "image_id_float.json": f"[3].image_id: 2.0 is a float; {FIX_IMAGE_IDS}",
    "image_id_fraction.json": f"[5].image_id: 2.5 is a float; {FIX_IMAGE_IDS}",
    "category_id_string.json": f'[1].category_id: "1" is a string; {FIX_CATEGORY_IDS}',
    "category_id_float.json": f"[8].category_id: 0.0 is a float; {FIX_CATEGORY_IDS}",
    "score_string.json": f'[0].score: "0.92" is a string, not a JSON number; {FIX_SCORE}',
    "score_bool.json": f"[9].score: false is a boolean, not a JSON number; {FIX_SCORE}",
}

# valid.json as stock pycocotools scores it, and so the fast backend (hotcoco), to the bit: the checks change no
# number. faster-coco-eval (the fast backend before hotcoco) gave the same but mAP_medium 0.201980198019802, one ulp
# above (its precision lacks pycocotools' eps where a category's first-ranked detection is a hit)
VALID_FAST_METRICS = {
    "mAP50_95": 0.4948019801980198, "mAP50": 0.7896039603960396, "mAP75": 0.4158415841584158,
    "mAP_small": 0.25, "mAP_medium": 0.20198019801980197, "mAP_large": 0.7252475247524752, "AR1": 0.45,
    "AR10": 0.5333333333333333, "AR100": 0.5333333333333333, "AR_small": 0.5, "AR_medium": 0.2, "AR_large": 0.725,
    "AR_max_det": 0.5333333333333333,
}


def _load(name: str) -> Any:
    return load_json_any(CASES / name)


def _bench_score(*args: str, in_process_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`bench score ...` as a user runs it (the installed entry point when there is one), or, given a home,
    through the same `main()` in this process (the same exit code, stdout and stderr)."""
    if in_process_home is not None:
        return bench_in_process("score", *args, home=in_process_home)
    exe = REPO / ".venv" / "bin" / "bench"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "bench_assets.cli"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([*cmd, "score", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------------------------
# Refusals: the pure validation, both backends, and `bench score`


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_wrongly_typed_value_is_refused_naming_item_value_and_fix(name: str) -> None:
    gt, dets = _load("gt.json"), _load(name)
    with pytest.raises(PredictionsInvalid) as e:
        validate_predictions(gt, dets, 500, source=name)
    assert e.value.problems == [REFUSED[name]]
    assert str(e.value) == f"{name}: invalid predictions: {REFUSED[name]}"  # one line
    for backend in BACKENDS:
        with pytest.raises(PredictionsInvalid, match="invalid predictions"):
            score(gt, dets, backend=backend)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_bench_score_refuses_with_one_clean_line(name: str, tmp_path: Path) -> None:
    """One refusal through the entry point a user runs, the others through the same `main()` in this process."""
    pred = CASES / name
    r = _bench_score(str(GT), str(pred), in_process_home=None if name == sorted(REFUSED)[0] else tmp_path)
    assert r.returncode == 1, r.stdout
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    assert r.stderr == f"bench score: {pred}: invalid predictions: {REFUSED[name]}\n"


def test_many_offenders_are_counted_with_the_first_examples() -> None:
    gt, dets = _load("gt.json"), _load("valid.json")
    for d in dets[:7]:
        d["image_id"] = str(d["image_id"])
    dets[9]["bbox"] = "0 0 0 0"
    with pytest.raises(PredictionsInvalid) as e:
        validate_predictions(gt, dets, 500, source="run3/preds.json")
    image_problem, bbox_problem = e.value.problems
    assert image_problem == (
        '[0].image_id: "1" is a string (7 of 10 detections in all; also [1].image_id: "1" is a string; '
        '[2].image_id: "1" is a string; [3].image_id: "2" is a string; [4].image_id: "2" is a string; +2 more); '
        f"{FIX_IMAGE_IDS}")
    assert bbox_problem == f'[9].bbox: "0 0 0 0" is a string, not an array of 4 numbers; {FIX_BBOX}'
    assert str(e.value).startswith("run3/preds.json: invalid predictions (2 problem(s)):\n  - [0].image_id")


def test_nan_and_infinity_tokens_are_read_then_refused(tmp_path: Path) -> None:
    """Python's json writes NaN/Infinity (not JSON); the reader accepts them so that validation names them."""
    gt = _load("gt.json")
    for token, shown in (("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e999", "Infinity")):
        path = tmp_path / "p.json"
        path.write_text(f'[{{"image_id": 1, "category_id": 0, "bbox": [1, 2, 3, {token}], "score": 0.5}}]')
        with pytest.raises(PredictionsInvalid) as e:
            validate_predictions(gt, load_json_any(path), 500)
        assert e.value.problems == [f"[0].bbox[3]: {shown} is not finite; {FIX_BBOX}"]


def test_unreadably_deep_json_is_a_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    r = _bench_score(str(GT), str(path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr == f"bench score: predictions {path}: JSON nested too deeply to read; a detections file is a " \
                       "flat array of objects\n"


# ---------------------------------------------------------------------------------------------
# A valid file scores as before


def test_valid_file_scores_as_before_without_warnings() -> None:
    gt, dets = _load("gt.json"), _load("valid.json")
    assert validate_predictions(gt, dets, 500) is dets
    fast = score(gt, dets, backend="fast")
    ref = score(gt, dets, backend="reference")
    assert fast.metrics == VALID_FAST_METRICS == ref.metrics
    assert parity(fast, ref).ok and parity(fast, score(gt, dets, backend="hotcoco")).ok  # arrays too, zero tolerance
    fce = score(gt, dets, backend="faster-coco-eval")
    assert parity(fce, ref, tol=1e-12).ok and fce.metrics == {**VALID_FAST_METRICS, "mAP_medium": 0.201980198019802}
    assert fast.warnings == [] and ref.warnings == []

    r = _bench_score(str(GT), str(CASES / "valid.json"), "--backend", "both")
    assert r.returncode == 0 and r.stderr == ""
    out = json.loads(r.stdout)
    assert out["metrics"] == VALID_FAST_METRICS and out["warnings"] == [] and out["parity"]["differing"] == []


# ---------------------------------------------------------------------------------------------
# An empty list: 0.0 with a warning, everywhere


def _empty_warning(source: str) -> str:
    return (f"{source}: the predictions list is empty, so every metric is 0.0 on the 3 image(s); if the model "
            "should have found objects, check the prediction step's log and its output file")


@pytest.mark.parametrize("backend", ["fast", "reference", "both"])
def test_bench_score_warns_on_an_empty_list(backend: str, tmp_path: Path) -> None:
    """`--backend both` through the entry point a user runs, the others through the same `main()` in this process."""
    pred = CASES / "empty.json"
    r = _bench_score(str(GT), str(pred), "--backend", backend, in_process_home=None if backend == "both" else tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr == f"bench score: warning: {_empty_warning(str(pred))}\n"
    out = json.loads(r.stdout)
    assert out["num_dets"] == 0 and all(v == 0.0 for v in out["metrics"].values())
    assert out["warnings"] == [_empty_warning(str(pred))]


def test_the_score_record_carries_the_warning() -> None:
    both = score_both(_load("gt.json"), [], source="eval/m/d/abc.predictions.json.gz")
    assert both.headline.warnings == both.reference.warnings == [_empty_warning("eval/m/d/abc.predictions.json.gz")]
    rec = evaluation.score_record("f" * 64, {"kind": "scores"}, "d", "m", "v1", both, {"kind": "predictions"})
    assert rec["warnings"] == [_empty_warning("eval/m/d/abc.predictions.json.gz")]
    assert rec["metrics"]["mAP50_95"] == 0.0 and rec["num_dets"] == 0
    ok = evaluation.score_record("f" * 64, {}, "d", "m", "v1", score_both(_load("gt.json"), _load("valid.json")), {})
    assert ok["warnings"] == [] and ok["metrics"] == VALID_FAST_METRICS


def _home_with_predictions(home: Path, dets: Any, ds: str = "toy", model: str = "m-t") -> Path:
    """The least a `rf100vl/scores` partition reads: a current dataset version with its test annotations,
    and current predictions with their meta. Returns the predictions file."""
    version = "v0001"
    vdir = home / "datasets" / ds / version
    (vdir / "test").mkdir(parents=True)
    shutil.copy(GT, vdir / "test" / "_annotations.coco.json")
    (vdir / "dataset.json").write_text(json.dumps({"dataset": ds}))
    (vdir / "lock.json").write_text(json.dumps({"dataset": ds, "version": version}))
    (home / "datasets" / ds / "CURRENT").write_text(version)
    inputs = {"kind": "predictions", "dataset": ds, "model": model, "dataset_version": version}
    fp = evaluation.fingerprint(inputs)
    pred = evaluation.predictions_path(home, model, ds, fp)
    pred.parent.mkdir(parents=True)
    pred.write_bytes(gzip.compress(json.dumps(dets).encode(), mtime=0))
    (pred.parent / f"{fp[:16]}.predictions.meta.json").write_text(json.dumps({"fingerprint": fp, "inputs": inputs}))
    evaluation.current_predictions_pointer(home, model, ds).write_text(fp)
    return pred


def test_scores_asset_records_logs_and_shows_the_warning(tmp_path: Path) -> None:
    import dagster as dg

    from bench_assets.rf100vl.defs.partitions import DATASET_PARTITIONS_NAME, MODEL_PARTITIONS_NAME
    from bench_assets.rf100vl.defs.score_assets import scores
    from resources.bench_home import BenchHome

    home = tmp_path / "home"
    pred = _home_with_predictions(home, [])
    warning = _empty_warning(str(pred))
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(DATASET_PARTITIONS_NAME, ["toy"])
        instance.add_dynamic_partitions(MODEL_PARTITIONS_NAME, ["m-t"])
        result = dg.materialize([scores], instance=instance, resources={"home": BenchHome(root=str(home))},
                                partition_key=dg.MultiPartitionKey({"dataset": "toy", "model": "m-t"}))
        assert result.success
        (mat,) = result.asset_materializations_for_node("rf100vl__scores")
        assert mat.metadata["warnings"].value == [warning]
        assert mat.metadata["mAP50_95"].value == 0.0 and mat.metadata["detections"].value == 0
        logged = [e for e in instance.all_logs(result.run_id) if e.level == logging.WARNING]
        assert [e.user_message for e in logged] == [warning]

    rec = evaluation.current_score(home, "m-t", "toy")
    assert rec is not None and rec["warnings"] == [warning] and rec["metrics"]["mAP50_95"] == 0.0


def test_rescore_warns_on_an_empty_list_and_reports_a_refused_file(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from bench_assets.rf100vl.defs.score_assets import compute_scores
    from bench_assets.rf100vl.scoring.rescore import rescore_all

    home = tmp_path / "home"
    pred = _home_with_predictions(home, [])
    meta = evaluation.current_predictions_meta(home, "m-t", "toy")
    assert meta is not None
    compute_scores(home, "m-t", "toy", meta)
    assert rescore_all(home) == 0
    err = capsys.readouterr().err
    assert err == f"bench rescore: warning: m-t/toy: {_empty_warning(str(pred))}\n"

    pred.write_bytes(gzip.compress((CASES / "image_id_string.json").read_bytes()))  # the file changed on disk
    assert rescore_all(home) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"bench rescore: m-t/toy: cannot rescore: {pred}: invalid predictions: "
                      f"{REFUSED['image_id_string.json']}")
    assert err[1] == "bench rescore: 1 partition(s) could not be rescored: m-t/toy"


# ---------------------------------------------------------------------------------------------
# More than max_det detections on an image: scored as pycocotools scores it; in a campaign, a reported fact


def _over_max_det() -> list[dict[str, Any]]:
    """valid.json (3 detections on image 1, 2 of them category 0) plus 520 of category 0 on image 1: 523 on the
    image, 522 in (image 1, category 0), 22 beyond max_det 500."""
    extra = [{"image_id": 1, "category_id": 0, "bbox": [float(k % 40) * 10, 400.0, 8.0, 8.0], "score": 0.001}
             for k in range(520)]
    return [*_load("valid.json"), *extra]


def test_scores_asset_scores_predictions_over_max_det_and_reports_them(tmp_path: Path) -> None:
    import dagster as dg

    from bench_assets.rf100vl.defs.partitions import DATASET_PARTITIONS_NAME, MODEL_PARTITIONS_NAME
    from bench_assets.rf100vl.defs.score_assets import scores
    from resources.bench_home import BenchHome

    home = tmp_path / "home"
    dets = _over_max_det()
    pred = _home_with_predictions(home, dets)
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(DATASET_PARTITIONS_NAME, ["toy"])
        instance.add_dynamic_partitions(MODEL_PARTITIONS_NAME, ["m-t"])
        result = dg.materialize([scores], instance=instance, resources={"home": BenchHome(root=str(home))},
                                partition_key=dg.MultiPartitionKey({"dataset": "toy", "model": "m-t"}))
        assert result.success  # not refused
        (mat,) = result.asset_materializations_for_node("rf100vl__scores")
        assert mat.metadata["images_over_max_det"].value == 1 and mat.metadata["detections_cut"].value == 22
        assert mat.metadata["engine"].value.startswith("hotcoco ")
        errors = [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.ERROR]
        assert any("our predictions carry more than 500 detections on 1 image(s)" in m for m in errors)

    rec = evaluation.current_score(home, "m-t", "toy")
    assert rec is not None
    assert rec["max_det_cut"] == {"max_det": 500, "images_over": 1, "detections_cut": 22,
                                  "images": [{"image_id": 1, "detections": 523, "cut": 22}]}
    assert len(rec["warnings"]) == 1 and rec["warnings"][0].startswith(f"{pred}: 1 image(s) carry more than max_det")
    assert rec["parity"]["differing"] == [] and rec["parity"]["arrays"]["precision"]["differing"] == 0
    assert rec["parity"]["engines"]["reference"].startswith("pycocotools ")
    assert rec["metrics"] == score(_load("gt.json"), dets, backend="reference").metrics
