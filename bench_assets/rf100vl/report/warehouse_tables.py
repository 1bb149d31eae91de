"""The RF100-VL tables of the warehouse: their declared column types and the builders that read them from the
artifacts under BENCH_HOME (datasets, runs, epochs, scores, submissions, catalogue, suites, models, published).

Handed to the report's loader through the family contribution (`rf100vl/contribution.py`); the platform's
warehouse engine creates each table with exactly these types, so an empty campaign has the same schema as a
full one, and a builder whose columns drift from the declaration fails the load loudly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_assets.platform.warehouse import WarehouseTable
from bench_assets.rf100vl.datasets.catalog import catalog_entry
from bench_assets.rf100vl.datasets.lock import roboflow_version
from bench_assets.rf100vl.datasets.sources import read_spec
from bench_assets.rf100vl.datasets.store import current_version, iter_versions, load_record
from bench_assets.rf100vl.datasets.verify import SPLITS
from bench_assets.rf100vl.scoring.eval_store import all_score_files, is_current_score, predictions_path
from bench_assets.rf100vl.training import run_store

if TYPE_CHECKING:
    import pandas as pd

_SCORE_METRICS = ("mAP50_95", "mAP50", "mAP75", "mAP_small", "mAP_medium", "mAP_large",
                  "AR1", "AR10", "AR100", "AR_small", "AR_medium", "AR_large", "AR_max_det")

COLUMNS: dict[str, dict[str, str]] = {
    "datasets": {
        "dataset": "VARCHAR", "version": "VARCHAR", "is_current": "BOOLEAN", "created_at": "VARCHAR",
        "source_kind": "VARCHAR", "source_ref": "VARCHAR", "source_version": "VARCHAR", "suites": "VARCHAR[]",
        "roboflow_project": "VARCHAR", "roboflow_version": "BIGINT", "locked_roboflow_version": "BIGINT",
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
        "images_sha256": "VARCHAR",  # NULL for a version locked before image hashes (lock format v1)
        "images_over_max_det": "BIGINT",  # images with more boxes than maxDets 500 (NULL: placed before it was counted)
    },
    "runs": {
        "model": "VARCHAR", "dataset": "VARCHAR", "dataset_version": "VARCHAR", "run_signature": "VARCHAR",
        "is_current": "BOOLEAN", "family": "VARCHAR", "size": "VARCHAR", "run_variant": "VARCHAR",
        "recipe_file": "VARCHAR", "recipe_sha256": "VARCHAR", "recipe_conformant": "BOOLEAN", "epochs": "BIGINT",
        "epochs_done": "BIGINT", "best_epoch": "BIGINT", "valid_mAP50": "DOUBLE", "valid_mAP50_95": "DOUBLE",
        "physical_batch": "BIGINT", "effective_batch": "BIGINT", "accumulation": "BIGINT", "imgsz": "BIGINT",
        "amp": "BOOLEAN", "wall_seconds": "DOUBLE", "resumed": "BOOLEAN", "train_images": "BIGINT",
        "max_annotations_per_image": "BIGINT", "best_checkpoint": "VARCHAR", "best_checkpoint_sha256": "VARCHAR",
        "started": "VARCHAR", "finished": "VARCHAR", "run_dir": "VARCHAR", "worker": "VARCHAR", "device": "VARCHAR",
        "init_weights": "VARCHAR", "init_weights_sha256": "VARCHAR",  # NULL: trained from scratch
        "base_model": "VARCHAR", "seed": "BIGINT",  # a replicate (model@seedN) repeats base_model with its seed
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
        "path": "VARCHAR", "engine": "VARCHAR", "reference_engine": "VARCHAR", "parity_tol": "DOUBLE",
        "parity_precision_cells_differing": "BIGINT", "parity_recall_cells_differing": "BIGINT",
        "max_det_images_over": "BIGINT", "max_det_detections_cut": "BIGINT",
        "base_model": "VARCHAR", "seed": "BIGINT",
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
        "base_model": "VARCHAR", "seed": "BIGINT",
        "pilot": "VARCHAR[]",  # the campaign's first wave (empty: no pilot declared)
        "gate_override": "VARCHAR",  # the last `--override-gate` (JSON: at, red conditions); NULL: never
    },
    # Published RF100-VL mAP50-95 of other detectors (vendored CSV), for the comparison mart; with the LibreYOLO
    # family the published name stands for (NULL when LibreYOLO has none) and the size's place in its family.
    "published": {"model": "VARCHAR", "family": "VARCHAR", "size": "VARCHAR", "mAP50_95": "DOUBLE",
                  "source": "VARCHAR", "libreyolo_family": "VARCHAR", "size_rank": "BIGINT"},
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
}


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
            # the Roboflow export the data came from (when its source said) and the version the leaderboard locks
            "roboflow_project": (rec.lock.get("roboflow") or {}).get("project_name"),
            "roboflow_version": roboflow_version(rec.lock),
            "locked_roboflow_version": entry.version_id if entry else None,
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
            rows.append({"dataset": name, "version": version, "split": s, "images_sha256": None,
                         "images_over_max_det": None, **rec.manifest["splits"][s], **rec.lock["splits"][s]})
    return pd.DataFrame(rows)


def replicate_columns(model: str, recorded_seed: int | None = None) -> dict[str, Any]:
    """base_model and seed of a model key: a replicate `yolo9-t@seed1` is seed 1 of yolo9-t; a model is its own base
    with the seed its run recorded (the recipe's, 0), else 0. A key that does not parse stays its own base."""
    from bench_assets.rf100vl.training.runplan import parse_model

    try:
        key = parse_model(model)
    except ValueError:
        return {"base_model": model, "seed": 0 if recorded_seed is None else recorded_seed}
    seed = key.seed if key.seed is not None else (0 if recorded_seed is None else recorded_seed)
    return {"base_model": key.base, "seed": seed}  # model@resume: the model's own seed (its kill-and-resume check)


def _run_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for run_dir in run_store.finished_run_dirs(home):
        st = json.loads(run_store.stats_path(run_dir).read_text())
        rows.append({
            "model": st["model"], "dataset": st["dataset"], "dataset_version": st["dataset_version"],
            "run_signature": st["run_signature"], "is_current": run_store.is_current(run_dir),
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
            "worker": st.get("worker"),  # runs trained before the cluster existed have none
            "device": (st.get("device") or {}).get("device"),  # "cpu" on a CPU lane, a CUDA device otherwise
            "init_weights": (st.get("init_weights") or {}).get("name"),
            "init_weights_sha256": (st.get("init_weights") or {}).get("sha256"),
            **replicate_columns(st["model"], st.get("seed")),
        })
    return pd.DataFrame(rows)


def _epoch_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for run_dir in run_store.finished_run_dirs(home):
        st = json.loads(run_store.stats_path(run_dir).read_text())
        result_file = run_store.result_path(run_dir)
        result = json.loads(result_file.read_text()) if result_file.exists() else {}
        for e in result.get("epochs", []):
            rows.append({"model": st["model"], "dataset": st["dataset"], "run_signature": st["run_signature"],
                         "epoch": e["epoch"], "train_loss": e.get("train_loss"),
                         "valid_mAP50": e.get("valid_mAP50"), "valid_mAP50_95": e.get("valid_mAP50_95"),
                         "seconds": e.get("seconds"), "lr": e.get("lr")})
    return pd.DataFrame(rows)


def _score_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for path in all_score_files(home):
        rec = json.loads(path.read_text())
        is_current = is_current_score(path, rec)
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
            **_engine_facts(rec), **replicate_columns(rec["model"]),
        })
    return pd.DataFrame(rows)


