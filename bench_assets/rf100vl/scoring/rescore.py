"""`bench rescore`: recompute every current score from its saved predictions with the reference
backend (stock pycocotools) and report any metric that moved by more than 1e-6. Predictions that the
scoring validation now refuses are reported per partition (one `bench rescore:` line each, exit 1);
warnings of a scored file (an empty predictions list) go to stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOLERANCE = 1e-6


def rescore_all(home: Path, model: str | None = None, datasets: str | None = None) -> int:
    from bench_assets.rf100vl.datasets.store import load_record
    from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE
    from bench_assets.rf100vl.scoring import coco as scoring
    from bench_assets.rf100vl.scoring.eval_store import all_score_files, current_predictions_meta, predictions_path
    from bench_assets.rf100vl.scoring.loading import load_json_any
    from bench_assets.rf100vl.scoring.results import (
        GroundTruthInvalid,
        InputUnreadable,
        PredictionsInvalid,
        ScoreUndefined,
    )

    wanted = {d for d in (datasets or "").split(",") if d}
    records = all_score_files(home)
    checked, drifted, refused = 0, [], []
    for path in records:
        rec = json.loads(path.read_text())
        if (model and rec["model"] != model) or (wanted and rec["dataset"] not in wanted):
            continue
        meta = current_predictions_meta(home, rec["model"], rec["dataset"])
        if meta is None or meta["fingerprint"] != rec["inputs"]["predictions_fingerprint"]:
            continue  # a score of superseded predictions
        dataset_dir = load_record(home / "datasets", rec["dataset"], rec["dataset_version"]).path
        gt_file = dataset_dir / "test" / ANNOTATIONS_FILE
        pred_file = predictions_path(home, rec["model"], rec["dataset"], meta["fingerprint"])
        try:
            ref = scoring.score(load_json_any(gt_file), load_json_any(pred_file),
                                backend="reference", max_det=rec["inputs"]["max_det"], source=str(pred_file))
        except (OSError, InputUnreadable, GroundTruthInvalid, PredictionsInvalid,
                ScoreUndefined) as exc:
            print(f"bench rescore: {rec['model']}/{rec['dataset']}: cannot rescore: {exc}", file=sys.stderr)
            refused.append(f"{rec['model']}/{rec['dataset']}")
            continue
        for warning in ref.warnings:
            print(f"bench rescore: warning: {rec['model']}/{rec['dataset']}: {warning}", file=sys.stderr)
        diffs = {m: (rec["metrics"][m], v) for m, v in ref.metrics.items()
                 if (v is None) != (rec["metrics"][m] is None)
                 or (v is not None and abs(v - rec["metrics"][m]) > TOLERANCE)}
        checked += 1
        status = "ok" if not diffs else f"DIFFERS {diffs}"
        print(f"{rec['model']:12s} {rec['dataset']:28s} mAP50-95 recorded {rec['metrics']['mAP50_95']:.6f} "
              f"reference {ref.metrics['mAP50_95']:.6f}  {status}")
        if diffs:
            drifted.append(f"{rec['model']}/{rec['dataset']}")
    print(f"rescored {checked} partition(s) with the reference backend; {len(drifted)} differ by more than "
          f"{TOLERANCE:g}")
    if refused:
        print(f"bench rescore: {len(refused)} partition(s) could not be rescored: {', '.join(refused)}",
              file=sys.stderr)
    if drifted:
        print(f"bench rescore: scores differ for {', '.join(drifted)}", file=sys.stderr)
    return 1 if drifted or refused else 0
