"""The warehouse: DuckDB tables rebuilt from the artifacts on disk (files are the truth).

`rebuild_warehouse` is the only code that writes `warehouse.duckdb`. It builds a complete new file
beside the old one and renames it into place, so a reader never sees a half-loaded warehouse and
never meets a writer's lock on the live file; an OS file lock serialises concurrent loaders so the
last one to run always saw every artifact placed before it started.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_assets.fsutil import fsync_dir, pid_alive
from bench_assets.report.schema import column_drift, create_sql, insert_sql
from bench_assets.rf100vl.catalog import catalog_entry
from bench_assets.rf100vl.evaluation import predictions_path
from bench_assets.rf100vl.sources import read_spec
from bench_assets.rf100vl.store import current_version, iter_versions, load_record
from bench_assets.rf100vl.verify import SPLITS

if TYPE_CHECKING:
    import pandas as pd

TableBuilder = Callable[[Path], "pd.DataFrame"]


def _dataset_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    datasets_dir = home / "datasets"
    rows: list[dict[str, Any]] = []
    for name, version in iter_versions(datasets_dir):
        rec = load_record(datasets_dir, name, version)
        assert rec is not None
        m, splits = rec.manifest, rec.manifest["splits"]
        spec = read_spec(home / "sources", name)
        entry = catalog_entry(name)
        norm = m["normalisations"]
        rows.append({
            "dataset": name,
            "version": version,
            "is_current": current_version(datasets_dir, name) == version,
            "created_at": m["created_at"],
            "source_kind": m["source"]["kind"],
            "source_ref": m["source"]["ref"],
            "source_version": m["source_version"],
            "suites": sorted(set(spec.suites if spec else []) | ({"rf100vl"} if entry else set())
                             | ({"rf20vl"} if entry and entry.rf20vl else set())),
            "in_catalog": entry is not None,
            "domain": entry.domain if entry else None,
            "catalog_num_classes": entry.num_classes if entry else None,
            "num_classes": m["num_classes"],
            "class_names": m["classes"],
            "images": sum(splits[s]["images"] for s in SPLITS),
            "boxes": sum(splits[s]["annotations"] for s in SPLITS),
            **{f"{s}_images": splits[s]["images"] for s in SPLITS},
            **{f"{s}_boxes": splits[s]["annotations"] for s in SPLITS},
            "train_boxes_per_image_mean": splits["train"]["boxes_per_image_mean"],
            "max_annotations_per_image": max(splits[s]["boxes_per_image_max"] for s in SPLITS),
            "megapixels_max": max(splits[s]["megapixels_max"] for s in SPLITS),
            "size_bytes": sum(rec.lock["splits"][s]["bytes"] for s in SPLITS),
            "train_annotations_sha256": rec.lock["splits"]["train"]["annotations_sha256"],
            "placeholder_categories_dropped": len(norm["dropped_placeholder_categories"]),
            "annotation_ids_renumbered": sum(norm["annotation_ids_renumbered"].values()),
            "boxes_clipped": sum(norm["boxes_clipped"].values()),
            "path": str(rec.path),
        })
    return pd.DataFrame(rows)


def _dataset_split_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    datasets_dir = home / "datasets"
    rows = []
    for name, version in iter_versions(datasets_dir):
        rec = load_record(datasets_dir, name, version)
        assert rec is not None
        for s in SPLITS:
            rows.append({"dataset": name, "version": version, "split": s,
                         **rec.manifest["splits"][s], **rec.lock["splits"][s]})
    return pd.DataFrame(rows)


def _run_dirs(home: Path) -> list[Path]:
    runs = home / "runs"
    return sorted(p.parent for p in runs.glob("*/*/*/stats.json")) if runs.exists() else []


def _current_run_name(run_dir: Path) -> str | None:
    pointer = run_dir.parent / "CURRENT"
    return pointer.read_text().strip() if pointer.exists() else None


def _run_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for run_dir in _run_dirs(home):
        st = json.loads((run_dir / "stats.json").read_text())
        rows.append({
            "model": st["model"], "dataset": st["dataset"], "dataset_version": st["dataset_version"],
            "run_signature": st["run_signature"], "is_current": _current_run_name(run_dir) == run_dir.name,
            "family": st["family"], "size": st["variant"], "run_variant": st["run_variant"],
            "recipe_file": st["recipe"]["file"], "recipe_sha256": st["recipe"]["sha256"],
            "recipe_conformant": st["recipe"]["conformant"], "epochs": st["epochs"], "epochs_done": st["epochs_done"],
            "best_epoch": st["best_epoch"], "valid_mAP50": st["valid_mAP50"], "valid_mAP50_95": st["valid_mAP50_95"],
            "physical_batch": st["batch"]["physical"], "effective_batch": st["batch"]["effective"],
            "accumulation": st["batch"]["accumulation"], "imgsz": st["signature_fields"]["imgsz"],
            "amp": st["precision"]["amp"], "wall_seconds": st["wall_seconds"], "resumed": st["resumed"],
            "train_images": st["data"]["train_images"],
            "max_annotations_per_image": st["data"]["max_annotations_per_image"],
            "best_checkpoint": st["best_checkpoint"], "best_checkpoint_sha256": st["best_checkpoint_sha256"],
            "started": st["started"], "finished": st["finished"], "run_dir": str(run_dir),
        })
    return pd.DataFrame(rows)


def _epoch_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for run_dir in _run_dirs(home):
        st = json.loads((run_dir / "stats.json").read_text())
        result = json.loads((run_dir / "result.json").read_text()) if (run_dir / "result.json").exists() else {}
        for e in result.get("epochs", []):
            rows.append({"model": st["model"], "dataset": st["dataset"], "run_signature": st["run_signature"],
                         "epoch": e["epoch"], "train_loss": e.get("train_loss"),
                         "valid_mAP50": e.get("valid_mAP50"), "valid_mAP50_95": e.get("valid_mAP50_95"),
                         "seconds": e.get("seconds"), "lr": e.get("lr")})
    return pd.DataFrame(rows)


def _score_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    rows = []
    evals = home / "eval"
    for path in sorted(evals.glob("*/*/*.score.json")) if evals.exists() else []:
        rec = json.loads(path.read_text())
        pointer = path.parent / "CURRENT.predictions"
        current_pred = pointer.read_text().strip() if pointer.exists() else None
        score_pointer = path.parent / "CURRENT.score"
        # The score the partition last produced; homes from before the pointer existed fall back to
        # "scores the current predictions" (ambiguous only after a rescore).
        is_current = (score_pointer.read_text().strip() == rec["fingerprint"] if score_pointer.exists()
                      else current_pred == rec["inputs"]["predictions_fingerprint"])
        pin = rec["prediction_inputs"]
        rows.append({
            "model": rec["model"], "dataset": rec["dataset"], "dataset_version": rec["dataset_version"],
            "fingerprint": rec["fingerprint"], "split": rec["split"],
            "is_current": is_current,
            **{m: v for m, v in rec["metrics"].items()},
            "backend": rec["backend"], "parity_identical": rec["parity"]["identical"],
            "parity_total": rec["parity"]["total"], "parity_max_abs_deviation": rec["parity"]["max_abs_deviation"],
            "parity_differing": rec["parity"]["differing"],
            "num_images": rec["num_images"], "num_gt": rec["num_gt"], "num_dets": rec["num_dets"],
            "conf": pin["conf"], "nms_iou": pin["iou"], "max_det": pin["max_det"], "imgsz": pin["imgsz"],
            "weights_sha256": pin["weights_sha256"], "recipe_sha256": pin["recipe_sha256"],
            "run_signature": pin["run_signature"], "predictions_sha256": rec["inputs"]["predictions_sha256"],
            "predictions_path": str(predictions_path(home, rec["model"], rec["dataset"],
                                                     rec["inputs"]["predictions_fingerprint"])),
            "scoring_code_sha256": rec["inputs"]["scoring_code_sha256"], "path": str(path),
        })
    return pd.DataFrame(rows)


def _catalog_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.rf100vl.catalog import load_catalog

    return pd.DataFrame([{"dataset": e.name, "domain": e.domain, "rf20vl": e.rf20vl, "num_classes": e.num_classes,
                          "num_images": e.num_images, "test_images": e.test_images, "license": e.license}
                         for e in load_catalog().values()])


def _suite_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.rf100vl.catalog import BUILTIN_SUITES, suite_members
    from bench_assets.rf100vl.models import iter_entries

    pairs = {(suite, d) for suite in BUILTIN_SUITES for d in suite_members(suite)}
    sources = home / "sources"
    for p in sorted(sources.glob("*.json")) if sources.exists() else []:
        spec = read_spec(sources, p.stem)
        pairs |= {(suite, p.stem) for suite in (spec.suites if spec else [])}
    for entry in iter_entries(home):
        if not entry.suite:
            pairs |= {(entry.expected_suite(), d) for d in entry.datasets}
    return pd.DataFrame(sorted(pairs), columns=["suite", "dataset"])


def _model_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.rf100vl.catalog import suite_members
    from bench_assets.rf100vl.models import iter_entries, model_recipe

    rows = []
    for entry in iter_entries(home):
        key, loaded = model_recipe(home, entry.model)
        expected = len(suite_members(entry.suite)) if entry.suite else len(entry.datasets)
        rows.append({
            "model": entry.model, "family": key.family, "size": key.size,
            # adjacent sizes of a family are neighbours in the recipe's size list (t < s < m < c)
            "size_rank": list(loaded.recipe.sizes).index(key.size), "recipe": entry.recipe, "recipe_file": loaded.path,
            "recipe_sha256": loaded.sha256, "recipe_conformant": loaded.recipe.conformant,
            "recipe_nonconformities": loaded.recipe.nonconformities(), "suite": entry.expected_suite(),
            "expected_datasets": expected,
        })
    return pd.DataFrame(rows)


def _published_rows(home: Path) -> pd.DataFrame:
    import csv
    from importlib import resources

    import pandas as pd

    text = resources.files("bench_assets.rf100vl").joinpath("data/rf100vl_published.csv").read_text()
    return pd.DataFrame([{**r, "mAP50_95": float(r["mAP50_95"])} for r in csv.DictReader(text.splitlines())])


def _submission_files(home: Path) -> list[tuple[str, Path]]:
    from bench_assets.rf100vl.submission import imported_dir, submissions_dir

    ours = sorted(submissions_dir(home).glob("*.json")) if submissions_dir(home).exists() else []
    imported = sorted(imported_dir(home).glob("*.json")) if imported_dir(home).exists() else []
    return [("ours", p) for p in ours] + [("imported", p) for p in imported]


def _read_submission(origin: str, path: Path) -> tuple[dict[str, Any], list[str]]:
    """The document and its invalid reasons: ours as built, imported ones re-checked on every load."""
    from bench_assets.rf100vl.submission import SubmissionError, check_imported

    doc = json.loads(path.read_text())
    if origin == "ours":
        return doc, list(doc["rf100vl"]["invalid_reasons"])
    try:
        _, reasons = check_imported(doc, str(path))
    except SubmissionError as exc:
        return doc, [str(exc)]
    return doc, reasons


def _submission_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.fsutil import sha256_file

    rows = []
    for origin, path in _submission_files(home):
        doc, reasons = _read_submission(origin, path)
        rf, acc = doc.get("rf100vl", {}), doc.get("accuracy", {})
        recipe = rf.get("recipe_sha256")
        rows.append({
            "model": doc["model"]["name"], "origin": origin,
            "created_at": (doc.get("metadata") or {}).get("created_at"),
            "split": doc.get("benchmark", {}).get("split"), "suite": doc.get("benchmark", {}).get("suite"),
            "expected_datasets": rf.get("protocol", {}).get("expected_datasets"),
            "datasets_scored": len(rf.get("datasets", [])),
            "mAP50_95": acc.get("mAP_50_95"), "mAP50": acc.get("mAP_50"), "mAP75": acc.get("mAP_75"),
            "AR_max_det": acc.get("AR_max_det"), "conf": doc.get("config", {}).get("conf"),
            "nms_iou": doc.get("config", {}).get("iou"), "max_det": doc.get("config", {}).get("max_det"),
            "recipe_sha256": ",".join(recipe) if isinstance(recipe, list) else recipe,
            "dataset_versions_sha256": rf.get("dataset_versions_sha256"),
            "valid_submission": not reasons, "invalid_reasons": reasons, "path": str(path),
            "file_sha256": sha256_file(path),
        })
    return pd.DataFrame(rows)


def _submission_dataset_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for origin, path in _submission_files(home):
        doc = json.loads(path.read_text())
        for d in doc.get("rf100vl", {}).get("datasets", []):
            rows.append({"model": doc["model"]["name"], "origin": origin, "dataset": d["dataset"],
                         **{c: d.get(c) for c in ("dataset_version", "num_images", "num_classes", "weights_sha256",
                                                  "AR100", "AR_max_det", "wall_seconds")},
                         "mAP50_95": d.get("mAP_50_95"), "mAP50": d.get("mAP_50"), "mAP75": d.get("mAP_75")})
    return pd.DataFrame(rows)


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
                                                 "peak_cuda_reserved_mb")},
                    "num_items": cfg["num_items"], "batch_size": cfg.get("batch_size"), "workers": cfg.get("workers"),
                    "hardware": rep.hardware, "threads": json.dumps(rep.threads, sort_keys=True),
                    "media_hash": rep.media_hash, "config_sha256": rep.config_sha256, "library_version": version,
                    "started": rep.started, "is_latest": rep.repeat == doc.repeats[-1].repeat, "path": str(path),
                })
    return pd.DataFrame(rows)


def _augbench_cell_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.augbench.naming import iter_results_files
    from bench_assets.augbench.results import read_results
    from bench_assets.augbench.stats import summarize

    rows = []
    for path in iter_results_files(home):
        doc = read_results(path)
        if doc is None or not doc.repeats:
            continue
        latest = doc.repeats[-1]
        pool = [r for r in doc.repeats if r.config_sha256 == latest.config_sha256]
        for c in latest.cells:
            runs = [t for r in pool for cell in r.cells if cell.transform == c.transform and cell.status == "ok"
                    for t in cell.throughputs] if c.status == "ok" else []
            s = summarize(runs) if runs else {}
            rows.append({
                "config": doc.config_name, "media": doc.config["media"], "mode": doc.config["mode"],
                "device": doc.config["device"], "library": doc.library, "transform": c.transform, "status": c.status,
                "reason": c.reason, "repeats": len(pool), "runs": len(runs),
                **{k: s.get(k) for k in ("median", "mean", "std", "cv", "ci95_low", "ci95_high", "unstable")},
                "preflight_throughput": c.preflight_throughput, "hardware": latest.hardware,
                "threads": json.dumps(latest.threads, sort_keys=True), "media_hash": latest.media_hash,
                "library_version": latest.versions.get(doc.library) or next(iter(latest.versions.values()), None),
            })
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


# Table name -> builder over BENCH_HOME. Later domains add their tables here.
TABLES: dict[str, TableBuilder] = {
    "datasets": _dataset_rows,
    "dataset_splits": _dataset_split_rows,
    "runs": _run_rows,
    "epochs": _epoch_rows,
    "scores": _score_rows,
    "catalog": _catalog_rows,
    "suites": _suite_rows,
    "models": _model_rows,
    "published": _published_rows,
    "submissions": _submission_rows,
    "submission_datasets": _submission_dataset_rows,
    "augbench_results": _augbench_rows,
    "augbench_cells": _augbench_cell_rows,
    "augbench_planned": _augbench_planned_rows,
}
ORDER_BY = {"datasets": "dataset, version", "dataset_splits": "dataset, version, split",
            "runs": "model, dataset, run_signature", "epochs": "model, dataset, run_signature, epoch",
            "scores": "model, dataset, fingerprint", "catalog": "dataset", "suites": "suite, dataset",
            "models": "model", "published": "model", "submissions": "origin, model",
            "submission_datasets": "origin, model, dataset",
            "augbench_results": "config, library, repeat, transform", "augbench_planned": "config, library, transform",
            "augbench_cells": "config, library, transform"}


@contextmanager
def loader_lock(warehouse: Path, timeout_s: float = 600.0) -> Iterator[None]:
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    with open(warehouse.with_suffix(".lock"), "w") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{warehouse}: another loader held the lock for {timeout_s:g}s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def loader_temp_files(warehouse: Path) -> list[tuple[Path, int]]:
    """The loaders' scratch files beside `warehouse` (`.<name>.<pid>.tmp` and its `.wal`), with the pid of each."""
    pattern = re.compile(rf"\.{re.escape(warehouse.name)}\.(\d+)\.tmp(\.wal)?")
    try:
        names = sorted(os.listdir(warehouse.parent))
    except FileNotFoundError:
        return []
    return [(warehouse.parent / n, int(m.group(1))) for n in names if (m := pattern.fullmatch(n))]


