"""The augbench tables of the warehouse: per-repeat results, pooled cells (the paper figure) and planned cells,
with their declared column types; handed to the report's loader through `augbench/contribution.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from bench_assets.augbench.transform_specs import REFERENCE_LIBRARY
from bench_assets.platform.warehouse import WarehouseTable

if TYPE_CHECKING:
    import pandas as pd

COLUMNS: dict[str, dict[str, str]] = {
    # augbench result files: one row per (config, library, repeat, transform) cell.
    "augbench_results": {
        "config": "VARCHAR", "media": "VARCHAR", "mode": "VARCHAR", "device": "VARCHAR", "library": "VARCHAR",
        "transform": "VARCHAR", "repeat": "BIGINT", "status": "VARCHAR", "reason": "VARCHAR",
        "throughputs": "DOUBLE[]", "runs": "BIGINT", "median": "DOUBLE", "mean": "DOUBLE", "std": "DOUBLE",
        "cv": "DOUBLE", "ci95_low": "DOUBLE", "ci95_high": "DOUBLE", "unstable": "BOOLEAN",
        "preflight_throughput": "DOUBLE", "startup_seconds": "DOUBLE", "peak_rss_mb": "DOUBLE",
        "peak_cuda_allocated_mb": "DOUBLE", "peak_cuda_reserved_mb": "DOUBLE", "materialize_us": "DOUBLE",
        "materialize_copied": "DOUBLE", "load_1m": "DOUBLE", "busy": "BOOLEAN", "clock_moved": "BOOLEAN",
        "num_items": "BIGINT",
        "batch_size": "BIGINT", "workers": "BIGINT", "hardware": "VARCHAR", "threads": "VARCHAR",
        "media_hash": "VARCHAR", "config_sha256": "VARCHAR", "library_version": "VARCHAR", "started": "VARCHAR",
        "is_latest": "BOOLEAN", "path": "VARCHAR",
    },
    # one row per (config, library, transform): the paper figure, pooled over every repeat run with the
    # latest repeat's config hash (a changed config starts a fresh pool); status is the latest repeat's
    "augbench_cells": {
        "config": "VARCHAR", "media": "VARCHAR", "mode": "VARCHAR", "device": "VARCHAR", "library": "VARCHAR",
        "transform": "VARCHAR", "status": "VARCHAR", "reason": "VARCHAR", "repeats": "BIGINT", "runs": "BIGINT",
        "median": "DOUBLE", "mean": "DOUBLE", "std": "DOUBLE", "cv": "DOUBLE", "ci95_low": "DOUBLE",
        "ci95_high": "DOUBLE", "unstable": "BOOLEAN", "preflight_throughput": "DOUBLE", "hardware": "VARCHAR",
        "threads": "VARCHAR", "media_hash": "VARCHAR", "library_version": "VARCHAR",
        # the materialization rule's own cost (latest repeat): us per item, and its share of the cell's time
        "materialize_us": "DOUBLE", "materialize_copied": "DOUBLE", "materialize_share": "DOUBLE",
        # repeats of the pool in which this cell was measured while the machine was busy / its clock moved
        "busy_repeats": "BIGINT", "clock_moved_repeats": "BIGINT",
        # median items/s over the reference library's (albumentationsx) on the same config and transform, with a
        # two-level (repeats, then passes) bootstrap 95% interval (augbench.bootstrap)
        "speedup_vs_reference": "DOUBLE", "speedup_ci95_low": "DOUBLE", "speedup_ci95_high": "DOUBLE",
    },
    # the planned cells of every registered augbench config (coverage is judged against these)
    "augbench_planned": {"config": "VARCHAR", "library": "VARCHAR", "transform": "VARCHAR",
                         "planned_status": "VARCHAR", "reason": "VARCHAR"},
}




def _augbench_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.augbench.naming import iter_results_files
    from bench_assets.augbench.results import read_results
    from bench_assets.augbench.stats import summarize

    rows = []
    for path in iter_results_files(home):
        doc = read_results(path)
        if doc is None:
            continue
        cfg = doc.config
        for rep in doc.repeats:
            version = rep.versions.get(doc.library) or next(iter(rep.versions.values()), None)
            for c in rep.cells:
                extra = c.model_extra or {}
                s = summarize(c.throughputs) if c.throughputs else {}
                rows.append({
                    "config": doc.config_name, "media": cfg["media"], "mode": cfg["mode"], "device": cfg["device"],
                    "library": doc.library, "transform": c.transform, "repeat": rep.repeat, "status": c.status,
                    "reason": c.reason, "throughputs": c.throughputs, "runs": len(c.throughputs),
                    **{k: s.get(k) for k in ("median", "mean", "std", "cv", "ci95_low", "ci95_high")},
                    "unstable": s.get("unstable"), "preflight_throughput": c.preflight_throughput,
                    **{k: extra.get(k) for k in ("startup_seconds", "peak_rss_mb", "peak_cuda_allocated_mb",
                                                 "peak_cuda_reserved_mb", "materialize_us", "materialize_copied",
                                                 "load_1m", "busy", "clock_moved")},
                    "num_items": cfg["num_items"], "batch_size": cfg.get("batch_size"), "workers": cfg.get("workers"),
                    "hardware": rep.hardware, "threads": json.dumps(rep.threads, sort_keys=True),
                    "media_hash": rep.media_hash, "config_sha256": rep.config_sha256, "library_version": version,
                    "started": rep.started, "is_latest": rep.repeat == doc.repeats[-1].repeat, "path": str(path),
                })
    return pd.DataFrame(rows)


def _augbench_cell_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.augbench.bootstrap import ratio_interval
    from bench_assets.augbench.naming import iter_results_files
    from bench_assets.augbench.results import read_results
    from bench_assets.augbench.stats import summarize

    rows = []
    groups: dict[tuple[str, str, str], list[list[float]]] = {}  # (config, library, transform) -> passes per repeat
    for path in iter_results_files(home):
        doc = read_results(path)
        if doc is None or not doc.repeats:
            continue
        latest = doc.repeats[-1]
        pool = [r for r in doc.repeats if r.config_sha256 == latest.config_sha256]
        pooled: dict[str, list] = {}  # transform -> its cell in every pooled repeat
        for r in pool:
            for cell in r.cells:
                pooled.setdefault(cell.transform, []).append(cell)
        for c in latest.cells:
            same = pooled.get(c.transform, [])
            per_repeat = [list(cell.throughputs) for cell in same if cell.status == "ok" and cell.throughputs]
            runs = [t for g in per_repeat for t in g] if c.status == "ok" else []
            if runs:
                groups[(doc.config_name, doc.library, c.transform)] = per_repeat
            s = summarize(runs) if runs else {}
            extra = c.model_extra or {}
            mat_us = extra.get("materialize_us")
            rows.append({
                "config": doc.config_name, "media": doc.config["media"], "mode": doc.config["mode"],
                "device": doc.config["device"], "library": doc.library, "transform": c.transform, "status": c.status,
                "reason": c.reason, "repeats": len(pool), "runs": len(runs),
                **{k: s.get(k) for k in ("median", "mean", "std", "cv", "ci95_low", "ci95_high", "unstable")},
                "preflight_throughput": c.preflight_throughput, "hardware": latest.hardware,
                "threads": json.dumps(latest.threads, sort_keys=True), "media_hash": latest.media_hash,
                "library_version": latest.versions.get(doc.library) or next(iter(latest.versions.values()), None),
                "materialize_us": mat_us, "materialize_copied": extra.get("materialize_copied"),
                "materialize_share": mat_us * 1e-6 * s["median"] if mat_us is not None and s.get("median") else None,
                "busy_repeats": sum(bool((x.model_extra or {}).get("busy")) for x in same),
                "clock_moved_repeats": sum(bool((x.model_extra or {}).get("clock_moved")) for x in same),
            })
    medians = {(r["config"], r["library"], r["transform"]): r["median"] for r in rows}
    for row in rows:
        mine = groups.get((row["config"], row["library"], row["transform"]))
        ref_key = (row["config"], REFERENCE_LIBRARY, row["transform"])
        ref = groups.get(ref_key)
        ci = ratio_interval(mine, ref) if mine and ref else None
        row.update(speedup_vs_reference=row["median"] / medians[ref_key] if ci else None,
                   speedup_ci95_low=ci[0] if ci else None, speedup_ci95_high=ci[1] if ci else None)
    return pd.DataFrame(rows)


def _augbench_planned_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.augbench.naming import augbench_dir

    rows = []
    root = augbench_dir(home)
    for plan in sorted(root.glob("*/plan.json")) if root.exists() else []:
        doc = json.loads(plan.read_text())
        rows += [{"config": doc["config"]["name"], "library": c["library"], "transform": c["transform"],
                  "planned_status": c["status"], "reason": c["reason"]} for c in doc["cells"]]
    return pd.DataFrame(rows)


# (table, builder, sort order); the column types are COLUMNS[table]
TABLES = tuple(WarehouseTable(name, COLUMNS[name], build, order_by) for name, build, order_by in (
    ("augbench_results", _augbench_rows, "config, library, repeat, transform"),
    ("augbench_cells", _augbench_cell_rows, "config, library, transform"),
    ("augbench_planned", _augbench_planned_rows, "config, library, transform"),
))
