"""Verify a Roboflow-layout COCO dataset and normalise it into the canonical form.

Pure logic, no Dagster. `verify_dataset` reads `<root>/{train,valid,test}/_annotations.coco.json`
and the images beside them, and either returns the normalised annotations with their statistics
or raises `DatasetInvalid` listing every problem found, each naming split, file, field and fix.

Normalisations are applied and counted, never silent:
- the empty placeholder supercategory (Roboflow's category 0) is dropped;
- category ids are made contiguous from 0 (what the `rf100vl` package's cleaning produces);
- annotation ids are renumbered from 1 (both COCO backends treat id 0 as "unmatched");
- boxes reaching past the image edge by at most `BBOX_TOLERANCE_PX` are clipped (area follows).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from bench_assets.rf100vl.datasets.strict_json import StrictJsonError, strict_loads

SPLITS = ("train", "valid", "test")
ANNOTATIONS_FILE = "_annotations.coco.json"
BBOX_TOLERANCE_PX = 2.0
AREA_REL_TOLERANCE = 0.01
MAX_PROBLEMS_SHOWN = 25
_EXAMPLES = 3


@dataclass(frozen=True)
class Problem:
    split: str
    file: str
    field: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.split}/{self.file}: {self.field}: {self.message}; fix: {self.fix}"


class DatasetInvalid(ValueError):
    def __init__(self, root: Path, problems: list[Problem]):
        self.root = root
        self.problems = problems
        shown = "\n".join(f"  - {p}" for p in problems[:MAX_PROBLEMS_SHOWN])
        more = len(problems) - MAX_PROBLEMS_SHOWN
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(f"dataset {root} failed verification with {len(problems)} problem(s):\n{shown}{tail}")


# The protocol scores at most this many detections per image (scoring/eval_store.MAX_DET, COCO maxDets 500): an
# image with more ground-truth boxes can never reach full recall, whatever the model.
PROTOCOL_MAX_DET = 500


@dataclass
class SplitStats:
    images: int
    annotations: int
    boxes_per_image_mean: float
    boxes_per_image_max: int
    images_without_boxes: int
    classes_present: int
    megapixels_mean: float
    megapixels_max: float
    image_bytes: int
    images_over_max_det: int = 0  # images with more boxes than the protocol scores (maxDets, PROTOCOL_MAX_DET)


@dataclass
class Normalisations:
    dropped_placeholder_categories: list[str] = field(default_factory=list)
    category_ids_remapped: int = 0
    annotation_ids_renumbered: dict[str, int] = field(default_factory=dict)
    annotation_id_zero: dict[str, int] = field(default_factory=dict)
    boxes_clipped: dict[str, int] = field(default_factory=dict)
    areas_filled: dict[str, int] = field(default_factory=dict)

    def total(self) -> int:
        return (
            len(self.dropped_placeholder_categories)
            + self.category_ids_remapped
            + sum(self.annotation_ids_renumbered.values())
            + sum(self.boxes_clipped.values())
            + sum(self.areas_filled.values())
        )


@dataclass
class VerifiedDataset:
    root: Path
    categories: list[dict[str, Any]]
    coco: dict[str, dict[str, Any]]  # split -> normalised COCO document
    stats: dict[str, SplitStats]
    normalisations: Normalisations
    image_sha256: dict[str, dict[str, str]] = field(default_factory=dict)  # split -> file name -> SHA-256

    @property
    def class_names(self) -> list[str]:
        return [c["name"] for c in self.categories]

    def summary(self) -> dict[str, Any]:
        return {
            "classes": self.class_names,
            "splits": {s: asdict(st) for s, st in self.stats.items()},
            "normalisations": asdict(self.normalisations),
        }


# ---------------------------------------------------------------------------------------------
# Strict types: where COCO says integer or number, a string that looks like one is refused


# JSON types, tested exactly (ground truth here, predictions in scoring.py).
# `type(v) is int`, not isinstance: a JSON true is a bool, which isinstance(v, int) would accept. Exact types
# are what json.loads produces, and the exact test keeps the per-annotation checks cheap on 260k boxes.
NUMBER_TYPES = (int, float)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def is_int(v: Any) -> bool:
    return type(v) is int


def is_number(v: Any) -> bool:
    return type(v) in NUMBER_TYPES


def file_name_problem(name: Any) -> str | None:
    """Why `name` is not a plain file name inside its split folder, or None when it is.

    Images must lie directly in their split folder: a relative, single-component name. This refuses
    absolute paths, `..`, subdirectories and either separator, so joining it to a folder can never
    leave that folder (the store copies `<split>/<file_name>` to the same name in the new version).
    """
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a non-empty string"
    if "\x00" in name:
        return f"{name!r} contains a NUL byte"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", name):
        return f"{name!r} is an absolute path (it would read a file outside the dataset)"
    parts = re.split(r"[/\\]", name)
    if ".." in parts:
        return f"{name!r} climbs out of its split folder with '..'"
    if len(parts) > 1:
        return f"{name!r} is in a subdirectory; images must lie directly in the split folder"
    if name in (".", ANNOTATIONS_FILE):
        return f"{name!r} is not an image file name"
    return None


FILE_NAME_FIX = ("set file_name to the bare name of an image that lies directly in the split folder "
                 "(e.g. 'img_0001.jpg'); move images out of subfolders and drop '..' and absolute paths")
INT_FIX = "write ids as JSON integers (e.g. 12, not \"12\" or 12.0) and re-export"


# ---------------------------------------------------------------------------------------------
# Reading


def _load_json(root: Path, split: str, problems: list[Problem]) -> dict[str, Any] | None:
    path = root / split / ANNOTATIONS_FILE
    if not (root / split).is_dir():
        problems.append(Problem(split, ANNOTATIONS_FILE, "split", f"split folder {root / split} is missing",
                                "export all three splits train/valid/test"))
        return None
    if not path.is_file():
        problems.append(Problem(split, ANNOTATIONS_FILE, "file", "annotation file is missing",
                                "export the dataset in COCO format (Roboflow layout)"))
        return None
    if (root / split).is_symlink() or path.is_symlink():
        link = root / split if (root / split).is_symlink() else path
        problems.append(Problem(split, ANNOTATIONS_FILE, "split", f"{link} is a symbolic link; links are not "
                                "followed in dataset folders", "copy the real folder/file into the dataset"))
        return None
    try:
        doc = strict_loads(path.read_bytes())
    except StrictJsonError as exc:
        problems.append(Problem(split, ANNOTATIONS_FILE, "json", str(exc),
                                "re-export the annotation file (standard JSON: each key once, no NaN or Infinity)"))
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problems.append(Problem(split, ANNOTATIONS_FILE, "json", f"unreadable or truncated JSON ({exc})",
                                "re-download or re-export the annotation file"))
        return None
    except RecursionError:
        problems.append(Problem(split, ANNOTATIONS_FILE, "json", "JSON nested too deeply to parse (a COCO file "
                                "is a few levels deep; this one is not an annotation export)",
                                "re-export the annotation file in COCO format"))
        return None
    if not isinstance(doc, dict):
        problems.append(Problem(split, ANNOTATIONS_FILE, "json", "top level is not a JSON object",
                                "re-export in COCO format"))
        return None
    for key in ("images", "annotations", "categories"):
        if not isinstance(doc.get(key), list):
            problems.append(Problem(split, ANNOTATIONS_FILE, key, f"missing or not a list: {key!r}",
                                    "re-export in COCO format"))
            return None
        bad = [i for i, v in enumerate(doc[key]) if not isinstance(v, dict)]
        if bad:
            problems.append(Problem(split, ANNOTATIONS_FILE, f"{key}[{bad[0]}]",
                                    f"{len(bad)} entr(y/ies) are not JSON objects, first: {doc[key][bad[0]]!r}",
                                    "re-export in COCO format"))
            return None
    return doc


# ---------------------------------------------------------------------------------------------
# Images


def _image_is_truncated(fh: BinaryIO, fmt: str | None) -> bool:
    """Cheap end-of-stream check: a cut JPEG loses its EOI marker, a cut PNG its IEND chunk."""
    fh.seek(max(0, fh.seek(0, os.SEEK_END) - 1024))
    tail = fh.read()
    if fmt == "JPEG":
        return b"\xff\xd9" not in tail
    if fmt == "PNG":
        return b"IEND" not in tail[-16:]
    return False


def _check_image(path: Path, deep: bool) -> tuple[tuple[int, int], str] | str:
    """((width, height), SHA-256 of the file) of a readable image, or the reason it is not readable.

    One open file serves all: its SHA-256 (the lock's image hash, streamed in chunks so a huge hostile file
    costs no memory), then the header, the end marker and (deep) the pixels, read back from the page cache."""
    with open(path, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
        fh.seek(0)
        size = _image_size(fh, deep)
    return size if isinstance(size, str) else (size, digest)


def _image_size(fh: BinaryIO, deep: bool) -> tuple[int, int] | str:
    """(width, height) of the image in an open file, or the reason it is not readable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(fh) as im:
            size = im.size
            fmt = im.format
            if deep or fmt not in ("JPEG", "PNG"):
                im.load()
    except Image.DecompressionBombError as exc:  # a tiny file declaring billions of pixels
        return f"declares an implausibly large image, refused unread ({exc})"
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        return f"not a readable image ({exc.__class__.__name__}: {exc})"
    if _image_is_truncated(fh, fmt):
        return f"truncated {fmt} file (end-of-image marker missing)"
    return size


