"""Equivalence audit: do the libraries listed for a paper transform compute the same thing?

For every (media, transform) of the paper sets, every CPU library the CSV lists is run on the same real items
(`audit_items`), and per (media, transform, library) the audit records the output's shape (as HWC / THWC),
dtype, value range and -- where the cell is deterministic -- its similarity to AlbumentationsX's output.

Common form: every output becomes float64 HWC (THWC for clips) in 0..255 units (`to_common`): uint8 as is,
float outputs (Kornia's [0, 1] images, every library's `Normalize`) times 255 after undoing the ImageNet
normalization for `Normalize`.

Determinism is decided empirically (`observe`): a cell is deterministic when a second and third call of the same
build and two calls of a build made with another seed all reproduce the first output exactly. A random cell (a
random crop, a random colour order, noise) is "not pixel-comparable": only its shape, dtype and range are checked.

Flag rule (`assess_transform`, thresholds named below): a library is flagged when its output shape differs from
AlbumentationsX's, its dtype is not the one its adapter contract promises, its values leave 0..255 after
conversion, its value spread collapses against AlbumentationsX's, it leaves every item unchanged where
AlbumentationsX does not (a silent no-op), or -- both cells deterministic -- its mean |difference| from
AlbumentationsX exceeds `MAD_MAX` levels. The product reads the committed CSV through `equivalence.py` (light:
csv only); this module is the offline audit that writes it (`scripts/augbench_equivalence.py`).

Heavy imports (torch, the augmentation libraries) happen inside `run_audit` and its helpers only.
"""

from __future__ import annotations

import contextlib
import csv
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from bench_assets.augbench import transform_specs as ts
from bench_assets.augbench.equivalence import CSV_PATH, read_csv

REFERENCE = ts.REFERENCE_LIBRARY
AUDIT_LIBRARIES = ts.LIBRARIES  # the four CPU libraries (DALI runs on CUDA only and is not audited)
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "augbench_equivalence.md"
COMMAND = ".venv/bin/python scripts/augbench_equivalence.py"

# ------------------------------------------------------------------------------------------------ thresholds

# Largest mean |difference| (0..255 levels, whole image, borders included, pooled over the items) between two
# deterministic cells that still counts as "the same operation". On the audit's items the pairs that are the same
# operation by construction (resampling warps, blurs, sharpen, autocontrast, Kornia's float arithmetic against
# uint8 rounding) stay at or below 0.86 levels (torchvision's video AutoContrast; Pillow's Rotate 0.63); the
# smallest difference between operations that are not the same is 2.13 levels (JPEG, where AlbumentationsX encodes
# RGB as BGR; video, Kornia), the next 9.5 (Kornia's HSV saturation). 1.5 leaves ~1.7x above the first and ~1.4x
# below the second. `render_markdown` prints both measured bounds, so a library upgrade that moves them shows.
MAD_MAX = 1.5
# Values may leave 0..255 after conversion by this much (float rounding of Kornia's [0, 1] arithmetic).
RANGE_SLACK = 0.5
# A library's value spread (max - min, 0..255 units) must be at least this fraction of AlbumentationsX's: a
# result in the wrong units (0..1 stored as uint8, a fraction read as levels) collapses the spread.
SPREAD_RATIO_MIN = 0.25
# PSNR is reported for information only (dB, peak 255); the flag uses MAD_MAX.
PSNR_PEAK = 255.0
NOOP_TOL = 0.0  # an output is "unchanged" when its mean |difference| from the input is exactly 0
# Not a flag: a random transform whose libraries change item 0 by amounts this many times apart (median over its
# draws) gets a note -- their parameters may not mean the same thing (a check for the spec, not a verdict). 5x:
# medians of 5 draws of e.g. Erasing's random area (2-33% of the item, same distribution everywhere) came out up
# to ~4x apart by chance.
EFFECT_RATIO_NOTE = 5.0
FLOAT_ROUNDING = 1e-3  # a MAD below this (but not 0) is float32 rounding of identical results

ITEM_SIZE = 320  # side of the embedded items the audit items are cut from
SQUARE = (256, 256)  # rgb/9ch item 0: a square window
LANDSCAPE = (240, 320)  # rgb/9ch item 1 and the video frames: a 4:3 landscape window (UCF101's frame size)
ITEM_SEED = 0
N_IMAGES = 2  # rgb / 9ch: two real photo items; video: one 16-frame clip
N_CLIPS = 1
SEED_OTHER = ts.SEED + 1  # the second build's seed for the determinism check
CALLS = 3  # calls of the first build on item 0 (the first output counts)

VERDICTS = ("equivalent", "flagged", "not pixel-comparable", "single library")

# dtype promised by each adapter's contract (Normalize gives float32 everywhere; Pillow always RGB uint8)
_EXPECTED_DTYPE = {"albumentationsx": "uint8", "torchvision": "uint8", "kornia": "float32", "pillow": "uint8"}


