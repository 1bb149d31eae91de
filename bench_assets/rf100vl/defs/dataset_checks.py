"""Asset checks on `rf100vl/dataset` (per partition) and preflight checks on `rf100vl/catalog`."""

import json
import warnings
from collections.abc import Iterable

import dagster as dg

from bench_assets.platform.check_results import check_result
from bench_assets.platform.fsutil import free_space
from bench_assets.rf100vl.datasets.catalog import catalog_entry
from bench_assets.rf100vl.datasets.lock import legacy_lock_note, lock_mismatches
from bench_assets.rf100vl.datasets.promotion import class_count_problem
from bench_assets.rf100vl.datasets.store import DatasetRecord, load_record
from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE, PROTOCOL_MAX_DET, SPLITS
from bench_assets.rf100vl.defs.dataset_assets import catalog, dataset
from bench_assets.rf100vl.defs.partitions import dataset_partitions
from bench_assets.rf100vl.scoring import sanity
from bench_assets.rf100vl.scoring.eval_store import MAX_DET, SPLIT
from bench_assets.rf100vl.training.preflight import (
    CACHE_BYTES_PER_IMAGE,
    DEFAULT_CACHE_IMGSZ,
    PLATFORM_TRAIN_FIELDS,
    describe_projection,
    missing_train_fields,
    project_disk,
    trainconfig_fields,
    unwritable_dirs,
)
from resources.bench_home import BenchHome

# Partitioned asset checks are "preview" in dagster 1.13; they are exactly what per-dataset checks need.
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")


def _record(home: BenchHome, name: str) -> DatasetRecord | None:
    return load_record(home.datasets_dir, name)


def _missing(name: str) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR,
                               metadata={"dataset": name, "problem": "no stored version (materialize it first)"})


def _load_coco(record: DatasetRecord) -> Iterable[tuple[str, dict]]:
    for s in SPLITS:
        yield s, json.loads((record.path / s / ANNOTATIONS_FILE).read_bytes())


@dg.asset_check(asset=dataset, partitions_def=dataset_partitions, blocking=True,
                description="The stored files still match lock.json (annotation SHA-256, image ids, file counts, "
                            "every image's SHA-256).")
