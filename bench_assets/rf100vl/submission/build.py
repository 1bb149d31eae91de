"""`va.submission.v1`: the RF100-VL leaderboard submission of one model, built from the artifacts.

Every field is computed from files (current score records, run stats, dataset locks, the model
registry); `valid_submission` and each `invalid_reasons` entry follow from the protocol, never from a
hand edit. Imported submissions (a published leaderboard entry) are read with the same model, and
their headline and per-domain means are recomputed from their per-dataset entries and must agree with
what the file states.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bench_assets.platform.fsutil import canonical_json_sha256, sha256_file
from bench_assets.platform.provenance import package_versions, source_tree
from bench_assets.rf100vl.datasets.catalog import VERSIONS_FILE, catalog_entry, data_file, load_versions
from bench_assets.rf100vl.datasets.lock import roboflow_version
from bench_assets.rf100vl.datasets.store import DatasetRecord, current_version, load_record, version_stored
from bench_assets.rf100vl.scoring.eval_store import (
    CONF,
    MAX_DET,
    NMS_IOU,
    SPLIT,
    current_score,
    eval_root,
    predictions_path,
    score_path,
)
from bench_assets.rf100vl.submission import shape
from bench_assets.rf100vl.submission.schema import schema_problems
from bench_assets.rf100vl.training.models import ModelEntry, read_entry
from bench_assets.rf100vl.training.recipes import PROTOCOL_VERSION, recipe_path
from bench_assets.rf100vl.training.run_store import current_stats
from bench_assets.rf100vl.training.runplan import parse_model
from bench_assets.rf100vl.training.specs import predict_result_path

SCHEMA = "va.submission.v1"
HARNESS_VERSION = "0.1.0"  # the platform's package version (pyproject.toml)
PREDICT_BATCH = 16  # the prediction child's validation batch (child/predict.py VAL_BATCH)
VERSIONS_PATH = "bench_assets/rf100vl/data/rf100vl_versions.csv"
CATALOG_PATH = "bench_assets/rf100vl/data/rf100vl_datasets.csv"
EXPECTED_DATASETS = 100  # the leaderboard accepts the full RF100-VL benchmark only
AGGREGATION = "unweighted mean across datasets"
NOT_IN_CATALOG = "(not in RF100-VL)"
MEAN_TOLERANCE = 1e-4  # stated means vs recomputed ones (files round per-dataset values to 4 decimals)
# score-record metric name -> submission field name
ACCURACY_FIELDS = {
    "mAP50_95": "mAP_50_95", "mAP50": "mAP_50", "mAP75": "mAP_75", "mAP_small": "mAP_small",
    "mAP_medium": "mAP_medium", "mAP_large": "mAP_large", "AR1": "AR1", "AR10": "AR10", "AR100": "AR100",
    "AR_small": "AR_small", "AR_medium": "AR_medium", "AR_large": "AR_large", "AR_max_det": "AR_max_det",
}


class SubmissionError(ValueError):
    """A submission cannot be built or imported; the message names the file, the field and the fix."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class DatasetEntry(_Open):
    dataset: str
    num_images: int | None = None
    num_classes: int | None = None
    dataset_version: int | str | None = None  # Roboflow's integer version in the published shape
    weights_sha256: str | None = None
    mAP_50: float | None = Field(default=None, ge=0, le=1)
    mAP_50_95: float = Field(ge=0, le=1)
    mAP_75: float | None = Field(default=None, ge=0, le=1)
    AR100: float | None = Field(default=None, ge=0, le=1)
    AR_max_det: float | None = Field(default=None, ge=0, le=1)
    wall_seconds: float | None = None


class Protocol(_Open):
    version: str | None = None
    nms_iou: float
    max_det: int
    expected_datasets: int


class RF100VLBlock(_Open):
    regime: str | None = None
    aggregation: str
    protocol: Protocol
    dataset_versions_sha256: str | None = None
    recipe_sha256: str | list[str] | None = None
    valid_submission: bool
    invalid_reasons: list[str]
    domain_means: dict[str, dict[str, Any]] | None = None
    datasets: list[DatasetEntry]


class Config(_Open):
    conf: float
    iou: float
    max_det: int