def expected_dtype(library: str, transform: str) -> str:
    return "float32" if transform == "Normalize" else _EXPECTED_DTYPE.get(library, "uint8")


# ------------------------------------------------------------------------------------------ common form


@dataclass(frozen=True)
class Common:
    """One output in the audit's common form: `pixels` float64 HWC/THWC in 0..255 units."""

    pixels: np.ndarray
    dtype: str  # the native dtype ("uint8", "float32"; PIL "uint8")
    native: str  # the native type and layout, e.g. "numpy HWC", "torch 1CHW", "PIL RGB"
    vmin: float  # the native value range (the output's own units)
    vmax: float

    @property
    def shape(self) -> str:
        return "x".join(map(str, self.pixels.shape))


def native_array(out: Any, media: str) -> tuple[np.ndarray, str, str]:
    """(array in HWC / THWC layout, native dtype name, native description) of any library output, no rescaling.

    numpy: HWC (THWC for clips) as is; torch: CHW, a batch of one (1, C, H, W), or TCHW for clips (tv_tensors
    included); PIL: `np.asarray` (a single-band image gets a channel axis).
    """
    video = media == "video"
    if isinstance(out, np.ndarray):
        arr, native = out, ("numpy THWC" if video else "numpy HWC")
    elif hasattr(out, "getbands") and hasattr(out, "mode"):  # PIL.Image.Image
        arr = np.asarray(out)
        arr = arr[..., None] if arr.ndim == 2 else arr
        return arr, str(arr.dtype), f"PIL {out.mode}"
    elif hasattr(out, "detach") and hasattr(out, "permute"):  # torch.Tensor (tv_tensors subclasses too)
        import torch

        t = out.as_subclass(torch.Tensor).detach().cpu()
        if video:
            if t.ndim != 4:
                raise ValueError(f"a clip output must be TCHW, got shape {tuple(t.shape)}")
            arr, native = t.permute(0, 2, 3, 1).numpy(), "torch TCHW"
        elif t.ndim == 4 and t.shape[0] == 1:
            arr, native = t[0].permute(1, 2, 0).numpy(), "torch 1CHW"
        elif t.ndim == 3:
            arr, native = t.permute(1, 2, 0).numpy(), "torch CHW"
        else:
            raise ValueError(f"an image output must be CHW or 1CHW, got shape {tuple(t.shape)}")
        return arr, str(arr.dtype), native
    else:
        raise TypeError(f"cannot compare a {type(out).__module__}.{type(out).__name__}")
    want = 4 if video else 3
    if arr.ndim != want:
        raise ValueError(f"expected a {'THWC' if video else 'HWC'} array, got shape {arr.shape}")
    return arr, str(arr.dtype), native


