"""The augbench paper page of `report/rendered`: paper.md, a self-contained index.html and PNG plots, rendered
from the dbt marts on the platform's page frame (bench_assets/platform/report_pages.py).

Pure (no Dagster). duckdb and matplotlib are imported inside functions: the code location imports this module.
Reads `augbench_paper_table`, `augbench_coverage`, `augbench_winners` and `augbench_not_measured` from
report.duckdb (read-only) and writes into `out_dir` (BENCH_HOME/report/augbench/), every file atomically, PNGs
first and the pages last, so a page never names a plot that is not there. Output is deterministic for the same
marts: rows in a fixed order, no timestamps, PNGs saved without the Software tag.

Per config (one row family of the paper): the paper table (transform rows x library columns, median items/s, the
fastest in bold, unstable figures marked, cells without a figure as short tags), speedups over the reference
library, coverage and winner counts per library, and the cells not measured with their reasons. Plots: grouped
bars per config (log items/s), a speedup heatmap per config (log2), and coverage vs throughput per library.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_assets.augbench.transform_specs import REFERENCE_LIBRARY
from bench_assets.platform.document import (
    Block,
    Cell,
    Heading,
    Image,
    Paragraph,
    Table,
    blank_figure,
    figure_png,
    md_literal,
    plot_context,
    table,
    to_html,
    to_markdown,
)
from bench_assets.platform.report_pages import (
    MartSchemaError,
    PageInputs,
    RenderedPage,
    read_tables,
    summary_with_plot,
    write_page,
)
from bench_assets.platform.report_pages import number as _num

REFERENCE = REFERENCE_LIBRARY  # the dbt var augbench_reference_library's default: speedups are relative to it
SUMMARY_ROWS = 10  # transforms of the first config shown in the summary
REASON_MAX_CHARS = 300
DPI = 100
UNSTABLE_MARK = "†"
TAGS = {"early_stopped": "early-stop", "unsupported": "unsupported", "error": "error", "missing": "—"}
DISPLAY = {"albumentationsx": "AlbumentationsX", "torchvision": "torchvision", "kornia": "Kornia",
           "pillow": "Pillow", "dali": "DALI"}
COVERAGE_PLOT = "coverage_vs_throughput.png"
TITLE = "augbench: augmentation speed benchmark"
READER = "bench_assets/augbench/paper_report.py"  # named in errors: the module that reads the marts
FOLDER = "augbench"  # the page's folder in BENCH_HOME/report/
_OUR_PNG = re.compile(r"^(bars|speedup)-.+\.png$|^coverage_vs_throughput\.png$")
FORMAT_NOTE = (f"Throughput is the median items/s over the timed passes pooled across the repeats of a config's "
               f"current settings; the fastest measured library of each transform is in **bold**; "
               f"{UNSTABLE_MARK} marks an unstable figure (CV above 0.15). Cells without a figure: early-stop (the "
               f"preflight pass was too slow to time), unsupported (no equivalent in the library), error (the "
               f"library failed), — (planned, not run yet). Speedups are items/s over AlbumentationsX's on the same "
               f"transform, when both were measured.")

# Columns read from each mart, by name, and the order rows are read in (output never depends on scan order).
MARTS: dict[str, tuple[tuple[str, ...], str]] = {
    "augbench_paper_table": (("config", "media", "mode", "device", "transform", "library", "status", "reason",
                              "items_per_s", "ci95_low", "ci95_high", "cv", "unstable", "repeats", "runs",
                              "preflight_items_per_s", "speedup_vs_albumentationsx", "is_fastest", "hardware",
                              "library_version", "materialize_us", "materialize_copied", "materialize_share",
                              "busy_repeats", "clock_moved_repeats", "speedup_ci95_low", "speedup_ci95_high"),
                             "config, transform, library"),
    "augbench_coverage": (("config", "library", "planned", "ok", "early_stopped", "unsupported", "error", "missing",
                           "unplanned", "measured_share", "median_items_per_s"), "config, library"),
    "augbench_winners": (("config", "library", "wins", "uncontested_wins", "transforms_compared",
                          "transforms_vs_reference", "geomean_speedup_vs_albumentationsx", "rank"),
                         "config, library"),
    "augbench_not_measured": (("config", "transform", "library", "status", "reason", "planned_status",
                               "preflight_items_per_s"), "config, status, transform, library"),
}

Row = dict[str, Any]


class PaperReportError(MartSchemaError):
    """report.duckdb lacks a mart or a column the paper report reads."""


@dataclass(frozen=True)
class PaperReport:
    out_dir: Path
    markdown: Path  # paper.md
    html: Path  # index.html
    images: dict[str, Path]  # plot key ("bars:<config>", "speedup:<config>", "coverage") -> PNG written this time
    summary_md: str  # compact markdown for Dagster metadata (< SUMMARY_MAX_BYTES)
    configs: int
    cells: int  # rows of the paper table (planned or measured)
    ok_cells: int
    not_measured: int  # early-stopped, unsupported and error cells


# ---------------------------------------------------------------------------------------------- reading the marts


def read_marts(report_db: Path) -> dict[str, list[Row]]:
    """Every mart's rows, columns by name, in a fixed order (none while dbt has built none of them: the page then
    says there are no results yet); a missing mart or column fails naming it."""
    return read_tables(Path(report_db), MARTS, READER, PaperReportError)[0]


# ---------------------------------------------------------------------------------------------- the data, per config


@dataclass
class _Config:
    name: str
    cells: list[Row]  # paper table rows
    coverage: list[Row]
    winners: list[Row]
    not_measured: list[Row]

    def __post_init__(self) -> None:
        self._index = {(r["transform"], r["library"]): r for r in self.cells}

    @property
    def libraries(self) -> list[str]:
        libs = {r["library"] for r in self.cells}
        return sorted(libs, key=lambda lib: (lib != REFERENCE, lib))  # the reference first

    @property
    def transforms(self) -> list[str]:
        return sorted({r["transform"] for r in self.cells})

    def cell(self, transform: str, library: str) -> Row | None:
        return self._index.get((transform, library))

    def facts(self) -> dict[str, Any]:
        first = next((r for r in self.cells if r["media"] is not None), {})
        return {"media": first.get("media"), "mode": first.get("mode"), "device": first.get("device")}

    @property
    def has_results(self) -> bool:
        return any(r["status"] != "missing" for r in self.cells)

    @property
    def speedups(self) -> list[Row]:
        return [r for r in self.cells if _num(r["speedup_vs_albumentationsx"]) is not None
                and r["library"] != REFERENCE]


@dataclass
class _PaperData:
    marts: dict[str, list[Row]]
    configs: list[_Config] = field(default_factory=list)
    images: dict[str, bytes] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # plot key -> file name

    def __post_init__(self) -> None:
        names = sorted({r["config"] for t in MARTS for r in self.marts[t]})
        by = {t: {n: [] for n in names} for t in MARTS}
        for t in MARTS:
            for r in self.marts[t]:
                by[t][r["config"]].append(r)
        self.configs = [_Config(n, by["augbench_paper_table"][n], by["augbench_coverage"][n],
                                by["augbench_winners"][n], by["augbench_not_measured"][n]) for n in names]
        taken: set[str] = set()
        for c in self.configs:
            stem = re.sub(r"[^A-Za-z0-9_.-]", "_", c.name) or "config"
            while stem in taken:
                stem += "_"
            taken.add(stem)
            self.files[f"bars:{c.name}"] = f"bars-{stem}.png"
            self.files[f"speedup:{c.name}"] = f"speedup-{stem}.png"
        self.files["coverage"] = COVERAGE_PLOT

    @property
    def cells(self) -> list[Row]:
        return self.marts["augbench_paper_table"]

    def count(self, status: str) -> int:
        return sum(r["status"] == status for r in self.cells)

    @property
    def libraries(self) -> list[str]:
        return sorted({r["library"] for r in self.cells}, key=lambda lib: (lib != REFERENCE, lib))


# ---------------------------------------------------------------------------------------------- formatting


def lib_name(library: str) -> str:
    return DISPLAY.get(library, library)


def fmt_rate(x: Any) -> str:
    v = _num(x)
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def fmt_speedup(x: Any) -> str:
    v = _num(x)
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:.0f}×"
    return f"{v:.2f}×" if v >= 0.01 else "<0.01×"


def fmt_share(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{100 * v:.0f}%"


def _pct1(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{100 * v:.1f}%"


def _count(x: Any) -> str:
    return "—" if x is None else str(int(x))


def _short(text: Any, limit: int = REASON_MAX_CHARS) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------- the document
# Both pages render one list of blocks (bench_assets/platform/document.py), so paper.md and index.html never
# disagree on content. paper.md shows names, versions and reasons literally: every markdown special is escaped.


def _markdown(blocks: Sequence[Block], data: _PaperData) -> str:
    return to_markdown(blocks, data.files, escape=md_literal)


def _paper_cell(r: Row | None) -> Cell:
    if r is None:
        return Cell("")  # the grid has no such cell (not planned, no result)
    if r["status"] != "ok" or _num(r["items_per_s"]) is None:
        return Cell(TAGS.get(r["status"], str(r["status"])))
    return Cell(fmt_rate(r["items_per_s"]), bold=bool(r["is_fastest"]), suffix=UNSTABLE_MARK if r["unstable"] else "")


NOT_EQUIVALENT_MARK = " ≠"
METHOD_NOTE = ("Method: each library's output is finished as a C-contiguous buffer inside the timer (the "
               "materialization rule; its own cost is measured per cell, below); media are real photos at the paper's "
               "native sizes unless a config sets `item_size`; micro cells run single-threaded, one warm-up then the "
               "timed passes; a config run with `--rounds R` measures every library R times in fresh processes, "
               "libraries in a seeded random order per round, and speedups carry two-level bootstrap 95% intervals "
               "(repeats, then passes). Details: `docs/augbench.md`.")


def _hardware_text(stated: Any) -> str:
    """The published run's machine in a few words (its platform string, CPU count)."""
    if isinstance(stated, dict) and stated.get("platform"):
        return f"{stated['platform'].split(' (')[0]}, {stated.get('cpu_count', '?')} CPUs"
    return "its own hardware"


