"""Canonical definition of every augbench paper transform, and each library's exact call for it, as data.

One `TransformSpec` per name in `data/paper_transform_sets.csv` (column `transform`). It holds

- `canonical`: the operation every library is asked to perform, chosen so the libraries do equivalent work
  (fixed angles/factors wherever a library lets the range collapse to one value; always applied, p=1);
- `calls`: per library the constructor or function and its arguments, exactly as the adapters build them
  (`Call`); `media_calls` overrides a call for "9ch" or "video";
- `notes`: where the libraries cannot be made equivalent, what differs and what was chosen.

Which library is measured for which (media, transform) is the CSV's business (`libraries` for micro runs,
`dataloader_libraries` for DataLoader recipes), never this module's: a library not listed there is
`Unsupported`, whatever `calls` holds. `render_markdown()` prints the tables of `docs/augbench_transforms.md`.

Nothing here imports an augmentation library: constants and tensors are named symbolically (`Sym`,
`TensorArg`) and resolved by the adapters. `validate_call` rejects the unit traps met before (a Kornia hue in
degrees, a torchvision uint8 threshold given as a fraction, a Kornia scalar that silently means a range) with
`SpecError`, which adapters raise from `build` -- an `error` cell, never a silently dropped row.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

LIBRARIES = ("albumentationsx", "torchvision", "kornia", "pillow")  # the documented CPU libraries
ALL_LIBRARIES = (*LIBRARIES, "dali")
REFERENCE_LIBRARY = "albumentationsx"  # speedups, the equivalence audit and the published comparison are relative to it
MEDIA = ("rgb", "9ch", "video")
CSV_PATH = Path(__file__).resolve().parent / "data" / "paper_transform_sets.csv"
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "augbench_transforms.md"

CROP = 224  # RandomCrop224 / CenterCrop224 / RandomResizedCrop output side
RESIZE = 512  # Resize / LongestMaxSize / SmallestMaxSize target
PAD = 10  # Pad: pixels added on every side
VIDEO_FRAMES = 16
NORMALIZE_MEAN = (0.485, 0.456, 0.406)  # ImageNet statistics, repeated per RGB triple for 9 channels
NORMALIZE_STD = (0.229, 0.224, 0.225)
CROP_TRANSFORMS = ("RandomCrop224", "RandomResizedCrop", "CenterCrop224")
SEED = 137  # fixed once in every build (torch.manual_seed / Compose(seed=) / random.seed)
DATALOADER_RECIPE = "RandomCrop224 + <transform> + Normalize + ToTensor"


class SpecError(ValueError):
    """A parameter in a spec is wrong (units, range, unknown argument). Never recorded as `unsupported`."""


# --------------------------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class Sym:
    """A library constant named symbolically, e.g. `cv2.INTER_LINEAR`; the adapter resolves it at build time."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TensorArg:
    """A 1-D float tensor argument (Kornia's RandomFisheye/Normalize), created on the build device."""

    values: tuple[float, ...]

    def __repr__(self) -> str:
        return f"tensor([{', '.join(_fmt(v) for v in self.values)}])"


# wrap: how the adapter applies the call beyond a plain `fn(item)`; printed in the doc next to the call.
WRAPS = {
    "rgb_chunks": "applied to each RGB triple of the 9-channel item (3 calls, concatenated)",
    "pad_to_size": "zero-pads an item smaller than the crop first (Kornia CenterCrop cannot pad)",
    "grid_region": "applied to the largest region divisible by the grid (Kornia RandomJigsaw needs divisibility); "
    "the remainder rows/columns are kept",
    "image_batch": "the clip is passed as a plain TCHW tensor, i.e. a batch of images (torchvision 0.29's Grayscale "
    "returns a `tv_tensors.Video` unchanged -- a silent no-op)",
}


@dataclass(frozen=True)
class Call:
    """One library call: `fn(**kwargs)`. `pre`/`post` calls run before/after it (e.g. a dtype conversion)."""

    fn: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    wrap: str | None = None
    pre: tuple[Call, ...] = ()
    post: tuple[Call, ...] = ()

    def __post_init__(self) -> None:
        if self.wrap is not None and self.wrap not in WRAPS:
            raise SpecError(f"{self.fn}: unknown wrap {self.wrap!r}; known: {', '.join(WRAPS)}")

    def with_kwargs(self, **extra: Any) -> Call:
        return Call(self.fn, {**self.kwargs, **extra}, self.wrap, self.pre, self.post)

    def render(self) -> str:
        args = ", ".join(f"{k}={_fmt(v)}" for k, v in self.kwargs.items())
        text = " → ".join([*(c.render() for c in self.pre), f"{self.fn}({args})", *(c.render() for c in self.post)])
        return f"{text} [{self.wrap}]" if self.wrap else text


@dataclass(frozen=True)
class TransformSpec:
    name: str
    canonical: Mapping[str, Any]
    calls: Mapping[str, Call] = field(default_factory=dict)  # library -> call (any media)
    media_calls: Mapping[tuple[str, str], Call] = field(default_factory=dict)  # (media, library) -> override
    notes: str = ""
    geometry: str = "same"  # output size rule, see `output_hw`

    def call(self, library: str, media: str) -> Call | None:
        return self.media_calls.get((media, library), self.calls.get(library))


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, float):
        return repr(v) if len(repr(v)) <= 8 else f"{v:.6g}"
    if isinstance(v, tuple):
        inner = ", ".join(_fmt(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_fmt(k)}: {_fmt(x)}" for k, x in v.items()) + "}"
    if isinstance(v, Call):
        return v.render()
    return repr(v)


def C(fn: str, wrap: str | None = None, pre: tuple[Call, ...] = (), post: tuple[Call, ...] = (), **kwargs: Any
      ) -> Call:  # noqa: N802 - a short constructor keeps the table below readable
    return Call(fn, kwargs, wrap, pre, post)


# Symbolic constants (resolved per adapter).
LINEAR = Sym("cv2.INTER_LINEAR")
CONSTANT = Sym("cv2.BORDER_CONSTANT")
TV_BILINEAR = Sym("InterpolationMode.BILINEAR")
PIL_BILINEAR = Sym("Image.Resampling.BILINEAR")
HUE_DEG = 20.0  # Hue: a fixed +20 degree rotation of the hue circle
HUE_TURN = HUE_DEG / 360.0
RGB_SHIFT = 20  # RGBShift: +20 of 255 on every channel
SHARPEN_BLEND = 2.0  # torchvision/Kornia/PIL sharpness factor; AlbumentationsX alpha below is the same kernel
A_SHARPEN_ALPHA = (SHARPEN_BLEND - 1.0) / 13.0  # derivation in the Sharpen notes
ELASTIC_REF = 256  # Kornia's elastic alpha is in normalised coordinates: matched to torchvision at this width
RAIN_DROPS = 150
SNOW_K = 0.3 / 2 + 1 / 3  # Kornia snow_coefficient equal to AlbumentationsX's snow_point 0.3 (see Snow's notes)

_A_AFFINE = dict(interpolation=LINEAR, border_mode=CONSTANT, fill=0)
_TV_GEOM = dict(interpolation=TV_BILINEAR, fill=0)
_K_GEOM = dict(resample="bilinear", align_corners=False)


def _illumination(mode: str, kornia_cls: str, extra_a: dict[str, Any], extra_k: dict[str, Any]) -> dict[str, Call]:
    return {
        "albumentationsx": C("A.Illumination", mode=mode, intensity_range=(0.01, 0.2), effect_type="both", **extra_a),
        "kornia": C(f"K.{kornia_cls}", gain=(0.01, 0.2), sign=(-1.0, 1.0), **extra_k),
    }


