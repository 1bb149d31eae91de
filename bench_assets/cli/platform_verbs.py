"""`bench` verbs of the platform itself: the report, the UI and the doctor."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from bench_assets.cli.common import build_report, fail
from resources.paths import REPO_ROOT, bench_home_path


def cmd_report(args: argparse.Namespace) -> int:
    """Warehouse, dbt marts and the rendered report from the artifacts on disk; print (or open) where it is."""
    from bench_assets.cli.location import load_location
    from bench_assets.platform.instance import open_instance

    home = bench_home_path()
    load_location(builds_report=True)
    code = build_report(open_instance(home))
    html, md = home / "report" / "index.html", home / "report" / "report.md"
    if not html.exists():
        return code or fail("no report was rendered; see the run in the UI")
    print(f"report: {html}\nmarkdown: {md}")
    paper = home / "report" / "augbench" / "index.html"
    if paper.exists():
        print(f"augbench paper report: {paper}")
    if code:
        print("bench: the report was built, but checks failed (listed at its top and above)", file=sys.stderr)
    if args.open:
        import webbrowser

        if not webbrowser.open(html.as_uri()):
            print(f"bench: no browser available here; open {html.as_uri()}", file=sys.stderr)
    return code


def cmd_ui(args: argparse.Namespace) -> int:
    from bench_assets.platform.fsutil import default_signals
    from bench_assets.platform.instance import open_instance
    from bench_assets.report.dbt_project import prepare_manifest

    open_instance(bench_home_path())  # DAGSTER_HOME + pool limits before the daemon reads them
    prepare_manifest()  # the code server loads the dbt assets from it
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(REPO_ROOT / "workspace.yaml"),
           "-h", args.host, "-p", str(args.port)]
    # A non-interactive parent may leave SIGINT ignored, and dagster dev then never stops.
    child = subprocess.Popen(cmd, cwd=REPO_ROOT, env=os.environ.copy(), preexec_fn=default_signals,
                             start_new_session=True)
    print(f"bench ui: http://{args.host}:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']}); Ctrl-C stops")

    def stop(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)  # dagster dev shuts its webserver, daemon and code servers down

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        code = child.wait()
    finally:
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
        try:  # anything dagster dev left behind in its session
            os.killpg(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    return 0 if code in (0, -signal.SIGINT, 130) else code


def cmd_doctor(args: argparse.Namespace) -> int:
    """Find (and with --fix repair) what faults left: stuck pool slots, dead runs, orphaned temp files."""
    from bench_assets.platform.doctor import doctor_main

    return doctor_main(bench_home_path(), args.fix, print)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser("report", help="build the report (warehouse, dbt marts, report.md + index.html) and print "
                                       "where it is")
    rp.add_argument("--open", action="store_true", help="open index.html in a browser")
    rp.set_defaults(fn=cmd_report)
    dr = sub.add_parser("doctor", help="find stuck pool slots, runs whose process is gone and orphaned temp "
                                       "files under BENCH_HOME; --fix repairs them")
    dr.add_argument("--fix", action="store_true", help="free the slots, mark dead runs failed, remove the temps")
    dr.set_defaults(fn=cmd_doctor)
    ui = sub.add_parser("ui", help="start the Dagster UI on this machine")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(fn=cmd_ui)