def _verify_images(root: Path, split: str, images: list[dict[str, Any]], deep: bool,
                   problems: list[Problem]) -> tuple[int, dict[str, str]]:
    """Total bytes of the listed images and their SHA-256 by file name (problems appended)."""
    total_bytes = 0
    digests: dict[str, str] = {}
    missing: list[str] = []
    unsafe: list[str] = []
    links: list[str] = []
    split_dir = root / split
    for img in images:
        name = img.get("file_name")
        why = file_name_problem(name)
        if why is not None:  # checked before the name touches the filesystem
            unsafe.append(f"image id {img.get('id')}: {why}")
            continue
        path = split_dir / name
        if path.is_symlink():
            links.append(f"{name!r} -> {str(path.readlink())!r}")
            continue
        if not path.is_file():
            missing.append(str(name))
            continue
        total_bytes += path.stat().st_size
        checked = _check_image(path, deep)
        if isinstance(checked, str):
            problems.append(Problem(split, name, "image", checked,
                                    "re-download the image or remove it and its boxes from the export"))
            continue
        (width, height), digests[name] = checked
        if (width, height) != (img.get("width"), img.get("height")):
            problems.append(Problem(
                split, ANNOTATIONS_FILE, f"images[id={img.get('id')}].width/height",
                f"JSON says {img.get('width')}x{img.get('height')} but {name} is {width}x{height}",
                "re-export so the JSON matches the image files (boxes are in the file's pixel grid)"))
    if unsafe:
        problems.append(Problem(split, ANNOTATIONS_FILE, "images[].file_name",
                                f"{len(unsafe)} unsafe file name(s), first: {'; '.join(unsafe[:_EXAMPLES])}",
                                FILE_NAME_FIX))
    if links:
        problems.append(Problem(split, ANNOTATIONS_FILE, "images[].file_name",
                                f"{len(links)} listed image(s) are symbolic links (not followed in dataset folders), "
                                f"first: {'; '.join(links[:_EXAMPLES])}", "copy the real image files into the split "
                                "folder in place of the links"))
    if missing:
        problems.append(Problem(
            split, ANNOTATIONS_FILE, "images[].file_name",
            f"{len(missing)} listed image(s) missing from {root / split}, first: {missing[:_EXAMPLES]}",
            "re-download the split or remove those images from the JSON"))
    return total_bytes, digests