_SPEC_LIST: list[TransformSpec] = [
    # ------------------------------------------------------------------------------------------- geometry
    TransformSpec(
        "Resize", {"size": (RESIZE, RESIZE), "interpolation": "bilinear"},
        {
            "albumentationsx": C("A.Resize", height=RESIZE, width=RESIZE, interpolation=LINEAR),
            "torchvision": C("v2.Resize", size=(RESIZE, RESIZE), interpolation=TV_BILINEAR, antialias=True),
            "kornia": C("K.Resize", size=(RESIZE, RESIZE), resample="bilinear", align_corners=False, antialias=False),
            "pillow": C("Image.resize", size=(RESIZE, RESIZE), resample=PIL_BILINEAR),
            "dali": C("fn.resize", resize_x=RESIZE, resize_y=RESIZE, interp_type=Sym("types.INTERP_LINEAR")),
        },
        notes="Every library's own default for antialiasing: torchvision and Pillow antialias when downscaling, "
        "OpenCV (AlbumentationsX) and Kornia do not; identical work when upscaling.",
        geometry="resize"),
    TransformSpec(
        "RandomCrop224", {"size": (CROP, CROP), "pad_if_needed": True, "fill": 0},
        {
            "albumentationsx": C("A.RandomCrop", height=CROP, width=CROP, pad_if_needed=True, border_mode=CONSTANT,
                                 fill=0),
            "torchvision": C("v2.RandomCrop", size=(CROP, CROP), pad_if_needed=True, fill=0),
            "kornia": C("K.RandomCrop", size=(CROP, CROP), pad_if_needed=True, fill=0.0, cropping_mode="slice"),
            "pillow": C("Image.crop", box=Sym("random 224x224 window, zero-filled beyond the borders")),
            "dali": C("fn.crop", crop=(CROP, CROP), crop_pos_x=Sym("fn.random.uniform(range=(0, 1))"),
                      crop_pos_y=Sym("fn.random.uniform(range=(0, 1))"), out_of_bounds_policy="pad"),
        },
        notes="A crop is a view in every library; the materialization rule copies it (see fairness rules).",
        geometry="crop"),
    TransformSpec(
        "RandomResizedCrop",
        {"size": (CROP, CROP), "scale": (0.08, 1.0), "ratio": (0.75, 4 / 3), "interpolation": "bilinear"},
        {
            "albumentationsx": C("A.RandomResizedCrop", size=(CROP, CROP), scale=(0.08, 1.0), ratio=(0.75, 4 / 3),
                                 interpolation=LINEAR),
            "torchvision": C("v2.RandomResizedCrop", size=(CROP, CROP), scale=(0.08, 1.0), ratio=(0.75, 4 / 3),
                             interpolation=TV_BILINEAR, antialias=True),
            "kornia": C("K.RandomResizedCrop", size=(CROP, CROP), scale=(0.08, 1.0), ratio=(0.75, 4 / 3),
                        resample="bilinear", align_corners=False, cropping_mode="slice"),
            "pillow": C("Image.resize", size=(CROP, CROP), resample=PIL_BILINEAR,
                        box=Sym("torchvision-style random box (scale, ratio)")),
            "dali": C("fn.random_resized_crop", size=(CROP, CROP), random_area=(0.08, 1.0),
                      random_aspect_ratio=(0.75, 4 / 3)),
        },
        notes="Pillow (DataLoader only) samples the box like torchvision and crops+resizes in one `resize(box=)`.",
        geometry="crop"),
    TransformSpec(
        "CenterCrop224", {"size": (CROP, CROP), "pad_if_needed": True},
        {
            "albumentationsx": C("A.CenterCrop", height=CROP, width=CROP, pad_if_needed=True, border_mode=CONSTANT,
                                 fill=0),
            "torchvision": C("v2.CenterCrop", size=(CROP, CROP)),
            "kornia": C("K.CenterCrop", "pad_to_size", size=(CROP, CROP), cropping_mode="slice"),
            "pillow": C("Image.crop", box=Sym("centred 224x224 window, zero-filled beyond the borders")),
        },
        notes="torchvision pads a smaller item by itself; Kornia gets the same zero padding from the wrapper.",
        geometry="crop"),
    TransformSpec(
        "HorizontalFlip", {"axis": "width"},
        {
            "albumentationsx": C("A.HorizontalFlip"),
            "torchvision": C("v2.RandomHorizontalFlip"),
            "kornia": C("K.RandomHorizontalFlip"),
            "pillow": C("Image.transpose", method=Sym("Image.Transpose.FLIP_LEFT_RIGHT")),
            "dali": C("fn.flip", horizontal=1, vertical=0),
        },
        notes="AlbumentationsX returns a negative-stride view; the materialization rule copies it, as torch and "
        "Pillow copy by construction."),
    TransformSpec(
        "VerticalFlip", {"axis": "height"},
        {
            "albumentationsx": C("A.VerticalFlip"),
            "torchvision": C("v2.RandomVerticalFlip"),
            "kornia": C("K.RandomVerticalFlip"),
            "pillow": C("Image.transpose", method=Sym("Image.Transpose.FLIP_TOP_BOTTOM")),
            "dali": C("fn.flip", horizontal=0, vertical=1),
        },
        notes="As HorizontalFlip."),
    TransformSpec(
        "Pad", {"padding": PAD, "sides": "all four", "border": "constant", "fill": 0},
        {
            "albumentationsx": C("A.Pad", padding=PAD, fill=0, border_mode=CONSTANT),
            "torchvision": C("v2.Pad", padding=PAD, fill=0, padding_mode="constant"),
            "pillow": C("ImageOps.expand", border=PAD, fill=0),
            "dali": C("fn.crop", crop=Sym("(H + 20, W + 20)"), crop_pos_x=0.5, crop_pos_y=0.5,
                      out_of_bounds_policy="pad", fill_values=0),
        },
        notes="Kornia has no pad augmentation (not in the set).",
        geometry="pad"),
    TransformSpec(
        "Rotate", {"angle": 45.0, "direction": "counter-clockwise", "interpolation": "bilinear",
                   "border": "constant 0", "output size": "input size"},
        {
            "albumentationsx": C("A.Rotate", angle_range=(45.0, 45.0), interpolation=LINEAR, border_mode=CONSTANT,
                                 fill=0, crop_border=False),
            "torchvision": C("v2.RandomRotation", degrees=(45.0, 45.0), expand=False, **_TV_GEOM),
            "kornia": C("K.RandomRotation", degrees=(45.0, 45.0), **_K_GEOM),
            "pillow": C("Image.rotate", angle=45.0, resample=PIL_BILINEAR, expand=False, fillcolor=0),
            "dali": C("fn.rotate", angle=45.0, keep_size=True, fill_value=0, interp_type=Sym("types.INTERP_LINEAR")),
        },
        notes="All four rotate counter-clockwise for a positive angle (checked numerically in the tests)."),
    TransformSpec(
        "Affine", {"rotate": 25.0, "direction": "counter-clockwise", "scale": 1.2, "shear": "0 (see Shear)",
                   "translate": 0, "centre": "image centre", "interpolation": "bilinear", "border": "constant 0"},
        {
            "albumentationsx": C("A.Affine", rotate=(-25.0, -25.0), scale=(1.2, 1.2), **_A_AFFINE),
            "torchvision": C("v2.RandomAffine", degrees=(25.0, 25.0), scale=(1.2, 1.2), **_TV_GEOM),
            "kornia": C("K.RandomAffine", degrees=(25.0, 25.0), scale=(1.2, 1.2), padding_mode="zeros", **_K_GEOM),
            "pillow": C("Image.transform", method=Sym("Image.Transform.AFFINE"),
                        data=Sym("inverse of rotate 25° and scale 1.2 about the centre"), resample=PIL_BILINEAR,
                        fillcolor=0),
            "dali": C("fn.warp_affine", matrix=Sym("rotation(25) @ scale(1.2) about the centre"), fill_value=0,
                      inverse_map=False),
        },
        notes="AlbumentationsX `Affine` rotates clockwise for a positive angle (its `Rotate` does not), so it gets "
        "-25 to produce the same image. Shear is left to the Shear row: AlbumentationsX composes shear after the "
        "rotation, torchvision/Kornia/Pillow before it, so a combined matrix cannot match; any 2x3 matrix costs the "
        "same warp. Translation is left out: it costs nothing in a warp and torchvision/Kornia can only sample it "
        "from a symmetric range."),
    TransformSpec(
        "Perspective", {"corner displacement": "up to ~10% of the side", "interpolation": "bilinear",
                        "border": "constant 0", "output size": "input size"},
        {
            "albumentationsx": C("A.Perspective", scale=(0.05, 0.05), keep_size=True, fit_output=False,
                                 interpolation=LINEAR, border_mode=CONSTANT, fill=0),
            "torchvision": C("v2.RandomPerspective", distortion_scale=0.2, **_TV_GEOM),
            "kornia": C("K.RandomPerspective", distortion_scale=0.2, sampling_method="basic", **_K_GEOM),
        },
        notes="Corner sampling differs by design (AlbumentationsX: normal with std 5% of the side; torchvision/Kornia: "
        "uniform inwards up to 10%); the work is one 3x3 perspective warp in all three."),
    TransformSpec(
        "Elastic", {"displacement field": "random, smooth (sigma 5 px)", "magnitude": "alpha 50 px (torchvision "
                    "units)", "interpolation": "bilinear", "border": "constant 0"},
        {
            "albumentationsx": C("A.ElasticTransform", displacement_range=(0.03, 0.03), control_grid_shape=(7, 7),
                                 interpolation=LINEAR, border_mode=CONSTANT, fill=0),
            "torchvision": C("v2.ElasticTransform", alpha=50.0, sigma=5.0, **_TV_GEOM),
            "kornia": C("K.RandomElasticTransform", kernel_size=(41, 41), sigma=(5.0, 5.0),
                        alpha=(50.0 / ELASTIC_REF, 50.0 / ELASTIC_REF), padding_mode="zeros", **_K_GEOM),
        },
        notes="Not the same algorithm: torchvision and Kornia blur a full-resolution uniform noise field (Gaussian "
        "sigma 5 px, kernel 41 = 8 sigma + 1 in both) and remap; AlbumentationsX 2.5 evaluates a 7x7 cubic B-spline "
        "lattice (no full-size blur) and remaps. torchvision/Kornia are matched to each other (Kornia's alpha is in "
        "normalised coordinates: 50 px / 256 px reference width); AlbumentationsX gets a comparable visible magnitude. "
        "Reported as each library's elastic transform, not as identical work."),
    TransformSpec(
        "OpticalDistortion", {"model": "fisheye / radial", "interpolation": "bilinear", "border": "constant 0"},
        {
            "albumentationsx": C("A.OpticalDistortion", distort_range=(-0.3, 0.3), mode="fisheye",
                                 interpolation=LINEAR, border_mode=CONSTANT, fill=0),
            "kornia": C("K.RandomFisheye", center_x=TensorArg((-0.3, 0.3)), center_y=TensorArg((-0.3, 0.3)),
                        gamma=TensorArg((0.9, 1.1))),
        },
        notes="Different lens models (AlbumentationsX: OpenCV fisheye coefficient; Kornia: r**gamma radial scaling "
        "about a random centre); both build a full-resolution map and remap bilinearly."),
    TransformSpec(
        "Shear", {"shear_x": 10.0, "shear_y": 0.0, "centre": "image centre", "interpolation": "bilinear",
                  "border": "constant 0"},
        {
            "albumentationsx": C("A.Affine", shear={"x": (10.0, 10.0), "y": (0.0, 0.0)}, **_A_AFFINE),
            "kornia": C("K.RandomShear", shear=(10.0, 10.0, 0.0, 0.0), padding_mode="zeros", **_K_GEOM),
            "pillow": C("Image.transform", method=Sym("Image.Transform.AFFINE"),
                        data=Sym("inverse of shear_x 10° about the centre"), resample=PIL_BILINEAR, fillcolor=0),
            "dali": C("fn.warp_affine", matrix=Sym("shear((10, 0)) about the centre"), fill_value=0,
                      inverse_map=False),
        },
        notes="Same sign convention in all three (checked numerically)."),
    TransformSpec(
        "ThinPlateSpline", {"control point displacement": 0.2, "interpolation": "bilinear"},
        {
            "albumentationsx": C("A.ThinPlateSpline", scale_range=(0.2, 0.2), num_control_points=3,
                                 interpolation=LINEAR, border_mode=CONSTANT, fill=0),
            "kornia": C("K.RandomThinPlateSpline", scale=0.2, padding_mode="zeros", align_corners=False),
        },
        notes="Kornia's control points are fixed (4 corners + centre); AlbumentationsX uses a 3x3 grid, the closest "
        "it allows. Both solve the spline and remap the full image."),
    TransformSpec(
        "LongestMaxSize", {"max_size": RESIZE, "interpolation": "bilinear", "aspect": "kept"},
        {
            "albumentationsx": C("A.LongestMaxSize", max_size=RESIZE, interpolation=LINEAR),
            "kornia": C("K.LongestMaxSize", max_size=RESIZE, resample="bilinear", align_corners=False),
        },
        notes="The scaled side is rounded by AlbumentationsX and truncated by Kornia (can differ by 1 px).",
        geometry="longest"),
    TransformSpec(
        "SmallestMaxSize", {"max_size": RESIZE, "interpolation": "bilinear", "aspect": "kept"},
        {
            "albumentationsx": C("A.SmallestMaxSize", max_size=RESIZE, interpolation=LINEAR),
            "kornia": C("K.SmallestMaxSize", max_size=RESIZE, resample="bilinear", align_corners=False),
        },
        notes="As LongestMaxSize.",
        geometry="smallest"),
    TransformSpec(
        "Transpose", {"swap": "height and width"},
        {
            "albumentationsx": C("A.Transpose"),
            "pillow": C("Image.transpose", method=Sym("Image.Transpose.TRANSPOSE")),
        },
        geometry="swap"),
    TransformSpec(
        "RandomRotate90", {"rotation": "90° counter-clockwise (fixed)"},
        {
            "albumentationsx": C("A.RandomRotate90", group_element="r90"),
            "kornia": C("K.RandomRotation90", times=(1, 1), resample="bilinear", align_corners=True),
        },
        notes="Kornia rotates by resampling inside the input canvas (a warp, size kept), AlbumentationsX by an exact "
        "index permutation (height and width swap); identical pixels on square items.",
        geometry="rot90"),
    TransformSpec(
        "RandomJigsaw", {"grid": (4, 4), "permutation": "random"},
        {
            "albumentationsx": C("A.RandomGridShuffle", grid=(4, 4)),
            "kornia": C("K.RandomJigsaw", "grid_region", grid=(4, 4), ensure_perm=True),
        }),
    # ------------------------------------------------------------------------------------------ colour
    TransformSpec(
        "ColorJitter", {"brightness": 1.2, "contrast": 0.8, "saturation": 1.2, "hue": "+0.05 turn (18°)",
                        "order": "random (library default)"},
        {
            "albumentationsx": C("A.ColorJitter", brightness_range=(1.2, 1.2), contrast_range=(0.8, 0.8),
                                 saturation_range=(1.2, 1.2), hue_range=(0.05, 0.05)),
            "torchvision": C("v2.ColorJitter", brightness=(1.2, 1.2), contrast=(0.8, 0.8), saturation=(1.2, 1.2),
                             hue=(0.05, 0.05)),
            "kornia": C("K.ColorJitter", brightness=(1.2, 1.2), contrast=(0.8, 0.8), saturation=(1.2, 1.2),
                        hue=(0.05, 0.05)),
            "dali": C("fn.color_twist", brightness=1.2, contrast=0.8, saturation=1.2, hue=18.0),
        },
        notes="Hue is in turns of the hue circle in all three (DALI: degrees). Factors fixed, so only the random "
        "order of the four steps varies."),
    TransformSpec(
        "ColorJiggle", {"brightness": (0.875, 1.125), "contrast": (0.5, 1.5), "saturation": (0.5, 1.5),
                        "hue": (-0.05, 0.05)},
        {
            "albumentationsx": C("A.ColorJitter", brightness_range=(0.875, 1.125), contrast_range=(0.5, 1.5),
                                 saturation_range=(0.5, 1.5), hue_range=(-0.05, 0.05)),
            "torchvision": C("v2.ColorJitter", brightness=(0.875, 1.125), contrast=(0.5, 1.5),
                             saturation=(0.5, 1.5), hue=(-0.05, 0.05)),
            "kornia": C("K.ColorJiggle", brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5),
                        hue=(-0.05, 0.05)),
            "dali": C("fn.color_twist", brightness=Sym("uniform(0.875, 1.125)"),
                      contrast=Sym("uniform(0.5, 1.5)"), saturation=Sym("uniform(0.5, 1.5)"),
                      hue=Sym("uniform(-18, 18)")),
        },
        notes="Kornia's ColorJiggle is its legacy jitter (own saturation/hue formulas); AlbumentationsX and "
        "torchvision run their ColorJitter with the same ranges."),
    TransformSpec(
        "PhotoMetricDistort", {"brightness": (0.875, 1.125), "contrast": (0.5, 1.5), "saturation": (0.5, 1.5),
                               "hue": (-0.05, 0.05), "per-step probability": 0.5},
        {
            "albumentationsx": C("A.PhotoMetricDistort", brightness_range=(0.875, 1.125), contrast_range=(0.5, 1.5),
                                 saturation_range=(0.5, 1.5), hue_range=(-0.05, 0.05), distort_p=0.5),
            "torchvision": C("v2.RandomPhotometricDistort", brightness=(0.875, 1.125), contrast=(0.5, 1.5),
                             saturation=(0.5, 1.5), hue=(-0.05, 0.05), p=0.5),
        },
        notes="torchvision's `p` is the per-step probability (the transform itself always runs), the same as "
        "AlbumentationsX's `distort_p`."),
    TransformSpec(
        "Brightness", {"factor": 1.2},
        {
            "albumentationsx": C("A.RandomBrightnessContrast", brightness_range=(0.2, 0.2), contrast_range=(0.0, 0.0)),
            "torchvision": C("v2.ColorJitter", brightness=(1.2, 1.2)),
            "kornia": C("K.RandomBrightness", brightness=(1.2, 1.2)),
            "pillow": C("ImageEnhance.Brightness", factor=1.2),
            "dali": C("fn.brightness", brightness=1.2),
        },
        media_calls={("9ch", "torchvision"): C("v2.ColorJitter", "rgb_chunks", brightness=(1.2, 1.2))},
        notes="AlbumentationsX (default mode), torchvision and Pillow multiply by 1.2; Kornia's RandomBrightness is "
        "additive (+0.2 of the range). Same work: one pointwise op and a clamp. torchvision accepts only 1 or 3 "
        "channels, so 9ch runs per RGB triple."),
    TransformSpec(
        "Contrast", {"factor": 1.2, "centre": "mean grey level"},
        {
            "albumentationsx": C("A.RandomBrightnessContrast", brightness_range=(0.0, 0.0), contrast_range=(0.2, 0.2)),
            "torchvision": C("v2.ColorJitter", contrast=(1.2, 1.2)),
            "kornia": C("K.RandomContrast", contrast=(1.2, 1.2)),
            "pillow": C("ImageEnhance.Contrast", factor=1.2),
            "dali": C("fn.contrast", contrast=1.2),
        },
        media_calls={
            ("9ch", "torchvision"): C("v2.ColorJitter", "rgb_chunks", contrast=(1.2, 1.2)),
            ("9ch", "albumentationsx"): C("A.RandomBrightnessContrast", "rgb_chunks", brightness_range=(0.0, 0.0),
                                         contrast_range=(0.2, 0.2)),
        },
        notes="AlbumentationsX, torchvision and Pillow blend with the mean grey level; Kornia's RandomContrast "
        "only multiplies (no mean). 9ch per RGB triple for torchvision (1 or 3 channels only) and AlbumentationsX "
        "(2.5.1's contrast mean calls OpenCV's RGB->grey conversion, which raises on 9 channels)."),
    TransformSpec(
        "Saturation", {"factor": 1.5},
        {
            "albumentationsx": C("A.ColorJitter", brightness_range=(1.0, 1.0), contrast_range=(1.0, 1.0),
                                 saturation_range=(1.5, 1.5), hue_range=(0.0, 0.0)),
            "kornia": C("K.RandomSaturation", saturation=(1.5, 1.5)),
            "pillow": C("ImageEnhance.Color", factor=1.5),
            "dali": C("fn.saturation", saturation=1.5),
        },
        notes="AlbumentationsX and Pillow blend with the greyscale image; Kornia scales S in HSV (an RGB->HSV->RGB "
        "round trip, more work). AlbumentationsX has no saturation-only transform; its ColorJitter with neutral "
        "brightness/contrast/hue is used."),
    TransformSpec(
        "Hue", {"shift": f"+{HUE_DEG:g}° of the hue circle"},
        {
            "albumentationsx": C("A.HueSaturationValue", hue_shift_range=(HUE_DEG / 2, HUE_DEG / 2),
                                 sat_shift_range=(0.0, 0.0), val_shift_range=(0.0, 0.0)),
            "kornia": C("K.RandomHue", hue=(HUE_TURN, HUE_TURN)),
            "dali": C("fn.hue", hue=HUE_DEG),
        },
        notes="Units differ: AlbumentationsX shifts uint8 hue in OpenCV units (2° each: 10 = 20°), Kornia in turns "
        "of the circle (20/360; degrees raise 'hue out of bounds' -- the trap that once dropped the Kornia video "
        "row), DALI in degrees. Kornia is not in the video set (CSV)."),
    TransformSpec(
        "ChannelShuffle", {"permutation": "random"},
        {
            "albumentationsx": C("A.ChannelShuffle"),
            "torchvision": C("v2.RandomChannelPermutation"),
            "kornia": C("K.RandomChannelShuffle"),
        }),
    TransformSpec(
        "Grayscale", {"weights": "ITU-R 601 (0.299, 0.587, 0.114)", "output channels": 3},
        {
            "albumentationsx": C("A.ToGray", num_output_channels=3, method="weighted_average"),
            "torchvision": C("v2.Grayscale", num_output_channels=3),
            "kornia": C("K.RandomGrayscale"),
            "pillow": C("ImageOps.grayscale", post=(C("Image.convert", mode="RGB"),)),
        },
        media_calls={
            ("9ch", "albumentationsx"): C("A.ToGray", "rgb_chunks", num_output_channels=3, method="weighted_average"),
            ("9ch", "torchvision"): C("v2.Grayscale", "rgb_chunks", num_output_channels=3),
            ("9ch", "kornia"): C("K.RandomGrayscale", "rgb_chunks"),
            ("video", "torchvision"): C("v2.Grayscale", "image_batch", num_output_channels=3),
        },
        notes="9ch: the item is three RGB photos, so every library converts each triple (AlbumentationsX and "
        "torchvision reject 9 channels; Kornia would average all 9 bands into one grey image -- different work). "
        "Video: torchvision's Grayscale skips `tv_tensors.Video` inputs, so the clip goes in as a batch of images."),
    TransformSpec(
        "RGBShift", {"shift": f"+{RGB_SHIFT}/255 on R, G and B"},
        {
            "albumentationsx": C("A.RGBShift", r_shift_range=(RGB_SHIFT, RGB_SHIFT),
                                 g_shift_range=(RGB_SHIFT, RGB_SHIFT), b_shift_range=(RGB_SHIFT, RGB_SHIFT)),
            "kornia": C("K.RandomRGBShift", r_shift_limit=(RGB_SHIFT / 255, RGB_SHIFT / 255),
                        g_shift_limit=(RGB_SHIFT / 255, RGB_SHIFT / 255),
                        b_shift_limit=(RGB_SHIFT / 255, RGB_SHIFT / 255)),
        },
        notes="AlbumentationsX shifts in uint8 units, Kornia in [0, 1] units (20/255)."),
    TransformSpec(
        "Invert", {"op": "max - x"},
        {
            "albumentationsx": C("A.InvertImg"),
            "torchvision": C("v2.RandomInvert"),
            "kornia": C("K.RandomInvert"),
            "pillow": C("ImageOps.invert"),
        }),
    TransformSpec(
        "Posterize", {"bits": 4},
        {
            "albumentationsx": C("A.Posterize", num_bits=(4, 4)),
            "torchvision": C("v2.RandomPosterize", bits=4),
            "kornia": C("K.RandomPosterize", bits=(4.0, 4.0)),
            "pillow": C("ImageOps.posterize", bits=4),
        },
        notes="Kornia's scalar `bits=4` means a random draw from [4, 8]; the tuple fixes 4."),
    TransformSpec(
        "Solarize", {"threshold": "128 of 255 (0.5)"},
        {
            "albumentationsx": C("A.Solarize", threshold_range=(0.5, 0.5)),
            "torchvision": C("v2.RandomSolarize", threshold=128),
            "kornia": C("K.RandomSolarize", thresholds=(0.5, 0.5), additions=(0.0, 0.0)),
            "pillow": C("ImageOps.solarize", threshold=128),
        },
        notes="Units per library: torchvision's threshold is in the dtype's units (a fraction on uint8 would invert "
        "every pixel), AlbumentationsX takes a fraction, Kornia a fraction with a random addition that is zeroed."),
    TransformSpec(
        "Equalize", {"mode": "per-channel histogram equalization"},
        {
            "albumentationsx": C("A.Equalize", mode="pil", by_channels=True),
            "torchvision": C("v2.RandomEqualize"),
            "kornia": C("K.RandomEqualize"),
            "pillow": C("ImageOps.equalize"),
            "dali": C("fn.equalize"),
        }),
    TransformSpec(
        "AutoContrast", {"mode": "per-channel min/max stretch", "cutoff": 0},
        {
            "albumentationsx": C("A.AutoContrast", cutoff=0, method="pil"),
            "torchvision": C("v2.RandomAutocontrast"),
            "kornia": C("K.RandomAutoContrast"),
            "pillow": C("ImageOps.autocontrast", cutoff=0),
        },
        media_calls={("9ch", "torchvision"): C("v2.RandomAutocontrast", "rgb_chunks")},
        notes="AlbumentationsX in its PIL-compatible linear mode (its default 'cdf' is a different curve). "
        "torchvision 9ch per RGB triple."),
    TransformSpec(
        "CLAHE", {"clip_limit": 4.0, "tile_grid": (8, 8)},
        {
            "albumentationsx": C("A.CLAHE", clip_range=(4.0, 4.0), tile_grid_size=(8, 8)),
            "kornia": C("K.RandomClahe", clip_limit=(4.0, 4.0), grid_size=(8, 8)),
            "dali": C("fn.clahe", clip_limit=4.0, tiles_x=8, tiles_y=8, luma_only=True),
        },
        notes="AlbumentationsX (and DALI) equalize the luminance only (RGB->LAB, L channel, back); Kornia equalizes "
        "each RGB channel. Same clip limit definition (OpenCV-style, relative to the tile histogram)."),
    TransformSpec(
        "RandomGamma", {"gamma": 1.2},
        {
            "albumentationsx": C("A.RandomGamma", gamma_range=(120.0, 120.0)),
            "kornia": C("K.RandomGamma", gamma=(1.2, 1.2), gain=(1.0, 1.0)),
        },
        notes="AlbumentationsX's gamma_range is in hundredths (120 = 1.2)."),
    TransformSpec(
        "PlankianJitter", {"mode": "blackbody", "temperature": "random (library range)"},
        {
            "albumentationsx": C("A.PlanckianJitter", mode="blackbody", sampling_method="uniform"),
            "kornia": C("K.RandomPlanckianJitter", mode="blackbody"),
        },
        notes="Both multiply the channels by a black-body RGB coefficient triple; AlbumentationsX interpolates a "
        "temperature range, Kornia picks from its tabulated set."),
    TransformSpec(
        "ChannelDropout", {"channels dropped": 1, "fill": 0},
        {
            "albumentationsx": C("A.ChannelDropout", channel_drop_range=(1, 1), fill=0),
            "kornia": C("K.RandomChannelDropout", num_drop_channels=1, fill_value=0.0),
        }),
    TransformSpec(
        "Normalize", {"mean": NORMALIZE_MEAN, "std": NORMALIZE_STD, "output": "float32"},
        {
            "albumentationsx": C("A.Normalize", mean=NORMALIZE_MEAN, std=NORMALIZE_STD, max_pixel_value=255.0),
            "torchvision": C("v2.Normalize", mean=list(NORMALIZE_MEAN), std=list(NORMALIZE_STD),
                             pre=(C("v2.ToDtype", dtype=Sym("torch.float32"), scale=True),)),
            "kornia": C("K.Normalize", mean=TensorArg(NORMALIZE_MEAN), std=TensorArg(NORMALIZE_STD)),
            "dali": C("fn.crop_mirror_normalize", mean=Sym("255 * mean"), std=Sym("255 * std"),
                      dtype=Sym("types.FLOAT"), output_layout="FCHW"),
        },
        notes="uint8 -> normalized float32 for AlbumentationsX and torchvision; Kornia's native input is already "
        "float in [0, 1], so it only normalizes."),
    # ------------------------------------------------------------------------------------------ filters
    TransformSpec(
        "GaussianBlur", {"kernel": (5, 5), "sigma": 1.0, "border": "reflect-101"},
        {
            "albumentationsx": C("A.GaussianBlur", blur_range=(5, 5), sigma_range=(1.0, 1.0)),
            "torchvision": C("v2.GaussianBlur", kernel_size=(5, 5), sigma=(1.0, 1.0)),
            "kornia": C("K.RandomGaussianBlur", kernel_size=(5, 5), sigma=(1.0, 1.0), border_type="reflect",
                        separable=True),
            "pillow": C("Image.filter", filter=C("ImageFilter.GaussianBlur", radius=1.0)),
            "dali": C("fn.gaussian_blur", window_size=5, sigma=1.0),
        },
        notes="Pillow's GaussianBlur takes only sigma (`radius`) and approximates with extended box blurs; the "
        "kernel size is its own."),
    TransformSpec(
        "Blur", {"kernel": (5, 5), "type": "box (mean)"},
        {
            "albumentationsx": C("A.Blur", blur_range=(5, 5)),
            "kornia": C("K.RandomBoxBlur", kernel_size=(5, 5), border_type="reflect", normalized=True),
            "pillow": C("Image.filter", filter=C("ImageFilter.BoxBlur", radius=2)),
        },
        notes="Pillow's BoxBlur radius r spans 2r+1 pixels: radius 2 = 5x5."),
    TransformSpec(
        "MedianBlur", {"kernel": 5},
        {
            "albumentationsx": C("A.MedianBlur", blur_range=(5, 5)),
            "kornia": C("K.RandomMedianBlur", kernel_size=(5, 5)),
            "pillow": C("Image.filter", filter=C("ImageFilter.MedianFilter", size=5)),
        }),
    TransformSpec(
        "MotionBlur", {"kernel": 5, "angle": "uniform [0, 360)", "direction": "uniform [-1, 1]",
                       "border": "reflect"},
        {
            "albumentationsx": C("A.MotionBlur", blur_range=(5, 5), angle_range=(0.0, 360.0),
                                 direction_range=(-1.0, 1.0), allow_shifted=False),
            "kornia": C("K.RandomMotionBlur", kernel_size=5, angle=(0.0, 360.0), direction=(-1.0, 1.0),
                        border_type="reflect"),
        }),
    TransformSpec(
        "Sharpen", {"op": "blend with the 3x3 smoothing kernel [[1,1,1],[1,5,1],[1,1,1]]/13", "factor": SHARPEN_BLEND},
        {
            "albumentationsx": C("A.Sharpen", alpha_range=(A_SHARPEN_ALPHA, A_SHARPEN_ALPHA),
                                 lightness_range=(1.0, 1.0), method="kernel"),
            "torchvision": C("v2.RandomAdjustSharpness", sharpness_factor=SHARPEN_BLEND),
            "kornia": C("K.RandomSharpness", sharpness=(SHARPEN_BLEND, SHARPEN_BLEND)),
        },
        media_calls={("9ch", "torchvision"): C("v2.RandomAdjustSharpness", "rgb_chunks",
                                               sharpness_factor=SHARPEN_BLEND)},
        notes="Exact equivalence: factor 2 gives the kernel 2·I - S/13; AlbumentationsX's kernel (1-a)·I + "
        "a·[[-1,-1,-1],[-1,8+l,-1],[-1,-1,-1]] is the same for l = 1, a = 1/13 (borders differ: torchvision/Kornia "
        "keep the outermost pixels). Kornia's scalar `sharpness=2` would mean a draw from [0, 2]."),
    TransformSpec(
        "UnsharpMask", {"sigma": 1.0, "kernel": 5, "amount": 1.0, "threshold": 10},
        {
            "albumentationsx": C("A.UnsharpMask", blur_range=(5, 5), sigma_range=(1.0, 1.0), alpha_range=(1.0, 1.0),
                                 threshold=10),
            "pillow": C("Image.filter", filter=C("ImageFilter.UnsharpMask", radius=1.0, percent=100, threshold=10)),
        }),
    TransformSpec(
        "EnhanceEdge", {"op": "Pillow EDGE_ENHANCE 3x3 kernel"},
        {
            "albumentationsx": C("A.Enhance", mode="edge", alpha_range=(1.0, 1.0)),
            "pillow": C("Image.filter", filter=Sym("ImageFilter.EDGE_ENHANCE")),
        },
        notes="AlbumentationsX alpha 1 reproduces EDGE_ENHANCE (borders: reflect-101 vs Pillow's clamp)."),
    TransformSpec(
        "EnhanceDetail", {"op": "Pillow DETAIL 3x3 kernel"},
        {
            "albumentationsx": C("A.Enhance", mode="detail", alpha_range=(1.0, 1.0)),
            "pillow": C("Image.filter", filter=Sym("ImageFilter.DETAIL")),
        },
        notes="As EnhanceEdge."),
    TransformSpec(
        "JpegCompression", {"codec": "JPEG", "quality": 50},
        {
            "albumentationsx": C("A.ImageCompression", compression_type="jpeg", quality_range=(50, 50)),
            "torchvision": C("v2.JPEG", quality=50),
            "kornia": C("K.RandomJPEG", jpeg_quality=(50.0, 50.0)),
            "pillow": C("Image.save", format="JPEG", quality=50, post=(C("Image.open"),)),
            "dali": C("fn.jpeg_compression_distortion", quality=50),
        },
        media_calls={
            ("9ch", "torchvision"): C("v2.JPEG", "rgb_chunks", quality=50),
            ("9ch", "kornia"): C("K.RandomJPEG", "rgb_chunks", jpeg_quality=(50.0, 50.0)),
        },
        notes="AlbumentationsX, torchvision and Pillow encode+decode with libjpeg; Kornia runs its differentiable "
        "JPEG model in torch (far more arithmetic). 9ch: each RGB triple is one JPEG (AlbumentationsX does this "
        "itself)."),
    # ------------------------------------------------------------------------------------- noise/dropout
    TransformSpec(
        "GaussianNoise", {"mean": 0.0, "std": "0.1 of the range", "per channel": True},
        {
            "albumentationsx": C("A.GaussNoise", std_range=(0.1, 0.1), mean_range=(0.0, 0.0), per_channel=True),
            "kornia": C("K.RandomGaussianNoise", mean=0.0, std=0.1),
            "dali": C("fn.noise.gaussian", stddev=25.5),
        },
        notes="Kornia does not clamp the result to [0, 1]; AlbumentationsX saturates to uint8."),
    TransformSpec(
        "SaltAndPepper", {"amount": (0.01, 0.06), "salt_vs_pepper": (0.4, 0.6)},
        {
            "albumentationsx": C("A.SaltAndPepper", amount_range=(0.01, 0.06), salt_vs_pepper_range=(0.4, 0.6)),
            "kornia": C("K.RandomSaltAndPepperNoise", amount=(0.01, 0.06), salt_vs_pepper=(0.4, 0.6)),
            "dali": C("fn.noise.salt_and_pepper", prob=Sym("uniform(0.01, 0.06)"),
                      salt_vs_pepper=Sym("uniform(0.4, 0.6)")),
        }),
    TransformSpec(
        "Erasing", {"scale": (0.02, 0.33), "ratio": (0.3, 3.3), "fill": 0},
        {
            "albumentationsx": C("A.Erasing", scale=(0.02, 0.33), ratio=(0.3, 3.3), fill=0),
            "torchvision": C("v2.RandomErasing", scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0),
            "kornia": C("K.RandomErasing", scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0.0),
            "dali": C("fn.erase", anchor=Sym("random"), shape=Sym("random (scale, ratio)"), axis_names="HW",
                      fill_value=0),
        },
        notes="The erased area is random (same distribution everywhere), so per-item work varies with it."),
    # ------------------------------------------------------------------------------------ illumination
    TransformSpec(
        "LinearIllumination", {"gain": (0.01, 0.2), "sign": "both", "direction": "random"},
        _illumination("linear", "RandomLinearIllumination", {"angle_range": (0.0, 360.0)}, {})),
    TransformSpec(
        "CornerIllumination", {"gain": (0.01, 0.2), "sign": "both", "corner": "random"},
        _illumination("corner", "RandomLinearCornerIllumination", {}, {})),
    TransformSpec(
        "GaussianIllumination", {"gain": (0.01, 0.2), "centre": (0.1, 0.9), "sigma": (0.2, 1.0), "sign": "both"},
        _illumination("gaussian", "RandomGaussianIllumination", {"center_range": (0.1, 0.9),
                                                                  "sigma_range": (0.2, 1.0)},
                      {"center": (0.1, 0.9), "sigma": (0.2, 1.0)})),
    TransformSpec(
        "PlasmaBrightness", {"pattern": "diamond-square fractal", "effect": "brightness"},
        {
            "albumentationsx": C("A.PlasmaBrightnessContrast", brightness_range=(-0.3, 0.3), contrast_range=(0.0, 0.0),
                                 plasma_size=256, roughness=3.0),
            "kornia": C("K.RandomPlasmaBrightness", roughness=(0.5, 0.5), intensity=(0.0, 1.0)),
        },
        notes="Different fractal generators: AlbumentationsX draws a 256x256 plasma and resizes it, Kornia runs "
        "diamond-square at the item's size; roughness scales are not comparable (library defaults' midpoints)."),
    TransformSpec(
        "PlasmaContrast", {"pattern": "diamond-square fractal", "effect": "contrast"},
        {
            "albumentationsx": C("A.PlasmaBrightnessContrast", brightness_range=(0.0, 0.0), contrast_range=(-0.3, 0.3),
                                 plasma_size=256, roughness=3.0),
            "kornia": C("K.RandomPlasmaContrast", roughness=(0.5, 0.5)),
        },
        notes="As PlasmaBrightness."),
    TransformSpec(
        "PlasmaShadow", {"pattern": "diamond-square fractal", "effect": "shadow"},
        {
            "albumentationsx": C("A.PlasmaShadow", shadow_intensity_range=(0.3, 0.7), plasma_size=256, roughness=3.0),
            "kornia": C("K.RandomPlasmaShadow", roughness=(0.5, 0.5), shade_intensity=(-1.0, 0.0),
                        shade_quantity=(0.0, 1.0)),
        },
        notes="As PlasmaBrightness."),
    # ----------------------------------------------------------------------------------------- weather
    TransformSpec(
        "Rain", {"drops": f"{RAIN_DROPS} (≈ H/3)", "drop length": 20, "drop width": 1, "slant": "±10° / ±3 px",
                 "blur": "none", "darkening": "none"},
        {
            "albumentationsx": C("A.RandomRain", slant_range=(-10.0, 10.0), drop_length=20, drop_width=1,
                                 drop_color=(200, 200, 200), blur_value=1, brightness_coefficient=1.0,
                                 rain_type="default"),
            "kornia": C("K.RandomRain", number_of_drops=(RAIN_DROPS, RAIN_DROPS), drop_height=(20, 20),
                        drop_width=(-3, 3)),
        },
        notes="AlbumentationsX's blur and darkening are switched off so both only draw drops; AlbumentationsX "
        "draws H//3 drops, Kornia a fixed count (150 ≈ H/3 for ImageNet-sized items)."),
    TransformSpec(
        "Snow", {"snow point threshold": 0.3, "brightness": 2.0, "method": "HLS bleach"},
        {
            "albumentationsx": C("A.RandomSnow", snow_point_range=(0.3, 0.3), brightness_coeff=2.0, method="bleach"),
            "kornia": C("K.RandomSnow", snow_coefficient=(SNOW_K, SNOW_K), brightness=(2.0, 2.0)),
        },
        notes="AlbumentationsX bleaches pixels whose HLS lightness is below snow_point/2 + 1/3 of the range "
        "(0.483 for 0.3); Kornia compares lightness with snow_coefficient directly, so Kornia gets 0.483 (the "
        "equivalence audit found 0.3 bleaching far fewer pixels)."),
    TransformSpec(
        "Dithering", {"method": "error diffusion (Floyd-Steinberg)", "colors": 2, "mode": "grayscale"},
        notes="In no library column of the CSV (only in the rgb.md revision at PR#56 head 29cba9f): every library "
        "reports it unsupported."),
]

