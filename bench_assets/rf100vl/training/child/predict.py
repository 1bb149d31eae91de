"""Prediction child: ``python -m bench_assets.rf100vl.training.child.predict SPEC.json``.

Reads a :class:`~bench_assets.rf100vl.training.specs.PredictSpec`, runs a trained LibreYOLO checkpoint over every
image of one split of a canonical dataset and writes

* ``out_path``: gzip JSON list of COCO detections ``{"image_id", "category_id", "bbox": [x, y, w, h],
  "score"}`` in original image pixels, with the split's ORIGINAL image and category ids, bbox rounded to
  0.01 px, score at full precision, at most ``max_det`` per image (best scores first);
* ``out_path`` with suffix ``.result.json``: a :class:`PredictResult`.

Both are written atomically. Exit code 0 done, 86 out of memory, 1 anything else.

How: ``model.val(split=..., save_json=True)`` — LibreYOLO's validator batches the split through the same
letterbox preprocessing and NMS as training-time validation, caps each image at ``max_det`` after NMS,
and writes ``predictions.json`` with the annotation file's own image ids and the category ids it maps
back by name (docs/libreyolo_notes.md). The child then re-checks every id against the split's JSON,
re-applies the per-image cap, rounds and gzips.
"""

from __future__ import annotations

import gzip
import json
import sys
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import staging_dir
from bench_assets.rf100vl.training.child.common import (
    ANNOTATIONS_FILE,
    DROPPED_OUT_OF_RANGE,
    LIBREYOLO_SPLIT,
    Reporter,
    Stopwatch,
    atomic_write_bytes,
    atomic_write_json,
    build_model,
    install_class_guard,
    is_oom,
    load_libraries,
    pin_threads,
    read_spec_arg,
    require_local_file,
    write_data_yaml,
)
from bench_assets.rf100vl.training.specs import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_OOM,
    PredictResult,
    PredictSpec,
    predict_result_path,
)

VAL_BATCH = 16
TIMING_IMAGES = 50  # images timed one by one for the inference-cost figures (after one warm-up call)


def finalize_detections(raw: list[dict[str, Any]], image_ids: set[int], category_ids: set[int],
                        max_det: int) -> tuple[list[dict[str, Any]], int]:
    """Check ids, cap per image (highest scores), round boxes to 0.01 px; stable order by image then score. Returns
    the detections and how many had an inverted box (a negative width or height, which LibreYOLO's clipping to the
    image leaves when an untrained DETR predicts a sliver at an edge), written as zero-size boxes: COCO's boxes have
    no negative sides, and a zero-size box matches nothing, as the sliver did not."""
    per_image: dict[int, list[dict[str, Any]]] = defaultdict(list)
    inverted = 0
    for d in raw:
        iid, cid = int(d["image_id"]), int(d["category_id"])
        if iid not in image_ids:
            raise ValueError(f"prediction for image_id {iid}, which is not in the split's annotation file")
        if cid not in category_ids:
            raise ValueError(f"prediction with category_id {cid}, which is not in the split's annotation file")
        x, y, w, h = (round(float(v), 2) for v in d["bbox"])
        if w < 0 or h < 0:
            inverted += 1
            w, h = max(w, 0.0), max(h, 0.0)
        per_image[iid].append({"image_id": iid, "category_id": cid, "bbox": [x, y, w, h], "score": float(d["score"])})
    out: list[dict[str, Any]] = []
    for iid in sorted(per_image):
        dets = sorted(per_image[iid], key=lambda d: -d["score"])[:max_det]
        out.extend(dets)
    return out, inverted


def _percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, int(round(q * (len(sorted_ms) - 1))))]


def measure_inference(model: Any, images: list[Path], spec: PredictSpec) -> dict[str, Any]:
    """Per-image latency (batch 1, whole call: load, preprocess, forward, NMS) over up to TIMING_IMAGES test
    images after one warm-up call, parameters, GFLOPs of one forward at the input size, and peak memory."""
    import resource
    import statistics
    import time

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from bench_assets.platform.provenance import hardware_facts

    kwargs = {"imgsz": spec.imgsz, "conf": spec.conf, "iou": spec.iou, "max_det": spec.max_det}
    timed = images[:TIMING_IMAGES]
    model(str(timed[0]), **kwargs)  # warm-up: lazy initialisation is not inference
    total_ms = []
    for path in timed:
        t0 = time.perf_counter()
        model(str(path), **kwargs)
        total_ms.append((time.perf_counter() - t0) * 1000.0)
    ordered = sorted(total_ms)
    core = model.model
    with torch.no_grad(), FlopCounterMode(display=False) as flops:
        core(torch.zeros(1, 3, spec.imgsz, spec.imgsz, device=next(core.parameters()).device))
    cuda = torch.cuda.is_available() and spec.device != "cpu"
    return {
        "batch_size": 1, "num_images": len(timed),
        "total_ms": {"mean": statistics.fmean(total_ms), "std": statistics.pstdev(total_ms),
                     "p50": _percentile(ordered, 0.50), "p95": _percentile(ordered, 0.95),
                     "p99": _percentile(ordered, 0.99)},
        "params_millions": model.info(verbose=False)["parameters"] / 1e6,
        "gflops": flops.get_total_flops() / 1e9,
        "peak_ram_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "peak_vram_mb": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
        "input_size": spec.imgsz, "device": "gpu" if cuda else "cpu", "hardware": hardware_facts(),
    }


