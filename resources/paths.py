"""Where the repository and the product home are, without importing Dagster (the CLI's fast paths
and the child processes need these too)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def bench_home_path() -> Path:
    return Path(os.environ.get("BENCH_HOME") or REPO_ROOT / ".bench").expanduser().resolve()
