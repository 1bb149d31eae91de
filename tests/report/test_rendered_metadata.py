"""`report/rendered` shows the whole report in the UI: report.md with its plots embedded (the relative links of the
file would point at nothing in the metadata panel)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from bench_assets.report.report_assets import inline_images

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_plots_the_report_links_are_embedded_and_the_rest_is_untouched(tmp_path: Path) -> None:
    (tmp_path / "leaderboard.png").write_bytes(PNG)
    md = ("# Report\n\n![mAP50-95 beside published](leaderboard.png)\n\n![gone](missing.png)\n\n"
          "![web](https://example.org/x.png)\n\n| a | b |\n")
    out = inline_images(md, tmp_path)
    embedded = f"![mAP50-95 beside published](data:image/png;base64,{base64.b64encode(PNG).decode()})"
    assert embedded in out
    assert "![gone](missing.png)" in out and "![web](https://example.org/x.png)" in out  # not ours: left as is
    assert out.startswith("# Report") and out.endswith("| a | b |\n")


def test_a_page_that_fails_fails_the_asset_after_the_others_are_written(tmp_path: Path) -> None:
    """One family's broken marts must not cost the other family its page, nor pass silently."""
    import dagster as dg

    from bench_assets.platform.contribution import FamilyContribution
    from bench_assets.platform.report_pages import Page, PageInputs, RenderedPage
    from bench_assets.report.report_assets import rendered_asset
    from resources.bench_home import BenchHome

    def good(inputs: PageInputs) -> RenderedPage:
        md, html = inputs.out_dir / "good.md", inputs.out_dir / "good.html"
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text("# good\n")
        html.write_text("<p>good</p>")
        return RenderedPage(summary_md="good", html=html, markdown=md, counts={"rows": 3})

    def broken(inputs: PageInputs) -> RenderedPage:
        raise ValueError("report.duckdb: table x lacks column(s) y")

    asset = rendered_asset([FamilyContribution("one", pages=(Page("broken", ("x",), broken),)),
                            FamilyContribution("two", pages=(Page("good", ("z",), good),))], lambda: [])
    result = dg.materialize([asset], resources={"home": BenchHome(root=str(tmp_path))}, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    error = failure.step_failure_data.error
    assert "1 of 2 pages failed to render" in str(error) and "broken: ValueError: report.duckdb: table x" in str(error)
    assert (tmp_path / "report" / "good.md").read_text() == "# good\n"  # rendered although listed after the failure
