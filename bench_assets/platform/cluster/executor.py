"""The code location's executor while a cluster is up: dagster-celery on the cluster's Redis.

Set on the `Definitions`, so runs launched from the UI (materializations, backfills) and runs the CLI submits
to the cluster all send their steps to the workers. Only processes started for the cluster carry
`BENCH_CLUSTER=1` (the daemon, the webserver, the code servers they start, the workers); everywhere else, and for
`bench` verbs executing in-process, the location keeps Dagster's default executor and `dagster_celery` is never
imported.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench_assets.platform.cluster.layout import CELERY_SETTINGS, load_state


def cluster_executor(home: Path) -> Any | None:
    if os.environ.get("BENCH_CLUSTER") != "1":
        return None
    state = load_state(home)
    if state is None:
        return None
    from dagster_celery import celery_executor

    # The URLs carry the Redis password: named by their environment variables (set from cluster/secrets.env in
    # every cluster process), so the definitions, run config and snapshots hold the names only.
    return celery_executor.configured({"broker": {"env": "BENCH_CELERY_BROKER"},
                                       "backend": {"env": "BENCH_CELERY_BACKEND"},
                                       "config_source": CELERY_SETTINGS}, name="celery")
