"""The report keeps itself current: an upstream materialization (a UI run, a backfill, a sensor, the CLI) makes the
`report_automation` sensor request the warehouse, the marts and the rendered pages, although partitions the
campaign has not run (or the plan never runs) are missing upstream. Evaluated with Dagster's own evaluator on a
real instance; the browser test (tests/report/test_ui_browser.py) watches the daemon do it end to end."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import dagster as dg
import pytest

from tests.synthetic_campaign import make_campaign

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

WAREHOUSE = dg.AssetKey(["report", "warehouse"])
LEADERBOARD = dg.AssetKey(["report", "rf100vl_leaderboard"])


def _downstream(graph, key: dg.AssetKey) -> set[dg.AssetKey]:  # noqa: ANN001
    seen: set[dg.AssetKey] = set()
    todo = deque([key])
    while todo:
        for child in graph.get(todo.popleft()).child_keys:
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def _requested(result) -> set[dg.AssetKey]:  # noqa: ANN001
    return {r.key for r in result.results if isinstance(r.key, dg.AssetKey) and r.true_subset.size}


def _report_as_built(bench_home: Path, instance) -> tuple[dg.Definitions, set[dg.AssetKey]]:  # noqa: ANN001
    """Two models' synthetic campaign, one catalogue partition it never ran, the warehouse loaded and the report
    below it recorded as built: what a finished `bench report` leaves. Returns the location and what the
    warehouse feeds (its dbt build is tested elsewhere)."""
    from bench_assets.cli.location import load_location, run_job
    from bench_assets.report.jobs import warehouse_job
    from bench_assets.rf100vl.datasets.catalog import load_catalog
    from bench_assets.rf100vl.defs.partitions import register_model_partition, register_partitions

    make_campaign(bench_home, n_models=2, n_datasets=4, seed=3)
    names = sorted(p.name for p in (bench_home / "datasets").iterdir())
    never_run = next(n for n in load_catalog() if n not in names)  # a partition the campaign has not reached
    register_partitions(instance, [*names, never_run])
    for model in ("syna-s", "syna-t"):
        register_model_partition(instance, model)
    defs = load_location()
    assert run_job(instance, warehouse_job).success
    below = _downstream(defs.resolve_asset_graph(), WAREHOUSE)
    assert LEADERBOARD in below and dg.AssetKey(["report", "rendered"]) in below
    _landed(instance, below)
    return defs, below


def _landed(instance, keys) -> None:  # noqa: ANN001
    """Materializations of `keys` recorded, as the end of a run that built them records them."""
    for key in keys:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key))


def test_an_upstream_run_refreshes_the_report_despite_missing_partitions(bench_home: Path, instance) -> None:  # noqa: ANN001
    from bench_assets.cli.location import run_job
    from bench_assets.rf100vl.defs.jobs import submission_job

    defs, below = _report_as_built(bench_home, instance)
    quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert _requested(quiet) == set()  # nothing changed: nothing to rebuild

    assert run_job(instance, submission_job, partition_key="syna-s").success  # what a UI materialization records
    after = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=quiet.cursor)
    assert WAREHOUSE in _requested(after), "a missing upstream partition must not hold the warehouse back"
    assert below <= _requested(after)  # the marts (the leaderboard among them) and the pages, in the same run

    again = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after.cursor)
    assert _requested(again) == set()  # requested once per change, not on every tick


def test_an_update_that_lands_with_the_rebuild_it_follows_is_not_lost(bench_home: Path, instance) -> None:  # noqa: ANN001
    """A UI backfill submits one model after another while the automation rebuilds after the first: the rebuild
    can land in the same tick window (30 s) as the next submission. Dagster's `since_last_handled()` (and so
    `eager()`) counts the asset's own new materialization as having handled every change seen that tick, so the
    later submission never reached the warehouse, nor a later warehouse load the marts: the leaderboard stayed
    stale with nothing failing (seen 2026-12-02 on a slower host: the browser test waited 420 s for a rebuild
    that never came). A change now stays pending until the asset is requested again."""
    from bench_assets.cli.location import run_job
    from bench_assets.report.jobs import warehouse_job
    from bench_assets.rf100vl.defs.jobs import submission_job

    defs, below = _report_as_built(bench_home, instance)
    quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert run_job(instance, submission_job, partition_key="syna-s").success
    first = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=quiet.cursor)
    assert WAREHOUSE in _requested(first)

    # In one tick window: the requested rebuild lands, and so does the next model's submission.
    _landed(instance, [WAREHOUSE, *below])
    assert run_job(instance, submission_job, partition_key="syna-t").success
    second = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
    assert WAREHOUSE in _requested(second), "the submission that landed with the rebuild was dropped"

    # In one tick window: the marts' rebuild lands, and so does a warehouse load from the CLI.
    _landed(instance, below)
    assert run_job(instance, warehouse_job).success
    third = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=second.cursor)
    assert LEADERBOARD in _requested(third), "the warehouse load that landed with the marts' rebuild was dropped"
    assert WAREHOUSE not in _requested(third)  # its own load is no reason to load it again

    done = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=third.cursor)
    assert _requested(done) == set()  # each change requested once
