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
