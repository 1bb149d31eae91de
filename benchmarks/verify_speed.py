"""Speed and memory benchmark of dataset verification (`bench_assets.rf100vl.datasets.verify.verify_dataset`).

Target: verifying a gwhd2021-sized split (6,000 images of 1024x1024, ~260k boxes) takes <= 20 s and
<= 2 GB peak RSS on the reference machine.

The dataset is generated deterministically (seeded) into `--workdir` and reused by later runs with
the same parameters. Roboflow layout, gwhd-like: `train` holds `--images` images with `--boxes` boxes
in total (per-image counts multinomial, mean ~43), `valid`/`test` hold `--small` images each; one
class plus Roboflow's category-0 placeholder; annotation ids from 0; area = w*h; no box needs
clipping. The images are real, decodable 1024x1024 JPEGs (quality 70, ~230 KB), but only
`N_DISTINCT_JPEGS` distinct ones are encoded and their bytes are written under all file names:
shallow verification reads each file's header (size, format) and its last KiB (end marker), so
its cost does not depend on pixel content; deep mode (`deep=True`) decodes every image, which is
measured separately on a subset.

Every measurement runs in a fresh interpreter so peak RSS (the child's VmHWM) is per run;
wall time is taken inside the child around the call only (interpreter start-up and module imports
excluded). Baselines measured in the same run on the same train annotation file:
`json.load` (the floor for any reader) and `pycocotools.coco.COCO(path)` (load + index, what every
evaluation pays). The page cache is warm (the files were just written or read), as on a machine
that verifies what it just downloaded.

    .venv/bin/python benchmarks/verify_speed.py                  # full size, default workdir in /tmp
    .venv/bin/python benchmarks/verify_speed.py --images 300 --boxes 13000   # quick smoke
    .venv/bin/python benchmarks/verify_speed.py --no-materialize --no-deep

Prints a markdown table and one JSON line; at full size also writes the JSON (date, machine with the load average
at the start, command, figures) to `--output` (default `benchmarks/results/verify_speed.json`, which the docs
quote); exits 1 when verify misses the time or RSS target (only judged at full size: --images >= 6000). Not a test:
never run by pytest.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _result import RESULTS, command, machine_facts, now, write_result

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 20.0
TARGET_RSS_MB = 2048.0
FULL_SIZE_IMAGES = 6000
IMAGE_SIZE = 1024
N_DISTINCT_JPEGS = 4
GENERATOR_VERSION = 1
ANNOTATIONS_FILE = "_annotations.coco.json"


# ---------------------------------------------------------------------------------------------
# Dataset generation


def _jpegs(seed: int) -> list[bytes]:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N_DISTINCT_JPEGS):
        low = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
        big = np.asarray(Image.fromarray(low).resize((IMAGE_SIZE, IMAGE_SIZE), Image.BICUBIC), dtype=np.int16)
        noisy = np.clip(big + rng.integers(-24, 25, big.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(noisy).save(buf, format="JPEG", quality=70)
        out.append(buf.getvalue())
    return out


def _file_name(split: str, i: int) -> str:
    digest = hashlib.sha1(f"{split}/{i}".encode()).hexdigest()[:20]
    return f"gwhd_{split}_{i:05d}_jpg.rf.{digest}.jpg"


def _split_doc(split: str, n_images: int, n_boxes: int, rng: Any) -> dict[str, Any]:
    import numpy as np

    counts = rng.multinomial(n_boxes, np.full(n_images, 1.0 / n_images)) if n_images else []
    images, annotations = [], []
    ann_id = 0
    for i, k in enumerate(counts):
        images.append({"id": i, "license": 1, "file_name": _file_name(split, i), "height": IMAGE_SIZE,
                       "width": IMAGE_SIZE, "date_captured": "2021-06-01T00:00:00+00:00"})
        w = rng.integers(12, 160, k)
        h = rng.integers(12, 160, k)
        x = rng.integers(0, IMAGE_SIZE - w)
        y = rng.integers(0, IMAGE_SIZE - h)
        for xj, yj, wj, hj in zip(x.tolist(), y.tolist(), w.tolist(), h.tolist(), strict=True):
            annotations.append({"id": ann_id, "image_id": i, "category_id": 1, "bbox": [xj, yj, wj, hj],
                                "area": wj * hj, "segmentation": [], "iscrowd": 0})
            ann_id += 1
    return {
        "info": {"description": "synthetic gwhd2021-sized dataset (benchmarks/verify_speed.py)", "version": "1"},
        "licenses": [{"id": 1, "name": "CC BY 4.0", "url": "https://creativecommons.org/licenses/by/4.0/"}],
        "categories": [{"id": 0, "name": "wheat-heads", "supercategory": "none"},
                       {"id": 1, "name": "wheat-head", "supercategory": "wheat-heads"}],
        "images": images,
        "annotations": annotations,
    }


def generate(root: Path, sizes: dict[str, tuple[int, int]], seed: int) -> None:
    """Write a Roboflow-layout dataset: split -> (images, boxes)."""
    import numpy as np

    jpegs = _jpegs(seed)
    rng = np.random.default_rng(seed + 1)
    for split, (n_images, n_boxes) in sizes.items():
        d = root / split
        d.mkdir(parents=True, exist_ok=True)
        doc = _split_doc(split, n_images, n_boxes, rng)
        for k, img in enumerate(doc["images"]):
            (d / img["file_name"]).write_bytes(jpegs[k % len(jpegs)])
        (d / ANNOTATIONS_FILE).write_text(json.dumps(doc))


def ensure_dataset(root: Path, sizes: dict[str, tuple[int, int]], seed: int) -> bool:
    """Generate `root` unless a complete copy with the same parameters is there; True if generated."""
    params = {"generator": GENERATOR_VERSION, "seed": seed, "sizes": sizes, "jpegs": N_DISTINCT_JPEGS}
    marker = root.parent / f"{root.name}.params.json"
    if marker.exists() and json.loads(marker.read_text()) == json.loads(json.dumps(params)):
        return False
    marker.unlink(missing_ok=True)
    if root.exists():
        shutil.rmtree(root)
    generate(root, sizes, seed)
    marker.write_text(json.dumps(params))
    return True


# ---------------------------------------------------------------------------------------------
# Child side: one measurement in a fresh interpreter


def _child(task: str, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    train_json = root / "train" / ANNOTATIONS_FILE
    if task in ("verify", "verify_deep"):
        from bench_assets.rf100vl.datasets.verify import verify_dataset

        t0 = time.perf_counter()
        v = verify_dataset(root, deep=task == "verify_deep")
        out["wall_s"] = time.perf_counter() - t0
        out["images"] = sum(s.images for s in v.stats.values())
        out["annotations"] = sum(s.annotations for s in v.stats.values())
    elif task == "coco":
        import contextlib

        from pycocotools.coco import COCO

        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            c = COCO(str(train_json))
        out["wall_s"] = time.perf_counter() - t0
        out["annotations"] = len(c.anns)
    elif task == "json":
        t0 = time.perf_counter()
        with open(train_json, "rb") as fh:
            doc = json.load(fh)
        out["wall_s"] = time.perf_counter() - t0
        out["annotations"] = len(doc["annotations"])
    elif task == "materialize":
        from bench_assets.rf100vl.datasets.sources import SourceSpec
        from bench_assets.rf100vl.datasets.store import materialize_dataset

        home = Path(tempfile.mkdtemp(prefix="bench-home-", dir=root.parent))
        try:
            spec = SourceSpec(kind="local", path=str(root))
            t0 = time.perf_counter()
            rec = materialize_dataset(home, "gwhd-synth", spec, home / "hf-cache")
            out["wall_s"] = time.perf_counter() - t0
            out["version"] = rec.version
        finally:
            shutil.rmtree(home, ignore_errors=True)
    else:
        raise SystemExit(f"unknown task {task}")
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def peak_rss_mb() -> float:
    """Peak RSS of this process. VmHWM belongs to this process's own address space; `ru_maxrss` is not
    used where VmHWM exists because Linux carries it over from the forking parent across exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def run_child(task: str, root: Path) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", task, "--root", str(root)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child {task} failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(task: str, root: Path, repeat: int) -> dict[str, Any]:
    runs = [run_child(task, root) for _ in range(repeat)]
    walls = [r["wall_s"] for r in runs]
    res = {k: v for k, v in runs[0].items() if k not in ("wall_s", "peak_rss_mb")}
    res.update(wall_s=statistics.median(walls), wall_min_s=min(walls),
               peak_rss_mb=max(r["peak_rss_mb"] for r in runs), runs=repeat)
    return res


