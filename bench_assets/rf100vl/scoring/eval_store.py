"""The layout of `BENCH_HOME/eval/`, and the fingerprints of predictions and scores (pure; no Dagster, no torch).

    eval/<model>/<dataset>/<fp16>.predictions.json.gz     the best checkpoint's detections on `test` (gzip COCO)
    eval/<model>/<dataset>/<fp16>.predictions.meta.json   what they were computed from (inputs, fingerprint)
    eval/<model>/<dataset>/<fp16>.score.json              COCO AP of one predictions file (`score_record`)
    eval/<model>/<dataset>/CURRENT.predictions            the fingerprint of the partition's current predictions
    eval/<model>/<dataset>/CURRENT.score                  the fingerprint of its current score

Every other module asks this one for these names, as `datasets/store.py` owns `datasets/` and
`training/run_store.py` owns `runs/`.

Every result carries the hash of everything that defined it. An unchanged fingerprint means the
stored file is the answer and nothing is recomputed; anything that changes (weights, test images,
thresholds, the scoring code) gives a new file beside the old one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_assets.platform.fsutil import canonical_json_sha256, sha256_file

if TYPE_CHECKING:
    from bench_assets.rf100vl.scoring.results import BothResult

CONF = 0.001
NMS_IOU = 0.65
MAX_DET = 500
SPLIT = "test"
# The scoring code a score depends on: a change to any of these files gives new score fingerprints (a rescore).
_SCORING_CODE = tuple(Path(__file__).with_name(f"{m}.py") for m in ("coco", "backends", "validation", "results",
                                                                     "loading"))


def fingerprint(inputs: dict[str, Any]) -> str:
    return canonical_json_sha256(inputs)


EVAL_DIR = "eval"
PREDICTIONS_SUFFIX = ".predictions.json.gz"
PREDICTIONS_META_SUFFIX = ".predictions.meta.json"
SCORE_SUFFIX = ".score.json"
CURRENT_PREDICTIONS = "CURRENT.predictions"
CURRENT_SCORE = "CURRENT.score"


def eval_root(home: Path) -> Path:
    return home / EVAL_DIR


def eval_dir(home: Path, model_key: str, dataset: str) -> Path:
    return eval_root(home) / model_key / dataset


def prediction_inputs(stats: dict[str, Any], lock: dict[str, Any], imgsz: int) -> dict[str, Any]:
    return {
        "kind": "predictions", "dataset": stats["dataset"], "dataset_version": lock["version"],
        "model": stats["model"], "split": SPLIT,
        "image_ids_sha256": lock["splits"][SPLIT]["image_ids_sha256"],
        "weights_sha256": stats["best_checkpoint_sha256"], "recipe_sha256": stats["recipe"]["sha256"],
        "run_signature": stats["run_signature"], "conf": CONF, "iou": NMS_IOU, "max_det": MAX_DET, "imgsz": imgsz,
    }


def predictions_path(home: Path, model_key: str, dataset: str, fp: str) -> Path:
    return eval_dir(home, model_key, dataset) / f"{fp[:16]}{PREDICTIONS_SUFFIX}"


def predictions_meta_path(home: Path, model_key: str, dataset: str, fp: str) -> Path:
    return eval_dir(home, model_key, dataset) / f"{fp[:16]}{PREDICTIONS_META_SUFFIX}"


def scoring_code_sha256() -> str:
    """One hash of the scoring modules' contents (each file's SHA-256, by name)."""
    return canonical_json_sha256({p.name: sha256_file(p) for p in _SCORING_CODE})


def score_inputs(pred_meta: dict[str, Any], predictions_file: Path, gt_file: Path) -> dict[str, Any]:
    return {
        "kind": "scores", "predictions_fingerprint": pred_meta["fingerprint"],
        "predictions_sha256": sha256_file(predictions_file), "gt_sha256": sha256_file(gt_file),
        "max_det": MAX_DET, "scoring_code_sha256": scoring_code_sha256(), "engines": scoring_engines(),
    }


def scoring_engines() -> list[str]:
    """The evaluator libraries and versions behind a campaign score (fast headline, reference audit): an
    upgrade of either gives a new score fingerprint, so the next materialization rescores."""
    from importlib.metadata import version

    return [f"{lib} {version(lib)}" for lib in ("hotcoco", "pycocotools")]


def score_record(fp: str, inputs: dict[str, Any], dataset: str, model: str, dataset_version: str,
                 both: BothResult, prediction_inputs: dict[str, Any]) -> dict[str, Any]:
    """The `<fp>.score.json` document of one partition: the fast headline (`engine`: the library and
    version that computed it), the reference metrics and their parity audit (metrics and accumulated
    precision/recall arrays, zero tolerance, with `engines`), `warnings`, what was scored but deserves
    a look (an empty predictions list, which scores 0.0; images over max_det), and `max_det_cut`, the
    facts about detections over max_det (`images_over`: images carrying more than max_det, which our
    own prediction step must never write; `detections_cut`: detections COCOeval did not evaluate;
    `images`: per image). The scores asset logs each warning at WARNING and shows them in its metadata."""
    head, ref = both.headline, both.reference
    cut = head.max_det_cut
    return {
        "fingerprint": fp, "inputs": inputs, "dataset": dataset, "model": model,
        "dataset_version": dataset_version, "split": SPLIT,
        "metrics": head.metrics, "backend": head.backend, "engine": head.engine,
        "reference_metrics": ref.metrics, "parity": both.audit.to_dict(),
        "num_images": head.num_images, "num_gt": head.num_gt, "num_dets": head.num_dets,
        "seconds": {"fast": head.seconds, "reference": ref.seconds},
        "warnings": list(head.warnings),
        "max_det_cut": cut.to_dict() if cut is not None else None,
        "prediction_inputs": prediction_inputs,
    }


def score_path(home: Path, model_key: str, dataset: str, fp: str) -> Path:
    return eval_dir(home, model_key, dataset) / f"{fp[:16]}{SCORE_SUFFIX}"


def score_files(home: Path, model_key: str, dataset: str) -> list[Path]:
    """Every score file of one partition, current or not, sorted by name."""
    return sorted(eval_dir(home, model_key, dataset).glob(f"*{SCORE_SUFFIX}"))


def all_score_files(home: Path) -> list[Path]:
    """Every score file under eval/, sorted."""
    root = eval_root(home)
    return sorted(root.glob(f"*/*/*{SCORE_SUFFIX}")) if root.exists() else []


def all_current_score_pointers(home: Path) -> list[Path]:
    """Every partition's CURRENT.score pointer under eval/, sorted."""
    root = eval_root(home)
    return sorted(root.glob(f"*/*/{CURRENT_SCORE}")) if root.exists() else []


