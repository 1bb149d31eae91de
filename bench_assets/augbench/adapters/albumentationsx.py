"""AlbumentationsX (`import albumentations`): numpy HWC uint8 in, numpy out; video through `images=`.

Every transform runs inside `A.Compose([t], seed=..., telemetry=False)`, the library's normal entry point (no
slower than calling the transform directly in 2.5.1); telemetry is off so no pipeline build touches the network.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from bench_assets.augbench import transform_specs as ts
from bench_assets.augbench.adapters.base import (
    BaseAdapter,
    Unsupported,
    check_items,
    construct,
    materialize_output,
    normalize_stats,
    package_versions,
    resolve_value,
    with_default_p,
)


def _symbols() -> dict[str, Any]:
    import cv2

    return {"cv2.INTER_LINEAR": cv2.INTER_LINEAR, "cv2.BORDER_CONSTANT": cv2.BORDER_CONSTANT}


def make_transform(transform: str, call: ts.Call) -> Any:
    """The albumentations transform object for a spec call (no wrapper)."""
    import albumentations as A

    where = f"{transform} (albumentationsx {call.fn})"
    if call.pre or call.post:
        raise ts.SpecError(f"{where}: pre/post calls are not used with AlbumentationsX")
    cls = getattr(A, call.fn.removeprefix("A."), None)
    if cls is None:
        raise ts.SpecError(f"{where}: albumentations has no {call.fn.removeprefix('A.')}")
    kwargs = resolve_value(dict(call.kwargs), _symbols(), where)
    return construct(where, cls, with_default_p(cls, kwargs))


class AlbuApply:
    """fn(item) for one transform: `Compose([t], seed)` on `image=` (HWC) or `images=` (THWC clip)."""

    def __init__(self, compose: Any, video: bool) -> None:
        self.compose = compose
        self.key = "images" if video else "image"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.compose(**{self.key: x})[self.key]


class AlbuRgbChunks:
    """[rgb_chunks]: the RGB transform on each triple of a 9-channel item, concatenated on the channel axis."""

    def __init__(self, inner: AlbuApply) -> None:
        self.inner = inner

    def __call__(self, x: np.ndarray) -> np.ndarray:
        parts = [self.inner(np.ascontiguousarray(x[..., i:i + 3])) for i in range(0, x.shape[-1], 3)]
        return np.concatenate(parts, axis=-1)


class AlbuRecipe:
    """DataLoader recipe: crop + transform + Normalize (one Compose when possible) -> float32 CHW/TCHW tensor."""

    def __init__(self, steps: list[Any], video: bool) -> None:
        self.steps = steps
        self.video = video

    def __call__(self, x: np.ndarray) -> Any:
        import torch

        for step in self.steps:
            x = step(x)
        x = x.transpose(0, 3, 1, 2) if self.video else x.transpose(2, 0, 1)
        return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))


class AlbumentationsXAdapter(BaseAdapter):
    name = "albumentationsx"
    devices = ("cpu",)

    def _import_error(self) -> str | None:
        return None if importlib.util.find_spec("albumentations") else "albumentationsx is not installed"

    def versions(self) -> dict[str, str]:
        out = package_versions("albumentationsx", "albucore", "numpy")
        try:
            import cv2

            out["opencv"] = cv2.__version__
            # OpenCV's bundled Intel IPP: on some machines its scalar arithmetic is 100x+ slower than OpenCV's
            # own code (benchmarks/published_outlier_probes.py), so a cell's speed depends on it
            out["opencv_ipp"] = cv2.ipp.getIppVersion() if cv2.ipp.useIPP() else "off"
        except ImportError:
            out["opencv"] = "not installed"
        return out

    def to_native(self, items: list[np.ndarray], media: str, device: str) -> list[Any]:
        self._check_media(media)
        self._check_usable(device)
        check_items(items, media)
        return [np.ascontiguousarray(x) for x in items]

    def materialize(self, out: Any) -> Any:
        return materialize_output(out)

    def _apply(self, transforms: list[Any], media: str, seed: int | None) -> AlbuApply:
        import albumentations as A

        return AlbuApply(A.Compose(transforms, seed=seed, telemetry=False), media == "video")

    @staticmethod
    def _check_wrap(transform: str, call: ts.Call) -> None:
        if call.wrap not in (None, "rgb_chunks"):
            raise ts.SpecError(f"{transform}: wrap {call.wrap!r} is not implemented for AlbumentationsX")

    def _build(self, transform: str, call: ts.Call, media: str, device: str) -> Any:
        self._check_wrap(transform, call)
        fn = self._apply([make_transform(transform, call)], media, ts.SEED)
        return AlbuRgbChunks(fn) if call.wrap == "rgb_chunks" else fn

    def _recipe(self, transform: str, call: ts.Call, media: str) -> Any:
        import albumentations as A

        self._check_wrap(transform, call)
        mean, std = normalize_stats(media)
        head = [] if transform in ts.CROP_TRANSFORMS else [
            make_transform("RandomCrop224", ts.resolved_call("RandomCrop224", self.name, media))]
        tail = [] if transform == "Normalize" else [A.Normalize(mean=mean, std=std, max_pixel_value=255.0, p=1.0)]
        aug = make_transform(transform, call)
        if call.wrap == "rgb_chunks":
            steps: list[Any] = [AlbuRgbChunks(self._apply([aug], media, None))]
            if head:
                steps.insert(0, self._apply(head, media, None))
            if tail:
                steps.append(self._apply(tail, media, None))
        else:
            steps = [self._apply([*head, aug, *tail], media, None)]
        return AlbuRecipe(steps, media == "video")


__all__ = ["AlbumentationsXAdapter", "Unsupported"]