# ---------------------------------------------------------------------------------------------
# Ids and categories


def _duplicates(values: list[Any]) -> list[Any]:
    return sorted((v for v, n in Counter(values).items() if n > 1), key=str)


def _ids_are_integers(split: str, images: list[dict[str, Any]], annotations: list[dict[str, Any]],
                      problems: list[Problem]) -> bool:
    """COCO ids are integers; "12" and 12.0 are refused rather than kept (they would never match 12), and so
    is an integer too large for the 64-bit ids both COCO backends and every prediction file use."""
    ok = True
    for what, rows, key in (("images[].id", images, "id"), ("annotations[].id", annotations, "id"),
                            ("annotations[].image_id", annotations, "image_id"),
                            ("annotations[].category_id", annotations, "category_id")):
        bad = [r.get(key) for r in rows if type(r.get(key)) is not int]
        if bad:
            kinds = sorted({type(v).__name__ if v is not None else "missing" for v in bad})
            problems.append(Problem(split, ANNOTATIONS_FILE, what,
                                    f"{len(bad)} value(s) are not JSON integers ({', '.join(kinds)}), first: "
                                    f"{bad[:_EXAMPLES]!r}", INT_FIX))
            ok = False
            continue
        values = [r[key] for r in rows]
        if values and (min(values) < INT64_MIN or max(values) > INT64_MAX):
            huge = [v for v in values if not INT64_MIN <= v <= INT64_MAX]
            problems.append(Problem(split, ANNOTATIONS_FILE, what,
                                    f"{len(huge)} value(s) do not fit a 64-bit integer, first: {huge[:_EXAMPLES]!r}",
                                    "renumber the ids (e.g. 0, 1, 2, ...) and re-export"))
            ok = False
    return ok