def to_255(arr: np.ndarray, *, normalized: bool = False) -> np.ndarray:
    """float64 in 0..255 units: integers as is; floats are [0, 1] images (x 255), after undoing the ImageNet
    normalization (x * std + mean, per RGB triple) when `normalized`."""
    x = arr.astype(np.float64)
    if not np.issubdtype(arr.dtype, np.floating):
        return x
    if normalized:
        reps = max(1, x.shape[-1] // 3)
        mean = np.array(ts.NORMALIZE_MEAN * reps)[: x.shape[-1]]
        std = np.array(ts.NORMALIZE_STD * reps)[: x.shape[-1]]
        x = x * std + mean
    return x * 255.0


def to_common(out: Any, media: str, *, normalized: bool = False) -> Common:
    """Any library output -> `Common` (float64 HWC/THWC in 0..255, plus native dtype/layout/range)."""
    arr, dtype, native = native_array(out, media)
    vmin, vmax = (float(arr.min()), float(arr.max())) if arr.size else (math.nan, math.nan)
    return Common(to_255(arr, normalized=normalized), dtype, native, vmin, vmax)


# ------------------------------------------------------------------------------------------- similarity


def _pooled_sum(a: Sequence[np.ndarray], b: Sequence[np.ndarray], per_element: Callable[[np.ndarray], np.ndarray]
                ) -> tuple[float, int]:
    """(sum of per_element(x - y) over all elements of all items, element count); shapes must match item by item."""
    total, n = 0.0, 0
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            raise ValueError(f"shape mismatch {x.shape} vs {y.shape}")
        total += float(per_element(x - y).sum())
        n += x.size
    return total, n


def mean_abs_diff(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """Mean |a - b| over all elements of all items (0..255 levels). Shapes must match item by item."""
    total, n = _pooled_sum(a, b, np.abs)
    return total / n if n else math.nan


def psnr(a: Sequence[np.ndarray], b: Sequence[np.ndarray], peak: float = PSNR_PEAK) -> float:
    """PSNR in dB over all items (pooled MSE); `inf` when identical."""
    total, n = _pooled_sum(a, b, np.square)
    if not n:
        return math.nan
    mse = total / n
    return math.inf if mse == 0 else 10.0 * math.log10(peak * peak / mse)


def same_output(a: Common, b: Common) -> bool:
    """Exactly the same output (dtype, shape and every value)."""
    return a.dtype == b.dtype and a.pixels.shape == b.pixels.shape and bool(np.array_equal(a.pixels, b.pixels))


# -------------------------------------------------------------------------------------------- observing


@dataclass
class Observation:
    """What one (media, transform, library) cell produced: `outputs` (one per item, the first build's first calls),
    whether every repeat on item 0 (more calls, another seed's build) reproduced its output, and how much each of
    those draws changed item 0 (`draw_changes`, mean |output - input| in levels, when the shapes match)."""

    library: str
    outputs: list[Common] = field(default_factory=list)
    deterministic: bool | None = None
    draw_changes: list[float] = field(default_factory=list)
    error: str = ""

    def is_float(self) -> bool:
        return any(o.dtype.startswith("float") for o in self.outputs)


def observe(library: str, build: Callable[[int], Callable[[Any], Any]], make_input: Callable[[int], Any],
            n_items: int, media: str, *, normalized: bool = False,
            finish: Callable[[Any], Any] = lambda out: out, seeds: tuple[int, int] = (ts.SEED, SEED_OTHER),
            calls: int = CALLS, input0: np.ndarray | None = None) -> Observation:
    """Run one cell: `build(seed)` -> fn; `make_input(i)` -> a fresh native item i (so an in-place library cannot
    alter the next call's input); `finish` materializes. Item 0 is called `calls` times on the first build, then
    twice on a build with the second seed; the cell is deterministic when all those outputs are identical.
    `input0` (item 0 as numpy) lets each draw's change be recorded. Exceptions go to `error`, never raised."""
    obs = Observation(library)
    try:
        fn = build(seeds[0])
        run = lambda f, i: to_common(finish(f(make_input(i))), media, normalized=normalized)  # noqa: E731
        obs.outputs = [run(fn, i) for i in range(n_items)]
        first = obs.outputs[0]
        deterministic = True
        for draw in [first, *_repeats(fn, build, seeds[1], calls, lambda f: run(f, 0))]:
            deterministic = deterministic and same_output(first, draw)
            if input0 is not None and draw.pixels.shape == input0.shape:
                obs.draw_changes.append(mean_abs_diff([draw.pixels], [input0.astype(np.float64)]))
        obs.deterministic = deterministic
    except Exception as exc:  # an audit records, it does not stop
        obs.error = f"{type(exc).__name__}: {exc}"
    return obs


def _repeats(fn: Callable[[Any], Any], build: Callable[[int], Callable[[Any], Any]], other_seed: int, calls: int,
             run0: Callable[[Callable[[Any], Any]], Common]) -> Iterator[Common]:
    """Item 0's further outputs, one at a time (a clip's float64 copies are large): calls 2..`calls` of the first
    build, then two calls of a build with `other_seed`."""
    for _ in range(calls - 1):
        yield run0(fn)
    fn2 = build(other_seed)
    yield run0(fn2)
    yield run0(fn2)


# ------------------------------------------------------------------------------------------- assessment


@dataclass(frozen=True)
class AuditRow:
    media: str
    transform: str
    library: str
    native: str = ""
    shape: str = ""
    dtype: str = ""
    vmin: float = math.nan
    vmax: float = math.nan
    deterministic: bool | None = None
    mad_vs_albx: float = math.nan
    psnr_vs_albx: float = math.nan
    mad_vs_input: float = math.nan
    flag: bool = False
    reason: str = ""
    verdict: str = ""  # the transform's verdict (the same on every row of the transform)
    note: str = ""  # the transform's note (the same on every row): who agrees with whom, effect sizes

    def csv_row(self) -> dict[str, str]:
        out = {}
        for k, v in asdict(self).items():
            if isinstance(v, bool) or v is None:
                out[k] = "" if v is None else str(v).lower()
            elif isinstance(v, float):
                out[k] = "" if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.6g}")
            else:
                out[k] = str(v)
        return out


CSV_COLUMNS = tuple(f.name for f in fields(AuditRow))


def _fmt(v: float, digits: int = 3) -> str:
    return "∞" if math.isinf(v) else f"{v:.{digits}g}"


def _spread(c: Common) -> float:
    return float(c.pixels.max() - c.pixels.min()) if c.pixels.size else 0.0


def _pixels(obs: Observation) -> list[np.ndarray]:
    return [o.pixels for o in obs.outputs]


def _shapes(obs: Observation) -> list[str]:
    return [o.shape for o in obs.outputs]


def comparable(a: Observation, b: Observation) -> bool:
    """Pixel-comparable: both ran, both deterministic, same output shapes."""
    return (not a.error and not b.error and bool(a.deterministic) and bool(b.deterministic)
            and bool(a.outputs) and _shapes(a) == _shapes(b))


def mad_flag(mad: float, threshold: float = MAD_MAX) -> bool:
    """The similarity part of the flag rule: deterministic outputs further apart than `threshold` levels."""
    return mad > threshold


def library_problems(obs: Observation, ref: Observation | None, transform: str,
                     inputs: Sequence[np.ndarray]) -> list[str]:
    """The flag reasons of one library's cell (empty when none), AlbumentationsX being `ref`."""
    if obs.error:
        return [f"error: {obs.error}"]
    problems = []
    want = expected_dtype(obs.library, transform)
    dtypes = {o.dtype for o in obs.outputs}
    if dtypes != {want}:
        problems.append(f"dtype {'/'.join(sorted(dtypes))}, its adapter contract says {want}")
    lo = min(float(o.pixels.min()) for o in obs.outputs)
    hi = max(float(o.pixels.max()) for o in obs.outputs)
    if lo < -RANGE_SLACK or hi > 255.0 + RANGE_SLACK:
        problems.append(f"values leave 0..255 after conversion ({lo:.1f}..{hi:.1f}"
                        + (", float result not clamped)" if obs.is_float() else ", wrong units)"))
    if ref is None or ref.error or obs is ref:
        return problems
    if _shapes(obs) != _shapes(ref):
        text = f"shape {';'.join(_shapes(obs))} vs albumentationsx {';'.join(_shapes(ref))}"
        same = [i for i, (a, b) in enumerate(zip(_shapes(obs), _shapes(ref), strict=True)) if a == b]
        if same and obs.deterministic and ref.deterministic:
            mad = mean_abs_diff([obs.outputs[i].pixels for i in same], [ref.outputs[i].pixels for i in same])
            text += f" (on the item(s) of equal shape, {', '.join(map(str, same))}: mean |diff| {mad:.2f})"
        problems.append(text)
        return problems
    ref_spread = max(_spread(o) for o in ref.outputs)
    spread = max(_spread(o) for o in obs.outputs)
    if ref_spread > 0 and spread < SPREAD_RATIO_MIN * ref_spread:
        problems.append(f"value spread {spread:.1f} vs albumentationsx {ref_spread:.1f} levels (below "
                        f"{SPREAD_RATIO_MIN:g}x: different units)")
    if _all_unchanged(obs, inputs) and not _all_unchanged(ref, inputs):
        problems.append("output equals the input on every item (a silent no-op) where albumentationsx changes it")
    if comparable(obs, ref):
        mad = mean_abs_diff(_pixels(obs), _pixels(ref))
        if mad_flag(mad):
            problems.append(f"deterministic outputs differ from albumentationsx: mean |diff| {mad:.2f} > "
                            f"{MAD_MAX:g} levels (PSNR {_fmt(psnr(_pixels(obs), _pixels(ref)))} dB)")
    return problems


def _input_mad(obs: Observation, inputs: Sequence[np.ndarray]) -> float:
    if obs.error or len(obs.outputs) != len(inputs):
        return math.nan
    if any(o.pixels.shape != x.shape for o, x in zip(obs.outputs, inputs, strict=True)):
        return math.nan
    return mean_abs_diff(_pixels(obs), [x.astype(np.float64) for x in inputs])


def _all_unchanged(obs: Observation, inputs: Sequence[np.ndarray]) -> bool:
    mad = _input_mad(obs, inputs)
    return not math.isnan(mad) and mad <= NOOP_TOL


def _agreement_note(observations: Mapping[str, Observation], flagged: set[str]) -> str:
    """When two or more libraries differ from AlbumentationsX but agree with each other, say so."""
    libs = [lib for lib in flagged if lib != REFERENCE]
    libs = [lib for lib in AUDIT_LIBRARIES if lib in libs]
    pairs = []
    for i, a in enumerate(libs):
        for b in libs[i + 1:]:
            if comparable(observations[a], observations[b]):
                pairs.append((a, b, mean_abs_diff(_pixels(observations[a]), _pixels(observations[b]))))
    if not pairs:
        return ""
    agree = [p for p in pairs if not mad_flag(p[2])]
    text = ", ".join(f"{a}-{b} {m:.2f}" for a, b, m in pairs)
    if len(agree) == len(pairs):
        return f"the other libraries agree with each other (MAD {text}): albumentationsx is the odd one out"
    return f"MAD between the other libraries: {text}"


def _effect_note(observations: Mapping[str, Observation]) -> str:
    """For a random transform: the median change of item 0 over the draws, per library, when they are far apart."""
    eff = [(lib, float(np.median(o.draw_changes))) for lib, o in observations.items() if o.draw_changes]
    if len(eff) < 2:
        return ""
    lo, hi = min(m for _, m in eff), max(m for _, m in eff)
    if not (lo > 0 and hi / lo >= EFFECT_RATIO_NOTE):
        return ""
    n = max(len(o.draw_changes) for o in observations.values())
    text = ", ".join(f"{lib} {m:.1f}" for lib, m in eff)
    return (f"change of item 0 vs the input differs {hi / lo:.1f}x (median of {n} draws: {text} levels): the "
            "parameters may not mean the same thing (a note, not a flag)")


def assess_transform(media: str, transform: str, observations: Mapping[str, Observation],
                     inputs: Sequence[np.ndarray]) -> list[AuditRow]:
    """One row per observed library: measurements, the flag and its reason, the transform's verdict and note.

    Verdict: "flagged" when any library is flagged; "single library" when only one library is listed;
    "equivalent" when every library and AlbumentationsX are pixel-comparable (deterministic, same shape) and
    within `MAD_MAX`; else "not pixel-comparable" (a random cell: only shape, dtype and range were compared).
    """
    ref = observations.get(REFERENCE)
    rows = []
    for lib, obs in observations.items():
        problems = library_problems(obs, ref, transform, inputs)
        mad = ps = math.nan
        is_comparable = lib != REFERENCE and ref is not None and comparable(obs, ref)
        if is_comparable:
            mad, ps = mean_abs_diff(_pixels(obs), _pixels(ref)), psnr(_pixels(obs), _pixels(ref))
        if problems:
            reason = "; ".join(problems)
        elif lib == REFERENCE:
            reason = "reference" + ("" if obs.deterministic else " (random: outputs differ between calls/seeds)")
        elif is_comparable:
            reason = ("identical to albumentationsx" if mad == 0 else
                      "identical up to float32 rounding" if mad < FLOAT_ROUNDING else
                      f"mean |diff| {mad:.2f} <= {MAD_MAX:g} levels")
        elif not obs.deterministic:
            reason = "random (outputs differ between calls/seeds): shape, dtype and range only"
        else:
            reason = "deterministic, but albumentationsx is random: shape, dtype and range only"
        first = obs.outputs[0] if obs.outputs else None
        rows.append(AuditRow(
            media, transform, lib,
            native=first.native if first else "", shape=";".join(_shapes(obs)),
            dtype=first.dtype if first else "",
            vmin=min(o.vmin for o in obs.outputs) if first else math.nan,
            vmax=max(o.vmax for o in obs.outputs) if first else math.nan,
            deterministic=obs.deterministic, mad_vs_albx=mad, psnr_vs_albx=ps, mad_vs_input=_input_mad(obs, inputs),
            flag=bool(problems), reason=reason))
    verdict = transform_verdict(rows)
    mad_flagged = {r.library for r in rows if r.flag and mad_flag(r.mad_vs_albx)}
    note = ""
    if len(mad_flagged) >= 2:
        note = _agreement_note(observations, mad_flagged)
    elif verdict == "not pixel-comparable":
        note = _effect_note(observations)
    return [AuditRow(**{**asdict(r), "verdict": verdict, "note": note}) for r in rows]


def transform_verdict(rows: Sequence[AuditRow]) -> str:
    if any(r.flag for r in rows):
        return "flagged"
    if len(rows) < 2:
        return "single library"
    others = [r for r in rows if r.library != REFERENCE]
    if others and all(not math.isnan(r.mad_vs_albx) for r in others):
        return "equivalent"
    return "not pixel-comparable"


def transform_reason(rows: Sequence[AuditRow]) -> str:
    """One line per transform for the doc: the flagged libraries' reasons, or the comparison summary."""
    verdict = transform_verdict(rows)
    if verdict == "flagged":
        return "; ".join(f"{r.library}: {r.reason}" for r in rows if r.flag)
    if verdict == "single library":
        return f"only {rows[0].library} is listed"
    parts = []
    for r in rows:
        if r.library == REFERENCE:
            if not r.deterministic:
                parts.append(f"{r.library} random")
        elif not math.isnan(r.mad_vs_albx):
            parts.append(f"{r.library} identical" if r.mad_vs_albx == 0 else
                         f"{r.library} identical up to float32 rounding" if r.mad_vs_albx < FLOAT_ROUNDING else
                         f"{r.library} MAD {r.mad_vs_albx:.2f} / {_fmt(r.psnr_vs_albx)} dB")
        elif not r.deterministic:
            parts.append(f"{r.library} random")
        else:
            parts.append(f"{r.library} deterministic")
    return ", ".join(parts)


# Causes of the flags, diagnosed by hand when the audit was written (AlbumentationsX 2.5.1, torchvision 0.29.1,
# Kornia 0.9.0, Pillow 13.0.0). Printed next to a transform only while the audit still flags it.
DIAGNOSES = {
    "JpegCompression": "AlbumentationsX hands the RGB array to `cv2.imencode`, which reads it as BGR, so its JPEG "
    "colour transform and chroma subsampling run on swapped channels (checked: AlbumentationsX equals Pillow on "
    "the channel-swapped item exactly, and OpenCV with the channels swapped back equals Pillow). On 9 channels "
    "AlbumentationsX compresses channels 0-2 as one colour JPEG and channels 3-8 as six greyscale JPEGs, not each "
    "RGB triple as the spec note says.",
    "Brightness": "Kornia's RandomBrightness adds 0.2 of the range; the others multiply by 1.2 (spec note).",
    "Contrast": "Kornia's RandomContrast multiplies without centring on the mean grey level (spec note).",
    "Saturation": "Kornia scales S in HSV; AlbumentationsX and Pillow blend with the greyscale image (spec note).",
    "CLAHE": "AlbumentationsX equalizes the LAB lightness only, Kornia each RGB channel (spec note).",
    "SmallestMaxSize": "Kornia truncates the scaled side (240x320 -> 512x682), AlbumentationsX rounds it (512x683) "
    "(spec note).",
    "LongestMaxSize": "Kornia truncates the scaled side, AlbumentationsX rounds it (spec note).",
    "RandomRotate90": "Kornia rotates inside the input canvas (a warp; H x W kept, so a non-square item loses its "
    "corners to black), AlbumentationsX permutes indices (H and W swap); identical on square items (spec note).",
    "GaussianNoise": "Kornia's RandomGaussianNoise does not clamp to [0, 1]; AlbumentationsX saturates to uint8 "
    "(spec note).",
}


# -------------------------------------------------------------------------------------------- the audit


@dataclass(frozen=True)
class AuditInput:
    items: list[np.ndarray]
    description: str  # where each item was cut from, its shape and the content hash


def _centre(x: np.ndarray, h: int, w: int) -> np.ndarray:
    """The central h x w window of an HWC / THWC item (a copy, C-contiguous)."""
    H, W = x.shape[-3], x.shape[-2]
    top, left = (H - h) // 2, (W - w) // 2
    return np.ascontiguousarray(x[..., top:top + h, left:left + w, :])


def audit_items(media: str) -> AuditInput:
    """The audit's fixed real input, cut from `media.embedded_items(media, n, size=ITEM_SIZE, seed=ITEM_SEED)`:
    rgb/9ch: item 0's central SQUARE x SQUARE window and item 1's central LANDSCAPE window (4:3, the shape of
    most ImageNet photos, so size rules and 90-degree rotations meet a non-square item); video: one clip's
    central LANDSCAPE window (UCF101's 320x240 frames)."""
    from bench_assets.augbench.media import content_hash, embedded_items

    n = N_CLIPS if media == "video" else N_IMAGES
    ms = embedded_items(media, n, size=ITEM_SIZE, seed=ITEM_SEED)
    windows = [LANDSCAPE] if media == "video" else [SQUARE, LANDSCAPE]
    items = [_centre(x, *hw) for x, hw in zip(ms.items, windows, strict=True)]
    parts = [f"{src}, central {'x'.join(map(str, x.shape))}" for src, x in zip(ms.sources, items, strict=True)]
    return AuditInput(items, f"{'; '.join(parts)} (content hash {content_hash(items)[:12]})")


@contextlib.contextmanager
def _build_seed(seed: int) -> Iterator[None]:
    """The adapters seed every build with `transform_specs.SEED`; the determinism check builds with another."""
    old = ts.SEED
    ts.SEED = seed
    try:
        yield
    finally:
        ts.SEED = old


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """The micro runs' single-thread policy (and a quiet machine for anyone measuring next to the audit)."""
    import cv2
    import torch

    threads, cv_threads = torch.get_num_threads(), cv2.getNumThreads()
    torch.set_num_threads(1)
    cv2.setNumThreads(0)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        cv2.setNumThreads(cv_threads)


def audit_libraries(row: ts.PaperRow, libraries: Sequence[str] = AUDIT_LIBRARIES) -> list[str]:
    """The libraries of a paper row the audit runs: the CSV's micro libraries among the CPU ones, reference first."""
    libs = [lib for lib in row.libraries if lib in libraries]
    return sorted(libs, key=lambda lib: (lib != REFERENCE, AUDIT_LIBRARIES.index(lib)))


def observe_cell(adapter: Any, transform: str, media: str, items: Sequence[np.ndarray]) -> Observation:
    def build(seed: int) -> Callable[[Any], Any]:
        with _build_seed(seed):
            return adapter.build(transform, media, "cpu")

    def make_input(i: int) -> Any:
        return adapter.to_native([items[i].copy()], media, "cpu")[0]

    return observe(adapter.name, build, make_input, len(items), media, normalized=transform == "Normalize",
                   finish=adapter.materialize, input0=items[0])


def run_audit(media_sets: Sequence[str] = ("rgb", "9ch", "video"), transforms: Sequence[str] | None = None,
              libraries: Sequence[str] = AUDIT_LIBRARIES, progress: Callable[[str], None] | None = None
              ) -> list[AuditRow]:
    """Audit every paper transform of `media_sets` (or only `transforms`) over the listed CPU libraries that are
    installed. Rows in CSV order of the paper sets, libraries reference first."""
    from bench_assets.augbench.adapters import get_adapter

    adapters = {}
    for lib in libraries:
        ad = get_adapter(lib)
        if ad.availability("cpu") is None:
            adapters[lib] = ad
    rows: list[AuditRow] = []
    with _single_thread():
        for media in media_sets:
            items = audit_items(media).items
            for prow in ts.media_rows(media):
                if transforms is not None and prow.transform not in transforms:
                    continue
                libs = [lib for lib in audit_libraries(prow, libraries) if lib in adapters]
                if not libs:
                    continue
                t0 = time.perf_counter()
                obs = {lib: observe_cell(adapters[lib], prow.transform, media, items) for lib in libs}
                rows += assess_transform(media, prow.transform, obs, items)
                if progress:
                    progress(f"{media}/{prow.transform}: {rows[-1].verdict} ({time.perf_counter() - t0:.1f}s)")
    return rows


# ----------------------------------------------------------------------------------------------- output


def write_csv(rows: Sequence[AuditRow], path: Path = CSV_PATH) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r.csv_row())
    return path