def _engine_facts(rec: dict[str, Any]) -> dict[str, Any]:
    """Which evaluator computed a score, how its zero-tolerance parity audit against pycocotools went, and how many
    detections the per-image max_det cut (NULL for records from before these were recorded)."""
    parity, cut = rec.get("parity") or {}, rec.get("max_det_cut") or {}
    arrays = parity.get("arrays") or {}
    return {"engine": rec.get("engine"), "reference_engine": (parity.get("engines") or {}).get("reference"),
            "parity_tol": parity.get("tol"),
            "parity_precision_cells_differing": (arrays.get("precision") or {}).get("differing"),
            "parity_recall_cells_differing": (arrays.get("recall") or {}).get("differing"),
            "max_det_images_over": cut.get("images_over"), "max_det_detections_cut": cut.get("detections_cut")}


def _catalog_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.rf100vl.datasets.catalog import load_catalog

    return pd.DataFrame([{"dataset": e.name, "domain": e.domain, "rf20vl": e.rf20vl, "num_classes": e.num_classes,
                          "num_images": e.num_images, "test_images": e.test_images, "license": e.license}
                         for e in load_catalog().values()])


def _suite_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.rf100vl.datasets.catalog import BUILTIN_SUITES, suite_members
    from bench_assets.rf100vl.training.models import iter_entries

    pairs = {(suite, d) for suite in BUILTIN_SUITES for d in suite_members(suite)}
    sources = home / "sources"
    for p in sorted(sources.glob("*.json")) if sources.exists() else []:
        spec = read_spec(sources, p.stem)
        pairs |= {(suite, p.stem) for suite in (spec.suites if spec else [])}
    for entry in iter_entries(home):
        if not entry.suite:
            pairs |= {(entry.expected_suite(), d) for d in entry.datasets}
    return pd.DataFrame(sorted(pairs), columns=["suite", "dataset"])