SPECS: dict[str, TransformSpec] = {s.name: s for s in _SPEC_LIST}

FAIRNESS_RULES = """\
- **Same operation, fixed parameters.** Each row's canonical parameters are translated into every library's
  units (see the notes column); ranges are collapsed to one value wherever the library allows, so the same
  amount of work is done on every call. Every transform is built with `p=1` (the adapters add `p=1` to any
  constructor that has a `p` argument and no explicit value here). Random draws use a seed fixed once in
  `build` (`torch.manual_seed`, `Compose(seed=)`, `random.seed`).
- **Native layout, converted outside the timer.** AlbumentationsX: numpy HWC uint8 (THWC video), C-contiguous;
  torchvision: torch uint8 CHW (TCHW video as `tv_tensors.Video`), made contiguous at preload (channels-last
  strides made torchvision/Kornia 5-9x slower when the copy happened inside the timer); Pillow: `PIL.Image`
  RGB.
- **Kornia dtype.** Kornia's augmentations are float-only: its native item is float32 in [0, 1], a batch of one
  (B=1, C, H, W) for images and (T, C, H, W) for a clip. The uint8->float conversion is part of preload, not of
  the timed call. It is the only library timed on float32; the reader should know its arithmetic is float.
- **Materialization (inside the timer, equal for all).** The output must exist as a contiguous buffer in the
  library's own layout, made at the cost the library itself would charge. numpy: nothing for a contiguous array;
  a view is copied by the fastest routine for its layout (`contiguous_copy`: OpenCV's flip for a view reversed
  along its pixels, i.e. a horizontal flip: ~41 us for 500x375x3 where numpy's strided copy takes ~633 us,
  benchmarks/materialize_copy.py; a block copy for a vertical flip's rows and for crops); torch: `.contiguous()`,
  then `torch.cuda.synchronize()` on CUDA; Pillow: `image.load()`. The rule's own cost is measured per cell
  (`materialize_us`, docs/augbench.md). Only the replication config (`output_rule: published`) swaps in the
  published runner's step instead (numpy's own copy, Pillow images converted to numpy), to reproduce its table.
- **Video.** One parameter draw per clip, shared by all 16 frames: AlbumentationsX `Compose(...)(images=clip)`,
  torchvision v2 on a `tv_tensors.Video`, Kornia with `same_on_batch=True` over T as the batch.
- **9 channels.** The item is three RGB photos stacked. Where a library accepts only 1 or 3 channels, the same
  RGB operation runs on each triple (`[rgb_chunks]` below); that overhead is the library's.
- **DataLoader recipe.** `RandomCrop224 + <transform> + Normalize(ImageNet mean/std, repeated for 9ch) +
  ToTensor` (a crop transform replaces RandomCrop224), numpy uint8 in, contiguous float32 CHW (TCHW) out, built
  from the same calls as the micro runs. Output size is 224x224 except for the size-changing transforms: Resize,
  LongestMaxSize and SmallestMaxSize give 512x512 and Pad 244x244 (fixed per recipe, so batches collate)."""


