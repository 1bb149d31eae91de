"""Dataset verification on generated datasets (issue 15, property tests).

hypothesis draws small Roboflow-layout datasets (three splits, 1-3 tiny PNG or JPEG images each of 8..64 px per
side, 0-4 boxes per image, Roboflow's placeholder category 0 or not, annotation ids from 0, some boxes reaching
past an edge by at most the tolerance, some areas left out or off by under 1%). Every one must verify, and come
out normalised as `verify.py` documents. Then each defect the verifier knows is injected, once, at a drawn place
(split, image, annotation, side, value) into such a dataset, and verification must refuse it with exactly the
problems that defect causes: the split, the file, the field and the words of the message, and nothing else.

The defects (every branch of `verify.py` that can refuse a dataset but two: a decompression bomb and JSON nested too
deep, which `tests/rf100vl/test_verify.py` covers with corpus files, and "no real classes left", which no dataset
reaching that line can trigger: every split has a box, every box a known category, so some category has a box
and is kept).
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from bench_assets.rf100vl.datasets.verify import (
    ANNOTATIONS_FILE,
    AREA_REL_TOLERANCE,
    BBOX_TOLERANCE_PX,
    SPLITS,
    DatasetInvalid,
    verify_dataset,
)

TOL = BBOX_TOLERANCE_PX
Docs = dict[str, dict[str, Any]]  # split -> the COCO document as written


# ---------------------------------------------------------------------------------------------
# Valid datasets


@dataclass
class Dataset:
    root: Path
    docs: Docs  # what each split's _annotations.coco.json holds
    clipped: int  # boxes written past an edge, within the tolerance (verification clips and counts them)
    formats: dict[str, str]  # split/file_name -> "PNG" or "JPEG"

    def write(self, split: str) -> None:
        (self.root / split / ANNOTATIONS_FILE).write_text(json.dumps(self.docs[split]))

    def image_path(self, split: str, image: dict[str, Any]) -> Path:
        return self.root / split / image["file_name"]


one_decimal = st.integers(0, 640).map(lambda k: k / 10)


# The strategies the generators draw from are built once per argument, not at every draw: an equal strategy built
# anew draws the same values from the same choices, but hypothesis validates each new strategy object on its first
# draw, which cost about as much as generating the dataset (same examples, ~45% less generation time).
_ints = functools.cache(st.integers)
_OVER = st.sampled_from([None, None, None, "left", "top", "right", "bottom"])
_PAST = st.one_of(st.just(TOL), st.integers(1, int(TOL * 10)).map(lambda k: k / 10))  # 0.1 .. TOL px past
_AREA_KIND = st.sampled_from(["exact", "exact", "missing", "close"])
_AREA_SIGN = st.sampled_from([-1.0, 1.0])
_FORMAT = st.sampled_from(["PNG", "JPEG"])


@st.composite
def _box(draw: st.DrawFn, width: int, height: int) -> tuple[list[float], bool]:
    """A box inside a width x height image (positive size, one decimal), sometimes pushed past one edge by at
    most the tolerance; the flag says whether it was."""
    w = draw(_ints(1, width * 10)) / 10
    h = draw(_ints(1, height * 10)) / 10
    x = draw(_ints(0, int(round((width - w) * 10)))) / 10
    y = draw(_ints(0, int(round((height - h) * 10)))) / 10
    over = draw(_OVER)
    if over is None:
        return [x, y, w, h], False
    d = draw(_PAST)
    if over == "left":
        x, w = -d, x + w + d
    elif over == "top":
        y, h = -d, y + h + d
    elif over == "right":
        w = width - x + d
    else:
        h = height - y + d
    return [round(x, 1), round(y, 1), round(w, 1), round(h, 1)], True


@st.composite
def _area(draw: st.DrawFn, bbox: list[float]) -> float | None:
    """bbox w * h, or left out, or off by less than the verifier's tolerance (1% or 1 px^2)."""
    exact = bbox[2] * bbox[3]
    kind = draw(_AREA_KIND)
    if kind == "missing":
        return None
    if kind == "close":
        return exact + 0.5 * max(1.0, AREA_REL_TOLERANCE * exact) * draw(_AREA_SIGN)
    return exact