def current_predictions_pointer(home: Path, model_key: str, dataset: str) -> Path:
    """Names the fingerprint of the predictions the partition's latest materialization produced."""
    return eval_dir(home, model_key, dataset) / CURRENT_PREDICTIONS


def current_score_pointer(home: Path, model_key: str, dataset: str) -> Path:
    """Names the fingerprint of the score the partition's latest materialization produced or reused."""
    return eval_dir(home, model_key, dataset) / CURRENT_SCORE


def is_current_score(score_file: Path, record: dict[str, Any]) -> bool:
    """Whether `score_file` (holding `record`) is its partition's current score: the one CURRENT.score names; homes
    from before that pointer existed fall back to "scores the current predictions" (ambiguous only after a
    rescore)."""
    score_pointer = score_file.parent / CURRENT_SCORE
    if score_pointer.exists():
        return score_pointer.read_text().strip() == record["fingerprint"]
    pointer = score_file.parent / CURRENT_PREDICTIONS
    current_pred = pointer.read_text().strip() if pointer.exists() else None
    return current_pred == record["inputs"]["predictions_fingerprint"]


def current_score(home: Path, model_key: str, dataset: str) -> dict[str, Any] | None:
    pointer = current_score_pointer(home, model_key, dataset)
    if pointer.exists():
        path = score_path(home, model_key, dataset, pointer.read_text().strip())
        return json.loads(path.read_text()) if path.exists() else None
    # Homes scored before the pointer existed: the newest score of the current predictions.
    pred = current_predictions_pointer(home, model_key, dataset)
    if not pred.exists():
        return None
    fp = pred.read_text().strip()
    scores = [json.loads(p.read_text()) for p in sorted(score_files(home, model_key, dataset),
                                                         key=lambda p: p.stat().st_mtime)]
    matching = [s for s in scores if s["inputs"]["predictions_fingerprint"] == fp]
    return matching[-1] if matching else None


def current_predictions_meta(home: Path, model_key: str, dataset: str) -> dict[str, Any] | None:
    pointer = current_predictions_pointer(home, model_key, dataset)
    if not pointer.exists():
        return None
    fp = pointer.read_text().strip()
    return json.loads(predictions_meta_path(home, model_key, dataset, fp).read_text())
