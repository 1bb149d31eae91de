"""Each campaign check passes on a clean synthetic campaign and fails, naming the offending rows, when the
defect it exists for is planted in the artifacts (then the warehouse is rebuilt, as the loader would)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench_assets.platform.warehouse import rebuild_warehouse
from bench_assets.report.jobs import warehouse_job
from bench_assets.rf100vl.report import warehouse_checks as cc
from tests.tables import ALL_TABLES

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

CHECKS = (cc.selection_vs_test, cc.adjacent_size_gap, cc.coverage, cc.protocol_conformance, cc.scoring_integrity,
          cc.provenance)


def _load(home: Path) -> Path:
    wh = home / "warehouse.duckdb"
    rebuild_warehouse(home, wh, ALL_TABLES)
    return wh


def _current_score_file(home: Path, model: str, dataset: str) -> Path:
    edir = home / "eval" / model / dataset
    return edir / f"{(edir / 'CURRENT.score').read_text().strip()[:16]}.score.json"


def _current_stats_file(home: Path, model: str, dataset: str) -> Path:
    rdir = home / "runs" / model / dataset
    return rdir / (rdir / "CURRENT").read_text().strip() / "stats.json"


def _edit(path: Path, fn) -> None:  # noqa: ANN001
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _datasets(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "datasets").iterdir())


def test_every_check_passes_on_a_clean_campaign(home: Path) -> None:
    wh = _load(home)
    for check in CHECKS:
        finding = check(wh)
        assert finding.passed, (check.__name__, finding.description)
    assert "syna-t 6/6" in cc.coverage(wh).description


def test_selection_vs_test_catches_the_batchnorm_gap(home: Path) -> None:
    ds = _datasets(home)[2]
    _edit(_current_stats_file(home, "syna-s", ds), lambda d: d.update(valid_mAP50_95=0.566))
    _edit(_current_score_file(home, "syna-s", ds), lambda d: d["metrics"].update(mAP50_95=0.162))
    finding = cc.selection_vs_test(_load(home))
    assert not finding.passed
    assert [(r["model"], r["dataset"]) for r in finding.rows] == [("syna-s", ds)]
    assert finding.rows[0]["valid_mAP50_95"] == pytest.approx(0.566)
    assert finding.rows[0]["test_mAP50_95"] == pytest.approx(0.162)
    assert "0.5660" in finding.description and "0.1620" in finding.description
    assert cc.selection_vs_test(home / "warehouse.duckdb", tolerance=0.5).passed  # the tolerance is honoured


def test_adjacent_size_gap_catches_a_16_point_gap(home: Path) -> None:
    for ds in _datasets(home):
        _edit(_current_score_file(home, "syna-m", ds), lambda d: d["metrics"].update(
            mAP50_95=round(d["metrics"]["mAP50_95"] - 0.16, 6)))
        _edit(_current_stats_file(home, "syna-m", ds), lambda d: d.update(
            valid_mAP50_95=round(d["valid_mAP50_95"] - 0.16, 6)))  # keep selection-vs-test out of it
    finding = cc.adjacent_size_gap(_load(home))
    assert not finding.passed
    pairs = {(r["smaller"], r["larger"]) for r in finding.rows}
    assert pairs == {("syna-s", "syna-m"), ("syna-m", "syna-c")}  # both neighbours of the broken size
    assert all(r["datasets"] == 6 for r in finding.rows)
    assert cc.selection_vs_test(home / "warehouse.duckdb").passed


def test_coverage_lists_missing_and_failed_datasets(home: Path) -> None:
    a, b = _datasets(home)[:2]
    _current_score_file(home, "syna-c", a).unlink()  # predictions saved, never scored
    (home / "eval" / "syna-c" / a / "CURRENT.score").unlink()
    shutil.rmtree(home / "eval" / "syna-c" / b)
    wh = _load(home)
    finding = cc.coverage(wh, failed={("syna-c", b)})
    assert not finding.passed
    row = next(r for r in finding.rows if r["model"] == "syna-c")
    assert (row["scored"], row["expected"]) == (4, 6)
    assert row["missing"] == [a] and row["failed"] == [b]
    assert f"syna-c (syna-c:datasets): 4/6, failed {b}, missing {a}" in finding.description


def test_coverage_only_warns_while_the_gaps_are_in_flight(home: Path) -> None:
    a = _datasets(home)[0]
    _current_score_file(home, "syna-t", a).unlink()
    (home / "eval" / "syna-t" / a / "CURRENT.score").unlink()
    wh = _load(home)
    running = cc.coverage(wh, in_flight={("syna-t", a)})
    assert not running.passed and running.severity == "WARN"
    assert running.description.startswith("campaign still running") and "running or queued 1" in running.description
    stalled = cc.coverage(wh)
    assert not stalled.passed and stalled.severity == "ERROR" and f"missing {a}" in stalled.description


def test_protocol_conformance_catches_split_thresholds_recipe_and_version(home: Path) -> None:
    ds = _datasets(home)
    _edit(_current_score_file(home, "syna-t", ds[0]), lambda d: d.update(split="valid"))
    _edit(_current_score_file(home, "syna-t", ds[1]), lambda d: d["prediction_inputs"].update(iou=0.7, max_det=100))
    _edit(_current_score_file(home, "syna-s", ds[2]), lambda d: d["prediction_inputs"].update(recipe_sha256="ab" * 32))
    _edit(_current_score_file(home, "syna-m", ds[3]), lambda d: d.update(dataset_version="000000000000"))
    finding = cc.protocol_conformance(_load(home))
    assert not finding.passed
    problems = {(r["model"], r["dataset"]): " | ".join(r["problems"]) for r in finding.rows}
    # mixed recipe hashes are the model's problem: every dataset of syna-s is named
    assert set(problems) == {("syna-t", ds[0]), ("syna-t", ds[1]), ("syna-m", ds[3])} | {("syna-s", d) for d in ds}
    assert "split valid" in problems[("syna-t", ds[0])]
    assert "NMS IoU 0.7" in problems[("syna-t", ds[1])] and "max_det 100" in problems[("syna-t", ds[1])]
    assert all("2 different recipe hashes" in problems[("syna-s", d)] for d in ds)
    assert [d for d in ds if "is not the registered" in problems[("syna-s", d)]] == [ds[2]]
    assert "the lock says" in problems[("syna-m", ds[3])]


def test_protocol_conformance_catches_a_non_conformant_run_of_a_conformant_model(home: Path) -> None:
    ds = _datasets(home)[0]
    _edit(_current_stats_file(home, "syna-c", ds), lambda d: d["recipe"].update(conformant=False))
    finding = cc.protocol_conformance(_load(home))
    assert not finding.passed
    assert finding.rows == [{"model": "syna-c", "dataset": ds, "problems": ["run used a non-conformant recipe"]}]


def test_scoring_integrity_catches_minus_one_headline_bucket_and_parity(home: Path) -> None:
    ds = _datasets(home)
    _edit(_current_score_file(home, "syna-t", ds[0]), lambda d: d["metrics"].update(mAP50_95=-1.0))
    _edit(_current_score_file(home, "syna-s", ds[1]), lambda d: d["metrics"].update(mAP_large=-1.0))
    _edit(_current_score_file(home, "syna-m", ds[2]), lambda d: d["parity"].update(
        differing=["mAP75"], max_abs_deviation=0.01))
    finding = cc.scoring_integrity(_load(home))
    assert not finding.passed
    problems = {(r["model"], r["dataset"]): " | ".join(r["problems"]) for r in finding.rows}
    assert set(problems) == {("syna-t", ds[0]), ("syna-s", ds[1]), ("syna-m", ds[2])}
    assert "outside [0, 1]" in problems[("syna-t", ds[0])]
    assert "outside [0, 1]" in problems[("syna-s", ds[1])]
    assert "backends differ on mAP75" in problems[("syna-m", ds[2])]


def test_scoring_integrity_catches_a_submission_headline_that_is_not_its_mean(home: Path) -> None:
    from bench_assets.platform.fsutil import atomic_write_json
    from bench_assets.rf100vl.submission.build import build_submission, submission_path

    doc = build_submission(home, "syna-t", tree={"commit": "x", "dirty": False, "changed_files": []})
    atomic_write_json(submission_path(home, "syna-t"), doc)
    assert cc.scoring_integrity(_load(home)).passed
    doc["accuracy"]["mAP_50_95"] = (doc["accuracy"]["mAP_50_95"] * 6 - 1) / 6  # one -1 averaged in
    atomic_write_json(submission_path(home, "syna-t"), doc)
    finding = cc.scoring_integrity(_load(home))
    assert not finding.passed
    assert "is not the mean" in finding.description and finding.rows[0]["model"] == "syna-t"


def test_provenance_catches_missing_and_altered_artifacts(home: Path) -> None:
    ds = _datasets(home)
    wh = _load(home)
    cache = home / "cache" / "sha.json"
    assert cc.provenance(wh, cache).passed
    stats = json.loads(_current_stats_file(home, "syna-t", ds[0]).read_text())
    Path(stats["best_checkpoint"]).write_bytes(b"retrained")  # same path, different weights
    pred = sorted((home / "eval" / "syna-s" / ds[1]).glob("*.predictions.json.gz"))[0]
    pred.unlink()
    recipe = home / "recipes" / "synb.json"
    if not recipe.exists():
        recipe = home / "recipes" / "syna.json"
    recipe.write_text(recipe.read_text() + "\n")
    finding = cc.provenance(wh, cache)
    assert not finding.passed
    by = {(r["model"], r["dataset"]): " | ".join(r["problems"]) for r in finding.rows}
    assert "checkpoint" in by[("syna-t", ds[0])] and "the score recorded" in by[("syna-t", ds[0])]
    assert f"predictions {pred} is missing" in by[("syna-s", ds[1])]
    assert all("recipe" in v for v in by.values())  # every score of the family's recipe
    assert len(by) == 4 * 6


def test_checks_run_through_dagster_and_fail_the_cli_outcome(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_assets.cli.location import run_job
    from bench_assets.platform.instance import open_instance

    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    instance = open_instance(home)
    try:
        ok = run_job(instance, warehouse_job)
        assert ok.success, ok.errors
        ds = _datasets(home)[0]
        _edit(_current_stats_file(home, "syna-t", ds), lambda d: d.update(valid_mAP50_95=0.99))
        bad = run_job(instance, warehouse_job)
        assert not bad.success
        assert any(e.startswith("check selection_vs_test failed on report/warehouse") and ds in e for e in bad.errors)
    finally:
        instance.dispose()


def test_readers_never_meet_the_loaders_lock(home: Path) -> None:
    """Checks read while another process rebuilds the warehouse over and over: no read fails on a lock."""
    import subprocess
    import sys

    wh = _load(home)
    loop = ("import sys; from pathlib import Path; from bench_assets.platform.warehouse import rebuild_warehouse\n"
            "from tests.tables import ALL_TABLES\n"
            "for i in range(int(sys.argv[3])): rebuild_warehouse(Path(sys.argv[1]), Path(sys.argv[2]), ALL_TABLES)\n"
            "print('loads done')")
    loader = subprocess.Popen([sys.executable, "-c", loop, str(home), str(wh), "15"], stdout=subprocess.PIPE,
                              text=True)
    reads = 0
    while loader.poll() is None:
        assert cc.selection_vs_test(wh).passed
        assert cc.coverage(wh).passed
        reads += 2
    assert loader.returncode == 0 and loader.stdout.read().strip() == "loads done"
    assert reads >= 10  # the reads really overlapped the loads