@functools.cache
def _box_in(width: int, height: int) -> st.SearchStrategy[tuple[list[float], bool]]:
    return _box(width, height)


@functools.cache
def _one_of_ids(ids: tuple[int, ...]) -> st.SearchStrategy[int]:
    return st.sampled_from(list(ids))


@st.composite
def dataset_specs(draw: st.DrawFn) -> tuple[Docs, int, dict[str, str]]:
    """The three documents of a valid dataset (as Roboflow exports them), the count of boxes past an edge, and
    each image's format."""
    n_classes = draw(_ints(1, 3))
    # Roboflow's placeholder: category 0 "ds" with no box, found either because it names the classes'
    # supercategory ("named") or because it is id 0 with supercategory "none" ("id0"); or none at all
    placeholder = draw(st.sampled_from([None, "named", "id0"]))
    first = 1 if placeholder else draw(_ints(0, 5))
    class_super = {None: "things", "named": "ds", "id0": "animals"}[placeholder]
    categories = ([{"id": 0, "name": "ds", "supercategory": "none"}] if placeholder else []) + [
        {"id": first + k, "name": f"class{k}", "supercategory": class_super} for k in range(n_classes)]
    class_ids = [c["id"] for c in categories if c["name"] != "ds"]
    docs: Docs = {}
    clipped = 0
    formats: dict[str, str] = {}
    for split in SPLITS:
        images, annotations = [], []
        for k in range(draw(_ints(1, 3))):
            fmt = draw(_FORMAT)
            name = f"img_{k}.{'png' if fmt == 'PNG' else 'jpg'}"
            formats[f"{split}/{name}"] = fmt
            width, height = draw(_ints(8, 64)), draw(_ints(8, 64))
            images.append({"id": k, "license": 1, "file_name": name, "width": width, "height": height,
                           "date_captured": "2024-01-15T12:00:00+00:00"})
            # the split's first image always has a box (a split without boxes is refused)
            for _ in range(draw(_ints(1 if k == 0 else 0, 4))):
                bbox, past = draw(_box_in(width, height))
                clipped += past
                ann = {"id": len(annotations), "image_id": k, "category_id": draw(_one_of_ids(tuple(class_ids))),
                       "bbox": bbox, "segmentation": [], "iscrowd": 0}
                area = draw(_area(bbox))
                if area is not None:
                    ann["area"] = area
                annotations.append(ann)
        docs[split] = {"info": {"description": "generated"}, "licenses": [{"id": 1, "name": "CC BY 4.0"}],
                       "categories": [dict(c) for c in categories], "images": images, "annotations": annotations}
    return docs, clipped, formats


def write_dataset(root: Path, spec: tuple[Docs, int, dict[str, str]]) -> Dataset:
    docs, clipped, formats = spec
    for split, doc in docs.items():
        (root / split).mkdir(parents=True)
        for img in doc["images"]:
            shade = (37 * img["id"] + 11) % 256
            Image.new("RGB", (img["width"], img["height"]), (shade, 255 - shade, 90)).save(
                root / split / img["file_name"], format=formats[f"{split}/{img['file_name']}"])
    ds = Dataset(root=root, docs=json.loads(json.dumps(docs)), clipped=clipped, formats=formats)
    for split in SPLITS:
        ds.write(split)
    return ds


def _verified(spec: tuple[Docs, int, dict[str, str]]) -> tuple[Any, dict[str, int]]:
    """verify_dataset on the dataset written to a scratch folder, and each split's image bytes on disk."""
    with tempfile.TemporaryDirectory() as tmp:
        ds = write_dataset(Path(tmp) / "ds", spec)
        sizes = {s: sum(ds.image_path(s, i).stat().st_size for i in ds.docs[s]["images"]) for s in SPLITS}
        return verify_dataset(ds.root), sizes


def _past_an_edge(bbox: list[float], width: int, height: int) -> bool:
    x, y, w, h = bbox
    return x < 0 or y < 0 or x + w > width or y + h > height


