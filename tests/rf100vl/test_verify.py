"""Verification of the committed broken corpus: each defect gets its own clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.rf100vl.datasets.verify import BBOX_TOLERANCE_PX, DatasetInvalid, file_name_problem, verify_dataset
from tests.conftest import CORPUS, broken

# case -> (split, field named in the error, a phrase of the message)
EXPECTED = {
    "bad_json": ("valid", "json", "unreadable or truncated JSON"),
    "missing_image": ("train", "images[].file_name", "missing"),
    "truncated_image": ("test", "image", "truncated"),
    "unreadable_image": ("train", "image", "not a readable image"),
    "bbox_outside": ("train", "annotations[].bbox", f"beyond the image by more than {BBOX_TOLERANCE_PX:g} px"),
    "bbox_nonpositive": ("valid", "annotations[].bbox", "non-positive width or height"),
    "unknown_category": ("train", "annotations[].category_id", "category ids not in categories"),
    "duplicate_image_id": ("train", "images[].id", "duplicate"),
    "duplicate_annotation_id": ("test", "annotations[].id", "duplicate"),
    "empty_split": ("test", "images", "no images"),
    "area_mismatch": ("train", "annotations[].area", "inconsistent with bbox"),
    "unknown_image_ref": ("train", "annotations[].image_id", "unknown image ids"),
    "file_name_traversal": ("train", "images[].file_name", "'../../../../victim.png' climbs out of its split"),
    "file_name_absolute": ("train", "images[].file_name", "'/etc/passwd' is an absolute path"),
    "file_name_other_split": ("train", "images[].file_name", "climbs out of its split folder with '..'"),
    "file_name_subdir": ("train", "images[].file_name", "is in a subdirectory"),
    "deep_json": ("train", "json", "nested too deeply"),
    "bbox_string": ("train", "annotations[].bbox", "['4', '4', '16', '16']"),
    "image_id_string": ("train", "images[].id", "not JSON integers (str), first: ['1']"),
    "image_id_float": ("train", "annotations[].image_id", "not JSON integers (float), first: [1.0]"),
    "image_bomb": ("train", "image", "declares an implausibly large image"),
}
LINK_EXPECTED = {
    "dir_symlink": ("train", "images[].file_name", "is in a subdirectory"),
    "image_symlink": ("train", "images[].file_name", "symbolic links"),
    "split_symlink": ("test", "split", "is a symbolic link"),
}


def test_every_corpus_case_is_covered() -> None:
    cases = {p.name for p in (CORPUS / "broken").iterdir() if p.is_dir()}
    assert set(EXPECTED) == cases - {"valid_base", "bbox_slightly_outside"}
    assert set(LINK_EXPECTED) == {p.name for p in (CORPUS / "links").iterdir()}


@pytest.mark.parametrize("case", sorted(EXPECTED) + [f"links/{c}" for c in sorted(LINK_EXPECTED)])
def test_broken_case_names_split_field_and_fix(case: str) -> None:
    folder, name = case.split("/") if "/" in case else ("broken", case)
    split, field, phrase = {**EXPECTED, **LINK_EXPECTED}[name]
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(CORPUS / folder / name)
    problems = err.value.problems
    assert len(problems) == 1, [str(p) for p in problems]  # one defect, one error: no cascades
    p = problems[0]
    assert (p.split, p.field) == (split, field)
    assert phrase in p.message
    assert p.fix
    text = str(err.value)
    assert f"{split}/" in text and "fix:" in text


def test_valid_base_is_normalised_and_counted() -> None:
    v = verify_dataset(CORPUS / "broken" / "valid_base")
    raw = json.loads((CORPUS / "broken" / "valid_base" / "train" / "_annotations.coco.json").read_text())
    assert any(c["id"] == 0 for c in raw["categories"])  # Roboflow's placeholder is in the raw file
    assert min(a["id"] for a in raw["annotations"]) == 0
    assert len(v.categories) == len(raw["categories"]) - 1
    assert [c["id"] for c in v.categories] == list(range(len(v.categories)))
    assert v.normalisations.dropped_placeholder_categories
    for split, doc in v.coco.items():
        ids = [a["id"] for a in doc["annotations"]]
        assert ids == list(range(1, len(ids) + 1)), split
        assert v.normalisations.annotation_id_zero[split] == 1
    assert v.normalisations.total() > 0


def test_slightly_outside_box_is_clipped_and_counted() -> None:
    v = verify_dataset(CORPUS / "broken" / "bbox_slightly_outside")
    assert sum(v.normalisations.boxes_clipped.values()) == 1
    for doc in v.coco.values():
        by_id = {i["id"]: i for i in doc["images"]}
        for a in doc["annotations"]:
            x, y, w, h = a["bbox"]
            img = by_id[a["image_id"]]
            assert x >= 0 and y >= 0 and x + w <= img["width"] and y + h <= img["height"]
            assert a["area"] == pytest.approx(w * h)


def test_category_ids_remapped_consistently(tmp_path: Path) -> None:
    """Dropping the placeholder shifts ids; every annotation must follow its class, not its number."""
    ds = broken("valid_base", tmp_path)
    raw = json.loads((ds / "train" / "_annotations.coco.json").read_text())
    name_of_raw = {c["id"]: c["name"] for c in raw["categories"]}
    v = verify_dataset(ds)
    name_of_new = {c["id"]: c["name"] for c in v.categories}
    raw_names = sorted(name_of_raw[a["category_id"]] for a in raw["annotations"])
    new_names = sorted(name_of_new[a["category_id"]] for a in v.coco["train"]["annotations"])
    assert raw_names == new_names


def test_many_problems_are_listed_not_only_the_first(tmp_path: Path) -> None:
    ds = broken("valid_base", tmp_path)
    path = ds / "train" / "_annotations.coco.json"
    doc = json.loads(path.read_text())
    doc["annotations"][0]["category_id"] = 77
    doc["annotations"][-1]["bbox"][2] = -4
    path.write_text(json.dumps(doc))
    (ds / "valid" / doc["images"][0]["file_name"]).unlink(missing_ok=True)
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(ds)
    fields = {p.field for p in err.value.problems}
    assert {"annotations[].category_id", "annotations[].bbox"} <= fields


def test_image_size_mismatch_is_an_error(tmp_path: Path) -> None:
    ds = broken("valid_base", tmp_path)
    path = ds / "valid" / "_annotations.coco.json"
    doc = json.loads(path.read_text())
    doc["images"][0]["width"] += 100
    path.write_text(json.dumps(doc))
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(ds)
    assert "width/height" in err.value.problems[0].field


def test_mini_datasets_verify_cleanly(mini_raw: Path) -> None:
    for ds in sorted(mini_raw.iterdir()):
        v = verify_dataset(ds)
        assert v.normalisations.dropped_placeholder_categories == [ds.name]
        assert all(st.images > 0 and st.annotations > 0 for st in v.stats.values())


@pytest.mark.parametrize("name", ["../x.png", "/abs.png", "C:\\x.png", "a/b.png", "a\\b.png", "", "..", ".",
                                  "_annotations.coco.json", "x\x00.png", 3, None])
def test_file_name_rules_refuse_everything_but_a_bare_name(name: object) -> None:
    assert file_name_problem(name) is not None


@pytest.mark.parametrize("name", ["img.png", "img_0001_png.rf.abc.jpg", "..hidden.png", "a b (1).JPG", "x..y.png"])
def test_file_name_rules_accept_bare_names(name: str) -> None:
    assert file_name_problem(name) is None


def test_absolute_file_name_never_reads_the_outside_file(tmp_path: Path) -> None:
    """The refusal comes before the filesystem: an outside image that exists and is valid is still refused."""
    ds = broken("valid_base", tmp_path)
    outside = tmp_path / "outside.png"
    img = json.loads((ds / "train" / "_annotations.coco.json").read_text())["images"][0]
    (ds / "train" / img["file_name"]).rename(outside)
    ann = ds / "train" / "_annotations.coco.json"
    ann.write_text(ann.read_text().replace(img["file_name"], str(outside)))
    with pytest.raises(DatasetInvalid, match="is an absolute path"):
        verify_dataset(ds)


def test_an_id_too_large_for_64_bits_is_refused_at_import(tmp_path: Path) -> None:
    """json.loads keeps 10**20 as an int, but the backends (and orjson, reading predictions) cannot."""
    ds = broken("valid_base", tmp_path)
    ann = ds / "train" / "_annotations.coco.json"
    doc = json.loads(ann.read_text())
    doc["images"][1]["id"] = 10**20
    for a in doc["annotations"]:
        if a["image_id"] == 1:
            a["image_id"] = 10**20
    ann.write_text(json.dumps(doc))
    with pytest.raises(DatasetInvalid) as err:
        verify_dataset(ds)
    fields = {p.field for p in err.value.problems}
    assert fields == {"images[].id", "annotations[].image_id"}
    assert "do not fit a 64-bit integer, first: [100000000000000000000]" in str(err.value)
