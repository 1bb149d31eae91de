"""What finishing an output costs, per layout: the figures quoted in docs/augbench.md ("The materialization rule")
and in the torchvision explanations of data/published_outliers.csv.

On one 500x375 RGB uint8 image (random pixels, seeded), single-threaded (torch 1 thread, OpenCV 0 threads),
best of 5 repeats of N calls, microseconds per call:

- numpy views as the libraries return them (reversed along the width = HorizontalFlip, along the height =
  VerticalFlip, a 224 crop): `np.ascontiguousarray` (numpy's copy), `contiguous_copy` (the rule), and the
  baselines `cv2.flip` of the contiguous image and a plain `.copy()`;
- torch: `.contiguous()` of a CHW view with channels-last strides (what `torchvision.io.read_image` returns and
  the published runner copies inside its timer), and torchvision's `horizontal_flip` on a contiguous CHW tensor
  and on that channels-last view followed by `.contiguous()` (the published runner's per-call cost).

    .venv/bin/python benchmarks/materialize_copy.py

Prints a table and writes `benchmarks/results/materialize_copy.json` (date, command, figures). Informational:
no target, never run by pytest.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

OUTPUT = REPO / "benchmarks" / "results" / "materialize_copy.json"


def per_call_us(fn, number: int) -> float:  # noqa: ANN001
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> int:
    import cv2
    import numpy as np
    import torch
    from torchvision.transforms.v2 import functional as tvf

    from bench_assets.augbench.adapters.base import contiguous_copy

    cv2.setNumThreads(0)
    torch.set_num_threads(1)
    img = np.random.default_rng(0).integers(0, 256, (375, 500, 3), dtype=np.uint8)
    views = {"HorizontalFlip view": img[:, ::-1], "VerticalFlip view": img[::-1], "224 crop view": img[50:274, 80:304]}
    rows: dict[str, float] = {}
    for name, view in views.items():
        rows[f"{name}: np.ascontiguousarray"] = per_call_us(lambda v=view: np.ascontiguousarray(v), 300)
        rows[f"{name}: contiguous_copy (the rule)"] = per_call_us(lambda v=view: contiguous_copy(v), 2000)
    rows["baseline: cv2.flip(image, 1)"] = per_call_us(lambda: cv2.flip(img, 1), 2000)
    rows["baseline: image.copy()"] = per_call_us(img.copy, 2000)
    chw = torch.from_numpy(img).permute(2, 0, 1)  # channels-last strides, as read_image returns
    contiguous = chw.contiguous()
    rows["torch: .contiguous() of a read_image-layout CHW view"] = per_call_us(chw.contiguous, 2000)
    rows["torchvision horizontal_flip, contiguous CHW input"] = per_call_us(
        lambda: tvf.horizontal_flip(contiguous).contiguous(), 2000)
    rows["torchvision horizontal_flip, read_image-layout input + .contiguous()"] = per_call_us(
        lambda: tvf.horizontal_flip(chw).contiguous(), 500)
    width = max(map(len, rows))
    print(f"| {'what (500x375x3 uint8, 1 thread)':{width}s} | us per call |")
    print(f"|{'-' * (width + 2)}|---:|")
    for k, v in rows.items():
        print(f"| {k:{width}s} | {v:.1f} |")
    doc = {"benchmark": "materialize_copy", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "command": ".venv/bin/python benchmarks/materialize_copy.py", "python": platform.python_version(),
           "machine": platform.machine(), "cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2),
           "versions": {"numpy": np.__version__, "opencv": cv2.__version__, "torch": torch.__version__},
           "us_per_call": rows}
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
