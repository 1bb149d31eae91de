"""Kornia (`kornia.augmentation`): float32 in [0, 1], a batch of one (1, C, H, W) per image, (T, C, H, W) per clip.

Kornia's augmentations are float-only, so its native item is float (the uint8 -> float conversion happens at
preload, outside the timer); this is the one dtype difference between libraries and is stated in the doc's
fairness rules. Clips use `same_on_batch=True` (added by `transform_specs.resolved_call`) so all 16 frames
share one parameter draw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench_assets.augbench import transform_specs as ts
from bench_assets.augbench.adapters.base import (
    TorchAdapter,
    TorchRgbChunks,
    Unsupported,
    construct,
    normalize_stats,
    resolve_value,
    with_default_p,
)


def _resolve(value: Any, device: str, where: str) -> Any:
    import torch

    if isinstance(value, ts.TensorArg):
        return torch.tensor(value.values, dtype=torch.float32, device=device)
    return resolve_value(value, {}, where)


class KorniaPadToSize:
    """[pad_to_size]: zero-pad (centred) an item smaller than the crop, then crop (Kornia CenterCrop cannot pad)."""

    def __init__(self, inner: Any, size: tuple[int, int]) -> None:
        self.inner = inner
        self.size = tuple(size)

    def __call__(self, x: Any) -> Any:
        import torch.nn.functional as F

        h, w = x.shape[-2:]
        ph, pw = max(0, self.size[0] - h), max(0, self.size[1] - w)
        if ph or pw:
            x = F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2))
        return self.inner(x)


class KorniaGridRegion:
    """[grid_region]: RandomJigsaw on the largest region divisible by the grid; remainder rows/columns kept."""

    def __init__(self, inner: Any, grid: tuple[int, int]) -> None:
        self.inner = inner
        self.grid = tuple(grid)

    def __call__(self, x: Any) -> Any:
        h, w = x.shape[-2:]
        h2, w2 = h - h % self.grid[0], w - w % self.grid[1]
        if (h2, w2) == (h, w):
            return self.inner(x)
        out = x.clone()
        out[..., :h2, :w2] = self.inner(x[..., :h2, :w2])
        return out


def make_transform(transform: str, call: ts.Call, device: str = "cpu") -> Any:
    import kornia.augmentation as K

    where = f"{transform} (kornia {call.fn})"
    if call.pre or call.post:
        raise ts.SpecError(f"{where}: pre/post calls are not used with Kornia")
    cls = getattr(K, call.fn.removeprefix("K."), None)
    if cls is None or not call.fn.startswith("K."):
        raise ts.SpecError(f"{where}: kornia.augmentation has no {call.fn}")
    kwargs = {k: _resolve(v, device, where) for k, v in call.kwargs.items()}
    module = construct(where, cls, with_default_p(cls, kwargs)).to(device)
    if call.wrap is None:
        return module
    if call.wrap == "rgb_chunks":
        return TorchRgbChunks(module)
    if call.wrap == "pad_to_size":
        return KorniaPadToSize(module, call.kwargs["size"])
    if call.wrap == "grid_region":
        return KorniaGridRegion(module, call.kwargs["grid"])
    raise ts.SpecError(f"{where}: wrap {call.wrap!r} is not implemented for Kornia")


def to_float(x: np.ndarray, video: bool, contiguous: bool = True) -> Any:
    """numpy uint8 HWC/THWC -> float32 in [0, 1], (1, C, H, W) or (T, C, H, W): contiguous, or
    (`contiguous=False`) keeping the channels-last strides of `read_image(path) / 255` (the published runner)."""
    import torch

    t = torch.from_numpy(x)
    t = t.permute(0, 3, 1, 2) if video else t.permute(2, 0, 1)[None]
    return (t.contiguous() if contiguous else t).to(torch.float32).div_(255.0)


class KorniaRecipe:
    """DataLoader recipe: numpy -> float BCHW/TCHW -> crop + transform + Normalize -> CHW/TCHW float32."""

    def __init__(self, steps: list[Any], video: bool) -> None:
        self.steps = steps
        self.video = video

    def __call__(self, x: np.ndarray) -> Any:
        t = to_float(x, self.video)
        for step in self.steps:
            t = step(t)
        return (t if self.video else t[0]).contiguous()


class KorniaAdapter(TorchAdapter):
    name = "kornia"
    package = "kornia"

    def _tensor(self, item: np.ndarray, video: bool) -> Any:
        return to_float(item, video, contiguous=self.tensor_layout == "contiguous")

    def _make(self, transform: str, call: ts.Call, device: str) -> Any:
        return make_transform(transform, call, device)

    def _recipe(self, transform: str, call: ts.Call, media: str) -> Any:
        import kornia.augmentation as K
        import torch

        mean, std = normalize_stats(media)
        steps = [] if transform in ts.CROP_TRANSFORMS else [
            make_transform("RandomCrop224", ts.resolved_call("RandomCrop224", self.name, media))]
        steps.append(make_transform(transform, call))
        if transform != "Normalize":
            steps.append(K.Normalize(mean=torch.tensor(mean), std=torch.tensor(std), p=1.0))
        return KorniaRecipe(steps, media == "video")


__all__ = ["KorniaAdapter", "Unsupported"]
