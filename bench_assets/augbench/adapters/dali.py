"""NVIDIA DALI: DataLoader recipes only, on CUDA only.

DALI does not fit the per-item contract: it replaces the DataLoader with a GPU pipeline over whole batches.
So `build` (micro) and `dataloader_transform` raise `Unsupported` with that reason, and `build_pipeline` /
`DaliEpochs` below give the runner a pipeline for the recipe `RandomCrop224 + <transform> + Normalize + ToTensor`
of every row whose CSV `dataloader_libraries` lists `dali(gpu)`.

UNTESTED HERE: this machine has neither DALI nor a GPU. The operator names and arguments follow the DALI `fn`
documentation; run `tests/augbench/test_adapters.py::test_dali_*` and a one-batch smoke run on a CUDA box before
trusting numbers from it. Every op is listed in `DALI_OPS` so an unmapped row fails loudly (SpecError), never
silently.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench_assets.augbench import transform_specs as ts
from bench_assets.augbench.adapters.base import (
    BaseAdapter,
    Unsupported,
    check_items,
    materialize_output,
    normalize_stats,
)

NO_MICRO = "DALI runs whole GPU pipelines; it has no single-transform micro path"
NO_PER_ITEM = "DALI replaces the DataLoader with a GPU pipeline: use adapters.dali.build_pipeline (CUDA only)"


def _uniform(lo: float, hi: float) -> Any:
    from nvidia.dali import fn

    return fn.random.uniform(range=(lo, hi))


def _hw(images: Any, video: bool) -> tuple[Any, Any]:
    """Per-sample height and width (float DataNodes) of HWC / FHWC images."""
    from nvidia.dali import fn, types

    shape = fn.cast(images.shape(), dtype=types.FLOAT)
    return (shape[1], shape[2]) if video else (shape[0], shape[1])


def _centre_affine(images: Any, video: bool, rotate: float, scale: float, shear_x: float) -> Any:
    from nvidia.dali import fn

    h, w = _hw(images, video)
    centre = fn.stack(w * 0.5, h * 0.5)
    # transforms.rotation builds the standard matrix, which turns clockwise in y-down image coordinates, so the
    # angle is negated for a counter-clockwise rotation (fn.rotate's convention). UNVERIFIED without a GPU.
    steps = [(fn.transforms.shear, {"angles": (shear_x, 0.0)}) if shear_x else None,
             (fn.transforms.scale, {"scale": (scale, scale)}) if scale != 1.0 else None,
             (fn.transforms.rotation, {"angle": -rotate}) if rotate else None]
    mt = None
    for op, kwargs in (s for s in steps if s is not None):
        mt = op(center=centre, **kwargs) if mt is None else op(mt, center=centre, **kwargs)
    return fn.warp_affine(images, matrix=mt, fill_value=0, inverse_map=False)


def _erase(images: Any, video: bool) -> Any:
    from nvidia.dali import fn
    from nvidia.dali import math as dmath

    area = _uniform(0.02, 0.33)
    ratio = dmath.exp(_uniform(math.log(0.3), math.log(3.3)))
    fh = dmath.min(dmath.sqrt(area / ratio), 1.0)
    fw = dmath.min(dmath.sqrt(area * ratio), 1.0)
    anchor = fn.stack(_uniform(0.0, 1.0) * (1.0 - fh), _uniform(0.0, 1.0) * (1.0 - fw))
    return fn.erase(images, anchor=anchor, shape=fn.stack(fh, fw), axis_names="HW", normalized_anchor=True,
                    normalized_shape=True, fill_value=0)


def _pad(images: Any, video: bool) -> Any:
    from nvidia.dali import fn

    h, w = _hw(images, video)
    return fn.crop(images, crop_h=h + 2 * ts.PAD, crop_w=w + 2 * ts.PAD, crop_pos_x=0.5, crop_pos_y=0.5,
                   out_of_bounds_policy="pad", fill_values=0)


def _op_table() -> dict[str, Callable[[Any, bool], Any]]:
    """transform -> fn(images, video) for every row whose CSV lists dali(gpu); parameters from transform_specs."""
    from nvidia.dali import fn, types

    lin = types.INTERP_LINEAR
    return {
        "Resize": lambda x, v: fn.resize(x, resize_x=ts.RESIZE, resize_y=ts.RESIZE, interp_type=lin),
        "RandomCrop224": lambda x, v: fn.crop(x, crop=(ts.CROP, ts.CROP), crop_pos_x=_uniform(0.0, 1.0),
                                              crop_pos_y=_uniform(0.0, 1.0), out_of_bounds_policy="pad"),
        "RandomResizedCrop": lambda x, v: fn.random_resized_crop(x, size=(ts.CROP, ts.CROP), random_area=(0.08, 1.0),
                                                                 random_aspect_ratio=(0.75, 4 / 3)),
        "HorizontalFlip": lambda x, v: fn.flip(x, horizontal=1, vertical=0),
        "VerticalFlip": lambda x, v: fn.flip(x, horizontal=0, vertical=1),
        "Pad": _pad,
        "Rotate": lambda x, v: fn.rotate(x, angle=45.0, keep_size=True, fill_value=0, interp_type=lin),
        "Affine": lambda x, v: _centre_affine(x, v, rotate=25.0, scale=1.2, shear_x=0.0),
        "Shear": lambda x, v: _centre_affine(x, v, rotate=0.0, scale=1.0, shear_x=10.0),
        "ColorJitter": lambda x, v: fn.color_twist(x, brightness=1.2, contrast=0.8, saturation=1.2,
                                                   hue=0.05 * 360.0),
        "ColorJiggle": lambda x, v: fn.color_twist(x, brightness=_uniform(0.875, 1.125), contrast=_uniform(0.5, 1.5),
                                                   saturation=_uniform(0.5, 1.5), hue=_uniform(-18.0, 18.0)),
        "Brightness": lambda x, v: fn.brightness(x, brightness=1.2),
        "Contrast": lambda x, v: fn.contrast(x, contrast=1.2),
        "Saturation": lambda x, v: fn.saturation(x, saturation=1.5),
        "Hue": lambda x, v: fn.hue(x, hue=ts.HUE_DEG),
        "GaussianBlur": lambda x, v: fn.gaussian_blur(x, window_size=5, sigma=1.0),
        "GaussianNoise": lambda x, v: fn.noise.gaussian(x, stddev=0.1 * 255.0),
        "SaltAndPepper": lambda x, v: fn.noise.salt_and_pepper(x, prob=_uniform(0.01, 0.06),
                                                               salt_vs_pepper=_uniform(0.4, 0.6)),
        "Equalize": lambda x, v: fn.equalize(x),
        "CLAHE": lambda x, v: fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=4.0, luma_only=True),
        "Erasing": _erase,
        "JpegCompression": lambda x, v: fn.jpeg_compression_distortion(x, quality=50),
        "Normalize": lambda x, v: x,  # the recipe's crop_mirror_normalize is the Normalize row's transform
    }


DALI_OPS = (
    "Resize", "RandomCrop224", "RandomResizedCrop", "HorizontalFlip", "VerticalFlip", "Pad", "Rotate", "Affine",
    "Shear", "ColorJitter", "ColorJiggle", "Brightness", "Contrast", "Saturation", "Hue", "GaussianBlur",
    "GaussianNoise", "SaltAndPepper", "Equalize", "CLAHE", "Erasing", "JpegCompression", "Normalize",
)


class DaliEpochs:
    """External source: the items in batches of `batch_size`, one pass per epoch (StopIteration ends it)."""

    def __init__(self, items: Sequence[np.ndarray], batch_size: int) -> None:
        self.items = [np.ascontiguousarray(x) for x in items]
        self.batch_size = batch_size
        self.i = 0

    def __iter__(self) -> DaliEpochs:
        self.i = 0
        return self

    def __next__(self) -> list[np.ndarray]:
        if self.i >= len(self.items):
            self.i = 0
            raise StopIteration
        batch = self.items[self.i:self.i + self.batch_size]
        self.i += self.batch_size
        return batch


def build_pipeline(transform: str, media: str, items: Sequence[np.ndarray], batch_size: int, *, num_threads: int = 4,
                   device_id: int = 0, seed: int = ts.SEED) -> Any:
    """The DALI pipeline of the DataLoader recipe (untested here). Output: float32 CHW / FCHW batches on the GPU."""
    if not ts.listed(media, transform, "dali", "dataloader"):
        raise Unsupported(f"dali has no {transform} in the paper DataLoader set ({media})")
    if transform not in DALI_OPS:
        raise ts.SpecError(f"{transform}: listed for dali in the CSV but not mapped in DALI_OPS")
    check_items(list(items), media)
    from nvidia.dali import fn, pipeline_def, types

    video = media == "video"
    ops = _op_table()
    mean, std = normalize_stats(media)

    @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=seed)
    def recipe() -> Any:
        images = fn.external_source(source=DaliEpochs(items, batch_size), layout="FHWC" if video else "HWC",
                                    cycle="raise", device="cpu").gpu()
        if transform not in ts.CROP_TRANSFORMS:
            images = ops["RandomCrop224"](images, video)
        images = ops[transform](images, video)
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="FCHW" if video else "CHW",
                                        mean=[255.0 * m for m in mean], std=[255.0 * s for s in std])

    pipe = recipe()
    pipe.build()
    return pipe


def torch_iterator(pipe: Any, size: int) -> Any:
    """Epoch iterator yielding torch CUDA tensors (`batch[0]["images"]`); untested here."""
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    return DALIGenericIterator([pipe], ["images"], size=size, last_batch_policy=LastBatchPolicy.PARTIAL,
                               auto_reset=True)


class DaliAdapter(BaseAdapter):
    name = "dali"
    devices = ("cuda",)

    def _import_error(self) -> str | None:
        try:
            found = importlib.util.find_spec("nvidia.dali") is not None
        except ModuleNotFoundError:  # no `nvidia` namespace package at all
            found = False
        return None if found else "NVIDIA DALI is not installed"

    def availability(self, device: str) -> str | None:
        missing = self._import_error()
        if missing:
            return missing
        if device != "cuda":
            return "DALI needs a CUDA device"
        try:
            import torch

            if not torch.cuda.is_available():
                return "DALI needs a CUDA device"
        except ImportError:
            return "DALI needs a CUDA device (torch is not installed to check)"
        return None

    def versions(self) -> dict[str, str]:
        try:
            import nvidia.dali

            return {"nvidia-dali": nvidia.dali.__version__}
        except ImportError:
            return {"nvidia-dali": "not installed"}

    def to_native(self, items: list[np.ndarray], media: str, device: str) -> list[Any]:
        self._check_media(media)
        check_items(items, media)
        return [np.ascontiguousarray(x) for x in items]  # DALI's external source takes numpy batches

    def materialize(self, out: Any) -> Any:
        return materialize_output(out)

    def build(self, transform: str, media: str, device: str) -> Callable[[Any], Any]:
        ts.paper_row(media, transform)  # unknown names are errors, not unsupported
        raise Unsupported(NO_MICRO)

    def dataloader_transform(self, transform: str, media: str) -> Callable[[np.ndarray], Any]:
        self._resolved_dali(transform, media)
        raise Unsupported(NO_PER_ITEM)

    def _resolved_dali(self, transform: str, media: str) -> None:
        ts.paper_row(media, transform)
        if not ts.listed(media, transform, self.name, "dataloader"):
            raise Unsupported(f"dali has no {transform} in the paper DataLoader set ({media})")
        if transform not in DALI_OPS:
            raise ts.SpecError(f"{transform}: listed for dali in the CSV but not mapped in DALI_OPS")
        why = self.availability("cuda")
        if why:
            raise Unsupported(why)


__all__ = ["DALI_OPS", "DaliAdapter", "DaliEpochs", "Unsupported", "build_pipeline", "torch_iterator"]