def lock_matches_files(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    record = _record(home, context.partition_key)
    if record is None:
        return _missing(context.partition_key)
    problems = lock_mismatches(record.path, record.lock)
    return dg.AssetCheckResult(passed=not problems, severity=dg.AssetCheckSeverity.ERROR, metadata={
        "version": record.version, "mismatches": dg.MetadataValue.json(problems),
        "splits_locked": len(record.lock["splits"]),
        "image_hashes": legacy_lock_note(record.lock) or "every image's SHA-256 compared"})


@dg.asset_check(asset=dataset, partitions_def=dataset_partitions,
                description="train, valid and test each hold images and boxes.")
def splits_non_empty(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    record = _record(home, context.partition_key)
    if record is None:
        return _missing(context.partition_key)
    counts = {s: {"images": len(d["images"]), "boxes": len(d["annotations"])} for s, d in _load_coco(record)}
    empty = [s for s, c in counts.items() if c["images"] == 0 or c["boxes"] == 0]
    return dg.AssetCheckResult(passed=not empty, metadata={"counts": dg.MetadataValue.json(counts),
                                                           "empty_splits": dg.MetadataValue.json(empty)})


@dg.asset_check(asset=dataset, partitions_def=dataset_partitions,
                description="No annotation id 0 (both COCO backends treat it as unmatched), no placeholder "
                            "supercategory, category ids contiguous from 0, area equal to bbox w*h.")
def hygiene(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    record = _record(home, context.partition_key)
    if record is None:
        return _missing(context.partition_key)
    found: dict[str, list] = {"annotation_id_zero": [], "placeholder_categories": [], "non_contiguous_ids": [],
                              "area_mismatch": []}
    for split, doc in _load_coco(record):
        cats = doc["categories"]
        used = {a["category_id"] for a in doc["annotations"]}
        supercats = {c.get("supercategory") for c in cats}
        found["placeholder_categories"] += [f"{split}:{c['name']}" for c in cats
                                            if c["name"] in supercats and c["id"] not in used]
        if sorted(c["id"] for c in cats) != list(range(len(cats))):
            found["non_contiguous_ids"].append(split)
        for a in doc["annotations"]:
            if a["id"] == 0:
                found["annotation_id_zero"].append(f"{split}:{a['image_id']}")
            if abs(a["area"] - a["bbox"][2] * a["bbox"][3]) > max(1.0, 0.01 * a["area"]):
                found["area_mismatch"].append(f"{split}:{a['id']}")
    passed = not any(found.values())
    return dg.AssetCheckResult(passed=passed, metadata={
        **{k: dg.MetadataValue.json(v[:20]) for k, v in found.items()},
        "normalisations_applied": dg.MetadataValue.json(record.manifest["normalisations"])})


@dg.asset_check(asset=dataset, partitions_def=dataset_partitions, blocking=True,
                description="Class count equals the RF100-VL catalogue's for catalogue datasets.")
def class_count_matches_catalog(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    name = context.partition_key
    record = _record(home, name)
    if record is None:
        return _missing(name)
    entry = catalog_entry(name)
    actual = record.manifest["num_classes"]
    if entry is None:
        return dg.AssetCheckResult(passed=True, metadata={"in_catalog": False, "classes": actual,
                                                          "note": "not a catalogue dataset: nothing to compare"})
    problem = class_count_problem(name, actual)
    return dg.AssetCheckResult(passed=problem is None, severity=dg.AssetCheckSeverity.ERROR, description=problem,
                               metadata={"in_catalog": True, "classes": actual, "catalog_classes": entry.num_classes})


@dg.asset_check(asset=dataset, partitions_def=dataset_partitions,
                description="The stored test ground truth fed back as predictions (score 1.0, same image and "
                            "category ids) scores mAP50-95 1.0 on every scoring backend (images with at most "
                            "max_det boxes): the scorer sees the ids the split holds.")
def ground_truth_scores_perfect(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    from bench_assets.rf100vl.scoring import coco as scoring
    from bench_assets.rf100vl.scoring.loading import load_json_any
    from bench_assets.rf100vl.scoring.results import BACKENDS, InputUnreadable
    record = _record(home, context.partition_key)
    if record is None:
        return _missing(context.partition_key)
    try:
        gt = load_json_any(record.path / SPLIT / ANNOTATIONS_FILE)  # what the scores asset reads
    except (OSError, InputUnreadable) as exc:
        return dg.AssetCheckResult(passed=False, description=f"{record.name} test: unreadable ground truth: {exc}")
    return check_result(sanity.ground_truth_scores_perfect(record.name, gt, BACKENDS, scoring.score,
                                                           MAX_DET))


@dg.asset_check(asset=dataset, partitions_def=dataset_partitions,
                description="Preflight warning: free disk covers training on this dataset (its files again plus "
                            "LibreYOLO's resized-image cache, ~953 KB per image at 640 px, plus 1 GB margin).")
def disk_projection(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    record = _record(home, context.partition_key)
    if record is None:
        return _missing(context.partition_key)
    splits = record.manifest["splits"]
    free = free_space(home.path)
    dataset_bytes = sum(s["bytes"] for s in record.lock["splits"].values())
    num_images = sum(splits[s]["images"] for s in SPLITS)
    projections = {imgsz: project_disk(free, dataset_bytes, num_images, imgsz)
                   for imgsz in sorted(CACHE_BYTES_PER_IMAGE, reverse=True)}
    proj = projections[DEFAULT_CACHE_IMGSZ]
    text = describe_projection(home.path, projections)
    return dg.AssetCheckResult(passed=proj.ok, severity=dg.AssetCheckSeverity.WARN, description=text, metadata={
        "free_gb": round(proj.free_bytes / 1e9, 2), "needed_gb": round(proj.needed_bytes / 1e9, 3),
        "cache_gb": round(proj.cache_bytes / 1e9, 3), "dataset_gb": round(proj.dataset_bytes / 1e9, 3),
        "needed_gb_by_cache_imgsz": dg.MetadataValue.json(
            {str(k): round(p.needed_bytes / 1e9, 3) for k, p in projections.items()}),
        "explanation": dg.MetadataValue.text(text)})


@dg.asset_check(asset=catalog,
                description="Preflight: every directory under BENCH_HOME the platform writes is writable.")
def writable_dirs(home: BenchHome) -> dg.AssetCheckResult:
    dirs = home.writable_dirs()
    bad = unwritable_dirs(dirs)
    return dg.AssetCheckResult(passed=not bad, metadata={"checked": dg.MetadataValue.json([str(d) for d in dirs]),
                                                         "unwritable": dg.MetadataValue.json(bad)})


@dg.asset_check(asset=catalog, description="Preflight: the installed LibreYOLO's TrainConfig has every field "
                                           "the platform sets (eval_max_det, amp_dtype, ...).")
def libreyolo_trainconfig(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    try:
        version, fields = trainconfig_fields()
    except (ModuleNotFoundError, LookupError, OSError, SyntaxError) as exc:
        return dg.AssetCheckResult(passed=False, metadata={"error": f"{exc.__class__.__name__}: {exc}"})
    missing = missing_train_fields(fields)
    return dg.AssetCheckResult(passed=not missing, metadata={
        "libreyolo_version": version, "missing_fields": dg.MetadataValue.json(missing),
        "required_fields": len(PLATFORM_TRAIN_FIELDS)})


@dg.asset_check(asset=dataset, partitions_def=dataset_partitions,
                description="Warning: no image has more ground-truth boxes than the protocol scores (maxDets 500); "
                            "on such images recall stays below 1 whatever the model.")
def boxes_within_max_det(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    record = _record(home, context.partition_key)
    if record is None:
        return _missing(context.partition_key)
    splits = record.manifest["splits"]
    over = {s: splits[s].get("images_over_max_det") for s in SPLITS}
    if any(n is None for n in over.values()):  # placed before the count was recorded: at least one over the max
        over = {s: int(splits[s]["boxes_per_image_max"] > PROTOCOL_MAX_DET) for s in SPLITS}
    bad = {s: n for s, n in over.items() if n}
    text = ("; ".join(f"{s}: {n} of {splits[s]['images']} image(s) over {PROTOCOL_MAX_DET} boxes (max "
                      f"{splits[s]['boxes_per_image_max']:,})" for s, n in bad.items())
            + f": the protocol scores {PROTOCOL_MAX_DET} detections per image") if bad else (
        f"every image has at most {PROTOCOL_MAX_DET} boxes (max "
        f"{max(splits[s]['boxes_per_image_max'] for s in SPLITS):,})")
    return dg.AssetCheckResult(passed=not bad, severity=dg.AssetCheckSeverity.WARN, description=text,
                               metadata={"images_over_max_det": dg.MetadataValue.json(over)})


dataset_checks = [lock_matches_files, splits_non_empty, hygiene, class_count_matches_catalog,
                  ground_truth_scores_perfect, disk_projection, boxes_within_max_det]
catalog_checks = [writable_dirs, libreyolo_trainconfig]
