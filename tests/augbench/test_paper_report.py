"""The augbench marts and paper report: real numbers from a hand-written warehouse, a dbt test that catches planted
bad data, the rendered report (tables, bold fastest, tags, PNG plots, escaped HTML), the Dagster asset, and one run
of the real smoke config end to end.

The warehouse is written with the loader's declared schemas (schema.create_sql); every expected number below is
worked out by hand from the rows in CELLS, independently of the SQL.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from bench_assets.augbench.paper_report import PaperReportError, render_paper_report
from bench_assets.report.dbt_build import build_report_db, report_db_path
from bench_assets.report.dbt_project import ReportBuildError
from tests.conftest import run_bench
from tests.shared_cache import private_copy
from tests.shared_reports import hand_written_report
from tests.tables import ALL_TABLES, TABLE_SCHEMAS, create_sql

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

AX, TV, KO, PIL = "albumentationsx", "torchvision", "kornia", "pillow"
CONFIGS = {"rgb-micro": ("rgb", "micro", "cpu"), "video-micro": ("video", "micro", "cpu")}
HOSTILE = "1.0<script>alert(1)</script>"  # a library version that must come out escaped
ERROR = "boom <b>&amp; | pipe"  # an error message with HTML and markdown specials
# (config, transform, library) -> (status, items/s or None, extra fields)
CELLS: dict[tuple[str, str, str], tuple[str, float | None, dict[str, Any]]] = {
    ("rgb-micro", "HorizontalFlip", AX): ("ok", 1000.0, {"materialize_us": 36.0, "materialize_copied": 1.0,
                                                         "materialize_share": 0.036}),
    ("rgb-micro", "HorizontalFlip", TV): ("ok", 2400.0, {"unstable": True, "cv": 0.2, "speedup_ci95_low": 2.2,
                                                         "speedup_ci95_high": 2.6, "materialize_us": 0.5,
                                                         "materialize_copied": 0.0, "materialize_share": 0.0012}),
    ("rgb-micro", "HorizontalFlip", KO): ("ok", 500.0, {}),
    ("rgb-micro", "HorizontalFlip", PIL): ("ok", 1500.0, {}),
    ("rgb-micro", "Rotate", AX): ("ok", 800.0, {}),
    ("rgb-micro", "Rotate", TV): ("ok", 400.0, {"busy_repeats": 1}),
    ("rgb-micro", "Rotate", KO): ("early_stopped", None, {"preflight_throughput": 12.5,
                                                          "reason": "preflight 12.5 items/s is below the floor"}),
    ("rgb-micro", "Rotate", PIL): ("ok", 200.0, {}),
    ("rgb-micro", "GaussianBlur", AX): ("error", None, {"reason": ERROR}),
    ("rgb-micro", "GaussianBlur", TV): ("ok", 300.0, {}),
    ("rgb-micro", "GaussianBlur", KO): ("ok", 600.0, {}),
    ("rgb-micro", "GaussianBlur", PIL): ("ok", 100.0, {}),
    ("rgb-micro", "RGBShift", AX): ("ok", 900.0, {}),
    ("rgb-micro", "RGBShift", TV): ("unsupported", None, {"reason": "torchvision has no RGBShift"}),
    ("rgb-micro", "RGBShift", KO): ("ok", 450.0, {}),
    ("rgb-micro", "RGBShift", PIL): ("unsupported", None, {"reason": "pillow has no RGBShift"}),
    ("rgb-micro", "Equalize", AX): ("ok", 700.0, {}),
    ("rgb-micro", "Equalize", TV): ("ok", 700.0, {}),  # a tie: both are fastest
    # ("rgb-micro", "Equalize", KO): planned, no result yet -> missing
    ("rgb-micro", "Equalize", PIL): ("ok", 350.0, {"library_version": HOSTILE}),
    ("rgb-micro", "Solarize", PIL): ("ok", 5000.0, {}),  # a result the current plan does not list
    ("video-micro", "Resize", AX): ("ok", 50.0, {}),
    ("video-micro", "Resize", KO): ("ok", 100.0, {}),
}
PLANNED = ([("rgb-micro", t, lib) for t in ("HorizontalFlip", "Rotate", "GaussianBlur", "RGBShift", "Equalize")
            for lib in (AX, TV, KO, PIL)]
           + [("video-micro", t, lib) for t in ("Resize", "Pad") for lib in (AX, KO)]
           + [("9ch-micro", "HorizontalFlip", AX)])  # a registered config with no result at all
UNSUPPORTED_UP_FRONT = {("rgb-micro", "RGBShift", TV), ("rgb-micro", "RGBShift", PIL)}


def augbench_rows() -> dict[str, list[dict[str, Any]]]:
    cells = []
    for (config, transform, library), (status, rate, extra) in CELLS.items():
        media, mode, device = CONFIGS[config]
        ok = status == "ok"
        cells.append({
            "config": config, "media": media, "mode": mode, "device": device, "library": library,
            "transform": transform, "status": status, "reason": None, "repeats": 2, "runs": 10 if ok else 0,
            "median": rate, "mean": rate, "std": rate * 0.05 if ok else None, "cv": 0.05 if ok else None,
            "ci95_low": rate * 0.95 if ok else None, "ci95_high": rate * 1.05 if ok else None,
            "unstable": False if ok else None, "preflight_throughput": rate, "hardware": "Test CPU x2",
            "threads": "{}", "media_hash": "abc", "library_version": "9.9", **extra})
    planned = [{"config": c, "transform": t, "library": lib,
                "planned_status": "unsupported" if (c, t, lib) in UNSUPPORTED_UP_FRONT else "planned",
                "reason": f"{lib} has no {t}" if (c, t, lib) in UNSUPPORTED_UP_FRONT else None}
               for c, t, lib in PLANNED]
    return {"augbench_cells": cells, "augbench_planned": planned}


def write_warehouse(path: Path, rows: dict[str, list[dict[str, Any]]]) -> None:
    with duckdb.connect(str(path)) as con:
        for table in TABLE_SCHEMAS:
            con.execute(create_sql(table))
            for row in rows.get(table, []):
                cols = ", ".join(f'"{c}"' for c in row)
                con.execute(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


def query(db: Path, sql: str) -> list[dict[str, Any]]:
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """This module's own copy (the page is rendered into it) of the report built over these rows and the RF100-VL
    ones of tests/report/test_dbt_report.py (its marts read other tables), built once per run of the suite."""
    home, _ = hand_written_report(tmp_path_factory)
    yield private_copy(home, tmp_path_factory.mktemp("augbench-report") / "home")


@pytest.fixture(scope="module")
def rendered(built: Path) -> Any:
    out = built / "report" / "augbench"
    out.mkdir(parents=True)
    (out / "bars-gone.png").write_bytes(b"stale")  # a plot of a config no longer in the marts
    (out / "keep.png").write_bytes(b"not ours")
    return render_paper_report(report_db_path(built), out)


def test_paper_table_speedups_and_fastest(built: Path) -> None:
    rows = {(r["config"], r["transform"], r["library"]): r
            for r in query(report_db_path(built), "SELECT * FROM augbench_paper_table")}
    assert len(rows) == len(set(CELLS) | set(PLANNED)) == 26
    speedup = {k: r["speedup_vs_albumentationsx"] for k, r in rows.items()}
    fastest = {k for k, r in rows.items() if r["is_fastest"]}
    hf = ("rgb-micro", "HorizontalFlip")
    assert [speedup[(*hf, lib)] for lib in (AX, TV, KO, PIL)] == pytest.approx([1.0, 2.4, 0.5, 1.5])
    assert speedup[("rgb-micro", "Rotate", TV)] == pytest.approx(0.5)
    assert speedup[("rgb-micro", "Rotate", KO)] is None  # early-stopped: no figure
    assert all(speedup[("rgb-micro", "GaussianBlur", lib)] is None for lib in (AX, TV, KO, PIL))  # reference failed
    assert speedup[("rgb-micro", "Solarize", PIL)] is None  # no reference cell at all
    assert speedup[("video-micro", "Resize", KO)] == pytest.approx(2.0)
    assert fastest == {(*hf, TV), ("rgb-micro", "Rotate", AX), ("rgb-micro", "GaussianBlur", KO),
                       ("rgb-micro", "RGBShift", AX), ("rgb-micro", "Equalize", AX), ("rgb-micro", "Equalize", TV),
                       ("rgb-micro", "Solarize", PIL), ("video-micro", "Resize", KO)}
    r = rows[(*hf, TV)]
    assert (r["status"], r["items_per_s"], r["ci95_low"], r["ci95_high"], r["unstable"], r["repeats"], r["runs"],
            r["media"], r["mode"], r["device"], r["ok_libraries"]) == (
        "ok", 2400.0, pytest.approx(2280.0), pytest.approx(2520.0), True, 2, 10, "rgb", "micro", "cpu", 4)
    missing = rows[("rgb-micro", "Equalize", KO)]
    assert (missing["status"], missing["in_plan"], missing["items_per_s"], missing["repeats"], missing["is_fastest"],
            missing["media"]) == ("missing", True, None, 0, False, "rgb")
    assert rows[("video-micro", "Pad", AX)]["media"] == "video"  # config facts from the config's other cells
    assert rows[("9ch-micro", "HorizontalFlip", AX)]["media"] is None  # nothing measured for that config
    assert rows[("rgb-micro", "Solarize", PIL)]["in_plan"] is False
    assert rows[("rgb-micro", "RGBShift", TV)]["planned_status"] == "unsupported"


def test_coverage_winners_and_not_measured(built: Path) -> None:
    db = report_db_path(built)
    cov = {(r["config"], r["library"]): r for r in query(db, "SELECT * FROM augbench_coverage")}
    counts = ("planned", "ok", "early_stopped", "unsupported", "error", "missing", "unplanned")
    assert {k: tuple(r[c] for c in counts) for k, r in cov.items()} == {
        ("rgb-micro", AX): (5, 4, 0, 0, 1, 0, 0),
        ("rgb-micro", TV): (5, 4, 0, 1, 0, 0, 0),
        ("rgb-micro", KO): (5, 3, 1, 0, 0, 1, 0),
        ("rgb-micro", PIL): (5, 4, 0, 1, 0, 0, 1),
        ("video-micro", AX): (2, 1, 0, 0, 0, 1, 0),
        ("video-micro", KO): (2, 1, 0, 0, 0, 1, 0),
        ("9ch-micro", AX): (1, 0, 0, 0, 0, 1, 0),
    }
    assert {k: r["measured_share"] for k, r in cov.items()} == pytest.approx({
        ("rgb-micro", AX): 0.8, ("rgb-micro", TV): 0.8, ("rgb-micro", KO): 0.6, ("rgb-micro", PIL): 0.8,
        ("video-micro", AX): 0.5, ("video-micro", KO): 0.5, ("9ch-micro", AX): 0.0})
    # median items/s of the ok cells: (800+900)/2, (400+700)/2, 500, 350 (Solarize, unplanned, included)
    assert [cov[("rgb-micro", lib)]["median_items_per_s"] for lib in (AX, TV, KO, PIL)] == pytest.approx(
        [850.0, 550.0, 500.0, 350.0])
    assert cov[("9ch-micro", AX)]["median_items_per_s"] is None

    win = {(r["config"], r["library"]): r for r in query(db, "SELECT * FROM augbench_winners")}
    cols = ("wins", "uncontested_wins", "transforms_compared", "transforms_vs_reference", "rank")
    assert {k: tuple(r[c] for c in cols) for k, r in win.items()} == {
        ("rgb-micro", AX): (3, 0, 4, 4, 1),  # Rotate, RGBShift, Equalize (tied)
        ("rgb-micro", TV): (2, 0, 4, 3, 2),  # HorizontalFlip, Equalize (tied)
        ("rgb-micro", KO): (1, 0, 3, 2, 3),  # GaussianBlur (the reference failed there)
        ("rgb-micro", PIL): (1, 1, 5, 3, 3),  # Solarize, alone
        ("video-micro", AX): (0, 0, 1, 1, 2),
        ("video-micro", KO): (1, 0, 1, 1, 1),
        ("9ch-micro", AX): (0, 0, 0, 0, 1),
    }
    geo = {k: r["geomean_speedup_vs_albumentationsx"] for k, r in win.items()}
    assert geo[("rgb-micro", AX)] == pytest.approx(1.0)
    assert geo[("rgb-micro", TV)] == pytest.approx((2.4 * 0.5 * 1.0) ** (1 / 3))
    assert geo[("rgb-micro", KO)] == pytest.approx(0.5)
    assert geo[("rgb-micro", PIL)] == pytest.approx((1.5 * 0.25 * 0.5) ** (1 / 3))
    assert geo[("9ch-micro", AX)] is None

    nm = query(db, "SELECT * FROM augbench_not_measured ORDER BY config, transform, library")
    assert [(r["transform"], r["library"], r["status"], r["planned_status"], r["preflight_items_per_s"])
            for r in nm] == [("GaussianBlur", AX, "error", "planned", None),
                             ("RGBShift", PIL, "unsupported", "unsupported", None),
                             ("RGBShift", TV, "unsupported", "unsupported", None),
                             ("Rotate", KO, "early_stopped", "planned", 12.5)]
    assert nm[0]["reason"] == ERROR and nm[3]["reason"].startswith("preflight 12.5")


def test_a_duplicate_cell_fails_the_dbt_build(built: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy2(report_db_path(built), report_db_path(home))
    before = report_db_path(home).read_bytes()
    rows = augbench_rows()
    rows["augbench_cells"].append(dict(rows["augbench_cells"][0], median=1.0))  # rgb-micro/HorizontalFlip/ax again
    write_warehouse(home / "warehouse.duckdb", rows)
    with pytest.raises(ReportBuildError) as err:
        build_report_db(home)
    message = str(err.value)
    assert "unique_combination_stg_warehouse__augbench_cells" in message
    assert "config='rgb-micro', library='albumentationsx', transform='HorizontalFlip', n_rows=2" in message
    assert report_db_path(home).read_bytes() == before


def test_the_paper_report_tables_tags_and_bold(rendered: Any) -> None:
    md = rendered.markdown.read_text()
    assert "| Transform | AlbumentationsX | Kornia | Pillow | torchvision |" in md
    assert "| HorizontalFlip | 1,000 | 500 | 1,500 | **2,400**† |" in md  # fastest in bold, unstable marked
    assert "| Rotate | **800** | early-stop | 200 | 400 |" in md
    assert "| GaussianBlur | error | **600** | 100 | 300 |" in md
    assert "| RGBShift | **900** | 450 | unsupported | unsupported |" in md
    assert "| Equalize | **700** | — | 350 | **700** |" in md  # a tie: both bold; a missing cell: —
    assert "| Solarize |  |  | **5,000** |  |" in md
    assert "| Resize | 50.0 | **100** |" in md
    # speedups vs the reference, with the mart's geometric mean
    assert "| Transform | Kornia / AlbumentationsX | Pillow / AlbumentationsX | torchvision / AlbumentationsX |" in md
    assert "| HorizontalFlip | 0.50× | 1.50× | 2.40× \\[2.20-2.60\\] |" in md  # with its bootstrap interval
    assert f"| **geometric mean** | 0.50× (n=2) | {(1.5 * 0.25 * 0.5) ** (1 / 3):.2f}× (n=3) | 1.06× (n=3) |" in md
    # coverage, winners and the not-measured list with reasons
    assert "| Kornia | 5 | 3 | 1 | 0 | 0 | 1 | 0 | 60% | 500 |" in md
    assert "| 1 | AlbumentationsX | 3 | 0 | 4 | 1.00× |" in md
    assert "| Kornia | Rotate | early-stop | preflight 12.5 items/s is below the floor | 12.5 |" in md
    assert "| AlbumentationsX | GaussianBlur | error | boom &lt;b&gt;&amp;amp; \\| pipe | — |" in md
    assert md.index("## Config 9ch-micro") < md.index("## Config rgb-micro") < md.index("## Config video-micro")
    assert "| Config | Media | Mode | Device |" in md and "| rgb-micro | rgb | micro | cpu | 6 | 4 | 16/21 |" in md
    for name in ("bars-rgb-micro.png", "speedup-rgb-micro.png", "bars-video-micro.png", "coverage_vs_throughput.png"):
        assert f"]({name})" in md
    assert (rendered.configs, rendered.cells, rendered.ok_cells, rendered.not_measured) == (3, 26, 18, 4)


def test_the_paper_report_states_method_harness_cost_busy_cells_and_agreement(rendered: Any) -> None:
    """The method note, the materialization rule's share per library (only cells that carry it), the busy
    cells named in the config intro, and for the RGB micro CPU config the agreement with the published table
    (ratios to AlbumentationsX on HorizontalFlip, Rotate and Equalize, compared with the committed CSV)."""
    from bench_assets.augbench import agreement

    md = rendered.markdown.read_text()
    assert "Method: each library's output is finished as a C-contiguous buffer inside the timer" in md
    assert "### What the harness added" in md
    assert "| AlbumentationsX | 1 | 1 | 3.6% | 3.6% | none |" in md
    assert "| torchvision | 1 | 0 | 0.1% | 0.1% | none |" in md
    assert "MEASURED WHILE THE MACHINE WAS BUSY (load above the thread budget): 1 cell(s), torchvision Rotate" in md
    ours = {(lib, t): rate for (c, t, lib), (status, rate, _) in CELLS.items()
            if c == "rgb-micro" and status == "ok"}
    expected = agreement.compare(ours)
    assert "### Agreement with the published table" in md and expected.pairs
    tv = next(x for x in expected.libraries if x.library == TV)
    assert f"| torchvision | {tv.pairs} |" in md
    assert md.count("### Agreement with the published table") == 1  # the RGB micro CPU config only


def test_transforms_the_equivalence_audit_flags_are_marked_not_like_for_like() -> None:
    """A transform the committed audit flags for the config's media gets ≠ in the throughput table and a row,
    with the audit's reason, under "Not like for like"; an unflagged one is left alone."""
    from bench_assets.augbench.equivalence import flagged_transforms
    from bench_assets.augbench.paper_report import _Config, not_equivalent_table, paper_table

    flagged = sorted(flagged_transforms("rgb"))
    assert "Brightness" in flagged and "HorizontalFlip" not in flagged

    def row(t: str, lib: str, rate: float) -> dict[str, Any]:
        return {"transform": t, "library": lib, "status": "ok", "items_per_s": rate, "is_fastest": False,
                "unstable": False, "media": "rgb", "mode": "micro", "device": "cpu"}

    cfg = _Config("c", [row("Brightness", AX, 3000.0), row("Brightness", KO, 900.0),
                        row("HorizontalFlip", AX, 9000.0)], [], [], [])
    names = {r[0].text: r[0].suffix for r in paper_table(cfg).rows}
    assert names == {"Brightness": " ≠", "HorizontalFlip": ""}
    table = not_equivalent_table(cfg)
    assert table is not None and [r[0].text for r in table.rows] == ["Brightness"]
    assert "kornia" in table.rows[0][1].text.lower()


