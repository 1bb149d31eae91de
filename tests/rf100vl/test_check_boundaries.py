"""The thresholds of the campaign checks, at their boundaries: the documented defaults (docs/report.md), a value
just over a threshold fails, just under passes, exactly on it passes (the checks use a strict `>`), and the
sign of a gap does not matter. Each test plants numbers in a clean synthetic campaign and rebuilds the warehouse,
as the loader would (issue 15: a default raised from 0.10 to 0.30 went unnoticed)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from bench_assets.rf100vl.defs.warehouse_check_assets import AdjacentSizeConfig, SelectionVsTestConfig
from bench_assets.rf100vl.report import warehouse_checks as cc
from bench_assets.rf100vl.scoring.eval_store import CONF, MAX_DET, NMS_IOU

# The campaign fixtures are in tests/rf100vl/conftest.py; the file helpers are the warehouse-check tests' own.
from tests.rf100vl.test_warehouse_checks import _current_score_file as _score_file  # noqa: E402
from tests.rf100vl.test_warehouse_checks import _current_stats_file as _stats_file  # noqa: E402
from tests.rf100vl.test_warehouse_checks import _datasets, _edit, _load  # noqa: E402


def _set_pair(home: Path, model: str, dataset: str, valid: float, test: float) -> None:
    _edit(_stats_file(home, model, dataset), lambda d: d.update(valid_mAP50_95=valid))
    _edit(_score_file(home, model, dataset), lambda d: d["metrics"].update(mAP50_95=test))


# ---------------------------------------------------------------------------------------------------------------
# Defaults


def test_documented_defaults_of_the_thresholds() -> None:
    """docs/report.md: selection_vs_test tolerance 0.10, adjacent_size_gap max_gap 0.10 (run config and the pure
    functions alike)."""
    assert SelectionVsTestConfig().tolerance == 0.10
    assert AdjacentSizeConfig().max_gap == 0.10
    assert inspect.signature(cc.selection_vs_test).parameters["tolerance"].default == 0.10
    assert inspect.signature(cc.adjacent_size_gap).parameters["max_gap"].default == 0.10
    assert cc.PARITY_TOL == 1e-6 and cc.MEAN_TOL == 1e-9
    assert (CONF, NMS_IOU, MAX_DET) == (0.001, 0.65, 500)


# ---------------------------------------------------------------------------------------------------------------
# selection_vs_test


def test_selection_vs_test_default_tolerance_boundary(home: Path) -> None:
    """|valid - test| 0.101 fails at the default tolerance, 0.099 passes; the sign of the gap does not matter."""
    ds = _datasets(home)
    _set_pair(home, "syna-s", ds[1], valid=0.50, test=0.399)   # valid above test by 0.101
    _set_pair(home, "syna-m", ds[2], valid=0.40, test=0.501)   # test above valid by 0.101
    _set_pair(home, "syna-t", ds[3], valid=0.50, test=0.401)   # 0.099: within
    _set_pair(home, "syna-c", ds[4], valid=0.401, test=0.50)   # 0.099 the other way: within
    finding = cc.selection_vs_test(_load(home))  # the default tolerance
    assert not finding.passed
    assert sorted((r["model"], r["dataset"]) for r in finding.rows) == sorted([("syna-s", ds[1]), ("syna-m", ds[2])])
    assert finding.facts["tolerance"] == 0.10
    assert "> 0.1:" in finding.description
    assert [r["gap"] for r in finding.rows] == pytest.approx([0.101, 0.101])


def test_selection_vs_test_just_under_the_default_passes(home: Path) -> None:
    ds = _datasets(home)
    _set_pair(home, "syna-s", ds[1], valid=0.50, test=0.401)
    _set_pair(home, "syna-m", ds[2], valid=0.401, test=0.50)
    finding = cc.selection_vs_test(_load(home))
    assert finding.passed, finding.description
    assert "within 0.1" in finding.description and finding.facts["judged"] == 24


def test_selection_vs_test_a_gap_equal_to_the_tolerance_passes(home: Path) -> None:
    """Exactly representable numbers: a gap of 0.125 at tolerance 0.125 is within (the comparison is strict)."""
    ds = _datasets(home)
    _set_pair(home, "syna-s", ds[0], valid=0.625, test=0.5)
    wh = _load(home)
    assert cc.selection_vs_test(wh, tolerance=0.125).passed
    over = cc.selection_vs_test(wh, tolerance=0.12)
    assert not over.passed and [(r["model"], r["dataset"]) for r in over.rows] == [("syna-s", ds[0])]


def test_selection_vs_test_skips_runs_without_a_valid_score(home: Path) -> None:
    """A run that never recorded a valid mAP (NULL) is not judged, whatever its test score."""
    ds = _datasets(home)
    _edit(_stats_file(home, "syna-t", ds[0]), lambda d: d.update(valid_mAP50_95=None))
    finding = cc.selection_vs_test(_load(home))
    assert finding.passed and finding.facts["judged"] == 23


# ---------------------------------------------------------------------------------------------------------------
# adjacent_size_gap


def _shift_model_to(home: Path, model: str, base: str, delta: float) -> None:
    """Every current score of `model` becomes `base`'s score on the same dataset plus `delta`."""
    for ds in _datasets(home):
        b = json.loads(_score_file(home, base, ds).read_text())["metrics"]["mAP50_95"]
        _edit(_score_file(home, model, ds), lambda d, b=b: d["metrics"].update(mAP50_95=b + delta))


