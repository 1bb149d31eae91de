"""What the training and prediction children share.

Imported only inside a child process. torch and LibreYOLO are imported lazily (inside functions) so that
`import bench_assets.rf100vl.training.child.common` stays cheap for tests and never pulls Dagster.

* atomic writes (temp file + fsync + rename), also for `torch.save` calls made by LibreYOLO
* CPU thread pinning from ``OMP_NUM_THREADS``
* a reporter that speaks Dagster Pipes when launched through Pipes, plain stdout otherwise
* precision / OOM / family helpers and the ``data.yaml`` LibreYOLO reads a canonical dataset through
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

from bench_assets.platform.fsutil import atomic_write_bytes, atomic_write_json, fsync_dir, owner_tag

ANNOTATIONS_FILE = "_annotations.coco.json"
# Canonical split folder -> the split key LibreYOLO's data.yaml uses.
LIBREYOLO_SPLIT = {"train": "train", "valid": "val", "test": "test"}
PIPES_ENV = "DAGSTER_PIPES_CONTEXT"

__all__ = [
    "ANNOTATIONS_FILE",
    "LIBREYOLO_SPLIT",
    "Reporter",
    "atomic_copy_file",
    "atomic_write_bytes",
    "atomic_write_json",
    "build_model",
    "exception_chain",
    "install_atomic_torch_save",
    "install_class_guard",
    "is_oom",
    "link_images",
    "model_class",
    "offline_env",
    "pin_threads",
    "precision_to_amp",
    "remove_stale_temps",
    "require_local_file",
    "split_categories",
    "write_data_yaml",
]


# --------------------------------------------------------------------------------------------------
# Environment


def read_spec_arg(argv: list[str], module: str, model: type[Any]) -> Any | None:
    """The pydantic spec named by the child's single argument, or None (reason on stderr): a child that
    cannot read its spec has no run directory to write a result into."""
    if len(argv) != 1:
        print(f"usage: python -m {module} SPEC.json", file=sys.stderr)
        return None
    try:
        return model.model_validate_json(Path(argv[0]).read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 - any unreadable spec ends the same way
        print(f"cannot read {model.__name__} {argv[0]}: {exc}", file=sys.stderr)
        return None


def offline_env() -> None:
    """Make any accidental hub access fail at once instead of after a network timeout.

    Nothing in a child may download: weights are either built from scratch or read from a local path
    checked beforehand. These only matter if a library call tries anyway.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


# What every child imports for its work (LibreYOLO builds its models with torchvision's ops).
CHILD_LIBRARIES = ("torch", "torchvision", "libreyolo")


def load_libraries() -> None:
    """Import `CHILD_LIBRARIES` up front with the garbage collector paused and then frozen (the collections during
    these imports free nothing: bench_assets/platform/process_gc.py), after the offline settings they read."""
    from bench_assets.platform.process_gc import load_without_collections

    offline_env()
    load_without_collections(CHILD_LIBRARIES)


def pin_threads() -> int | None:
    """Set torch's (and OpenCV's) intra-op pool to ``OMP_NUM_THREADS`` when it is set.

    LibreYOLO's own cap (training/cpu_threads.py) steps aside when ``OMP_NUM_THREADS`` is set, so the
    value the parent puts in the environment is what the child uses. Returns the thread count or None.
    """
    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not raw.isdigit() or int(raw) < 1:
        return None
    n = int(raw)
    import torch

    torch.set_num_threads(n)
    try:
        import cv2

        cv2.setNumThreads(n)
    except Exception:  # noqa: BLE001 - OpenCV is optional here
        pass
    return n


# --------------------------------------------------------------------------------------------------
# Atomic checkpoints

_ORIGINAL_TORCH_SAVE: Callable[..., Any] | None = None


