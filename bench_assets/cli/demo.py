"""`bench demo`: both families end to end on the embedded data, then the report."""

from __future__ import annotations

import argparse

from bench_assets.cli.common import build_report, load_warehouse, report
from resources.paths import REPO_ROOT, bench_home_path

DEMO_MODEL = "yolo9-t"


def cmd_demo(args: argparse.Namespace) -> int:
    """The mini suite end to end: datasets, then yolo9-t with the (non-conformant) smoke recipe,
    trained, used to predict `test`, and scored; then the reduced augbench (configs/smoke/); then the report."""
    from bench_assets.cli.augbench import run_augbench
    from bench_assets.cli.location import load_location, run_job
    from bench_assets.cli.rf100vl import materialize_datasets, print_datasets, print_scores, run_campaign
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.datasets.catalog import suite_members
    from bench_assets.rf100vl.datasets.sources import SourceSpec, register
    from bench_assets.rf100vl.defs.jobs import campaign_job, campaign_view_job, catalog_job
    from bench_assets.rf100vl.defs.partitions import register_partitions

    home = bench_home_path()
    load_location(builds_report=not args.datasets_only)
    instance = open_instance(home)
    names = suite_members("mini")
    for n in names:
        register(home / "sources", n, SourceSpec(kind="mini", suites=["mini"]))
    register_partitions(instance, names)
    code = report(run_job(instance, catalog_job), "catalogue + preflight")
    failed = materialize_datasets(instance, names)
    # A campaign in progress (a rerun after a kill: failed and missing partitions) is no failure of this early load:
    # coverage is judged at the end, by the campaign's load and the report's.
    code = code or load_warehouse(instance, tolerate=("coverage",))
    print_datasets(home, as_json=False)
    if not args.datasets_only:
        code = run_campaign(campaign_job, DEMO_MODEL, suite="mini", recipe="smoke", lanes=args.lanes) or code
        print_scores(home)
        # The campaign view and the plan are rebuilt by the automation when the daemon runs (`make ui`); the demo
        # leaves them built, so the UI shows them at once.
        code = report(run_job(instance, campaign_view_job), "campaign view") or code
    if not args.datasets_only and not args.no_augbench:
        for cfg in sorted((REPO_ROOT / "configs" / "smoke").glob("*.yaml")):  # the reduced augbench
            code = run_augbench(cfg, with_report=False) or code
    if not args.datasets_only:
        code = build_report(instance) or code
    print(f"\nBENCH_HOME={home}\nwarehouse: {home / 'warehouse.duckdb'}")
    if (home / "report" / "index.html").exists():
        print(f"report: {home / 'report' / 'index.html'} (markdown: {home / 'report' / 'report.md'})")
    print("see it in the UI: make ui")
    return 1 if failed or code else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the embedded mini suite end to end: datasets, training, scores")
    p.add_argument("--datasets-only", action="store_true", help="stop after the datasets")
    p.add_argument("--lanes", type=int, default=2, help="CPU lanes for training (default 2)")
    p.add_argument("--no-augbench", action="store_true", help="skip the reduced augmentation benchmark")
    p.set_defaults(fn=cmd_demo)
