"""Pillow: `PIL.Image` RGB only (no 9-channel or video type). Only Pillow's own operations, no numpy glue."""

from __future__ import annotations

import importlib.util
import io
import math
import random
from typing import Any

import numpy as np

from bench_assets.augbench import transform_specs as ts
from bench_assets.augbench.adapters.base import (
    BaseAdapter,
    Unsupported,
    check_items,
    materialize_output,
    package_versions,
    resolve_value,
)


def _symbols() -> dict[str, Any]:
    from PIL import Image, ImageFilter

    return {
        "Image.Resampling.BILINEAR": Image.Resampling.BILINEAR,
        "Image.Transpose.FLIP_LEFT_RIGHT": Image.Transpose.FLIP_LEFT_RIGHT,
        "Image.Transpose.FLIP_TOP_BOTTOM": Image.Transpose.FLIP_TOP_BOTTOM,
        "Image.Transpose.TRANSPOSE": Image.Transpose.TRANSPOSE,
        "Image.Transform.AFFINE": Image.Transform.AFFINE,
        "ImageFilter.EDGE_ENHANCE": ImageFilter.EDGE_ENHANCE,
        "ImageFilter.DETAIL": ImageFilter.DETAIL,
    }


def affine_coefficients(size: tuple[int, int], angle: float, scale: float, shear_x: float, shear_y: float = 0.0
                        ) -> tuple[float, ...]:
    """PIL AFFINE data (output -> input map) for rotate `angle` (counter-clockwise), `scale` and shear (degrees)
    about the image centre, in the convention of torchvision's `affine` (checked numerically in the tests)."""
    w, h = size
    cx, cy = w / 2.0, h / 2.0
    t, sx, sy = math.radians(angle), math.radians(shear_x), math.radians(shear_y)
    rot = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    shear = np.array([[1.0, -math.tan(sx)], [-math.tan(sy), 1.0]])
    inv = np.linalg.inv(scale * rot @ shear)
    (a, b), (d, e) = inv
    return (a, b, cx - a * cx - b * cy, d, e, cy - d * cx - e * cy)


class PillowAffine:
    """`Image.transform(size, AFFINE, data)` with data computed from the canonical parameters per item size."""

    def __init__(self, angle: float, scale: float, shear_x: float, shear_y: float, resample: Any, fillcolor: Any
                 ) -> None:
        self.args = (angle, scale, shear_x, shear_y)
        self.resample = resample
        self.fillcolor = fillcolor

    def __call__(self, img: Any) -> Any:
        from PIL import Image

        data = affine_coefficients(img.size, *self.args)
        return img.transform(img.size, Image.Transform.AFFINE, data, resample=self.resample, fillcolor=self.fillcolor)


class PillowOp:
    """One Pillow operation from a spec call (`fn` + resolved kwargs), then its `post` calls."""

    def __init__(self, fn: str, kwargs: dict[str, Any], post: list[PillowOp] | None = None) -> None:
        self.fn = fn
        self.kwargs = kwargs
        self.post = post or []

    def __call__(self, img: Any) -> Any:
        from PIL import Image, ImageEnhance, ImageOps

        fn, kw = self.fn, self.kwargs
        if fn == "Image.save":  # JPEG round trip; decoded lazily (materialize / the recipe force it)
            buf = io.BytesIO()
            img.save(buf, **kw)
            buf.seek(0)
            out = buf
        elif fn == "Image.open":
            out = Image.open(img)
        elif fn.startswith("ImageOps."):
            out = getattr(ImageOps, fn.removeprefix("ImageOps."))(img, **kw)
        elif fn.startswith("ImageEnhance."):
            out = getattr(ImageEnhance, fn.removeprefix("ImageEnhance."))(img).enhance(kw["factor"])
        else:  # an Image method: resize, transpose, rotate, filter, convert
            out = getattr(img, fn.removeprefix("Image."))(**kw)
        for p in self.post:
            out = p(out)
        return out


class PillowRandomCrop:
    """RandomCrop224 / CenterCrop224 for the DataLoader recipe: `Image.crop`, zero-filled beyond the borders."""

    def __init__(self, size: tuple[int, int], centred: bool) -> None:
        self.size = size
        self.centred = centred

    def __call__(self, img: Any) -> Any:
        (ch, cw), (w, h) = self.size, img.size
        if self.centred or w <= cw:
            left = (w - cw) // 2
        else:
            left = random.randint(0, w - cw)
        if self.centred or h <= ch:
            top = (h - ch) // 2
        else:
            top = random.randint(0, h - ch)
        return img.crop((left, top, left + cw, top + ch))


