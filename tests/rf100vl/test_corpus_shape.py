"""Guard the committed broken-dataset corpus: each case differs from valid_base by its one defect."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PIL import Image

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
BROKEN = CORPUS / "broken"
LINKS = CORPUS / "links"
TARS = CORPUS / "tars"
ANN = "_annotations.coco.json"
SPLITS = ("train", "valid", "test")


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_corpus = _load_generator()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _coco(case: str, split: str) -> dict[str, Any]:
    return json.loads((BROKEN / case / split / ANN).read_text(encoding="utf-8"))


def _diff(case: str) -> tuple[set[str], set[str], set[str]]:
    """(changed, removed, added) relative paths of ``case`` versus valid_base."""
    base, other = _files(BROKEN / "valid_base"), _files(BROKEN / case)
    changed = {p for p in base.keys() & other.keys() if base[p] != other[p]}
    return changed, base.keys() - other.keys(), other.keys() - base.keys()


def _image_name(split: str, index: int) -> str:
    return _coco("valid_base", split)["images"][index]["file_name"]


def _changed_annotations(case: str, split: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    base, other = _coco("valid_base", split), _coco(case, split)
    assert {k: v for k, v in base.items() if k != "annotations"} == {
        k: v for k, v in other.items() if k != "annotations"
    }
    assert len(base["annotations"]) == len(other["annotations"])
    return [(a, b) for a, b in zip(base["annotations"], other["annotations"], strict=True) if a != b]


def _only_json_changed(case: str, split: str) -> None:
    assert _diff(case) == ({f"{split}/{ANN}"}, set(), set())


def _links(root: Path) -> dict[str, bytes]:
    """Files and links (as their targets) of a tree, without following links."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            if p.is_symlink():
                out[p.relative_to(root).as_posix()] = b"link -> " + os.readlink(p).encode()
            elif p.is_file():
                out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def _generated_tree(root: Path) -> dict[str, bytes]:
    tree = {f"{sub}/{k}": v for sub in ("broken", "tars") for k, v in _files(root / sub).items()}
    tree |= {f"links/{k}": v for k, v in _links(root / "links").items()}
    return tree | {"README.md": (root / "README.md").read_bytes()}


def test_committed_corpus_matches_the_generator(tmp_path: Path) -> None:
    make_corpus.make_corpus(tmp_path)
    committed, regenerated = _generated_tree(CORPUS), _generated_tree(tmp_path)
    hint = "the corpus is out of date or hand-edited; rerun python tests/corpus/make_corpus.py"
    assert sorted(committed) == sorted(regenerated), hint
    assert committed == regenerated, hint


def test_every_case_is_present_and_documented() -> None:
    assert sorted(p.name for p in BROKEN.iterdir()) == sorted(make_corpus.CASES)
    assert sorted(p.name for p in TARS.iterdir()) == sorted(make_corpus.TAR_CASES)
    assert sorted(p.name for p in LINKS.iterdir()) == sorted(make_corpus.LINK_CASES)
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    for name in [*make_corpus.CASES, *make_corpus.LINK_CASES, *make_corpus.TAR_CASES]:
        assert f"`{name}`" in readme


def test_corpus_is_tiny() -> None:
    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert total < 400 * 1024


@pytest.mark.parametrize("case", ["valid_base", "bbox_slightly_outside"])
def test_valid_cases_are_well_formed(case: str) -> None:
    root = BROKEN / case
    assert (root / "README.roboflow.txt").is_file() and (root / "README.dataset.txt").is_file()
    for split in SPLITS:
        coco = _coco(case, split)
        assert coco["categories"][0] == {"id": 0, "name": "corpus-base", "supercategory": "none"}
        assert [c["id"] for c in coco["categories"]] == [0, 1, 2]
        assert [i["id"] for i in coco["images"]] == [0, 1]
        assert [a["id"] for a in coco["annotations"]] == list(range(len(coco["annotations"])))
        images = {i["id"]: i for i in coco["images"]}
        for image in images.values():
            with Image.open(root / split / image["file_name"]) as opened:
                assert opened.format == "PNG"
                assert opened.size == (image["width"], image["height"]) == (48, 48)
        for a in coco["annotations"]:
            x, y, w, h = a["bbox"]
            assert a["category_id"] in (1, 2) and a["image_id"] in images
            assert w > 0 and h > 0 and x >= 0 and y >= 0 and y + h <= 48
            assert a["area"] == w * h
            assert x + w <= 48 + (0.5 if case == "bbox_slightly_outside" else 0)


def test_valid_base_has_one_or_two_boxes_per_image() -> None:
    for split in SPLITS:
        coco = _coco("valid_base", split)
        per_image = [sum(a["image_id"] == i["id"] for a in coco["annotations"]) for i in coco["images"]]
        assert all(1 <= n <= 2 for n in per_image)


def test_bbox_slightly_outside() -> None:
    _only_json_changed("bbox_slightly_outside", "train")
    [(_, after)] = _changed_annotations("bbox_slightly_outside", "train")
    x, _, w, _ = after["bbox"]
    assert x + w == 48.5


def test_bad_json() -> None:
    _only_json_changed("bad_json", "valid")
    text = (BROKEN / "bad_json" / "valid" / ANN).read_text(encoding="utf-8")
    base = (BROKEN / "valid_base" / "valid" / ANN).read_text(encoding="utf-8")
    assert base.startswith(text) and 0 < len(text) < len(base)
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_missing_image() -> None:
    assert _diff("missing_image") == (set(), {f"train/{_image_name('train', 1)}"}, set())
    listed = {i["file_name"] for i in _coco("missing_image", "train")["images"]}
    assert _image_name("train", 1) in listed