def agreement_blocks(cfg: _Config) -> list[Block]:
    """For an RGB micro CPU config: how our speed ratios agree with the published paper table (Spearman per
    library, same-winner share, >3x outliers), from this config's measured medians."""
    from bench_assets.augbench import agreement

    f = cfg.facts()
    if (f["media"], f["mode"], f["device"]) != ("rgb", "micro", "cpu"):
        return []
    ours = {(r["library"], r["transform"]): float(r["items_per_s"]) for r in cfg.cells
            if r["status"] == "ok" and _num(r["items_per_s"])}
    result = agreement.compare(ours)
    if not result.pairs:
        return []
    meta = agreement.load_meta()
    rows = [[lib_name(x.library), _count(x.pairs), "—" if x.spearman is None else f"{x.spearman:.2f}",
             _pct1(x.same_winner)] for x in result.libraries if x.pairs]
    rows.append([Cell("all", bold=True), _count(len(result.pairs)), "", _pct1(result.same_winner)])
    outliers = sorted(result.outliers, key=lambda p: -p.factor)
    verdict = "meets" if result.passes else "misses"
    blocks: list[Block] = [
        Heading("Agreement with the published table", 3),
        Paragraph(f"Speed of each library relative to {lib_name(REFERENCE)} on the same transform, ours against the "
                  f"published RGB micro CPU table ({meta.get('repository', '?')} at "
                  f"{str(meta.get('commit', '?'))[:7]}, {_hardware_text(meta.get('hardware_stated'))}). "
                  f"Goal: Spearman >= {agreement.SPEARMAN_GOAL:g} per library, same winner on >= "
                  f"{agreement.SAME_WINNER_GOAL:.0%} of pairs, every pair off by more than "
                  f"{agreement.OUTLIER_FACTOR:g}x explained; this config {verdict} it "
                  f"({len(outliers)} outliers, {len(result.unexplained)} unexplained)."),
        table(["Library", "Transforms", "Spearman", "Same winner"], rows, numeric=[1, 2, 3])]
    if outliers:
        blocks.append(table(["Transform", "Library", "Ours / AlbumentationsX", "Published", "Off by", "Why"],
                            [[p.transform, lib_name(p.library), fmt_speedup(p.ratio_ours),
                              fmt_speedup(p.ratio_published), f"{p.factor:.1f}x",
                              _short(p.explanation, 200) or "UNEXPLAINED"] for p in outliers],
                            numeric=[2, 3, 4]))
    return blocks


