"""augbench equivalence audit: output conversion to the common form, similarity, the flag rule at its thresholds,
empirical determinism, a planted wrong operation, the committed CSV covering the paper sets, and a small real
audit through the adapters."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

from bench_assets.augbench import equivalence
from bench_assets.augbench import equivalence_audit as eq
from bench_assets.augbench import transform_specs as ts

REPO = Path(__file__).resolve().parents[2]
CPU_LIBS = ("albumentationsx", "torchvision", "kornia", "pillow")
IMPORT_NAME = {"albumentationsx": "albumentations", "torchvision": "torchvision", "kornia": "kornia", "pillow": "PIL"}


def _img(h: int = 6, w: int = 8, c: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def _obs(library: str, outputs: list[np.ndarray], deterministic: bool | None = True, media: str = "rgb",
         **kw) -> eq.Observation:
    return eq.Observation(library, [eq.to_common(o, media, **kw) for o in outputs], deterministic)


# ------------------------------------------------------------------------------------------- conversion


def test_common_form_of_each_output_type() -> None:
    import torch
    from PIL import Image
    from torchvision import tv_tensors

    x = _img()
    ref = x.astype(np.float64)
    chw = torch.from_numpy(x).permute(2, 0, 1).contiguous()
    cases = {
        "numpy HWC": x,
        "torch CHW": chw,
        "torch 1CHW": chw[None].float() / 255.0,  # Kornia: float32 in [0, 1], a batch of one
        "PIL RGB": Image.fromarray(x),
    }
    for native, out in cases.items():
        c = eq.to_common(out, "rgb")
        assert c.native == native and c.pixels.dtype == np.float64 and c.shape == "6x8x3"
        np.testing.assert_allclose(c.pixels, ref, atol=1e-4)
    assert eq.to_common(cases["torch 1CHW"], "rgb").dtype == "float32"
    assert eq.to_common(chw, "rgb").dtype == eq.to_common(x, "rgb").dtype == "uint8"
    k = eq.to_common(cases["torch 1CHW"], "rgb")
    assert k.vmax <= 1.0 and abs(k.vmax - x.max() / 255.0) < 1e-6  # native range stays in native units
    # clips: numpy THWC, torch TCHW (a tv_tensors.Video too), Kornia float TCHW
    clip = np.stack([x, 255 - x])
    tchw = torch.from_numpy(clip).permute(0, 3, 1, 2).contiguous()
    for out in (clip, tchw, tv_tensors.Video(tchw), tchw.float() / 255.0):
        c = eq.to_common(out, "video")
        assert c.shape == "2x6x8x3"
        np.testing.assert_allclose(c.pixels, clip.astype(np.float64), atol=1e-4)
    # a single-band PIL image gets a channel axis
    assert eq.to_common(Image.fromarray(x[..., 0]), "rgb").shape == "6x8x1"


def test_common_form_of_normalize_undoes_mean_std() -> None:
    x = _img(c=9)
    mean, std = np.array(ts.NORMALIZE_MEAN * 3), np.array(ts.NORMALIZE_STD * 3)
    normalized = ((x / 255.0 - mean) / std).astype(np.float32)
    c = eq.to_common(normalized, "9ch", normalized=True)
    np.testing.assert_allclose(c.pixels, x, atol=1e-3)
    assert c.vmin < 0  # the native range is in normalized units


def test_common_form_rejects_wrong_layouts() -> None:
    import torch

    with pytest.raises(ValueError, match="CHW"):
        eq.to_common(torch.zeros(2, 3, 4, 4), "rgb")  # a batch of two is not an image
    with pytest.raises(ValueError, match="TCHW"):
        eq.to_common(torch.zeros(3, 4, 4), "video")
    with pytest.raises(ValueError, match="HWC"):
        eq.to_common(np.zeros((4, 4), np.uint8), "rgb")
    with pytest.raises(TypeError, match="cannot compare"):
        eq.to_common([1, 2, 3], "rgb")


# ------------------------------------------------------------------------------------------- similarity


def test_similarity_on_hand_made_arrays() -> None:
    a = np.zeros((4, 4, 3))
    assert eq.mean_abs_diff([a], [a]) == 0 and eq.psnr([a], [a]) == math.inf
    b = a + 2.0
    assert eq.mean_abs_diff([a], [b]) == 2.0
    assert eq.psnr([a], [b]) == pytest.approx(10 * math.log10(255**2 / 4))
    # pooled over items: one identical item and one off by 4 -> MAD 2
    assert eq.mean_abs_diff([a, a], [a, a + 4.0]) == 2.0
    half = a.copy()
    half[:2] = 255.0
    assert eq.mean_abs_diff([a], [half]) == 127.5
    assert eq.psnr([a], [half]) == pytest.approx(10 * math.log10(2))  # MSE = 255**2 / 2
    with pytest.raises(ValueError, match="shape"):
        eq.mean_abs_diff([a], [np.zeros((4, 3, 3))])
    with pytest.raises(ValueError):
        eq.mean_abs_diff([a], [a, a])


# ------------------------------------------------------------------------------------------- flag rule


def _pair(ref: np.ndarray, other: np.ndarray, other_lib: str = "pillow", inputs: list[np.ndarray] | None = None,
          **kw) -> dict[str, eq.AuditRow]:
    obs = {"albumentationsx": _obs("albumentationsx", [ref]), other_lib: _obs(other_lib, [other], **kw)}
    rows = eq.assess_transform("rgb", "Synthetic", obs, inputs or [np.zeros_like(ref)])
    return {r.library: r for r in rows}


def _offset(x: np.ndarray, quarters: int) -> np.ndarray:
    """x plus 2 levels on the first (quarters - 4) / 4 of its elements and 1 on the rest: mean |diff| is exactly
    quarters / 4 (4 <= quarters <= 8; x.size divisible by 4, x <= 253)."""
    flat = x.astype(np.int16).reshape(-1).copy()
    n2 = flat.size * (quarters - 4) // 4
    flat[:n2] += 2
    flat[n2:] += 1
    return flat.reshape(x.shape).astype(np.uint8)


def test_mad_threshold_boundary() -> None:
    assert eq.MAD_MAX == 1.5
    assert not eq.mad_flag(eq.MAD_MAX) and eq.mad_flag(math.nextafter(eq.MAD_MAX, 2.0))
    x = (_img(8, 8) // 2).astype(np.uint8)  # <= 127, so +2 never saturates
    at = _offset(x, 6)  # MAD exactly 1.5
    above = _offset(x, 7)  # MAD exactly 1.75
    assert eq.mean_abs_diff([x.astype(float)], [at.astype(float)]) == 1.5
    rows = _pair(x, at)
    assert rows["pillow"].mad_vs_albx == 1.5 and not rows["pillow"].flag
    assert rows["pillow"].verdict == "equivalent" and "<= 1.5" in rows["pillow"].reason
    rows = _pair(x, above)
    assert rows["pillow"].flag and rows["pillow"].verdict == "flagged"
    assert "mean |diff| 1.75 > 1.5" in rows["pillow"].reason
    assert not rows["albumentationsx"].flag and rows["albumentationsx"].verdict == "flagged"


def test_range_threshold_boundary() -> None:
    x = _img()
    for excess, flagged in ((eq.RANGE_SLACK - 0.01, False), (eq.RANGE_SLACK + 0.01, True)):
        k = (x.astype(np.float64) / 255.0).copy()
        k[0, 0, 0] = (255.0 + excess) / 255.0
        k[0, 0, 1] = -excess / 255.0
        out = k.transpose(2, 0, 1)[None].astype(np.float32)
        import torch

        obs = {"albumentationsx": _obs("albumentationsx", [x], deterministic=False),
               "kornia": _obs("kornia", [torch.from_numpy(out)], deterministic=False)}
        rows = {r.library: r for r in eq.assess_transform("rgb", "Synthetic", obs, [x])}
        assert rows["kornia"].flag is flagged, excess
        assert rows["kornia"].verdict == ("flagged" if flagged else "not pixel-comparable")
        if flagged:
            assert "leave 0..255" in rows["kornia"].reason and "not clamped" in rows["kornia"].reason


def test_spread_threshold_boundary() -> None:
    ref = np.zeros((4, 4, 3), np.uint8)
    ref[0, 0] = 200
    for top, flagged in ((50, False), (49, True)):  # SPREAD_RATIO_MIN 0.25 of 200 = 50
        other = np.zeros_like(ref)
        other[0, 0] = top
        obs = {"albumentationsx": _obs("albumentationsx", [ref], deterministic=False),
               "torchvision": _obs("torchvision", [np.ascontiguousarray(other)], deterministic=False)}
        rows = {r.library: r for r in eq.assess_transform("rgb", "Synthetic", obs, [np.ones_like(ref)])}
        assert rows["torchvision"].flag is flagged
        if flagged:
            assert "spread" in rows["torchvision"].reason


def test_shape_dtype_and_noop_rules() -> None:
    x = _img()
    rows = _pair(x, np.ascontiguousarray(x[:4]))
    assert rows["pillow"].flag and "shape 4x8x3 vs albumentationsx 6x8x3" in rows["pillow"].reason
    rows = _pair(x, x.astype(np.float32) / 255.0, other_lib="torchvision")  # float where uint8 is promised
    assert rows["torchvision"].flag and "dtype float32" in rows["torchvision"].reason
    assert not _pair(x, x.astype(np.float32) / 255.0, other_lib="kornia")["kornia"].flag  # Kornia is float
    inp = 255 - x
    rows = _pair(x, inp, inputs=[inp], deterministic=False)  # returns its input, albumentationsx does not
    assert rows["pillow"].flag and "no-op" in rows["pillow"].reason
    rows = _pair(inp, inp, inputs=[inp])  # both unchanged: identical, not flagged
    assert not rows["pillow"].flag and rows["pillow"].reason == "identical to albumentationsx"


def test_verdicts() -> None:
    def row(lib: str, mad: float = math.nan, flag: bool = False, det: bool = True) -> eq.AuditRow:
        return eq.AuditRow("rgb", "T", lib, deterministic=det, mad_vs_albx=mad, flag=flag)

    assert eq.transform_verdict([row("albumentationsx")]) == "single library"
    assert eq.transform_verdict([row("albumentationsx"), row("kornia", 0.2)]) == "equivalent"
    assert eq.transform_verdict([row("albumentationsx"), row("kornia", 0.2), row("pillow", det=False)]) == (
        "not pixel-comparable")
    assert eq.transform_verdict([row("albumentationsx", det=False), row("kornia", flag=True)]) == "flagged"


# ------------------------------------------------------------------------------------------- determinism


def test_observe_decides_determinism_empirically() -> None:
    x = _img()

    def flip_build(seed: int):
        return lambda item: np.ascontiguousarray(item[:, ::-1])

    def random_build(seed: int):  # a seeded random crop: differs between calls and between seeds
        rng = np.random.default_rng(seed)
        return lambda item: np.ascontiguousarray(np.roll(item, int(rng.integers(1, 5)), axis=1))

    def constant_per_seed(seed: int):  # same output on every call, but the seed changes it
        return lambda item: np.ascontiguousarray(np.roll(item, seed % 5 + 1, axis=1))

    make = lambda i: x.copy()  # noqa: E731
    det = eq.observe("albumentationsx", flip_build, make, 1, "rgb", input0=x)
    assert det.deterministic is True and not det.error
    assert len(det.draw_changes) == eq.CALLS + 2 and len(set(det.draw_changes)) == 1
    assert eq.observe("albumentationsx", random_build, make, 1, "rgb").deterministic is False
    assert eq.observe("albumentationsx", constant_per_seed, make, 1, "rgb").deterministic is False

    def broken(seed: int):
        raise RuntimeError("boom")

    bad = eq.observe("kornia", broken, make, 1, "rgb")
    assert bad.error == "RuntimeError: boom" and bad.deterministic is None
    rows = eq.assess_transform("rgb", "T", {"albumentationsx": det, "kornia": bad}, [x])
    assert rows[1].flag and rows[1].reason.startswith("error: RuntimeError")


# ------------------------------------------------------------------------------------- planted operation


@pytest.fixture(scope="module")
def _single_thread() -> None:
    import cv2
    import torch

    torch.set_num_threads(1)
    cv2.setNumThreads(0)


def test_planted_wrong_operation_is_flagged(_single_thread: None) -> None:
    """AlbumentationsX's real HorizontalFlip against a planted 'flip' that returns its input (identity), and a
    planted correct one (torch.flip): the identity is flagged, the real flip is equivalent."""
    import torch

    from bench_assets.augbench.adapters import get_adapter

    items = eq.audit_items("rgb").items
    albx = eq.observe_cell(get_adapter("albumentationsx"), "HorizontalFlip", "rgb", items)
    tv = get_adapter("torchvision")

    def make(i: int):
        return tv.to_native([items[i].copy()], "rgb", "cpu")[0]

    identity = eq.observe("torchvision", lambda seed: (lambda t: t.clone()), make, len(items), "rgb",
                          input0=items[0])
    flip = eq.observe("kornia", lambda seed: (lambda t: torch.flip(t, dims=[-1]).float() / 255.0), make,
                      len(items), "rgb", input0=items[0])
    rows = {r.library: r for r in eq.assess_transform("rgb", "HorizontalFlip",
                                                       {"albumentationsx": albx, "torchvision": identity,
                                                        "kornia": flip}, items)}
    assert rows["torchvision"].flag and rows["torchvision"].verdict == "flagged"
    assert rows["torchvision"].mad_vs_albx > 10 * eq.MAD_MAX
    assert "differ from albumentationsx" in rows["torchvision"].reason
    assert "no-op" in rows["torchvision"].reason  # it also returns every item unchanged
    assert not rows["kornia"].flag and rows["kornia"].mad_vs_albx < 1e-3
    assert rows["kornia"].shape == "256x256x3;240x320x3"


# ------------------------------------------------------------------------------------------ committed CSV


def _installed(lib: str) -> bool:
    return importlib.util.find_spec(IMPORT_NAME[lib]) is not None


def test_committed_csv_covers_the_paper_sets() -> None:
    rows = equivalence.read_csv()
    assert rows and tuple(rows[0]) == eq.CSV_COLUMNS
    got = [(r["media"], r["transform"], r["library"]) for r in rows]
    assert len(got) == len(set(got)), "duplicate rows"
    want = {(p.media, p.transform, lib) for p in ts.paper_rows() for lib in p.libraries
            if lib in CPU_LIBS and _installed(lib)}
    assert set(got) == want
    assert {r["verdict"] for r in rows} <= set(eq.VERDICTS)
    for r in rows:
        assert r["flag"] in ("true", "false") and r["deterministic"] in ("true", "false"), r
        assert r["reason"], r
        assert r["shape"] and r["dtype"], r
        if r["flag"] == "true":
            assert r["verdict"] == "flagged"
        if r["library"] == "albumentationsx":
            assert r["mad_vs_albx"] == ""
    by_transform: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        by_transform.setdefault((r["media"], r["transform"]), set()).add(r["verdict"])
    assert all(len(v) == 1 for v in by_transform.values())
    assert [r.csv_row() for r in eq.rows_from_csv()] == rows  # the loader round-trips


def test_flagged_transforms_loader(tmp_path: Path) -> None:
    flagged = equivalence.flagged_transforms("rgb")
    assert "Brightness" in flagged and flagged["Brightness"].startswith("kornia: ")
    assert "HorizontalFlip" not in flagged
    assert set(flagged) == {t for t, v in equivalence.verdicts("rgb").items() if v == "flagged"}
    with pytest.raises(ValueError, match="unknown media"):
        equivalence.flagged_transforms("gray")
    rows = [eq.AuditRow("9ch", "T", "albumentationsx", flag=False, reason="reference", verdict="flagged", note="n"),
            eq.AuditRow("9ch", "T", "kornia", flag=True, reason="why", verdict="flagged", note="n")]
    path = eq.write_csv(rows, tmp_path / "audit.csv")
    assert equivalence.flagged_transforms("9ch", path) == {"T": "kornia: why -- n"}
    assert equivalence.flagged_transforms("rgb", path) == {}


def test_committed_doc_matches_the_csv() -> None:
    doc = eq.DOC_PATH.read_text()
    rows = eq.rows_from_csv()
    groups: dict[tuple[str, str], list[eq.AuditRow]] = {}
    for r in rows:
        groups.setdefault((r.media, r.transform), []).append(r)
    for media in ts.MEDIA:
        vs = [eq.transform_verdict(g) for k, g in groups.items() if k[0] == media]
        line = f"| {media} | {len(vs)} | " + " | ".join(str(vs.count(v)) for v in eq.VERDICTS) + " |"
        assert line in doc, line
    for (_, transform), g in groups.items():
        assert f"| {transform} | {', '.join(r.library for r in g)} | " in doc
    assert f"`MAD_MAX` = {eq.MAD_MAX:g}" in doc and eq.COMMAND in doc
    # the whole doc is the rendering of the committed CSV and the audit's inputs (runtime read back from it)
    runtime = float(re.search(r"Audit runtime: (\d+) s", doc).group(1))
    inputs = {m: eq.audit_items(m).description for m in ts.MEDIA}
    assert eq.render_markdown(rows, inputs, runtime_s=runtime) == doc, (
        f"docs/augbench_equivalence.md is stale: run `{eq.COMMAND}`")
    # the transforms doc ends each row's notes with the audit verdict
    spec_doc = ts.DOC_PATH.read_text()
    assert "docs/augbench_equivalence.md" in spec_doc and "Audit: **flagged**." in spec_doc


def test_render_markdown_of_synthetic_rows() -> None:
    rows = [eq.AuditRow("rgb", "A", "albumentationsx", deterministic=True, reason="reference", verdict="equivalent"),
            eq.AuditRow("rgb", "A", "kornia", deterministic=True, mad_vs_albx=0.2, psnr_vs_albx=50.0,
                        reason="ok", verdict="equivalent"),
            eq.AuditRow("rgb", "B", "albumentationsx", deterministic=True, reason="reference", verdict="flagged"),
            eq.AuditRow("rgb", "B", "pillow", deterministic=True, mad_vs_albx=9.0, psnr_vs_albx=20.0, flag=True,
                        reason="x | y", verdict="flagged")]
    md = eq.render_markdown(rows, {"rgb": "two photos"}, runtime_s=12)
    assert "| rgb | 2 | 1 | 1 | 0 | 0 |" in md
    assert "| B | albumentationsx, pillow | **flagged** | pillow: x \\| y |" in md
    assert "two photos" in md and "12 s" in md and "0.20 levels (rgb A, kornia)" in md
    assert "9.00 levels (rgb B, pillow)" in md


# ------------------------------------------------------------------------------------------- real audit


def test_real_audit_on_three_transforms(_single_thread: None) -> None:
    rows = eq.run_audit(("rgb",), transforms=("HorizontalFlip", "Brightness", "RandomCrop224"))
    got = {(r.transform, r.library): r for r in rows}
    assert {t for t, _ in got} == {"HorizontalFlip", "Brightness", "RandomCrop224"}
    assert all(r.verdict == "equivalent" for (t, _), r in got.items() if t == "HorizontalFlip")
    assert got[("HorizontalFlip", "pillow")].reason == "identical to albumentationsx"
    assert got[("Brightness", "kornia")].flag and got[("Brightness", "torchvision")].mad_vs_albx == 0
    crop = [r for (t, _), r in got.items() if t == "RandomCrop224"]
    assert all(r.deterministic is False and r.shape == "224x224x3;224x224x3" for r in crop)
    assert crop[0].verdict == "not pixel-comparable"
    # the committed CSV says the same about these cells
    committed = {(r.media, r.transform, r.library): r for r in eq.rows_from_csv()}
    for r in rows:
        c = committed[(r.media, r.transform, r.library)]
        assert (c.shape, c.dtype, c.deterministic, c.flag, c.verdict) == (
            r.shape, r.dtype, r.deterministic, r.flag, r.verdict), r


def test_jpeg_diagnosis_still_holds() -> None:
    """The doc's diagnosis of the JpegCompression flag: AlbumentationsX 2.5.1 JPEG-encodes RGB as if it were BGR
    (equal to Pillow on the channel-swapped item). When this fails, AlbumentationsX changed: rerun the audit."""
    import io

    from PIL import Image

    from bench_assets.augbench.adapters import get_adapter

    x = eq.audit_items("rgb").items[0]
    albx = get_adapter("albumentationsx").build("JpegCompression", "rgb", "cpu")(x.copy())

    def pil_jpeg(a: np.ndarray) -> np.ndarray:
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="JPEG", quality=50)
        buf.seek(0)
        return np.asarray(Image.open(buf))

    swapped = pil_jpeg(np.ascontiguousarray(x[..., ::-1]))[..., ::-1]
    assert np.array_equal(albx, swapped)
    assert not np.array_equal(albx, pil_jpeg(x))


def test_second_seed_reaches_the_adapters() -> None:
    """The determinism check's second build really uses another seed (the adapters read transform_specs.SEED)."""
    from bench_assets.augbench.adapters import get_adapter

    ad = get_adapter("albumentationsx")
    x = eq.audit_items("rgb").items[0]
    outs = []
    for seed in (ts.SEED, eq.SEED_OTHER, ts.SEED):
        with eq._build_seed(seed):
            outs.append(ad.build("RandomCrop224", "rgb", "cpu")(x.copy()))
    assert ts.SEED == 137
    assert np.array_equal(outs[0], outs[2]) and not np.array_equal(outs[0], outs[1])
