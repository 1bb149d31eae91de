"""The report renderer over hand-built marts: numbers, escaping, PNGs, determinism, empty and broken marts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from PIL import Image

from bench_assets.rf100vl.report_page import ReportSchemaError, render_report
from tests.tables import create_sql

EVIL = 'imp<script>alert("x")</script>'

DDL = {
    "leaderboard": "model VARCHAR, origin VARCHAR, datasets_scored BIGINT, datasets_expected BIGINT, "
                   "mAP50_95 DOUBLE, mAP50 DOUBLE, mAP75 DOUBLE, AR_max_det DOUBLE, median_train_minutes DOUBLE, "
                   "gpu_hours DOUBLE, median_best_epoch DOUBLE, recipe_conformant BOOLEAN, valid_submission BOOLEAN, "
                   "rank BIGINT",
    "domain_scores": "model VARCHAR, origin VARCHAR, domain VARCHAR, datasets BIGINT, mAP50_95 DOUBLE, mAP50 DOUBLE",
    "dataset_scores": "model VARCHAR, origin VARCHAR, dataset VARCHAR, domain VARCHAR, dataset_version VARCHAR, "
                      "mAP50_95 DOUBLE, mAP50 DOUBLE, mAP75 DOUBLE, AR_max_det DOUBLE, valid_mAP50_95 DOUBLE, "
                      "best_epoch BIGINT, train_minutes DOUBLE",
    "weakest_datasets": "model VARCHAR, origin VARCHAR, rank BIGINT, dataset VARCHAR, domain VARCHAR, "
                        "mAP50_95 DOUBLE",
    "train_cost": "model VARCHAR, datasets_trained BIGINT, median_train_minutes DOUBLE, total_gpu_hours DOUBLE, "
                  "median_best_epoch DOUBLE, mean_epochs_done DOUBLE, resumed_runs BIGINT",
    "published_comparison": "model VARCHAR, origin VARCHAR, family VARCHAR, size VARCHAR, mAP50_95 DOUBLE, "
                            "datasets_scored BIGINT, rank_overall BIGINT, delta_vs_best_published DOUBLE",
    "model_comparison": "model_a VARCHAR, model_b VARCHAR, datasets BIGINT, mean_diff DOUBLE, ci_low DOUBLE, "
                        "ci_high DOUBLE, distinguishable BOOLEAN",
}

DOMAIN = {"d1": "aerial", "d2": "aerial", "d3": "medical", "d4": "medical"}
# test mAP50-95, valid mAP50-95 per (model, dataset); b on d4 is undefined (NULL), a on d3 has a big valid/test gap
SCORES = {
    ("ours-a", "d1"): (0.50, 0.51), ("ours-a", "d2"): (0.45, 0.46), ("ours-a", "d3"): (0.20, 0.62),
    ("ours-a", "d4"): (0.7912, 0.78),
    ("ours-b", "d1"): (0.40, 0.41), ("ours-b", "d2"): (0.35, 0.36), ("ours-b", "d3"): (0.30, 0.31),
    ("ours-b", "d4"): (None, None),
    (EVIL, "d1"): (0.30, None), (EVIL, "d2"): (0.25, None), (EVIL, "d3"): (0.20, None), (EVIL, "d4"): (0.15, None),
}


def _rows() -> dict[str, list[tuple[Any, ...]]]:
    origin = {"ours-a": "ours", "ours-b": "ours", EVIL: "imported"}
    return {
        "leaderboard": [
            ("ours-a", "ours", 4, 4, 0.4853, 0.6512, 0.5049, 0.6, 31.25, 2.1, 47.5, True, True, 1),
            ("ours-b", "ours", 3, 4, 0.35, 0.52, None, 0.5, 20.0, 1.0, 40.0, False, False, 2),
            (EVIL, "imported", 4, 4, 0.225, 0.4, 0.2, 0.3, None, None, None, None, False, 3),
        ],
        "domain_scores": [
            ("ours-a", "ours", "aerial", 2, 0.475, 0.63), ("ours-a", "ours", "medical", 2, 0.4956, 0.67),
            ("ours-b", "ours", "aerial", 2, 0.375, 0.5), ("ours-b", "ours", "medical", 1, 0.30, 0.45),
            (EVIL, "imported", "aerial", 2, 0.275, 0.4), (EVIL, "imported", "medical", 2, 0.175, 0.3),
        ],
        "dataset_scores": [
            (m, origin[m], d, DOMAIN[d], "v1", test, None if test is None else test + 0.2, None, None,
             valid, 50, 12.0) for (m, d), (test, valid) in SCORES.items()
        ],
        "weakest_datasets": [
            (m, origin[m], rank, d, DOMAIN[d], SCORES[(m, d)][0])
            for m, order in (("ours-a", ["d3", "d2", "d1", "d4"]), ("ours-b", ["d3", "d2", "d1"]),
                             (EVIL, ["d4", "d3", "d2", "d1"]))
            for rank, d in enumerate(order, 1)
        ],
        "train_cost": [("ours-a", 4, 31.25, 2.1, 47.5, 100.0, 1), ("ours-b", 3, 20.0, 1.0, 40.0, 100.0, 0)],
        "published_comparison": [
            ("yolo-pub-l", "published", "yolo", "l", 0.4901, None, 1, 0.0),
            ("ours-a", "ours", "ours", "s", 0.4853, 4, 2, -0.0048),
            ("ours-b", "ours", "ours", "n", 0.35, 3, 3, -0.1401),
            (EVIL, "imported", None, None, 0.225, 4, 4, -0.2651),
        ],
        "model_comparison": [
            ("ours-a", "ours-b", 3, 0.0333, -0.05, 0.1433, False),
            ("ours-a", EVIL, 4, 0.2603, 0.05, 0.4, True),
        ],
    }


def make_report_db(path: Path, rows: dict[str, list[tuple[Any, ...]]] | None = None,
                   ddl: dict[str, str] | None = None) -> Path:
    rows = _rows() if rows is None else rows
    with duckdb.connect(str(path)) as con:
        for table, cols in (ddl or DDL).items():
            con.execute(f"CREATE TABLE {table} ({cols})")
            for r in rows.get(table, []):
                con.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(r))})", list(r))
    return path


def make_warehouse(path: Path) -> Path:
    with duckdb.connect(str(path)) as con:
        con.execute(create_sql("submissions"))
        con.execute("INSERT INTO submissions (model, origin, valid_submission, invalid_reasons) VALUES "
                    "('ours-a', 'ours', true, []), "
                    "('ours-b', 'ours', false, ['not exactly 100 datasets (3)', 'dirty source tree'])")
    return path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str, str]:
    tmp = tmp_path_factory.mktemp("render")
    db = make_report_db(tmp / "report.duckdb")
    findings = [("scores_rescore_match", "rf100vl/score", "WARN", "d2: rescored AP differs by 2e-6"),
                ("valid_test_gap", "rf100vl/score", "ERROR", "ours-a on d3: valid 62.0, test 20.0")]
    out = render_report(db, tmp / "out", warehouse_db=make_warehouse(tmp / "warehouse.duckdb"), findings=findings)
    return out, out.markdown.read_text(), out.html.read_text()


def test_files_exist_and_pngs_are_valid(rendered: tuple[Any, str, str]) -> None:
    out, md, _ = rendered
    assert out.html.is_file() and out.markdown.is_file()
    assert set(out.images) == {"leaderboard", "domains", "valid_vs_test", "datasets"}
    for path in out.images.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(path) as im:
            im.verify()
        assert f"]({path.name})" in md  # referenced by relative name
    assert (out.models, out.datasets, out.findings) == (3, 4, 2)


def test_markdown_numbers_are_x100_one_decimal(rendered: tuple[Any, str, str]) -> None:
    _, md, _ = rendered
    assert "x100 with one decimal" in md.splitlines()[2]
    assert "| 1 | ours-a | ours | 4/4 | 48.5 | 65.1 | 50.5 | 60.0 | 31.2 | 2.1 | 47.5 | yes | yes |" in md
    assert "| 2 | ours-b | ours | 3/4 | 35.0 | 52.0 | — | 50.0 | 20.0 | 1.0 | 40.0 | no | no |" in md  # NULL mAP75
    assert "| medical | ours-a | ours | 2 | 49.6 | 67.0 |" in md
    assert "| 1 | yolo-pub-l | published | yolo | l | 49.0 | — | +0.0 |" in md
    # a model over fewer than the 100 datasets a published result covers says so beside its name
    assert "| 2 | ours-a (4/100 datasets) | ours | ours | s | 48.5 | 4 | -0.5 |" in md
    assert "| ours-a | d3 | medical | 62.0 | 20.0 | -42.0 |" in md  # the worst valid/test gap is listed
    assert "1 of 7 (model, dataset) pairs of ours differ by more than 5 points" in md
    assert "| ours-a | ours-b | 3 | +3.3 | [-5.0, +14.3] | within noise" in md
    assert "ours-a ahead by 26.0 points" in md
    weakest = md.split("## 5 weakest datasets per model")[1].split("##")[0]
    assert "| ours-a | ours | 1 | d3 | medical | 20.0 |" in weakest
    assert weakest.count(f"| {EVIL.replace('<', '&lt;').replace('>', '&gt;')} |") == 4


def test_headline_and_findings(rendered: tuple[Any, str, str]) -> None:
    _, md, _ = rendered
    head = md.split("## Headline")[1].split("## Leaderboard")[0]
    assert "- **ours-a** (ours, rank 1): mAP50-95 48.5, mAP50 65.1 on 4/4 datasets; submittable." in head
    assert ("- **ours-b** (ours, rank 2): mAP50-95 35.0, mAP50 52.0 on 3/4 datasets; recipe not conformant to "
            "the protocol; not submittable because:\n  - not exactly 100 datasets (3)\n  - dirty source tree") in head
    assert "reasons not recorded" in head  # imported model: invalid, no submission row in the warehouse
    checks = md.split("## Failing checks")[1].split("## Headline")[0]
    assert checks.index("ERROR") < checks.index("WARN")  # errors first
    assert md.index("## Failing checks") < md.index("## Headline")


def test_html_is_self_contained_and_escaped(rendered: tuple[Any, str, str]) -> None:
    out, _, page = rendered
    assert "<script" not in page
    assert "imp&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count('src="data:image/png;base64,') == 4
    assert "src=\"http" not in page and "leaderboard.png" not in page
    assert "&lt;script&gt;" in out.summary_md and "<script" not in out.summary_md


def test_summary_fits_metadata(rendered: tuple[Any, str, str]) -> None:
    out, _, _ = rendered
    assert out.summary_md.count("![leaderboard](data:image/png;base64,") == 1
    assert "| 1 | ours-a | ours | 4/4 | 48.5 | 65.1 | yes |" in out.summary_md
    assert len(out.summary_md.encode()) < 300_000


def test_rendering_twice_gives_identical_bytes(tmp_path: Path) -> None:
    db = make_report_db(tmp_path / "report.duckdb")
    one = render_report(db, tmp_path / "one")
    two = render_report(db, tmp_path / "two")
    assert one.markdown.read_bytes() == two.markdown.read_bytes()
    assert one.html.read_bytes() == two.html.read_bytes()
    for key, path in one.images.items():
        assert path.read_bytes() == two.images[key].read_bytes(), key


def test_empty_marts_say_no_models_yet(tmp_path: Path) -> None:
    db = make_report_db(tmp_path / "report.duckdb", rows={})
    out = render_report(db, tmp_path / "out", findings=[])
    md = out.markdown.read_text()
    assert "No models yet" in md and "No failing asset checks." in md
    assert (out.models, out.datasets, out.images) == (0, 0, {})
    assert "No models yet" in out.html.read_text() and "No models yet" in out.summary_md


def test_report_db_without_marts_says_no_models_yet(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "report.duckdb")) as con:
        con.execute("CREATE TABLE stg_warehouse__datasets (dataset VARCHAR)")
    out = render_report(tmp_path / "report.duckdb", tmp_path / "out")
    assert "report.duckdb holds no mart tables yet" in out.markdown.read_text()


def test_stale_plots_are_removed_when_data_goes(tmp_path: Path) -> None:
    full = render_report(make_report_db(tmp_path / "full.duckdb"), tmp_path / "out")
    assert full.images["leaderboard"].exists()
    render_report(make_report_db(tmp_path / "empty.duckdb", rows={}), tmp_path / "out")
    assert not list((tmp_path / "out").glob("*.png"))


def test_missing_column_fails_naming_it(tmp_path: Path) -> None:
    ddl = {**DDL, "leaderboard": DDL["leaderboard"].replace("mAP75 DOUBLE, ", "")}
    db = make_report_db(tmp_path / "report.duckdb", rows={}, ddl=ddl)
    with pytest.raises(ReportSchemaError, match=r"table leaderboard lacks column\(s\) mAP75 "):
        render_report(db, tmp_path / "out")
    assert not (tmp_path / "out" / "report.md").exists()


def test_missing_table_fails_naming_it(tmp_path: Path) -> None:
    db = make_report_db(tmp_path / "report.duckdb", rows={},
                        ddl={k: v for k, v in DDL.items() if k != "model_comparison"})
    with pytest.raises(ReportSchemaError, match="missing from schema main: model_comparison"):
        render_report(db, tmp_path / "out")