# ------------------------------------------------------------------------------------------- the paper sets


@dataclass(frozen=True)
class PaperRow:
    media: str
    transform: str
    libraries: tuple[str, ...]  # micro
    dataloader_libraries: tuple[str, ...]  # DataLoader ("dali" = GPU only)
    notes: str


def _libs(text: str) -> tuple[str, ...]:
    return tuple(x.strip().removesuffix("(gpu)") for x in text.split(";") if x.strip())


@cache
def paper_rows() -> tuple[PaperRow, ...]:
    with CSV_PATH.open(newline="") as f:
        rows = [PaperRow(r["set"], r["transform"], _libs(r["libraries"]), _libs(r["dataloader_libraries"]),
                         r["notes"].strip()) for r in csv.DictReader(f)]
    for r in rows:
        if r.media not in MEDIA:
            raise SpecError(f"{CSV_PATH.name}: unknown set {r.media!r} ({r.transform})")
    return tuple(rows)


def media_rows(media: str) -> list[PaperRow]:
    check_media(media)
    return [r for r in paper_rows() if r.media == media]


def check_media(media: str) -> None:
    if media not in MEDIA:
        raise ValueError(f"unknown media {media!r}; known: {', '.join(MEDIA)}")


def paper_row(media: str, transform: str) -> PaperRow:
    """The CSV row; ValueError (not Unsupported) for a name that is in no set: that is a caller's bug."""
    for r in media_rows(media):
        if r.transform == transform:
            return r
    raise ValueError(f"{transform!r} is not in the {media} paper transform set")