def orphaned_loader_temps(warehouse: Path) -> list[Path]:
    """Scratch files of loaders that died mid-rebuild (killed, disk full): their pid is no live process."""
    return [p for p, pid in loader_temp_files(warehouse) if pid != os.getpid() and not pid_alive(pid)]


def rebuild_warehouse(home: Path, warehouse: Path) -> dict[str, int]:
    """Rebuild every table from the artifacts under `home`; return row counts per table."""
    import duckdb

    with loader_lock(warehouse):
        # A loader killed mid-rebuild leaves a scratch file as big as the warehouse; the lock says none is live.
        for leftover in orphaned_loader_temps(warehouse):
            leftover.unlink(missing_ok=True)
        frames = {name: build(home) for name, build in TABLES.items()}
        tmp = warehouse.with_name(f".{warehouse.name}.{os.getpid()}.tmp")
        wal = tmp.with_name(tmp.name + ".wal")
        tmp.unlink(missing_ok=True)
        wal.unlink(missing_ok=True)
        try:
            con = duckdb.connect(str(tmp))
            try:
                for name, df in frames.items():
                    con.execute(create_sql(name))  # typed even when empty (no artifacts of this kind yet)
                    if df.empty:
                        continue
                    drift = column_drift(name, list(df.columns))
                    if drift:
                        raise ValueError(drift)
                    con.register("frame", df)
                    con.execute(insert_sql(name, "frame", ORDER_BY[name]))
                    con.unregister("frame")
                con.execute("CHECKPOINT")
            finally:
                con.close()
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, warehouse)
            fsync_dir(warehouse.parent)
        finally:
            tmp.unlink(missing_ok=True)
            wal.unlink(missing_ok=True)  # left by a failed write (disk full) before the checkpoint
    return {name: len(df) for name, df in frames.items()}


def read_table(warehouse: Path, sql: str) -> list[dict[str, Any]]:
    """Run a read-only query; the file is replaced whole on load, so readers never meet a writer."""
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()

