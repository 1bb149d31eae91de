"""Render the campaign report from the dbt marts: report.md, a self-contained index.html and PNG plots.

Pure (no Dagster import). duckdb, numpy and matplotlib are imported inside functions because the code location
imports this module and must stay light. Every AP is shown x100 with one decimal (0.4853 -> 48.5) and every
difference in the same points; each report states this in its header. Output is deterministic for the same marts:
no timestamps, rows in a fixed order, PNGs saved without the Software tag, so re-rendering changes no bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_assets.platform.document import (
    Block,
    Bullets,
    Heading,
    Image,
    Item,
    Paragraph,
    Table,
    blank_figure,
    figure_png,
    md_html_safe,
    plot_context,
    table,
    to_html,
    to_markdown,
)
from bench_assets.platform.duckdb_files import attached
from bench_assets.platform.marts import table_columns
from bench_assets.platform.report_pages import (
    MartSchemaError,
    PageInputs,
    RenderedPage,
    check_columns,
    read_tables,
    select_rows,
    summary_with_plot,
    write_page,
)
from bench_assets.platform.report_pages import number as _num
from bench_assets.rf100vl.report.thresholds import SELECTION_TOLERANCE

FORMAT_NOTE = ("AP values are COCO AP x100 with one decimal (0.4853 is shown as 48.5); differences are in the same "
               "points; — marks an undefined value (no score).")
DPI = 100
NOISE_BAND = SELECTION_TOLERANCE  # drawn around y = x on the valid-vs-test plot: the selection_vs_test check's
WEAKEST_PER_MODEL = 5
GAPS_LISTED = 5

# Columns read from each mart, by name, and the order rows are read in (so output never depends on scan order).
MARTS: dict[str, tuple[tuple[str, ...], str]] = {
    "rf100vl_leaderboard": (
        ("model", "origin", "datasets_scored", "datasets_expected", "benchmark_datasets_scored", "benchmark_datasets",
         "mAP50_95", "mAP50", "mAP75", "AR_max_det", "median_train_minutes", "train_hours", "train_device",
         "median_best_epoch", "recipe_conformant", "protocol_conformant", "valid_submission", "comparable",
         "not_comparable_because", "leaderboard_rank"),
        'leaderboard_rank NULLS LAST, "mAP50_95" DESC NULLS LAST, model, origin'),
    "rf100vl_domain_scores": (("model", "origin", "domain", "datasets", "mAP50_95", "mAP50"),
                              "domain, model, origin"),
    "rf100vl_dataset_scores": (
        ("model", "origin", "dataset", "domain", "dataset_version", "mAP50_95", "mAP50", "mAP75", "AR_max_det",
         "valid_mAP50_95", "best_epoch", "train_minutes"),
        "model, origin, dataset"),
    "rf100vl_weakest_datasets": (("model", "origin", "rank", "dataset", "domain", "mAP50_95"),
                                 'model, origin, "rank"'),
    "rf100vl_train_cost": (
        ("model", "datasets_trained", "median_train_minutes", "total_train_hours", "train_device",
         "median_best_epoch", "mean_epochs_done", "resumed_runs"),
        "model"),
    "rf100vl_published_comparison": (
        ("model", "origin", "family", "size", "mAP50_95", "datasets_scored", "benchmark_datasets_scored",
         "benchmark_datasets", "protocol_conformant", "comparable", "not_comparable_because", "leaderboard_rank",
         "delta_vs_best_published", "family_label", "size_rank", "published_same_size",
         "delta_vs_published_same_size"),
        'leaderboard_rank NULLS LAST, "mAP50_95" DESC, model, origin'),
    "rf100vl_model_comparison": (("model_a", "model_b", "datasets", "mean_diff", "ci_low", "ci_high",
                                  "seed_noise", "ci_low_seeds", "ci_high_seeds", "distinguishable", "verdict"),
                                 "model_a, model_b"),
    "rf100vl_seed_spread": (("model", "dataset", "seeds", "mean_mAP50_95", "sd_mAP50_95", "min_mAP50_95",
                             "max_mAP50_95", "range_mAP50_95"), "model, dataset"),
}
SUBMISSION_COLUMNS = ("model", "origin", "valid_submission", "invalid_reasons")
PLOTS = {
    "leaderboard": ("leaderboard.png", "mAP50-95 of our and imported models beside published ones"),
    "domains": ("domains.png", "mAP50-95 per domain"),
    "valid_vs_test": ("valid_vs_test.png", "Selection (valid) vs test mAP50-95 per dataset, our models"),
    "datasets": ("datasets.png", "mAP50-95 per dataset, one row per model"),
}
IMAGE_FILES = {key: name for key, (name, _) in PLOTS.items()}
TITLE = "RF100-VL benchmark report"
READER = "bench_assets/rf100vl/report/page.py"  # named in errors: the module that reads the marts
ORIGIN_COLOURS = {"ours": "#1f77b4", "imported": "#ff7f0e", "published": "#9e9e9e"}
DEVICE_UNITS = {"cpu": "CPU-hours", "gpu": "GPU-hours", "mixed": "hours (CPU and GPU runs)"}
UNKNOWN_DEVICE_UNIT = "hours (device not recorded)"
NOT_RANKED = "-"
AP_AXIS = "mAP50-95 (COCO AP x100, points)"
SEVERITY_ORDER = {"ERROR": 0, "WARN": 1}

Row = dict[str, Any]
Finding = tuple[str, str, str, str]  # (check_name, asset, severity, description)


class ReportSchemaError(MartSchemaError):
    """A mart or the submissions table lacks a table or column the report reads."""


@dataclass(frozen=True)
class RenderedReport:
    out_dir: Path
    markdown: Path
    html: Path
    images: dict[str, Path]  # plot key -> PNG written this time (absent plots have no data)
    summary_md: str  # leaderboard table + plot as a data URI, for Dagster's MetadataValue.md
    models: int  # our and imported models on the leaderboard
    datasets: int  # distinct datasets with a score
    findings: int = 0


@dataclass(frozen=True)
class _Submission:
    valid: bool | None
    reasons: tuple[str, ...]


@dataclass
class _ReportData:
    marts: dict[str, list[Row]]
    marts_absent: bool  # report.duckdb holds none of the marts (dbt has not built them yet)
    submissions: dict[tuple[str, str], _Submission] | None  # None: warehouse.duckdb not read
    findings: list[Finding] | None
    images: dict[str, bytes] = field(default_factory=dict)

    @property
    def leaderboard(self) -> list[Row]:
        return self.marts["rf100vl_leaderboard"]

    @property
    def datasets(self) -> int:
        return len({r["dataset"] for r in self.marts["rf100vl_dataset_scores"]})


# ---------------------------------------------------------------------------------------------- reading the marts


def read_marts(report_db: Path) -> tuple[dict[str, list[Row]], bool]:
    """Every mart's rows (columns by name, fixed order) and whether the marts are absent altogether."""
    return read_tables(Path(report_db), MARTS, READER, ReportSchemaError)


