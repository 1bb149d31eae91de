"""Figures quoted in the docs are the figures the committed scripts wrote: each quoted number is formatted from its
result file under `benchmarks/results/` and must appear, as formatted, in the doc that quotes it. Re-running a
script and not updating the doc (or editing the doc by hand) fails here; so does a result file that moved."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

RESULTS = REPO / "benchmarks" / "results"


def _cluster(r: dict[str, Any]) -> list[str]:
    run, writes = r["per_run"], r["postgres_writes"]
    small, big = r["partition_pages"]
    ratio = r["page_ratios_400_vs_4"]
    return [
        f"events per partition run (median of {run['runs']} runs) | {run['events']:.0f} |",
        f"bytes per event | {run['bytes_per_event']:,.0f} |",
        f"median | {run['startup_s']:.1f} s |",
        f"| {run['steps_s']:.1f} s |",
        f"| {writes['events_per_s']:.0f} events/s |",
        f"| {writes['seconds']:.0f} s = {100 * writes['campaign_share_of_8_lane_makespan']:.2f}% of the 8-lane "
        "makespan |",
        f"| {small['status_query_s']:.3f} s / {big['status_query_s']:.3f} s (x{ratio['status_query']:.2f}) |",
        f"| {small['page_load_s']:.2f} s / {big['page_load_s']:.2f} s (x{ratio['page_load']:.2f}) |",
    ]


def _simulation(r: dict[str, Any]) -> list[str]:
    return [f"| {row['lanes']} | {row['makespan_h']:.1f} | {row['lower_bound_h']:.1f} | "
            f"{row['ratio_to_lower_bound']:.4f} | {100 * row['busy_share']:.1f}% | "
            f"{row['random_order_median_h']:.1f} / {row['random_order_worst_h']:.1f} |" for row in r["rows"]]


def _ui_speed(r: dict[str, Any]) -> list[str]:
    return [f"| {row['cli_s']:.2f} s | {row['ui_run_s']:.2f} s | x{row['ratio']:.2f} | "
            f"{row['ui_click_to_done_s']:.1f} s |" for row in r["rows"]]


def _materialize_copy(r: dict[str, Any]) -> list[str]:
    us = r["us_per_call"]
    return [f"HorizontalFlip view {us['HorizontalFlip view: np.ascontiguousarray']:.0f} us with numpy's copy, "
            f"{us['HorizontalFlip view: contiguous_copy (the rule)']:.0f} us with the rule"]


def _agreement(r: dict[str, Any]) -> list[str]:
    a = r["agreement"]
    lib = a["libraries"]
    return [f"| {lib['torchvision']['spearman']:.2f} | {lib['kornia']['spearman']:.2f} | "
            f"{lib['pillow']['spearman']:.2f} | {100 * a['same_winner']:.1f}% | "
            f"{len(a['outliers'])} ({len(a['unexplained'])}) |"]


# (doc, result file, what the doc must quote from it)
QUOTED: list[tuple[str, str, Callable[[dict[str, Any]], list[str]]]] = [
    ("docs/scale-out.md", "cluster_overhead.json", _cluster),
    ("docs/scale-out.md", "campaign_simulation.json", _simulation),
    ("docs/report.md", "ui_run_speed.json", _ui_speed),
    ("docs/augbench.md", "materialize_copy.json", _materialize_copy),
    *[("docs/augbench.md", f"augbench_vs_published{run}.json", _agreement)
      for run in ("", "_macos", "_replication", "_published_versions")],
]


@pytest.mark.parametrize(("doc", "result", "quotes"), QUOTED, ids=[f"{d}<-{r}" for d, r, _ in QUOTED])
def test_docs_quote_the_committed_results(doc: str, result: str,
                                          quotes: Callable[[dict[str, Any]], list[str]]) -> None:
    text = " ".join((REPO / doc).read_text().replace("**", "").split())  # line breaks and bold do not matter
    data = json.loads((RESULTS / result).read_text())
    missing = [q for q in quotes(data) if " ".join(q.split()) not in text]
    assert not missing, f"{doc} does not quote these figures of benchmarks/results/{result}: {missing}"


def test_the_check_sees_a_drifted_figure(tmp_path: Path) -> None:
    data = json.loads((RESULTS / "ui_run_speed.json").read_text())
    data["rows"][0]["ui_run_s"] += 0.5  # a rerun the doc was not updated for
    text = " ".join((REPO / "docs" / "report.md").read_text().split())
    assert any(q not in text for q in _ui_speed(data))