def rows_from_csv(path: Path = CSV_PATH) -> list[AuditRow]:
    """The committed audit as `AuditRow`s (the inverse of `write_csv`)."""
    def value(name: str, text: str) -> Any:
        kind = {f.name: f.type for f in fields(AuditRow)}[name]
        if kind == "float":
            return math.nan if text == "" else float(text)
        if kind == "bool":
            return text == "true"
        if kind == "bool | None":
            return None if text == "" else text == "true"
        return text

    return [AuditRow(**{k: value(k, v) for k, v in r.items()}) for r in read_csv(path)]


def _group(rows: Sequence[AuditRow]) -> dict[tuple[str, str], list[AuditRow]]:
    out: dict[tuple[str, str], list[AuditRow]] = {}
    for r in rows:
        out.setdefault((r.media, r.transform), []).append(r)
    return out


def measured_bounds(rows: Sequence[AuditRow]) -> tuple[AuditRow | None, AuditRow | None]:
    """(the largest MAD among pixel-comparable cells within MAD_MAX, the smallest MAD above it): the gap the
    threshold sits in, as measured by this audit."""
    measured = [r for r in rows if not math.isnan(r.mad_vs_albx)]
    below = [r for r in measured if not mad_flag(r.mad_vs_albx)]
    above = [r for r in measured if mad_flag(r.mad_vs_albx)]
    return (max(below, key=lambda r: r.mad_vs_albx, default=None),
            min(above, key=lambda r: r.mad_vs_albx, default=None))