class Submission(_Open):
    schema_version: str
    benchmark: dict[str, Any]
    dataset: dict[str, Any]  # the published schema requires it, with its `split`
    model: dict[str, Any]
    config: Config
    accuracy: dict[str, float | None]
    rf100vl: RF100VLBlock


def domain_of(dataset: str) -> str:
    entry = catalog_entry(dataset)
    return entry.domain if entry else NOT_IN_CATALOG


def _mean(values: list[float | None]) -> float | None:
    """Unweighted mean over defined values: COCO's -1 (stored as None) never enters a mean."""
    defined = [v for v in values if v is not None and v >= 0]
    return fmean(defined) if defined else None


def domain_means(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_domain.setdefault(domain_of(e["dataset"]), []).append(e)
    return {d: {"datasets": len(rows), "mAP_50_95": _mean([r["mAP_50_95"] for r in rows]),
                "mAP_50": _mean([r.get("mAP_50") for r in rows])} for d, rows in sorted(by_domain.items())}


def protocol_reasons(*, split: str, n_datasets: int, expected: int, nms_iou: float, max_det: int) -> list[str]:
    reasons = []
    if split != SPLIT:
        reasons.append(f"scored on split {split!r}, the leaderboard requires {SPLIT!r}")
    if n_datasets != expected:
        reasons.append(f"{n_datasets} datasets scored, the leaderboard requires exactly {expected}")
    if abs(nms_iou - NMS_IOU) > 1e-9:
        reasons.append(f"NMS IoU {nms_iou}, the protocol requires {NMS_IOU}")
    if max_det != MAX_DET:
        reasons.append(f"max_det {max_det}, the protocol requires {MAX_DET}")
    return reasons


@dataclass
class _CampaignScores:
    """What the current score records and run stats of a campaign's datasets say, gathered in name order."""

    rows: list[dict[str, Any]] = field(default_factory=list)  # one submission entry per scored dataset
    versions: dict[str, str] = field(default_factory=dict)  # dataset -> the version it was scored on
    lock_reasons: list[str] = field(default_factory=list)  # datasets with no stored version lock
    recipe_shas: set[str] = field(default_factory=set)
    conformant: bool = True
    nonconformities: set[str] = field(default_factory=set)
    missing: list[str] = field(default_factory=list)  # datasets with no score record
    stale: list[str] = field(default_factory=list)  # scored on another version than the lock says
    hardware: dict[str, Any] = field(default_factory=dict)  # device and precision of the last run with stats
    trained_with: dict[str, set[str]] = field(default_factory=dict)  # package -> the versions runs recorded
    unrecorded: list[str] = field(default_factory=list)  # datasets whose run recorded no library versions
    init_weights: set[tuple[str, str]] = field(default_factory=set)  # (name, sha256) runs started from; "" scratch

    def note_run_stats(self, stats: dict[str, Any]) -> None:
        """Fold in one training run's recipe conformance, starting weights, device, precision and library versions."""
        self.conformant = self.conformant and bool(stats["recipe"]["conformant"])
        init = stats.get("init_weights") or {}
        self.init_weights.add((init.get("name", ""), init.get("sha256", "")))
        self.nonconformities.update(stats["recipe"].get("nonconformities") or [])
        self.hardware = {"device": stats["device"]["device"],
                         "amp_dtype": (stats.get("precision") or {}).get("amp_dtype")}
        recorded = stats.get("capabilities") or {}
        if not recorded:
            self.unrecorded.append(str(stats.get("dataset")))
        for package, version in recorded.items():
            self.trained_with.setdefault(package, set()).add(str(version))


def _software_reasons(scores: _CampaignScores) -> list[str]:
    """A submission states one version per library: the one its runs trained with."""
    reasons = [f"the runs trained with {package} {', '.join(sorted(versions))}: retrain so one version trained all"
               for package, versions in sorted(scores.trained_with.items()) if len(versions) > 1]
    if scores.unrecorded:
        reasons.append(f"{len(scores.unrecorded)} run(s) recorded no library versions "
                       f"({', '.join(sorted(scores.unrecorded))}): retrain them")
    return reasons


def _campaign_datasets(entry: ModelEntry) -> list[str]:
    """The datasets a registered model's campaign covers: its suite's members, else its own list."""
    if entry.suite:
        from bench_assets.rf100vl.datasets.catalog import suite_members

        return suite_members(entry.suite)
    return list(entry.datasets)


def _stored_record(datasets_dir: Path, name: str, version: str | None) -> DatasetRecord | None:
    """Version `version` of dataset `name` as stored, or None when it is not on disk (purged since it was scored, or
    a CURRENT pointer naming nothing): the build then says so in its reasons instead of failing on a missing file."""
    if not version or not version_stored(datasets_dir / name / version):
        return None
    return load_record(datasets_dir, name, version)


def _dataset_row(home: Path, model: str, name: str, rec: dict[str, Any], stats: dict[str, Any] | None
                 ) -> dict[str, Any]:
    """The published entry of one scored dataset plus our own keys; `_metrics` and `_cost` are removed once
    averaged. `dataset_version` is the Roboflow version the scored data was exported from (None: unknown)."""
    pin, m = rec["prediction_inputs"], rec["metrics"]
    record = _stored_record(home / "datasets", name, rec["dataset_version"])
    pred = predictions_path(home, model, name, rec["inputs"]["predictions_fingerprint"])
    return {
        "dataset": name, "num_images": rec["num_images"],
        "num_classes": stats["data"]["num_classes"] if stats else None,
        "dataset_version": roboflow_version(record.lock) if record else None,
        "weights": stats["best_checkpoint"] if stats else "", "weights_sha256": pin["weights_sha256"],
        "result_file": str(score_path(home, model, name, rec["fingerprint"])), "predictions_file": str(pred),
        "resumed_from_cache": bool(stats["resumed"]) if stats else False,
        "wall_seconds": stats["wall_seconds"] if stats else None,
        "mAP_50": m["mAP50"], "mAP_50_95": m["mAP50_95"], "mAP_75": m["mAP75"], "AR100": m["AR100"],
        "AR_max_det": m["AR_max_det"],
        # ours, under keys of our own
        "domain": domain_of(name), "dataset_content_version": rec["dataset_version"],
        "image_id_sha256": pin["image_ids_sha256"], "best_epoch": stats["best_epoch"] if stats else None,
        "valid_mAP_50_95": stats["valid_mAP50_95"] if stats else None,
        "split": rec["split"], "conf": pin["conf"], "nms_iou": pin["iou"], "max_det": pin["max_det"],
        "imgsz": pin["imgsz"], "_metrics": m, "_cost": _inference_cost(pred),
    }


def _inference_cost(predictions_file: Path) -> dict[str, Any] | None:
    """What the prediction child measured of inference (latency, GFLOPs, memory, hardware), or None."""
    result = predict_result_path(predictions_file)
    if not result.exists():
        return None
    return json.loads(result.read_text()).get("inference")


def _collect_scores(home: Path, model: str, wanted: list[str]) -> _CampaignScores:
    """Read the current score, run stats and dataset lock of every wanted dataset, in name order."""
    scores = _CampaignScores()
    datasets_dir = home / "datasets"
    for name in sorted(wanted):
        rec = current_score(home, model, name)
        if rec is None:
            scores.missing.append(name)
            continue
        stats = current_stats(home, model, name)
        lock_version = current_version(datasets_dir, name)
        if _stored_record(datasets_dir, name, lock_version) is None:
            scores.lock_reasons.append(f"{name}: no version lock stored for the dataset")
        elif lock_version != rec["dataset_version"]:
            scores.stale.append(f"{name} (scored {rec['dataset_version']}, lock says {lock_version})")
        scores.recipe_shas.add(rec["prediction_inputs"]["recipe_sha256"])
        if stats is not None:
            scores.note_run_stats(stats)
        scores.versions[name] = rec["dataset_version"]
        scores.rows.append(_dataset_row(home, model, name, rec, stats))
    return scores


def _scored_settings(rows: list[dict[str, Any]]) -> dict[str, set[Any]]:
    """The distinct split, NMS IoU, max_det and conf the rows were scored with (the protocol's when no rows)."""
    return {"split": {r["split"] for r in rows} or {SPLIT},
            "nms_iou": {r["nms_iou"] for r in rows} or {NMS_IOU},
            "max_det": {r["max_det"] for r in rows} or {MAX_DET},
            "conf": {r["conf"] for r in rows} or {CONF}}


def _campaign_reasons(scores: _CampaignScores, settings: dict[str, set[Any]], n_wanted: int) -> list[str]:
    """Why the scored campaign breaks the leaderboard protocol (settings, coverage, versions, recipe)."""
    reasons = [f"scored on split {split!r}, the leaderboard requires {SPLIT!r}"
               for split in sorted(settings["split"] - {SPLIT})]
    if len(scores.rows) != EXPECTED_DATASETS:
        reasons.append(f"{len(scores.rows)} datasets scored, the leaderboard requires exactly {EXPECTED_DATASETS}")
    missing = scores.missing
    if missing:
        reasons.append(f"{len(missing)} of the campaign's {n_wanted} datasets have no score: "
                       f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
    reasons += [f"NMS IoU {iou}, the protocol requires {NMS_IOU}"
                for iou in sorted(settings["nms_iou"]) if abs(iou - NMS_IOU) > 1e-9]
    reasons += [f"max_det {md}, the protocol requires {MAX_DET}" for md in sorted(settings["max_det"]) if md != MAX_DET]
    reasons += [f"conf {c}, the protocol requires {CONF}" for c in sorted(settings["conf"]) if abs(c - CONF) > 1e-12]
    if scores.stale:
        reasons.append(f"dataset versions differ from the stored lock: {', '.join(scores.stale)}")
    if len(scores.init_weights) > 1:
        reasons.append("the runs started from different weights: " + ", ".join(
            f"{name or 'scratch'} {sha[:12]}".strip() for name, sha in sorted(scores.init_weights)))
    if len(scores.recipe_shas) > 1:
        reasons.append("mixed recipe hashes across datasets: "
                       f"{', '.join(sorted(s[:12] for s in scores.recipe_shas))}")
    if not scores.conformant:
        reasons.append(f"non-conformant recipe: {'; '.join(sorted(scores.nonconformities))}")
    return reasons


def _source_tree_reasons(tree: dict[str, Any]) -> list[str]:
    """Why the source tree the campaign ran from does not make it reproducible (dirty, or no commit)."""
    if tree.get("dirty"):
        return [f"dirty source tree at {str(tree.get('commit'))[:12]}: {', '.join(tree['changed_files'][:5])}"]
    if tree.get("commit") is None:
        return ["source tree commit unknown (not a git checkout); the run is not reproducible"]
    return []


def _version_reasons(rows: list[dict[str, Any]]) -> list[str]:
    """Datasets whose scored data is not the Roboflow version the leaderboard's versions lock names."""
    reasons = []
    for r in rows:
        entry = catalog_entry(r["dataset"])
        if entry is None:
            continue
        if r["dataset_version"] is None:
            reasons.append(f"{r['dataset']}: the Roboflow version of the scored data is unknown (not fetched through "
                           f"the rf100vl package); the versions lock names {entry.project_name} version "
                           f"{entry.version_id}")
        elif r["dataset_version"] != entry.version_id:
            reasons.append(f"{r['dataset']}: scored on Roboflow version {r['dataset_version']}, the versions lock "
                           f"(rf100vl.versions.v1) says {entry.version_id}")
    return reasons


def _accuracy_means(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """The headline accuracy block (unweighted means over datasets); strips each row's `_metrics`."""
    accuracy = {out: _mean([r["_metrics"][src] for r in rows]) for src, out in ACCURACY_FIELDS.items()}
    for r in rows:
        del r["_metrics"]
    return accuracy


def _inference_costs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured inference costs of the rows (those whose prediction child measured them); strips `_cost`."""
    costs = [r["_cost"] for r in rows if r.get("_cost")]
    for r in rows:
        r.pop("_cost", None)
    return costs


def _train_runtime(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    walls = [r["wall_seconds"] for r in rows if r["wall_seconds"] is not None]
    return {"train_wall_seconds_total": sum(walls) if walls else None,
            "train_wall_seconds_median": sorted(walls)[len(walls) // 2] if walls else None}


def _repro_block(scores: _CampaignScores, recipe_file: str, tree: dict[str, Any]) -> dict[str, Any]:
    """The published `repro` block: dataset and weights identities, the versions lock, the domain manifest."""
    rows = scores.rows
    ident = [{"dataset": r["dataset"], "num_images": r["num_images"], "image_id_sha256": r["image_id_sha256"],
              "version_id": r["dataset_version"]} for r in rows]
    weights = [{"dataset": r["dataset"], "file": r["weights"], "sha256": r["weights_sha256"],
                "source": "per-dataset-finetuned"} for r in rows]
    locked = {d: v for d, v in load_versions().items() if d in scores.versions}
    return {
        "harness_version": HARNESS_VERSION, "harness_commit": tree.get("commit") or "unknown",
        "harness_dirty": tree.get("dirty"), "protocol_version": PROTOCOL_VERSION,
        "argv": ["bench", "submission", "build"], "command": "bench submission build",
        "dataset": {"id": shape.BENCHMARK_ID, "split": SPLIT, "image_id_sha256": shape.dataset_identity(ident),
                    "identity_scheme": shape.DATASET_IDENTITY_SCHEME, "datasets": ident,
                    "versions": shape.versions_block(VERSIONS_PATH, sha256_file(data_file(VERSIONS_FILE)), locked),
                    "domain_manifest": _domain_manifest()},
        "weights": {"file": "per-dataset checkpoints", "sha256": shape.weights_identity(weights),
                    "source": "fine-tuned", "identity_scheme": shape.WEIGHTS_IDENTITY_SCHEME, "datasets": weights},
        "recipe": {"file": recipe_file, "sha256": ",".join(sorted(scores.recipe_shas)),
                   "source": "per-dataset stats.json", "dataset_count": len(rows)},
        "bench": {"source_tree": tree, "content_versions": scores.versions},  # ours: our content hashes
    }


def _domain_manifest() -> dict[str, Any]:
    """Where the domains come from: the rf100vl package's category file when installed, else our catalogue."""
    try:
        from importlib import resources as res

        asset = res.files("rf100vl").joinpath("assets/dataset_name_to_category.json")
        return shape.domain_manifest_block("rf100vl/assets/dataset_name_to_category.json",
                                           hashlib.sha256(asset.read_bytes()).hexdigest(),
                                           f"rf100vl=={importlib.metadata.version('rf100vl')} (PyPI)")
    except (ModuleNotFoundError, FileNotFoundError, importlib.metadata.PackageNotFoundError):
        return shape.domain_manifest_block(CATALOG_PATH, sha256_file(data_file("data/rf100vl_datasets.csv")),
                                           "unknown")


def _rf100vl_block(home: Path, model: str, scores: _CampaignScores, versions_sha256: str) -> dict[str, Any]:
    """The `rf100vl` block: protocol, hashes and the per-dataset entries (validity is set once every reason is
    known, by `build_submission`)."""
    recipe_shas = sorted(scores.recipe_shas)
    return {
        "regime": "fine-tuned",
        "aggregation": AGGREGATION,
        "protocol": {"version": PROTOCOL_VERSION, "nms_iou": NMS_IOU, "max_det": MAX_DET,
                     "expected_datasets": EXPECTED_DATASETS},
        "dataset_versions_sha256": versions_sha256,  # the versions lock's file hash, as published
        "recipe_sha256": ",".join(recipe_shas),
        "per_dataset_results_dir": str(eval_root(home) / model),
        "valid_submission": False,
        "invalid_reasons": [],
        "datasets": scores.rows,
        "skipped_datasets": sorted(scores.missing),
        # ours
        "content_versions_sha256": canonical_json_sha256(scores.versions),
        "domain_means": domain_means(scores.rows),
    }


def _init_weights(scores: _CampaignScores) -> tuple[str, str] | None:
    """The (name, sha256) every run started from, None when they differ or none was recorded; ("", "") scratch."""
    return next(iter(scores.init_weights)) if len(scores.init_weights) == 1 else None


def _identity(model: str, scores: _CampaignScores, wanted: list[str], imgsz: int | None) -> dict[str, Any]:
    """`model`, `dataset`, `config`, `eval` blocks: what was evaluated, on what, with which settings."""
    key = parse_model(model)
    settings = _scored_settings(scores.rows)
    num_images = sum(r["num_images"] for r in scores.rows)
    split = sorted(settings["split"])[0]
    return {
        "model": shape.model_block(model, key.family, key.size, imgsz, _init_weights(scores)),
        "dataset": {"id": shape.BENCHMARK_ID, "split": split, "num_images": num_images,
                    "num_datasets": len(scores.rows), "num_datasets_discovered": len(wanted),
                    "num_datasets_selected": len(wanted)},
        "config": {"batch_size": PREDICT_BATCH, "input_size": imgsz, "conf": sorted(settings["conf"])[0],
                   "iou": sorted(settings["nms_iou"])[0], "max_det": sorted(settings["max_det"])[0]},
        "eval": {"dataset": shape.BENCHMARK_ID, "split": split, "numImages": num_images,
                 "maxDets": [1, 10, 100, MAX_DET]},
    }


def _machine(scores: _CampaignScores, costs: list[dict[str, Any]], created_at: str) -> dict[str, Any]:
    """`benchmark`, `hardware`, `software`, `implementation`, `runtime`, `metadata` and the inference blocks."""
    versions = package_versions("torch", "libreyolo", "onnxruntime", "onnx", "tensorrt")
    # What trained the weights, not what is installed where the document is built (a later upgrade would
    # otherwise be credited with the scores); several versions are joined and named in the invalid reasons.
    versions |= {package: " + ".join(sorted(v)) for package, v in scores.trained_with.items() if package in versions}
    software = shape.software_block(platform.python_version(), versions)
    facts = (costs[0].get("hardware") or {}) if costs else {}
    return {
        "benchmark": {"harness": shape.HARNESS, "harness_version": HARNESS_VERSION,
                      "libreyolo_version": software["libreyolo"], "libreyolo_commit": "unknown",
                      "libreyolo_dirty": None},
        "hardware": shape.hardware_block(facts),
        "software": software,
        **(shape.inference_blocks(costs) if costs else {}),
        "metadata": {"benchmark_date": created_at[:10], "benchmark_version": HARNESS_VERSION},
        "implementation": {"provider": "libreyolo", "version": software["libreyolo"]},
        "runtime": shape.runtime_block(scores.hardware.get("amp_dtype"), scores.hardware.get("device", "cpu")),
    }


def build_submission(home: Path, model: str, *, now: str | None = None,
                     tree: dict[str, Any] | None = None) -> dict[str, Any]:
    """The va.submission.v1 document of `model` over the datasets of its campaign (the model registry), in the
    shape the published leaderboard entries have, validated against that shape's schema."""
    entry = read_entry(home, model)
    if entry is None:
        raise SubmissionError(f"{home / 'models' / (model + '.json')}: model {model!r} is not registered; "
                              f"run `bench campaign --model {model} --suite ...` first")
    wanted = _campaign_datasets(entry)
    scores = _collect_scores(home, model, wanted)
    reasons = scores.lock_reasons + _campaign_reasons(scores, _scored_settings(scores.rows), len(wanted))
    reasons += _version_reasons(scores.rows)
    reasons += _software_reasons(scores)
    tree = tree if tree is not None else source_tree()
    reasons += _source_tree_reasons(tree)
    created_at = now or dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    accuracy = _accuracy_means(scores.rows)
    costs = _inference_costs(scores.rows)
    imgsz = next((r["imgsz"] for r in scores.rows), None)
    recipe_file = str(recipe_path(parse_model(model).family, entry.recipe))
    doc = {"schema_version": SCHEMA, "submission_id": "", "created_at": created_at,
           **_identity(model, scores, wanted, imgsz), **_machine(scores, costs, created_at), "accuracy": accuracy,
           "repro": _repro_block(scores, recipe_file, tree)}
    doc["rf100vl"] = _rf100vl_block(home, model, scores, doc["repro"]["dataset"]["versions"]["sha256"])
    doc["submission_id"] = shape.submission_id(doc["model"], doc["runtime"], doc["hardware"], created_at)
    doc["bench"] = {"suite": entry.suite or "custom", "recipe_variant": entry.recipe,
                    "train_runtime": _train_runtime(scores.rows), "builder": "bench_assets.rf100vl.submission.build"}
    reasons += [f"not in the published shape: {p}" for p in schema_problems(doc)]
    doc["rf100vl"]["valid_submission"] = not reasons
    doc["rf100vl"]["invalid_reasons"] = list(dict.fromkeys(reasons))
    return doc


def _parse_submission(doc: dict[str, Any], source: str) -> Submission:
    """The document as a `Submission` in the published shape, or SubmissionError naming the bad fields."""
    from pydantic import ValidationError

    if isinstance(doc, dict) and "schema" in doc and "schema_version" not in doc:
        raise SubmissionError(f"{source}: field schema is set but the published shape's key is schema_version "
                              "(this is an older bench file); rebuild it with `bench submission build`")
    problems = schema_problems(doc)
    if problems:
        raise SubmissionError(f"{source}: not in the published va.submission.v1 shape ({len(problems)} problem(s)): "
                              + "; ".join(problems[:8]) + "; fix the file")
    try:
        sub = Submission.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SubmissionError(f"{source}: field {loc}: {first['msg']}; fix the file "
                              f"({len(exc.errors())} problem(s) in all)") from None
    return sub


def _require_distinct_datasets(names: list[str], source: str) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SubmissionError(f"{source}: rf100vl.datasets lists {', '.join(dupes)} more than once")
    if not names:
        raise SubmissionError(f"{source}: rf100vl.datasets is empty; nothing to import")


MEAN_CHECKED = ("mAP_50_95", "mAP_50", "mAP_75", "AR100", "AR_max_det")  # stated in accuracy and per dataset


def _accuracy_problems(sub: Submission) -> list[str]:
    """Where a stated headline mean (accuracy.<metric>) disagrees with the mean of the per-dataset entries."""
    datasets = sub.rf100vl.datasets
    problems = []
    for field_name in MEAN_CHECKED:
        stated = sub.accuracy.get(field_name)
        recomputed = _mean([getattr(d, field_name) for d in datasets])
        if stated is None and field_name == "mAP_50_95":
            problems.append("accuracy.mAP_50_95 is missing")
        elif stated is not None and recomputed is not None and abs(stated - recomputed) > MEAN_TOLERANCE:
            problems.append(f"accuracy.{field_name} states {stated:.6f} but the mean over its {len(datasets)} "
                            f"datasets is {recomputed:.6f}")
    return problems


def _count_problems(doc: dict[str, Any]) -> list[str]:
    """Where the stated counts and hashes disagree with the entries they summarise."""
    entries = doc["rf100vl"]["datasets"]
    out = []
    stated_images, summed = doc["dataset"]["num_images"], sum(e["num_images"] for e in entries)
    if stated_images != summed:
        out.append(f"dataset.num_images states {stated_images} but rf100vl.datasets sum to {summed}")
    if doc["dataset"]["num_datasets"] != len(entries):
        out.append(f"dataset.num_datasets states {doc['dataset']['num_datasets']} but {len(entries)} are listed")
    versions = doc["repro"]["dataset"]["versions"]
    if doc["rf100vl"]["dataset_versions_sha256"] != versions["sha256"]:
        out.append(f"rf100vl.dataset_versions_sha256 is {doc['rf100vl']['dataset_versions_sha256']} but "
                   f"repro.dataset.versions.sha256 is {versions['sha256']}")
    for e in entries:
        locked = (versions["datasets"].get(e["dataset"]) or {}).get("version_id")
        if locked is not None and e["dataset_version"] != locked:
            out.append(f"rf100vl.datasets[{e['dataset']}].dataset_version is {e['dataset_version']} but the file's "
                       f"own versions lock says {locked}")
    return out


def _lock_reasons(doc: dict[str, Any]) -> list[str]:
    """Datasets the file locks at another Roboflow project or version than rf100vl.versions.v1 (ours) does."""
    ours = load_versions()
    out = []
    for name, v in sorted(doc["repro"]["dataset"]["versions"]["datasets"].items()):
        if name in ours and (v["project_name"], v["version_id"]) != ours[name]:
            out.append(f"{name}: locked at {v['project_name']} version {v['version_id']}, rf100vl.versions.v1 "
                       f"says {ours[name][0]} version {ours[name][1]}")
    return out


def _domain_mean_problems(stated_means: dict[str, dict[str, Any]], entries: list[dict[str, Any]]) -> list[str]:
    """Where the stated rf100vl.domain_means disagree with the means recomputed from `entries`."""
    ours = domain_means(entries)
    problems = []
    for domain, stated in sorted(stated_means.items()):
        got = ours.get(domain)
        if got is None:
            problems.append(f"rf100vl.domain_means.{domain}: no dataset of that domain in rf100vl.datasets")
            continue
        for field_name in ("mAP_50_95", "mAP_50"):
            s, g = stated.get(field_name), got.get(field_name)
            if s is not None and g is not None and abs(s - g) > MEAN_TOLERANCE:
                problems.append(f"rf100vl.domain_means.{domain}.{field_name} states {s:.6f} but its datasets "
                                f"give {g:.6f}")
        if stated.get("datasets") is not None and stated["datasets"] != got["datasets"]:
            problems.append(f"rf100vl.domain_means.{domain}.datasets states {stated['datasets']} but "
                            f"{got['datasets']} datasets are listed")
    return problems


def _leaderboard_reasons(sub: Submission, n_datasets: int) -> list[str]:
    """Why a well-formed imported file is not a valid leaderboard entry, its own stated reasons included."""
    rf = sub.rf100vl
    split = str(sub.dataset["split"])
    reasons = protocol_reasons(split=split, n_datasets=n_datasets,
                               expected=EXPECTED_DATASETS, nms_iou=rf.protocol.nms_iou, max_det=rf.protocol.max_det)
    if abs(sub.config.conf - CONF) > 1e-9:
        reasons.append(f"config conf={sub.config.conf}, the protocol scores every detection above {CONF}")
    if abs(sub.config.iou - NMS_IOU) > 1e-9 or sub.config.max_det != MAX_DET:
        reasons.append(f"config iou={sub.config.iou} max_det={sub.config.max_det} differ from the protocol")
    if rf.aggregation != AGGREGATION:
        reasons.append(f"aggregation {rf.aggregation!r}, the leaderboard requires {AGGREGATION!r}")
    if rf.valid_submission and reasons:
        reasons.insert(0, "the file claims valid_submission=true, but:")
    if not rf.valid_submission:
        reasons += [f"(stated in the file) {r}" for r in rf.invalid_reasons] or ["(stated in the file) invalid"]
    return reasons


def check_imported(doc: dict[str, Any], source: str) -> tuple[Submission, list[str]]:
    """Validate an imported file; return it and the reasons it is not a valid leaderboard entry.

    Raises SubmissionError when the file is malformed or its stated means disagree with its per-dataset
    entries (a summary that does not follow from its own data is not imported)."""
    sub = _parse_submission(doc, source)
    rf = sub.rf100vl
    names = [d.dataset for d in rf.datasets]
    _require_distinct_datasets(names, source)
    problems = _accuracy_problems(sub) + _count_problems(doc)
    if rf.domain_means:
        problems += _domain_mean_problems(rf.domain_means, [d.model_dump() for d in rf.datasets])
    if problems:
        raise SubmissionError(f"{source}: the stated means do not follow from the per-dataset entries: "
                              + "; ".join(problems))
    return sub, _lock_reasons(doc) + _leaderboard_reasons(sub, len(names))


def import_submission(home: Path, file: Path) -> tuple[Path, Submission, list[str]]:
    """Validate `file` and store it under BENCH_HOME/submissions/imported/<model>.json."""
    from bench_assets.platform.fsutil import atomic_write_bytes

    try:
        raw = file.read_bytes()
        doc = json.loads(raw)
    except OSError as exc:
        raise SubmissionError(f"{file}: cannot read ({exc.strerror}); check the path") from None
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{file}: not JSON ({exc.msg} at line {exc.lineno}); fix the file") from None
    sub, reasons = check_imported(doc, str(file))
    name = str(sub.model.get("name") or "")
    if not name or "/" in name or name.startswith("."):
        raise SubmissionError(f"{file}: field model.name is {name!r}; give the model a plain name")
    if (home / "models" / f"{name}.json").exists():
        raise SubmissionError(f"{file}: model.name {name!r} is one of our registered models; rename the imported "
                              "entry (e.g. add a '-published' suffix)")
    out = imported_dir(home) / f"{name}.json"
    atomic_write_bytes(out, raw)
    return out, sub, reasons


def submissions_dir(home: Path) -> Path:
    return home / "submissions"


def imported_dir(home: Path) -> Path:
    return submissions_dir(home) / "imported"


def submission_path(home: Path, model: str) -> Path:
    return submissions_dir(home) / f"{model}.json"