@settings(max_examples=30)
@given(spec=dataset_specs())
def test_every_valid_dataset_verifies_and_is_normalised(spec: Any) -> None:
    """Accepted, and normalised as documented: the placeholder dropped, class ids contiguous from 0 in id order,
    annotation ids 1..n per split, boxes past an edge clipped into the image (area = w * h) and counted, areas
    left out filled in as w * h, the split statistics counted."""
    docs, clipped, _ = spec
    v, image_bytes = _verified(spec)
    raw = docs["train"]["categories"]
    real = [c for c in raw if c["name"] != "ds"]
    assert v.class_names == [c["name"] for c in sorted(real, key=lambda c: c["id"])]
    assert [c["id"] for c in v.categories] == list(range(len(real)))
    assert v.normalisations.dropped_placeholder_categories == (["ds"] if len(real) < len(raw) else [])
    assert sum(v.normalisations.boxes_clipped.values()) == clipped
    new_id = {c["id"]: k for k, c in enumerate(sorted(real, key=lambda c: c["id"]))}
    for split in SPLITS:
        src, out = docs[split], v.coco[split]
        sizes = {i["id"]: (i["width"], i["height"]) for i in src["images"]}
        assert [a["id"] for a in out["annotations"]] == list(range(1, len(src["annotations"]) + 1))
        assert out["images"] == src["images"]
        for a, b in zip(src["annotations"], out["annotations"], strict=True):
            assert b["category_id"] == new_id[a["category_id"]] and b["image_id"] == a["image_id"]
            x, y, w, h = b["bbox"]
            width, height = sizes[a["image_id"]]
            assert 0 <= x and 0 <= y and w > 0 and h > 0 and x + w <= width and y + h <= height
            past = _past_an_edge(a["bbox"], width, height)
            if not past:  # kept as written, to the bit
                assert b["bbox"] == a["bbox"]
            if past or "area" not in a:
                assert b["area"] == w * h
            else:
                assert b["area"] == a["area"]
        st_ = v.stats[split]
        assert (st_.images, st_.annotations) == (len(src["images"]), len(src["annotations"]))
        per_image = [sum(a["image_id"] == i["id"] for a in src["annotations"]) for i in src["images"]]
        assert st_.boxes_per_image_max == max(per_image)
        assert st_.images_without_boxes == per_image.count(0)
        assert st_.classes_present == len({a["category_id"] for a in src["annotations"]})
        assert st_.image_bytes == image_bytes[split]
        assert v.normalisations.annotation_ids_renumbered[split] == len(src["annotations"])  # exported from 0
        assert v.normalisations.annotation_id_zero[split] == 1
        assert v.normalisations.areas_filled[split] == sum("area" not in a for a in src["annotations"])


def tiny_spec(bbox: list[float], size: int = 8) -> tuple[Docs, int, dict[str, str]]:
    """The smallest dataset: one class, one size x size PNG per split carrying the one box `bbox`."""
    doc = {"categories": [{"id": 0, "name": "class0", "supercategory": "things"}],
           "images": [{"id": 0, "file_name": "img_0.png", "width": size, "height": size}],
           "annotations": [{"id": 0, "image_id": 0, "category_id": 0, "bbox": bbox, "area": bbox[2] * bbox[3],
                            "iscrowd": 0}]}
    return {s: json.loads(json.dumps(doc)) for s in SPLITS}, 0, {f"{s}/img_0.png": "PNG" for s in SPLITS}


def test_a_box_inside_its_image_is_written_unchanged() -> None:
    """The property's shrunk counterexample, kept as a regression test: [0.0, 0.2, 0.1, 0.1] on an 8 x 8 image
    came out with height 0.10000000000000003 ((0.2 + 0.1) - 0.2) when every box was written as the clipped one
    (fixed in 6ca4877)."""
    v, _ = _verified(tiny_spec([0.0, 0.2, 0.1, 0.1]))
    assert v.normalisations.boxes_clipped == {s: 0 for s in SPLITS}
    assert [v.coco[s]["annotations"][0]["bbox"] for s in SPLITS] == [[0.0, 0.2, 0.1, 0.1]] * 3


