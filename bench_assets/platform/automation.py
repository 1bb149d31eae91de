"""The automation conditions of the assets the report automation rebuilds (the warehouse, the campaign view, the
dbt marts and the rendered pages).

Both keep an upstream change pending until a request *after* it. Dagster's `since_last_handled()` (and so `eager()`)
clears a change seen in the same tick as the asset's own new materialization, or as the tick after its request: when
a UI backfill submits model after model while the automation rebuilds after the first, a submission that lands in
that window is taken as handled, and the warehouse, then the leaderboard, stay stale with nothing failing (seen
2026-12-02 on a slower host; tests/report/test_automation.py replays it). Here only a request clears a change, and
not in a tick that sees a newer one. The cost: a rebuild that already read the newer change runs once more, and a
manual rebuild is followed by one automatic rebuild.

How often the sensors (the automation sensors among them) may evaluate: each declares its own minimum interval;
`BENCH_SENSOR_INTERVAL_S`, when set where the code location loads, replaces every one of them (tests that wait on a
sensor set it short; a deployment leaves it unset and keeps the declared intervals).
"""

import os

import dagster as dg

SENSOR_INTERVAL_ENV = "BENCH_SENSOR_INTERVAL_S"


def sensor_interval_s(declared: int) -> int:
    """`declared`, or the whole seconds `BENCH_SENSOR_INTERVAL_S` names (at least 1) when it is set."""
    raw = os.environ.get(SENSOR_INTERVAL_ENV, "").strip()
    if not raw:
        return declared
    try:
        return max(1, int(raw))
    except ValueError:
        raise ValueError(f"{SENSOR_INTERVAL_ENV}={raw!r}: not a whole number of seconds; fix: set it to e.g. 5, or "
                         "unset it for the declared intervals") from None

AC = dg.AutomationCondition


def _until_requested(trigger: dg.AutomationCondition) -> dg.AutomationCondition:
    """`trigger` seen at any tick since the asset was last requested (or since the first evaluation). `since`
    lets a reset win over a trigger in the same tick, so the request clears only in a tick without a new trigger."""
    return trigger.since((AC.newly_requested() & ~trigger) | AC.initial_evaluation())


def after_upstream_updates(label: str) -> dg.AutomationCondition:
    """Materialize after any upstream partition is materialized (from the UI, a backfill, a sensor or the CLI),
    once per change, never while a materialization runs. Not `eager()`: it also waits until no upstream partition
    is missing or in progress, which never holds for partitioned inputs (a campaign's unfinished partitions,
    augbench cells the plan never runs), so a re-materialized score never reached the report."""
    return (_until_requested(AC.any_deps_updated()) & ~AC.in_progress()).with_label(label)


def eager_until_requested() -> dg.AutomationCondition:
    """`eager()` for unpartitioned assets (the dbt marts, the rendered pages), with a change kept until requested:
    materialize when missing or after an upstream update, once every upstream asset exists and none is running."""
    return (_until_requested(AC.newly_missing() | AC.any_deps_updated())
            & ~AC.any_deps_missing() & ~AC.any_deps_in_progress() & ~AC.in_progress()
            ).with_label("eager (a change kept until requested)")
