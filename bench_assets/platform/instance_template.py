"""The template of the product's Dagster instance config (`resources/dagster.yaml`) and what is read from it: the
run coordinator block, which the cluster's instance takes too, and the upgrade of a home written before the run
coordinator moved into the platform."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

# Where the run coordinator lived before it moved into the platform; a home's dagster.yaml copied then names it.
_OLD_COORDINATOR_MODULE = "bench_assets.rf100vl.run_queue"


def template_text() -> str:
    return resources.files("resources").joinpath("dagster.yaml").read_text()


def template_run_coordinator() -> dict[str, Any]:
    """The template's `run_coordinator` block (module, class, config), a fresh copy."""
    return yaml.safe_load(template_text())["run_coordinator"]


def upgraded(text: str) -> str | None:
    """A home's dagster.yaml with an old run coordinator replaced by the template's (its own config values kept,
    the template's `priorities` added); None when it needs no change."""
    cfg = yaml.safe_load(text) or {}
    old = cfg.get("run_coordinator") or {}
    if old.get("module") != _OLD_COORDINATOR_MODULE:
        return None
    new = template_run_coordinator()
    new["config"] = {**(old.get("config") or {}), **(new.get("config") or {})}
    cfg["run_coordinator"] = new
    return "# Upgraded by `bench`: the run coordinator moved to bench_assets.platform.run_queue.\n" + yaml.safe_dump(
        cfg, sort_keys=False)
