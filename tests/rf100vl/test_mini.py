"""The embedded ``mini`` suite: deterministic, Roboflow-shaped, and each dataset keeps its promise."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bench_assets.rf100vl.datasets.mini import (
    ANNOTATIONS_FILE,
    MINI_DATASETS,
    MINI_SUITE,
    SPLITS,
    generate_mini_dataset,
)

ROBOFLOW_NAME = r"^img_\d{4}_(jpg|png)\.rf\.[0-9a-f]{16}\.(jpg|png)$"


@pytest.fixture(scope="module")
def suite_root(mini_raw: Path) -> Path:
    return mini_raw  # generated once per session in conftest.py


def _load(root: Path, name: str, split: str) -> dict[str, Any]:
    return json.loads((root / name / split / ANNOTATIONS_FILE).read_text(encoding="utf-8"))


def _boxes_per_image(coco: dict[str, Any]) -> dict[int, int]:
    counts = {image["id"]: 0 for image in coco["images"]}
    for annotation in coco["annotations"]:
        counts[annotation["image_id"]] += 1
    return counts


def _file_hashes(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_suite_lists_the_four_datasets_in_order() -> None:
    assert MINI_SUITE == ("mini-dense", "mini-shapes", "mini-tiny", "mini-large")
    assert set(MINI_DATASETS) == set(MINI_SUITE)
    for name, spec in MINI_DATASETS.items():
        assert spec.name == name
        assert set(spec.splits) == set(SPLITS)


def test_generation_is_byte_identical(suite_root: Path, tmp_path: Path) -> None:
    for name in MINI_SUITE:
        generate_mini_dataset(name, tmp_path / name)
    first, second = _file_hashes(suite_root), _file_hashes(tmp_path)
    assert first.keys() == second.keys()
    assert first == second


@pytest.mark.parametrize("name", MINI_SUITE)
def test_roboflow_layout(suite_root: Path, name: str) -> None:
    dest = suite_root / name
    assert (dest / "README.roboflow.txt").is_file()
    assert (dest / "README.dataset.txt").is_file()
    spec = MINI_DATASETS[name]
    for split in SPLITS:
        coco = _load(suite_root, name, split)
        assert list(coco) == ["info", "licenses", "categories", "images", "annotations"]
        assert coco["licenses"][0]["id"] == 1
        assert len(coco["images"]) == spec.splits[split]
        listed = {image["file_name"] for image in coco["images"]}
        on_disk = {p.name for p in (dest / split).iterdir() if p.name != ANNOTATIONS_FILE}
        assert listed == on_disk
        for image in coco["images"]:
            assert set(image) == {"id", "license", "file_name", "height", "width", "date_captured"}
            assert image["license"] == 1
            assert re.match(ROBOFLOW_NAME, image["file_name"])


@pytest.mark.parametrize("name", MINI_SUITE)
def test_category_zero_is_an_unused_placeholder(suite_root: Path, name: str) -> None:
    spec = MINI_DATASETS[name]
    for split in SPLITS:
        coco = _load(suite_root, name, split)
        categories = coco["categories"]
        assert categories[0] == {"id": 0, "name": name, "supercategory": "none"}
        assert [c["id"] for c in categories[1:]] == list(range(1, spec.num_classes + 1))
        assert all(c["supercategory"] == name for c in categories[1:])
        assert [c["name"] for c in categories[1:]] == list(spec.class_names)
        used = {a["category_id"] for a in coco["annotations"]}
        assert 0 not in used
        assert used <= set(range(1, spec.num_classes + 1))


@pytest.mark.parametrize("name", MINI_SUITE)
def test_ids_start_at_zero_in_every_split(suite_root: Path, name: str) -> None:
    for split in SPLITS:
        coco = _load(suite_root, name, split)
        assert [i["id"] for i in coco["images"]] == list(range(len(coco["images"])))
        assert [a["id"] for a in coco["annotations"]] == list(range(len(coco["annotations"])))
        assert coco["annotations"], "every split should carry boxes"


@pytest.mark.parametrize("name", MINI_SUITE)
def test_boxes_are_consistent_with_images(suite_root: Path, name: str) -> None:
    for split in SPLITS:
        coco = _load(suite_root, name, split)
        images = {image["id"]: image for image in coco["images"]}
        for image in images.values():
            with Image.open(suite_root / name / split / image["file_name"]) as opened:
                assert opened.size == (image["width"], image["height"])
        for annotation in coco["annotations"]:
            x, y, w, h = annotation["bbox"]
            assert all(isinstance(v, float) for v in annotation["bbox"])
            image = images[annotation["image_id"]]
            assert w > 0 and h > 0
            assert x >= 0 and y >= 0
            assert x + w <= image["width"] and y + h <= image["height"]
            assert annotation["area"] == w * h
            assert annotation["segmentation"] == []
            assert annotation["iscrowd"] == 0


def test_dense_has_at_least_40_boxes_on_every_image(suite_root: Path) -> None:
    for split in SPLITS:
        counts = _boxes_per_image(_load(suite_root, "mini-dense", split))
        assert min(counts.values()) >= 40
    assert MINI_DATASETS["mini-dense"].num_classes == 1


def test_shapes_uses_at_least_five_classes(suite_root: Path) -> None:
    spec = MINI_DATASETS["mini-shapes"]
    assert spec.num_classes >= 5
    # Distinct shape and colour per class is what makes the classes separable.
    assert len({c.shape for c in spec.classes}) == spec.num_classes
    assert len({c.color for c in spec.classes}) == spec.num_classes
    used = {a["category_id"] for a in _load(suite_root, "mini-shapes", "train")["annotations"]}
    assert used == set(range(1, spec.num_classes + 1))


def test_tiny_is_small_with_large_objects(suite_root: Path) -> None:
    spec = MINI_DATASETS["mini-tiny"]
    assert spec.splits["train"] <= 30
    assert spec.num_classes == 2
    side = min(spec.width, spec.height)
    for split in SPLITS:
        for annotation in _load(suite_root, "mini-tiny", split)["annotations"]:
            _, _, w, h = annotation["bbox"]
            assert 0.2 * side <= max(w, h) <= 0.5 * side


def test_large_images_are_at_least_1_5_megapixels(suite_root: Path) -> None:
    assert 2 <= MINI_DATASETS["mini-large"].num_classes <= 3
    for split in SPLITS:
        for image in _load(suite_root, "mini-large", split)["images"]:
            with Image.open(suite_root / "mini-large" / split / image["file_name"]) as opened:
                assert opened.format == "JPEG"
                assert opened.width * opened.height >= 1_500_000


def test_suite_is_small(suite_root: Path) -> None:
    total = sum(p.stat().st_size for p in suite_root.rglob("*") if p.is_file())
    assert total < 25 * 1024 * 1024


def test_unknown_name_is_a_clear_key_error(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="mini-nope.*mini-dense"):
        generate_mini_dataset("mini-nope", tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_refuses_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError):
        generate_mini_dataset("mini-tiny", tmp_path)


def test_accepts_existing_empty_destination(tmp_path: Path) -> None:
    dest = tmp_path / "empty"
    dest.mkdir()
    assert generate_mini_dataset("mini-tiny", dest) == dest
    assert (dest / "train" / ANNOTATIONS_FILE).is_file()
