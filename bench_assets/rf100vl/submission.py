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
import json
import platform
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bench_assets.platform.provenance import source_tree
from bench_assets.rf100vl.catalog import catalog_entry
from bench_assets.rf100vl.evaluation import CONF, MAX_DET, NMS_IOU, SPLIT, current_score
from bench_assets.rf100vl.models import read_entry
from bench_assets.rf100vl.recipes import PROTOCOL_VERSION, recipe_path
from bench_assets.rf100vl.runplan import parse_model
from bench_assets.rf100vl.store import current_version, load_record

SCHEMA = "va.submission.v1"
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
    dataset_version: str | None = None
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
    schema_: str = Field(alias="schema")
    benchmark: dict[str, Any]
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


def dataset_versions_sha256(versions: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(versions, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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


def build_submission(home: Path, model: str, *, now: str | None = None,
                     tree: dict[str, Any] | None = None) -> dict[str, Any]:
    """The va.submission.v1 document of `model` over the datasets of its campaign (the model registry)."""
    entry = read_entry(home, model)
    if entry is None:
        raise SubmissionError(f"{home / 'models' / (model + '.json')}: model {model!r} is not registered; "
                              f"run `bench campaign --model {model} --suite ...` first")
    key = parse_model(model)
    if entry.suite:
        from bench_assets.rf100vl.catalog import suite_members

        wanted = suite_members(entry.suite)
    else:
        wanted = list(entry.datasets)
    datasets_dir = home / "datasets"
    rows, versions, reasons = [], {}, []
    recipe_shas, conformant, nonconformities = set(), True, set()
    missing, stale = [], []
    hardware: dict[str, Any] = {}
    software: dict[str, Any] = {}
    for name in sorted(wanted):
        rec = current_score(home, model, name)
        if rec is None:
            missing.append(name)
            continue
        run_dir = home / "runs" / model / name
        pointer = run_dir / "CURRENT"
        stats = None
        if pointer.exists():
            stats_file = run_dir / pointer.read_text().strip() / "stats.json"
            stats = json.loads(stats_file.read_text()) if stats_file.exists() else None
        lock_version = current_version(datasets_dir, name)
        if lock_version is None or load_record(datasets_dir, name, lock_version) is None:
            reasons.append(f"{name}: no version lock stored for the dataset")
        elif lock_version != rec["dataset_version"]:
            stale.append(f"{name} (scored {rec['dataset_version']}, lock says {lock_version})")
        pin = rec["prediction_inputs"]
        recipe_shas.add(pin["recipe_sha256"])
        if stats is not None:
            conformant = conformant and bool(stats["recipe"]["conformant"])
            nonconformities.update(stats["recipe"].get("nonconformities") or [])
            hardware = {"device": stats["device"]["device"], "platform": platform.platform()}
            software = dict(stats.get("capabilities") or {})
        versions[name] = rec["dataset_version"]
        m = rec["metrics"]
        rows.append({
            "dataset": name, "domain": domain_of(name), "num_images": rec["num_images"],
            "num_classes": stats["data"]["num_classes"] if stats else None,
            "dataset_version": rec["dataset_version"], "weights_sha256": pin["weights_sha256"],
            "mAP_50": m["mAP50"], "mAP_50_95": m["mAP50_95"], "mAP_75": m["mAP75"], "AR100": m["AR100"],
            "AR_max_det": m["AR_max_det"], "wall_seconds": stats["wall_seconds"] if stats else None,
            "best_epoch": stats["best_epoch"] if stats else None,
            "valid_mAP_50_95": stats["valid_mAP50_95"] if stats else None,
            "split": rec["split"], "conf": pin["conf"], "nms_iou": pin["iou"], "max_det": pin["max_det"],
            "_metrics": m,
        })
    splits = {r["split"] for r in rows} or {SPLIT}
    ious = {r["nms_iou"] for r in rows} or {NMS_IOU}
    max_dets = {r["max_det"] for r in rows} or {MAX_DET}
    confs = {r["conf"] for r in rows} or {CONF}
    for split in sorted(splits - {SPLIT}):
        reasons.append(f"scored on split {split!r}, the leaderboard requires {SPLIT!r}")
    if len(rows) != EXPECTED_DATASETS:
        reasons.append(f"{len(rows)} datasets scored, the leaderboard requires exactly {EXPECTED_DATASETS}")
    if missing:
        reasons.append(f"{len(missing)} of the campaign's {len(wanted)} datasets have no score: "
                       f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
    for iou in sorted(ious):
        if abs(iou - NMS_IOU) > 1e-9:
            reasons.append(f"NMS IoU {iou}, the protocol requires {NMS_IOU}")
    for md in sorted(max_dets):
        if md != MAX_DET:
            reasons.append(f"max_det {md}, the protocol requires {MAX_DET}")
    for c in sorted(confs):
        if abs(c - CONF) > 1e-12:
            reasons.append(f"conf {c}, the protocol requires {CONF}")
    if stale:
        reasons.append(f"dataset versions differ from the stored lock: {', '.join(stale)}")
    if len(recipe_shas) > 1:
        reasons.append(f"mixed recipe hashes across datasets: {', '.join(sorted(s[:12] for s in recipe_shas))}")
    if not conformant:
        reasons.append(f"non-conformant recipe: {'; '.join(sorted(nonconformities))}")
    tree = tree if tree is not None else source_tree()
    if tree.get("dirty"):
        reasons.append(f"dirty source tree at {str(tree.get('commit'))[:12]}: {', '.join(tree['changed_files'][:5])}")
    elif tree.get("commit") is None:
        reasons.append("source tree commit unknown (not a git checkout); the run is not reproducible")
    accuracy = {out: _mean([r["_metrics"][src] for r in rows]) for src, out in ACCURACY_FIELDS.items()}
    for r in rows:
        del r["_metrics"]
    recipe_sha = sorted(recipe_shas)[0] if len(recipe_shas) == 1 else sorted(recipe_shas)
    recipe_file = str(recipe_path(key.family, entry.recipe))  # provenance; the hash above is what counts
    walls = [r["wall_seconds"] for r in rows if r["wall_seconds"] is not None]
    return {
        "schema": SCHEMA,
        "benchmark": {"name": "RF100-VL", "split": sorted(splits)[0], "suite": entry.suite or "custom"},
        "model": {"name": model, "family": key.family, "size": key.size},
        "config": {"conf": sorted(confs)[0], "iou": sorted(ious)[0], "max_det": sorted(max_dets)[0]},
        "hardware": hardware,
        "software": software,
        "runtime": {"train_wall_seconds_total": sum(walls) if walls else None,
                    "train_wall_seconds_median": sorted(walls)[len(walls) // 2] if walls else None},
        "accuracy": accuracy,
        "eval": {"maxDets": [1, 10, 100, MAX_DET]},
        "repro": {"datasets": sorted(versions), "versions": versions, "recipe": recipe_file,
                  "recipe_variant": entry.recipe, "source_tree": tree, "limits": None},
        "metadata": {"created_at": now or dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                     "builder": "bench_assets.rf100vl.submission"},
        "rf100vl": {
            "regime": "fine-tune",
            "aggregation": AGGREGATION,
            "protocol": {"version": PROTOCOL_VERSION, "nms_iou": NMS_IOU, "max_det": MAX_DET,
                         "expected_datasets": EXPECTED_DATASETS},
            "dataset_versions_sha256": dataset_versions_sha256(versions),
            "recipe_sha256": recipe_sha,
            "valid_submission": not reasons,
            "invalid_reasons": list(dict.fromkeys(reasons)),
            "domain_means": domain_means(rows),
            "datasets": rows,
        },
    }


def check_imported(doc: dict[str, Any], source: str) -> tuple[Submission, list[str]]:
    """Validate an imported file; return it and the reasons it is not a valid leaderboard entry.

    Raises SubmissionError when the file is malformed or its stated means disagree with its per-dataset
    entries (a summary that does not follow from its own data is not imported)."""
    from pydantic import ValidationError

    try:
        sub = Submission.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SubmissionError(f"{source}: field {loc}: {first['msg']}; fix the file "
                              f"({len(exc.errors())} problem(s) in all)") from None
    if sub.schema_ != SCHEMA:
        raise SubmissionError(f"{source}: field schema is {sub.schema_!r}, expected {SCHEMA!r}")
    rf = sub.rf100vl
    names = [d.dataset for d in rf.datasets]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SubmissionError(f"{source}: rf100vl.datasets lists {', '.join(dupes)} more than once")
    if not names:
        raise SubmissionError(f"{source}: rf100vl.datasets is empty; nothing to import")
    entries = [d.model_dump() for d in rf.datasets]
    problems = []
    for field, values in (("mAP_50_95", [d.mAP_50_95 for d in rf.datasets]),
                          ("mAP_50", [d.mAP_50 for d in rf.datasets])):
        stated = sub.accuracy.get(field)
        recomputed = _mean(values)
        if stated is None and field == "mAP_50_95":
            problems.append("accuracy.mAP_50_95 is missing")
        elif stated is not None and recomputed is not None and abs(stated - recomputed) > MEAN_TOLERANCE:
            problems.append(f"accuracy.{field} states {stated:.6f} but the mean over its {len(values)} datasets "
                            f"is {recomputed:.6f}")
    if rf.domain_means:
        ours = domain_means(entries)
        for domain, stated in sorted(rf.domain_means.items()):
            got = ours.get(domain)
            if got is None:
                problems.append(f"rf100vl.domain_means.{domain}: no dataset of that domain in rf100vl.datasets")
                continue
            for field in ("mAP_50_95", "mAP_50"):
                s, g = stated.get(field), got.get(field)
                if s is not None and g is not None and abs(s - g) > MEAN_TOLERANCE:
                    problems.append(f"rf100vl.domain_means.{domain}.{field} states {s:.6f} but its datasets "
                                    f"give {g:.6f}")
            if stated.get("datasets") is not None and stated["datasets"] != got["datasets"]:
                problems.append(f"rf100vl.domain_means.{domain}.datasets states {stated['datasets']} but "
                                f"{got['datasets']} datasets are listed")
    if problems:
        raise SubmissionError(f"{source}: the stated means do not follow from the per-dataset entries: "
                              + "; ".join(problems))
    reasons = protocol_reasons(split=str(sub.benchmark.get("split", "")), n_datasets=len(names),
                               expected=EXPECTED_DATASETS, nms_iou=rf.protocol.nms_iou, max_det=rf.protocol.max_det)
    if abs(sub.config.iou - NMS_IOU) > 1e-9 or sub.config.max_det != MAX_DET:
        reasons.append(f"config iou={sub.config.iou} max_det={sub.config.max_det} differ from the protocol")
    if rf.aggregation != AGGREGATION:
        reasons.append(f"aggregation {rf.aggregation!r}, the leaderboard requires {AGGREGATION!r}")
    if rf.valid_submission and reasons:
        reasons.insert(0, "the file claims valid_submission=true, but:")
    if not rf.valid_submission:
        reasons += [f"(stated in the file) {r}" for r in rf.invalid_reasons] or ["(stated in the file) invalid"]
    return sub, reasons


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