# ---------------------------------------------------------------------------------------------
# Defects


@dataclass(frozen=True)
class Expect:
    """One problem verification must report: where (split, file, field) and words of its message."""

    split: str
    file: str
    field: str
    words: str


Injector = Callable[[Dataset, st.DataObject], list[Expect]]


def _pick_split(data: st.DataObject) -> str:
    return data.draw(st.sampled_from(SPLITS), label="split")


def _pick_ann(ds: Dataset, data: st.DataObject) -> tuple[str, dict[str, Any]]:
    split = _pick_split(data)
    anns = ds.docs[split]["annotations"]
    return split, anns[data.draw(st.integers(0, len(anns) - 1), label="annotation")]


def _pick_image(ds: Dataset, data: st.DataObject) -> tuple[str, dict[str, Any]]:
    split = _pick_split(data)
    images = ds.docs[split]["images"]
    return split, images[data.draw(st.integers(0, len(images) - 1), label="image")]


def _size_of(ds: Dataset, split: str, ann: dict[str, Any]) -> tuple[int, int]:
    img = next(i for i in ds.docs[split]["images"] if i["id"] == ann["image_id"])
    return img["width"], img["height"]


def _json_problem(split: str, field: str, words: str) -> list[Expect]:
    return [Expect(split, ANNOTATIONS_FILE, field, words)]


def _set_box(ds: Dataset, split: str, ann: dict[str, Any], bbox: list[float], area: bool = True) -> None:
    ann["bbox"] = bbox
    if area:
        ann["area"] = bbox[2] * bbox[3]
    else:
        ann.pop("area", None)
    ds.write(split)


def box_leaves_the_image(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """One box reaches past one side (drawn) by more than the tolerance, inside the image on the other three."""
    split, ann = _pick_ann(ds, data)
    width, height = _size_of(ds, split, ann)
    side = data.draw(st.sampled_from(["left", "top", "right", "bottom"]), label="side")
    d = TOL + data.draw(st.integers(1, 200), label="past") / 10
    w, h = data.draw(st.integers(1, width)), data.draw(st.integers(1, height))
    x, y = data.draw(st.integers(0, width - w)), data.draw(st.integers(0, height - h))
    box = {"left": [-d, y, w, h], "top": [x, -d, w, h], "right": [width - w + d, y, w, h],
           "bottom": [x, height - h + d, w, h]}[side]
    _set_box(ds, split, ann, [float(v) for v in box])
    return _json_problem(split, "annotations[].bbox", f"reach beyond the image by more than {TOL:g} px, first: "
                         f"id {ann['id']} (image {ann['image_id']}) bbox {ann['bbox']}")


def box_not_positive(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, ann = _pick_ann(ds, data)
    x, y, w, h = ann["bbox"]
    bad = data.draw(st.sampled_from([0.0, -0.1, -1.0, -5.5]), label="size")
    box = data.draw(st.sampled_from([[x, y, bad, h], [x, y, w, bad], [x, y, bad, bad]]), label="which")
    _set_box(ds, split, ann, [max(v, 0.0) if k < 2 else v for k, v in enumerate(box)])
    return _json_problem(split, "annotations[].bbox", f"have non-positive width or height, first: id {ann['id']}")


def box_not_finite(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """NaN or an infinity in x or y; w * h stays the area. Written as the tokens Python's json writes (NaN,
    Infinity) it is refused when the file is read, naming the token (standard JSON has none); written as a number
    that overflows (1e999, which JSON allows and reads as infinity), the box check names the box."""
    split, ann = _pick_ann(ds, data)
    k = data.draw(st.sampled_from([0, 1]), label="coordinate")
    token = data.draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]), label="value")
    ann["bbox"][k] = float(token.replace("Infinity", "inf"))
    ann["area"] = ann["bbox"][2] * ann["bbox"][3]
    ds.write(split)
    if "e999" in token:
        path = ds.root / split / ANNOTATIONS_FILE
        path.write_text(path.read_text().replace("Infinity", "1e999"))  # -Infinity becomes -1e999
        return _json_problem(split, "annotations[].bbox", f"have NaN or infinite coordinates, first: id {ann['id']}")
    return _json_problem(split, "json", f"non-standard JSON token {token}")


