"""augbench adapters: every CSV (set, transform, library) pair builds and runs on real photos, unsupported pairs
say why, DataLoader recipes give picklable float32 CHW/TCHW, the package import stays light, deterministic
transforms agree across libraries, and docs/augbench_transforms.md is the rendering of transform_specs."""

from __future__ import annotations

import pickle
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench_assets.augbench import transform_specs as ts
from bench_assets.augbench.adapters import LIBRARIES, SpecError, Unsupported, get_adapter

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

REPO = Path(__file__).resolve().parents[2]
CPU_LIBS = ("albumentationsx", "torchvision", "kornia", "pillow")
SIZE = 256


@pytest.fixture(autouse=True, scope="module")
def _single_thread() -> None:
    import cv2
    import torch

    torch.set_num_threads(1)  # single-thread policy of the micro runs (2 shared cores here)
    cv2.setNumThreads(0)


@cache
def _photos() -> list[np.ndarray]:
    import skimage.data as d

    out = []
    for name in ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field"):
        img = getattr(d, name)()
        h, w = img.shape[:2]
        top, left = (h - SIZE) // 2, (w - SIZE) // 2
        out.append(_squeeze(img[top:top + SIZE, left:left + SIZE, :3]))
    return out


def _squeeze(x: np.ndarray) -> np.ndarray:
    """Map 0..255 to 24..215 so range-dependent transforms (AutoContrast, Equalize) always have work to do."""
    return np.ascontiguousarray((x.astype(np.uint16) * 3 // 4 + 24).astype(np.uint8))


@cache
def items(media: str) -> tuple[np.ndarray, ...]:
    """Two real items per media: 256x256 photo crops; 9ch = three different photos stacked; video = 16 crops
    of one photo shifted by 3 px per frame (a pan)."""
    p = _photos()
    if media == "rgb":
        return (p[0], p[1])
    if media == "9ch":
        return tuple(np.ascontiguousarray(np.concatenate(p[i:i + 3], axis=2)) for i in (0, 3))
    import skimage.data as d

    out = []
    for src, step in ((d.astronaut(), 3), (d.coffee(), 4)):
        out.append(_squeeze(np.stack([src[:SIZE, i * step:i * step + SIZE, :3] for i in range(16)])))
    return tuple(out)


def _pairs(mode: str) -> list[tuple[str, str, str]]:
    col = "libraries" if mode == "micro" else "dataloader_libraries"
    return [(r.media, r.transform, lib) for r in ts.paper_rows() for lib in getattr(r, col) if lib in CPU_LIBS]


def _unlisted() -> list[tuple[str, str, str]]:
    return [(r.media, r.transform, lib) for r in ts.paper_rows() for lib in CPU_LIBS if lib not in r.libraries]


@cache
def adapter(name: str) -> Any:
    return get_adapter(name)


@cache
def native(library: str, media: str) -> list:
    return adapter(library).to_native(list(items(media)), media, "cpu")


def _shape(out, library: str, media: str) -> tuple[tuple[int, int], int, int | None]:
    """((H, W), channels, frames) of an output in the library's layout."""
    if library == "pillow":
        return (out.size[1], out.size[0]), len(out.getbands()), None
    if library == "albumentationsx":
        return out.shape[-3:-1], out.shape[-1], out.shape[0] if media == "video" else None
    if library == "kornia" and media != "video":
        assert out.shape[0] == 1
    return tuple(out.shape[-2:]), out.shape[-3], out.shape[0] if media == "video" else None


def _same(out: Any, x: Any) -> bool:
    if hasattr(out, "tobytes") and hasattr(out, "mode"):  # PIL
        return out.size == x.size and out.tobytes() == x.tobytes()
    if isinstance(out, np.ndarray):
        return out.shape == x.shape and bool(np.array_equal(out, x))
    import torch

    a, b = out.as_subclass(torch.Tensor), x.as_subclass(torch.Tensor)
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))


# --------------------------------------------------------------------------------------------- coverage


def test_every_csv_pair_has_a_spec_call() -> None:
    rows = ts.paper_rows()
    assert {m: sum(r.media == m for r in rows) for m in ts.MEDIA} == {"rgb": 59, "9ch": 42, "video": 52}
    for r in rows:
        assert r.transform in ts.SPECS, r
        for lib in {*r.libraries, *r.dataloader_libraries}:
            call = ts.SPECS[r.transform].call(lib, r.media)
            assert call is not None, (r.media, r.transform, lib)
            if lib != "dali":
                ts.resolved_call(r.transform, lib, r.media)  # validates