def test_the_paper_report_plots_html_and_summary(rendered: Any, built: Path, tmp_path: Path) -> None:
    out = rendered.out_dir
    assert set(rendered.images) == {"coverage", "bars:rgb-micro", "speedup:rgb-micro", "bars:video-micro",
                                    "speedup:video-micro"}  # 9ch-micro has nothing to plot
    for path in rendered.images.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5_000
    assert not (out / "bars-gone.png").exists() and (out / "keep.png").exists()  # stale plot removed, others kept

    page = rendered.html.read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the hostile version
    assert "boom &lt;b&gt;&amp;amp; | pipe" in page
    assert "<td class=\"num\"><strong>2,400</strong>†</td>" in page
    assert page.count('<img alt="') == len(rendered.images) and page.count('src="data:image/png;base64,') == 5
    assert 'src="http' not in page and "default-src 'none'" in page

    summary = rendered.summary_md
    assert len(summary.encode()) < 300_000 and "data:image/png;base64," in summary
    assert "Config rgb-micro" in summary and "| HorizontalFlip | 1,000 | 500 | 1,500 | **2,400**† |" in summary

    again = render_paper_report(report_db_path(built), tmp_path / "again")  # deterministic, byte for byte
    assert again.summary_md == summary
    for name in ("paper.md", "index.html", *(p.name for p in rendered.images.values())):
        assert (again.out_dir / name).read_bytes() == (out / name).read_bytes(), name


