"""Column types of every warehouse table, declared once.

Types are never inferred from the rows: a table with no artifacts yet, or a column that happens to be
all NULL (no catalogue dataset loaded, no parity differences), still gets its real type, so readers and
dbt models see the same schema on an empty campaign as on a full one. A builder that produces a column
not declared here (or misses one) fails the load loudly.
"""

from __future__ import annotations

_SCORE_METRICS = ("mAP50_95", "mAP50", "mAP75", "mAP_small", "mAP_medium", "mAP_large",
                  "AR1", "AR10", "AR100", "AR_small", "AR_medium", "AR_large", "AR_max_det")

TABLE_SCHEMAS: dict[str, dict[str, str]] = {
    "datasets": {
        "dataset": "VARCHAR", "version": "VARCHAR", "is_current": "BOOLEAN", "created_at": "VARCHAR",
        "source_kind": "VARCHAR", "source_ref": "VARCHAR", "source_version": "VARCHAR", "suites": "VARCHAR[]",
        "in_catalog": "BOOLEAN", "domain": "VARCHAR", "catalog_num_classes": "BIGINT", "num_classes": "BIGINT",
        "class_names": "VARCHAR[]", "images": "BIGINT", "boxes": "BIGINT", "train_images": "BIGINT",
        "valid_images": "BIGINT", "test_images": "BIGINT", "train_boxes": "BIGINT", "valid_boxes": "BIGINT",
        "test_boxes": "BIGINT", "train_boxes_per_image_mean": "DOUBLE", "max_annotations_per_image": "BIGINT",
        "megapixels_max": "DOUBLE", "size_bytes": "BIGINT", "train_annotations_sha256": "VARCHAR",
        "placeholder_categories_dropped": "BIGINT", "annotation_ids_renumbered": "BIGINT",
        "boxes_clipped": "BIGINT", "path": "VARCHAR",
    },
    "dataset_splits": {
        "dataset": "VARCHAR", "version": "VARCHAR", "split": "VARCHAR", "images": "BIGINT", "annotations": "BIGINT",
        "boxes_per_image_mean": "DOUBLE", "boxes_per_image_max": "BIGINT", "images_without_boxes": "BIGINT",
        "classes_present": "BIGINT", "megapixels_mean": "DOUBLE", "megapixels_max": "DOUBLE",
        "image_bytes": "BIGINT", "annotations_sha256": "VARCHAR", "image_ids_sha256": "VARCHAR",
        "num_images": "BIGINT", "num_files": "BIGINT", "bytes": "BIGINT",
    },
    "runs": {
        "model": "VARCHAR", "dataset": "VARCHAR", "dataset_version": "VARCHAR", "run_signature": "VARCHAR",
        "is_current": "BOOLEAN", "family": "VARCHAR", "size": "VARCHAR", "run_variant": "VARCHAR",
        "recipe_file": "VARCHAR", "recipe_sha256": "VARCHAR", "recipe_conformant": "BOOLEAN", "epochs": "BIGINT",
        "epochs_done": "BIGINT", "best_epoch": "BIGINT", "valid_mAP50": "DOUBLE", "valid_mAP50_95": "DOUBLE",
        "physical_batch": "BIGINT", "effective_batch": "BIGINT", "accumulation": "BIGINT", "imgsz": "BIGINT",
        "amp": "BOOLEAN", "wall_seconds": "DOUBLE", "resumed": "BOOLEAN", "train_images": "BIGINT",
        "max_annotations_per_image": "BIGINT", "best_checkpoint": "VARCHAR", "best_checkpoint_sha256": "VARCHAR",
        "started": "VARCHAR", "finished": "VARCHAR", "run_dir": "VARCHAR",
    },
    "epochs": {
        "model": "VARCHAR", "dataset": "VARCHAR", "run_signature": "VARCHAR", "epoch": "BIGINT",
        "train_loss": "DOUBLE", "valid_mAP50": "DOUBLE", "valid_mAP50_95": "DOUBLE", "seconds": "DOUBLE",
        "lr": "DOUBLE",
    },
    "scores": {
        "model": "VARCHAR", "dataset": "VARCHAR", "dataset_version": "VARCHAR", "fingerprint": "VARCHAR",
        "split": "VARCHAR", "is_current": "BOOLEAN", **{m: "DOUBLE" for m in _SCORE_METRICS},
        "backend": "VARCHAR", "parity_identical": "BIGINT", "parity_total": "BIGINT",
        "parity_max_abs_deviation": "DOUBLE", "parity_differing": "VARCHAR[]", "num_images": "BIGINT",
        "num_gt": "BIGINT", "num_dets": "BIGINT", "conf": "DOUBLE", "nms_iou": "DOUBLE", "max_det": "BIGINT",
        "imgsz": "BIGINT", "weights_sha256": "VARCHAR", "recipe_sha256": "VARCHAR", "run_signature": "VARCHAR",
        "predictions_sha256": "VARCHAR", "predictions_path": "VARCHAR", "scoring_code_sha256": "VARCHAR",
        "path": "VARCHAR",
    },
    # The RF100-VL catalogue (vendored CSV): domain of every benchmark dataset, stored locally or not.
    "catalog": {
        "dataset": "VARCHAR", "domain": "VARCHAR", "rf20vl": "BOOLEAN", "num_classes": "BIGINT",
        "num_images": "BIGINT", "test_images": "BIGINT", "license": "VARCHAR",
    },
    # Suite membership: built-in suites (rf100vl, rf20vl, mini) plus suites named when importing.
    "suites": {"suite": "VARCHAR", "dataset": "VARCHAR"},
    # Registered models (BENCH_HOME/models/<model>.json): the recipe and suite a campaign declared.
    "models": {
        "model": "VARCHAR", "family": "VARCHAR", "size": "VARCHAR", "size_rank": "BIGINT", "recipe": "VARCHAR",
        "recipe_file": "VARCHAR", "recipe_sha256": "VARCHAR", "recipe_conformant": "BOOLEAN",
        "recipe_nonconformities": "VARCHAR[]", "suite": "VARCHAR", "expected_datasets": "BIGINT",
    },
    # Published RF100-VL mAP50-95 of other detectors (vendored CSV), for the comparison mart.
    "published": {"model": "VARCHAR", "family": "VARCHAR", "size": "VARCHAR", "mAP50_95": "DOUBLE",
                  "source": "VARCHAR"},
    # va.submission.v1 files: ours (BENCH_HOME/submissions/<model>.json) and imported ones
    # (BENCH_HOME/submissions/imported/<model>.json), one row each.
    "submissions": {
        "model": "VARCHAR", "origin": "VARCHAR", "created_at": "VARCHAR", "split": "VARCHAR", "suite": "VARCHAR",
        "expected_datasets": "BIGINT", "datasets_scored": "BIGINT", "mAP50_95": "DOUBLE", "mAP50": "DOUBLE",
        "mAP75": "DOUBLE", "AR_max_det": "DOUBLE", "conf": "DOUBLE", "nms_iou": "DOUBLE", "max_det": "BIGINT",
        "recipe_sha256": "VARCHAR", "dataset_versions_sha256": "VARCHAR", "valid_submission": "BOOLEAN",
        "invalid_reasons": "VARCHAR[]", "path": "VARCHAR", "file_sha256": "VARCHAR",
    },
    "submission_datasets": {
        "model": "VARCHAR", "origin": "VARCHAR", "dataset": "VARCHAR", "dataset_version": "VARCHAR",
        "num_images": "BIGINT", "num_classes": "BIGINT", "weights_sha256": "VARCHAR", "mAP50_95": "DOUBLE",
        "mAP50": "DOUBLE", "mAP75": "DOUBLE", "AR100": "DOUBLE", "AR_max_det": "DOUBLE", "wall_seconds": "DOUBLE",
    },
    # augbench result files: one row per (config, library, repeat, transform) cell.
    "augbench_results": {
        "config": "VARCHAR", "media": "VARCHAR", "mode": "VARCHAR", "device": "VARCHAR", "library": "VARCHAR",
        "transform": "VARCHAR", "repeat": "BIGINT", "status": "VARCHAR", "reason": "VARCHAR",
        "throughputs": "DOUBLE[]", "runs": "BIGINT", "median": "DOUBLE", "mean": "DOUBLE", "std": "DOUBLE",
        "cv": "DOUBLE", "ci95_low": "DOUBLE", "ci95_high": "DOUBLE", "unstable": "BOOLEAN",
        "preflight_throughput": "DOUBLE", "startup_seconds": "DOUBLE", "peak_rss_mb": "DOUBLE",
        "peak_cuda_allocated_mb": "DOUBLE", "peak_cuda_reserved_mb": "DOUBLE", "num_items": "BIGINT",
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
    },
    # the planned cells of every registered augbench config (coverage is judged against these)
    "augbench_planned": {"config": "VARCHAR", "library": "VARCHAR", "transform": "VARCHAR",
                         "planned_status": "VARCHAR", "reason": "VARCHAR"},
}


def create_sql(table: str) -> str:
    cols = ", ".join(f'"{c}" {t}' for c, t in TABLE_SCHEMAS[table].items())
    return f"CREATE TABLE {table} ({cols})"


def insert_sql(table: str, frame: str, order_by: str) -> str:
    cols = ", ".join(f'CAST("{c}" AS {t})' for c, t in TABLE_SCHEMAS[table].items())
    return f"INSERT INTO {table} SELECT {cols} FROM {frame} ORDER BY {order_by}"


def column_drift(table: str, columns: list[str]) -> str | None:
    """A message when a builder's columns differ from the declared ones (None when they match)."""
    declared = set(TABLE_SCHEMAS[table])
    missing, extra = sorted(declared - set(columns)), sorted(set(columns) - declared)
    if not missing and not extra:
        return None
    return f"warehouse table {table}: builder columns differ from schema.py (missing {missing}, extra {extra})"