@pytest.mark.parametrize("media", ts.MEDIA)
def test_micro_every_listed_pair_runs(media: str) -> None:
    pairs = [p for p in _pairs("micro") if p[0] == media]
    assert pairs
    failures = []
    for _, transform, library in pairs:
        ad = adapter(library)
        try:
            fn = ad.build(transform, media, "cpu")
            changed = False
            for x, raw in zip(native(library, media), items(media), strict=True):
                out = ad.materialize(fn(x))
                changed = changed or not _same(out, x)
                hw, ch, frames = _shape(out, library, media)
                in_hw = raw.shape[-3:-1]
                want_c = 9 if media == "9ch" else 3
                assert hw == ts.output_hw(transform, library, in_hw), (hw, in_hw)
                assert ch == want_c, ch
                if media == "video":
                    assert frames == ts.VIDEO_FRAMES
                if library == "albumentationsx":
                    assert out.flags.c_contiguous
                    assert out.dtype == (np.float32 if transform == "Normalize" else np.uint8)
                elif library == "pillow":
                    assert out.mode == "RGB"
                else:
                    import torch

                    assert out.is_contiguous()
                    want = torch.float32 if library == "kornia" or transform == "Normalize" else torch.uint8
                    assert out.dtype == want
                    assert bool(torch.isfinite(out.float()).all())
            assert changed, "output equals input on both items: a silent no-op"
        except Exception as exc:  # collect all, report once
            failures.append(f"{media}/{transform}/{library}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)


def test_unlisted_pairs_are_unsupported_with_a_reason() -> None:
    for media, transform, library in _unlisted():
        with pytest.raises(Unsupported) as info:
            adapter(library).build(transform, media, "cpu")
        assert f"{library} has no {transform}" in str(info.value)
    # CPU-only libraries, CUDA-only DALI, Pillow beyond RGB
    assert adapter("albumentationsx").availability("cuda") == "CPU only"
    assert adapter("pillow").availability("cuda") == "CPU only"
    with pytest.raises(Unsupported, match="CPU only"):
        adapter("albumentationsx").build("HorizontalFlip", "rgb", "cuda")
    with pytest.raises(Unsupported, match="RGB"):
        adapter("pillow").to_native(list(items("9ch")), "9ch", "cpu")


def test_unknown_names_are_errors_not_unsupported() -> None:
    with pytest.raises(ValueError, match="not in the rgb"):
        adapter("kornia").build("NoSuchTransform", "rgb", "cpu")
    with pytest.raises(ValueError, match="unknown media"):
        adapter("kornia").build("HorizontalFlip", "grayscale", "cpu")
    with pytest.raises(ValueError, match="unknown augbench library"):
        get_adapter("imgaug")


def test_bad_parameter_is_a_spec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Kornia-video-Hue trap: a hue in degrees must fail `build` loudly, never become `unsupported`."""
    hue = ts.SPECS["Hue"]
    bad = ts.TransformSpec(hue.name, hue.canonical, {**hue.calls, "kornia": ts.C("K.RandomHue", hue=(20.0, 20.0))})
    monkeypatch.setitem(ts.SPECS, "Hue", bad)
    with pytest.raises(SpecError, match="turns of the hue circle"):
        adapter("kornia").build("Hue", "rgb", "cpu")
    post = ts.SPECS["Posterize"]
    scalar = ts.TransformSpec(post.name, post.canonical, {**post.calls, "kornia": ts.C("K.RandomPosterize", bits=4.0)})
    monkeypatch.setitem(ts.SPECS, "Posterize", scalar)
    with pytest.raises(SpecError, match="random draw"):
        adapter("kornia").build("Posterize", "rgb", "cpu")
    sol = ts.SPECS["Solarize"]
    frac = ts.TransformSpec(sol.name, sol.canonical, {**sol.calls, "torchvision": ts.C("v2.RandomSolarize",
                                                                                       threshold=0.5)})
    monkeypatch.setitem(ts.SPECS, "Solarize", frac)
    with pytest.raises(SpecError, match="uint8 units"):
        adapter("torchvision").build("Solarize", "rgb", "cpu")
    rot = ts.SPECS["Rotate"]
    typo = ts.TransformSpec(rot.name, rot.canonical, {**rot.calls, "albumentationsx": ts.C("A.Rotate", angel=45)})
    monkeypatch.setitem(ts.SPECS, "Rotate", typo)
    with pytest.raises(SpecError, match="Rotate"):
        adapter("albumentationsx").build("Rotate", "rgb", "cpu")


# ----------------------------------------------------------------------------------------- dataloader


@pytest.mark.parametrize("media", ts.MEDIA)
def test_dataloader_recipes(media: str) -> None:
    import torch

    pairs = [p for p in _pairs("dataloader") if p[0] == media]
    assert pairs
    failures = []
    raw = items(media)[1]
    for _, transform, library in pairs:
        try:
            tf = adapter(library).dataloader_transform(transform, media)
            clone = pickle.loads(pickle.dumps(tf))
            for f in (tf, clone):
                out = f(raw)
                assert isinstance(out, torch.Tensor) and type(out) is torch.Tensor, type(out)
                assert out.dtype == torch.float32 and out.is_contiguous()
                want_c = 9 if media == "9ch" else 3
                shape = (ts.VIDEO_FRAMES, want_c) if media == "video" else (want_c,)
                assert tuple(out.shape) == (*shape, *ts.dataloader_output_hw(transform)), tuple(out.shape)
                assert bool(torch.isfinite(out).all())
        except Exception as exc:
            failures.append(f"{media}/{transform}/{library}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)


def test_dataloader_output_is_224_except_size_changing_rows() -> None:
    sizes = {t: ts.dataloader_output_hw(t) for t in ts.SPECS}
    assert {t for t, hw in sizes.items() if hw != (ts.CROP, ts.CROP)} == {
        "Resize", "LongestMaxSize", "SmallestMaxSize", "Pad"}
    assert sizes["Pad"] == (ts.CROP + 2 * ts.PAD,) * 2 and sizes["Resize"] == (ts.RESIZE, ts.RESIZE)


def test_dataloader_unlisted_and_dali() -> None:
    with pytest.raises(Unsupported, match="DataLoader set"):
        adapter("pillow").dataloader_transform("Perspective", "rgb")
    dali = adapter("dali")
    assert dali.availability("cpu") in ("NVIDIA DALI is not installed", "DALI needs a CUDA device")
    assert dali.availability("cuda") in ("NVIDIA DALI is not installed", "DALI needs a CUDA device")
    with pytest.raises(Unsupported):
        dali.build("Resize", "rgb", "cuda")
    with pytest.raises(Unsupported):
        dali.dataloader_transform("Resize", "rgb")
    with pytest.raises(Unsupported, match="dali has no Perspective"):
        dali.dataloader_transform("Perspective", "rgb")
    from bench_assets.augbench.adapters.dali import DALI_OPS

    listed = {r.transform for r in ts.paper_rows() if "dali" in r.dataloader_libraries}
    assert listed <= set(DALI_OPS)


# ------------------------------------------------------------------------------------- light import


@pytest.mark.parametrize("load,heavy", [
    ("import bench_assets.augbench.adapters as a, bench_assets.augbench.transform_specs;"
     "a.get_adapter('dali').availability('cuda')", ("torch", "kornia", "albumentations", "torchvision", "cv2")),
    # the paper report reads the equivalence audit's flags: no image library for that
    ("import bench_assets.augbench.equivalence as e; e.flagged_transforms('rgb')",
     ("torch", "kornia", "albumentations", "torchvision", "cv2", "PIL")),
])
def test_package_import_is_light(load: str, heavy: tuple[str, ...]) -> None:
    code = f"import sys; {load}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_versions_and_contract() -> None:
    from bench_assets.augbench.adapters.base import Adapter

    for name in LIBRARIES:
        ad = adapter(name)
        assert isinstance(ad, Adapter) and ad.name == name
        v = ad.versions()
        assert v and all(isinstance(x, str) for x in v.values())
    assert adapter("albumentationsx").versions()["albumentationsx"] == "2.5.1"


# ---------------------------------------------------------------------------------------- equivalence


def _as_hwc(out) -> np.ndarray:  # noqa: ANN001
    """Any library output as float HWC in 0..255 (the equivalence audit's common form)."""
    from bench_assets.augbench.equivalence_audit import to_common

    return to_common(out, "rgb").pixels


def _input(transform: str) -> np.ndarray:
    return items("rgb")[0]


def _outputs(transform: str, libraries: tuple[str, ...]) -> dict[str, np.ndarray]:
    res = {}
    for lib in libraries:
        ad = adapter(lib)
        fn = ad.build(transform, "rgb", "cpu")
        res[lib] = _as_hwc(ad.materialize(fn(ad.to_native([_input(transform)], "rgb", "cpu")[0])))
    return res


# (transform, libraries compared, max mean |difference| in 0..255 on the interior)
EQUIVALENT = [
    ("HorizontalFlip", CPU_LIBS, 0.0),
    ("VerticalFlip", CPU_LIBS, 0.0),
    ("Invert", CPU_LIBS, 0.0),
    ("Grayscale", CPU_LIBS, 1.0),
    ("Resize", CPU_LIBS, 1.5),
    ("Rotate", CPU_LIBS, 1.5),
    ("Affine", CPU_LIBS, 1.5),
    ("Shear", ("albumentationsx", "kornia", "pillow"), 1.5),
    ("Sharpen", ("albumentationsx", "torchvision", "kornia"), 0.6),
    ("Solarize", CPU_LIBS, 0.0),
    ("Posterize", CPU_LIBS, 0.0),
    ("Pad", ("albumentationsx", "torchvision", "pillow"), 0.0),
    ("GaussianBlur", ("albumentationsx", "torchvision", "kornia"), 0.6),
    ("Transpose", ("albumentationsx", "pillow"), 0.0),
    ("RandomRotate90", ("albumentationsx", "kornia"), 0.5),
    ("Hue", ("albumentationsx", "kornia"), 1.5),
    ("AutoContrast", CPU_LIBS, 1.0),
    ("EnhanceDetail", ("albumentationsx", "pillow"), 1.0),
]


@pytest.mark.parametrize(("transform", "libraries", "tol"), EQUIVALENT, ids=[e[0] for e in EQUIVALENT])
def test_equivalent_outputs(transform: str, libraries: tuple[str, ...], tol: float) -> None:
    outs = _outputs(transform, libraries)
    ref_lib = libraries[0]
    ref = outs[ref_lib]
    m = 4  # borders: each library's own edge convention
    for lib, out in outs.items():
        assert out.shape == ref.shape, (lib, out.shape, ref.shape)
        diff = float(np.abs(out[m:-m, m:-m] - ref[m:-m, m:-m]).mean())
        assert diff <= tol + 1e-3, f"{transform}: {lib} vs {ref_lib} mean |diff| {diff:.3f} > {tol}"
    src = _as_hwc(_input(transform))
    assert ref.shape != src.shape or float(np.abs(ref - src).mean()) > 1.0, "transform was a no-op"


def test_video_frames_share_one_draw() -> None:
    """Same random parameters for all 16 frames: a static clip must come out with identical frames."""
    clip = np.ascontiguousarray(np.repeat(items("rgb")[0][None], ts.VIDEO_FRAMES, axis=0))
    for lib in ("albumentationsx", "torchvision", "kornia"):
        ad = adapter(lib)
        x = ad.to_native([clip], "video", "cpu")[0]
        for transform in ("RandomResizedCrop", "Perspective", "ColorJiggle", "Erasing"):
            out = ad.materialize(ad.build(transform, "video", "cpu")(x))
            frames = [np.asarray(f) for f in (out if lib == "albumentationsx" else out.cpu().numpy())]
            assert all(np.array_equal(frames[0], f) for f in frames[1:]), (lib, transform)


def test_materialize_copies_views_only() -> None:
    ad = adapter("albumentationsx")
    x = native("albumentationsx", "rgb")[0]
    out = ad.build("HorizontalFlip", "rgb", "cpu")(x)
    assert not out.flags.c_contiguous  # AlbumentationsX returns a negative-stride view ...
    assert ad.materialize(out).flags.c_contiguous  # ... the rule copies it
    same = ad.build("Invert", "rgb", "cpu")(x)
    assert ad.materialize(same) is same
    tv = adapter("torchvision")
    crop = tv.build("RandomCrop224", "rgb", "cpu")(native("torchvision", "rgb")[0])
    assert not crop.is_contiguous() and tv.materialize(crop).is_contiguous()


def test_native_layouts() -> None:
    import torch

    a = native("albumentationsx", "rgb")[0]
    assert a.dtype == np.uint8 and a.shape == (SIZE, SIZE, 3) and a.flags.c_contiguous
    t = native("torchvision", "rgb")[0]
    assert t.dtype == torch.uint8 and t.shape == (3, SIZE, SIZE) and t.is_contiguous()
    v = native("torchvision", "video")[0]
    assert v.shape == (16, 3, SIZE, SIZE) and v.is_contiguous() and type(v).__name__ == "Video"
    k = native("kornia", "9ch")[0]
    assert k.dtype == torch.float32 and k.shape == (1, 9, SIZE, SIZE) and float(k.max()) <= 1.0
    kv = native("kornia", "video")[0]
    assert kv.shape == (16, 3, SIZE, SIZE)
    p = native("pillow", "rgb")[0]
    assert p.mode == "RGB" and p.size == (SIZE, SIZE)


# ----------------------------------------------------------------------------------------------- doc


def test_committed_doc_is_current() -> None:
    assert ts.DOC_PATH.read_text() == ts.render_markdown(), (
        "docs/augbench_transforms.md is stale: run `python -m bench_assets.augbench.transform_specs`")


def test_decoder_tensor_layout_reproduces_the_published_runners_inputs() -> None:
    """tensor_layout 'decoder' gives torchvision and Kornia CHW views with the channels-last strides that
    torchvision.io.read_image returns (what the published runner passes); the same transform then yields the
    same values, and the materialization rule copies an output left strided (torchvision's flip). The config refuses the
    layout outside RGB micro."""
    from bench_assets.augbench.adapters.base import materialize_output, needs_copy
    from bench_assets.augbench.config import RunConfig

    item = _photos()[1][:120, :160].copy()
    for lib in ("torchvision", "kornia"):
        plain, decoder = get_adapter(lib), get_adapter(lib)
        decoder.tensor_layout = "decoder"
        a, = plain.to_native([item], "rgb", "cpu")
        b, = decoder.to_native([item], "rgb", "cpu")
        assert a.is_contiguous() and not b.is_contiguous() and b.stride()[-1] == 3
        fn = plain.build("HorizontalFlip", "rgb", "cpu")
        out_a, out_b = fn(a), fn(b)
        assert np.array_equal(np.asarray(materialize_output(out_a)), np.asarray(materialize_output(out_b)))
        assert not needs_copy(out_a)
        if lib == "torchvision":  # torchvision's flip keeps the input's strides: the rule's copy is charged
            assert needs_copy(out_b)
    base = {"name": "x", "mode": "micro", "libraries": ["kornia"], "num_items": 2, "tensor_layout": "decoder"}
    assert RunConfig.model_validate({**base, "media": "rgb"}).tensor_layout == "decoder"
    with pytest.raises(ValueError, match="reproduces the published RGB micro runner only"):
        RunConfig.model_validate({**base, "media": "9ch"})


def test_published_output_rule_converts_as_the_published_runner_does() -> None:
    """output_rule 'published' finishes outputs the way the published runner's `make_contiguous_transform_output`
    does: a Pillow image becomes a contiguous numpy array with the image's values, a reversed numpy view a
    contiguous copy; the benchmark's own rule leaves the Pillow image an image. The config refuses the rule
    outside RGB micro."""
    from PIL import Image

    from bench_assets.augbench.adapters.base import materialize_output, published_runner_output
    from bench_assets.augbench.config import RunConfig

    item = _photos()[1][:120, :160].copy()
    flipped = Image.fromarray(item).transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    out = published_runner_output(flipped)
    assert isinstance(out, np.ndarray) and out.flags.c_contiguous
    assert np.array_equal(out, item[::-1])
    assert isinstance(materialize_output(flipped), Image.Image)
    view = published_runner_output(item[:, ::-1])
    assert view.flags.c_contiguous and np.array_equal(view, item[:, ::-1])
    base = {"name": "x", "mode": "micro", "libraries": ["pillow"], "num_items": 2, "output_rule": "published"}
    assert RunConfig.model_validate({**base, "media": "rgb"}).output_rule == "published"
    with pytest.raises(ValueError, match="output_rule 'published' reproduces"):
        RunConfig.model_validate({**base, "media": "video"})
