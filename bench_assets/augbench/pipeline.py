"""The augbench steps as plain functions (Dagster and the CLI are thin shells around them):
register a config, build its media, measure one library's cells and append the repeat."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_assets.augbench.config import ConfigError, RunConfig
from bench_assets.augbench.machine import machine_facts
from bench_assets.augbench.naming import config_dir, media_dir, plan_file, resolved_config_file, results_file
from bench_assets.augbench.plan import Cell, Plan, make_plan
from bench_assets.augbench.results import append_repeat
from bench_assets.platform.fsutil import atomic_write_json, atomic_write_text
from bench_assets.platform.provenance import hardware_label, source_tree

MEDIA_POINTER = "MEDIA"


def register_config(home: Path, cfg: RunConfig) -> Plan:
    """Validate the plan and record the resolved config, so UI materializations and backfills use it."""
    plan = make_plan(cfg)
    atomic_write_json(resolved_config_file(home, cfg.name), cfg.model_dump(mode="json"))
    atomic_write_json(plan_file(home, cfg.name), plan.to_dict())
    return plan


def registered_config(home: Path, name: str) -> RunConfig:
    path = resolved_config_file(home, name)
    if not path.exists():
        raise ConfigError(f"{path}: config {name!r} is not registered; run `bench augbench plan --config FILE` "
                          "or `bench augbench run --config FILE` first")
    return RunConfig.model_validate_json(path.read_text())


def build_media(home: Path, cfg: RunConfig) -> tuple[dict[str, Any], bool]:
    """The config's media set on disk (content-addressed, written once); return its record and whether it
    was written now. The config's MEDIA pointer names the hash its results use."""
    import numpy as np

    from bench_assets.augbench import media as m

    src = cfg.media_source
    if src.kind == "embedded":
        ms = m.embedded_items(cfg.media, cfg.num_items, size=src.item_size, seed=src.seed,
                              clip_frames=cfg.clip_frames)
        extra: dict[str, Any] = {}
    else:
        staged = m.stage_tarball(Path(src.path or ""), media_dir(home) / "staged" / src.kind, src.kind)
        ms = m.load_staged_items(staged, cfg.media, cfg.num_items, size=src.item_size, seed=src.seed,
                                 clip_frames=cfg.clip_frames)
        extra = {"staged": staged.record()}
        if len(ms) < cfg.num_items:
            raise ConfigError(f"{src.path}: only {len(ms)} usable {cfg.media} items of the {cfg.num_items} asked "
                              f"({len(ms.problems)} unreadable); lower num_items or fix the media")
    record = {**ms.record(), **extra, "config": cfg.name}
    stem = media_dir(home) / ms.content_hash[:16]
    written = False
    if not stem.with_suffix(".npz").exists():
        stem.parent.mkdir(parents=True, exist_ok=True)
        tmp = stem.with_name(f".{stem.name}.{os.getpid()}.npz")
        # items of mixed shapes (native sizes): one flat uint8 buffer and each item's shape
        np.savez(tmp, flat=np.concatenate([a.reshape(-1) for a in ms.items]),
                 shapes=np.array([a.shape for a in ms.items], dtype=np.int64))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, stem.with_suffix(".npz"))
        written = True
    atomic_write_json(stem.with_suffix(".json"), record)
    atomic_write_text(config_dir(home, cfg.name) / MEDIA_POINTER, ms.content_hash)
    return record, written


def load_media(home: Path, cfg: RunConfig) -> Any:
    """The MediaSet the config's latest media materialization produced (hash-checked)."""
    import numpy as np

    from bench_assets.augbench.media import MediaSet, content_hash

    pointer = config_dir(home, cfg.name) / MEDIA_POINTER
    if not pointer.exists():
        raise ConfigError(f"{pointer}: no media for config {cfg.name!r}; materialize augbench/media first")
    digest = pointer.read_text().strip()
    stem = media_dir(home) / digest[:16]
    with np.load(stem.with_suffix(".npz")) as stored:
        flat, shapes = stored["flat"], stored["shapes"]
    ends = np.cumsum([int(np.prod(sh)) for sh in shapes])
    items = [part.reshape(sh) for part, sh in zip(np.split(flat, ends[:-1]), shapes, strict=True)]
    if content_hash(items) != digest:
        raise ConfigError(f"{stem.with_suffix('.npz')}: content does not match its recorded hash {digest[:16]}; "
                          "re-materialize augbench/media")
    record = json.loads(stem.with_suffix(".json").read_text())
    return MediaSet(items, cfg.media, record["description"], problems=record.get("problems", []),
                    content_hash=digest)