def flagged(cfg: _Config) -> dict[str, str]:
    """{transform: why} of this config's transforms that the equivalence audit flags (libraries computing
    different things: docs/augbench_equivalence.md); empty for a media the audit does not know."""
    from bench_assets.augbench.equivalence import flagged_transforms

    media = cfg.facts()["media"]
    if media not in ("rgb", "9ch", "video"):
        return {}
    return {t: why for t, why in flagged_transforms(media).items() if t in cfg.transforms}


def paper_table(cfg: _Config, transforms: Sequence[str] | None = None) -> Table:
    libs = cfg.libraries
    marks = flagged(cfg)
    rows = [[Cell(t, suffix=NOT_EQUIVALENT_MARK if t in marks else ""),
             *(_paper_cell(cfg.cell(t, lib)) for lib in libs)] for t in (transforms or cfg.transforms)]
    return table(["Transform", *(lib_name(lib) for lib in libs)], rows, numeric=range(1, len(libs) + 1))


def not_equivalent_table(cfg: _Config) -> Table | None:
    marks = flagged(cfg)
    if not marks:
        return None
    return table(["Transform", "What differs (equivalence audit)"],
                 [[t, _short(why, 300)] for t, why in sorted(marks.items())])


def _speedup_with_ci(c: Row) -> str:
    """"1.23x [1.10-1.35]": the speedup and its bootstrap 95% interval when one was computed."""
    text = fmt_speedup(c["speedup_vs_albumentationsx"])
    low, high = _num(c["speedup_ci95_low"]), _num(c["speedup_ci95_high"])
    if c["speedup_vs_albumentationsx"] is None or low is None or high is None:
        return text
    return f"{text} [{low:.2f}-{high:.2f}]"