class PillowRandomResizedCrop:
    """RandomResizedCrop for the DataLoader recipe: torchvision-style box sampling, one `resize(box=)`."""

    def __init__(self, size: tuple[int, int], scale: tuple[float, float], ratio: tuple[float, float]) -> None:
        self.size = size
        self.scale = scale
        self.log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        self.ratio = ratio

    def box(self, w: int, h: int) -> tuple[int, int, int, int]:
        area = w * h
        for _ in range(10):
            target = area * random.uniform(*self.scale)
            aspect = math.exp(random.uniform(*self.log_ratio))
            cw, ch = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
            if 0 < cw <= w and 0 < ch <= h:
                left, top = random.randint(0, w - cw), random.randint(0, h - ch)
                return (left, top, left + cw, top + ch)
        aspect = w / h
        if aspect < self.ratio[0]:
            cw, ch = w, round(w / self.ratio[0])
        elif aspect > self.ratio[1]:
            cw, ch = round(h * self.ratio[1]), h
        else:
            cw, ch = w, h
        left, top = (w - cw) // 2, (h - ch) // 2
        return (left, top, left + cw, top + ch)

    def __call__(self, img: Any) -> Any:
        from PIL import Image

        return img.resize((self.size[1], self.size[0]), Image.Resampling.BILINEAR, box=self.box(*img.size))


class PillowRecipe:
    """DataLoader recipe: numpy -> PIL RGB -> crop + transform -> float32 CHW tensor normalized (ImageNet)."""

    def __init__(self, steps: list[Any], normalize: bool = True) -> None:
        self.steps = steps
        self.normalize = normalize

    def __call__(self, x: np.ndarray) -> Any:
        import torch
        from PIL import Image

        img = Image.fromarray(x)
        for step in self.steps:
            img = step(img)
        t = torch.from_numpy(np.array(img)).permute(2, 0, 1).contiguous().to(torch.float32)
        t = t.div_(255.0)
        if self.normalize:
            mean = torch.tensor(ts.NORMALIZE_MEAN).view(3, 1, 1)
            std = torch.tensor(ts.NORMALIZE_STD).view(3, 1, 1)
            t = t.sub_(mean).div_(std)
        return t


def make_op(transform: str, call: ts.Call) -> Any:
    """The Pillow callable for a spec call (crop/affine helpers or a generic `PillowOp`)."""
    from PIL import ImageFilter

    where = f"{transform} (pillow {call.fn})"
    if call.wrap is not None or call.pre:
        raise ts.SpecError(f"{where}: wraps/pre calls are not used with Pillow")
    canon = ts.SPECS[transform].canonical
    if transform in ("RandomCrop224", "CenterCrop224"):
        return PillowRandomCrop(tuple(canon["size"]), centred=transform == "CenterCrop224")
    if transform == "RandomResizedCrop":
        return PillowRandomResizedCrop(tuple(canon["size"]), tuple(canon["scale"]), tuple(canon["ratio"]))
    symbols = _symbols()
    kwargs: dict[str, Any] = {}
    for k, v in call.kwargs.items():
        if isinstance(v, ts.Call):  # a filter object, e.g. ImageFilter.GaussianBlur(radius=1.0)
            cls = getattr(ImageFilter, v.fn.removeprefix("ImageFilter."), None)
            if cls is None:
                raise ts.SpecError(f"{where}: PIL.ImageFilter has no {v.fn}")
            kwargs[k] = cls(**resolve_value(dict(v.kwargs), symbols, where))
        elif not (call.fn == "Image.transform" and k == "data"):
            kwargs[k] = resolve_value(v, symbols, where)
    if call.fn == "Image.transform":
        return PillowAffine(float(canon.get("rotate", 0.0)), float(canon.get("scale", 1.0)),
                            float(canon.get("shear_x", 0.0)), float(canon.get("shear_y", 0.0)),
                            kwargs["resample"], kwargs["fillcolor"])
    known = ("Image.", "ImageOps.", "ImageEnhance.")
    if not call.fn.startswith(known):
        raise ts.SpecError(f"{where}: not a Pillow operation")
    post = [PillowOp(p.fn, resolve_value(dict(p.kwargs), symbols, where)) for p in call.post]
    return PillowOp(call.fn, kwargs, post)


class PillowAdapter(BaseAdapter):
    name = "pillow"
    devices = ("cpu",)
    media_kinds = ("rgb",)

    def _import_error(self) -> str | None:
        return None if importlib.util.find_spec("PIL") else "pillow is not installed"

    def versions(self) -> dict[str, str]:
        out = package_versions("pillow", "numpy")
        try:
            from PIL import features

            out["libjpeg"] = str(features.version("jpg"))
        except Exception:
            out["libjpeg"] = "unknown"
        return out

    def to_native(self, items: list[np.ndarray], media: str, device: str) -> list[Any]:
        from PIL import Image

        self._check_media(media)
        self._check_usable(device)
        check_items(items, media)
        return [Image.fromarray(np.ascontiguousarray(x)) for x in items]

    def materialize(self, out: Any) -> Any:
        return materialize_output(out)

    def _build(self, transform: str, call: ts.Call, media: str, device: str) -> Any:
        random.seed(ts.SEED)
        return make_op(transform, call)

    def _recipe(self, transform: str, call: ts.Call, media: str) -> Any:
        steps = [] if transform in ts.CROP_TRANSFORMS else [
            make_op("RandomCrop224", ts.resolved_call("RandomCrop224", self.name, media))]
        steps.append(make_op(transform, call))
        return PillowRecipe(steps)


__all__ = ["PillowAdapter", "Unsupported"]
