"""A picture of a dataset: a grid of sample images with their boxes, for the UI and the docs."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

THUMB = 256
COLS = 4
PALETTE = [(230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
           (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (170, 110, 40)]


def sample_grid(split_dir: Path, coco: dict[str, Any], n: int = 8) -> bytes:
    """JPEG bytes of up to `n` images (evenly spaced through the split, so it is deterministic)."""
    from PIL import Image, ImageDraw

    images = coco["images"]
    step = max(1, len(images) // n)
    chosen = images[::step][:n]
    by_image: dict[Any, list[dict[str, Any]]] = {}
    for a in coco["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    rows = (len(chosen) + COLS - 1) // COLS
    # Cells take the tallest aspect ratio among the samples, so wide images are not letterboxed.
    cell_h = max(1, round(THUMB * max(i["height"] / i["width"] for i in chosen)))
    grid = Image.new("RGB", (COLS * THUMB, rows * cell_h), (24, 24, 24))
    for k, img in enumerate(chosen):
        with Image.open(split_dir / img["file_name"]) as im:
            im = im.convert("RGB")
            scale = min(THUMB / im.width, cell_h / im.height)
            im = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))))
        draw = ImageDraw.Draw(im)
        for a in by_image.get(img["id"], []):
            x, y, w, h = (v * scale for v in a["bbox"])
            draw.rectangle([x, y, x + w, y + h], outline=PALETTE[a["category_id"] % len(PALETTE)], width=2)
        grid.paste(im, ((k % COLS) * THUMB, (k // COLS) * cell_h))
    buf = io.BytesIO()
    grid.save(buf, format="JPEG", quality=85)
    return buf.getvalue()