def speedup_table(cfg: _Config) -> Table | Paragraph:
    others = [lib for lib in cfg.libraries if lib != REFERENCE]
    if REFERENCE not in cfg.libraries or not others:
        return Paragraph(f"No speedups: {lib_name(REFERENCE)} and another library are not both in this config.")
    rows: list[list[str | Cell]] = []
    for t in cfg.transforms:
        cells = [cfg.cell(t, lib) for lib in others]
        rows.append([t, *(_speedup_with_ci(c) if c else "" for c in cells)])
    wins = {r["library"]: r for r in cfg.winners}
    rows.append([Cell("geometric mean", bold=True),
                 *(Cell(fmt_speedup(wins[lib]["geomean_speedup_vs_albumentationsx"]) if lib in wins else "—",
                        suffix=f" (n={_count(wins[lib]['transforms_vs_reference'])})" if lib in wins else "")
                   for lib in others)])
    return table(["Transform", *(f"{lib_name(lib)} / {lib_name(REFERENCE)}" for lib in others)], rows,
                 numeric=range(1, len(others) + 1))


def coverage_table(rows: list[Row]) -> Table:
    return table(["Library", "Planned", "ok", "early-stop", "unsupported", "error", "not run", "unplanned",
                  "Measured", "Median items/s (ok cells)"],
                 [[lib_name(r["library"]), _count(r["planned"]), _count(r["ok"]), _count(r["early_stopped"]),
                   _count(r["unsupported"]), _count(r["error"]), _count(r["missing"]), _count(r["unplanned"]),
                   fmt_share(r["measured_share"]), fmt_rate(r["median_items_per_s"])]
                  for r in sorted(rows, key=lambda r: (r["library"] != REFERENCE, r["library"]))],
                 numeric=range(1, 10))


def winners_table(rows: list[Row]) -> Table:
    return table(["Rank", "Library", "Wins", "of which uncontested", "Transforms measured",
                  f"Geo-mean speedup vs {lib_name(REFERENCE)}"],
                 [[_count(r["rank"]), lib_name(r["library"]), _count(r["wins"]), _count(r["uncontested_wins"]),
                   _count(r["transforms_compared"]), fmt_speedup(r["geomean_speedup_vs_albumentationsx"])]
                  for r in sorted(rows, key=lambda r: (r["rank"], r["library"]))],
                 numeric=[0, 2, 3, 4, 5])


def not_measured_table(rows: list[Row]) -> Table:
    return table(["Library", "Transform", "Status", "Reason", "Preflight items/s"],
                 [[lib_name(r["library"]), r["transform"], TAGS.get(r["status"], r["status"]),
                   _short(r["reason"]) or "(no reason recorded)", fmt_rate(r["preflight_items_per_s"])]
                  for r in sorted(rows, key=lambda r: (r["library"], r["transform"], r["status"]))],
                 numeric=[4])


HARNESS_NOTE = ("Every output is finished as a C-contiguous buffer inside the timer (the materialization rule, "
                "`docs/augbench.md`): a view is copied with the fastest routine for its layout (OpenCV's flip for a "
                "reversed view), a contiguous output is left alone. The rule's own cost is timed apart on each "
                "cell's outputs: per library, the median and largest share of a cell's time per item it accounts "
                "for, and the cells where it is above 5%.")
HARNESS_SHARE_SHOWN = 0.05