def listed(media: str, transform: str, library: str, mode: str = "micro") -> bool:
    r = paper_row(media, transform)
    return library in (r.libraries if mode == "micro" else r.dataloader_libraries)


# ---------------------------------------------------------------------------------------- resolved calls

# Kornia classes without `same_on_batch` (deterministic, nothing to share across frames).
_KORNIA_NO_SAME_ON_BATCH = {"K.Resize", "K.CenterCrop", "K.LongestMaxSize", "K.SmallestMaxSize", "K.Normalize"}
_NINE_CH = 9


def resolved_call(transform: str, library: str, media: str) -> Call:
    """The call an adapter builds for (transform, library, media), media adjustments included, validated."""
    check_media(media)
    spec = SPECS.get(transform)
    if spec is None:
        raise ValueError(f"no canonical spec for transform {transform!r}")
    call = spec.call(library, media)
    if call is None:
        raise SpecError(f"{transform}: no {library} call in transform_specs (the CSV lists it for {media})")
    if library == "kornia":
        if call.fn == "K.Normalize" and media == "9ch":
            call = call.with_kwargs(mean=TensorArg(NORMALIZE_MEAN * 3), std=TensorArg(NORMALIZE_STD * 3))
        if media == "video" and call.fn not in _KORNIA_NO_SAME_ON_BATCH:
            call = call.with_kwargs(same_on_batch=True)
    validate_call(transform, library, call)
    return call