def _copy_marts(src: Path, dst: Path, edit: str | None = None, where: str = "") -> None:
    with duckdb.connect(str(dst)) as con:
        con.execute(f"ATTACH '{src}' AS src (READ_ONLY)")
        for t in ("augbench_paper_table", "augbench_coverage", "augbench_winners", "augbench_not_measured"):
            con.execute(f"CREATE TABLE main.{t} AS SELECT * FROM src.main.{t} {where}")
        if edit:
            con.execute(edit)


def test_empty_marts_say_no_results_and_a_missing_mart_or_column_is_named(built: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.duckdb"
    _copy_marts(report_db_path(built), empty, where="WHERE false")
    out = render_paper_report(empty, tmp_path / "out")
    assert "No augbench results yet" in out.markdown.read_text() and "No augbench results yet" in out.summary_md
    assert out.images == {} and not list((tmp_path / "out").glob("*.png")) and out.configs == 0

    no_column = tmp_path / "no_column.duckdb"
    _copy_marts(report_db_path(built), no_column, "ALTER TABLE augbench_winners DROP COLUMN uncontested_wins")
    with pytest.raises(PaperReportError, match=r"table augbench_winners lacks column\(s\) uncontested_wins"):
        render_paper_report(no_column, tmp_path / "out")
    no_mart = tmp_path / "no_mart.duckdb"
    _copy_marts(report_db_path(built), no_mart, "DROP TABLE augbench_coverage")
    with pytest.raises(PaperReportError, match="table\\(s\\) missing from schema main: augbench_coverage"):
        render_paper_report(no_mart, tmp_path / "out")


def test_the_paper_page_is_a_page_of_report_rendered(built: Path) -> None:
    """augbench hands the report a page like rf100vl does: `report/rendered` depends on its marts (so
    `marts_fresh` covers them), renders it into BENCH_HOME/report/augbench/ and shows it under prefixed keys."""
    import dagster as dg

    import definitions
    from bench_assets.augbench.definitions import contribution
    from bench_assets.report.report_assets import rendered_asset
    from resources.bench_home import BenchHome

    marts = {dg.AssetKey(["report", m]) for m in ("augbench_paper_table", "augbench_coverage", "augbench_winners",
                                                  "augbench_not_measured")}
    graph = definitions.defs.resolve_asset_graph()
    rendered_key = dg.AssetKey(["report", "rendered"])
    assert marts <= graph.get(rendered_key).parent_keys
    assert not any(k.path[0] == "augbench" and "report" in k.path[-1] for k in graph.get_all_asset_keys())
    asset = rendered_asset([contribution], lambda: [])
    result = dg.materialize([asset], resources={"home": BenchHome(root=str(built))})
    assert result.success
    [mat] = [m.materialization for m in result.get_asset_materialization_events()]
    meta = {k: v.value for k, v in mat.metadata.items()}
    counts = (meta["augbench_configs"], meta["augbench_cells"], meta["augbench_ok_cells"],
              meta["augbench_not_measured"])
    assert counts == (3, 26, 18, 4)
    assert meta["augbench_html"] == str(built / "report" / "augbench" / "index.html")
    assert "**2,400**†" in meta["augbench_report"]
    assert meta["augbench_full_report"].count("data:image/png;base64,") == len(meta["augbench_plots"]) == 5
    assert not any(k in meta for k in ("report", "html", "configs"))  # every page key carries its page's name
    assert (built / "report" / "augbench" / "paper.md").is_file()


def test_the_smoke_config_end_to_end(bench_home: Path) -> None:
    """`bench augbench run` on the real smoke config: measured cells, loaded, built by dbt, rendered.

    `--no-report`, then the loader, the dbt build and the render called here: the same steps report_job runs,
    without its Dagster run and the RF100-VL page (about 15 s less); the page's place in `report/rendered` is
    tested above.
    """
    from bench_assets.platform.warehouse import rebuild_warehouse

    r = run_bench("augbench", "run", "--config", "configs/smoke/rgb-micro-smoke.yaml", "--no-report",
                  home=bench_home, timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    counts = rebuild_warehouse(bench_home, bench_home / "warehouse.duckdb", ALL_TABLES)
    assert (counts["augbench_cells"], counts["augbench_planned"]) == (24, 24)
    build_report_db(bench_home)
    rows = query(report_db_path(bench_home), "SELECT * FROM augbench_paper_table")
    libraries, transforms = {AX, TV, KO, PIL}, {"HorizontalFlip", "Rotate", "GaussianBlur", "Brightness",
                                                "RGBShift", "Equalize"}
    assert {(r["transform"], r["library"]) for r in rows} == {(t, lib) for t in transforms for lib in libraries}
    by = {(r["transform"], r["library"]): r for r in rows}
    assert by[("RGBShift", TV)]["status"] == by[("RGBShift", PIL)]["status"] == "unsupported"
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 22 and all(r["items_per_s"] > 0 and r["runs"] == 3 for r in ok)
    for t in transforms:  # exactly one fastest per transform (a tie of medians is not expected here)
        cells = [r for r in ok if r["transform"] == t]
        best = max(cells, key=lambda r: r["items_per_s"])
        assert [r["library"] for r in cells if r["is_fastest"]] == [best["library"]]
        ref = by[(t, AX)]["items_per_s"]
        assert all(math.isclose(r["speedup_vs_albumentationsx"], r["items_per_s"] / ref) for r in cells)
    cov = query(report_db_path(bench_home), "SELECT * FROM augbench_coverage ORDER BY library")
    assert [(r["library"], r["planned"], r["ok"], r["unsupported"], r["missing"]) for r in cov] == [
        (AX, 6, 6, 0, 0), (KO, 6, 6, 0, 0), (PIL, 6, 5, 1, 0), (TV, 6, 5, 1, 0)]

    out = render_paper_report(report_db_path(bench_home), bench_home / "report" / "augbench")
    md = out.markdown.read_text()
    assert "## Config rgb-micro-smoke" in md and "| Transform | AlbumentationsX | Kornia | Pillow | torchvision |" in md
    assert md.count("**") >= 2 * len(transforms) and "| unsupported | unsupported |" in md
    assert set(out.images) == {"coverage", "bars:rgb-micro-smoke", "speedup:rgb-micro-smoke"}
    assert (out.configs, out.cells, out.ok_cells, out.not_measured) == (1, 24, 22, 2)
