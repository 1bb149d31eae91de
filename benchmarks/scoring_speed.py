"""Speed and parity benchmark of detection scoring (`bench_assets.rf100vl.scoring.score`).

Target: scoring a dense split (>= 200 images, >= 40 ground-truth boxes and >= 250 detections per
image): the fast path, end to end (load, evaluate, accumulate, summarize), >= 12x faster than stock
pycocotools in the same run, with all headline metrics identical.

The split is generated deterministically (seeded, numpy): `--images` images of 1024x1024, `--gt`
boxes per image over `--classes` classes with sizes log-uniform from 8 to 400 px (all three COCO
size buckets populated), and exactly `--dets` detections per image: a jittered hit for most boxes
(IoU spread over the 0.5:0.95 range and below), some duplicate hits, some hits with the wrong class,
and background false positives filling up to `--dets`; hits score higher than false positives on
average, with overlap. Scores are written with `--score-decimals` decimals (default 4, as a
prediction writer that rounds would: it produces score ties, which both backends must break alike).
GT and predictions are written as `.json` / `.json.gz` under `--workdir` and reused when cached.

Each backend is timed `--repeat` times (interleaved, median reported), each time end to end from the
files: `load_json_any` of the GT and of the gzip predictions, then `score(...)`, which validates the
inputs, builds the COCO objects, evaluates, accumulates and reads the 13 metrics. The library
imports happen once before timing (reported separately). The ratio is also reported for `score()`
alone on already-parsed documents (JSON parsing is the same for both backends).

    .venv/bin/python benchmarks/scoring_speed.py
    .venv/bin/python benchmarks/scoring_speed.py --images 40 --repeat 1     # quick smoke (not judged)

Prints a markdown table and one JSON line; exits 1 when the ratio is < 12x or any metric differs
(judged only at the target's size). Not a test: never run by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TARGET_RATIO = 12.0
IMAGE_SIZE = 1024
GENERATOR_VERSION = 1
MIN_IMAGES, MIN_GT, MIN_DETS = 200, 40, 250


# ---------------------------------------------------------------------------------------------
# Split generation


def _xywh_clip(b: Any) -> Any:
    import numpy as np

    x1 = np.clip(b[:, 0], 0, IMAGE_SIZE)
    y1 = np.clip(b[:, 1], 0, IMAGE_SIZE)
    x2 = np.clip(b[:, 0] + b[:, 2], 0, IMAGE_SIZE)
    y2 = np.clip(b[:, 1] + b[:, 3], 0, IMAGE_SIZE)
    return np.stack([x1, y1, np.maximum(x2 - x1, 1.0), np.maximum(y2 - y1, 1.0)], axis=1)


def generate(n_images: int, n_gt: int, n_dets: int, n_classes: int, seed: int, decimals: int
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    images = [{"id": i, "file_name": f"img_{i:05d}.jpg", "width": IMAGE_SIZE, "height": IMAGE_SIZE}
              for i in range(1, n_images + 1)]
    categories = [{"id": c, "name": f"class_{c}", "supercategory": "objects"} for c in range(n_classes)]
    annotations: list[dict[str, Any]] = []
    dets: list[dict[str, Any]] = []
    for img in images:
        side_w = np.exp(rng.uniform(np.log(8), np.log(400), n_gt))
        side_h = side_w * np.exp(rng.normal(0, 0.3, n_gt))
        xy = rng.uniform(0, IMAGE_SIZE, (n_gt, 2)) - np.stack([side_w, side_h], 1) / 2
        gt = _xywh_clip(np.column_stack([xy, side_w, side_h]).round(1))
        cls = rng.integers(0, n_classes, n_gt)
        for b, c in zip(gt.tolist(), cls.tolist(), strict=True):
            annotations.append({"id": len(annotations) + 1, "image_id": img["id"], "category_id": c, "bbox": b,
                                "area": b[2] * b[3], "iscrowd": 0})
        # hits: jitter proportional to box size; sigma varies so IoUs spread over 0.5..0.95 and below
        hit = rng.random(n_gt) < 0.9
        sig = rng.uniform(0.01, 0.15, n_gt)[:, None]
        wh = gt[:, 2:4]
        jit = np.column_stack([gt[:, :2] + rng.normal(0, 1, (n_gt, 2)) * sig * wh,
                               wh * np.exp(rng.normal(0, 1, (n_gt, 2)) * sig)])
        hits = _xywh_clip(jit)[hit]
        hit_cls = cls[hit].copy()
        wrong = rng.random(hit_cls.size) < 0.05
        hit_cls[wrong] = rng.integers(0, n_classes, int(wrong.sum()))
        hit_score = rng.beta(5, 2, hit_cls.size)
        dup = rng.random(n_gt) < 0.15
        dups = _xywh_clip(np.column_stack([gt[dup, :2] + rng.normal(0, 0.1, (int(dup.sum()), 2)) * wh[dup],
                                           wh[dup] * np.exp(rng.normal(0, 0.2, (int(dup.sum()), 2)))]))
        dup_score = rng.beta(2, 4, int(dup.sum()))
        n_fp = n_dets - len(hits) - len(dups)
        fp_w = np.exp(rng.uniform(np.log(8), np.log(300), n_fp))
        fps = _xywh_clip(np.column_stack([rng.uniform(0, IMAGE_SIZE, (n_fp, 2)), fp_w,
                                          fp_w * np.exp(rng.normal(0, 0.3, n_fp))]))
        fp_score = rng.beta(1.2, 6, n_fp)
        boxes = np.concatenate([hits, dups, fps]).round(2)
        scores = np.clip(np.concatenate([hit_score, dup_score, fp_score]), 0.001, 1.0).round(decimals)
        classes = np.concatenate([hit_cls, cls[dup], rng.integers(0, n_classes, n_fp)])
        order = np.argsort(-scores, kind="stable")
        for k in order.tolist():
            dets.append({"image_id": img["id"], "category_id": int(classes[k]), "bbox": boxes[k].tolist(),
                         "score": float(scores[k])})
    gt_doc = {"info": {"description": "scoring_speed synthetic dense split"}, "images": images,
              "categories": categories, "annotations": annotations}
    return gt_doc, dets


def ensure_files(workdir: Path, params: dict[str, Any]) -> tuple[Path, Path, bool]:
    import gzip

    gt_path, pred_path, marker = workdir / "gt.json", workdir / "predictions.json.gz", workdir / "params.json"
    if marker.exists() and json.loads(marker.read_text()) == params and gt_path.exists() and pred_path.exists():
        return gt_path, pred_path, False
    workdir.mkdir(parents=True, exist_ok=True)
    gt, dets = generate(params["images"], params["gt"], params["dets"], params["classes"], params["seed"],
                        params["decimals"])
    gt_path.write_text(json.dumps(gt))
    pred_path.write_bytes(gzip.compress(json.dumps(dets).encode(), compresslevel=6))
    marker.write_text(json.dumps(params))
    return gt_path, pred_path, True


# ---------------------------------------------------------------------------------------------
# Measurement


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=200)
    ap.add_argument("--gt", type=int, default=45, help="ground-truth boxes per image")
    ap.add_argument("--dets", type=int, default=260, help="detections per image")
    ap.add_argument("--classes", type=int, default=2)
    ap.add_argument("--score-decimals", type=int, default=4)
    ap.add_argument("--max-det", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "bench_scoring_speed")
    args = ap.parse_args()

    params = {"version": GENERATOR_VERSION, "images": args.images, "gt": args.gt, "dets": args.dets,
              "classes": args.classes, "seed": args.seed, "decimals": args.score_decimals}
    t = time.perf_counter()
    gt_path, pred_path, generated = ensure_files(args.workdir, params)
    gen_s = time.perf_counter() - t

    t = time.perf_counter()
    from bench_assets.rf100vl import scoring

    import_scoring_s = time.perf_counter() - t
    t = time.perf_counter()
    import faster_coco_eval  # noqa: F401

    import_fast_s = time.perf_counter() - t
    t = time.perf_counter()
    import pycocotools.cocoeval  # noqa: F401

    import_ref_s = time.perf_counter() - t

    backends = ("reference", "fast", "_fast_coco")
    runs: dict[str, list[dict[str, Any]]] = {b: [] for b in backends}
    results: dict[str, Any] = {}
    for _ in range(args.repeat):
        for backend in backends:
            t0 = time.perf_counter()
            gt = scoring.load_json_any(gt_path)
            dets = scoring.load_json_any(pred_path)
            t1 = time.perf_counter()
            if backend.startswith("_"):  # informational: faster-coco-eval's own COCO/COCOeval_faster route
                res = scoring._score(gt, dets, backend, args.max_det, str(pred_path))
            else:
                res = scoring.score(gt, dets, backend=backend, max_det=args.max_det)
            t2 = time.perf_counter()
            runs[backend].append({"end_to_end": t2 - t0, "parse": t1 - t0, "score": t2 - t1, **res.seconds})
            results[backend] = res

    def med(backend: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[backend])

    fast, ref = results["fast"], results["reference"]
    audit = scoring.parity(fast, ref, tol=0.0)
    audit_coco = scoring.parity(fast, results["_fast_coco"], tol=0.0)
    ratio = med("reference", "end_to_end") / med("fast", "end_to_end")
    ratio_score = med("reference", "score") / med("fast", "score")
    judged = args.images >= MIN_IMAGES and args.gt >= MIN_GT and args.dets >= MIN_DETS
    ok = ratio >= TARGET_RATIO and audit.identical == audit.total

    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpus; "
          f"split {fast.num_images} images, {fast.num_gt} GT boxes, {fast.num_dets} detections "
          f"({args.classes} classes, scores rounded to {args.score_decimals} decimals), max_det {args.max_det}; "
          f"files {'generated' if generated else 'cached'} ({gen_s:.1f} s) in {args.workdir}; "
          f"repeat {args.repeat}, median seconds")
    print(f"imports (once, not in the timings): scoring {import_scoring_s:.3f} s, faster_coco_eval "
          f"{import_fast_s:.3f} s, pycocotools.cocoeval {import_ref_s:.3f} s\n")
    keys = ("parse", "validate", "load", "evaluate", "accumulate", "summarize", "score", "end_to_end")
    print("| backend | " + " | ".join(keys) + " |")
    print("|---|" + "---:|" * len(keys))
    labels = {"reference": "reference (pycocotools)", "fast": "fast (faster-coco-eval C++ core, fed directly)",
              "_fast_coco": "informational: faster-coco-eval via its COCO + COCOeval_faster"}
    for backend in backends:
        print(f"| {labels[backend]} | " + " | ".join(f"{med(backend, k):.3f}" for k in keys) + " |")
    print("| reference / fast | " + " | ".join(
        f"{med('reference', k) / med('fast', k):.1f}x" if med("fast", k) > 0 else "" for k in keys) + " |")
    print("\n| metric | fast | reference | identical |")
    print("|---|---:|---:|:---:|")
    for name in scoring.METRICS:
        a, b = fast.metrics[name], ref.metrics[name]
        print(f"| {name} | {a!r} | {b!r} | {'yes' if a == b else 'NO'} |")
    verdict = ("PASS" if ok else "FAIL") if judged else "NOT JUDGED (below the target's size)"
    print(f"\n{verdict}: end to end {ratio:.1f}x (target >= {TARGET_RATIO:g}x; score() alone {ratio_score:.1f}x), "
          f"metrics identical {audit.identical}/{audit.total}, max deviation {audit.max_abs_deviation:.3g}; "
          f"fast vs COCOeval_faster route: identical {audit_coco.identical}/{audit_coco.total}, end to end "
          f"{med('_fast_coco', 'end_to_end') / med('fast', 'end_to_end'):.1f}x")
    print(json.dumps({
        "benchmark": "scoring_speed", "images": fast.num_images, "gt": fast.num_gt, "dets": fast.num_dets,
        "max_det": args.max_det, "repeat": args.repeat,
        "median_s": {b: {k: round(med(b, k), 4) for k in keys} for b in runs},
        "ratio_end_to_end": round(ratio, 2), "ratio_score": round(ratio_score, 2),
        "identical": audit.identical, "total": audit.total, "max_abs_deviation": audit.max_abs_deviation,
        "differing": audit.differing, "identical_vs_fast_coco": audit_coco.identical,
        "headline": fast.metrics[scoring.HEADLINE], "judged": judged,
        "pass": ok if judged else None,
    }))
    return 0 if ok or not judged else 1


if __name__ == "__main__":
    sys.exit(main())
