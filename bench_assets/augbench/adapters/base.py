"""The adapter contract the augbench runners drive, and the checks every adapter shares.

An adapter turns `transform_specs` data into library calls. It imports its library lazily (inside methods),
so importing `bench_assets.augbench.adapters` stays free of torch/kornia/albumentations.

Errors: `Unsupported(reason)` means "this cell cannot be measured" (recorded as `unsupported`); anything else
raised by `build` -- `SpecError` for a bad parameter, `ValueError` for an unknown media/transform -- is a bug
and is recorded as `error`, so a spec mistake can never silently drop a row.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bench_assets.augbench import transform_specs as ts
from bench_assets.augbench.transform_specs import SpecError
from bench_assets.platform.provenance import package_versions

__all__ = ["Adapter", "BaseAdapter", "SpecError", "Unsupported", "package_versions"]


class Unsupported(Exception):
    """The cell cannot be measured; `str(exc)` is the reason recorded in the result file."""


@runtime_checkable
class Adapter(Protocol):
    name: str

    def availability(self, device: str) -> str | None: ...

    def versions(self) -> dict[str, str]: ...

    def to_native(self, items: list[np.ndarray], media: str, device: str) -> list[Any]: ...

    def build(self, transform: str, media: str, device: str) -> Callable[[Any], Any]: ...

    def materialize(self, out: Any) -> Any: ...

    def dataloader_transform(self, transform: str, media: str) -> Callable[[np.ndarray], Any]: ...


def with_default_p(cls: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Always apply: add p=1 when the constructor has a `p` argument and the spec did not set it."""
    if "p" in kwargs:
        return kwargs
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return kwargs
    return {**kwargs, "p": 1.0} if "p" in params else kwargs