@pytest.mark.parametrize(("delta", "passes"), [(0.101, False), (0.099, True), (-0.101, False), (-0.099, True)])
def test_adjacent_size_gap_default_boundary(home: Path, delta: float, passes: bool) -> None:
    """syna-c (largest size) placed `delta` away from syna-m on every shared dataset: beyond 0.10 either way
    fails at the default max_gap and names the pair; within it passes."""
    _shift_model_to(home, "syna-c", "syna-m", delta)
    finding = cc.adjacent_size_gap(_load(home))
    assert finding.facts["max_gap"] == 0.10
    assert finding.passed is passes, finding.description
    gaps = {(r["smaller"], r["larger"]): r["gap"] for r in finding.rows}
    assert gaps[("syna-m", "syna-c")] == pytest.approx(delta)
    if not passes:
        assert list(gaps) == [("syna-m", "syna-c")]  # only the broken pair: the others are ~0.03 apart
        assert finding.rows[0]["datasets"] == 6
        assert "more than 0.1 mAP50-95" in finding.description


def test_adjacent_size_gap_equal_to_max_gap_passes(home: Path) -> None:
    """Exactly representable: scores 0.25 and 0.5 everywhere give a gap of 0.25; max_gap 0.25 passes."""
    for ds in _datasets(home):
        for model in ("syna-t", "syna-s"):
            _edit(_score_file(home, model, ds), lambda d: d["metrics"].update(mAP50_95=0.25))
        for model in ("syna-m", "syna-c"):
            _edit(_score_file(home, model, ds), lambda d: d["metrics"].update(mAP50_95=0.5))
    wh = _load(home)
    assert cc.adjacent_size_gap(wh, max_gap=0.25).passed
    over = cc.adjacent_size_gap(wh, max_gap=0.24)
    assert not over.passed and [(r["smaller"], r["larger"]) for r in over.rows] == [("syna-s", "syna-m")]


# ---------------------------------------------------------------------------------------------------------------
# scoring_integrity: [0, 1] range, backend parity tolerance, submission mean tolerance


@pytest.mark.parametrize(("value", "passes"), [(1.0, True), (0.0, True), (1.0 + 1e-9, False), (-1e-9, False)])
def test_metric_range_is_closed_zero_to_one(home: Path, value: float, passes: bool) -> None:
    ds = _datasets(home)[0]
    _edit(_score_file(home, "syna-t", ds), lambda d: d["metrics"].update(AR100=value))
    finding = cc.scoring_integrity(_load(home))
    assert finding.passed is passes, finding.description
    if not passes:
        assert finding.rows == [{"model": "syna-t", "dataset": ds,
                                 "problems": ["a metric outside [0, 1] (a -1 that would enter a mean)"]}]