def test_truncated_image() -> None:
    path = f"test/{_image_name('test', 0)}"
    assert _diff("truncated_image") == ({path}, set(), set())
    base, cut = (BROKEN / "valid_base" / path).read_bytes(), (BROKEN / "truncated_image" / path).read_bytes()
    assert cut == base[: len(base) // 2]
    with pytest.raises(OSError), Image.open(io.BytesIO(cut)) as opened:
        opened.load()


def test_unreadable_image() -> None:
    path = f"train/{_image_name('train', 0)}"
    assert _diff("unreadable_image") == ({path}, set(), set())
    data = (BROKEN / "unreadable_image" / path).read_bytes()
    assert not data.startswith(b"\x89PNG")
    with pytest.raises(Image.UnidentifiedImageError):
        Image.open(io.BytesIO(data))


def test_bbox_outside() -> None:
    _only_json_changed("bbox_outside", "train")
    [(_, after)] = _changed_annotations("bbox_outside", "train")
    x, _, w, h = after["bbox"]
    assert x + w == 48 + 20
    assert after["area"] == w * h


def test_bbox_nonpositive() -> None:
    _only_json_changed("bbox_nonpositive", "valid")
    [(_, after)] = _changed_annotations("bbox_nonpositive", "valid")
    assert after["bbox"][2] <= 0
    assert after["area"] == after["bbox"][2] * after["bbox"][3]


def test_unknown_category() -> None:
    _only_json_changed("unknown_category", "train")
    [(before, after)] = _changed_annotations("unknown_category", "train")
    assert after == {**before, "category_id": 99}
    assert 99 not in {c["id"] for c in _coco("unknown_category", "train")["categories"]}


def test_duplicate_image_id() -> None:
    _only_json_changed("duplicate_image_id", "train")
    coco = _coco("duplicate_image_id", "train")
    assert [i["id"] for i in coco["images"]] == [0, 0]
    assert {a["image_id"] for a in coco["annotations"]} == {0}
    assert [a["id"] for a in coco["annotations"]] == list(range(len(coco["annotations"])))


def test_duplicate_annotation_id() -> None:
    _only_json_changed("duplicate_annotation_id", "test")
    [(before, after)] = _changed_annotations("duplicate_annotation_id", "test")
    assert after == {**before, "id": 0}
    ids = [a["id"] for a in _coco("duplicate_annotation_id", "test")["annotations"]]
    assert len(ids) != len(set(ids))


def test_empty_split() -> None:
    images = {f"test/{_image_name('test', i)}" for i in (0, 1)}
    assert _diff("empty_split") == ({f"test/{ANN}"}, images, set())
    coco = _coco("empty_split", "test")
    assert coco["images"] == [] and coco["annotations"] == []
    assert coco["categories"] == _coco("valid_base", "test")["categories"]


def test_area_mismatch() -> None:
    _only_json_changed("area_mismatch", "train")
    [(before, after)] = _changed_annotations("area_mismatch", "train")
    assert after["bbox"] == before["bbox"]
    assert after["area"] == 10 * after["bbox"][2] * after["bbox"][3]


def test_unknown_image_ref() -> None:
    _only_json_changed("unknown_image_ref", "train")
    [(before, after)] = _changed_annotations("unknown_image_ref", "train")
    assert after == {**before, "image_id": 99}
    assert 99 not in {i["id"] for i in _coco("unknown_image_ref", "train")["images"]}


# ---------------------------------------------------------------- tars


def _members(name: str) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(TARS / name) as archive:
        return {m.name: m for m in archive.getmembers()}


def _good_members() -> dict[str, tarfile.TarInfo]:
    return _members("good.tar")


def test_good_tar_holds_valid_base_under_good() -> None:
    base = _files(BROKEN / "valid_base")
    with tarfile.open(TARS / "good.tar") as archive:
        files = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}
        names = [m.name for m in archive.getmembers()]
    assert files == {f"good/{k}": v for k, v in base.items()}
    assert names == sorted(names)
    for member in _good_members().values():
        assert member.mtime == make_corpus.TAR_MTIME and member.uid == member.gid == 0
        assert member.isfile() or member.isdir()


def test_good_macos_tar_adds_only_junk() -> None:
    extra = _members("good_macos.tar").keys() - _good_members().keys()
    assert extra == {
        "__MACOSX",
        "__MACOSX/good",
        "__MACOSX/good/._x",
        "good/.DS_Store",
        "good/train/._img.png",
    }


def test_dotdot_tar() -> None:
    members = _members("dotdot.tar")
    assert members.keys() - _good_members().keys() == {"../escape.txt"}
    assert members["../escape.txt"].isfile()


def test_absolute_tar() -> None:
    members = _members("absolute.tar")
    assert members.keys() - _good_members().keys() == {"/tmp/abs_escape.txt"}
    assert members["/tmp/abs_escape.txt"].isfile()


def test_symlink_tar() -> None:
    members = _members("symlink.tar")
    assert members.keys() - _good_members().keys() == {"good/train/link.png"}
    link = members["good/train/link.png"]
    assert link.issym() and link.linkname == "/etc/passwd"
