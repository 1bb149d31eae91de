"""torchvision.transforms.v2: torch uint8 CHW (video: `tv_tensors.Video`, TCHW), contiguous, on CPU or CUDA."""

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


def _symbols() -> dict[str, Any]:
    import torch
    from torchvision.transforms import v2

    return {"InterpolationMode.BILINEAR": v2.InterpolationMode.BILINEAR, "torch.float32": torch.float32}


def _one(transform: str, call: ts.Call) -> Any:
    from torchvision.transforms import v2

    where = f"{transform} (torchvision {call.fn})"
    cls = getattr(v2, call.fn.removeprefix("v2."), None)
    if cls is None or not call.fn.startswith("v2."):
        raise ts.SpecError(f"{where}: torchvision.transforms.v2 has no {call.fn}")
    kwargs = resolve_value(dict(call.kwargs), _symbols(), where)
    return construct(where, cls, with_default_p(cls, kwargs))


class TorchAsImageBatch:
    """[image_batch]: a clip handed to the transform as a plain TCHW tensor (a batch of images)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, x: Any) -> Any:
        import torch

        return self.inner(x.as_subclass(torch.Tensor))


def make_transform(transform: str, call: ts.Call) -> Any:
    """The v2 transform (pre/post calls composed, wrapper applied) for a spec call."""
    from torchvision.transforms import v2

    t = _one(transform, call)
    if call.pre or call.post:
        t = v2.Compose([*(_one(transform, c) for c in call.pre), t, *(_one(transform, c) for c in call.post)])
    if call.wrap == "rgb_chunks":
        return TorchRgbChunks(t)
    if call.wrap == "image_batch":
        return TorchAsImageBatch(t)
    if call.wrap is not None:
        raise ts.SpecError(f"{transform}: wrap {call.wrap!r} is not implemented for torchvision")
    return t


def to_chw(x: np.ndarray, video: bool, contiguous: bool = True) -> Any:
    """numpy uint8 HWC/THWC -> torch uint8 CHW/TCHW (a Video for clips): contiguous, or (`contiguous=False`)
    the permuted view with channels-last strides, exactly what `torchvision.io.read_image` returns."""
    import torch
    from torchvision import tv_tensors

    t = torch.from_numpy(x)
    t = t.permute(0, 3, 1, 2) if video else t.permute(2, 0, 1)
    t = t.contiguous() if contiguous else t
    return tv_tensors.Video(t) if video else t


class TorchvisionRecipe:
    """DataLoader recipe: numpy -> CHW uint8 -> crop + transform + ToDtype(float32, scale) + Normalize."""

    def __init__(self, pipeline: Any, video: bool) -> None:
        self.pipeline = pipeline
        self.video = video

    def __call__(self, x: np.ndarray) -> Any:
        import torch

        out = self.pipeline(to_chw(x, self.video))
        return out.as_subclass(torch.Tensor).contiguous()


class TorchvisionAdapter(TorchAdapter):
    name = "torchvision"
    package = "torchvision"

    def _tensor(self, item: np.ndarray, video: bool) -> Any:
        return to_chw(item, video, contiguous=self.tensor_layout == "contiguous")

    def _make(self, transform: str, call: ts.Call, device: str) -> Any:
        return make_transform(transform, call)

    def _recipe(self, transform: str, call: ts.Call, media: str) -> Any:
        import torch
        from torchvision.transforms import v2

        mean, std = normalize_stats(media)
        steps = [] if transform in ts.CROP_TRANSFORMS else [
            make_transform("RandomCrop224", ts.resolved_call("RandomCrop224", self.name, media))]
        steps.append(make_transform(transform, call))
        if transform != "Normalize":  # the Normalize row's transform is the recipe's normalization
            steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean=list(mean), std=list(std))]
        return TorchvisionRecipe(v2.Compose(steps), media == "video")


__all__ = ["TorchvisionAdapter", "Unsupported"]
