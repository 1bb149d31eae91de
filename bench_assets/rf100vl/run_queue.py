"""Longest first, whoever queues the run: the run coordinator of the product's instances.

`bench campaign` tags each (dataset, model) run with `dagster/priority` = the dataset's training images, so the
daemon's queue starts the longest partitions first (the makespan of a campaign is bounded by its longest runs). A
backfill launched from the UI, or a UI materialization, queues its runs without that tag. `LongestFirstRunCoordinator`
is Dagster's `QueuedRunCoordinator` that gives every (dataset, model) run the same priority as it is queued, before
the daemon can dequeue it (a sensor tagging queued runs afterwards races the 2 s dequeue loop). Named in both
dagster.yaml templates (`resources/dagster.yaml`, the cluster's in `platform/cluster/layout.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from dagster._core.run_coordinator import QueuedRunCoordinator, SubmitRunContext

PRIORITY_TAG = "dagster/priority"
PARTITION_TAG = "dagster/partition"

log = logging.getLogger(__name__)


def longest_first_priority(tags: Mapping[str, str], images_of: Callable[[str], int | None]) -> str | None:
    """The priority a queued run should get: its dataset's training images, for a (dataset, model) partition run
    that has no priority yet; None for any other run (an explicit priority is kept, other jobs are left alone)."""
    key = tags.get(PARTITION_TAG, "")
    if PRIORITY_TAG in tags or key.count("|") != 1:
        return None
    images = images_of(key.split("|")[0])
    return None if images is None else str(images)


def train_images(dataset: str) -> int | None:
    """Training images of the dataset's stored version under BENCH_HOME, or None when none is stored."""
    from bench_assets.rf100vl.store import load_record  # the daemon and webserver load this module at start-up
    from resources.paths import bench_home_path

    rec = load_record(bench_home_path() / "datasets", dataset)
    return int(rec.manifest["splits"]["train"]["images"]) if rec is not None else None


class LongestFirstRunCoordinator(QueuedRunCoordinator):
    """Dagster's queued run coordinator (same config) that sets `dagster/priority` on (dataset, model) runs."""

    def submit_run(self, context: SubmitRunContext):  # noqa: ANN201
        run = context.dagster_run
        try:
            priority = longest_first_priority(run.tags, train_images)
        except Exception as exc:  # noqa: BLE001 - a priority is an optimisation: never refuse a run over it
            log.warning("no longest-first priority for run %s (%s): %s", run.run_id, run.tags.get(PARTITION_TAG),
                        exc)
            priority = None
        if priority is not None:
            self._instance.add_run_tags(run.run_id, {PRIORITY_TAG: priority})
            run = self._instance.get_run_by_id(run.run_id) or run
            context = SubmitRunContext(run, context.workspace)
        return super().submit_run(context)
