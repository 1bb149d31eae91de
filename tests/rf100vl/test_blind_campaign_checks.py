"""One planted defect per branch of the campaign checks that tests/rf100vl/test_warehouse_checks.py leaves
unproven (issue 15): each branch alone, in a clean synthetic campaign, must fail its check and name the row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.report import warehouse_checks as cc
from bench_assets.rf100vl.submission.build import build_submission, submission_path
from tests.synthetic_campaign import METRICS

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

MODELS = ("syna-t", "syna-s", "syna-m", "syna-c")


# The campaign fixtures are in tests/rf100vl/conftest.py; the file helpers are the warehouse-check tests' own.
from tests.rf100vl.test_warehouse_checks import _current_score_file as _score_file  # noqa: E402
from tests.rf100vl.test_warehouse_checks import _current_stats_file as _stats_file  # noqa: E402
from tests.rf100vl.test_warehouse_checks import _datasets, _edit, _load  # noqa: E402


def _problems(finding: cc.Finding) -> dict[tuple[str, str | None], list[str]]:
    return {(r["model"], r["dataset"]): r["problems"] for r in finding.rows}


def _submit(home: Path, model: str) -> dict:
    doc = build_submission(home, model, tree={"commit": "x", "dirty": False, "changed_files": []})
    atomic_write_json(submission_path(home, model), doc)
    return doc


# ---------------------------------------------------------------------------------------------------------------
# protocol_conformance


def test_conf_off_protocol_fails_the_protocol_check(home: Path) -> None:
    """Predictions made at conf 0.25 (a deployment threshold) instead of 0.001 lose low-score detections and
    understate AP: the score must be named."""
    ds = _datasets(home)[3]
    _edit(_score_file(home, "syna-m", ds), lambda d: d["prediction_inputs"].update(conf=0.25))
    finding = cc.protocol_conformance(_load(home))
    assert not finding.passed
    assert _problems(finding) == {("syna-m", ds): ["conf 0.25 (must be 0.001)"]}
    assert f"syna-m/{ds}: conf 0.25 (must be 0.001)" in finding.description


def test_trained_on_one_dataset_version_scored_on_another(home: Path) -> None:
    """The score is on the locked version but its checkpoint was trained on an older one: only the run's
    version differs, so only this branch can see it."""
    ds = _datasets(home)[1]
    _edit(_stats_file(home, "syna-s", ds), lambda d: d.update(dataset_version="0ld0ld0ld0ld"))
    finding = cc.protocol_conformance(_load(home))
    assert not finding.passed
    version = (home / "datasets" / ds / "CURRENT").read_text().strip()
    assert _problems(finding) == {("syna-s", ds): [f"trained on 0ld0ld0ld0ld but scored on {version}"]}


def test_a_dataset_without_a_current_lock(home: Path) -> None:
    """The dataset's CURRENT pointer is gone: no version is locked, every model's score of it is named."""
    ds = _datasets(home)[5]
    (home / "datasets" / ds / "CURRENT").unlink()
    finding = cc.protocol_conformance(_load(home))
    assert not finding.passed
    assert _problems(finding) == {(m, ds): ["dataset has no current version lock"] for m in MODELS}


def test_a_score_of_a_model_that_is_not_registered(home: Path) -> None:
    (home / "models" / "syna-c.json").unlink()
    finding = cc.protocol_conformance(_load(home))
    assert not finding.passed
    assert _problems(finding) == {("syna-c", d): ["model not registered (no BENCH_HOME/models entry)"]
                                  for d in _datasets(home)}


def test_only_current_scores_are_judged(home: Path) -> None:
    """A superseded score (not CURRENT.score) that broke the protocol is history, not a finding."""
    ds = _datasets(home)[0]
    src = _score_file(home, "syna-t", ds)
    old = json.loads(src.read_text())
    old.update(fingerprint="f" * 64, split="valid")
    old["prediction_inputs"].update(conf=0.25)
    (src.parent / ("f" * 16 + ".score.json")).write_text(json.dumps(old))
    finding = cc.protocol_conformance(_load(home))
    assert finding.passed, finding.description
    assert finding.facts["scores_judged"] == 24


# ---------------------------------------------------------------------------------------------------------------
# scoring_integrity


def test_an_undefined_headline_is_flagged(home: Path) -> None:
    """A NULL (undefined) mAP50-95 is outside no range, so only the 'headline undefined' branch sees it."""
    ds = _datasets(home)[2]
    _edit(_score_file(home, "syna-s", ds), lambda d: d["metrics"].update(mAP50_95=None))
    finding = cc.scoring_integrity(_load(home))
    assert not finding.passed
    assert _problems(finding) == {("syna-s", ds): ["headline mAP50-95 undefined"]}
    assert f"syna-s/{ds}: headline mAP50-95 undefined" in finding.description


def test_every_metric_column_is_range_checked(home: Path) -> None:
    """Each of the 13 stored metrics set to 1.5 on its own score: every one of them is named."""
    ds = _datasets(home)
    slots = [(m, d) for m in MODELS for d in ds]
    planted = dict(zip(slots, METRICS, strict=False))
    for (model, dataset), metric in planted.items():
        _edit(_score_file(home, model, dataset), lambda d, metric=metric: d["metrics"].update({metric: 1.5}))
    finding = cc.scoring_integrity(_load(home))
    assert not finding.passed
    assert set(_problems(finding)) == set(planted)
    assert all(p == ["a metric outside [0, 1] (a -1 that would enter a mean)"] for p in _problems(finding).values())


def test_a_stale_submission_lists_the_offending_row(home: Path) -> None:
    """Submission built, then a dataset rescored: the submission no longer says what the current score says."""
    ds = _datasets(home)[4]
    doc = _submit(home, "syna-t")
    assert cc.scoring_integrity(_load(home)).passed
    submitted = next(e["mAP_50_95"] for e in doc["rf100vl"]["datasets"] if e["dataset"] == ds)
    _edit(_score_file(home, "syna-t", ds), lambda d: d["metrics"].update(mAP50_95=round(submitted + 0.02, 6)))
    finding = cc.scoring_integrity(_load(home))
    assert not finding.passed
    assert list(_problems(finding)) == [("syna-t", ds)]
    (problem,) = _problems(finding)[("syna-t", ds)]
    assert problem == (f"submission says {submitted}, the current score is {round(submitted + 0.02, 6)} "
                       "(stale submission: rebuild rf100vl/submission)")
    assert "stale submission" in finding.description


def test_an_imported_submission_is_never_stale(home: Path) -> None:
    """Only our own submissions are compared with our current scores (an imported entry of another lab that
    happens to share a model name with no score of ours is not a drift)."""
    from bench_assets.rf100vl.submission.build import imported_dir

    doc = _submit(home, "syna-t")
    submission_path(home, "syna-t").unlink()
    doc["model"]["name"] = "syna-t"
    atomic_write_json(imported_dir(home) / "syna-t.json", doc)
    ds = _datasets(home)[4]
    _edit(_score_file(home, "syna-t", ds), lambda d: d["metrics"].update(mAP50_95=0.01))
    finding = cc.scoring_integrity(_load(home))
    assert finding.passed, finding.description


def test_a_submission_without_a_headline_is_flagged(home: Path) -> None:
    _submit(home, "syna-s")
    path = submission_path(home, "syna-s")
    _edit(path, lambda d: d["accuracy"].update(mAP_50_95=None))
    finding = cc.scoring_integrity(_load(home))
    assert not finding.passed
    assert list(_problems(finding)) == [("syna-s", None)]
    assert "submission headline None is not the mean" in _problems(finding)[("syna-s", None)][0]


# ---------------------------------------------------------------------------------------------------------------
# coverage


def test_a_score_on_the_valid_split_does_not_cover_the_dataset(home: Path) -> None:
    ds = _datasets(home)[1]
    _edit(_score_file(home, "syna-m", ds), lambda d: d.update(split="valid"))
    finding = cc.coverage(_load(home))
    assert not finding.passed and finding.severity == "ERROR"
    row = next(r for r in finding.rows if r["model"] == "syna-m")
    assert (row["scored"], row["expected"], row["missing"]) == (5, 6, [ds])


def test_a_model_whose_suite_has_no_datasets(home: Path) -> None:
    """A registered model with an empty dataset list: 0/0 is not complete coverage."""
    entry = json.loads((home / "models" / "syna-c.json").read_text())
    entry.update(suite=None, datasets=[])
    (home / "models" / "syna-c.json").write_text(json.dumps(entry))
    finding = cc.coverage(_load(home))
    assert not finding.passed and finding.severity == "ERROR"
    assert [r["model"] for r in finding.rows] == ["syna-c"]
    assert "the suite has no datasets" in finding.description


def test_no_model_registered_passes(home: Path) -> None:
    for p in (home / "models").glob("*.json"):
        p.unlink()
    finding = cc.coverage(_load(home))
    assert finding.passed and finding.description == "no model registered yet"


# ---------------------------------------------------------------------------------------------------------------
# provenance


def test_a_score_whose_run_is_gone_has_no_recorded_files(home: Path) -> None:
    """The run directory of a score was removed: its recipe and checkpoint are no longer recorded at all."""
    ds = _datasets(home)[0]
    shutil.rmtree(_stats_file(home, "syna-t", ds).parent)
    finding = cc.provenance(_load(home))
    assert not finding.passed
    problems = _problems(finding)
    assert list(problems) == [("syna-t", ds)]
    assert problems[("syna-t", ds)] == ["recipe: no file recorded", "checkpoint: no file recorded"]


def test_a_moved_recipe_file_is_named(home: Path) -> None:
    """The recipe file moved after the load (the loader itself refuses a registry entry with no recipe)."""
    wh = _load(home)
    recipe = home / "recipes" / "syna.json"
    recipe.rename(recipe.with_suffix(".moved"))
    finding = cc.provenance(wh)
    assert not finding.passed
    assert len(finding.rows) == 24
    assert all(p == [f"recipe {recipe} is missing"] for p in _problems(finding).values())


def test_the_hash_cache_sees_an_edit_that_changes_the_size(home: Path) -> None:
    """A cached hash is reused only for the same size and mtime: an edited checkpoint is re-hashed."""
    ds = _datasets(home)[2]
    wh = _load(home)
    cache = home / "cache" / "sha.json"
    assert cc.provenance(wh, cache).passed
    best = Path(json.loads(_stats_file(home, "syna-m", ds).read_text())["best_checkpoint"])
    best.write_bytes(best.read_bytes() + b"x")
    finding = cc.provenance(wh, cache)
    assert not finding.passed and list(_problems(finding)) == [("syna-m", ds)]
