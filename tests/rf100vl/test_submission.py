"""va.submission.v1: built from artifacts with computed validity; imported files are re-checked."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean

import pytest

from bench_assets.platform.duckdb_files import attached
from bench_assets.platform.warehouse import query, rebuild_warehouse
from bench_assets.rf100vl.submission.build import (
    MEAN_CHECKED,
    SubmissionError,
    build_submission,
    import_submission,
    submission_path,
)
from bench_assets.rf100vl.submission.schema import schema_problems
from tests.conftest import bench_in_process
from tests.synthetic_campaign import make_campaign

# Only the CLI test (`bench` verbs and dbt) is `integration`; the others build and check files from a synthetic
# campaign in seconds, so `make test-fast` and the mutation selection (setup.cfg) run them.

CLEAN_TREE = {"commit": "0" * 40, "dirty": False, "changed_files": []}


@pytest.fixture(scope="module")
def full_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("full") / "bench"
    make_campaign(home, n_models=1, n_datasets=100, seed=3)
    return home


def test_a_full_conformant_campaign_is_a_valid_submission(full_campaign: Path) -> None:
    doc = build_submission(full_campaign, "syna-t", tree=CLEAN_TREE, now="2026-11-30T00:00:00Z")
    rf = doc["rf100vl"]
    assert doc["schema_version"] == "va.submission.v1" and schema_problems(doc) == []
    assert rf["valid_submission"] is True and rf["invalid_reasons"] == []
    assert len(rf["datasets"]) == 100 and rf["protocol"]["expected_datasets"] == 100
    assert doc["accuracy"]["mAP_50_95"] == pytest.approx(fmean(d["mAP_50_95"] for d in rf["datasets"]))
    assert set(rf["domain_means"]) == {"Aerial", "Document", "Flora and Fauna", "Industrial", "Medical", "Other",
                                       "Sports"}
    assert sum(d["datasets"] for d in rf["domain_means"].values()) == 100
    # -1 buckets (stored as None) never enter a mean: mAP_large is the mean over defined values only
    large = [json.loads(p.read_text())["metrics"]["mAP_large"]
             for p in full_campaign.glob("eval/syna-t/*/*.score.json")]
    assert None in large
    assert doc["accuracy"]["mAP_large"] == pytest.approx(fmean(v for v in large if v is not None))
    again = build_submission(full_campaign, "syna-t", tree=CLEAN_TREE, now="2026-11-30T00:00:00Z")
    assert again == doc  # a pure function of the artifacts


def test_invalid_reasons_are_computed(full_campaign: Path, tmp_path: Path) -> None:
    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=6, seed=3)
    stats = sorted(home.glob("runs/syna-t/*/*/stats.json"))[0]
    doc = json.loads(stats.read_text())
    doc["recipe"].update(conformant=False, nonconformities=["protocol.epochs is 20, the protocol requires 100"])
    stats.write_text(json.dumps(doc))
    reasons = build_submission(home, "syna-t", tree={"commit": "abc", "dirty": True,
                                                     "changed_files": [" M x.py"]})["rf100vl"]["invalid_reasons"]
    assert "6 datasets scored, the leaderboard requires exactly 100" in reasons
    assert any(r.startswith("non-conformant recipe: protocol.epochs is 20") for r in reasons)
    assert any(r.startswith("dirty source tree") and "x.py" in r for r in reasons)
    with pytest.raises(SubmissionError, match="not registered"):
        build_submission(home, "synz-t")


def _published_file(full_campaign: Path, tmp_path: Path, name: str = "other-lab-s") -> tuple[Path, dict]:
    doc = build_submission(full_campaign, "syna-t", tree=CLEAN_TREE)
    doc["model"]["name"] = name
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path, doc


def test_import_recomputes_means_and_refuses_a_summary_that_does_not_follow(full_campaign: Path,
                                                                           tmp_path: Path) -> None:
    home = tmp_path / "bench"
    path, doc = _published_file(full_campaign, tmp_path)
    out, sub, reasons = import_submission(home, path)
    assert out == home / "submissions" / "imported" / "other-lab-s.json" and reasons == []

    doc["accuracy"]["mAP_50_95"] += 0.01
    path.write_text(json.dumps(doc))
    with pytest.raises(SubmissionError, match=r"accuracy.mAP_50_95 states .* but the mean over its 100 datasets"):
        import_submission(home, path)
    doc["accuracy"]["mAP_50_95"] -= 0.01
    doc["rf100vl"]["domain_means"]["Medical"]["mAP_50_95"] += 0.02
    path.write_text(json.dumps(doc))
    with pytest.raises(SubmissionError, match=r"domain_means.Medical.mAP_50_95 states"):
        import_submission(home, path)
    doc["rf100vl"]["domain_means"]["Medical"]["mAP_50_95"] -= 0.02
    del doc["rf100vl"]["datasets"][3]["mAP_50_95"]
    path.write_text(json.dumps(doc))
    with pytest.raises(SubmissionError, match=r"rf100vl.datasets.3: 'mAP_50_95' is a required property"):
        import_submission(home, path)


def _restate(doc: dict) -> None:
    """Make the summary fields follow from the per-dataset entries again (after a test edits the entries)."""
    entries = doc["rf100vl"]["datasets"]
    for key in MEAN_CHECKED:
        doc["accuracy"][key] = fmean(d[key] for d in entries)
    doc["dataset"]["num_images"] = sum(d["num_images"] for d in entries)
    doc["dataset"]["num_datasets"] = len(entries)


def test_an_imported_claim_of_validity_is_rechecked(full_campaign: Path, tmp_path: Path) -> None:
    path, doc = _published_file(full_campaign, tmp_path)
    doc["rf100vl"]["datasets"] = doc["rf100vl"]["datasets"][:20]
    doc["rf100vl"]["domain_means"] = None
    _restate(doc)
    doc["rf100vl"]["protocol"]["nms_iou"] = 0.7
    path.write_text(json.dumps(doc))
    _, _, reasons = import_submission(tmp_path / "bench", path)
    assert reasons[0] == "the file claims valid_submission=true, but:"
    assert "20 datasets scored, the leaderboard requires exactly 100" in reasons
    assert "NMS IoU 0.7, the protocol requires 0.65" in reasons


@pytest.mark.integration
def test_cli_imports_a_submission_into_the_warehouse(full_campaign: Path, tmp_path: Path) -> None:
    home = tmp_path / "bench"
    make_campaign(home, n_models=2, n_datasets=6, seed=5)
    path, doc = _published_file(full_campaign, tmp_path)
    res = bench_in_process("submission", "import", str(path), home=home)
    assert res.returncode == 0, res.stderr
    assert "imported other-lab-s: 100 datasets" in res.stdout
    rows = query(home / "warehouse.duckdb", "SELECT model, origin, valid_submission, datasets_scored, "
                                                 "mAP50_95 FROM submissions")
    assert rows == [{"model": "other-lab-s", "origin": "imported", "valid_submission": True, "datasets_scored": 100,
                     "mAP50_95": pytest.approx(doc["accuracy"]["mAP_50_95"])}]
    n = query(home / "warehouse.duckdb", "SELECT count(*) AS n FROM submission_datasets")[0]["n"]
    assert n == 100

    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "va.submission.v1"')
    res = bench_in_process("submission", "import", str(bad), home=home)
    assert res.returncode == 1 and f"{bad}: not JSON" in res.stderr

    res = bench_in_process("submission", "build", "--model", "syna-s", home=home)
    assert res.returncode == 0, res.stderr
    assert "valid_submission=False" in res.stdout and "exactly 100" in res.stdout
    assert submission_path(home, "syna-s").exists()
    rows = query(home / "warehouse.duckdb", "SELECT model, origin FROM submissions ORDER BY origin, model")
    assert rows == [{"model": "other-lab-s", "origin": "imported"}, {"model": "syna-s", "origin": "ours"}]


def test_warehouse_rebuilds_identically_from_artifacts(full_campaign: Path, tmp_path: Path) -> None:
    from tests.tables import ALL_TABLES, TABLE_SCHEMAS

    home = tmp_path / "bench"
    make_campaign(home, n_models=3, n_datasets=5, seed=7)
    path, _ = _published_file(full_campaign, tmp_path)
    import_submission(home, path)
    wh = home / "warehouse.duckdb"

    def dump() -> dict[str, list]:
        rebuild_warehouse(home, wh, ALL_TABLES)
        with attached(wh) as con:
            return {t: con.execute(f"SELECT * FROM {t}").fetchall() for t in TABLE_SCHEMAS}

    first = dump()
    wh.unlink()
    assert dump() == first
    assert all(first[t] for t in ("runs", "epochs", "scores", "submissions", "submission_datasets", "models"))
