"""`bench score GT.json PREDICTIONS.json[.gz]`: score saved detections, print the metrics as JSON.

Light on purpose: imports argparse, json and `scoring` (numpy) only; the COCO library of the chosen
backend is imported when scoring starts. No Dagster, torch or pandas, so `bench` can dispatch here
before importing anything heavy. Also runnable as `python -m bench_assets.cli.score`. The
process runs with the cyclic garbage collector paused (`no_gc`): it allocates two containers
per detection and frees nothing cyclic, and the collections would cost more than parsing.

Backends: `fast` (default; hotcoco's Rust COCOeval fed from the validated arrays), `reference` (stock
pycocotools), `hotcoco` (hotcoco's own COCO/loadRes route), `faster-coco-eval`, and `both` (fast
headline + reference + a parity audit of the metrics and of the accumulated precision/recall arrays,
zero tolerance).

More than `--max-det` detections on an image is scored as pycocotools scores it (each image and
category keeps its `--max-det` highest-scoring detections, ties in file order); the JSON says what
was over under `max_det_cut` and a warning names the images and how many detections were not
evaluated. `--strict` refuses such a file instead (the protocol's bound: at most `--max-det` per image).

Exit codes: 0 scored, 1 invalid input (missing file, bad JSON, invalid ground truth or predictions,
undefined headline; the reason goes to stderr as a `bench score:` line, never a traceback), 2 bad usage.
A file scored with a warning (an empty predictions list scores 0.0; images over `--max-det`) exits 0,
prints each warning on stderr as `bench score: warning: ...` and lists them under `warnings` in the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_assets.rf100vl.scoring import coco as scoring
from bench_assets.rf100vl.scoring.backends import PreparedGT
from bench_assets.rf100vl.scoring.loading import load_json_any, no_gc
from bench_assets.rf100vl.scoring.results import (
    BACKENDS,
    DEFAULT_MAX_DET,
    GroundTruthInvalid,
    InputUnreadable,
    PredictionsInvalid,
    ScoreResult,
    ScoreUndefined,
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench score",
        description="Score a COCO detections file against COCO ground truth; print the metrics as JSON.")
    p.add_argument("gt", type=Path, help="ground truth: COCO annotations (.json or .json.gz)")
    p.add_argument("predictions", type=Path, help="detections: COCO results list (.json or .json.gz)")
    p.add_argument("--backend", choices=(*BACKENDS, "both"), default="fast",
                   help="fast = hotcoco fed directly (default), reference = stock pycocotools, hotcoco = hotcoco's "
                        "COCO/loadRes route, faster-coco-eval, both = fast headline + reference + parity audit of "
                        "the metrics and the precision/recall arrays")
    p.add_argument("--max-det", type=int, default=DEFAULT_MAX_DET,
                   help="COCOeval's maxDets cap per image and category, where AP and AR_max_det are read "
                        f"(default {DEFAULT_MAX_DET})")
    p.add_argument("--strict", action="store_true",
                   help="refuse a file with more than --max-det detections on an image (all categories together), "
                        "as the protocol requires, instead of scoring it as pycocotools does")
    return p


def _result_json(r: ScoreResult) -> dict[str, Any]:
    return {"backend": r.backend, "engine": r.engine, "max_det": r.max_det, "num_images": r.num_images,
            "num_gt": r.num_gt, "num_dets": r.num_dets, "metrics": r.metrics,
            "seconds": {k: round(v, 4) for k, v in r.seconds.items()}, "warnings": list(r.warnings),
            "max_det_cut": r.max_det_cut.to_dict() if r.max_det_cut is not None else None}


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
    with no_gc():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    docs = []
    for what, path in (("ground truth", args.gt), ("predictions", args.predictions)):
        try:
            docs.append(load_json_any(path))
        except FileNotFoundError:
            return _fail(f"{what} file {path}: no such file")
        except IsADirectoryError:
            return _fail(f"{what} file {path}: is a directory, expected a .json or .json.gz file")
        except OSError as e:
            return _fail(f"{what} file {path}: cannot read ({e})")
        except InputUnreadable as e:
            return _fail(f"{what} {e}")
    gt, dets = docs
    try:
        out, res = _score(args, gt, dets)
    except (GroundTruthInvalid, PredictionsInvalid, ScoreUndefined) as e:
        return _fail(str(e))
    for warning in res.warnings:
        print(f"bench score: warning: {warning}", file=sys.stderr)
    out["gt_path"] = str(args.gt)
    out["predictions_path"] = str(args.predictions)
    print(json.dumps(out, indent=2))
    return 0


def _score(args: argparse.Namespace, gt: Any, dets: Any) -> tuple[dict[str, Any], ScoreResult]:
    """(the JSON to print, the headline result) for the chosen backend."""
    prepared = PreparedGT.build(gt, source=str(args.gt))
    source = str(args.predictions)
    if args.backend != "both":
        res = scoring.score(prepared, dets, backend=args.backend, max_det=args.max_det, source=source,
                            strict=args.strict)
        return _result_json(res), res
    both = scoring.score_both(prepared, dets, max_det=args.max_det, source=source, strict=args.strict)
    out = _result_json(both.headline)
    out["backend"] = "both"
    out["headline_backend"] = "fast"
    out["reference"] = _result_json(both.reference)
    out["parity"] = both.audit.to_dict()
    return out, both.headline


if __name__ == "__main__":
    from bench_assets.platform.process_gc import exit_process

    exit_process(main())