def harness_cost_table(cfg: _Config) -> Table | None:
    """Per library: cells with a measured materialization cost, how many outputs were copied, the median and
    largest share of a cell's time the rule took, and the cells above HARNESS_SHARE_SHOWN. None when no cell of
    the config carries the measurement (DataLoader rows, results older than the measurement)."""
    measured = [r for r in cfg.cells if r["status"] == "ok" and r["materialize_share"] is not None]
    if not measured:
        return None
    rows = []
    for lib in sorted({r["library"] for r in measured}, key=lambda x: (x != REFERENCE, x)):
        mine = [r for r in measured if r["library"] == lib]
        shares = sorted(float(r["materialize_share"]) for r in mine)
        copied = sum(1 for r in mine if (r["materialize_copied"] or 0) > 0)
        high = sorted((r for r in mine if float(r["materialize_share"]) > HARNESS_SHARE_SHOWN),
                      key=lambda r: -float(r["materialize_share"]))
        rows.append([lib_name(lib), _count(len(mine)), _count(copied), _pct1(shares[len(shares) // 2]),
                     _pct1(shares[-1]),
                     ", ".join(f"{r['transform']} {_pct1(r['materialize_share'])} "
                               f"({float(r['materialize_us']):.1f} us)" for r in high) or "none"])
    return table(["Library", "Cells", "Cells with copied outputs", "Median share", "Largest share",
                  f"Cells above {HARNESS_SHARE_SHOWN:.0%}"], rows, numeric=[1, 2, 3, 4])


def _config_intro(cfg: _Config) -> str:
    f = cfg.facts()
    parts = [f"media {f['media'] or '?'}, mode {f['mode'] or '?'}, device {f['device'] or '?'}",
             f"{len(cfg.transforms)} transforms x {len(cfg.libraries)} libraries"]
    hardware = sorted({r["hardware"] for r in cfg.cells if r["hardware"]})
    if hardware:
        parts.append("hardware: " + "; ".join(hardware))
    versions = {}
    for r in cfg.cells:
        if r["library_version"]:
            versions.setdefault(r["library"], set()).add(r["library_version"])
    if versions:
        parts.append("versions: " + ", ".join(f"{lib_name(lib)} {'/'.join(sorted(v))}"
                                              for lib, v in sorted(versions.items())))
    repeats = sorted({int(r["repeats"]) for r in cfg.cells if r["status"] == "ok" and r["repeats"]})
    if repeats:
        parts.append("repeats pooled: " + (str(repeats[0]) if len(repeats) == 1 else f"{repeats[0]}-{repeats[-1]}"))
    busy = sorted(f"{lib_name(r['library'])} {r['transform']}" for r in cfg.cells if r["busy_repeats"])
    if busy:
        parts.append(f"MEASURED WHILE THE MACHINE WAS BUSY (load above the thread budget): {len(busy)} cell(s), "
                     + ", ".join(busy[:8]) + (" ..." if len(busy) > 8 else ""))
    moved = sum(1 for r in cfg.cells if r["clock_moved_repeats"])
    if moved:
        parts.append(f"CPU clock moved during {moved} cell(s)")
    return "; ".join(parts) + "."


def _headline(data: _PaperData) -> str:
    counts = ", ".join(f"{data.count(s)} {TAGS[s] if s != 'missing' else 'not run'}"
                       for s in ("early_stopped", "unsupported", "error", "missing") if data.count(s))
    return (f"{len(data.configs)} config(s), {len(data.cells)} cells: {data.count('ok')} measured"
            + (f", {counts}" if counts else "") + ".")


def _overview(data: _PaperData) -> Table:
    rows = []
    for c in data.configs:
        f = c.facts()
        ok = sum(r["status"] == "ok" for r in c.cells)
        top = [r for r in c.winners if r["rank"] == 1 and r["wins"]]
        rows.append([c.name, f["media"] or "—", f["mode"] or "—", f["device"] or "—", str(len(c.transforms)),
                     str(len(c.libraries)), f"{ok}/{len(c.cells)}",
                     ", ".join(f"{lib_name(r['library'])} ({r['wins']})" for r in top) or "—"])
    return table(["Config", "Media", "Mode", "Device", "Transforms", "Libraries", "Measured cells",
                  "Most wins"], rows, numeric=[4, 5, 6])


def paper_blocks(data: _PaperData) -> list[Block]:
    """The whole paper report: the overview, then every config's tables and plots."""
    blocks: list[Block] = [Heading("Augmentation speed benchmark (augbench)", 1)]
    if not data.cells or not any(c.has_results for c in data.configs):
        return blocks + _no_results_blocks(data)
    blocks += [Paragraph(FORMAT_NOTE, markup=True), Paragraph(METHOD_NOTE, markup=True), Paragraph(_headline(data)),
               Heading("Configs"), _overview(data)]
    if "coverage" in data.images:
        blocks.append(Image("coverage", "Coverage vs throughput: share of planned cells measured vs median items/s "
                                        "of the measured cells, per library and config"))
    for c in data.configs:
        blocks += _config_blocks(data, c)
    return blocks


def _no_results_blocks(data: _PaperData) -> list[Block]:
    planned = (f" {len(data.cells)} cells are planned in {len(data.configs)} config(s), none run yet."
               if data.cells else "")
    blocks: list[Block] = [
        Heading("No augbench results yet"),
        Paragraph(f"No augbench results yet: the marts hold no measured cell.{planned} Run a config with "
                  f"`bench augbench run --config CONFIG.yaml`, then rebuild the report.", markup=True)]
    for c in data.configs:
        blocks += [Heading(f"Coverage: {c.name}", 3), coverage_table(c.coverage)]
    return blocks


def _config_blocks(data: _PaperData, cfg: _Config) -> list[Block]:
    blocks: list[Block] = [Heading(f"Config {cfg.name}"), Paragraph(_config_intro(cfg)),
                           Heading("Throughput (items/s)", 3), paper_table(cfg)]
    if f"bars:{cfg.name}" in data.images:
        blocks.append(Image(f"bars:{cfg.name}", f"{cfg.name}: items/s per transform and library (log scale)"))
    blocks += [Heading(f"Speedup vs {lib_name(REFERENCE)}", 3), speedup_table(cfg)]
    if f"speedup:{cfg.name}" in data.images:
        blocks.append(Image(f"speedup:{cfg.name}", f"{cfg.name}: log2 speedup vs {lib_name(REFERENCE)} "
                                                   f"(red: faster, blue: slower)"))
    anchor = agreement_blocks(cfg)
    blocks += anchor
    unequal = not_equivalent_table(cfg)
    if unequal is not None:
        blocks += [Heading("Not like for like", 3),
                   Paragraph(f"Transforms marked{NOT_EQUIVALENT_MARK} in the throughput table: the equivalence audit "
                             "(`docs/augbench_equivalence.md`) found their libraries computing different things on "
                             "the same input, so their speeds are not a like-for-like comparison.", markup=True),
                   unequal]
    harness = harness_cost_table(cfg)
    if harness is not None:
        blocks += [Heading("What the harness added", 3), Paragraph(HARNESS_NOTE, markup=True), harness]
    return blocks + [Heading("Coverage", 3),
                     coverage_table(cfg.coverage) if cfg.coverage else Paragraph("No coverage rows."),
                     Heading("Winners", 3),
                     winners_table(cfg.winners) if cfg.winners else Paragraph("No winners."),
                     Heading("Not measured", 3),
                     not_measured_table(cfg.not_measured) if cfg.not_measured
                     else Paragraph("Every cell with a result was measured.")]


# ---------------------------------------------------------------------------------------------- plots


def _tick(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    return f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}"


def _log_axis(axis: Any) -> None:
    """Plain tick labels on a log axis (mathtext is off): decades always, 2 and 5 (or every minor tick) when the
    axis spans few decades."""
    from matplotlib.ticker import FuncFormatter

    def minor(v: float, _: Any) -> str:
        lo, hi = sorted(axis.get_view_interval())
        decades = math.log10(hi / lo) if lo > 0 and v > 0 else 99.0
        lead = round(v / 10 ** math.floor(math.log10(v) + 1e-9)) if v > 0 else 0
        return _tick(v) if decades <= 1.2 or (decades <= 2.5 and lead in (2, 5)) else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v)))
    axis.set_minor_formatter(FuncFormatter(minor))


