"""`plan`: expand a run config into the exact cells, partitions and result files before anything runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench_assets.augbench.catalog import all_rows, excluded, paper_set
from bench_assets.augbench.config import ConfigError, RunConfig
from bench_assets.augbench.naming import results_file
from bench_assets.augbench.support import cell_reason, library_reason


@dataclass(frozen=True)
class Cell:
    transform: str
    library: str
    reason: str | None  # None: to be measured; else the cell is recorded as `unsupported` with this reason

    @property
    def planned_status(self) -> str:
        return "planned" if self.reason is None else "unsupported"


@dataclass
class Plan:
    config: RunConfig
    transforms: list[str]
    cells: list[Cell]
    excluded: list[tuple[str, str]] = field(default_factory=list)

    @property
    def libraries(self) -> list[str]:
        return list(self.config.libraries)

    def cells_for(self, library: str) -> list[Cell]:
        return [c for c in self.cells if c.library == library]

    def result_files(self, home: Path) -> dict[str, Path]:
        return {lib: results_file(home, self.config.name, lib) for lib in self.libraries}

    def to_dict(self) -> dict:
        return {"config": self.config.model_dump(mode="json"), "config_sha256": self.config.sha256(),
                "transforms": self.transforms, "excluded": [list(x) for x in self.excluded],
                "cells": [{"transform": c.transform, "library": c.library, "status": c.planned_status,
                           "reason": c.reason} for c in self.cells]}


def make_plan(cfg: RunConfig) -> Plan:
    """Refuses a library that cannot run the row at all (a CPU-only library on a GPU row, Pillow on 9
    channels); records transform-level gaps as `unsupported` cells with their reason."""
    refused = [(lib, r) for lib in cfg.libraries if (r := library_reason(cfg.media, cfg.mode, cfg.device, lib))]
    if refused:
        raise ConfigError(f"config {cfg.name}: " + "; ".join(f"libraries: {lib} cannot run {cfg.media} "
                                                              f"{cfg.mode} on {cfg.device}: {r}" for lib, r in refused)
                          + "; remove it from libraries")
    if cfg.transforms == "paper":
        transforms = [r.transform for r in paper_set(cfg.media)]
        left_out = excluded(cfg.media)
    else:
        known = {r.transform for r in all_rows(cfg.media)}
        unknown = [t for t in cfg.transforms if t not in known]
        if unknown:
            raise ConfigError(f"config {cfg.name}: field transforms: {', '.join(unknown)} not in the {cfg.media} "
                              f"transform set; known: {', '.join(sorted(known))}")
        transforms, left_out = list(cfg.transforms), []
    cells = [Cell(t, lib, cell_reason(cfg.media, cfg.mode, cfg.device, lib, t))
             for t in transforms for lib in cfg.libraries]
    return Plan(cfg, transforms, cells, left_out)


def format_plan(plan: Plan, home: Path) -> str:
    cfg = plan.config
    lines = [f"config {cfg.name}: {cfg.media} {cfg.mode} on {cfg.device}, {len(plan.transforms)} transforms x "
             f"{len(cfg.libraries)} libraries, {cfg.num_items} items, {cfg.num_runs} runs"
             + (f", batch {cfg.effective_batch_size}, {cfg.workers} workers" if cfg.mode == "dataloader" else "")]
    for lib in plan.libraries:
        cells = plan.cells_for(lib)
        measured = sum(1 for c in cells if c.reason is None)
        lines.append(f"  partition {cfg.name}|{lib}: {measured} measured, {len(cells) - measured} unsupported "
                     f"-> {plan.result_files(home)[lib]}")
        for c in cells:
            if c.reason:
                lines.append(f"      unsupported {c.transform}: {c.reason}")
    for t, reason in plan.excluded:
        lines.append(f"  excluded from the paper set: {t}: {reason}")
    return "\n".join(lines)
