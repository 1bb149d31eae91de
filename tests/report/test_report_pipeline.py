"""The whole report through Dagster and the CLI: synthetic campaign + an imported submission -> warehouse ->
dbt marts -> report.md / index.html with plots, attached to `report/rendered`; failing checks listed first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.platform.warehouse import query
from bench_assets.rf100vl.submission.build import build_submission, import_submission
from tests.conftest import run_bench
from tests.synthetic_campaign import make_campaign

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A va.submission.v1 file of a model that is not ours (a published leaderboard entry)."""
    root = tmp_path_factory.mktemp("published")
    make_campaign(root / "bench", n_models=1, n_datasets=6, seed=9)
    doc = build_submission(root / "bench", "syna-t", tree={"commit": "x", "dirty": False, "changed_files": []})
    doc["model"]["name"] = "otherlab-detr-s"
    path = root / "otherlab-detr-s.json"
    path.write_text(json.dumps(doc))
    return path


def test_bench_report_builds_every_mart_with_the_imported_model(bench_home: Path, published: Path) -> None:
    make_campaign(bench_home, n_models=4, n_datasets=6, seed=9)  # same 6 datasets as the imported entry
    import_submission(bench_home, published)
    res = run_bench("report", home=bench_home)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"report: {bench_home / 'report' / 'index.html'}" in res.stdout

    report = bench_home / "report.duckdb"
    for mart in ("rf100vl_leaderboard", "rf100vl_domain_scores", "rf100vl_dataset_scores", "rf100vl_weakest_datasets",
                 "rf100vl_published_comparison"):
        models = {r["model"] for r in query(report, f"SELECT DISTINCT model FROM {mart}")}
        assert "otherlab-detr-s" in models, mart
        assert {"syna-t", "syna-s", "syna-m", "syna-c"} <= models, mart
    pairs = query(report, "SELECT model_a, model_b FROM rf100vl_model_comparison")
    assert any("otherlab-detr-s" in (p["model_a"], p["model_b"]) for p in pairs)
    assert len(pairs) == 10  # every unordered pair of 5 models
    lead = {r["model"]: r for r in query(report, "SELECT * FROM rf100vl_leaderboard")}
    scores = query(bench_home / "warehouse.duckdb",
                        "SELECT avg(mAP50_95) AS m FROM scores WHERE is_current AND model = 'syna-m'")
    assert lead["syna-m"]["mAP50_95"] == pytest.approx(scores[0]["m"])
    assert lead["syna-m"]["datasets_scored"] == 6 and lead["syna-m"]["datasets_expected"] == 6

    md = (bench_home / "report" / "report.md").read_text()
    assert "otherlab-detr-s" in md and "syna-c" in md
    assert f"{lead['syna-c']['mAP50_95'] * 100:.1f}" in md
    pngs = sorted(p.name for p in (bench_home / "report").glob("*.png"))
    assert len(pngs) == 4
    assert all((bench_home / "report" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    html = (bench_home / "report" / "index.html").read_text()
    assert html.count("data:image/png;base64,") == 4


def test_failing_checks_head_the_report_and_the_metadata(bench_home: Path) -> None:
    import dagster as dg

    from bench_assets.platform.instance import open_instance

    make_campaign(bench_home, n_models=2, n_datasets=4, seed=11)
    stats = sorted(bench_home.glob("runs/syna-t/*/*/stats.json"))[0]
    doc = json.loads(stats.read_text())
    doc["valid_mAP50_95"] = 0.99  # selection and test no longer track: the BatchNorm-bug signature
    stats.write_text(json.dumps(doc))
    res = run_bench("report", home=bench_home)
    assert res.returncode == 1
    assert "check selection_vs_test failed on report/warehouse" in res.stderr
    md = (bench_home / "report" / "report.md").read_text()
    assert "selection_vs_test" in md and md.index("selection_vs_test") < md.index("syna-s")

    instance = open_instance(bench_home)
    try:
        ev = instance.get_latest_materialization_event(dg.AssetKey(["report", "rendered"]))
        meta = ev.asset_materialization.metadata
        assert meta["failing_checks"].value == 1
        assert "data:image/png;base64," in meta["rf100vl_report"].value  # the leaderboard plot shows in the UI
        full = meta["rf100vl_full_report"].value  # the whole report.md, its four plots embedded
        assert full.count("data:image/png;base64,") == 4 and "selection_vs_test" in full
    finally:
        instance.dispose()