def construct(where: str, cls: Any, kwargs: dict[str, Any]) -> Any:
    """cls(**kwargs); an unknown argument name or a constructor's complaint becomes a SpecError naming the cell
    (AlbumentationsX only warns about unknown arguments and would run with its defaults)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    if params and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise SpecError(f"{where}: unknown argument(s) {', '.join(unknown)}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, AssertionError) as exc:
        raise SpecError(f"{where}: {type(exc).__name__}: {exc}") from exc


class BaseAdapter:
    """Shared gatekeeping: CSV listing, availability, media checks. Subclasses implement the `_` hooks."""

    name = "base"
    devices: tuple[str, ...] = ("cpu",)
    media_kinds: tuple[str, ...] = ts.MEDIA

    # -- availability
    def _import_error(self) -> str | None:  # "not installed" reason, or None
        raise NotImplementedError

    def availability(self, device: str) -> str | None:
        missing = self._import_error()
        if missing:
            return missing
        if device not in ("cpu", "cuda"):
            return f"unknown device {device!r}"
        if device not in self.devices:
            return "CPU only" if self.devices == ("cpu",) else f"{self.name} does not run on {device}"
        if device == "cuda":
            import torch

            if not torch.cuda.is_available():
                return "no CUDA device"
        return None

    def _check_usable(self, device: str) -> None:
        why = self.availability(device)
        if why:
            raise Unsupported(why)

    def _check_media(self, media: str) -> None:
        ts.check_media(media)
        if media not in self.media_kinds:
            raise Unsupported(f"{self.name} has no {media} item type (RGB images only)")

    def _resolved(self, transform: str, media: str, mode: str) -> ts.Call:
        """CSV gate (Unsupported when not listed), then the validated call (SpecError when wrong)."""
        ts.paper_row(media, transform)  # ValueError: unknown transform for this media
        if not ts.listed(media, transform, self.name, mode):
            where = "paper set" if mode == "micro" else "paper DataLoader set"
            raise Unsupported(f"{self.name} has no {transform} in the {where} ({media})")
        self._check_media(media)
        return ts.resolved_call(transform, self.name, media)

    # -- the contract
    def build(self, transform: str, media: str, device: str) -> Callable[[Any], Any]:
        call = self._resolved(transform, media, "micro")
        self._check_usable(device)
        return self._build(transform, call, media, device)

    def dataloader_transform(self, transform: str, media: str) -> Callable[[np.ndarray], Any]:
        call = self._resolved(transform, media, "dataloader")
        self._check_usable("cpu")
        return self._recipe(transform, call, media)

    def _build(self, transform: str, call: ts.Call, media: str, device: str) -> Callable[[Any], Any]:
        raise NotImplementedError

    def _recipe(self, transform: str, call: ts.Call, media: str) -> Callable[[np.ndarray], Any]:
        raise NotImplementedError


def normalize_stats(media: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    k = 3 if media == "9ch" else 1
    return ts.NORMALIZE_MEAN * k, ts.NORMALIZE_STD * k


def check_items(items: list[np.ndarray], media: str) -> None:
    want = {"rgb": (3, 3), "9ch": (3, 9), "video": (4, 3)}[media]
    for i, x in enumerate(items):
        if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim != want[0] or x.shape[-1] != want[1]:
            shape = getattr(x, "shape", None)
            raise ValueError(f"item {i}: expected uint8 {'THWC' if media == 'video' else 'HWC'} with "
                             f"{want[1]} channels for {media}, got {type(x).__name__} {shape}")


def materialize_output(out: Any) -> Any:
    """The one materialization rule, identical for every library (see FAIRNESS_RULES in transform_specs).

    Every output ends as a finished, C-contiguous buffer a consumer can use, made at the cost the library
    itself would charge: numpy: `contiguous_copy` (nothing for a contiguous array; a view is copied with the
    fastest routine for its layout); torch: `.contiguous()` (a no-op for contiguous tensors), then a CUDA
    sync when the tensor is on a GPU; PIL: `load()`.
    """
    if isinstance(out, np.ndarray):
        return contiguous_copy(out)
    if hasattr(out, "is_contiguous") and hasattr(out, "is_cuda"):  # torch.Tensor (incl. tv_tensors)
        if not out.is_contiguous():
            out = out.contiguous()
        if out.is_cuda:
            import torch

            torch.cuda.synchronize(out.device)
        return out
    if hasattr(out, "load") and hasattr(out, "mode"):  # PIL.Image.Image
        out.load()
        return out
    raise TypeError(f"cannot materialize a {type(out).__module__}.{type(out).__name__}")


def published_runner_output(out: Any) -> Any:
    """What the published benchmark's runner does to every output inside its timer (RunConfig.output_rule
    'published', replication only): numpy: `np.ascontiguousarray` (numpy's slow path for reversed views);
    Pillow: `load()`, then conversion to a contiguous numpy array (a full copy of every image); torch:
    `.contiguous()`."""
    if isinstance(out, np.ndarray):
        return np.ascontiguousarray(out)
    if hasattr(out, "load") and hasattr(out, "mode"):  # PIL.Image.Image
        out.load()
        return np.ascontiguousarray(out)
    return materialize_output(out)


def needs_copy(out: Any) -> bool:
    """Whether the materialization rule copies `out` (a numpy view or a non-contiguous tensor)."""
    if isinstance(out, np.ndarray):
        return not out.flags.c_contiguous
    if hasattr(out, "is_contiguous"):
        return not out.is_contiguous()
    return False


_SHORT_RUN_BYTES = 64  # a reversed axis whose steps move fewer bytes than a cache line takes OpenCV's flip
# dtypes OpenCV's flip takes (with up to 512 channels)
_CV_FLIP_DTYPES = frozenset(np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "int32", "float32", "float64"))


def contiguous_copy(a: np.ndarray) -> np.ndarray:
    """`a` as a C-contiguous array, copied by the fastest routine for its layout.

    Contiguous: returned as is. A view reversed along one axis of an otherwise contiguous buffer whose steps
    are short runs (a horizontal flip of HWC, as AlbumentationsX's and numpy's flips return it): `cv2.flip` of
    the buffer, which writes the same values as `np.ascontiguousarray` (numpy's strided copy takes ~630 us for
    a 500x375x3 image reversed along its width, this path ~41 us; `benchmarks/materialize_copy.py`). Anything
    else (a vertical flip's reversed rows, crops, transposes, views reversed on several axes):
    `np.ascontiguousarray`, already a block copy for those layouts.
    """
    if a.flags.c_contiguous:
        return a
    shape, strides = a.shape, a.strides
    reversed_axes = [k for k in range(a.ndim) if strides[k] < 0 and shape[k] > 1]
    if len(reversed_axes) == 1 and a.dtype in _CV_FLIP_DTYPES and a.size:
        k = reversed_axes[0]
        inner = math.prod(shape[k + 1:])
        # numpy copies a reversal of long contiguous runs (rows: a vertical flip) as fast as OpenCV; its slow
        # path is reversing short runs (pixels: a horizontal flip), so only those go to cv2.flip
        base = np.flip(a, k) if inner * a.itemsize < _SHORT_RUN_BYTES else None
        if base is not None and base.flags.c_contiguous:
            import cv2

            # reverse axis 1 of the buffer seen as (rows, n, inner)
            return cv2.flip(base.reshape(math.prod(shape[:k]), shape[k], inner), 1).reshape(shape)
    return np.ascontiguousarray(a)


def resolve_value(value: Any, symbols: dict[str, Any], where: str) -> Any:
    """Replace `Sym`s (and nested tuples/lists/dicts) by the adapter's objects; unknown symbols are SpecErrors."""
    if isinstance(value, ts.Sym):
        if value.name not in symbols:
            raise SpecError(f"{where}: symbol {value.name!r} has no meaning for this library")
        return symbols[value.name]
    if isinstance(value, tuple):
        return tuple(resolve_value(v, symbols, where) for v in value)
    if isinstance(value, list):
        return [resolve_value(v, symbols, where) for v in value]
    if isinstance(value, dict):
        return {k: resolve_value(v, symbols, where) for k, v in value.items()}
    return value


class TorchAdapter(BaseAdapter):
    """What torchvision and Kornia share: torch tensors on CPU or CUDA, one seed per build, the one
    materialization rule. Subclasses say how an item becomes a tensor and how a transform is made."""

    devices = ("cpu", "cuda")
    package = "torch"  # the import name whose presence makes the adapter usable
    tensor_layout = "contiguous"  # or "decoder": channels-last strided CHW views (RunConfig.tensor_layout)

    def _import_error(self) -> str | None:
        import importlib.util

        return None if importlib.util.find_spec(self.package) else f"{self.package} is not installed"

    def versions(self) -> dict[str, str]:
        return package_versions(self.package, "torch", "numpy")

    def to_native(self, items: list[np.ndarray], media: str, device: str) -> list[Any]:
        self._check_media(media)
        self._check_usable(device)
        check_items(items, media)
        return [self._tensor(x, media == "video").to(device) for x in items]

    def materialize(self, out: Any) -> Any:
        return materialize_output(out)

    def _build(self, transform: str, call: ts.Call, media: str, device: str) -> Any:
        import torch

        torch.manual_seed(ts.SEED)
        return self._make(transform, call, device)

    def _tensor(self, item: np.ndarray, video: bool) -> Any:
        raise NotImplementedError

    def _make(self, transform: str, call: ts.Call, device: str) -> Any:
        raise NotImplementedError


class TorchRgbChunks:
    """[rgb_chunks]: the RGB transform on each triple of a 9-channel (.., C, H, W) tensor, concatenated on C."""

    def __init__(self, inner: Any, dim: int = -3) -> None:
        self.inner = inner
        self.dim = dim

    def __call__(self, x: Any) -> Any:
        import torch

        return torch.cat([self.inner(c) for c in torch.split(x, 3, dim=self.dim)], dim=self.dim)