def read_submissions(warehouse_db: Path) -> dict[tuple[str, str], _Submission]:
    """(model, origin) -> validity and reasons from the warehouse's submissions table."""
    with attached(warehouse_db) as con:
        tables = table_columns(con)
        if ("main", "submissions") not in tables:
            raise ReportSchemaError(f"{warehouse_db}: no table submissions; rebuild the warehouse "
                                    f"(the loader declares it in bench_assets/platform/warehouse_schema.py)")
        check_columns(warehouse_db, "submissions", SUBMISSION_COLUMNS, tables[("main", "submissions")], READER,
                      ReportSchemaError)
        rows = select_rows(con, "submissions", SUBMISSION_COLUMNS, "model, origin")
    return {(r["model"], r["origin"]): _Submission(r["valid_submission"], tuple(r["invalid_reasons"] or ()))
            for r in rows}


def _normalize_findings(findings: Sequence[Any] | None) -> list[Finding] | None:
    if findings is None:
        return None
    out = []
    for i, f in enumerate(findings):
        if len(f) != 4:
            raise ValueError(f"findings[{i}] = {f!r}: expected (check_name, asset, severity, description)")
        check, asset, severity, description = f
        severity = str(getattr(severity, "value", severity))  # accepts dagster's AssetCheckSeverity enum too
        out.append((str(check), str(asset), severity, str(description)))
    return sorted(out, key=lambda f: (SEVERITY_ORDER.get(f[2].upper(), 2), f[1], f[0], f[3]))


# ---------------------------------------------------------------------------------------------- formatting