def _run_measured(adapter: Any, media: Any, cfg: RunConfig, transforms: list[str], *, log: Callable[[str], None],
                  progress: Any) -> dict[str, dict[str, Any]]:
    """Run `transforms` through the config's runner (micro or DataLoader); the cell results by transform."""
    pf = cfg.effective_preflight
    common = {"device": cfg.device, "preflight_items": pf.items, "min_items_per_s": pf.min_items_per_s,
              "preflight_max_s": pf.max_seconds, "progress": progress, "log": log}
    if cfg.mode == "micro":
        from bench_assets.augbench.runners.micro import run_micro

        results = run_micro(adapter, media, transforms, num_runs=cfg.num_runs, warmup=cfg.warmup, **common)
    else:
        from bench_assets.augbench.runners.dataloader import run_dataloader

        results = run_dataloader(adapter, media, transforms, batch_size=cfg.effective_batch_size,
                                 workers=cfg.workers, num_epochs=cfg.num_runs, worker_policy=cfg.threads, **common)
    return {r["transform"]: r for r in results}


def _cell_records(cells: list[Cell], by_transform: dict[str, dict[str, Any]], library: str, cfg: RunConfig,
                  unavailable: str | None) -> list[dict[str, Any]]:
    """One record per planned cell, in plan order: `unsupported` (by the plan, or the library is unavailable
    here), the runner's result, or `error` when the runner returned none for it."""
    out = []
    for c in cells:
        if c.reason is not None or unavailable:
            out.append({"transform": c.transform, "library": library, "status": "unsupported",
                        "reason": c.reason or unavailable, "mode": cfg.mode, "media": cfg.media,
                        "device": cfg.device})
        elif c.transform in by_transform:
            out.append(by_transform[c.transform])
        else:  # the runner must answer every cell it was given: a silent drop becomes a loud error cell
            out.append({"transform": c.transform, "library": library, "status": "error",
                        "reason": "the runner returned no result for this transform", "mode": cfg.mode})
    return out


def measure_library(home: Path, cfg: RunConfig, library: str, *, log: Callable[[str], None] = print,
                    progress: Any = None, schedule: dict[str, Any] | None = None) -> tuple[int, list[dict[str, Any]]]:
    """Run every planned cell of `library` once more and append the repeat; return (repeat, cells). `schedule`:
    the round, position and library order the repeat ran in (`augbench.rounds`), recorded with it."""
    from bench_assets.augbench.adapters import get_adapter
    from bench_assets.augbench.runners import apply_thread_policy

    plan = make_plan(cfg)
    cells = plan.cells_for(library)
    if not cells:
        raise ConfigError(f"config {cfg.name}: library {library!r} is not in its libraries "
                          f"({', '.join(cfg.libraries)})")
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    facts = machine_facts()  # clock, governor and load as the repeat starts
    threads = apply_thread_policy(cfg.threads)
    adapter = get_adapter(library)
    if hasattr(adapter, "tensor_layout"):  # torchvision, Kornia: contiguous tensors or the decoder's strides
        adapter.tensor_layout = cfg.tensor_layout
    if cfg.output_rule == "published":  # replication only: the published runner's output step in the timer
        from bench_assets.augbench.adapters.base import published_runner_output

        adapter.materialize = published_runner_output
    unavailable = adapter.availability(cfg.device)
    media = load_media(home, cfg)
    versions = adapter.versions() if not unavailable else {}
    measured = [c.transform for c in cells if c.reason is None]
    by_transform: dict[str, dict[str, Any]] = {}
    if unavailable:
        log(f"{library}: unavailable here ({unavailable}); every cell is recorded unsupported")
    elif measured:
        by_transform = _run_measured(adapter, media, cfg, measured, log=log, progress=progress)
    out = _cell_records(cells, by_transform, library, cfg, unavailable)
    repeat = {
        "started": started, "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "config_sha256": cfg.sha256(), "hardware": hardware_label(cfg.device), "versions": versions,
        "threads": threads, "media_hash": media.content_hash, "media_description": media.description,
        "git": source_tree(), "machine": facts, "schedule": schedule, "cells": out,
    }
    number = append_repeat(results_file(home, cfg.name, library), cfg.name, library, cfg.model_dump(mode="json"),
                           repeat)
    return number, out