def _colours(libraries: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"] if len(libraries) <= 10 else colormaps["tab20"]
    return {lib: cmap(i % cmap.N) for i, lib in enumerate(libraries)}


def _library_bars(cfg: _Config, library: str, transforms: Sequence[str], offset: float
                  ) -> tuple[list[float], list[float], list[tuple[float, str]]]:
    """One library's bars (y, items/s) over `transforms`, shifted by `offset` in its group, and the (y, tag) of
    its cells without a figure."""
    ys, xs, tags = [], [], []
    for i, t in enumerate(transforms):
        y = i + offset
        r = cfg.cell(t, library)
        v = _num(r["items_per_s"]) if r and r["status"] == "ok" else None
        if v and v > 0:
            ys.append(y)
            xs.append(v)
        elif r is not None:
            tags.append((y, TAGS.get(r["status"], r["status"])))
    return ys, xs, tags


def plot_bars(data: _PaperData, cfg: _Config, transforms: Sequence[str] | None = None, dpi: int = DPI) -> bytes:
    """Horizontal grouped bars: one group per transform, one bar per library, log-scale items/s; a cell without
    a figure gets no bar and its tag at the axis."""
    transforms = list(transforms or cfg.transforms)
    libs = cfg.libraries
    colours = _colours(data.libraries)
    band = 0.8 / max(len(libs), 1)
    rates = [v for r in cfg.cells if r["transform"] in transforms
             if r["status"] == "ok" and (v := _num(r["items_per_s"])) and v > 0]
    low = 10 ** math.floor(math.log10(min(rates))) if rates else 1.0
    with plot_context():
        fig = blank_figure(9, min(60.0, 1.6 + len(transforms) * (0.1 + 0.11 * len(libs))))
        ax = fig.add_subplot()
        for j, lib in enumerate(libs):
            ys, xs, tags = _library_bars(cfg, lib, transforms, (j - (len(libs) - 1) / 2) * band)
            ax.barh(ys, xs, height=band * 0.9, left=0, color=colours[lib], label=lib_name(lib))
            for y, tag in tags:
                ax.text(low * 1.05, y, tag, va="center", fontsize=6, color="#777777")
        ax.set_xscale("log")
        ax.set_xlim(left=low)
        _log_axis(ax.xaxis)
        ax.set_yticks(range(len(transforms)), transforms)
        ax.set_ylim(len(transforms) - 0.5, -0.5)
        ax.set_xlabel("items/s (median, log scale)")
        ax.set_title(f"{cfg.name}: throughput per transform")
        ax.grid(axis="x", which="both", alpha=0.25)
        fig.legend(loc="outside right upper", fontsize=7)
        return figure_png(fig, dpi)


def _log2_speedups(cfg: _Config, transforms: Sequence[str], libraries: Sequence[str]) -> Any:
    """transform x library array of log2(speedup vs the reference); NaN where there is none."""
    import numpy as np

    grid = np.full((len(transforms), len(libraries)), np.nan)
    for i, t in enumerate(transforms):
        for j, lib in enumerate(libraries):
            r = cfg.cell(t, lib)
            v = _num(r["speedup_vs_albumentationsx"]) if r else None
            if v and v > 0:
                grid[i, j] = math.log2(v)
    return grid


def _speedup_label(r: Row | None, log2_speedup: float) -> str:
    """A heatmap cell's text: the speedup, else why there is none (its tag, or no reference figure)."""
    if math.isfinite(log2_speedup):
        return fmt_speedup(2 ** log2_speedup)
    if r is None:
        return ""
    return TAGS.get(r["status"], r["status"]) if r["status"] != "ok" else "no ref."


def _label_speedups(ax: Any, cfg: _Config, grid: Any, transforms: Sequence[str], libraries: Sequence[str],
                    span: float) -> None:
    import numpy as np

    for i, t in enumerate(transforms):
        for j, lib in enumerate(libraries):
            text = _speedup_label(cfg.cell(t, lib), grid[i, j])
            dark = np.isfinite(grid[i, j]) and abs(grid[i, j]) > 0.6 * span
            ax.text(j, i, text, ha="center", va="center", fontsize=6, color="white" if dark else "#222222")


def plot_speedup(data: _PaperData, cfg: _Config, dpi: int = DPI) -> bytes:
    """Heatmap transform x library of log2(speedup vs the reference); cells without a speedup are grey."""
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    others = [lib for lib in cfg.libraries if lib != REFERENCE]
    transforms = cfg.transforms
    grid = _log2_speedups(cfg, transforms, others)
    span = max(1.0, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0)
    cmap = colormaps["RdBu_r"].with_extremes(bad="#e0e0e0")
    with plot_context():
        fig = blank_figure(2.6 + 1.3 * len(others), min(60.0, 1.4 + 0.24 * len(transforms)))
        ax = fig.add_subplot()
        im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=TwoSlopeNorm(0.0, -span, span), aspect="auto",
                       interpolation="nearest")
        if grid.size <= 600:
            _label_speedups(ax, cfg, grid, transforms, others, span)
        ax.set_xticks(range(len(others)), [lib_name(lib) for lib in others])
        ax.set_yticks(range(len(transforms)), transforms)
        ax.set_title(f"{cfg.name}: speedup vs {lib_name(REFERENCE)}")
        fig.colorbar(im, ax=ax, label=f"log2(items/s / {lib_name(REFERENCE)} items/s)", shrink=0.8)
        return figure_png(fig, dpi)