def _pair(v: Any) -> bool:
    return isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int | float) for x in v) and v[0] <= v[1]


# The name prefixes of each library's calls (`call.fn`): a call without one belongs to another library.
_LIBRARY_PREFIXES: dict[str, str | tuple[str, ...]] = {
    "albumentationsx": "A.", "torchvision": "v2.", "kornia": "K.", "pillow": ("Image", "ImageOps", "ImageEnhance"),
}


def _need_pair(where: str, kw: Mapping[str, Any], name: str, lo: float = -math.inf, hi: float = math.inf,
               why: str = "") -> None:
    """When the call sets `name`, it must be a (low, high) pair inside [lo, hi]; `why` names the unit trap."""
    v = kw.get(name)
    if v is None:
        return
    if not _pair(v):
        raise SpecError(f"{where}: {name}={v!r} must be a (low, high) pair{why}")
    if not (lo <= v[0] and v[1] <= hi):
        raise SpecError(f"{where}: {name}={v!r} outside [{lo}, {hi}]{why}")


def _check_kornia_call(where: str, call: Call) -> None:
    """Kornia's traps: hue in turns, colour factors as ranges around 1, [0, 1] units for shifts and noise."""
    kw = call.kwargs
    need_pair = partial(_need_pair, where, kw)
    turns = " (Kornia hue is in turns of the hue circle, [-0.5, 0.5]; degrees are out of bounds)"
    if call.fn in ("K.RandomHue", "K.ColorJitter", "K.ColorJiggle"):
        need_pair("hue", -0.5, 0.5, turns)
    if call.fn in ("K.RandomBrightness", "K.RandomContrast", "K.RandomSaturation", "K.ColorJitter",
                   "K.ColorJiggle"):
        for name in ("brightness", "contrast", "saturation"):
            need_pair(name, 0.0, 10.0, " (a Kornia scalar is a range around 1, not a factor)")
    if call.fn == "K.RandomPosterize":
        need_pair("bits", 0, 8, " (a scalar x means a random draw from [x, 8])")
    if call.fn == "K.RandomSharpness":
        need_pair("sharpness", 0, math.inf, " (a scalar x means a random draw from [0, x])")
    if call.fn == "K.RandomSolarize":
        need_pair("thresholds", 0.0, 1.0, " (a scalar x means 0.5 ± x)")
        need_pair("additions", -0.5, 0.5, " (a scalar x means ±x)")
    if call.fn == "K.RandomRGBShift":
        for c in "rgb":
            need_pair(f"{c}_shift_limit", -1.0, 1.0, " (Kornia shifts are in [0, 1] units, not 0..255)")
    if call.fn == "K.RandomGaussianNoise" and not 0 <= kw.get("std", 0) <= 1:
        raise SpecError(f"{where}: std={kw['std']!r} must be in [0, 1] units")
    if call.fn == "K.RandomJPEG":
        need_pair("jpeg_quality", 1, 100)