# ---------------------------------------------------------------------------------------------
# Parent side


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=FULL_SIZE_IMAGES, help="train images (default 6000)")
    ap.add_argument("--boxes", type=int, default=None, help="train boxes in total (default images * 260000/6000)")
    ap.add_argument("--small", type=int, default=20, help="images in valid and in test (default 20)")
    ap.add_argument("--deep-images", type=int, default=500, help="train images of the deep-mode subset (default 500)")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "bench-verify-speed",
                    help="where datasets are generated and cached (default $TMPDIR/bench-verify-speed)")
    ap.add_argument("--repeat", type=int, default=3, help="fresh-process runs per measurement (default 3)")
    ap.add_argument("--seed", type=int, default=2021)
    ap.add_argument("--no-deep", action="store_true", help="skip the deep-mode subset")
    ap.add_argument("--no-materialize", action="store_true", help="skip the materialize_dataset measurement")
    ap.add_argument("--output", type=Path, default=RESULTS / "verify_speed.json",
                    help="result JSON, written only by a full-size run with deep and materialize measured "
                         "(default benchmarks/results/verify_speed.json)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        sys.path.insert(0, str(REPO))
        print(json.dumps(_child(args.child, args.root)))
        return 0

    started, facts = now(), machine_facts()
    boxes = args.boxes if args.boxes is not None else round(args.images * 260_000 / FULL_SIZE_IMAGES)
    per_image = boxes / max(1, args.images)
    small_boxes = round(args.small * per_image)
    work = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    root = work / f"gwhd-synth-{args.images}-{boxes}-{args.small}"
    t0 = time.perf_counter()
    generated = ensure_dataset(root, {"train": (args.images, boxes), "valid": (args.small, small_boxes),
                                      "test": (args.small, small_boxes)}, args.seed)
    gen_s = time.perf_counter() - t0
    print(f"dataset {root}: {'generated' if generated else 'cached'} ({gen_s:.1f} s); "
          f"train json {(root / 'train' / ANNOTATIONS_FILE).stat().st_size / 1e6:.1f} MB", file=sys.stderr)

    rows: dict[str, dict[str, Any]] = {}
    rows["verify"] = measure("verify", root, args.repeat)
    rows["coco"] = measure("coco", root, args.repeat)
    rows["json"] = measure("json", root, args.repeat)
    deep_root = None
    if not args.no_deep:
        n = min(args.deep_images, args.images)
        deep_root = work / f"gwhd-synth-{n}-{round(n * per_image)}-{args.small}"
        ensure_dataset(deep_root, {"train": (n, round(n * per_image)), "valid": (args.small, small_boxes),
                                   "test": (args.small, small_boxes)}, args.seed)
        rows["verify_deep_subset"] = measure("verify_deep", deep_root, 1)
        rows["verify_shallow_subset"] = measure("verify", deep_root, 1)
    if not args.no_materialize:
        rows["materialize"] = measure("materialize", root, 1)

    v = rows["verify"]
    ratio_coco = v["wall_s"] / rows["coco"]["wall_s"]
    ratio_json = v["wall_s"] / rows["json"]["wall_s"]
    labels = {
        "verify": (f"`verify_dataset(root)` ({args.images} train + {2 * args.small} images, "
                   f"{v['annotations']} boxes)", "target"),
        "coco": ("`pycocotools.coco.COCO(train_json)` (load + index)", "baseline"),
        "json": ("`json.load(train_json)`", "baseline"),
        "verify_deep_subset": (f"`verify_dataset(subset, deep=True)` ({min(args.deep_images, args.images)} train "
                               f"+ {2 * args.small} images)", "reference"),
        "verify_shallow_subset": ("`verify_dataset(subset)` (same subset, shallow)", "reference"),
        "materialize": ("`materialize_dataset(home, name, SourceSpec(kind='local'), ...)` (verify + copy + lock)",
                        "informational"),
    }
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpus; "
          f"repeat={args.repeat} fresh processes for verify/COCO/json, 1 for the others\n")
    print("| measurement | kind | median s | min s | peak RSS MB | verify / this |")
    print("|---|---|---:|---:|---:|---:|")
    for key, r in rows.items():
        ratio = f"{v['wall_s'] / r['wall_s']:.2f}x" if key in ("coco", "json") else ""
        print(f"| {labels[key][0]} | {labels[key][1]} | {r['wall_s']:.2f} | {r['wall_min_s']:.2f} | "
              f"{r['peak_rss_mb']:.0f} | {ratio} |")
    extra: dict[str, Any] = {}
    if "verify_deep_subset" in rows:
        d, s = rows["verify_deep_subset"], rows["verify_shallow_subset"]
        extra["deep_ms_per_image"] = 1000 * (d["wall_s"] - s["wall_s"]) / d["images"]
        print(f"\ndeep mode adds {extra['deep_ms_per_image']:.1f} ms per image (decode of a 1024x1024 JPEG); "
              f"extrapolated to the full split: "
              f"{v['wall_s'] + extra['deep_ms_per_image'] * v['images'] / 1000:.1f} s")

    full = args.images >= FULL_SIZE_IMAGES
    ok_time = v["wall_s"] <= TARGET_S
    ok_rss = v["peak_rss_mb"] <= TARGET_RSS_MB
    ok = (ok_time and ok_rss) or not full
    verdict = ("PASS" if ok_time and ok_rss else "FAIL") if full else "SMOKE (target judged at full size only)"
    print(f"\n{verdict}: verify {v['wall_s']:.2f} s (target <= {TARGET_S:g} s), peak RSS {v['peak_rss_mb']:.0f} MB "
          f"(target <= {TARGET_RSS_MB:g} MB); verify/COCO-load {ratio_coco:.2f}x, verify/json.load {ratio_json:.2f}x")
    doc = {
        "benchmark": "verify_speed", "date": started, "command": command(), "machine": facts,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2), "dataset_generated_s": round(gen_s, 1),
        "train_json_mb": round((root / "train" / ANNOTATIONS_FILE).stat().st_size / 1e6, 1),
        "images_train": args.images, "boxes_train": boxes, "images_small_splits": args.small,
        "repeat": args.repeat,
        "results": {k: {m: (round(x, 3) if isinstance(x, float) else x) for m, x in r.items()}
                    for k, r in rows.items()},
        "ratio_verify_to_coco": round(ratio_coco, 3),
        "ratio_verify_to_json": round(ratio_json, 3),
        **{k: round(x, 3) for k, x in extra.items()},
        "target_s": TARGET_S, "target_rss_mb": TARGET_RSS_MB, "full_size": full,
        "pass": ok_time and ok_rss,
    }
    if full and "materialize" in rows and extra:  # the docs quote the full-size run with every measurement only
        write_result(args.output, doc)
    print(json.dumps(doc))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
