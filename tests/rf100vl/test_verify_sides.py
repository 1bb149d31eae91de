"""Dataset verification refuses a box that leaves its image on each of the four sides (left: x < 0, top: y < 0,
right: x + w > width, bottom: y + h > height) by more than BBOX_TOLERANCE_PX, naming the annotations file and
the box; a box touching an edge exactly is accepted unchanged, one within the tolerance is clipped and counted.
The corpus case `bbox_outside` overflows on the right only (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.rf100vl.datasets.verify import ANNOTATIONS_FILE, BBOX_TOLERANCE_PX, DatasetInvalid, verify_dataset
from tests.conftest import broken

SIZE = 48  # every image of the corpus' valid_base is 48 x 48
OVER = BBOX_TOLERANCE_PX + 1.0  # clearly past the tolerance

# side -> a box (on a 48 x 48 image) that leaves it on that side only, by OVER px
LEAVING = {
    "left": [-OVER, 10.0, 16.0, 16.0],
    "top": [10.0, -OVER, 16.0, 16.0],
    "right": [SIZE - 16.0 + OVER, 10.0, 16.0, 16.0],
    "bottom": [10.0, SIZE - 16.0 + OVER, 16.0, 16.0],
}
# side -> a box touching that edge exactly
TOUCHING = {
    "left": [0.0, 10.0, 16.0, 16.0],
    "top": [10.0, 0.0, 16.0, 16.0],
    "right": [SIZE - 16.0, 10.0, 16.0, 16.0],
    "bottom": [10.0, SIZE - 16.0, 16.0, 16.0],
}


def _with_box(tmp_path: Path, split: str, bbox: list[float]) -> tuple[Path, dict]:
    """A private valid_base whose first annotation of `split` is `bbox` (area consistent); returns it and the
    annotation as written."""
    ds = broken("valid_base", tmp_path)
    path = ds / split / ANNOTATIONS_FILE
    doc = json.loads(path.read_text())
    ann = doc["annotations"][0]
    ann["bbox"] = bbox
    ann["area"] = bbox[2] * bbox[3]
    path.write_text(json.dumps(doc))
    return ds, ann


@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("side", sorted(LEAVING))
def test_a_box_leaving_the_image_is_refused_on_every_side(tmp_path: Path, side: str, split: str) -> None:
    ds, ann = _with_box(tmp_path, split, LEAVING[side])
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(ds)
    problems = err.value.problems
    assert len(problems) == 1, [str(p) for p in problems]
    p = problems[0]
    assert (p.split, p.file, p.field) == (split, ANNOTATIONS_FILE, "annotations[].bbox")
    assert f"beyond the image by more than {BBOX_TOLERANCE_PX:g} px" in p.message
    assert f"id {ann['id']} (image {ann['image_id']}) bbox {LEAVING[side]}" in p.message
    assert p.fix
    assert f"{split}/{ANNOTATIONS_FILE}: annotations[].bbox" in str(err.value)


@pytest.mark.parametrize("side", sorted(LEAVING))
def test_every_side_is_judged_in_one_split(tmp_path: Path, side: str) -> None:
    """All four offending boxes in one split: each is counted, none hides another."""
    ds = broken("valid_base", tmp_path)
    path = ds / "train" / ANNOTATIONS_FILE
    doc = json.loads(path.read_text())
    base = doc["annotations"][0]
    doc["annotations"] = [dict(base, id=100 + i, bbox=b, area=b[2] * b[3])
                          for i, b in enumerate(LEAVING[s] for s in sorted(LEAVING))]
    path.write_text(json.dumps(doc))
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(ds)
    (p,) = err.value.problems
    assert p.message.startswith("4 annotation(s) reach beyond the image")
    assert f"bbox {LEAVING[side]}" in p.message or side == sorted(LEAVING)[-1]  # the message shows the first 3


@pytest.mark.parametrize("side", sorted(TOUCHING))
def test_a_box_touching_the_edge_exactly_is_accepted_unchanged(tmp_path: Path, side: str) -> None:
    ds, ann = _with_box(tmp_path, "train", TOUCHING[side])
    v = verify_dataset(ds)
    assert v.normalisations.boxes_clipped == {"train": 0, "valid": 0, "test": 0}
    boxes = sorted(a["bbox"] for a in v.coco["train"]["annotations"])
    assert TOUCHING[side] in boxes


@pytest.mark.parametrize("side", sorted(LEAVING))
def test_a_box_within_the_tolerance_is_clipped_to_the_edge(tmp_path: Path, side: str) -> None:
    """Past the edge by exactly BBOX_TOLERANCE_PX: accepted, clipped to the image and counted."""
    box = {
        "left": [-BBOX_TOLERANCE_PX, 10.0, 16.0, 16.0],
        "top": [10.0, -BBOX_TOLERANCE_PX, 16.0, 16.0],
        "right": [SIZE - 16.0 + BBOX_TOLERANCE_PX, 10.0, 16.0, 16.0],
        "bottom": [10.0, SIZE - 16.0 + BBOX_TOLERANCE_PX, 16.0, 16.0],
    }[side]
    ds, _ = _with_box(tmp_path, "train", box)
    v = verify_dataset(ds)
    assert v.normalisations.boxes_clipped["train"] == 1
    clipped = {"left": [0.0, 10.0, 16.0 - BBOX_TOLERANCE_PX, 16.0],
               "top": [10.0, 0.0, 16.0, 16.0 - BBOX_TOLERANCE_PX],
               "right": [SIZE - 16.0 + BBOX_TOLERANCE_PX, 10.0, 16.0 - BBOX_TOLERANCE_PX, 16.0],
               "bottom": [10.0, SIZE - 16.0 + BBOX_TOLERANCE_PX, 16.0, 16.0 - BBOX_TOLERANCE_PX]}[side]
    got = [a for a in v.coco["train"]["annotations"] if a["bbox"] == pytest.approx(clipped)]
    assert len(got) == 1 and got[0]["area"] == pytest.approx(clipped[2] * clipped[3])


def _non_square(tmp_path: Path, width: int, height: int, bbox: list[float]) -> tuple[Path, dict]:
    """valid_base with its first train image replaced by a `width` x `height` PNG (JSON follows) whose first
    annotation is `bbox`: on a non-square image a check that mixes up width and height shows."""
    from PIL import Image

    ds, ann = _with_box(tmp_path, "train", bbox)
    path = ds / "train" / ANNOTATIONS_FILE
    doc = json.loads(path.read_text())
    img = next(i for i in doc["images"] if i["id"] == ann["image_id"])
    Image.new("RGB", (width, height), (90, 120, 150)).save(ds / "train" / img["file_name"], format="PNG")
    img.update(width=width, height=height)
    # the image's other boxes must fit the new size
    for a in doc["annotations"]:
        if a["image_id"] == img["id"] and a["id"] != ann["id"]:
            a["bbox"], a["area"] = [1.0, 1.0, 4.0, 4.0], 16.0
    path.write_text(json.dumps(doc))
    return ds, ann


@pytest.mark.parametrize(("width", "height", "bbox"), [
    (64, 32, [10.0, 20.0, 10.0, 20.0]),   # bottom 40 > height 32 (but < width 64)
    (32, 64, [20.0, 10.0, 20.0, 10.0]),   # right 40 > width 32 (but < height 64)
])
def test_a_non_square_image_is_judged_on_its_own_width_and_height(tmp_path: Path, width: int, height: int,
                                                                 bbox: list[float]) -> None:
    ds, ann = _non_square(tmp_path, width, height, bbox)
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(ds)
    (p,) = err.value.problems
    assert p.field == "annotations[].bbox" and f"bbox {bbox}" in p.message


@pytest.mark.parametrize(("width", "height", "bbox"), [
    (32, 64, [4.0, 40.0, 20.0, 20.0]),    # y 40 > width 32, inside the 64 px height
    (64, 32, [40.0, 4.0, 20.0, 20.0]),    # x 40 > height 32, inside the 64 px width
    (32, 64, [12.0, 44.0, 20.0, 20.0]),   # touching the bottom-right corner exactly
])
def test_a_box_inside_a_non_square_image_is_kept_unchanged(tmp_path: Path, width: int, height: int,
                                                           bbox: list[float]) -> None:
    ds, _ = _non_square(tmp_path, width, height, bbox)
    v = verify_dataset(ds)
    assert v.normalisations.boxes_clipped["train"] == 0
    assert bbox in [a["bbox"] for a in v.coco["train"]["annotations"]]