def box_outside_within_tolerance(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """A box lying wholly beyond one edge, but by less than the tolerance: clipping leaves nothing of it."""
    split, ann = _pick_ann(ds, data)
    width, height = _size_of(ds, split, ann)
    side = data.draw(st.sampled_from(["left", "top", "right", "bottom"]), label="side")
    box = {"left": [-1.5, 1.0, 1.0, 2.0], "top": [1.0, -1.5, 2.0, 1.0], "right": [width + 0.5, 1.0, 1.0, 2.0],
           "bottom": [1.0, height + 0.5, 2.0, 1.0]}[side]
    _set_box(ds, split, ann, box)
    return _json_problem(split, "annotations[].bbox", f"lie entirely outside the image, first: id {ann['id']}")


def box_not_four_numbers(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, ann = _pick_ann(ds, data)
    x, y, w, h = ann["bbox"]
    ann["bbox"] = data.draw(st.sampled_from([[x, y, w], [str(x), y, w, h], [x, y, w, None], [x, y, True, h],
                                             None, "1,2,3,4", [x, y, w, h, 1.0]]), label="bbox")
    ds.write(split)
    return _json_problem(split, "annotations[].bbox", f"are not [x, y, width, height] of 4 JSON numbers, first: "
                         f"id {ann['id']}: {ann['bbox']!r}")


def area_inconsistent(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, ann = _pick_ann(ds, data)
    expected = ann["bbox"][2] * ann["bbox"][3]
    tol = max(1.0, AREA_REL_TOLERANCE * expected)
    ann["area"] = expected + data.draw(st.sampled_from([-1.0, 1.0]), label="sign") * tol * data.draw(
        st.sampled_from([1.01, 1.5, 3.0, 100.0]), label="factor")
    ds.write(split)
    return _json_problem(split, "annotations[].area", f"have an area inconsistent with bbox width*height (COCOeval "
                         f"sizes boxes by area), first: id {ann['id']}")


def area_not_a_number(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, ann = _pick_ann(ds, data)
    ann["area"] = data.draw(st.sampled_from(["12", [1], {"a": 1}, True]), label="area")
    ds.write(split)
    return _json_problem(split, "annotations[].area", f"area(s) are not JSON numbers, first: [({ann['id']}, ")


def unknown_category(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, ann = _pick_ann(ds, data)
    ann["category_id"] = data.draw(st.sampled_from([-1, 99, 10**6]), label="category")
    ds.write(split)
    return _json_problem(split, "annotations[].category_id", f"use category ids not in categories, first "
                         f"(annotation id, category id): [({ann['id']}, {ann['category_id']})]")


def unknown_image(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, ann = _pick_ann(ds, data)
    ann["image_id"] = data.draw(st.sampled_from([-1, 77, 10**9]), label="image id")
    ds.write(split)
    return _json_problem(split, "annotations[].image_id", f"reference unknown image ids, first annotation ids: "
                         f"[{ann['id']}]")


def duplicate_annotation_id(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """A copy of one annotation (same id) appended, or an id taken by another annotation of the split."""
    split, ann = _pick_ann(ds, data)
    anns = ds.docs[split]["annotations"]
    anns.append(dict(ann, bbox=list(ann["bbox"])))
    ds.write(split)
    return _json_problem(split, "annotations[].id", f"1 duplicate value(s), first: [{ann['id']}]")


def _add_image_file(ds: Dataset, split: str, like: dict[str, Any], name: str) -> None:
    fmt = ds.formats[f"{split}/{like['file_name']}"]
    Image.new("RGB", (like["width"], like["height"]), (1, 2, 3)).save(ds.root / split / name, format=fmt)
    ds.formats[f"{split}/{name}"] = fmt


def duplicate_image_id(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """A new image file of the same size listed under an existing image's id."""
    split, img = _pick_image(ds, data)
    name = "extra." + ("png" if ds.formats[f"{split}/{img['file_name']}"] == "PNG" else "jpg")
    _add_image_file(ds, split, img, name)
    ds.docs[split]["images"].append(dict(img, file_name=name))
    ds.write(split)
    return _json_problem(split, "images[].id", f"1 duplicate value(s), first: [{img['id']}]")


def duplicate_file_name(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """A second image entry (a new id) naming an existing image's file."""
    split, img = _pick_image(ds, data)
    ds.docs[split]["images"].append(dict(img, id=1000))
    ds.write(split)
    return _json_problem(split, "images[].file_name", f"1 duplicate value(s), first: ['{img['file_name']}']")


def image_missing(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, img = _pick_image(ds, data)
    ds.image_path(split, img).unlink()
    return _json_problem(split, "images[].file_name", f"1 listed image(s) missing from {ds.root / split}, first: "
                         f"['{img['file_name']}']")


def image_size_differs(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """The JSON lists a larger width and/or height than the file has (boxes stay inside the JSON's size)."""
    split, img = _pick_image(ds, data)
    real = (img["width"], img["height"])
    dw, dh = data.draw(st.sampled_from([(1, 0), (0, 1), (3, 7), (40, 0)]), label="grow")
    img["width"] += dw
    img["height"] += dh
    ds.write(split)
    return _json_problem(split, f"images[id={img['id']}].width/height",
                         f"JSON says {img['width']}x{img['height']} but {img['file_name']} is {real[0]}x{real[1]}")


def image_unreadable(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, img = _pick_image(ds, data)
    ds.image_path(split, img).write_bytes(data.draw(st.sampled_from([b"", b"not an image", b"\x89PNG\r\n"]),
                                                    label="bytes"))
    return [Expect(split, img["file_name"], "image", "not a readable image")]


def image_truncated(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """The image file cut short at its end (a JPEG loses its EOI marker, a PNG its IEND chunk)."""
    split, img = _pick_image(ds, data)
    path = ds.image_path(split, img)
    raw = path.read_bytes()
    fmt = ds.formats[f"{split}/{img['file_name']}"]
    # PNG: IEND ends 4 bytes before the end; JPEG: EOI is the last 2 bytes (a tiny one has only a few bytes of
    # scan data before it, and cutting into the header makes it unreadable instead)
    cut = data.draw(st.integers(5, 12) if fmt == "PNG" else st.integers(2, 3), label="cut")
    path.write_bytes(raw[:len(raw) - cut])
    return [Expect(split, img["file_name"], "image", f"truncated {fmt} file (end-of-image marker missing)")]


def image_file_name_unsafe(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, img = _pick_image(ds, data)
    name = img["file_name"]
    img["file_name"] = data.draw(st.sampled_from([f"sub/{name}", f"../{split}/{name}", f"/tmp/{name}",
                                                  f"C:\\{name}", f"a\\{name}", ""]), label="file name")
    ds.write(split)
    return _json_problem(split, "images[].file_name", f"1 unsafe file name(s), first: image id {img['id']}: ")


def image_is_a_link(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, img = _pick_image(ds, data)
    path = ds.image_path(split, img)
    real = path.with_name("real_" + path.name)
    path.rename(real)
    os.symlink(real.name, path)
    return _json_problem(split, "images[].file_name", "1 listed image(s) are symbolic links (not followed in "
                         f"dataset folders), first: '{img['file_name']}' -> '{real.name}'")


def id_not_an_integer(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """One id (an image's, an annotation's, or an annotation's image_id / category_id) written as "12" or 12.0."""
    which = data.draw(st.sampled_from([("images", "id"), ("annotations", "id"), ("annotations", "image_id"),
                                       ("annotations", "category_id")]), label="field")
    split, item = _pick_image(ds, data) if which[0] == "images" else _pick_ann(ds, data)
    value = item[which[1]]
    item[which[1]] = data.draw(st.sampled_from([str(value), float(value), None]), label="value")
    if item[which[1]] is None:
        del item[which[1]]
    ds.write(split)
    return _json_problem(split, f"{which[0]}[].{which[1]}", "1 value(s) are not JSON integers")


def id_past_64_bits(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split, ann = _pick_ann(ds, data)
    ann["id"] = data.draw(st.sampled_from([2**63, 2**64 + 5, -(2**63) - 1]), label="id")
    ds.write(split)
    return _json_problem(split, "annotations[].id", f"1 value(s) do not fit a 64-bit integer, first: [{ann['id']}]")


def _in_every_split(ds: Dataset, change: Callable[[list[dict[str, Any]]], None]) -> None:
    for split in SPLITS:
        change(ds.docs[split]["categories"])
        ds.write(split)


def category_id_duplicated(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """A second class with an existing class's id, in every split (so the splits still agree)."""
    cats = ds.docs["train"]["categories"]
    dup = cats[data.draw(st.integers(0, len(cats) - 1), label="category")]["id"]
    _in_every_split(ds, lambda c: c.append({"id": dup, "name": "twin", "supercategory": "none"}))
    return [Expect(s, ANNOTATIONS_FILE, "categories[].id", f"duplicate category ids [{dup}]") for s in SPLITS]


def category_id_not_an_integer(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """One more class whose id is "100", null or 100.0, in every split (no box uses it)."""
    bad = data.draw(st.sampled_from(["100", None, 100.0]), label="id")
    _in_every_split(ds, lambda c: c.append({"id": bad, "name": "odd", "supercategory": "none"}))
    return [Expect(s, ANNOTATIONS_FILE, "categories[].id", f"1 non-integer category id(s), first: [{bad!r}]")
            for s in SPLITS]


def category_name_empty(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """One class named "" or with no name, in every split."""
    k = data.draw(st.integers(0, len(ds.docs["train"]["categories"]) - 1), label="category")
    bad = data.draw(st.sampled_from(["", None, 3]), label="name")
    _in_every_split(ds, lambda c: c[k].update(name=bad))
    return [Expect(s, ANNOTATIONS_FILE, "categories[].name", f"1 category name(s) are not non-empty strings, "
                   f"first: [{bad!r}]") for s in SPLITS]


def categories_differ_between_splits(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """valid or test (not the train split the others are compared with) renames one class."""
    split = data.draw(st.sampled_from(SPLITS[1:]), label="split")
    cats = ds.docs[split]["categories"]
    cats[data.draw(st.integers(0, len(cats) - 1), label="category")]["name"] = "renamed"
    ds.write(split)
    return _json_problem(split, "categories", "categories differ from the train split's")


def split_without_images(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    ds.docs[split]["images"] = []
    ds.docs[split]["annotations"] = []
    ds.write(split)
    return _json_problem(split, "images", "split has no images")


def split_without_boxes(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    ds.docs[split]["annotations"] = []
    ds.write(split)
    return _json_problem(split, "annotations", "split has no boxes (AP is undefined)")


def split_folder_missing(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    for p in (ds.root / split).iterdir():
        p.unlink()
    (ds.root / split).rmdir()
    return _json_problem(split, "split", f"split folder {ds.root / split} is missing")


def annotation_file_missing(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    (ds.root / split / ANNOTATIONS_FILE).unlink()
    return _json_problem(split, "file", "annotation file is missing")


def annotation_file_not_json(ds: Dataset, data: st.DataObject) -> list[Expect]:
    """The annotation file cut short, or not text."""
    split = _pick_split(data)
    path = ds.root / split / ANNOTATIONS_FILE
    raw = path.read_bytes()
    path.write_bytes(data.draw(st.sampled_from([raw[:len(raw) // 2], raw[:-1], b"\xff\xfe{", b""]), label="bytes"))
    return _json_problem(split, "json", "unreadable or truncated JSON")


def annotation_file_not_an_object(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    doc = ds.docs[split]
    (ds.root / split / ANNOTATIONS_FILE).write_text(json.dumps(data.draw(st.sampled_from(
        [[doc], doc["annotations"], "coco", 3, None]), label="document")))
    return _json_problem(split, "json", "top level is not a JSON object")


def annotation_file_lacks_a_list(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    key = data.draw(st.sampled_from(["images", "annotations", "categories"]), label="key")
    if data.draw(st.booleans(), label="drop"):
        del ds.docs[split][key]
    else:
        ds.docs[split][key] = {"0": ds.docs[split][key][0]} if ds.docs[split][key] else {}
    ds.write(split)
    return _json_problem(split, key, f"missing or not a list: {key!r}")


def annotation_file_entry_not_an_object(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    key = data.draw(st.sampled_from(["images", "annotations", "categories"]), label="key")
    items = ds.docs[split][key]
    k = data.draw(st.integers(0, len(items)), label="position")
    items.insert(k, data.draw(st.sampled_from([7, "x", None, [1, 2]]), label="entry"))
    ds.write(split)
    return _json_problem(split, f"{key}[{k}]", "1 entr(y/ies) are not JSON objects")


def split_folder_is_a_link(ds: Dataset, data: st.DataObject) -> list[Expect]:
    split = _pick_split(data)
    real = ds.root.parent / f"real_{split}"
    (ds.root / split).rename(real)
    os.symlink(real, ds.root / split, target_is_directory=True)
    return _json_problem(split, "split", "is a symbolic link; links are not followed in dataset folders")


DEFECTS: dict[str, Injector] = {f.__name__: f for f in (
    box_leaves_the_image, box_not_positive, box_not_finite, box_outside_within_tolerance, box_not_four_numbers,
    area_inconsistent, area_not_a_number, unknown_category, unknown_image, duplicate_annotation_id,
    duplicate_image_id, duplicate_file_name, image_missing, image_size_differs, image_unreadable, image_truncated,
    image_file_name_unsafe, image_is_a_link, id_not_an_integer, id_past_64_bits, category_id_duplicated,
    category_id_not_an_integer, category_name_empty, categories_differ_between_splits, split_without_images,
    split_without_boxes, split_folder_missing, annotation_file_missing, annotation_file_not_json,
    annotation_file_not_an_object, annotation_file_lacks_a_list, annotation_file_entry_not_an_object,
    split_folder_is_a_link)}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
@settings(max_examples=6)
@given(spec=dataset_specs(), data=st.data())
def test_each_defect_is_refused_for_that_reason_only(defect: str, spec: Any, data: st.DataObject) -> None:
    """A valid dataset with one defect injected at a drawn place: refused, with exactly the problems the defect
    causes (split, file, field, message words), each carrying a fix, and nothing else."""
    with tempfile.TemporaryDirectory() as tmp:
        ds = write_dataset(Path(tmp) / "ds", spec)
        expected = DEFECTS[defect](ds, data)
        with pytest.raises(DatasetInvalid) as err:
            verify_dataset(ds.root)
    problems = err.value.problems
    assert len(problems) == len(expected), [str(p) for p in problems]
    for p, want in zip(problems, expected, strict=True):
        assert (p.split, p.file, p.field) == (want.split, want.file, want.field), str(p)
        assert want.words in p.message, (want.words, str(p))
        assert p.fix
        assert str(p) in str(err.value)


@pytest.mark.parametrize("bad", ["7", None])
def test_a_category_id_written_as_a_string_is_refused(tmp_path: Path, bad: Any) -> None:
    """Found by the defect property: such an id crashed verification with a TypeError (the splits' class lists
    were compared as sorted (id, name) pairs, and "7" < 0 cannot be ordered) instead of naming the id (fixed in
    6ca4877)."""
    ds = write_dataset(tmp_path / "ds", tiny_spec([1.0, 1.0, 4.0, 4.0]))
    _in_every_split(ds, lambda c: c.append({"id": bad, "name": "odd", "supercategory": "none"}))
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(ds.root)
    assert [(p.split, p.field) for p in err.value.problems] == [(s, "categories[].id") for s in SPLITS]
    assert all(f"1 non-integer category id(s), first: [{bad!r}]" in p.message for p in err.value.problems)