def _size_rank(family_name: str, size: str, recipe_sizes: list[str]) -> int:
    from bench_assets.rf100vl.training.families import FamilyError, family

    try:
        order = family(family_name).size_names
    except FamilyError:
        order = recipe_sizes
    return order.index(size) if size in order else recipe_sizes.index(size)


def _model_rows(home: Path) -> pd.DataFrame:
    import pandas as pd

    from bench_assets.rf100vl.datasets.catalog import suite_members
    from bench_assets.rf100vl.training.models import iter_entries, model_recipe

    rows = []
    for entry in iter_entries(home):
        key, loaded = model_recipe(home, entry.model)
        expected = len(suite_members(entry.suite)) if entry.suite else len(entry.datasets)
        rows.append({
            "model": entry.model, "family": key.family, "size": key.size,
            # adjacent sizes of a family are neighbours in LibreYOLO's size order (t < s < m < c), whatever recipe
            # each size was registered with; the recipe's own order for a family LibreYOLO does not list
            "size_rank": _size_rank(key.family, key.size, list(loaded.recipe.sizes)), "recipe": entry.recipe,
            "recipe_file": loaded.path,
            "recipe_sha256": loaded.sha256, "recipe_conformant": loaded.recipe.conformant,
            "recipe_nonconformities": loaded.recipe.nonconformities(), "suite": entry.expected_suite(),
            "expected_datasets": expected, **replicate_columns(entry.model), "pilot": entry.pilot,
            "gate_override": json.dumps(entry.gate_overrides[-1]) if entry.gate_overrides else None,
        })
    return pd.DataFrame(rows)


# The LibreYOLO family each published family name stands for (the published rows' own model keys say so:
# rfdetr-n, lwdetr-t, dfine-n; libreyolo9-t is LibreYOLO's yolo9). YOLO11 and YOLO26 are not LibreYOLO families.
PUBLISHED_FAMILIES = {"RF-DETR": "rfdetr", "LW-DETR": "lwdetr", "D-FINE": "dfine", "YOLOv9 (LibreYOLO)": "yolo9"}
# Size order for a published family LibreYOLO does not list (or a size it does not have), after LibreYOLO's sizes.
GENERIC_SIZES = ("atto", "femto", "pico", "n", "t", "s", "m", "c", "l", "x", "xl", "2xl")


