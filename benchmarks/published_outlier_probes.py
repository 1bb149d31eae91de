"""The measurements behind the explanations in `bench_assets/augbench/data/published_outliers.csv` that are not a
library version or the published runner's torch input layout (those are shown by whole replication runs of
`benchmarks/augbench_vs_published.py`). Three probes, on the embedded native-size RGB media (`embedded_items`,
seed 0), single-threaded (OpenCV 1 thread, torch 1 thread), median of 5 repeats of N items, items/s:

1. **OpenCV's IPP on this machine.** `cv2.add(array, scalar)` through the Intel IPP that the OpenCV wheels bundle,
   against the same call with IPP switched off (`cv2.ipp.setUseIPP(False)`); then every AlbumentationsX RGB paper
   transform, built by the benchmark's own adapter, with IPP on and off. A transform whose speed moves by more
   than 1.5x is held back by IPP on this machine (the published c4-standard-16 does not show it).
2. **Pillow's output converted to numpy.** The published runner finishes every Pillow output with `load()` and
   `np.ascontiguousarray` inside its timer (`benchmark/utils.py: make_contiguous_transform_output`); this
   benchmark's rule only calls `load()`. Pillow's flips and transpose with and without that conversion.
3. **AlbumentationsX's HorizontalFlip output.** Whether the installed version returns a contiguous array or a
   reversed view, and what the published runner's `np.ascontiguousarray` then costs per call.
4. **Saturation's reference call.** The published AlbumentationsX row is `A.HueSaturationValue` with a
   saturation shift of +-127.5 (an RGB->HSV->RGB round trip, like Kornia's); this benchmark's row is `A.ColorJitter`
   with saturation only (a blend with the greyscale image, like Pillow's). Both calls, and Kornia's (both tables
   use the same Kornia call).

    .venv/bin/python benchmarks/published_outlier_probes.py [--items 100]

Prints the figures and writes `benchmarks/results/published_outlier_probes.json` (date, machine, command).
Informational: no target, never run by pytest.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

OUTPUT = REPO / "benchmarks" / "results" / "published_outlier_probes.json"
IPP_EFFECT = 1.5  # a transform whose speed moves more than this with IPP off is reported as held back by IPP
REPEATS = 5


def items_per_s(fn: Callable[[Any], Any], items: list[Any], finish: Callable[[Any], Any]) -> float:
    """Median over REPEATS of len(items) / time to run `finish(fn(x))` over the items (one warm-up pass)."""
    for x in items[:5]:
        finish(fn(x))
    rates = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for x in items:
            finish(fn(x))
        rates.append(len(items) / (time.perf_counter() - t0))
    return statistics.median(rates)


def per_call_us(fn: Callable[[], Any], number: int = 50) -> float:
    fn()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(times)


def probe_ipp(rgb: list[Any]) -> dict[str, Any]:
    import cv2
    import numpy as np

    from bench_assets.augbench import transform_specs as ts
    from bench_assets.augbench.adapters import get_adapter

    gradient = np.random.default_rng(0).random((375, 500), dtype=np.float32)
    image = rgb[0]
    calls: dict[str, dict[str, float]] = {}
    for use in (True, False):
        cv2.ipp.setUseIPP(use)
        key = "ipp_on" if use else "ipp_off"
        calls[key] = {
            "cv2.add(float32 375x500, 1.0) us": per_call_us(lambda: cv2.add(gradient, 1.0, dst=gradient)),
            "cv2.add(uint8 image, (10, 10, 10, 0)) us": per_call_us(lambda: cv2.add(image, (10, 10, 10, 0))),
            "cv2.multiply(float32 375x500, 0.5) us": per_call_us(lambda: cv2.multiply(gradient, 0.5, dst=gradient)),
        }
    adapter = get_adapter("albumentationsx")
    native = adapter.to_native(rgb, "rgb", "cpu")
    transforms: dict[str, dict[str, float]] = {}
    for row in ts.media_rows("rgb"):
        if "albumentationsx" not in row.libraries:
            continue
        rates = {}
        try:
            for use in (True, False):
                cv2.ipp.setUseIPP(use)
                fn = adapter.build(row.transform, "rgb", "cpu")  # a fresh build per setting: the same seeded draws
                rates["ipp_on" if use else "ipp_off"] = items_per_s(fn, native, adapter.materialize)
        except Exception as exc:  # noqa: BLE001 - e.g. a spec argument an older installed version does not take
            print(f"  {row.transform:22s} not measured: {type(exc).__name__}: {exc}", flush=True)
            continue
        rates["off_over_on"] = rates["ipp_off"] / rates["ipp_on"]
        transforms[row.transform] = rates
        print(f"  {row.transform:22s} IPP on {rates['ipp_on']:9.1f}  off {rates['ipp_off']:9.1f}  "
              f"x{rates['off_over_on']:.2f}", flush=True)
    cv2.ipp.setUseIPP(True)
    held_back = sorted(t for t, r in transforms.items() if r["off_over_on"] > IPP_EFFECT)
    return {"ipp_version": cv2.ipp.getIppVersion(), "opencv": cv2.__version__, "calls": calls,
            "albumentationsx_items_per_s": transforms, "held_back_by_ipp": held_back,
            "faster_with_ipp": sorted(t for t, r in transforms.items() if r["off_over_on"] < 1 / IPP_EFFECT)}


def probe_pillow_conversion(rgb: list[Any]) -> dict[str, Any]:
    import numpy as np
    from PIL import Image

    from bench_assets.augbench.adapters.base import materialize_output, published_runner_output

    images = [Image.fromarray(x) for x in rgb]
    ops = {"VerticalFlip": Image.Transpose.FLIP_TOP_BOTTOM, "HorizontalFlip": Image.Transpose.FLIP_LEFT_RIGHT,
           "Transpose": Image.Transpose.TRANSPOSE}
    out: dict[str, dict[str, float]] = {}
    for name, op in ops.items():
        fn = lambda im, op=op: im.transpose(op)  # noqa: E731
        rule = items_per_s(fn, images, materialize_output)
        published = items_per_s(fn, images, published_runner_output)
        out[name] = {"benchmark_rule": rule, "published_runner": published, "slowdown": rule / published}
    out["conversion_alone_us"] = per_call_us(lambda: np.ascontiguousarray(images[0]), 200)
    return out


def probe_hflip_output(rgb: list[Any]) -> dict[str, Any]:
    import albumentations as A
    import numpy as np

    flip = A.Compose([A.HorizontalFlip(p=1)], seed=0)
    out = flip(image=rgb[0])["image"]
    return {"albumentationsx": A.__version__, "strides": list(out.strides), "contiguous": bool(out.flags.c_contiguous),
            "call_us": per_call_us(lambda: flip(image=rgb[0])["image"], 300),
            "call_then_ascontiguousarray_us": per_call_us(lambda: np.ascontiguousarray(flip(image=rgb[0])["image"]),
                                                          300)}


def probe_saturation(rgb: list[Any]) -> dict[str, Any]:
    import albumentations as A
    import torch

    from bench_assets.augbench.adapters import get_adapter
    from bench_assets.augbench.adapters.base import materialize_output

    ours = get_adapter("albumentationsx")
    published = A.Compose([A.HueSaturationValue(hue_shift_range=(0, 0), sat_shift_range=(-127.5, 127.5),
                                                val_shift_range=(0, 0), p=1)], seed=0)
    out = {
        "albumentationsx ColorJitter, saturation only (this benchmark's call)": items_per_s(
            ours.build("Saturation", "rgb", "cpu"), ours.to_native(rgb, "rgb", "cpu"), ours.materialize),
        "albumentationsx HueSaturationValue, sat_shift_range=(-127.5, 127.5) (the published call)": items_per_s(
            lambda x: published(image=x)["image"], rgb, materialize_output),
    }
    torch.set_num_threads(1)
    kornia = get_adapter("kornia")
    out["kornia RandomSaturation (both)"] = items_per_s(kornia.build("Saturation", "rgb", "cpu"),
                                                        kornia.to_native(rgb, "rgb", "cpu"), kornia.materialize)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100, help="native-size RGB items per timed pass")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    import cv2
    import torch

    from bench_assets.augbench.media import embedded_items

    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    rgb = embedded_items("rgb", args.items).items
    print("1. OpenCV IPP on/off", flush=True)
    ipp = probe_ipp(rgb)
    for setting, figures in ipp["calls"].items():
        print(f"  {setting}: " + ", ".join(f"{k} {v:.0f}" for k, v in figures.items()))
    print(f"  held back by IPP (>{IPP_EFFECT}x): {', '.join(ipp['held_back_by_ipp']) or 'none'}")
    print("2. Pillow, output converted the published way", flush=True)
    pil = probe_pillow_conversion(rgb)
    for name, r in pil.items():
        print(f"  {name}: {r if isinstance(r, float) else {k: round(v, 2) for k, v in r.items()}}")
    print("3. AlbumentationsX HorizontalFlip output", flush=True)
    hflip = probe_hflip_output(rgb)
    print(f"  {hflip}")
    print("4. Saturation calls", flush=True)
    sat = probe_saturation(rgb)
    for name, rate in sat.items():
        print(f"  {name}: {rate:.1f} items/s")
    result = {
        "benchmark": "published_outlier_probes",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/published_outlier_probes.py " + " ".join(argv or sys.argv[1:]),
        "machine": {"cpu": _cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "load_1m": os.getloadavg()[0]},
        "items": args.items, "repeats": REPEATS, "media": "embedded native-size RGB, seed 0",
        "opencv_ipp": ipp, "pillow_published_conversion": pil,
        "albumentationsx_hflip_output": hflip, "saturation": sat,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.output}")
    return 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    raise SystemExit(main())