def _atomic_write_with(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write `path` by `write(file)` into ``.<name>.<pid>@<host>.tmp`` beside it, flush, fsync, rename it over
    `path`, fsync the directory. A failure removes the temp; a kill leaves it (:func:`remove_stale_temps`)."""
    tmp = path.with_name(f".{path.name}.{owner_tag()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_torch_save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    """`torch.save` that never leaves a truncated file under the target name.

    Paths are written through a dot-temp in the same directory, fsynced and renamed over the target (then the
    directory is fsynced: :func:`_atomic_write_with`). File objects and buffers are passed straight through.
    """
    assert _ORIGINAL_TORCH_SAVE is not None, "install_atomic_torch_save() first"
    if not isinstance(f, (str, os.PathLike)):
        return _ORIGINAL_TORCH_SAVE(obj, f, *args, **kwargs)
    _atomic_write_with(Path(f), lambda fh: _ORIGINAL_TORCH_SAVE(obj, fh, *args, **kwargs))
    return None


def atomic_copy_file(src: Path, dst: Path) -> None:
    """Copy `src` to `dst` the way :func:`atomic_torch_save` writes (:func:`_atomic_write_with`)."""
    import shutil

    with open(src, "rb") as fin:
        _atomic_write_with(dst, lambda fh: shutil.copyfileobj(fin, fh, 1 << 20))


def install_atomic_torch_save() -> None:
    """Route every ``torch.save(obj, path)`` in this process through :func:`atomic_torch_save`.

    LibreYOLO 1.6.0 writes ``weights/last.pt``, ``best.pt`` and ``epoch_N.pt`` with a plain
    ``torch.save(checkpoint, path)`` (training/trainer.py `_save_checkpoint`), looked up on the
    ``torch`` module at call time, so replacing the module attribute covers it. Idempotent.
    """
    global _ORIGINAL_TORCH_SAVE
    import torch

    if torch.save is atomic_torch_save:
        return
    _ORIGINAL_TORCH_SAVE = torch.save
    torch.save = atomic_torch_save  # type: ignore[assignment]


def remove_stale_temps(directory: Path) -> None:
    """Delete ``.*.tmp`` leftovers of writes that a kill interrupted (never a finished file)."""
    if directory.is_dir():
        for p in directory.glob(".*.tmp"):
            p.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------------
# Precision, OOM, families


def precision_to_amp(precision: str) -> tuple[bool, str]:
    """TrainSpec precision -> LibreYOLO (amp, amp_dtype). AMP only takes effect on CUDA devices."""
    table = {"fp32": (False, "float16"), "fp16": (True, "float16"), "bf16": (True, "bfloat16")}
    if precision not in table:
        raise ValueError(f"unknown precision {precision!r}; expected one of {sorted(table)}")
    return table[precision]


def exception_chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def is_oom(exc: BaseException) -> bool:
    """A CUDA/accelerator out-of-memory anywhere in the exception chain.

    ``torch.OutOfMemoryError`` (alias ``torch.cuda.OutOfMemoryError``) or any RuntimeError whose message
    says "out of memory" (e.g. "CUDA error: out of memory", or LibreYOLO re-wrapping the original).
    """
    oom_type = None
    if "torch" in sys.modules:
        oom_type = getattr(sys.modules["torch"], "OutOfMemoryError", None)
    for e in exception_chain(exc):
        if oom_type is not None and isinstance(e, oom_type):
            return True
        if isinstance(e, (RuntimeError, MemoryError)) and "out of memory" in str(e).lower():
            return True
    return False


def model_class(family: str) -> type:
    """The LibreYOLO wrapper class registered for ``family`` ("yolo9", "yolox", ...)."""
    import libreyolo  # noqa: F401 - populates the registry
    from libreyolo.models import try_ensure_rfdetr
    from libreyolo.models.base import BaseModel

    explicit = {"yolo9": "LibreYOLO9", "yolox": "LibreYOLOX"}
    if family in explicit:
        return getattr(libreyolo, explicit[family])
    try_ensure_rfdetr()  # RF-DETR registers itself only once asked (and only with transformers installed)
    for cls in BaseModel._registry:
        if getattr(cls, "FAMILY", None) == family:
            return cls
    raise ValueError(f"unknown LibreYOLO family {family!r}")


DROPPED_OUT_OF_RANGE = {"detections": 0}


def _take(values: Any, keep: Any) -> Any:
    """`values[keep]` for a torch tensor (indexed on its device), a numpy array or a list."""
    if hasattr(values, "index_select"):
        import torch

        return values[torch.as_tensor(keep, dtype=torch.long, device=values.device)]
    import numpy as np

    return np.asarray(values)[keep]


def install_class_guard(num_classes: int) -> None:
    """Drop every detection whose class index is not one of the model's classes before LibreYOLO maps it to a category
    id, in validation during training and in prediction alike, and count them (`DROPPED_OUT_OF_RANGE`).

    RF-DETR's head has one column more than the dataset's classes (its background), and LibreYOLO 1.6.0 keeps that
    column's top-k detections: `COCOEvaluator.update` maps a label it has no category for to the label itself
    (`label_to_category_id.get(label, label)`), so the background became category id `num_classes`: refused by our
    id check when the split's ids are 0..n-1, and silently scored as the last class when they are 1..n. Idempotent.
    """
    import numpy as np
    from libreyolo.validation.coco_evaluator import COCOEvaluator

    original = getattr(COCOEvaluator.update, "__wrapped_by_bench__", None) or COCOEvaluator.update

    def update(self: Any, predictions: dict[str, Any], image_id: int) -> Any:
        classes = predictions.get("classes")
        if classes is not None and len(classes):
            labels = np.asarray(classes.cpu() if hasattr(classes, "cpu") else classes).astype(np.int64)
            known = (np.isin(labels, list(self.label_to_category_id)) if self.label_to_category_id is not None
                     else (labels >= 0) & (labels < num_classes))
            if not known.all():
                DROPPED_OUT_OF_RANGE["detections"] += int((~known).sum())
                keep = np.flatnonzero(known)
                predictions = {k: (_take(v, keep) if k in ("boxes", "scores", "classes", "masks") and v is not None
                                   else v) for k, v in predictions.items()}
        return original(self, predictions, image_id)

    update.__wrapped_by_bench__ = original  # type: ignore[attr-defined]
    COCOEvaluator.update = update


def require_local_file(path: str | os.PathLike[str], what: str) -> Path:
    """An existing regular file, or FileNotFoundError (given a missing path LibreYOLO tries a hub download)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(
            f"{what} {str(path)!r} is not a file on disk; children never download weights "
            "(pass an existing local .pt path, or none to train from scratch)"
        )
    return p.resolve()


def build_model(family: str, size: str, num_classes: int, device: str, *, weights: str | None = None,
                seed: int = 0) -> Any:
    """A LibreYOLO wrapper built from scratch (seeded, nothing downloaded) or from a local weights file."""
    cls = model_class(family)
    lib_device = "cpu" if device == "cpu" else (f"cuda:{device}" if str(device).isdigit() else device)
    if weights is None:
        if hasattr(cls, "_from_scratch"):
            return cls._from_scratch(size=size, nb_classes=num_classes, device=lib_device, seed=seed)
        import random

        import numpy as np
        import torch

        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        return cls(None, size=size, nb_classes=num_classes, device=lib_device)
    path = require_local_file(weights, "weights file")
    return cls(str(path), size=size, nb_classes=num_classes, device=lib_device)


# --------------------------------------------------------------------------------------------------
# Dataset yaml


def split_categories(dataset_dir: Path, split: str) -> list[dict[str, Any]]:
    """The split's categories sorted by id."""
    doc = json.loads((dataset_dir / split / ANNOTATIONS_FILE).read_text(encoding="utf-8"))
    return sorted(doc.get("categories", []), key=lambda c: int(c["id"]))


def _unique_names(names: list[str]) -> list[str]:
    """Names made unique (LibreYOLO maps COCO categories to labels BY NAME and rejects duplicates)."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    out, seen = [], set()
    for i, n in enumerate(names):
        u = n if counts[n] == 1 else f"{n} [{i}]"
        while u in seen:
            u = f"{u}'"
        seen.add(u)
        out.append(u)
    return out


def link_images(dataset_dir: Path, split: str, dst: Path) -> Path:
    """A folder of symlinks to the split's images, so LibreYOLO's ``cache="disk"`` sidecars land there.

    LibreYOLO writes ``<image>.r<h>x<w>.npy`` beside each image it caches on disk (data/cache.py
    `_load_resized_from_disk`); the canonical dataset store must never change, so the child points LibreYOLO
    at links in the run directory instead (the sidecar's mtime check follows the link to the image).
    """
    doc = json.loads((dataset_dir / split / ANNOTATIONS_FILE).read_text(encoding="utf-8"))
    dst.mkdir(parents=True, exist_ok=True)
    for img in doc.get("images", []):
        link = dst / img["file_name"]
        if not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(dataset_dir / split / img["file_name"])
    return dst


def write_data_yaml(dataset_dir: str | Path, out_dir: Path, class_names: list[str],
                    splits: Iterable[str] = ("train", "valid", "test"), link_images_to: Path | None = None) -> Path:
    """Write ``out_dir/data.yaml`` that points LibreYOLO at a canonical dataset's COCO files.

    Label ``i`` of the model is ``class_names[i]``. LibreYOLO (data/dataset.py COCODataset
    `_build_category_mappings`) maps a split's category ids to labels by NAME through ``names``, and maps
    predictions back to that split's original category ids; image ids are the JSON's own. Every split's
    category names must therefore be exactly ``class_names`` (in any id order). When ``class_names`` has
    duplicates, de-duplicated copies of the annotation files are written to ``out_dir/annotations`` (the
    images stay where they are) because LibreYOLO refuses duplicate names. With ``link_images_to`` the image
    folders are symlink farms under it (see :func:`link_images`).
    """
    import yaml

    dataset_dir = Path(dataset_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    names = _unique_names(list(class_names))
    rename = names != list(class_names)
    doc: dict[str, Any] = {"path": str(dataset_dir), "nc": len(names), "names": dict(enumerate(names)),
                           "annotations": {}}
    for split in splits:
        key = LIBREYOLO_SPLIT[split]
        ann = dataset_dir / split / ANNOTATIONS_FILE
        cats = split_categories(dataset_dir, split)
        split_names = sorted(str(c.get("name")) for c in cats)
        if split_names != sorted(class_names):
            raise ValueError(
                f"{split}/{ANNOTATIONS_FILE} has categories {[c.get('name') for c in cats]} but the spec's "
                f"class_names are {list(class_names)}: they must be the same names"
            )
        doc[key] = str(link_images(dataset_dir, split, link_images_to / split) if link_images_to
                       else dataset_dir / split)
        if rename:
            coco = json.loads(ann.read_text(encoding="utf-8"))
            # Same rule as the names: the i-th category in id order gets the i-th unique name.
            by_id = {int(c["id"]): names[i] for i, c in enumerate(cats)}
            for c in coco["categories"]:
                c["name"] = by_id[int(c["id"])]
            ann = out_dir / "annotations" / f"{split}.json"
            atomic_write_bytes(ann, json.dumps(coco).encode())
        doc["annotations"][key] = str(ann)
    path = out_dir / "data.yaml"
    atomic_write_bytes(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode("utf-8"))
    return path


# --------------------------------------------------------------------------------------------------
# Reporting


class Reporter:
    """Log lines and structured progress, through Dagster Pipes when launched by it, else to stdout.

    Under Pipes (``DAGSTER_PIPES_CONTEXT`` in the environment): ``pipes.log.info`` for lines and
    ``pipes.report_custom_message`` for structured payloads. Standalone: lines are printed, payloads are
    printed as ``PROGRESS {json}`` lines. Never raises: reporting must not break a run.
    """

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.pipes: Any = None
        if os.environ.get(PIPES_ENV):
            from dagster_pipes import open_dagster_pipes

            self.pipes = open_dagster_pipes()

    def info(self, msg: str) -> None:
        line = f"{self.prefix}{msg}"
        try:
            if self.pipes is not None:
                self.pipes.log.info(line)
            else:
                print(line, flush=True)
        except Exception:  # noqa: BLE001
            pass

    def progress(self, payload: dict[str, Any]) -> None:
        try:
            if self.pipes is not None:
                self.pipes.report_custom_message(payload)
            else:
                print("PROGRESS " + json.dumps(payload, sort_keys=True), flush=True)
        except Exception:  # noqa: BLE001
            pass

    def close(self) -> None:
        if self.pipes is not None:
            try:
                self.pipes.close()
            except Exception:  # noqa: BLE001
                pass
            self.pipes = None


class Stopwatch:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.t0