def _point(r: Row) -> tuple[float, float] | None:
    """(share measured, median items/s) of a coverage row, when both are defined."""
    share, rate = _num(r["measured_share"]), _num(r["median_items_per_s"])
    return (share, rate) if share is not None and rate and rate > 0 else None


def _draw_coverage_panel(ax: Any, cfg: _Config, colours: dict[str, Any]) -> None:
    for r in sorted(cfg.coverage, key=lambda r: (r["library"] != REFERENCE, r["library"])):
        if not (point := _point(r)):
            continue
        share, rate = point
        ax.scatter([100 * share], [rate], s=40, color=colours[r["library"]], label=lib_name(r["library"]), zorder=3,
                   edgecolors="white", linewidths=0.5)
    ax.set_yscale("log")
    ax.margins(y=0.15)
    _log_axis(ax.yaxis)
    ax.set_xlim(-5, 105)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_title(cfg.name, fontsize=9)
    ax.set_xlabel("planned cells measured (%)")
    ax.set_ylabel("median items/s (ok cells)")
    ax.grid(alpha=0.3, which="both")


def plot_coverage(data: _PaperData, dpi: int = DPI) -> bytes:
    """Per config, one point per library: share of planned cells measured vs median items/s of its ok cells."""
    configs = [c for c in data.configs if any(_point(r) for r in c.coverage)]
    colours = _colours(data.libraries)
    ncols = min(3, len(configs))
    nrows = math.ceil(len(configs) / ncols)
    with plot_context():
        fig = blank_figure(3.6 * ncols + 1.6, 3.2 * nrows)
        axes = fig.subplots(nrows, ncols, squeeze=False)
        for k, ax in enumerate(axes.flat):
            if k >= len(configs):
                ax.set_axis_off()
                continue
            _draw_coverage_panel(ax, configs[k], colours)
        # One legend for every panel, below them: labels beside the points overlapped where libraries sit close
        # (the 9-channel config: several at 100% with similar rates).
        handles = {}
        for ax in axes.flat:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, handle)
        fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=min(6, len(handles)),
                   frameon=False)
        fig.suptitle("Coverage vs throughput per library")
        return figure_png(fig, dpi)


