"""Reasons a built submission is not valid that no other test plants (issue 15): predictions at an off-protocol
conf, a dataset scored on another version than its lock (stale), an undefined per-dataset headline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.rf100vl.submission.build import SubmissionError, build_submission, check_imported
from tests.synthetic_campaign import make_campaign

TREE = {"commit": "0" * 40, "dirty": False, "changed_files": []}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=3, seed=2)
    return home


def _datasets(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "datasets").iterdir())


def _score_file(home: Path, dataset: str) -> Path:
    edir = home / "eval" / "syna-t" / dataset
    return edir / f"{(edir / 'CURRENT.score').read_text().strip()[:16]}.score.json"


def _edit(path: Path, fn) -> None:  # noqa: ANN001
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _reasons(home: Path) -> list[str]:
    doc = build_submission(home, "syna-t", tree=TREE, now="2026-11-30T00:00:00Z")
    assert doc["rf100vl"]["valid_submission"] is False
    return doc["rf100vl"]["invalid_reasons"]


def _baseline(home: Path) -> list[str]:
    """The reasons of the clean 3-dataset campaign (only its coverage), which the planted ones add to."""
    reasons = _reasons(home)
    assert reasons == ["3 datasets scored, the leaderboard requires exactly 100"]
    return reasons


def test_conf_off_protocol_makes_the_submission_invalid(home: Path) -> None:
    base = _baseline(home)
    _edit(_score_file(home, _datasets(home)[1]), lambda d: d["prediction_inputs"].update(conf=0.25))
    reasons = _reasons(home)
    assert [r for r in reasons if r not in base] == ["conf 0.25, the protocol requires 0.001"]


def test_conf_on_every_dataset_off_protocol_is_the_config_conf(home: Path) -> None:
    for ds in _datasets(home):
        _edit(_score_file(home, ds), lambda d: d["prediction_inputs"].update(conf=0.25))
    doc = build_submission(home, "syna-t", tree=TREE, now="2026-11-30T00:00:00Z")
    assert doc["config"]["conf"] == 0.25
    assert "conf 0.25, the protocol requires 0.001" in doc["rf100vl"]["invalid_reasons"]


def test_a_stale_dataset_version_is_named_in_the_reasons(home: Path) -> None:
    """The dataset was re-imported since it was scored: a newer version is CURRENT, the score is of the old one
    (still on disk: versions are never overwritten)."""
    import shutil

    base = _baseline(home)
    ds = _datasets(home)[2]
    old = (home / "datasets" / ds / "CURRENT").read_text().strip()
    shutil.copytree(home / "datasets" / ds / old, home / "datasets" / ds / "0new0new0new")
    _edit(home / "datasets" / ds / "0new0new0new" / "lock.json", lambda d: d.update(version="0new0new0new"))
    (home / "datasets" / ds / "CURRENT").write_text("0new0new0new")
    reasons = _reasons(home)
    assert [r for r in reasons if r not in base] == [
        f"dataset versions differ from the stored lock: {ds} (scored {old}, lock says 0new0new0new)"]


def test_a_dataset_without_a_lock_is_named(home: Path) -> None:
    base = _baseline(home)
    ds = _datasets(home)[0]
    (home / "datasets" / ds / "CURRENT").unlink()
    reasons = _reasons(home)
    assert f"{ds}: no version lock stored for the dataset" in [r for r in reasons if r not in base]


def test_an_undefined_dataset_headline_is_flagged(home: Path) -> None:
    """A dataset whose mAP50-95 is undefined (None) silently leaves the headline mean (it averages the others):
    the submission must say so and not be valid."""
    base = _baseline(home)
    ds = _datasets(home)[1]
    _edit(_score_file(home, ds), lambda d: d["metrics"].update(mAP50_95=None))
    doc = build_submission(home, "syna-t", tree=TREE, now="2026-11-30T00:00:00Z")
    new = [r for r in doc["rf100vl"]["invalid_reasons"] if r not in base]
    assert new == ["not in the published shape: rf100vl.datasets.1.mAP_50_95: null where the published shape wants "
                   "a number"]
    assert doc["rf100vl"]["valid_submission"] is False


def test_an_imported_file_without_a_headline_is_refused(home: Path) -> None:
    doc = build_submission(home, "syna-t", tree=TREE, now="2026-11-30T00:00:00Z")
    doc["model"]["name"] = "other-lab-t"
    check_imported(json.loads(json.dumps(doc)), "other.json")  # well-formed as built
    doc["accuracy"]["mAP_50_95"] = None
    with pytest.raises(SubmissionError, match=r"accuracy.mAP_50_95: null where the published shape wants a number"):
        check_imported(doc, "other.json")


def test_an_imported_entry_off_protocol_conf_is_not_a_valid_leaderboard_entry() -> None:
    """A published file (the shape the leaderboard publishes) at conf 0.25 scored fewer detections than the
    protocol's 0.001 and is not comparable: its reasons say so; at the protocol's conf no such reason."""
    published = json.loads((Path(__file__).parent / "published" / "yolov9-t.published.json").read_text())
    _, reasons = check_imported(json.loads(json.dumps(published)), "yolov9-t.published.json")
    assert not [r for r in reasons if "conf" in r], reasons
    published["config"]["conf"] = 0.25
    _, reasons = check_imported(published, "yolov9-t.published.json")
    assert any("conf=0.25" in r for r in reasons), reasons
