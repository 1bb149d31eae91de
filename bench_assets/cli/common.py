"""What every verb shares: the exit-code conventions, printing a run's outcome, and the warehouse reload most
verbs end with."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `bench score` imports this module and must stay light
    from bench_assets.platform.instance import RunOutcome


def fail(msg: str, code: int = 1) -> int:
    print(f"bench: {msg}", file=sys.stderr)
    return code


def report(outcome: RunOutcome, what: str, tolerate: tuple[str, ...] = ()) -> int:
    """Print the outcome's warnings and errors; 0 when it succeeded (or failed only on tolerated checks)."""
    for w in outcome.warnings or []:
        print(f"bench: {w}", file=sys.stderr)
    tolerated = [e for e in outcome.errors if any(e.startswith(f"check {name} ") for name in tolerate)]
    for e in tolerated:
        print(f"bench: (expected here) {e}", file=sys.stderr)
    if outcome.success or (outcome.errors and len(tolerated) == len(outcome.errors)):
        return 0
    print(f"bench: {what} failed (run {outcome.run_id or 'not started'}):", file=sys.stderr)
    for err in outcome.errors or ["unknown error; see the run in the UI"]:
        print(f"  {err}", file=sys.stderr)
    return 1


def load_warehouse(instance: Any, tolerate: tuple[str, ...] = ()) -> int:
    from bench_assets.cli.location import run_job
    from bench_assets.report.jobs import warehouse_job

    return report(run_job(instance, warehouse_job), "warehouse load", tolerate)


def build_report(instance: Any) -> int:
    from bench_assets.cli.location import run_job
    from bench_assets.report.jobs import report_job

    return report(run_job(instance, report_job), "report")