def _find_placeholders(categories: list[dict[str, Any]], boxes_per_category: Counter) -> set[int]:
    """Roboflow's category 0: a supercategory with no boxes that names the other classes' group."""
    supercats = {c.get("supercategory") for c in categories}
    return {
        c["id"] for c in categories
        if boxes_per_category[c["id"]] == 0
        and (c.get("name") in supercats or (c["id"] == 0 and c.get("supercategory") == "none"))
    }


def _category_key(categories: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """The (id, name) pairs of a class list in a fixed order; sorted by their repr, so an id written as a string
    or null (refused above with its own problem) is compared too instead of crashing the sort."""
    return sorted(((c.get("id"), c.get("name")) for c in categories), key=repr)


def _check_categories(docs: dict[str, dict[str, Any]], problems: list[Problem]) -> list[dict[str, Any]]:
    first_split = next(iter(docs))
    reference = docs[first_split]["categories"]
    ref_key = _category_key(reference)
    for split, doc in docs.items():
        cats = doc["categories"]
        ids = [c.get("id") for c in cats]
        not_int = [i for i in ids if not is_int(i)]
        if not_int:
            problems.append(Problem(split, ANNOTATIONS_FILE, "categories[].id",
                                    f"{len(not_int)} non-integer category id(s), first: {not_int[:_EXAMPLES]!r}",
                                    INT_FIX))
        bad_names = [c.get("name") for c in cats if not isinstance(c.get("name"), str) or not c.get("name")]
        if bad_names:
            problems.append(Problem(split, ANNOTATIONS_FILE, "categories[].name",
                                    f"{len(bad_names)} category name(s) are not non-empty strings, first: "
                                    f"{bad_names[:_EXAMPLES]!r}", "give every class a name and re-export"))
        dup = _duplicates(ids)
        if dup:
            problems.append(Problem(split, ANNOTATIONS_FILE, "categories[].id",
                                    f"duplicate category ids {dup[:_EXAMPLES]}", "re-export the dataset"))
        if _category_key(cats) != ref_key:
            problems.append(Problem(split, ANNOTATIONS_FILE, "categories",
                                    f"categories differ from the {first_split} split's",
                                    "export all splits from one dataset version"))
    return reference


# ---------------------------------------------------------------------------------------------
# Boxes


def _bbox_array(split: str, annotations: list[dict[str, Any]], problems: list[Problem]) -> np.ndarray | None:
    bad = [a for a in annotations if not _is_bbox(a.get("bbox"))]
    if bad:
        examples = ", ".join(f"id {a.get('id')}: {a.get('bbox')!r}" for a in bad[:_EXAMPLES])
        problems.append(Problem(split, ANNOTATIONS_FILE, "annotations[].bbox",
                                f"{len(bad)} bbox(es) are not [x, y, width, height] of 4 JSON numbers, first: "
                                f"{examples}", "write bbox values as JSON numbers (not strings) or drop the box"))
        return None
    return np.asarray([a["bbox"] for a in annotations], dtype=np.float64).reshape(-1, 4)


def _is_bbox(b: Any) -> bool:
    t = NUMBER_TYPES
    return type(b) is list and len(b) == 4 and type(b[0]) in t and type(b[1]) in t and type(b[2]) in t and \
        type(b[3]) in t


def _report(split: str, field_name: str, annotations: list[dict[str, Any]], mask: np.ndarray,
            describe: str, fix: str, problems: list[Problem]) -> None:
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return
    examples = ", ".join(
        f"id {annotations[i].get('id')} (image {annotations[i].get('image_id')}) bbox {annotations[i].get('bbox')}"
        for i in idx[:_EXAMPLES]
    )
    problems.append(Problem(split, ANNOTATIONS_FILE, field_name,
                            f"{idx.size} annotation(s) {describe}, first: {examples}", fix))


def _check_boxes(split: str, annotations: list[dict[str, Any]], boxes: np.ndarray, wh: np.ndarray,
                 problems: list[Problem]) -> tuple[np.ndarray, np.ndarray]:
    """Validate boxes against their image sizes; return clipped boxes and a mask of clipped ones."""
    x, y, w, h = boxes.T
    img_w, img_h = wh.T
    finite = np.isfinite(boxes).all(axis=1)
    _report(split, "annotations[].bbox", annotations, ~finite, "have NaN or infinite coordinates",
            "fix the export or drop the box", problems)
    nonpos = finite & ((w <= 0) | (h <= 0))
    _report(split, "annotations[].bbox", annotations, nonpos, "have non-positive width or height",
            "fix the export or drop the box", problems)
    tol = BBOX_TOLERANCE_PX
    outside = finite & ~nonpos & ((x < -tol) | (y < -tol) | (x + w > img_w + tol) | (y + h > img_h + tol))
    _report(split, "annotations[].bbox", annotations, outside,
            f"reach beyond the image by more than {tol:g} px", "fix the export or drop the box", problems)
    x0 = np.clip(x, 0, img_w)
    y0 = np.clip(y, 0, img_h)
    x1 = np.clip(x + w, 0, img_w)
    y1 = np.clip(y + h, 0, img_h)
    clipped = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
    changed = finite & ~nonpos & ~outside & (np.abs(clipped - boxes) > 1e-9).any(axis=1)
    vanished = changed & ((clipped[:, 2] <= 0) | (clipped[:, 3] <= 0))
    _report(split, "annotations[].bbox", annotations, vanished, "lie entirely outside the image",
            "fix the export or drop the box", problems)
    # A box that needed no clipping is written exactly as exported: x0 + w - x0 is not always w in floats.
    return np.where(changed[:, None], clipped, boxes), changed


def _check_areas(split: str, annotations: list[dict[str, Any]], boxes: np.ndarray,
                 problems: list[Problem]) -> np.ndarray:
    """Mask of annotations without an area (filled later); inconsistent areas are problems."""
    raw = [a.get("area") for a in annotations]
    not_num = [i for i, v in enumerate(raw) if v is not None and not is_number(v)]
    if not_num:
        problems.append(Problem(split, ANNOTATIONS_FILE, "annotations[].area",
                                f"{len(not_num)} area(s) are not JSON numbers, first: "
                                f"{[(annotations[i].get('id'), raw[i]) for i in not_num[:_EXAMPLES]]!r}",
                                "write area as a JSON number (bbox width * height) or leave it out"))
        skip = set(not_num)
        raw = [None if i in skip else v for i, v in enumerate(raw)]
    missing = np.array([v is None for v in raw], dtype=bool)
    area = np.array([math.nan if v is None else v for v in raw], dtype=np.float64)
    expected = boxes[:, 2] * boxes[:, 3]
    bad = ~missing & ~(np.abs(area - expected) <= np.maximum(1.0, AREA_REL_TOLERANCE * expected))
    _report(split, "annotations[].area", annotations, bad,
            "have an area inconsistent with bbox width*height (COCOeval sizes boxes by area)",
            "recompute area as bbox width * height", problems)
    return missing


# ---------------------------------------------------------------------------------------------
# One split


def _verify_split(root: Path, split: str, doc: dict[str, Any], category_ids: set[int], deep: bool,
                  problems: list[Problem]) -> dict[str, Any] | None:
    images: list[dict[str, Any]] = doc["images"]
    annotations: list[dict[str, Any]] = doc["annotations"]
    start = len(problems)
    if not images:
        problems.append(Problem(split, ANNOTATIONS_FILE, "images", "split has no images",
                                "export a non-empty split (train, valid and test are all required)"))
        return None
    if not annotations:
        problems.append(Problem(split, ANNOTATIONS_FILE, "annotations", "split has no boxes (AP is undefined)",
                                "export the split with its annotations"))
    if not _ids_are_integers(split, images, annotations, problems):
        return None
    image_ids = [i.get("id") for i in images]
    for what, values in (("images[].id", image_ids), ("images[].file_name", [i.get("file_name") for i in images]),
                         ("annotations[].id", [a.get("id") for a in annotations])):
        dup = _duplicates(values)
        if dup:
            problems.append(Problem(split, ANNOTATIONS_FILE, what, f"{len(dup)} duplicate value(s), first: "
                                    f"{dup[:_EXAMPLES]}", "re-export the dataset (ids must be unique per split)"))
    by_id = {i.get("id"): i for i in images}
    unknown_img = [a.get("id") for a in annotations if a.get("image_id") not in by_id]
    if unknown_img:
        problems.append(Problem(split, ANNOTATIONS_FILE, "annotations[].image_id",
                                f"{len(unknown_img)} annotation(s) reference unknown image ids, first annotation "
                                f"ids: {unknown_img[:_EXAMPLES]}", "re-export or drop those annotations"))
    unknown_cat = [(a.get("id"), a.get("category_id")) for a in annotations if a.get("category_id") not in category_ids]
    if unknown_cat:
        problems.append(Problem(split, ANNOTATIONS_FILE, "annotations[].category_id",
                                f"{len(unknown_cat)} annotation(s) use category ids not in categories, first "
                                f"(annotation id, category id): {unknown_cat[:_EXAMPLES]}",
                                "re-export with a consistent class list or drop those boxes"))
    image_bytes, image_sha256 = _verify_images(root, split, images, deep, problems)
    boxes = _bbox_array(split, annotations, problems)
    if boxes is None or unknown_img:
        return None
    wh = np.asarray([(by_id[a["image_id"]].get("width", 0), by_id[a["image_id"]].get("height", 0))
                     for a in annotations], dtype=np.float64).reshape(-1, 2)
    clipped, clipped_mask = _check_boxes(split, annotations, boxes, wh, problems)
    area_missing = _check_areas(split, annotations, boxes, problems)
    if len(problems) > start:
        return None
    return {"images": images, "annotations": annotations, "boxes": clipped, "clipped": clipped_mask,
            "area_missing": area_missing, "image_bytes": image_bytes, "image_sha256": image_sha256, "doc": doc}


def _split_stats(checked: dict[str, Any]) -> SplitStats:
    images, annotations = checked["images"], checked["annotations"]
    per_image = Counter(a["image_id"] for a in annotations)
    counts = np.array([per_image.get(i["id"], 0) for i in images])
    mp = np.array([i["width"] * i["height"] / 1e6 for i in images])
    return SplitStats(
        images=len(images),
        annotations=len(annotations),
        boxes_per_image_mean=round(float(counts.mean()), 3),
        boxes_per_image_max=int(counts.max()),
        images_without_boxes=int((counts == 0).sum()),
        classes_present=len({a["category_id"] for a in annotations}),
        megapixels_mean=round(float(mp.mean()), 4),
        megapixels_max=round(float(mp.max()), 4),
        image_bytes=checked["image_bytes"],
        images_over_max_det=int((counts > PROTOCOL_MAX_DET).sum()),
    )


def _normalise_split(split: str, checked: dict[str, Any], cat_map: dict[int, int],
                     categories: list[dict[str, Any]], norm: Normalisations) -> dict[str, Any]:
    boxes = checked["boxes"]
    out_annotations = []
    renumbered = 0
    for n, (ann, b) in enumerate(zip(checked["annotations"], boxes.tolist(), strict=True), start=1):
        renumbered += ann.get("id") != n
        new = dict(ann)
        new.update(id=n, category_id=cat_map[ann["category_id"]], bbox=b)
        if "area" not in ann or ann["area"] is None or checked["clipped"][n - 1]:
            new["area"] = b[2] * b[3]
        new.setdefault("iscrowd", 0)
        out_annotations.append(new)
    norm.annotation_ids_renumbered[split] = int(renumbered)
    norm.annotation_id_zero[split] = sum(1 for a in checked["annotations"] if a.get("id") == 0)
    norm.boxes_clipped[split] = int(checked["clipped"].sum())
    norm.areas_filled[split] = int(checked["area_missing"].sum())
    doc = checked["doc"]
    return {
        "info": doc.get("info", {}),
        "licenses": doc.get("licenses", []),
        "categories": categories,
        "images": checked["images"],
        "annotations": out_annotations,
    }


# ---------------------------------------------------------------------------------------------
# Entry point


def verify_dataset(root: Path, *, deep: bool = False) -> VerifiedDataset:
    """Verify and normalise the dataset at `root`; raise DatasetInvalid naming every problem."""
    root = Path(root)
    problems: list[Problem] = []
    docs = {s: d for s in SPLITS if (d := _load_json(root, s, problems)) is not None}
    if problems:
        raise DatasetInvalid(root, problems)
    raw_categories = _check_categories(docs, problems)
    category_ids = {c["id"] for c in raw_categories if is_int(c.get("id"))}
    checked = {s: _verify_split(root, s, docs[s], category_ids, deep, problems) for s in SPLITS}
    if problems:
        raise DatasetInvalid(root, problems)

    boxes_per_category: Counter = Counter()
    for c in checked.values():
        assert c is not None
        boxes_per_category.update(a["category_id"] for a in c["annotations"])
    placeholders = _find_placeholders(raw_categories, boxes_per_category)
    # Never empty: every split has boxes (else "split has no boxes" above), each box's category is listed (else
    # "unknown category"), and a category with boxes is never a placeholder.
    kept = sorted((c for c in raw_categories if c["id"] not in placeholders), key=lambda c: c["id"])
    cat_map = {c["id"]: new for new, c in enumerate(kept)}
    categories = [{"id": cat_map[c["id"]], "name": c.get("name"), "supercategory": c.get("supercategory", "none")}
                  for c in kept]
    norm = Normalisations(
        dropped_placeholder_categories=sorted(str(c.get("name")) for c in raw_categories if c["id"] in placeholders),
        category_ids_remapped=sum(1 for old, new in cat_map.items() if old != new),
    )
    coco = {s: _normalise_split(s, checked[s], cat_map, categories, norm) for s in SPLITS}  # type: ignore[arg-type]
    stats = {s: _split_stats(checked[s]) for s in SPLITS}  # type: ignore[arg-type]
    return VerifiedDataset(root=root, categories=categories, coco=coco, stats=stats, normalisations=norm,
                           image_sha256={s: checked[s]["image_sha256"] for s in SPLITS})  # type: ignore[index]
