"""`augbench/paper_report`: the augbench paper report (paper.md, a self-contained index.html and plots) rendered
from the augbench dbt marts into BENCH_HOME/report/augbench/."""

import dagster as dg

from bench_assets.augbench.paper_report import render_paper_report
from bench_assets.platform.automation import eager_until_requested
from resources.bench_home import BenchHome

MARTS = ("augbench_paper_table", "augbench_coverage", "augbench_winners", "augbench_not_measured")


@dg.asset(key=["augbench", "paper_report"], group_name="augbench", kinds={"html", "markdown"},
          deps=[dg.AssetKey(["report", m]) for m in MARTS], pool="duckdb_writer",
          automation_condition=eager_until_requested(),
          description="The augbench paper report: per config the paper table (transform x library items/s, fastest in "
                      "bold), speedups vs AlbumentationsX, coverage, winner counts and the cells not measured with "
                      "their reasons; paper.md, index.html and plots in BENCH_HOME/report/augbench/.")
def paper_report(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
    out = render_paper_report(home.report_db_path, home.report_dir / "augbench")
    context.log.info(f"augbench paper report rendered: {out.html} ({out.configs} configs, {out.ok_cells} of "
                     f"{out.cells} cells measured, {out.not_measured} not measured)")
    return dg.MaterializeResult(metadata={
        "report": dg.MetadataValue.md(out.summary_md),
        "html": dg.MetadataValue.path(str(out.html)),
        "markdown": dg.MetadataValue.path(str(out.markdown)),
        "plots": dg.MetadataValue.json(sorted(str(p) for p in out.images.values())),
        "configs": dg.MetadataValue.int(out.configs),
        "cells": dg.MetadataValue.int(out.cells),
        "ok_cells": dg.MetadataValue.int(out.ok_cells),
        "not_measured": dg.MetadataValue.int(out.not_measured),
    })
