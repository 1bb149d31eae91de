"""Deterministic generator of the embedded ``mini`` suite.

The ``mini`` suite stands in for RF100-VL when there is no network or no time: four small synthetic
detection datasets written in the exact Roboflow COCO export layout, so the importer, training and
evaluation code paths see the same quirks as real downloads::

    <dest>/README.roboflow.txt
    <dest>/README.dataset.txt
    <dest>/{train,valid,test}/_annotations.coco.json   (+ the image files beside it)

Everything is derived from per-image seeds, so two generations are byte-identical: no wall clock,
no set ordering, no hash randomisation. Only numpy and Pillow are used so this module can be imported
without Dagster (tests, CLI, scripts).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

SPLITS: tuple[str, ...] = ("train", "valid", "test")
ANNOTATIONS_FILE = "_annotations.coco.json"

# Roboflow stamps exports with the export time; a fixed stamp keeps the output byte-identical.
EXPORT_DATE = "2024-01-15T12:00:00+00:00"
EXPORT_DATE_HUMAN = "January 15, 2024 at 12:00 PM GMT"

LICENSE = {"id": 1, "url": "https://creativecommons.org/licenses/by/4.0/", "name": "CC BY 4.0"}

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "cross", "ring", "diamond")

# Empty space kept around every object so boxes never overlap (overlap would make the tiny
# learnability check flaky and the "every box is visible" assumption false).
CELL_GAP = 4

Box = tuple[int, int, int, int]  # x, y, w, h in pixels


@dataclass(frozen=True)
class ClassStyle:
    """How one class is drawn: a shape and a solid colour that no other class of the dataset uses."""

    name: str
    shape: str
    color: tuple[int, int, int]


@dataclass(frozen=True)
class MiniSpec:
    """Recipe for one synthetic dataset; ``splits`` maps split name to image count."""

    name: str
    classes: tuple[ClassStyle, ...]
    splits: dict[str, int] = field(hash=False)
    width: int
    height: int
    objects_per_image: tuple[int, int]  # inclusive range
    object_size: tuple[int, int]  # inclusive range of an object's box side, in pixels
    background: tuple[int, int, int]
    texture: int  # amplitude of the coarse background texture (grey levels)
    grain: int  # amplitude of the per-pixel background noise (grey levels)
    image_format: str  # "png" or "jpg"
    seed: int
    description: str
    jpeg_quality: int = 90

    def __post_init__(self) -> None:
        # Objects are placed one per grid cell; fail at import time rather than emit overlapping boxes.
        cell = self.object_size[1] + CELL_GAP
        capacity = (self.width // cell) * (self.height // cell)
        if capacity < self.objects_per_image[1]:
            raise ValueError(
                f"{self.name}: {capacity} grid cells cannot hold {self.objects_per_image[1]} objects"
            )
        if set(self.splits) != set(SPLITS):
            raise ValueError(f"{self.name}: splits must be exactly {SPLITS}")

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def class_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.classes)

    @property
    def num_images(self) -> int:
        return sum(self.splits.values())

    @property
    def megapixels(self) -> float:
        return self.width * self.height / 1e6


RED = (220, 40, 40)
BLUE = (40, 70, 220)
GREEN = (30, 170, 60)
YELLOW = (240, 200, 20)
MAGENTA = (200, 40, 200)
CYAN = (20, 200, 210)

MINI_DATASETS: dict[str, MiniSpec] = {
    "mini-dense": MiniSpec(
        name="mini-dense",
        classes=(ClassStyle("blob", "circle", YELLOW),),
        # 32 train images: the smoke recipe (20 epochs, batch 4) needs ~160 optimizer steps before these
        # blobs are found; 24 images (120 steps) stayed at test mAP50-95 0.04 (docs/training.md).
        splits={"train": 32, "valid": 8, "test": 8},
        width=320,
        height=320,
        objects_per_image=(40, 60),
        # 9-11% of the side, the most the 8 x 8 grid that 60 objects need allows (40 px cells, 4 px gap):
        # 14-18 px at the smoke recipe's 160 px. At 10-20 px (5-10 px at 160, under the 8 px finest
        # stride) the assigner found no weighted positives: box loss <= 4.3e-05 on every epoch, mAP 0.
        object_size=(28, 36),
        background=(60, 60, 80),
        texture=14,
        grain=3,
        image_format="jpg",
        seed=1001,
        description="Single class, 40-60 small blobs per image (crowded scenes, many boxes per image).",
    ),
    "mini-shapes": MiniSpec(
        name="mini-shapes",
        classes=(
            ClassStyle("circle", "circle", RED),
            ClassStyle("square", "square", BLUE),
            ClassStyle("triangle", "triangle", GREEN),
            ClassStyle("cross", "cross", YELLOW),
            ClassStyle("ring", "ring", MAGENTA),
        ),
        splits={"train": 48, "valid": 12, "test": 12},
        width=256,
        height=256,
        objects_per_image=(1, 6),
        object_size=(28, 64),
        background=(150, 150, 140),
        texture=18,
        grain=3,
        image_format="jpg",
        seed=2002,
        description="Five classes, each a distinct shape and colour, 1-6 objects per image.",
    ),
    "mini-tiny": MiniSpec(
        name="mini-tiny",
        classes=(
            ClassStyle("disc", "circle", RED),
            ClassStyle("block", "square", BLUE),
        ),
        splits={"train": 20, "valid": 8, "test": 8},
        width=256,
        height=256,
        objects_per_image=(1, 3),
        # 20-47% of the image side: big, solid, high-contrast objects so a tiny YOLO learns them in
        # a few CPU minutes.
        object_size=(52, 120),
        background=(200, 200, 190),
        texture=12,
        grain=2,
        image_format="png",
        seed=3003,
        description="Two classes, few large easy objects; small enough to train on a CPU in minutes.",
    ),
    "mini-large": MiniSpec(
        name="mini-large",
        classes=(
            ClassStyle("circle", "circle", RED),
            ClassStyle("square", "square", BLUE),
            ClassStyle("diamond", "diamond", GREEN),
        ),
        # 24 train images: with 10 (60 optimizer steps in the smoke recipe) nothing was learnt; 8 + 8
        # valid/test images keep |valid - test| mAP50-95 within the selection_vs_test tolerance.
        splits={"train": 24, "valid": 8, "test": 8},
        width=1600,
        height=1000,
        objects_per_image=(2, 6),
        # Large objects, 24-44% of the short side: 24-44 px after the 10x downscale to 160 px (80-220 px
        # gave 8-22 px and test mAP50-95 0.0). The 3 x 2 grid holds at most 6.
        object_size=(240, 440),
        background=(140, 135, 125),
        texture=20,
        grain=2,
        image_format="jpg",
        seed=4004,
        description="1.6-megapixel JPEGs, three classes, 2-6 large objects per image: exercises resizing and "
        "large-image decoding.",
        jpeg_quality=85,
    ),
}

MINI_SUITE: tuple[str, ...] = tuple(MINI_DATASETS)


def generate_mini_dataset(name: str, dest: Path) -> Path:
    """Write the mini dataset ``name`` into ``dest`` (missing or empty) in Roboflow layout; return dest."""
    spec = _get_spec(name)
    dest = Path(dest)
    _prepare_dest(dest)
    (dest / "README.roboflow.txt").write_text(_readme_roboflow(spec), encoding="utf-8")
    (dest / "README.dataset.txt").write_text(_readme_dataset(spec), encoding="utf-8")
    first_index = 0
    for split_index in range(len(SPLITS)):
        _write_split(spec, dest, split_index, first_index)
        first_index += spec.splits[SPLITS[split_index]]
    return dest


def _get_spec(name: str) -> MiniSpec:
    try:
        return MINI_DATASETS[name]
    except KeyError:
        known = ", ".join(MINI_SUITE)
        raise KeyError(f"unknown mini dataset {name!r}; known mini datasets: {known}") from None


def _prepare_dest(dest: Path) -> None:
    if dest.exists():
        if not dest.is_dir():
            raise NotADirectoryError(f"mini dataset destination {dest} exists and is not a directory")
        if any(dest.iterdir()):
            raise FileExistsError(f"mini dataset destination {dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)


def _write_split(spec: MiniSpec, dest: Path, split_index: int, first_index: int) -> None:
    # first_index continues the file numbering across splits, like one source folder split three ways.
    split = SPLITS[split_index]
    split_dir = dest / split
    split_dir.mkdir()
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for image_id in range(spec.splits[split]):
        # One generator per image, so an image's pixels never depend on how many images precede it.
        rng = np.random.default_rng([spec.seed, split_index, image_id])
        file_name = _roboflow_file_name(spec, split, first_index + image_id)
        image, boxes = _render_image(spec, rng)
        (split_dir / file_name).write_bytes(_encode(spec, image))
        images.append(_image_entry(image_id, file_name, spec))
        for category_id, box in boxes:
            annotations.append(_annotation_entry(len(annotations), image_id, category_id, box))
    coco = {
        "info": _info_block(spec),
        "licenses": [dict(LICENSE)],
        "categories": _categories(spec),
        "images": images,
        "annotations": annotations,
    }
    (split_dir / ANNOTATIONS_FILE).write_text(json.dumps(coco), encoding="utf-8")


def _roboflow_file_name(spec: MiniSpec, split: str, index: int) -> str:
    # Roboflow renames "img_0003.jpg" to "img_0003_jpg.rf.<hash>.jpg"; the hash here comes from the
    # image's identity rather than its bytes so names survive encoder upgrades.
    stem = f"img_{index:04d}"
    ext = spec.image_format
    digest = hashlib.sha256(f"{spec.name}/{split}/{index}".encode()).hexdigest()[:16]
    return f"{stem}_{ext}.rf.{digest}.{ext}"


def _info_block(spec: MiniSpec) -> dict[str, str]:
    return {
        "year": EXPORT_DATE[:4],
        "version": "1",
        "description": "Exported from roboflow.com",
        "contributor": "",
        "url": f"https://public.roboflow.com/object-detection/{spec.name}",
        "date_created": EXPORT_DATE,
    }


def _categories(spec: MiniSpec) -> list[dict[str, Any]]:
    # Roboflow emits category 0 as a supercategory placeholder named after the project; it never
    # carries boxes, and the real classes follow as 1..N.
    categories: list[dict[str, Any]] = [{"id": 0, "name": spec.name, "supercategory": "none"}]
    for category_id, style in enumerate(spec.classes, start=1):
        categories.append({"id": category_id, "name": style.name, "supercategory": spec.name})
    return categories


def _image_entry(image_id: int, file_name: str, spec: MiniSpec) -> dict[str, Any]:
    return {
        "id": image_id,
        "license": 1,
        "file_name": file_name,
        "height": spec.height,
        "width": spec.width,
        "date_captured": EXPORT_DATE,
    }


def _annotation_entry(annotation_id: int, image_id: int, category_id: int, box: Box) -> dict[str, Any]:
    x, y, w, h = box
    return {
        "id": annotation_id,
        "image_id": image_id,
        "category_id": category_id,
        "bbox": [float(x), float(y), float(w), float(h)],
        "area": float(w * h),
        "segmentation": [],
        "iscrowd": 0,
    }


def _render_image(spec: MiniSpec, rng: np.random.Generator) -> tuple[Image.Image, list[tuple[int, Box]]]:
    image = Image.fromarray(_background(spec, rng), mode="RGB")
    low, high = spec.objects_per_image
    count = int(rng.integers(low, high + 1))
    boxes: list[tuple[int, Box]] = []
    for slot in _slots(spec, rng, count):
        class_index = int(rng.integers(0, spec.num_classes))
        box = _draw_object(image, spec.classes[class_index], slot, rng)
        boxes.append((class_index + 1, box))
    return image, boxes


def _background(spec: MiniSpec, rng: np.random.Generator) -> np.ndarray:
    # A coarse random field upsampled bilinearly gives soft blotches; a little per-pixel grain on top
    # keeps the background from being trivially flat without hiding the objects.
    coarse = rng.integers(128 - spec.texture, 128 + spec.texture + 1, size=(6, 6), dtype=np.uint8)
    smooth = Image.fromarray(coarse, mode="L").resize((spec.width, spec.height), Image.Resampling.BILINEAR)
    shade = np.asarray(smooth, dtype=np.int16) - 128
    shade += rng.integers(-spec.grain, spec.grain + 1, size=shade.shape, dtype=np.int16)
    pixels = np.empty((*shade.shape, 3), dtype=np.uint8)
    for channel, level in enumerate(spec.background):  # clipped straight into the image: a third of the CPU
        np.clip(shade + level, 0, 255, out=pixels[..., channel], casting="unsafe")
    return pixels


def _slots(spec: MiniSpec, rng: np.random.Generator, count: int) -> list[Box]:
    """Pick ``count`` non-overlapping canvases: one per grid cell, jittered inside it."""
    cell = spec.object_size[1] + CELL_GAP
    cols, rows = spec.width // cell, spec.height // cell
    origin_x = (spec.width - cols * cell) // 2
    origin_y = (spec.height - rows * cell) // 2
    low, high = spec.object_size
    slots: list[Box] = []
    for cell_index in rng.choice(cols * rows, size=count, replace=False):
        row, col = divmod(int(cell_index), cols)
        w = int(rng.integers(low, high + 1))
        # Mild aspect jitter so boxes are not all squares, clamped to the allowed size range.
        h = int(np.clip(round(w * rng.uniform(0.75, 1.33)), low, high))
        x = origin_x + col * cell + CELL_GAP // 2 + int(rng.integers(0, high - w + 1))
        y = origin_y + row * cell + CELL_GAP // 2 + int(rng.integers(0, high - h + 1))
        slots.append((x, y, w, h))
    return slots


def _draw_object(image: Image.Image, style: ClassStyle, slot: Box, rng: np.random.Generator) -> Box:
    """Paint one object into its slot and return its pixel-tight box."""
    x, y, w, h = slot
    mask = _shape_mask(style.shape, w, h)
    left, top, right, bottom = mask.getbbox() or (0, 0, w, h)
    # Small per-object colour jitter: realistic, yet far from every other class colour.
    jitter = rng.integers(-12, 13, size=3)
    color = tuple(int(c) for c in np.clip(np.asarray(style.color) + jitter, 0, 255))
    image.paste(color, (x, y, x + w, y + h), mask)
    return x + left, y + top, right - left, bottom - top


def _shape_mask(shape: str, w: int, h: int) -> Image.Image:
    mask = Image.new("L", (w, h), 0)
    draw = ImageDraw.Draw(mask)
    if shape == "circle":
        draw.ellipse((0, 0, w - 1, h - 1), fill=255)
    elif shape == "square":
        draw.rectangle((0, 0, w - 1, h - 1), fill=255)
    elif shape == "triangle":
        draw.polygon([(0, h - 1), (w - 1, h - 1), ((w - 1) / 2, 0)], fill=255)
    elif shape == "diamond":
        mid_x, mid_y = (w - 1) / 2, (h - 1) / 2
        draw.polygon([(mid_x, 0), (w - 1, mid_y), (mid_x, h - 1), (0, mid_y)], fill=255)
    elif shape == "cross":
        bar_w, bar_h = max(3, w // 3), max(3, h // 3)
        draw.rectangle(((w - bar_w) // 2, 0, (w - bar_w) // 2 + bar_w - 1, h - 1), fill=255)
        draw.rectangle((0, (h - bar_h) // 2, w - 1, (h - bar_h) // 2 + bar_h - 1), fill=255)
    elif shape == "ring":
        draw.ellipse((0, 0, w - 1, h - 1), outline=255, width=max(3, min(w, h) // 5))
    else:
        raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")
    return mask


PNG_COMPRESS_LEVEL = 1


def _encode(spec: MiniSpec, image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    if spec.image_format == "jpg":
        image.save(buffer, format="JPEG", quality=spec.jpeg_quality)
    elif spec.image_format == "png":
        # zlib's fastest level: the grain makes these images nearly incompressible, so the default level (6) spent
        # 4x the CPU for files 17 % smaller (mini-tiny: 34 KiB against 41 KiB an image). Pixels are the same.
        image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    else:
        raise ValueError(f"unsupported image format {spec.image_format!r}")
    return buffer.getvalue()


def _readme_roboflow(spec: MiniSpec) -> str:
    title = f"{spec.name} - v1 {EXPORT_DATE[:10]}"
    return (
        f"\n{title}\n{'=' * len(title)}\n\n"
        f"This dataset was exported via roboflow.com on {EXPORT_DATE_HUMAN}\n\n"
        "It is a SYNTHETIC stand-in generated by bench_assets.rf100vl.datasets.mini (embedded suite 'mini');\n"
        "it only mimics the layout of a Roboflow COCO export.\n\n"
        f"The dataset includes {spec.num_images} images.\n"
        f"Classes are annotated in COCO format: {', '.join(spec.class_names)}.\n\n"
        f"Images are {spec.width}x{spec.height} ({spec.image_format.upper()}). No augmentation was applied.\n"
    )


def _readme_dataset(spec: MiniSpec) -> str:
    return (
        f"# {spec.name} > v1\n"
        f"https://universe.roboflow.com/bench-mini/{spec.name}\n\n"
        "Provided by the bench platform (synthetic data)\n"
        "License: CC BY 4.0\n\n"
        f"{spec.description}\n"
    )
