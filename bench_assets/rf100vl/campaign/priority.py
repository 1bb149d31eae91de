"""Longest first, whoever queues the run: the priority of a (dataset, model) run queued without one.

`bench campaign` tags each partition run with `dagster/priority` = the dataset's training images, so the queue
starts the longest partitions first (a campaign's makespan is bounded by its longest runs). The product's run
coordinator (`platform/run_queue.py`) asks `run_priority` for runs queued without that tag (UI backfills and
materializations), so they get the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

PARTITION_TAG = "dagster/partition"


def longest_first_priority(tags: Mapping[str, str], images_of: Callable[[str], int | None]) -> str | None:
    """A (dataset, model) partition run's priority: its dataset's training images; None for any other run and for
    a dataset with no stored version."""
    key = tags.get(PARTITION_TAG, "")
    if key.count("|") != 1:
        return None
    images = images_of(key.split("|")[0])
    return None if images is None else str(images)


def train_images(dataset: str) -> int | None:
    """Training images of the dataset's stored version under BENCH_HOME, or None when none is stored."""
    from bench_assets.rf100vl.datasets.store import load_record  # the daemon and webserver call this at submission
    from resources.paths import bench_home_path

    rec = load_record(bench_home_path() / "datasets", dataset)
    return int(rec.manifest["splits"]["train"]["images"]) if rec is not None else None


def run_priority(tags: Mapping[str, str]) -> str | None:
    """The family's `FamilyContribution.run_priority`."""
    return longest_first_priority(tags, train_images)