def _measured(model: Any, images: list[Path], spec: PredictSpec, reporter: Reporter) -> dict[str, Any] | None:
    """`measure_inference`, or None with a log line when it fails (the predictions do not depend on it)."""
    try:
        return measure_inference(model, images, spec)
    except Exception as exc:  # noqa: BLE001 - a cost figure is never worth failing the predictions
        reporter.info(f"inference cost not measured: {type(exc).__name__}: {exc}")
        return None


def run_predict(spec: PredictSpec, reporter: Reporter) -> tuple[int, int, dict[str, Any] | None]:
    weights = require_local_file(spec.weights, "weights")  # before the torch/LibreYOLO import
    dataset_dir = Path(spec.dataset_dir).resolve()
    ann = json.loads((dataset_dir / spec.split / ANNOTATIONS_FILE).read_text(encoding="utf-8"))
    image_ids = {int(i["id"]) for i in ann["images"]}
    category_ids = {int(c["id"]) for c in ann["categories"]}
    if len(spec.class_names) != spec.num_classes:
        raise ValueError(f"num_classes={spec.num_classes} but {len(spec.class_names)} class_names")

    load_libraries()  # after the spec's own checks: a bad spec fails before seconds of imports
    pin_threads()
    out_path = Path(spec.out_path).resolve()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    # A scratch folder owned by this process (`.tmp-predict-<pid>-...`): removed on exit, and one a kill left is
    # swept by the next prediction here or reported by `bench doctor` once its pid is gone.
    with staging_dir(out_path.parent, "predict") as work:
        data_yaml = write_data_yaml(dataset_dir, work, spec.class_names, splits=(spec.split,))
        model = build_model(spec.family, spec.size, spec.num_classes, spec.device, weights=str(weights))
        install_class_guard(spec.num_classes)
        reporter.info(f"predicting {spec.split} ({len(image_ids)} images) with {weights} imgsz={spec.imgsz} "
                      f"conf={spec.conf} iou={spec.iou} max_det={spec.max_det} device={spec.device}")
        metrics = model.val(
            data=str(data_yaml), split=LIBREYOLO_SPLIT[spec.split], imgsz=spec.imgsz, batch=VAL_BATCH,
            conf=spec.conf, iou=spec.iou, max_det=spec.max_det, eval_max_det=spec.max_det, workers=0,
            save_json=True, verbose=False,  # device: the model was built on spec.device already
            project=str(work), name="val", exist_ok=True,
        )
        raw = json.loads((work / "val" / "predictions.json").read_text(encoding="utf-8"))
        if DROPPED_OUT_OF_RANGE["detections"]:
            reporter.info(f"dropped {DROPPED_OUT_OF_RANGE['detections']} detections of a class index outside the "
                          f"model's {spec.num_classes} classes (RF-DETR's background column) before writing")
        dets, inverted = finalize_detections(raw, image_ids, category_ids, spec.max_det)
        if inverted:
            reporter.info(f"{inverted} detections had a negative width or height (an inverted box at an image edge); "
                          "written with that side 0")
        payload = json.dumps(dets, separators=(",", ":")).encode("utf-8")
        atomic_write_bytes(out_path, gzip.compress(payload, compresslevel=6, mtime=0))
        m = {k: metrics.get(k) for k in ("metrics/mAP50", "metrics/mAP50-95") if hasattr(metrics, "get")}
        reporter.info(f"wrote {len(dets)} detections to {out_path} (LibreYOLO's own score on this split: {m})")
        images = sorted(dataset_dir / spec.split / str(i["file_name"]) for i in ann["images"])
        return len(image_ids), len(dets), _measured(model, images, spec, reporter)


def main(argv: list[str] | None = None) -> int:
    clock = Stopwatch()
    spec = read_spec_arg(sys.argv[1:] if argv is None else argv, "bench_assets.rf100vl.training.child.predict",
                         PredictSpec)
    if spec is None:
        return EXIT_FAILED
    reporter = Reporter()
    images = detections = 0
    inference = None
    status, message, code = "failed", "", EXIT_FAILED
    try:
        images, detections, inference = run_predict(spec, reporter)
        status, code = "done", EXIT_DONE
    except BaseException as exc:  # noqa: BLE001 - every outcome must end in a result file
        code = EXIT_OOM if is_oom(exc) else EXIT_FAILED
        message = f"{type(exc).__name__}: {exc}"
        reporter.info(f"prediction failed: {message}")
        traceback.print_exc(file=sys.stderr)
    result = PredictResult(status=status, images=images, detections=detections,  # type: ignore[arg-type]
                           out_path=str(Path(spec.out_path).resolve()), wall_seconds=round(clock(), 3),
                           message=message, inference=inference)
    atomic_write_json(predict_result_path(spec.out_path), result.model_dump(mode="json"))
    reporter.close()
    return code


if __name__ == "__main__":
    from bench_assets.platform.process_gc import exit_process

    exit_process(main())
