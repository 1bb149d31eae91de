"""The product home: one folder holding the Dagster instance, datasets, artifacts and the warehouse.

`BENCH_HOME` (default `<repo>/.bench`) is resolved once per process. Everything the platform writes
lives below it, so a campaign moves or is wiped by moving or deleting one folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from resources.paths import bench_home_path


class BenchHome(dg.ConfigurableResource):
    """Paths of the product home. `root` empty means: BENCH_HOME from the environment, or ./.bench."""

    root: str = ""
    hf_repo: str = ""  # Hugging Face dataset mirror for catalogue datasets ("" = env BENCH_HF_REPO)

    @property
    def path(self) -> Path:
        return Path(self.root).resolve() if self.root else bench_home_path()

    @property
    def datasets_dir(self) -> Path:
        return self.path / "datasets"

    @property
    def sources_dir(self) -> Path:
        return self.path / "sources"

    @property
    def inbox_dir(self) -> Path:
        return self.path / "inbox"

    @property
    def hf_cache_dir(self) -> Path:
        return self.path / "cache" / "hf"

    @property
    def warehouse_path(self) -> Path:
        return self.path / "warehouse.duckdb"

    @property
    def report_db_path(self) -> Path:
        """The dbt report's DuckDB (marts), rebuilt whole by each dbt build and renamed into place."""
        return self.path / "report.duckdb"

    @property
    def report_dir(self) -> Path:
        """The rendered report: report.md, index.html and the plots."""
        return self.path / "report"

    @property
    def hf_mirror(self) -> str | None:
        return self.hf_repo or os.environ.get("BENCH_HF_REPO") or None

    def writable_dirs(self) -> list[Path]:
        return [self.path / d for d in ("datasets", "sources", "staging", "inbox", "runs", "eval", "cache")]
