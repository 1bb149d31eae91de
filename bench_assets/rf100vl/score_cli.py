"""`bench score GT.json PREDICTIONS.json[.gz]`: score saved detections, print the metrics as JSON.

Light on purpose: imports argparse, json and `scoring` (numpy) only; the COCO library of the chosen
backend is imported when scoring starts. No Dagster, torch or pandas, so `bench` can dispatch here
before importing anything heavy. Also runnable as `python -m bench_assets.rf100vl.score_cli`.

Exit codes: 0 scored, 1 invalid input (missing file, bad JSON, invalid ground truth or predictions,
undefined headline; the reason goes to stderr as a `bench score:` line, never a traceback), 2 bad usage.
A file scored with a warning (an empty predictions list scores 0.0) exits 0, prints each warning on
stderr as `bench score: warning: ...` and lists them under `warnings` in the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_assets.rf100vl import scoring


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench score",
        description="Score a COCO detections file against COCO ground truth; print the metrics as JSON.")
    p.add_argument("gt", type=Path, help="ground truth: COCO annotations (.json or .json.gz)")
    p.add_argument("predictions", type=Path, help="detections: COCO results list (.json or .json.gz)")
    p.add_argument("--backend", choices=("fast", "reference", "both"), default="fast",
                   help="fast = faster-coco-eval, reference = stock pycocotools, both = fast headline + "
                        "reference + parity audit (default: fast)")
    p.add_argument("--max-det", type=int, default=scoring.DEFAULT_MAX_DET,
                   help=f"max detections per image (protocol and metric cap; default {scoring.DEFAULT_MAX_DET})")
    return p


def _result_json(r: scoring.ScoreResult) -> dict[str, Any]:
    return {"backend": r.backend, "max_det": r.max_det, "num_images": r.num_images, "num_gt": r.num_gt,
            "num_dets": r.num_dets, "metrics": r.metrics, "seconds": {k: round(v, 4) for k, v in r.seconds.items()},
            "warnings": list(r.warnings)}


def _fail(msg: str) -> int:
    print(f"bench score: {msg}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:  # argparse: 2 on usage errors, 0 on --help
        return int(e.code or 0)
    if args.max_det < 1:
        parser.print_usage(sys.stderr)
        print(f"bench score: error: --max-det must be >= 1, got {args.max_det}", file=sys.stderr)
        return 2

    docs = []
    for what, path in (("ground truth", args.gt), ("predictions", args.predictions)):
        try:
            docs.append(scoring.load_json_any(path))
        except FileNotFoundError:
            return _fail(f"{what} file {path}: no such file")
        except IsADirectoryError:
            return _fail(f"{what} file {path}: is a directory, expected a .json or .json.gz file")
        except OSError as e:
            return _fail(f"{what} file {path}: cannot read ({e})")
        except scoring.InputUnreadable as e:
            return _fail(f"{what} {e}")
    gt, dets = docs
    try:
        gt = scoring.PreparedGT.build(gt, source=str(args.gt))
        if args.backend == "both":
            both = scoring.score_both(gt, dets, max_det=args.max_det, source=str(args.predictions))
            res = both.headline
            out = _result_json(res)
            out["backend"] = "both"
            out["headline_backend"] = "fast"
            out["reference"] = _result_json(both.reference)
            out["parity"] = both.audit.to_dict()
        else:
            res = scoring.score(gt, dets, backend=args.backend, max_det=args.max_det, source=str(args.predictions))
            out = _result_json(res)
    except (scoring.GroundTruthInvalid, scoring.PredictionsInvalid, scoring.ScoreUndefined) as e:
        return _fail(str(e))
    for warning in res.warnings:
        print(f"bench score: warning: {warning}", file=sys.stderr)
    out["gt_path"] = str(args.gt)
    out["predictions_path"] = str(args.predictions)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