def _render_plots(data: _PaperData) -> dict[str, bytes]:
    images: dict[str, bytes] = {}
    if not any(c.has_results for c in data.configs):
        return images
    if any(_point(r) for c in data.configs for r in c.coverage):
        images["coverage"] = plot_coverage(data)
    for c in data.configs:
        if any(r["status"] == "ok" and _num(r["items_per_s"]) for r in c.cells):
            images[f"bars:{c.name}"] = plot_bars(data, c)
        if c.speedups:
            images[f"speedup:{c.name}"] = plot_speedup(data, c)
    return images


# ---------------------------------------------------------------------------------------------- summary and entry


def _summary_blocks(data: _PaperData, shown: _Config, transforms: list[str]) -> list[Block]:
    more = len(shown.transforms) - len(transforms)
    blocks: list[Block] = [Paragraph(_headline(data)),
                           Paragraph(f"Config {shown.name} (items/s, fastest in bold, {UNSTABLE_MARK} unstable):"),
                           paper_table(shown, transforms)]
    if more or len(data.configs) > 1:
        blocks.append(Paragraph(f"… {more} more transform(s) and {len(data.configs) - 1} more config(s) in "
                                f"paper.md / index.html."))
    return blocks


def _summary(data: _PaperData, full: list[Block]) -> str:
    """Compact markdown for Dagster metadata: the first config with results, its first transforms and their plot."""
    shown = next((c for c in data.configs if c.has_results), None)
    if shown is None:
        return _markdown([b for b in full if not isinstance(b, Image)], data)
    head = shown.transforms[:SUMMARY_ROWS]
    text = _markdown(_summary_blocks(data, shown, head), data)
    if not any(r["status"] == "ok" and r["transform"] in head for r in shown.cells):
        return text
    return summary_with_plot(text, lambda dpi: plot_bars(data, shown, head, dpi=dpi),
                             f"{md_literal(shown.name)} throughput", (72, 50, 36))


def render_paper_report(report_db: Path, out_dir: Path) -> PaperReport:
    """Read the augbench marts from `report_db` and write paper.md, index.html and the plots into `out_dir`."""
    report_db, out_dir = Path(report_db), Path(out_dir)
    data = _PaperData(read_marts(report_db))
    data.images = _render_plots(data)
    blocks = paper_blocks(data)
    # Pages last: once paper.md exists, every image it names does too.
    written = write_page(out_dir, data.images, data.files, lambda name: bool(_OUR_PNG.match(name)),
                         {"paper.md": _markdown(blocks, data), "index.html": to_html(blocks, data.images, TITLE)})
    return PaperReport(out_dir=out_dir, markdown=out_dir / "paper.md", html=out_dir / "index.html", images=written,
                       summary_md=_summary(data, blocks), configs=len(data.configs), cells=len(data.cells),
                       ok_cells=data.count("ok"), not_measured=len(data.marts["augbench_not_measured"]))


def render_page(inputs: PageInputs) -> RenderedPage:
    """The augbench paper report as a page of `report/rendered`, in its own folder (BENCH_HOME/report/augbench/)."""
    out = render_paper_report(inputs.report_db, inputs.out_dir / FOLDER)
    return RenderedPage(summary_md=out.summary_md, html=out.html, markdown=out.markdown,
                        counts={"configs": out.configs, "cells": out.cells, "ok_cells": out.ok_cells,
                                "not_measured": out.not_measured},
                        plots=tuple(sorted(out.images.values())))