def published_size_rank(libreyolo_family: str | None, size: str) -> int | None:
    """A published size's place in its family: LibreYOLO's size order when the family and size are LibreYOLO's,
    else after those in GENERIC_SIZES order; None for a size named nowhere."""
    from bench_assets.rf100vl.training.families import FamilyError, family

    size = size.lower()
    try:
        order = family(libreyolo_family).size_names if libreyolo_family else []
    except FamilyError:
        order = []
    if size in order:
        return order.index(size)
    return len(GENERIC_SIZES) + GENERIC_SIZES.index(size) if size in GENERIC_SIZES else None


def _published_rows(home: Path) -> pd.DataFrame:
    import csv
    from importlib import resources

    import pandas as pd

    text = resources.files("bench_assets.rf100vl").joinpath("data/rf100vl_published.csv").read_text()
    rows = []
    for r in csv.DictReader(text.splitlines()):
        ours = PUBLISHED_FAMILIES.get(r["family"])
        rows.append({**r, "mAP50_95": float(r["mAP50_95"]), "libreyolo_family": ours,
                     "size_rank": published_size_rank(ours, r["size"])})
    return pd.DataFrame(rows)


def _submission_files(home: Path) -> list[tuple[str, Path]]:
    from bench_assets.rf100vl.submission.build import imported_dir, submissions_dir

    ours = sorted(submissions_dir(home).glob("*.json")) if submissions_dir(home).exists() else []
    imported = sorted(imported_dir(home).glob("*.json")) if imported_dir(home).exists() else []
    return [("ours", p) for p in ours] + [("imported", p) for p in imported]


def _read_submission(origin: str, path: Path) -> tuple[dict[str, Any], list[str]]:
    """The document and its invalid reasons: ours as built, imported ones re-checked on every load."""
    from bench_assets.rf100vl.submission.build import SubmissionError, check_imported

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

    from bench_assets.platform.fsutil import sha256_file

    rows = []
    for origin, path in _submission_files(home):
        doc, reasons = _read_submission(origin, path)
        rf, acc = doc.get("rf100vl", {}), doc.get("accuracy", {})
        recipe = rf.get("recipe_sha256")
        ours = doc.get("bench") or {}
        rows.append({
            "model": doc["model"]["name"], "origin": origin, "created_at": doc.get("created_at"),
            "split": (doc.get("dataset") or {}).get("split"), "suite": ours.get("suite", "rf100vl"),
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
            version = d.get("dataset_version")
            rows.append({"model": doc["model"]["name"], "origin": origin, "dataset": d["dataset"],
                         "dataset_version": None if version is None else str(version),
                         **{c: d.get(c) for c in ("num_images", "num_classes", "weights_sha256",
                                                  "AR100", "AR_max_det", "wall_seconds")},
                         "mAP50_95": d.get("mAP_50_95"), "mAP50": d.get("mAP_50"), "mAP75": d.get("mAP_75")})
    return pd.DataFrame(rows)


# (table, builder, sort order); the column types are COLUMNS[table]
TABLES = tuple(WarehouseTable(name, COLUMNS[name], build, order_by) for name, build, order_by in (
    ("datasets", _dataset_rows, "dataset, version"),
    ("dataset_splits", _dataset_split_rows, "dataset, version, split"),
    ("runs", _run_rows, "model, dataset, run_signature"),
    ("epochs", _epoch_rows, "model, dataset, run_signature, epoch"),
    ("scores", _score_rows, "model, dataset, fingerprint"),
    ("catalog", _catalog_rows, "dataset"),
    ("suites", _suite_rows, "suite, dataset"),
    ("models", _model_rows, "model"),
    ("published", _published_rows, "model"),
    ("submissions", _submission_rows, "origin, model"),
    ("submission_datasets", _submission_dataset_rows, "origin, model, dataset"),
))
