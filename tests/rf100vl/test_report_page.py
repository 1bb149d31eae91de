"""The report renderer over hand-built marts: numbers, escaping, PNGs, determinism, empty and broken marts."""

from __future__ import annotations

import html
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from PIL import Image

from bench_assets.rf100vl.report.page import (
    ReportSchemaError,
    fmt_sig,
    fmt_train_time,
    leaderboard_bars,
    load_report_data,
    render_report,
)
from tests.tables import create_sql

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

EVIL = 'imp<script>alert("x")</script>'
OURS_B_WHY = "3/100 RF100-VL datasets scored; recipe not protocol-conformant"
EVIL_WHY = "4/100 RF100-VL datasets scored; protocol conformance not recorded"

DDL = {
    "rf100vl_leaderboard": (
        "model VARCHAR, origin VARCHAR, datasets_scored BIGINT, datasets_expected BIGINT, "
        "benchmark_datasets_scored BIGINT, benchmark_datasets BIGINT, "
        "mAP50_95 DOUBLE, mAP50 DOUBLE, mAP75 DOUBLE, AR_max_det DOUBLE, median_train_minutes DOUBLE, "
        "train_hours DOUBLE, train_device VARCHAR, median_best_epoch DOUBLE, recipe_conformant BOOLEAN, "
        "protocol_conformant BOOLEAN, valid_submission BOOLEAN, comparable BOOLEAN, "
        "not_comparable_because VARCHAR, leaderboard_rank BIGINT"),
    "rf100vl_domain_scores": (
        "model VARCHAR, origin VARCHAR, domain VARCHAR, datasets BIGINT, mAP50_95 DOUBLE, mAP50 DOUBLE"),
    "rf100vl_dataset_scores": (
        "model VARCHAR, origin VARCHAR, dataset VARCHAR, domain VARCHAR, dataset_version VARCHAR, "
        "mAP50_95 DOUBLE, mAP50 DOUBLE, mAP75 DOUBLE, AR_max_det DOUBLE, valid_mAP50_95 DOUBLE, "
        "best_epoch BIGINT, train_minutes DOUBLE"),
    "rf100vl_weakest_datasets": (
        "model VARCHAR, origin VARCHAR, rank BIGINT, dataset VARCHAR, domain VARCHAR, mAP50_95 DOUBLE"),
    "rf100vl_train_cost": (
        "model VARCHAR, datasets_trained BIGINT, median_train_minutes DOUBLE, total_train_hours DOUBLE, "
        "train_device VARCHAR, median_best_epoch DOUBLE, mean_epochs_done DOUBLE, resumed_runs BIGINT"),
    "rf100vl_published_comparison": (
        "model VARCHAR, origin VARCHAR, family VARCHAR, size VARCHAR, mAP50_95 DOUBLE, "
        "datasets_scored BIGINT, benchmark_datasets_scored BIGINT, benchmark_datasets BIGINT, "
        "protocol_conformant BOOLEAN, comparable BOOLEAN, not_comparable_because VARCHAR, "
        "leaderboard_rank BIGINT, delta_vs_best_published DOUBLE, family_label VARCHAR, size_rank BIGINT, "
        "published_same_size VARCHAR, delta_vs_published_same_size DOUBLE"),
    "rf100vl_model_comparison": (
        "model_a VARCHAR, model_b VARCHAR, datasets BIGINT, mean_diff DOUBLE, ci_low DOUBLE, "
        "ci_high DOUBLE, seed_noise DOUBLE, ci_low_seeds DOUBLE, ci_high_seeds DOUBLE, distinguishable BOOLEAN, "
        "verdict VARCHAR"),
    "rf100vl_seed_spread": (
        "model VARCHAR, dataset VARCHAR, seeds BIGINT, mean_mAP50_95 DOUBLE, sd_mAP50_95 DOUBLE, "
        "min_mAP50_95 DOUBLE, max_mAP50_95 DOUBLE, range_mAP50_95 DOUBLE"),
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
        # ours-a: comparable (100/100, conformant, GPU); ours-b: 3 datasets, off-protocol, CPU; the import: 4
        # datasets, conformance not recorded. Only ours-a has a place among the published.
        "rf100vl_leaderboard": [
            ("ours-a", "ours", 100, 100, 100, 100, 0.4853, 0.6512, 0.5049, 0.6, 31.25, 52.0833, "gpu", 47.5, True,
             True, True, True, None, 2),
            ("ours-b", "ours", 3, 4, 3, 100, 0.35, 0.52, None, 0.5, 20.0, 0.05372, "cpu", 40.0, False, False, False,
             False, OURS_B_WHY, None),
            (EVIL, "imported", 4, 100, 4, 100, 0.225, 0.4, 0.2, 0.3, None, None, None, None, None, None, False, False,
             EVIL_WHY, None),
        ],
        "rf100vl_domain_scores": [
            ("ours-a", "ours", "aerial", 2, 0.475, 0.63), ("ours-a", "ours", "medical", 2, 0.4956, 0.67),
            ("ours-b", "ours", "aerial", 2, 0.375, 0.5), ("ours-b", "ours", "medical", 1, 0.30, 0.45),
            (EVIL, "imported", "aerial", 2, 0.275, 0.4), (EVIL, "imported", "medical", 2, 0.175, 0.3),
        ],
        "rf100vl_dataset_scores": [
            (m, origin[m], d, DOMAIN[d], "v1", test, None if test is None else test + 0.2, None, None,
             valid, 50, 12.0) for (m, d), (test, valid) in SCORES.items()
        ],
        "rf100vl_weakest_datasets": [
            (m, origin[m], rank, d, DOMAIN[d], SCORES[(m, d)][0])
            for m, order in (("ours-a", ["d3", "d2", "d1", "d4"]), ("ours-b", ["d3", "d2", "d1"]),
                             (EVIL, ["d4", "d3", "d2", "d1"]))
            for rank, d in enumerate(order, 1)
        ],
        "rf100vl_train_cost": [("ours-a", 4, 31.25, 52.0833, "gpu", 47.5, 100.0, 1),
                       ("ours-b", 3, 20.0, 0.05372, "cpu", 40.0, 100.0, 0)],
        "rf100vl_published_comparison": [
            ("yolo-pub-l", "published", "yolo", "l", 0.4901, None, None, None, None, True, None, 1, 0.0,
             "YOLO", 3, None, None),
            ("ours-a", "ours", "ours", "s", 0.4853, 100, 100, 100, True, True, None, 2, -0.0048,
             "YOLO", 1, "yolo-pub-s", 0.1853),
            ("yolo-pub-s", "published", "yolo", "s", 0.30, None, None, None, None, True, None, 3, -0.1901,
             "YOLO", 1, None, None),
            ("ours-b", "ours", "ours", "n", 0.35, 3, 3, 100, False, False, OURS_B_WHY, None, -0.1401,
             "ours", 0, None, None),
            (EVIL, "imported", None, None, 0.225, 4, 4, 100, None, False, EVIL_WHY, None, -0.2651,
             None, None, None, None),
        ],
        "rf100vl_model_comparison": [  # ours-a was replicated: its pairs' intervals are widened by the seed noise
            ("ours-a", "ours-b", 3, 0.0333, -0.05, 0.1433, 0.02, -0.0528, 0.1460, False, "tie"),
            ("ours-a", EVIL, 4, 0.2603, 0.05, 0.4, 0.02, 0.0491, 0.4009, True, "a"),
        ],
        "rf100vl_seed_spread": [("ours-a", "d1", 3, 0.50, 0.0123, 0.4866, 0.5111, 0.0245)],
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
    assert ("| 2 | ours-a | ours | 100/100 | yes | 48.5 | 65.1 | 50.5 | 60.0 | 31.2 | 52 GPU-hours | 47.5 | yes |  |"
            in md)
    assert (f"| - | ours-b | ours | 3/100 | no | 35.0 | 52.0 | — | 50.0 | 20.0 | 0.054 CPU-hours | 40.0 | no | "
            f"{OURS_B_WHY} |") in md  # NULL mAP75; 0.05372 h to two significant digits
    assert "| medical | ours-a | ours | 2 | 49.6 | 67.0 |" in md
    assert "| 1 | yolo-pub-l | published | yolo | l | 49.0 | all (as published) | as published | +0.0 |  |" in md
    assert "| 2 | ours-a | ours | ours | s | 48.5 | 100/100 | yes | -0.5 |  |" in md
    assert "| ours-a | d3 | medical | 62.0 | 20.0 | -42.0 |" in md  # the worst valid/test gap is listed
    # One threshold: the selection_vs_test check's tolerance (0.10) is the report's band, never a tighter one.
    assert ("1 of 7 (model, dataset) pairs of ours differ by more than 10 points between valid and test (the "
            "selection_vs_test check's tolerance" in md)
    assert "| ours-a | ours-b | 3 | +3.3 | [-5.3, +14.6] | ±2.0 | tie: within noise" in md
    assert "ours-a ahead by 26.0 points (beyond the noise over datasets and seed-to-seed noise)" in md
    assert "| ours-a | d1 | 3 | 50.0 | 1.2 | 48.7 | 51.1 | 2.5 |" in md  # the seed spread, in points
    weakest = md.split("## 5 weakest datasets per model")[1].split("##")[0]
    assert "| ours-a | ours | 1 | d3 | medical | 20.0 |" in weakest
    assert weakest.count(f"| {EVIL.replace('<', '&lt;').replace('>', '&gt;')} |") == 4


def test_rows_are_grouped_by_family_and_size_each_beside_the_published_row_it_reproduces(
        rendered: tuple[Any, str, str]) -> None:
    out, md, page = rendered
    grouped = next(t for t in _md_tables(md) if t and "Published (same size)" in t[0])
    assert [(r["Family"], r["Size"], r["Model"]) for r in grouped] == [
        ("YOLO", "s", "yolo-pub-s"), ("YOLO", "s", "ours-a"), ("YOLO", "l", "yolo-pub-l"), ("ours", "n", "ours-b"),
        ("—", "—", EVIL)]
    a = grouped[1]
    assert (a["Published (same size)"], a["vs published"], a["Not ranked because"]) == ("yolo-pub-s", "+18.5", "")
    assert grouped[3]["vs published"] == "—" and grouped[3]["Not ranked because"] == OURS_B_WHY
    assert grouped == next(t for t in _html_tables(page) if t and "Published (same size)" in t[0])


def test_headline_and_findings(rendered: tuple[Any, str, str]) -> None:
    _, md, _ = rendered
    head = md.split("## Headline")[1].split("## Leaderboard")[0]
    assert ("- **ours-a** (ours, leaderboard rank 2): mAP50-95 48.5, mAP50 65.1; RF100-VL datasets 100/100; "
            "protocol-conformant: yes; trained in 52 GPU-hours; submittable.") in head
    assert (f"- **ours-b** (ours, not ranked: {OURS_B_WHY}): mAP50-95 35.0, mAP50 52.0; RF100-VL datasets 3/100; "
            "protocol-conformant: no; trained in 0.054 CPU-hours; not submittable because:\n"
            "  - not exactly 100 datasets (3)\n  - dirty source tree") in head
    assert "reasons not recorded" in head  # imported model: invalid, no submission row in the warehouse
    checks = md.split("## Failing checks")[1].split("## Headline")[0]
    assert checks.index("ERROR") < checks.index("WARN")  # errors first
    assert md.index("## Failing checks") < md.index("## Headline")


def _md_tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table in `text` as rows of header -> cell text (entities decoded)."""
    tables, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([html.unescape(c.strip()) for c in line.strip()[1:-1].split("|")])
        elif block:
            tables.append([dict(zip(block[0], row, strict=True)) for row in block[2:]])
            block = []
    return tables


def _html_tables(page: str) -> list[list[dict[str, str]]]:
    """Every HTML table in `page` as rows of header -> cell text (entities decoded)."""
    out = []
    for body in re.findall(r"<table>(.*?)</table>", page, flags=re.S):
        rows = [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, flags=re.S)]
                for tr in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)]
        out.append([dict(zip(rows[0], r, strict=True)) for r in rows[1:]])
    return out


def _leaderboard_of(tables: list[list[dict[str, str]]]) -> list[dict[str, str]]:
    return next(t for t in tables if t and "Not ranked because" in t[0] and "Valid submission" in t[0])


def test_the_markdown_view_shows_the_same_leaderboard_as_the_html_page(rendered: tuple[Any, str, str]) -> None:
    """Dagster's "[Show Markdown]" shows summary_md: the same columns and cells as index.html's leaderboard,
    coverage, conformance and why a row is not ranked included, and the not-submittable reasons."""
    out, _, page = rendered
    in_md, in_html = _leaderboard_of(_md_tables(out.summary_md)), _leaderboard_of(_html_tables(page))
    assert in_md == in_html
    b = next(r for r in in_md if r["Model"] == "ours-b")
    assert (b["Rank"], b["RF100-VL datasets"], b["Protocol-conformant"], b["Not ranked because"]) == (
        "-", "3/100", "no", OURS_B_WHY)
    assert b["Train time"] == "0.054 CPU-hours"
    assert "not submittable because:\n  - not exactly 100 datasets (3)\n  - dirty source tree" in out.summary_md


def test_only_comparable_entries_are_ranked_and_the_rest_drawn_apart(tmp_path: Path) -> None:
    data = load_report_data(make_report_db(tmp_path / "report.duckdb"))
    ranked, apart = leaderboard_bars(data)
    assert [b.label for b in ranked] == ["1. yolo-pub-l", "2. ours-a", "3. yolo-pub-s"]
    # ours-b scores above yolo-pub-s (35.0 vs 30.0) yet takes no place among the published
    assert [(b.label, b.origin) for b in apart] == [
        ("ours-b (3/100 datasets, non-conformant)", "ours"),
        (f"{EVIL} (4/100 datasets, conformance not recorded)", "imported")]
    assert apart[0].value == pytest.approx(0.35)


def test_cpu_runs_are_never_gpu_hours(rendered: tuple[Any, str, str]) -> None:
    out, md, page = rendered
    for text in (md, out.summary_md, page):
        ours_b = [line for line in re.split(r"\n|</tr>", text) if "ours-b" in line and "hours" in line]
        assert ours_b and all("CPU-hours" in line and "GPU-hours" not in line for line in ours_b)
    cost = next(t for t in _md_tables(md) if t and "Datasets trained" in t[0])
    assert [(r["Model"], r["Train time"]) for r in cost] == [("ours-a", "52 GPU-hours"), ("ours-b", "0.054 CPU-hours")]


@pytest.mark.parametrize(("value", "digits", "text"), [
    (0.3583333333333333, 2, "0.36"), (0.05372, 2, "0.054"), (1.234, 2, "1.2"), (52.0833, 2, "52"),
    (123.4, 2, "123"), (0.0, 2, "0"), (None, 2, "—"), (0.3583333333333333, 3, "0.358"), (-0.0004, 1, "-0.0004")])
def test_numbers_keep_meaningful_digits(value: float | None, digits: int, text: str) -> None:
    assert fmt_sig(value, digits) == text


def test_train_time_names_the_device() -> None:
    assert fmt_train_time(0.1, "cpu") == "0.10 CPU-hours"
    assert fmt_train_time(12.34, "gpu") == "12 GPU-hours"
    assert fmt_train_time(3.0, "mixed") == "3.0 hours (CPU and GPU runs)"
    assert fmt_train_time(0.1, None) == "0.10 hours (device not recorded)"  # never assumed to be a GPU
    assert fmt_train_time(None, "gpu") == "—"


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
    assert ("| 2 | ours-a | ours | 100/100 | yes | 48.5 | 65.1 | 50.5 | 60.0 | 31.2 | 52 GPU-hours | 47.5 | yes |  |"
            in out.summary_md)
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
    ddl = {**DDL, "rf100vl_leaderboard": DDL["rf100vl_leaderboard"].replace("mAP75 DOUBLE, ", "")}
    db = make_report_db(tmp_path / "report.duckdb", rows={}, ddl=ddl)
    with pytest.raises(ReportSchemaError, match=r"table rf100vl_leaderboard lacks column\(s\) mAP75 "):
        render_report(db, tmp_path / "out")
    assert not (tmp_path / "out" / "report.md").exists()


def test_missing_table_fails_naming_it(tmp_path: Path) -> None:
    db = make_report_db(tmp_path / "report.duckdb", rows={},
                        ddl={k: v for k, v in DDL.items() if k != "rf100vl_model_comparison"})
    with pytest.raises(ReportSchemaError, match="missing from schema main: rf100vl_model_comparison"):
        render_report(db, tmp_path / "out")


def _epochs(n: int = 30) -> list[dict[str, Any]]:
    return [{"epoch": e, "train_loss": 6.0 / e + 0.5, "valid_mAP50_95": None if e % 10 == 0 else min(0.6, e / 40),
             "valid_mAP50": min(0.8, e / 30)} for e in range(1, n + 1)]


def test_training_curves_keep_the_legend_off_the_lines_and_label_units() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from bench_assets.rf100vl.report.plots import CURVES_DPI, CURVES_SIZE, curve_series, curves_figure, training_curves

    fig = curves_figure(_epochs(), "yolo9-t on d1 (standard)", best_epoch=24)
    renderer = FigureCanvasAgg(fig).get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    for ax in fig.axes:
        assert not ax.get_legend()  # one figure legend for both axes, none inside them
        assert not legend.overlaps(ax.get_window_extent(renderer))  # outside the data
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["train loss (left axis)", "valid mAP50-95 (right axis)", "valid mAP50 (right axis)",
                      "best epoch (24)"]
    loss_ax, map_ax = fig.axes
    assert (loss_ax.get_xlabel(), loss_ax.get_ylabel()) == ("epoch", "train loss (LibreYOLO total, unitless)")
    assert map_ax.get_ylabel() == "valid mAP (COCO AP x100, points)"
    series = curve_series(_epochs())
    assert series["valid_mAP50_95"][3] == pytest.approx(10.0)  # 0.1 drawn as 10 points, like the report
    assert series["valid_mAP50_95"][9] != series["valid_mAP50_95"][9]  # an epoch without a value is a gap (NaN)
    png = training_curves(_epochs(), "t", best_epoch=None)
    with Image.open(io.BytesIO(png)) as im:
        assert im.size == (int(CURVES_SIZE[0] * CURVES_DPI), int(CURVES_SIZE[1] * CURVES_DPI))
    assert training_curves(_epochs(), "t", best_epoch=None) == png  # same epochs, same bytes


# ---------------------------------------------------------------------------------------------- a real campaign
# Synthetic artifacts -> the warehouse loader -> dbt -> the renderer: a complete conformant model, a 4-dataset
# off-protocol CPU smoke model, and the 28 published results the warehouse ships with.


@pytest.fixture(scope="module")
def smoke_beside_published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    from bench_assets.platform.fsutil import atomic_write_json
    from bench_assets.platform.warehouse import rebuild_warehouse
    from bench_assets.report.dbt_build import build_report_db, report_db_path
    from bench_assets.rf100vl.submission.build import build_submission, submission_path
    from tests.synthetic_campaign import make_campaign
    from tests.tables import ALL_TABLES

    home = tmp_path_factory.mktemp("smoke-beside-published")
    make_campaign(home, n_models=2, n_datasets=100, seed=5)  # syna-t and syna-s on all 100 RF100-VL datasets
    for d in sorted((home / "eval" / "syna-s").iterdir())[4:]:
        shutil.rmtree(d)  # syna-s keeps 4 scored datasets: a smoke run
    for score in home.glob("eval/syna-s/*/*.score.json"):  # on easy datasets: a mean above some published ones
        doc = json.loads(score.read_text())
        doc["metrics"]["mAP50_95"] = doc["reference_metrics"]["mAP50_95"] = 0.9
        score.write_text(json.dumps(doc))
    for stats in home.glob("runs/syna-s/*/*/stats.json"):
        doc = json.loads(stats.read_text())
        doc["recipe"].update(conformant=False, nonconformities=["epochs: 2 (protocol: 100)"])
        doc["device"] = {"device": "cpu", "lane": 0}  # a CPU lane, as `bench demo` trains
        stats.write_text(json.dumps(doc))
    tree = {"commit": "x", "dirty": False, "changed_files": []}
    atomic_write_json(submission_path(home, "syna-s"), build_submission(home, "syna-s", tree=tree))
    rebuild_warehouse(home, home / "warehouse.duckdb", ALL_TABLES)
    build_report_db(home)
    out = render_report(report_db_path(home), home / "report", warehouse_db=home / "warehouse.duckdb")
    return home, out


def test_a_smoke_model_is_never_ranked_among_complete_published_results(
        smoke_beside_published: tuple[Path, Any]) -> None:
    from bench_assets.platform.warehouse import query
    from bench_assets.report.dbt_build import report_db_path

    home, out = smoke_beside_published
    db = report_db_path(home)
    board = {r["model"]: r for r in query(db, "SELECT * FROM rf100vl_leaderboard")}
    smoke, full = board["syna-s"], board["syna-t"]
    assert (smoke["comparable"], smoke["leaderboard_rank"]) == (False, None)
    assert smoke["not_comparable_because"] == "4/100 RF100-VL datasets scored; recipe not protocol-conformant"
    assert (smoke["benchmark_datasets_scored"], smoke["benchmark_datasets"]) == (4, 100)
    published = query(db, "SELECT model, mAP50_95, leaderboard_rank FROM rf100vl_published_comparison "
                          "WHERE origin = 'published'")
    assert len(published) == 28
    assert any(p["mAP50_95"] < smoke["mAP50_95"] for p in published)  # it would have outranked some of them
    # The complete conformant model takes its place among the published, the same in both marts; the 29 positions
    # leave the smoke model out.
    assert full["comparable"] is True
    assert full["leaderboard_rank"] == 1 + sum(p["mAP50_95"] > full["mAP50_95"] for p in published)
    beside = query(db, "SELECT model, origin, leaderboard_rank FROM rf100vl_published_comparison")
    ranks = {(r["model"], r["origin"]): r["leaderboard_rank"] for r in beside}
    assert ranks[("syna-t", "ours")] == full["leaderboard_rank"] and ranks[("syna-s", "ours")] is None
    ladder = [p["mAP50_95"] for p in published] + [full["mAP50_95"]]  # ranked: 29 rows, ties share a rank
    assert sorted(v for v in ranks.values() if v is not None) == sorted(1 + sum(o > v for o in ladder)
                                                                        for v in ladder)

    # The plot draws it apart (hatched panel), labelled with its coverage and conformance.
    ranked, apart = leaderboard_bars(load_report_data(db))
    assert [b.label for b in apart] == ["syna-s (4/100 datasets, non-conformant)"]
    assert len(ranked) == 29 and f"{full['leaderboard_rank']}. syna-t" in [b.label for b in ranked]
    assert out.images["leaderboard"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_smoke_model_shows_coverage_conformance_and_reasons_in_markdown_and_html(
        smoke_beside_published: tuple[Path, Any]) -> None:
    from bench_assets.platform.warehouse import query

    home, out = smoke_beside_published
    page, md = out.html.read_text(), out.markdown.read_text()
    views = {"summary (Show Markdown)": _leaderboard_of(_md_tables(out.summary_md)),
             "report.md": _leaderboard_of(_md_tables(md)), "index.html": _leaderboard_of(_html_tables(page))}
    assert views["summary (Show Markdown)"] == views["report.md"] == views["index.html"]
    smoke = next(r for r in views["index.html"] if r["Model"] == "syna-s")
    assert (smoke["Rank"], smoke["RF100-VL datasets"], smoke["Protocol-conformant"]) == ("-", "4/100", "no")
    assert smoke["Not ranked because"] == "4/100 RF100-VL datasets scored; recipe not protocol-conformant"
    # Never GPU-hours for a CPU run: CPU-hours where the warehouse records the device, else "not recorded".
    records_device = bool(query(home / "warehouse.duckdb", "SELECT 1 FROM information_schema.columns "
                                                           "WHERE table_name = 'runs' AND column_name = 'device'"))
    assert "GPU-hours" not in smoke["Train time"]
    assert smoke["Train time"].endswith("CPU-hours" if records_device else "hours (device not recorded)")
    for text in (out.summary_md, md, page):
        assert "syna-s" in text and "not submittable because" in text
        assert "the leaderboard requires exactly 100" in text  # the submission's own reason, in every view


def test_no_text_of_the_leaderboard_plot_runs_off_the_image(tmp_path: Path) -> None:
    """The "not ranked" panel's title was clipped ("(not compara") when long labels (the escaped imported name with
    its coverage note) pushed the bars right: every text drawn must lie inside the figure."""
    from matplotlib.text import Text

    from bench_assets.platform.document import plot_context
    from bench_assets.rf100vl.report.page import leaderboard_figure

    data = load_report_data(make_report_db(tmp_path / "report.duckdb"))
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with plot_context():
        fig = leaderboard_figure(data)
        canvas = FigureCanvasAgg(fig)  # what savefig draws with
        canvas.draw()
        renderer = canvas.get_renderer()
        box = fig.bbox
        ticks = {id(t) for ax in fig.axes for t in ax.get_xticklabels()}  # numbers; those past the axis aren't drawn
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in ticks]
        assert any("Not ranked" in t.get_text() for t in texts)
        outside = [t.get_text()[:60] for t in texts
                   if (e := t.get_window_extent(renderer)).x0 < box.x0 - 1 or e.x1 > box.x1 + 1]
    assert outside == []
