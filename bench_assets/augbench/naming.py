"""Every augbench file name, built in one place: BENCH_HOME/augbench/<config>/..."""

from __future__ import annotations

from pathlib import Path

RESULTS_SUFFIX = ".results.json"


def augbench_dir(home: Path) -> Path:
    return home / "augbench"


def config_dir(home: Path, config_name: str) -> Path:
    return augbench_dir(home) / config_name


def resolved_config_file(home: Path, config_name: str) -> Path:
    """The validated config a row family runs with (written by `plan`/`run`; UI materializations read it)."""
    return config_dir(home, config_name) / "config.resolved.json"


def plan_file(home: Path, config_name: str) -> Path:
    return config_dir(home, config_name) / "plan.json"


def results_file(home: Path, config_name: str, library: str) -> Path:
    return config_dir(home, config_name) / f"{library}{RESULTS_SUFFIX}"


def media_dir(home: Path) -> Path:
    return augbench_dir(home) / "media"


def iter_results_files(home: Path) -> list[Path]:
    root = augbench_dir(home)
    return sorted(root.glob(f"*/*{RESULTS_SUFFIX}")) if root.exists() else []