def fmt_ap(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{round(100 * v, 1) + 0.0:.1f}"  # + 0.0 turns -0.0 into 0.0


def fmt_ap_diff(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{round(100 * v, 1) + 0.0:+.1f}"


def _fmt_float(x: Any, digits: int = 1) -> str:
    v = _num(x)
    return "—" if v is None else f"{v:.{digits}f}"


def _fmt_count(x: Any) -> str:
    v = _num(x)
    if v is None:
        return "—"
    return str(int(v)) if v == int(v) else f"{v:.1f}"


def _fmt_bool(x: Any) -> str:
    return "—" if x is None else ("yes" if x else "no")


def fmt_sig(x: Any, digits: int = 2) -> str:
    """`digits` significant digits, never cutting the integer part: 0.05372 -> 0.054, 1.234 -> 1.2, 123.4 -> 123."""
    v = _num(x)
    if v is None:
        return "—"
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{round(v, decimals) + 0.0:.{decimals}f}"


def fmt_train_time(hours: Any, device: str | None) -> str:
    """Training wall time with the device it ran on: "0.12 CPU-hours", never GPU-hours for a CPU run."""
    v = _num(hours)
    return "—" if v is None else f"{fmt_sig(v)} {DEVICE_UNITS.get(device or '', UNKNOWN_DEVICE_UNIT)}"


def _outside_rf100vl(r: Row) -> int:
    """Datasets in a row's mean that are not RF100-VL datasets (the demo's mini-* ones)."""
    return int((_num(r["datasets_scored"]) or 0) - (_num(r["benchmark_datasets_scored"]) or 0))


def coverage(r: Row) -> str:
    """RF100-VL datasets behind a row's mean out of all of them ("4/100"), and any others it includes."""
    if r["origin"] == "published":
        return "all (as published)"
    text = f"{_fmt_count(r['benchmark_datasets_scored'])}/{_fmt_count(r['benchmark_datasets'])}"
    outside = _outside_rf100vl(r)
    return text + (f" (+{outside} outside RF100-VL)" if outside > 0 else "")


def conformance(r: Row) -> str:
    if r["origin"] == "published":
        return "as published"
    return "not recorded" if r["protocol_conformant"] is None else _fmt_bool(r["protocol_conformant"])


def leaderboard_rank(r: Row) -> str:
    """The position among published results, or "-" for a row that is not comparable with them."""
    return NOT_RANKED if _num(r["leaderboard_rank"]) is None else _fmt_count(r["leaderboard_rank"])


def not_ranked_because(r: Row) -> str:
    return "" if _num(r["leaderboard_rank"]) is not None else (r["not_comparable_because"] or "not comparable")


# ---------------------------------------------------------------------------------------------- the document
# Both pages render one list of blocks (bench_assets/platform/document.py), so report.md and index.html never
# disagree on content. Names and descriptions keep their markdown characters: only HTML specials, backslashes and
# pipes are escaped in report.md.


def _plot_image(key: str) -> Image:
    return Image(key, PLOTS[key][1])


def _markdown(blocks: Sequence[Block]) -> str:
    return to_markdown(blocks, IMAGE_FILES, escape=md_html_safe)


def _html(blocks: Sequence[Block], images: dict[str, bytes]) -> str:
    return to_html(blocks, images, TITLE)


LEADERBOARD_HEADERS = ("Rank", "Model", "Origin", "RF100-VL datasets", "Protocol-conformant", "mAP50-95", "mAP50",
                       "mAP75", "AR@max_det", "Median train min", "Train time", "Median best epoch",
                       "Valid submission", "Not ranked because")


def _leaderboard_table(rows: list[Row]) -> Table:
    """Ours and imported, ranked among the published results only when comparable ("-" and the reason otherwise).
    The report and the Dagster metadata show this same table."""
    return table(LEADERBOARD_HEADERS,
                 [[leaderboard_rank(r), r["model"], r["origin"], coverage(r), conformance(r), fmt_ap(r["mAP50_95"]),
                   fmt_ap(r["mAP50"]), fmt_ap(r["mAP75"]), fmt_ap(r["AR_max_det"]),
                   _fmt_float(r["median_train_minutes"]), fmt_train_time(r["train_hours"], r["train_device"]),
                   _fmt_float(r["median_best_epoch"]), _fmt_bool(r["valid_submission"]), not_ranked_because(r)]
                  for r in rows],
                 numeric=[0, 5, 6, 7, 8, 9, 11])


def _rank_phrase(r: Row) -> str:
    if _num(r["leaderboard_rank"]) is not None:
        return f"leaderboard rank {_fmt_count(r['leaderboard_rank'])}"
    return f"not ranked: {not_ranked_because(r)}"


def _headline(data: _ReportData) -> list[Block]:
    subs = data.submissions or {}
    not_read = data.submissions is None
    items = []
    for r in data.leaderboard:
        key = (r["model"], r["origin"])
        text = (f"({r['origin']}, {_rank_phrase(r)}): mAP50-95 {fmt_ap(r['mAP50_95'])}, "
                f"mAP50 {fmt_ap(r['mAP50'])}; RF100-VL datasets {coverage(r)}; protocol-conformant: "
                f"{conformance(r)}")
        if r["train_hours"] is not None:
            text += f"; trained in {fmt_train_time(r['train_hours'], r['train_device'])}"
        sub = subs.get(key)
        items.append(_validity_item(r["model"], text, sub.valid if sub else r["valid_submission"],
                                    sub.reasons if sub else (), not_read))
    listed = {(r["model"], r["origin"]) for r in data.leaderboard}
    for (model, origin), sub in sorted(subs.items()):
        if (model, origin) not in listed:
            items.append(_validity_item(model, f"({origin}): a submission but no scored dataset in the marts",
                                        sub.valid, sub.reasons, not_read))
    return [Heading("Headline"), Bullets(tuple(items))] if items else []


def _validity_item(model: str, text: str, valid: bool | None, reasons: tuple[str, ...], not_read: bool) -> Item:
    if valid is True:
        return Item(model, text + "; submittable.")
    if valid is None:
        return Item(model, text + "; no submission yet.")
    if not reasons:
        reasons = ("reasons not recorded" + (" (warehouse.duckdb was not read)" if not_read else ""),)
    return Item(model, text + "; not submittable because:", reasons)


def _findings_blocks(findings: list[Finding] | None) -> list[Block]:
    if findings is None:
        return []
    if not findings:
        return [Heading("Failing checks"), Paragraph("No failing asset checks.")]
    return [Heading("Failing checks"),
            Paragraph(f"{len(findings)} asset check(s) failed; read these before trusting the numbers below."),
            table(["Severity", "Asset", "Check", "Description"], [[s, a, c, d] for c, a, s, d in findings])]


def _comparison_verdict(r: Row) -> str:
    low, high, diff = _num(r["ci_low_seeds"]), _num(r["ci_high_seeds"]), _num(r["mean_diff"])
    distinguishable = r["distinguishable"]
    if distinguishable is None and low is not None and high is not None:
        distinguishable = low > 0 or high < 0
    if distinguishable is None or diff is None:
        return "undefined (no shared scores)"
    seeds = " and seed-to-seed noise" if _num(r["seed_noise"]) is not None else ""
    if not distinguishable:
        return f"tie: within noise (the interval over datasets{seeds} includes 0)"
    leader = r["model_a"] if diff > 0 else r["model_b"]
    return f"{leader} ahead by {fmt_ap(abs(diff))} points (beyond the noise over datasets{seeds})"


def _valid_test_gaps(rows: list[Row]) -> list[Row]:
    """Our datasets with both scores, largest |test - valid| first (ties by model, dataset)."""
    both = [r for r in rows if r["origin"] == "ours" and _num(r["valid_mAP50_95"]) is not None
            and _num(r["mAP50_95"]) is not None]
    return sorted(both, key=lambda r: (-abs(r["mAP50_95"] - r["valid_mAP50_95"]), r["model"], r["dataset"]))


def _outside_noise(r: Row) -> bool:
    return abs(r["mAP50_95"] - r["valid_mAP50_95"]) > NOISE_BAND


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _report_blocks(data: _ReportData) -> list[Block]:
    """The whole report, section by section; without a leaderboard, only why there is none and the submissions."""
    blocks: list[Block] = [Heading(TITLE, 1), Paragraph(FORMAT_NOTE)]
    blocks += _findings_blocks(data.findings)
    if not data.leaderboard:
        why = ("report.duckdb holds no mart tables yet: run `dbt build` once scores exist."
               if data.marts_absent else "the leaderboard mart is empty: no model has a scored dataset.")
        return blocks + [Heading("No models yet"), Paragraph(f"No models yet — {why}")] + _headline(data)
    blocks += [_counts_paragraph(data)] + _headline(data)
    for section in (_leaderboard_blocks, _domain_blocks, _train_cost_blocks, _weakest_blocks, _valid_vs_test_blocks,
                    _per_dataset_blocks, _published_blocks, _family_blocks, _seed_spread_blocks,
                    _model_comparison_blocks):
        blocks += section(data)
    return blocks


def _counts_paragraph(data: _ReportData) -> Paragraph:
    ours = sum(r["origin"] == "ours" for r in data.leaderboard)
    published = sum(r["origin"] == "published" for r in data.marts["rf100vl_published_comparison"])
    return Paragraph(f"{_plural(len(data.leaderboard), 'model')} ({ours} ours, {len(data.leaderboard) - ours} "
                     f"imported) scored on {_plural(data.datasets, 'dataset')}; "
                     f"{_plural(published, 'published reference')}.")


def _with_plot(blocks: list[Block], data: _ReportData, key: str) -> list[Block]:
    """`blocks`, then the plot `key` when it was drawn (a plot without data is not)."""
    return blocks + [_plot_image(key)] if key in data.images else blocks


def _leaderboard_blocks(data: _ReportData) -> list[Block]:
    return _with_plot([Heading("Leaderboard"), _leaderboard_table(data.leaderboard)], data, "leaderboard")


def _domain_blocks(data: _ReportData) -> list[Block]:
    domains = table(["Domain", "Model", "Origin", "Datasets", "mAP50-95", "mAP50"],
                    [[r["domain"], r["model"], r["origin"], _fmt_count(r["datasets"]), fmt_ap(r["mAP50_95"]),
                      fmt_ap(r["mAP50"])] for r in data.marts["rf100vl_domain_scores"]],
                    numeric=[3, 4, 5])
    return _with_plot([Heading("Domains"), domains], data, "domains")


def _train_cost_blocks(data: _ReportData) -> list[Block]:
    rows = data.marts["rf100vl_train_cost"]
    if not rows:
        return [Heading("Train cost"), Paragraph("No training runs of ours.")]
    return [Heading("Train cost"),
            table(["Model", "Datasets trained", "Median train min", "Train time", "Median best epoch",
                   "Mean epochs done", "Resumed runs"],
                  [[r["model"], _fmt_count(r["datasets_trained"]), _fmt_float(r["median_train_minutes"]),
                    fmt_train_time(r["total_train_hours"], r["train_device"]), _fmt_float(r["median_best_epoch"]),
                    _fmt_float(r["mean_epochs_done"]), _fmt_count(r["resumed_runs"])] for r in rows],
                  numeric=[1, 2, 4, 5, 6])]


def _weakest_blocks(data: _ReportData) -> list[Block]:
    weakest = [r for r in data.marts["rf100vl_weakest_datasets"]
               if _num(r["rank"]) is not None and r["rank"] <= WEAKEST_PER_MODEL]
    return [Heading(f"{WEAKEST_PER_MODEL} weakest datasets per model"),
            table(["Model", "Origin", "Rank", "Dataset", "Domain", "mAP50-95"],
                  [[r["model"], r["origin"], _fmt_count(r["rank"]), r["dataset"], r["domain"],
                    fmt_ap(r["mAP50_95"])] for r in weakest], numeric=[2, 5])]


def _valid_vs_test_blocks(data: _ReportData) -> list[Block]:
    all_gaps = _valid_test_gaps(data.marts["rf100vl_dataset_scores"])
    gaps = all_gaps[:GAPS_LISTED]
    if not gaps:
        return [Heading("Selection (valid) vs test"),
                Paragraph("No dataset of ours has both a valid and a test score.")]
    outside = sum(_outside_noise(r) for r in all_gaps)
    return [Heading("Selection (valid) vs test"),
            Paragraph(f"{outside} of {len(all_gaps)} (model, dataset) pairs of ours differ by more than "
                      f"{100 * NOISE_BAND:.0f} points between valid and test (the selection_vs_test check's "
                      "tolerance; circled on the plot)."),
            Paragraph(f"On a healthy run valid and test AP track within noise; the {len(gaps)} largest gaps "
                      f"(a gap far outside noise is a bug report, not a hard dataset: a BatchNorm mismatch once "
                      f"showed valid 56.6, test 16.2):"),
            table(["Model", "Dataset", "Domain", "Valid mAP50-95", "Test mAP50-95", "Test - valid"],
                  [[r["model"], r["dataset"], r["domain"], fmt_ap(r["valid_mAP50_95"]), fmt_ap(r["mAP50_95"]),
                    fmt_ap_diff(r["mAP50_95"] - r["valid_mAP50_95"])] for r in gaps], numeric=[3, 4, 5]),
            _plot_image("valid_vs_test")]


def _per_dataset_blocks(data: _ReportData) -> list[Block]:
    return [Heading("Per-dataset AP"), _plot_image("datasets")] if "datasets" in data.images else []


def _published_blocks(data: _ReportData) -> list[Block]:
    rows = data.marts["rf100vl_published_comparison"]
    if not rows:
        return [Heading("Published comparison"), Paragraph("No published references.")]
    return [Heading("Published comparison"),
            Paragraph("Ranked: the published results and the entries comparable with them (protocol-conformant, "
                      "scored on every RF100-VL dataset and nothing else). The others are listed below them with "
                      "\"-\" and the reason: their means are over other datasets or another protocol."),
            table(["Rank", "Model", "Origin", "Family", "Size", "mAP50-95", "RF100-VL datasets", "Protocol-conformant",
                   "vs best published", "Not ranked because"],
                  [[leaderboard_rank(r), r["model"], r["origin"], r["family"] or "—", r["size"] or "—",
                    fmt_ap(r["mAP50_95"]), coverage(r), conformance(r), fmt_ap_diff(r["delta_vs_best_published"]),
                    not_ranked_because(r)] for r in rows],
                  numeric=[0, 5, 8])]


_ORIGIN_ORDER = {"published": 0, "ours": 1, "imported": 2}


def _family_order(r: Row) -> tuple[Any, ...]:
    """Family, then size in the family's order, published before ours before imported; rows without a family last."""
    size_rank = _num(r["size_rank"])
    return (r["family_label"] is None, r["family_label"] or "", size_rank is None, size_rank or 0,
            (r["size"] or "").lower(), _ORIGIN_ORDER.get(r["origin"], 3), r["model"])


def _family_blocks(data: _ReportData) -> list[Block]:
    """Every row of the published comparison grouped like the published results: by family and size, each of ours
    beside the published row of its family and size."""
    rows = sorted(data.marts["rf100vl_published_comparison"], key=_family_order)
    if not any(r["origin"] != "published" for r in rows):
        return []
    return [Heading("By family and size"),
            Paragraph("The published results' families (our rfdetr runs under RF-DETR, yolo9 under \"YOLOv9 "
                      "(LibreYOLO)\"), sizes in the family's order. \"vs published\" is a row's mAP50-95 minus the "
                      "published number of the same family and size, the row it tries to reproduce; it says "
                      "something only when the row is comparable (\"Not ranked because\" is empty)."),
            table(["Family", "Size", "Model", "Origin", "mAP50-95", "Published (same size)", "vs published",
                   "Not ranked because"],
                  [[r["family_label"] or "—", r["size"] or "—", r["model"], r["origin"], fmt_ap(r["mAP50_95"]),
                    r["published_same_size"] or "—", fmt_ap_diff(r["delta_vs_published_same_size"]),
                    not_ranked_because(r)] for r in rows],
                  numeric=[4, 6])]


def _model_comparison_blocks(data: _ReportData) -> list[Block]:
    rows = data.marts["rf100vl_model_comparison"]
    if not rows:
        return [Heading("Model comparison"), Paragraph("No pair of models shares a scored dataset.")]
    return [Heading("Model comparison"),
            Paragraph("Mean difference A - B in mAP50-95 over the datasets both models scored, with a paired "
                      "bootstrap interval that resamples datasets, widened by the seed-to-seed noise where a model "
                      "was trained with several seeds (Seed spread); an interval that includes 0 is a tie."),
            table(["A", "B", "Datasets", "Mean A - B", "Interval", "Seed noise", "Verdict"],
                  [[r["model_a"], r["model_b"], _fmt_count(r["datasets"]), fmt_ap_diff(r["mean_diff"]),
                    f"[{fmt_ap_diff(r['ci_low_seeds'])}, {fmt_ap_diff(r['ci_high_seeds'])}]",
                    "not measured" if _num(r["seed_noise"]) is None else f"±{fmt_ap(r['seed_noise'])}",
                    _comparison_verdict(r)] for r in rows], numeric=[2, 3])]


def _seed_spread_blocks(data: _ReportData) -> list[Block]:
    rows = data.marts.get("rf100vl_seed_spread") or []
    if not rows:
        return [Heading("Seed spread"),
                Paragraph("No dataset was trained with more than one seed: the model comparison cannot separate a "
                          "real difference from seed-to-seed noise (`bench campaign ... --replicates K`).")]
    return [Heading("Seed spread"),
            Paragraph("The same model and dataset trained with different seeds (the model itself and its "
                      "model@seedN replicates), test mAP50-95 in points: the noise a difference between two "
                      "models must exceed."),
            table(["Model", "Dataset", "Seeds", "Mean", "SD", "Min", "Max", "Range"],
                  [[r["model"], r["dataset"], _fmt_count(r["seeds"]), fmt_ap(r["mean_mAP50_95"]),
                    fmt_ap(r["sd_mAP50_95"]), fmt_ap(r["min_mAP50_95"]), fmt_ap(r["max_mAP50_95"]),
                    fmt_ap(r["range_mAP50_95"])] for r in rows], numeric=[2, 3, 4, 5, 6, 7])]


# ---------------------------------------------------------------------------------------------- plots


@dataclass(frozen=True)
class Bar:
    label: str
    origin: str
    value: float | None  # mAP50-95, 0..1


def _bar_label(r: Row) -> str:
    """Ranked: "3. rfdetr-n". Not ranked: the name with its coverage and conformance, e.g.
    "yolo9-t (4/100 datasets, non-conformant)", so a smoke run is never read as a full campaign."""
    if _num(r["leaderboard_rank"]) is not None:
        return f"{_fmt_count(r['leaderboard_rank'])}. {r['model']}"
    notes = [f"{_fmt_count(r['benchmark_datasets_scored'])}/{_fmt_count(r['benchmark_datasets'])} datasets"]
    if _outside_rf100vl(r) > 0:
        notes.append(f"+{_outside_rf100vl(r)} outside RF100-VL")
    if r["protocol_conformant"] is False:
        notes.append("non-conformant")
    elif r["protocol_conformant"] is None:
        notes.append("conformance not recorded")
    return f"{r['model']} ({', '.join(notes)})"


def leaderboard_bars(data: _ReportData) -> tuple[list[Bar], list[Bar]]:
    """The leaderboard plot's two panels: (ranked, apart). Ranked: the published results and the comparable
    entries, by leaderboard rank. Apart: every other row of ours or imported, best first; drawn hatched in a panel
    of its own and never given a position among the published."""
    rows = data.marts["rf100vl_published_comparison"] or data.leaderboard
    ranked = sorted((r for r in rows if _num(r["leaderboard_rank"]) is not None),
                    key=lambda r: (r["leaderboard_rank"], r["model"], r["origin"]))
    apart = sorted((r for r in rows if _num(r["leaderboard_rank"]) is None),
                   key=lambda r: (_num(r["mAP50_95"]) is None, -(_num(r["mAP50_95"]) or 0.0), r["model"], r["origin"]))
    return ([Bar(_bar_label(r), r["origin"], _num(r["mAP50_95"])) for r in ranked],
            [Bar(_bar_label(r), r["origin"], _num(r["mAP50_95"])) for r in apart])


def _draw_bars(ax: Any, bars: list[Bar], hatched: bool) -> None:
    values = [100 * b.value if b.value is not None else 0.0 for b in bars]
    ys = list(range(len(bars)))
    ax.barh(ys, values, height=0.7, color=[ORIGIN_COLOURS.get(b.origin, "#2ca02c") for b in bars],
            hatch="//" if hatched else None, edgecolor="white" if hatched else None,
            alpha=0.55 if hatched else 1.0)
    for y, b, x in zip(ys, bars, values, strict=True):
        ax.text(x + 0.4, y, fmt_ap(b.value) if b.value is not None else "n/a", va="center", fontsize=8)
    ax.set_yticks(ys, [b.label for b in bars])
    ax.set_ylim(len(bars) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)


def plot_leaderboard(data: _ReportData, dpi: int = DPI) -> bytes:
    with plot_context():
        return figure_png(leaderboard_figure(data), dpi)


def leaderboard_figure(data: _ReportData) -> Any:
    """The leaderboard plot's figure (drawn inside plot_context). Panel titles wrap at the figure's edge: a long model
    label pushes the bars, and the titles above them, to the right, and a title must not run off the image."""
    from matplotlib.patches import Patch

    ranked, apart = leaderboard_bars(data)
    panels = [(p, hatched) for p, hatched in ((ranked, False), (apart, True)) if p]
    values = [100 * b.value for b in ranked + apart if b.value is not None]
    fig = blank_figure(9, 1.6 + 0.26 * (len(ranked) + len(apart)) + 0.5 * len(panels))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False,
                        height_ratios=[max(len(p), 1) + 1.5 for p, _ in panels])[:, 0]
    for ax, (bars, hatched) in zip(axes, panels, strict=True):
        _draw_bars(ax, bars, hatched)
        ax.set_title("Not ranked (not comparable): fewer than all RF100-VL datasets, or off-protocol"
                     if hatched else "Ranked: published results and comparable entries", fontsize=9, loc="left",
                     wrap=True)
    axes[0].set_xlim(0, max(max(values, default=0.0) * 1.12, 10))
    axes[-1].set_xlabel(AP_AXIS)
    fig.suptitle("RF100-VL leaderboard")
    origins = sorted({b.origin for b in ranked + apart},
                     key=lambda o: (list(ORIGIN_COLOURS).index(o) if o in ORIGIN_COLOURS else 9, o))
    handles = [Patch(color=ORIGIN_COLOURS.get(o, "#2ca02c"), label=o) for o in origins]
    if apart:
        handles.append(Patch(facecolor="#bbbbbb", hatch="//", edgecolor="white", label="not comparable"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8)
    return fig


def _model_colours(models: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab20"] if len(models) > 10 else colormaps["tab10"]
    return {m: cmap(i % cmap.N) for i, m in enumerate(models)}


def _model_label(r: Row, data: _ReportData) -> str:
    clash = {r2["model"] for r2 in data.leaderboard if r2["origin"] != r["origin"]}
    return f"{r['model']} ({r['origin']})" if r["model"] in clash else r["model"]


def plot_domains(data: _ReportData, dpi: int = DPI) -> bytes:
    rows = data.marts["rf100vl_domain_scores"]
    domains = sorted({r["domain"] for r in rows if r["domain"] is not None})
    models = [(r["model"], r["origin"]) for r in data.leaderboard]
    labels = [_model_label(r, data) for r in data.leaderboard]
    value = {(r["model"], r["origin"], r["domain"]): _num(r["mAP50_95"]) for r in rows}
    colours = _model_colours(labels)
    width = 0.8 / max(len(models), 1)
    with plot_context():
        fig = blank_figure(min(18.0, 4 + len(domains) * (0.7 + 0.18 * len(models))), 5)
        ax = fig.add_subplot()
        for i, ((model, origin), label) in enumerate(zip(models, labels, strict=True)):
            xs = [d + (i - (len(models) - 1) / 2) * width for d in range(len(domains))]
            vs = [value.get((model, origin, dom)) for dom in domains]
            ax.bar(xs, [100 * v if v is not None else 0.0 for v in vs], width=width, color=colours[label],
                   label=label, hatch="//" if origin != "ours" else None)
        ax.set_xticks(range(len(domains)), domains, rotation=20, ha="right")
        ax.set_ylabel(AP_AXIS)
        ax.set_title("mAP50-95 per domain (hatched: imported)")
        ax.grid(axis="y", alpha=0.3)
        fig.legend(loc="outside right upper", fontsize=7, ncols=1 if len(models) <= 20 else 2)
        return figure_png(fig, dpi)


def plot_valid_vs_test(data: _ReportData, dpi: int = DPI) -> bytes:
    gaps = _valid_test_gaps(data.marts["rf100vl_dataset_scores"])
    models = sorted({r["model"] for r in gaps})
    colours = _model_colours(models)
    with plot_context():
        fig = blank_figure(8.5, 6.5)
        ax = fig.add_subplot()
        band = 100 * NOISE_BAND
        ax.fill_between([0, 100], [-band, 100 - band], [band, 100 + band], color="#dddddd", alpha=0.6,
                        label=f"within ±{band:.0f} points")
        ax.plot([0, 100], [0, 100], color="#555555", linewidth=1, label="test = valid")
        for model in models:
            pts = [r for r in gaps if r["model"] == model]
            ax.scatter([100 * r["valid_mAP50_95"] for r in pts], [100 * r["mAP50_95"] for r in pts], s=16,
                       color=colours[model], label=model, alpha=0.85, edgecolors="none")
        for r in [r for r in gaps if _outside_noise(r)][:GAPS_LISTED]:
            ax.scatter([100 * r["valid_mAP50_95"]], [100 * r["mAP50_95"]], s=60, facecolors="none",
                       edgecolors="#b00000", linewidths=1.2)
            label = r["dataset"] if len(models) == 1 else f"{r['dataset']} ({r['model']})"
            ax.annotate(label, (100 * r["valid_mAP50_95"], 100 * r["mAP50_95"]), xytext=(4, -10),
                        textcoords="offset points", fontsize=7, color="#b00000")
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 100)
        ax.set_aspect("equal")
        ax.set_xlabel("valid mAP50-95 (COCO AP x100, points; checkpoint selection)")
        ax.set_ylabel("test mAP50-95 (COCO AP x100, points)")
        ax.set_title("Selection vs test per dataset (ours)")
        fig.legend(loc="outside right upper", fontsize=7, ncols=1 if len(models) <= 12 else 2)
        ax.grid(alpha=0.3)
        return figure_png(fig, dpi)


def plot_datasets(data: _ReportData, dpi: int = DPI) -> bytes:
    import numpy as np
    from matplotlib import colormaps

    rows = data.marts["rf100vl_dataset_scores"]
    domains = sorted({r["domain"] or "unknown" for r in rows})
    cmap = colormaps["tab10"]
    colour = {d: cmap(i % cmap.N) for i, d in enumerate(domains)}
    models = [(r["model"], r["origin"]) for r in data.leaderboard]
    labels = [_model_label(r, data) for r in data.leaderboard]
    with plot_context():
        fig = blank_figure(9, 1.2 + 0.42 * len(models))
        ax = fig.add_subplot()
        rng = np.random.default_rng(0)  # fixed jitter: same picture every run
        for y, (model, origin) in enumerate(models):
            pts = [r for r in rows if r["model"] == model and r["origin"] == origin and _num(r["mAP50_95"])
                   is not None]
            jitter = rng.uniform(-0.22, 0.22, size=len(pts))
            ax.scatter([100 * r["mAP50_95"] for r in pts], y + jitter, s=10, alpha=0.8, edgecolors="none",
                       color=[colour[r["domain"] or "unknown"] for r in pts])
            if pts:
                ax.plot([100 * float(np.mean([r["mAP50_95"] for r in pts]))] * 2, [y - 0.35, y + 0.35],
                        color="black", linewidth=1.5)
        for d in domains:
            ax.scatter([], [], s=10, color=colour[d], label=d)
        ax.set_yticks(range(len(models)), labels)
        ax.set_ylim(len(models) - 0.5, -0.5)
        ax.set_xlim(0, 100)
        ax.set_xlabel("mAP50-95 per dataset (COCO AP x100, points); black bar: mean over the datasets shown")
        ax.set_title("Per-dataset AP")
        ax.grid(axis="x", alpha=0.3)
        fig.legend(loc="outside right upper", fontsize=7, title="domain", title_fontsize=7)
        return figure_png(fig, dpi)


def _render_plots(data: _ReportData) -> dict[str, bytes]:
    if not data.leaderboard:
        return {}
    images = {"leaderboard": plot_leaderboard(data)}
    if data.marts["rf100vl_domain_scores"]:
        images["domains"] = plot_domains(data)
    if _valid_test_gaps(data.marts["rf100vl_dataset_scores"]):
        images["valid_vs_test"] = plot_valid_vs_test(data)
    if any(_num(r["mAP50_95"]) is not None for r in data.marts["rf100vl_dataset_scores"]):
        images["datasets"] = plot_datasets(data)
    return images


# ---------------------------------------------------------------------------------------------- summary and entry


def _summary(data: _ReportData, blocks_without_images: list[Block]) -> str:
    """Markdown for Dagster metadata ("[Show Markdown]"): the counts, the headline with every not-submittable
    reason, the report's own leaderboard table (same columns: coverage, conformance, why not ranked) and its plot,
    under the size cap."""
    if not data.leaderboard:
        return _markdown(blocks_without_images)
    text = _markdown([Paragraph(f"{len(data.leaderboard)} models over {data.datasets} datasets. {FORMAT_NOTE}"),
                      *_headline(data), _leaderboard_table(data.leaderboard)])
    if data.findings:
        text = f"**{len(data.findings)} failing asset check(s)**; see the report.\n\n" + text
    return summary_with_plot(
        text, lambda dpi: data.images["leaderboard"] if dpi == DPI else plot_leaderboard(data, dpi), "leaderboard",
        (DPI, 72, 50, 36), what="leaderboard plot")


def load_report_data(report_db: Path, *, warehouse_db: Path | None = None,
                     findings: Sequence[Finding] | None = None) -> _ReportData:
    """What the report is drawn from: the marts, the submissions (when the warehouse exists), the findings."""
    marts, absent = read_marts(Path(report_db))
    subs = read_submissions(Path(warehouse_db)) if warehouse_db and Path(warehouse_db).is_file() else None
    return _ReportData(marts, absent, subs, _normalize_findings(findings))


def render_report(report_db: Path, out_dir: Path, *, warehouse_db: Path | None = None,
                  findings: Sequence[Finding] | None = None) -> RenderedReport:
    """Read the marts (and submissions, when the warehouse exists) and write report.md, index.html and plots.

    `findings`: failing asset checks as (check_name, asset, severity, description), listed first; None omits
    the section, an empty list says that no check failed.
    """
    out_dir = Path(out_dir)
    data = load_report_data(report_db, warehouse_db=warehouse_db, findings=findings)
    data.images = _render_plots(data)
    blocks = _report_blocks(data)
    # Pages last: once report.md exists, every image it names does too.
    written = write_page(out_dir, data.images, IMAGE_FILES, lambda name: name in IMAGE_FILES.values(),
                         {"report.md": _markdown(blocks), "index.html": _html(blocks, data.images)})
    without_images = [b for b in blocks if not isinstance(b, Image)]
    return RenderedReport(out_dir=out_dir, markdown=out_dir / "report.md", html=out_dir / "index.html",
                          images=written, summary_md=_summary(data, without_images), models=len(data.leaderboard),
                          datasets=data.datasets, findings=len(data.findings or ()))


def render_page(inputs: PageInputs) -> RenderedPage:
    """The RF100-VL report as a page of `report/rendered`."""
    out = render_report(inputs.report_db, inputs.out_dir, warehouse_db=inputs.warehouse_db, findings=inputs.findings)
    return RenderedPage(summary_md=out.summary_md, html=out.html, markdown=out.markdown,
                        counts={"models": out.models, "datasets": out.datasets},
                        plots=tuple(sorted(out.images.values())))