def _check_torchvision_call(where: str, call: Call) -> None:
    """torchvision's traps: a solarize threshold in uint8 units, hue in turns."""
    kw = call.kwargs
    if call.fn == "v2.RandomSolarize" and not 1 < kw.get("threshold", 0) <= 255:
        raise SpecError(f"{where}: threshold={kw.get('threshold')!r} must be in uint8 units (1, 255] -- "
                        "a fraction on a uint8 tensor inverts every pixel")
    if call.fn in ("v2.ColorJitter", "v2.RandomPhotometricDistort"):
        _need_pair(where, kw, "hue", -0.5, 0.5, " (turns of the hue circle)")


def _check_albumentationsx_call(where: str, call: Call) -> None:
    """AlbumentationsX's traps: hue in degrees, a solarize threshold as a fraction, `*_range` pairs ascending."""
    kw = call.kwargs
    if call.fn == "A.HueSaturationValue":
        _need_pair(where, kw, "hue_shift_range", -180, 180)
    if call.fn == "A.Solarize":
        _need_pair(where, kw, "threshold_range", 0.0, 1.0, " (AlbumentationsX takes a fraction of the range)")
    for name, v in kw.items():
        if name.endswith("_range") and isinstance(v, tuple) and not _pair(v):
            raise SpecError(f"{where}: {name}={v!r} must be a non-decreasing (low, high) pair")