def _cell_name(r: AuditRow | None) -> str:
    return "none" if r is None else f"{r.mad_vs_albx:.2f} levels ({r.media} {r.transform}, {r.library})"


def render_markdown(rows: Sequence[AuditRow], inputs: Mapping[str, str] | None = None,
                    runtime_s: float | None = None) -> str:
    """`docs/augbench_equivalence.md`: summary counts, input, thresholds, command, then a table per media."""
    groups = _group(rows)
    media_order = [m for m in ts.MEDIA if any(k[0] == m for k in groups)]
    titles = {"rgb": "RGB images", "9ch": "9-channel images", "video": "Video (16-frame clips)"}
    below, above = measured_bounds(rows)
    out = [
        "# augbench: cross-library equivalence audit",
        "",
        f"Generated by `{COMMAND}` (`bench_assets.augbench.equivalence_audit`); do not edit by hand. Per-library "
        "numbers:",
        "`bench_assets/augbench/data/equivalence_audit.csv` (one row per media, transform and library: native type,",
        "output shape as HWC/THWC, dtype, native value range, deterministic, mean |diff| and PSNR vs AlbumentationsX,",
        "mean |diff| vs the input, flag, reason, the transform's verdict and note). The audited calls are in",
        "`docs/augbench_transforms.md`; `equivalence.flagged_transforms(media)` reads the flags back.",
        "",
        "## Summary",
        "",
        "| Set | transforms | " + " | ".join(VERDICTS) + " |",
        "|---|---|" + "---|" * len(VERDICTS),
    ]
    for media in media_order:
        vs = [transform_verdict(g) for k, g in groups.items() if k[0] == media]
        out.append(f"| {media} | {len(vs)} | " + " | ".join(str(vs.count(v)) for v in VERDICTS) + " |")
    flagged = sorted({k[1] for k, g in groups.items() if transform_verdict(g) == "flagged"})
    out += [
        "",
        "A flagged transform's libraries compute different things on the same input (or one returns what its",
        "adapter contract does not promise): the benchmark still times each library's call, but the speed",
        "comparison is not like for like. *Not pixel-comparable* means a random transform (crop position, colour",
        "order, noise, warp field): only shape, dtype and value range could be checked.",
        "",
    ]
    if flagged:
        out += ["Flagged, with the cause where it was diagnosed:", ""]
        for t in flagged:
            sets = ", ".join(m for m in media_order if (m, t) in groups and transform_verdict(groups[(m, t)])
                             == "flagged")
            out.append(f"- **{t}** ({sets}): {DIAGNOSES.get(t, 'not diagnosed; see the table.')}")
        out.append("")
    out += [
        "## Method",
        "",
        "- **Libraries.** Every CPU library the paper CSV lists for the transform (`libraries` column):",
        "  AlbumentationsX, torchvision, Kornia, Pillow, each built through its adapter exactly as the micro",
        "  benchmark builds it (`adapter.build`, `to_native`, `materialize`). DALI (CUDA only) is not audited.",
        "  AlbumentationsX is the reference every other library is compared with.",
        f"- **Input.** The same real items for every library, cut from `media.embedded_items(media, n, "
        f"size={ITEM_SIZE}, seed={ITEM_SEED})`",
        f"  (n = {N_IMAGES} for rgb and 9ch, {N_CLIPS} clip of {ts.VIDEO_FRAMES} frames for video): rgb/9ch item 0 "
        f"is its central {SQUARE[0]}x{SQUARE[1]}",
        f"  window, item 1 its central {LANDSCAPE[0]}x{LANDSCAPE[1]} (HxW) window (4:3 landscape like most ImageNet "
        "photos, so size",
        f"  rules and 90-degree rotations meet a non-square item); the clip's frames are their central "
        f"{LANDSCAPE[0]}x{LANDSCAPE[1]} window",
        "  (UCF101's frame size). The CSV's `shape` lists each item's output shape (`;`-separated).",
    ]
    for media in media_order:
        desc = (inputs or {}).get(media)
        if desc:
            out.append(f"  - {media}: {desc}")
    out += [
        "- **Common form.** Each output becomes float HWC (THWC for clips) in 0..255 units: uint8 as is, float",
        "  (Kornia's [0, 1] images, every library's Normalize after undoing mean/std) times 255. The CSV's",
        "  `vmin`/`vmax` are in the output's own units (Kornia 0..1, Normalize in normalized units).",
        f"- **Determinism, decided empirically.** Item 0 goes {CALLS} times through the first build (seed {ts.SEED})",
        f"  and twice through a second build (seed {SEED_OTHER}); the cell is deterministic when all outputs are",
        "  identical.",
        "- **Similarity** of two deterministic cells of the same shape: mean |difference| (MAD, 0..255 levels, the",
        "  whole image with its borders, pooled over the items) and PSNR (peak 255, pooled MSE).",
        "",
        "## Flag rule and thresholds",
        "",
        "A library's cell is flagged when",
        "",
        "- its output shape (HWC/THWC) differs from AlbumentationsX's;",
        "- its dtype is not its adapter's contract (uint8; Kornia float32; float32 for Normalize);",
        f"- its values leave 0..255 after conversion by more than `RANGE_SLACK` = {RANGE_SLACK:g} level;",
        f"- its value spread (max - min) is below `SPREAD_RATIO_MIN` = {SPREAD_RATIO_MIN:g} x AlbumentationsX's "
        "(wrong units);",
        "- it returns every item unchanged where AlbumentationsX changes it (a silent no-op);",
        f"- both cells are deterministic and its MAD from AlbumentationsX exceeds `MAD_MAX` = {MAD_MAX:g} levels.",
        "",
        f"Why `MAD_MAX` = {MAD_MAX:g}: pairs that are the same operation by construction differ only by resampling",
        "conventions, border handling and rounding (Kornia computes in float, the others round to uint8); pairs",
        "that are not the same operation differ by whole steps. Measured by this audit, the largest MAD within",
        f"the threshold is {_cell_name(below)}; the smallest above it is {_cell_name(above)}.",
        "",
        "Notes, not flags: a random transform whose libraries change item 0 by amounts "
        f"{EFFECT_RATIO_NOTE:g}x or more apart",
        f"(median mean |output - input| over its {CALLS + 2} draws) gets a note: the parameters may not mean the same "
        "thing, or",
        "the effects differ by design; when two or more libraries differ from AlbumentationsX but agree with each",
        "other, the note says so.",
        "",
        "Verdict per transform: *flagged* when any library is flagged; *equivalent* when every library is",
        "deterministic, of AlbumentationsX's shape and within `MAD_MAX`; *not pixel-comparable* when a cell is",
        "random and nothing is flagged; *single library* when the CSV lists one library only.",
        "",
    ]
    if runtime_s is not None:
        out += [f"Audit runtime: {runtime_s:.0f} s on 2 CPU cores (torch and OpenCV single-threaded).", ""]
    for media in media_order:
        keys = [k for k in groups if k[0] == media]
        out += [f"## {titles[media]} ({len(keys)} transforms)", "",
                "| Transform | libraries | verdict | reason | note |", "|---|---|---|---|---|"]
        for k in keys:
            g = groups[k]
            verdict = transform_verdict(g)
            shown = f"**{verdict}**" if verdict == "flagged" else verdict
            libs = ", ".join(r.library for r in g)
            cells = [k[1], libs, shown, transform_reason(g), g[0].note]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"