@pytest.mark.parametrize(("deviation", "passes"), [(2e-6, False), (5e-7, True), (1e-6, True)])
def test_backend_parity_tolerance_boundary(home: Path, deviation: float, passes: bool) -> None:
    """A max deviation just over PARITY_TOL (1e-6) fails even with no metric listed as differing; under or equal
    passes."""
    ds = _datasets(home)[1]
    _edit(_score_file(home, "syna-s", ds), lambda d: d["parity"].update(differing=[], max_abs_deviation=deviation))
    finding = cc.scoring_integrity(_load(home))
    assert finding.passed is passes, finding.description
    if not passes:
        assert [(r["model"], r["dataset"]) for r in finding.rows] == [("syna-s", ds)]
        assert "backends differ" in finding.rows[0]["problems"][0]


def test_backend_parity_a_differing_metric_alone_fails(home: Path) -> None:
    """A listed differing metric fails the check even when the recorded deviation is 0."""
    ds = _datasets(home)[2]
    _edit(_score_file(home, "syna-m", ds), lambda d: d["parity"].update(differing=["AR10"], max_abs_deviation=0.0))
    finding = cc.scoring_integrity(_load(home))
    assert not finding.passed
    assert [(r["model"], r["dataset"]) for r in finding.rows] == [("syna-m", ds)]
    assert "backends differ on AR10" in finding.rows[0]["problems"][0]


def _submit(home: Path, model: str) -> dict:
    from bench_assets.platform.fsutil import atomic_write_json
    from bench_assets.rf100vl.submission.build import build_submission, submission_path

    doc = build_submission(home, model, tree={"commit": "x", "dirty": False, "changed_files": []})
    atomic_write_json(submission_path(home, model), doc)
    return doc


@pytest.mark.parametrize(("offset", "passes"), [(1e-7, False), (-1e-7, False), (1e-11, True)])
def test_submission_headline_mean_tolerance_boundary(home: Path, offset: float, passes: bool) -> None:
    """A stated headline 1e-7 off the mean of its datasets fails (MEAN_TOL 1e-9); 1e-11 (rounding) passes."""
    from bench_assets.platform.fsutil import atomic_write_json
    from bench_assets.rf100vl.submission.build import submission_path

    doc = _submit(home, "syna-t")
    doc["accuracy"]["mAP_50_95"] += offset
    atomic_write_json(submission_path(home, "syna-t"), doc)
    finding = cc.scoring_integrity(_load(home))
    assert finding.passed is passes, finding.description
    if not passes:
        assert [(r["model"], r["dataset"]) for r in finding.rows] == [("syna-t", None)]
        assert "is not the mean" in finding.rows[0]["problems"][0]


# ---------------------------------------------------------------------------------------------------------------
# protocol_conformance: conf, NMS IoU and max_det at their boundaries


@pytest.mark.parametrize(("field", "value", "phrase"), [
    ("conf", 0.25, "conf 0.25 (must be 0.001)"),
    ("conf", 0.0011, "conf 0.0011 (must be 0.001)"),
    ("conf", 0.0, "conf 0.0 (must be 0.001)"),
    ("iou", 0.6500001, "NMS IoU 0.6500001 (must be 0.65)"),
    ("max_det", 501, "max_det 501 (must be 500)"),
    ("max_det", 499, "max_det 499 (must be 500)"),
])
def test_protocol_settings_off_by_a_little_fail(home: Path, field: str, value: float, phrase: str) -> None:
    ds = _datasets(home)[4]
    _edit(_score_file(home, "syna-c", ds), lambda d: d["prediction_inputs"].update({field: value}))
    finding = cc.protocol_conformance(_load(home))
    assert not finding.passed
    assert finding.rows == [{"model": "syna-c", "dataset": ds, "problems": [phrase]}]


def test_protocol_settings_exactly_the_protocol_pass(home: Path) -> None:
    """conf 0.001, IoU 0.65 and max_det 500 written back explicitly (as floats/ints a child would write) pass."""
    for ds in _datasets(home):
        _edit(_score_file(home, "syna-t", ds), lambda d: d["prediction_inputs"].update(
            conf=float("0.001"), iou=float("0.65"), max_det=500))
    finding = cc.protocol_conformance(_load(home))
    assert finding.passed, finding.description