_LIBRARY_CHECKS = {"kornia": _check_kornia_call, "torchvision": _check_torchvision_call,
                   "albumentationsx": _check_albumentationsx_call}


def validate_call(transform: str, library: str, call: Call) -> None:
    """Reject the unit/shape traps that make a library silently do something else (SpecError)."""
    where = f"{transform} ({library} {call.fn})"
    if library in _LIBRARY_PREFIXES and not call.fn.startswith(_LIBRARY_PREFIXES[library]):
        raise SpecError(f"{where}: {call.fn} is not a {library} name")
    check = _LIBRARY_CHECKS.get(library)
    if check is not None:
        check(where, call)


# --------------------------------------------------------------------------------------------- geometry


def output_hw(transform: str, library: str, in_hw: tuple[int, int]) -> tuple[int, int]:
    """Expected (H, W) of a micro output for an input of size `in_hw`."""
    h, w = in_hw
    g = SPECS[transform].geometry
    if g == "resize":
        return (RESIZE, RESIZE)
    if g == "crop":
        return (CROP, CROP)
    if g == "pad":
        return (h + 2 * PAD, w + 2 * PAD)
    if g in ("longest", "smallest"):
        side = max(h, w) if g == "longest" else min(h, w)
        if library == "kornia":  # Kornia truncates the scaled side: int(max_size * other / side)
            return (int(RESIZE * (h / side)), int(RESIZE * (w / side)))
        return (round(h * RESIZE / side), round(w * RESIZE / side))
    if g == "swap" or (g == "rot90" and library != "kornia"):
        return (w, h)
    return (h, w)


def dataloader_output_hw(transform: str) -> tuple[int, int]:
    """(H, W) of every DataLoader recipe output: the crop is 224x224, then the transform's own geometry."""
    return output_hw(transform, "albumentationsx", (CROP, CROP)) if transform not in CROP_TRANSFORMS else (CROP, CROP)


# --------------------------------------------------------------------------------------------- the doc


def _cell(media: str, row: PaperRow, library: str) -> str:
    spec = SPECS.get(row.transform)
    micro = library in row.libraries
    dl = library in row.dataloader_libraries
    if spec is None or not (micro or dl):
        return "—"
    call = spec.call(library, media)
    if call is None:
        return "—"
    text = f"`{resolved_call(row.transform, library, media).render()}`"
    return text if micro else f"(DataLoader only) {text}"


def _params(spec: TransformSpec | None) -> str:
    if spec is None:
        return "—"
    return "<br>".join(f"{k}: {_fmt(v) if not isinstance(v, str) else v}" for k, v in spec.canonical.items()) or "—"


def _audit_verdicts() -> dict[tuple[str, str], str]:
    """{(media, transform): verdict} from the committed equivalence audit (data/equivalence_audit.csv, written by
    scripts/augbench_equivalence.py); empty when it is absent. Read here with csv only (no import of the audit)."""
    path = CSV_PATH.parent / "equivalence_audit.csv"
    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        return {(r["media"], r["transform"]): r["verdict"] for r in csv.DictReader(f)}


def render_markdown() -> str:
    """The side-by-side doc (`docs/augbench_transforms.md`), generated from SPECS and the CSV."""
    audit = _audit_verdicts()
    out = [
        "# augbench: transforms, canonical parameters and per-library calls",
        "",
        "Generated by `bench_assets.augbench.transform_specs.render_markdown()`; do not edit by hand",
        "(`tests/augbench/test_adapters.py` checks this file is current). Whether the libraries' outputs agree",
        "on the same input is audited in `docs/augbench_equivalence.md` (each row's verdict ends its notes).",
        "Which library is measured for which",
        "transform comes from `bench_assets/augbench/data/paper_transform_sets.csv`: a cell shows the exact call when",
        "the CSV lists the library for micro runs, `(DataLoader only)` when only for the DataLoader recipe, and `—`",
        "when not at all (the adapter reports it `unsupported`). Names: `A` = `albumentations` (AlbumentationsX),",
        "`v2` = `torchvision.transforms.v2`, `K` = `kornia.augmentation`, Pillow's modules by name; `[wrap]` marks a",
        "wrapper applied by the adapter (listed at the end). The item itself is not written: AlbumentationsX calls",
        f"are wrapped in `A.Compose([t], seed={SEED}, telemetry=False)` and applied as `(image=x)` / `(images=clip)`;",
        "Pillow `Image.f(...)` is a method of the image, then `ImageOps.f(img, ...)` and",
        "`ImageEnhance.X(img).enhance(factor)`.",
        "",
        "## Fairness rules",
        "",
        FAIRNESS_RULES,
        "",
    ]
    for media, title in (("rgb", "RGB images"), ("9ch", "9-channel images"), ("video", "Video (16-frame clips)")):
        rows = media_rows(media)
        libs = [lib for lib in LIBRARIES if any(lib in r.libraries or lib in r.dataloader_libraries for r in rows)]
        out += [f"## {title} ({len(rows)} rows)", "",
                "| Transform | canonical params | " + " | ".join(libs) + " | notes on equivalence gaps |",
                "|" + "---|" * (len(libs) + 3)]
        for r in rows:
            spec = SPECS.get(r.transform)
            verdict = audit.get((media, r.transform))
            note = " ".join(x for x in ((spec.notes if spec else ""), f"CSV: {r.notes}" if r.notes else "",
                                        f"Audit: {'**flagged**' if verdict == 'flagged' else verdict}." if verdict
                                        else "") if x)
            cells = [r.transform, _params(spec), *(_cell(media, r, lib) for lib in libs), note or ""]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out += ["## NVIDIA DALI (DataLoader recipes on CUDA only; pipelines written but untested here)", "",
            "| Set | Transform | DALI op |", "|---|---|---|"]
    for media in MEDIA:
        for r in media_rows(media):
            spec = SPECS.get(r.transform)
            if "dali" in r.dataloader_libraries and spec is not None and "dali" in spec.calls:
                out.append(f"| {media} | {r.transform} | `{spec.calls['dali'].render()}` |")
    out += ["", "## Wrappers", ""]
    out += [f"- `[{k}]`: {v}." for k, v in WRAPS.items()]
    return "\n".join(out) + "\n"


def write_doc(path: Path = DOC_PATH) -> Path:
    path.write_text(render_markdown())
    return path


if __name__ == "__main__":  # python -m bench_assets.augbench.transform_specs  -> regenerates the doc
    print(write_doc())
