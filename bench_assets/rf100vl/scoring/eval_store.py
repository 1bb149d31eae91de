"""Fingerprints and files of predictions and scores (pure; no Dagster, no torch).

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
    from bench_assets.rf100vl.scoring.coco import BothResult

CONF = 0.001
NMS_IOU = 0.65
MAX_DET = 500
SPLIT = "test"
_SCORING_CODE = Path(__file__).with_name("coco.py")


def fingerprint(inputs: dict[str, Any]) -> str:
    return canonical_json_sha256(inputs)


def eval_dir(home: Path, model_key: str, dataset: str) -> Path:
    return home / "eval" / model_key / dataset


def prediction_inputs(stats: dict[str, Any], lock: dict[str, Any], imgsz: int) -> dict[str, Any]:
    return {
        "kind": "predictions", "dataset": stats["dataset"], "dataset_version": lock["version"],
        "model": stats["model"], "split": SPLIT,
        "image_ids_sha256": lock["splits"][SPLIT]["image_ids_sha256"],
        "weights_sha256": stats["best_checkpoint_sha256"], "recipe_sha256": stats["recipe"]["sha256"],
        "run_signature": stats["run_signature"], "conf": CONF, "iou": NMS_IOU, "max_det": MAX_DET, "imgsz": imgsz,
    }


def predictions_path(home: Path, model_key: str, dataset: str, fp: str) -> Path:
    return eval_dir(home, model_key, dataset) / f"{fp[:16]}.predictions.json.gz"


def scoring_code_sha256() -> str:
    return sha256_file(_SCORING_CODE)


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
    return eval_dir(home, model_key, dataset) / f"{fp[:16]}.score.json"


def current_predictions_pointer(home: Path, model_key: str, dataset: str) -> Path:
    """Names the fingerprint of the predictions the partition's latest materialization produced."""
    return eval_dir(home, model_key, dataset) / "CURRENT.predictions"


def current_score_pointer(home: Path, model_key: str, dataset: str) -> Path:
    """Names the fingerprint of the score the partition's latest materialization produced or reused."""
    return eval_dir(home, model_key, dataset) / "CURRENT.score"


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
    scores = [json.loads(p.read_text()) for p in sorted(eval_dir(home, model_key, dataset).glob("*.score.json"),
                                                         key=lambda p: p.stat().st_mtime)]
    matching = [s for s in scores if s["inputs"]["predictions_fingerprint"] == fp]
    return matching[-1] if matching else None


def current_predictions_meta(home: Path, model_key: str, dataset: str) -> dict[str, Any] | None:
    pointer = current_predictions_pointer(home, model_key, dataset)
    if not pointer.exists():
        return None
    fp = pointer.read_text().strip()
    meta = eval_dir(home, model_key, dataset) / f"{fp[:16]}.predictions.meta.json"
    return json.loads(meta.read_text())
