"""Edge cases of bench_assets/rf100vl/datasets/verify.py that kill mutants the other tests let survive (issue 15,
docs/testing.md "Mutation testing")."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path

import pytest

from bench_assets.rf100vl.datasets import verify


def test_normalisations_total_adds_every_counted_kind_but_annotation_id_zero() -> None:
    n = verify.Normalisations(dropped_placeholder_categories=["cells"], category_ids_remapped=2,
                              annotation_ids_renumbered={"train": 3, "test": 4}, annotation_id_zero={"train": 100},
                              boxes_clipped={"valid": 5}, areas_filled={"train": 7, "valid": 11})
    assert n.total() == 1 + 2 + 7 + 5 + 18
    assert verify.Normalisations().total() == 0


def test_the_summary_of_a_verified_dataset() -> None:
    st = verify.SplitStats(images=2, annotations=3, boxes_per_image_mean=1.5, boxes_per_image_max=2,
                           images_without_boxes=0, classes_present=1, megapixels_mean=0.5, megapixels_max=1.0,
                           image_bytes=9)
    n = verify.Normalisations(category_ids_remapped=1)
    ds = verify.VerifiedDataset(Path("/x"), [{"id": 0, "name": "a"}, {"id": 1, "name": "b"}], {}, {"test": st}, n)
    assert ds.summary() == {"classes": ["a", "b"], "splits": {"test": asdict(st)}, "normalisations": asdict(n)}


def test_a_placeholder_is_a_boxless_category_named_as_a_supercategory_or_roboflows_none_zero() -> None:
    cats = [{"id": 5, "name": "animals", "supercategory": "none"},
            {"id": 1, "name": "cat", "supercategory": "animals"},
            {"id": 2, "name": "dog", "supercategory": "animals"},
            {"id": 0, "name": "x", "supercategory": "none"}]
    assert verify._find_placeholders(cats, Counter({1: 4, 2: 1})) == {5, 0}
    # the same categories with boxes are real classes
    assert verify._find_placeholders(cats, Counter({5: 1, 0: 1, 1: 1})) == set()
    # a boxless class is kept unless it names a supercategory (or is Roboflow's 0 / "none")
    assert verify._find_placeholders([{"id": 3, "name": "none"}], Counter()) == set()


def test_a_boxless_none_supercategory_class_is_kept_unless_its_id_is_zero() -> None:
    # Roboflow's placeholder is category 0 with supercategory "none"; another boxless class under "none" is a real
    # (empty) class, and category 0 under a real supercategory is one too.
    cats = [{"id": 3, "name": "zebra", "supercategory": "none"}, {"id": 0, "name": "okapi", "supercategory": "zoo"},
            {"id": 1, "name": "cat", "supercategory": "animals"}]
    assert verify._find_placeholders(cats, Counter({1: 2})) == set()


def test_the_category_key_pairs_id_and_name_in_a_fixed_order() -> None:
    assert verify._category_key([{"id": 2, "name": "a"}, {"id": 1, "name": "b"}]) == [(1, "b"), (2, "a")]
    # the same names under other ids are another class list
    assert (verify._category_key([{"id": 0, "name": "a"}, {"id": 1, "name": "b"}])
            != verify._category_key([{"id": 1, "name": "a"}, {"id": 0, "name": "b"}]))


def _png(tmp: Path, name: str = "im.png", size: tuple[int, int] = (64, 48)) -> Path:
    from PIL import Image

    path = tmp / name
    noise = bytes((i * 7919) % 251 for i in range(size[0] * size[1] * 3))  # incompressible enough for a long IDAT
    Image.frombytes("RGB", size, noise).save(path)
    return path


def _corrupt_idat(path: Path) -> None:
    """Flip bytes inside the PNG's pixel data; its header and IEND chunk stay intact."""
    data = bytearray(path.read_bytes())
    start = data.index(b"IDAT") + 4
    for i in range(start + 20, start + 60):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_png_with_corrupt_pixels_is_read_only_by_a_deep_verification(tmp_path: Path) -> None:
    path = _png(tmp_path)
    _corrupt_idat(path)
    with open(path, "rb") as fh:
        assert verify._image_size(fh, deep=False) == (64, 48)  # the fast pass reads headers and the end marker
    with open(path, "rb") as fh:
        reason = verify._image_size(fh, deep=True)
    assert isinstance(reason, str) and reason.startswith("not a readable image"), reason


def test_an_image_in_another_format_is_always_decoded(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "im.gif"
    Image.new("P", (40, 30), 3).save(path)
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[: len(data) - 12]))  # cut inside the image data
    with open(path, "rb") as fh:
        reason = verify._image_size(fh, deep=False)
    assert isinstance(reason, str) and reason.startswith("not a readable image"), reason
    good = _png(tmp_path, "ok.png")
    with open(good, "rb") as fh:
        assert verify._image_size(fh, deep=True) == (64, 48)


def test_split_stats_are_exact_with_their_rounding() -> None:
    import numpy as np

    images = [{"id": 1, "width": 1000, "height": 500}, {"id": 2, "width": 333, "height": 333},
              {"id": 3, "width": 7, "height": 11}]
    annotations = [{"id": 1, "image_id": 1, "category_id": 4}, {"id": 2, "image_id": 2, "category_id": 4},
                   {"id": 3, "image_id": 1, "category_id": 9}]
    checked = {"images": images, "annotations": annotations, "image_bytes": 1234,
               "boxes": np.zeros((3, 4)), "clipped": np.zeros(3, bool), "area_missing": np.zeros(3, bool)}
    assert verify._split_stats(checked) == verify.SplitStats(
        images=3, annotations=3, boxes_per_image_mean=1.0, boxes_per_image_max=2, images_without_boxes=1,
        classes_present=2,
        megapixels_mean=0.2037,  # (0.5 + 0.110889 + 0.000077) / 3 = 0.203655 at four decimals
        megapixels_max=0.5, image_bytes=1234)
    two = {**checked, "annotations": annotations[:2]}  # 2 boxes over 3 images: 0.667 at three decimals
    stats = verify._split_stats(two)
    assert stats.boxes_per_image_mean == 0.667 and stats.megapixels_mean == 0.2037
    odd = {**checked, "images": [{"id": 1, "width": 1234, "height": 567}]}  # 0.699678 MP -> 0.6997
    assert verify._split_stats(odd).megapixels_max == 0.6997 == verify._split_stats(odd).megapixels_mean


def test_normalising_a_split_renumbers_fills_and_keeps_the_header() -> None:
    import numpy as np

    annotations = [{"id": 1, "image_id": 1, "category_id": 7, "bbox": [0, 0, 2, 2], "area": 4.0},
                   {"id": 9, "image_id": 1, "category_id": 3, "bbox": [1, 1, 3, 3], "iscrowd": 1},
                   {"id": 0, "image_id": 2, "category_id": 7, "bbox": [5, 5, 9, 9], "area": 81.0}]
    boxes = np.array([[0, 0, 2, 2], [1, 1, 3, 3], [5, 5, 4, 4]], dtype=np.float64)  # the third clipped
    checked = {"images": [{"id": 1}, {"id": 2}], "annotations": annotations, "boxes": boxes,
               "clipped": np.array([False, False, True]), "area_missing": np.array([False, True, False]),
               "image_bytes": 0, "doc": {"info": {"year": 2024}, "licenses": [{"id": 1}]}}
    cats = [{"id": 0, "name": "b", "supercategory": "none"}, {"id": 1, "name": "a", "supercategory": "none"}]
    norm = verify.Normalisations()
    out = verify._normalise_split("valid", checked, {3: 0, 7: 1}, cats, norm)
    assert out == {"info": {"year": 2024}, "licenses": [{"id": 1}], "categories": cats, "images": checked["images"],
                   "annotations": [
                       {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0.0, 0.0, 2.0, 2.0], "area": 4.0,
                        "iscrowd": 0},
                       {"id": 2, "image_id": 1, "category_id": 0, "bbox": [1.0, 1.0, 3.0, 3.0], "iscrowd": 1,
                        "area": 9.0},
                       {"id": 3, "image_id": 2, "category_id": 1, "bbox": [5.0, 5.0, 4.0, 4.0], "area": 16.0,
                        "iscrowd": 0}]}
    assert (norm.annotation_ids_renumbered, norm.annotation_id_zero, norm.boxes_clipped, norm.areas_filled) == (
        {"valid": 2}, {"valid": 1}, {"valid": 1}, {"valid": 1})
    assert annotations[1] == {"id": 9, "image_id": 1, "category_id": 3, "bbox": [1, 1, 3, 3], "iscrowd": 1}  # unchanged
    bare = verify._normalise_split("test", {**checked, "doc": {}}, {3: 0, 7: 1}, cats, verify.Normalisations())
    assert bare["info"] == {} and bare["licenses"] == []
    try:  # a box array that disagrees with the annotations is an internal error, never a silent truncation
        verify._normalise_split("test", {**checked, "boxes": boxes[:2]}, {3: 0, 7: 1}, cats, verify.Normalisations())
    except ValueError:
        pass
    else:
        raise AssertionError("boxes shorter than the annotations were zipped silently")


def test_the_end_marker_is_looked_for_in_exactly_the_last_1024_bytes() -> None:
    import io

    marker_at_the_window_start = b"\xff\xd9" + bytes(1022)  # 1024 bytes: the marker is the window's first two
    assert verify._image_is_truncated(io.BytesIO(marker_at_the_window_start), "JPEG") is False
    marker_just_before = b"\xff\xd9" + bytes(1023)  # 1025 bytes: the marker's first byte is outside the window
    assert verify._image_is_truncated(io.BytesIO(marker_just_before), "JPEG") is True
    assert verify._image_is_truncated(io.BytesIO(b"\xff\xd9" + bytes(5000)), "JPEG") is True  # an earlier EOI
    assert verify._image_is_truncated(io.BytesIO(b"\x00" * 40 + b"IEND\xaeB`\x82"), "PNG") is False
    assert verify._image_is_truncated(io.BytesIO(b"IEND\xaeB`\x82" + bytes(16)), "PNG") is True
    assert verify._image_is_truncated(io.BytesIO(b"anything"), "GIF") is False


def _problems(n: int) -> list[verify.Problem]:
    return [verify.Problem("train", "_annotations.coco.json", f"images[{i}]", "bad", "fix it") for i in range(n)]


def test_the_error_lists_25_problems_then_counts_the_rest() -> None:
    line = "  - train/_annotations.coco.json: images[{}]: bad; fix: fix it"
    two = verify.DatasetInvalid(Path("/data/x"), _problems(2))
    assert str(two) == ("dataset /data/x failed verification with 2 problem(s):\n" + line.format(0) + "\n"
                        + line.format(1))
    assert two.root == Path("/data/x") and two.problems == _problems(2)
    exactly = str(verify.DatasetInvalid(Path("/d"), _problems(25)))
    assert exactly.endswith(line.format(24)) and "more" not in exactly
    over = str(verify.DatasetInvalid(Path("/d"), _problems(27)))
    assert over.endswith(line.format(24) + "\n  ... and 2 more") and line.format(25) not in over


def test_the_png_end_chunk_is_looked_for_in_the_last_16_bytes_only() -> None:
    import io

    assert verify._image_is_truncated(io.BytesIO(bytes(20) + b"IEND" + bytes(12)), "PNG") is False  # the last 16
    assert verify._image_is_truncated(io.BytesIO(bytes(20) + b"IEND" + bytes(13)), "PNG") is True  # one byte more
    assert verify._image_is_truncated(io.BytesIO(bytes(20) + b"IEND" + bytes(60)), "PNG") is True


def test_check_image_hashes_the_file_and_reads_it_deeply_when_asked(tmp_path: Path) -> None:
    import hashlib

    path = _png(tmp_path)
    assert verify._check_image(path, deep=False) == ((64, 48), hashlib.sha256(path.read_bytes()).hexdigest())
    _corrupt_idat(path)
    assert verify._check_image(path, deep=False)[0] == (64, 48)
    reason = verify._check_image(path, deep=True)
    assert isinstance(reason, str) and reason.startswith("not a readable image"), reason


def test_every_bad_image_of_a_split_is_counted_not_only_the_first(tmp_path: Path) -> None:
    split = tmp_path / "train"
    split.mkdir()
    good = _png(split, "good.png")
    corrupt = [_png(split, f"bad{i}.png") for i in (1, 2)]
    for p in corrupt:
        _corrupt_idat(p)
    for name in ("l1.png", "l2.png"):
        (split / name).symlink_to(good)
    images = ([{"id": 1, "file_name": "../up.png"}, {"id": 2, "file_name": "/abs.png"}]
              + [{"id": 3 + i, "file_name": n} for i, n in enumerate(("l1.png", "l2.png", "gone1.png", "gone2.png"))]
              + [{"id": 7, "file_name": "bad1.png", "width": 64, "height": 48},
                 {"id": 8, "file_name": "bad2.png", "width": 64, "height": 48},
                 {"id": 9, "file_name": "good.png", "width": 64, "height": 48}])
    problems: list[verify.Problem] = []
    total, digests = verify._verify_images(tmp_path, "train", images, True, problems)
    assert total == sum(p.stat().st_size for p in (good, *corrupt))  # the unreadable files' bytes are counted too
    assert list(digests) == ["good.png"]
    unreadable = [p for p in problems if p.field == "image"]
    assert [p.file for p in unreadable] == ["bad1.png", "bad2.png"]
    assert {p.fix for p in unreadable} == {"re-download the image or remove it and its boxes from the export"}
    rest = [p.message for p in problems if p.field == "images[].file_name"]
    assert rest[0].startswith("2 unsafe file name(s), first: image id 1: ") and "image id 2: " in rest[0]
    assert rest[1].startswith("2 listed image(s) are symbolic links") and "'l2.png'" in rest[1]
    assert rest[2] == f"2 listed image(s) missing from {split}, first: ['gone1.png', 'gone2.png']"


def test_duplicates_are_listed_by_their_text_whatever_their_json_type() -> None:
    assert verify._duplicates([10, 9, 10, 9, 8]) == [10, 9]  # as text: "10" before "9"
    assert verify._duplicates([3, "3", 3, "3", None, None, "x"]) == [3, "3", None]  # mixed types do not crash
    assert verify._duplicates([1, 2]) == []


# Every broken corpus case's one problem, word for word ({root} is the case's folder). The three whose message
# quotes a library's own error (json, Pillow) are pinned by what precedes and follows that quote.
CORPUS_PROBLEMS: dict[str, str | tuple[str, str]] = {
    "area_mismatch": (
        "train/_annotations.coco.json: annotations[].area: 1 annotation(s) have an area inconsistent with "
        "bbox width*height (COCOeval sizes boxes by area), first: id 0 (image 0) bbox [4.0, 4.0, 16.0, 16.0]; "
        "fix: recompute area as bbox width * height"),
    "bad_json": (
        "valid/_annotations.coco.json: json: unreadable or truncated JSON (",
        "); fix: re-download or re-export the annotation file"),
    "bbox_nonpositive": (
        "valid/_annotations.coco.json: annotations[].bbox: 1 annotation(s) have non-positive width or height, "
        "first: id 0 (image 0) bbox [6.0, 8.0, 0.0, 14.0]; fix: fix the export or drop the box"),
    "bbox_outside": (
        "train/_annotations.coco.json: annotations[].bbox: 1 annotation(s) reach beyond the image by more "
        "than 2 px, first: id 1 (image 0) bbox [26.0, 20.0, 42.0, 20.0]; fix: fix the export or drop the box"),
    "bbox_string": (
        "train/_annotations.coco.json: annotations[].bbox: 1 bbox(es) are not [x, y, width, height] of 4 JSON "
        "numbers, first: id 0: ['4', '4', '16', '16']; fix: write bbox values as JSON numbers (not strings) "
        "or drop the box"),
    "deep_json": (
        "train/_annotations.coco.json: json: JSON nested too deeply to parse (a COCO file is a few levels "
        "deep; this one is not an annotation export); fix: re-export the annotation file in COCO format"),
    "duplicate_annotation_id": (
        "test/_annotations.coco.json: annotations[].id: 1 duplicate value(s), first: [0]; fix: re-export the "
        "dataset (ids must be unique per split)"),
    "duplicate_image_id": (
        "train/_annotations.coco.json: images[].id: 1 duplicate value(s), first: [0]; fix: re-export the "
        "dataset (ids must be unique per split)"),
    "empty_split": (
        "test/_annotations.coco.json: images: split has no images; fix: export a non-empty split (train, "
        "valid and test are all required)"),
    "file_name_absolute": (
        "train/_annotations.coco.json: images[].file_name: 1 unsafe file name(s), first: image id 0: "
        "'/etc/passwd' is an absolute path (it would read a file outside the dataset); fix: set file_name to "
        "the bare name of an image that lies directly in the split folder (e.g. 'img_0001.jpg'); move images "
        "out of subfolders and drop '..' and absolute paths"),
    "file_name_other_split": (
        "train/_annotations.coco.json: images[].file_name: 1 unsafe file name(s), first: image id 0: "
        "'../valid/img_0002_png.rf.0002c0ffee000002.png' climbs out of its split folder with '..'; fix: set "
        "file_name to the bare name of an image that lies directly in the split folder (e.g. 'img_0001.jpg'); "
        "move images out of subfolders and drop '..' and absolute paths"),
    "file_name_subdir": (
        "train/_annotations.coco.json: images[].file_name: 1 unsafe file name(s), first: image id 0: "
        "'sub/img_0000_png.rf.0000c0ffee000000.png' is in a subdirectory; images must lie directly in the "
        "split folder; fix: set file_name to the bare name of an image that lies directly in the split folder "
        "(e.g. 'img_0001.jpg'); move images out of subfolders and drop '..' and absolute paths"),
    "file_name_traversal": (
        "train/_annotations.coco.json: images[].file_name: 1 unsafe file name(s), first: image id 0: "
        "'../../../../victim.png' climbs out of its split folder with '..'; fix: set file_name to the bare "
        "name of an image that lies directly in the split folder (e.g. 'img_0001.jpg'); move images out of "
        "subfolders and drop '..' and absolute paths"),
    "image_bomb": (
        "train/img_0000_png.rf.0000c0ffee000000.png: image: declares an implausibly large image, refused "
        "unread (",
        "); fix: re-download the image or remove it and its boxes from the export"),
    "image_id_float": (
        "train/_annotations.coco.json: annotations[].image_id: 1 value(s) are not JSON integers (float), "
        "first: [1.0]; fix: write ids as JSON integers (e.g. 12, not \"12\" or 12.0) and re-export"),
    "image_id_string": (
        "train/_annotations.coco.json: images[].id: 1 value(s) are not JSON integers (str), first: ['1']; "
        "fix: write ids as JSON integers (e.g. 12, not \"12\" or 12.0) and re-export"),
    "missing_image": (
        "train/_annotations.coco.json: images[].file_name: 1 listed image(s) missing from {root}/train, "
        "first: ['img_0001_png.rf.0001c0ffee000001.png']; fix: re-download the split or remove those images "
        "from the JSON"),
    "truncated_image": (
        "test/img_0004_png.rf.0004c0ffee000004.png: image: truncated PNG file (end-of-image marker missing); "
        "fix: re-download the image or remove it and its boxes from the export"),
    "unknown_category": (
        "train/_annotations.coco.json: annotations[].category_id: 1 annotation(s) use category ids not in "
        "categories, first (annotation id, category id): [(0, 99)]; fix: re-export with a consistent class "
        "list or drop those boxes"),
    "unknown_image_ref": (
        "train/_annotations.coco.json: annotations[].image_id: 1 annotation(s) reference unknown image ids, "
        "first annotation ids: [0]; fix: re-export or drop those annotations"),
    "unreadable_image": (
        "train/img_0000_png.rf.0000c0ffee000000.png: image: not a readable image (",
        "); fix: re-download the image or remove it and its boxes from the export"),
}


def test_each_corpus_case_is_refused_with_its_exact_problem() -> None:
    from tests.conftest import CORPUS

    broken = CORPUS / "broken"
    assert set(CORPUS_PROBLEMS) == {p.name for p in broken.iterdir()} - {"valid_base", "bbox_slightly_outside"}
    for case, expected in CORPUS_PROBLEMS.items():
        try:
            verify.verify_dataset(broken / case)
        except verify.DatasetInvalid as err:
            (problem,) = err.problems
            text = str(problem).replace(str(broken / case), "{root}")
        else:
            raise AssertionError(f"{case} verified")
        if isinstance(expected, tuple):
            assert text.startswith(expected[0]) and text.endswith(expected[1]), (case, text)
        else:
            assert text == expected, (case, text)


def _anns(*boxes: list[float], area: list | None = None) -> list[dict]:
    return [{"id": 10 + i, "image_id": 100 + i, "bbox": b, **({"area": area[i]} if area and area[i] != "-" else {})}
            for i, b in enumerate(boxes)]


def test_box_checks_name_at_most_three_examples_of_each_fault_and_clip_only_what_needs_it() -> None:
    import numpy as np

    nan, inf = float("nan"), float("inf")
    boxes = [[nan, 0, 1, 1], [0, inf, 1, 1], [0, 0, 0, 5], [0, 0, 5, -1], [0, 0, 5, 0], [1, 1, 0, 0],
             [-3.5, 0, 5, 5], [0, -3, 5, 5], [46, 0, 5, 5], [0, 45.5, 5, 5],  # beyond 2 px on each side
             [-2, -2, 10, 10], [40, 40, 10, 10], [48.5, 10, 1, 1], [3, 4, 5, 6]]  # clipped, clipped, vanishes, kept
    anns = _anns(*boxes)
    arr = np.asarray(boxes, dtype=np.float64)
    wh = np.full((len(boxes), 2), 48.0)
    problems: list[verify.Problem] = []
    out, changed = verify._check_boxes("valid", anns, arr, wh, problems)
    assert [(p.split, p.file, p.field, p.fix) for p in problems] == [
        ("valid", "_annotations.coco.json", "annotations[].bbox", "fix the export or drop the box")] * 4
    assert [p.message for p in problems] == [
        "2 annotation(s) have NaN or infinite coordinates, first: id 10 (image 100) bbox [nan, 0, 1, 1], "
        "id 11 (image 101) bbox [0, inf, 1, 1]",
        "4 annotation(s) have non-positive width or height, first: id 12 (image 102) bbox [0, 0, 0, 5], "
        "id 13 (image 103) bbox [0, 0, 5, -1], id 14 (image 104) bbox [0, 0, 5, 0]",
        "4 annotation(s) reach beyond the image by more than 2 px, first: id 16 (image 106) bbox [-3.5, 0, 5, 5], "
        "id 17 (image 107) bbox [0, -3, 5, 5], id 18 (image 108) bbox [46, 0, 5, 5]",
        "1 annotation(s) lie entirely outside the image, first: id 22 (image 112) bbox [48.5, 10, 1, 1]"]
    assert changed.tolist() == [False] * 10 + [True, True, True, False]
    assert out[10].tolist() == [0.0, 0.0, 8.0, 8.0] and out[11].tolist() == [40.0, 40.0, 8.0, 8.0]
    assert out[13].tolist() == [3.0, 4.0, 5.0, 6.0]


def test_area_checks_allow_one_percent_or_one_pixel_and_fill_missing_ones() -> None:
    import numpy as np

    boxes = [[0, 0, 16, 16], [0, 0, 16, 16], [0, 0, 2, 5], [0, 0, 2, 5], [0, 0, 3, 3], [0, 0, 4, 4], [0, 0, 1, 1]]
    # 256 +- 2.56 is consistent (258.55), 258.6 is not; 10 +- 1 is, exactly (11.0), 11.01 is not; missing: filled later
    areas = [258.55, 258.6, 11.0, 11.01, "-", None, 1.0]
    anns = _anns(*boxes, area=areas)
    problems: list[verify.Problem] = []
    missing = verify._check_areas("test", anns, np.asarray(boxes, dtype=np.float64), problems)
    assert missing.tolist() == [False, False, False, False, True, True, False]
    assert [(p.field, p.message, p.fix) for p in problems] == [(
        "annotations[].area",
        "2 annotation(s) have an area inconsistent with bbox width*height (COCOeval sizes boxes by area), first: "
        "id 11 (image 101) bbox [0, 0, 16, 16], id 13 (image 103) bbox [0, 0, 2, 5]",
        "recompute area as bbox width * height")]
    texts = _anns([0, 0, 2, 2], [0, 0, 2, 2], [0, 0, 2, 2], [0, 0, 2, 2], [0, 0, 2, 2],
                  area=["4", True, 4.0, "x", "y"])
    problems = []
    missing = verify._check_areas("train", texts, np.full((5, 4), 2.0), problems)
    assert missing.tolist() == [True, True, False, True, True]  # refused values are not also called inconsistent
    assert [(p.field, p.message, p.fix) for p in problems] == [(
        "annotations[].area", "4 area(s) are not JSON numbers, first: [(10, '4'), (11, True), (13, 'x')]",
        "write area as a JSON number (bbox width * height) or leave it out")]


def test_bbox_shapes_other_than_four_json_numbers_are_refused() -> None:
    anns = _anns([1, 2, 3, 4], [1, 2, 3], ["1", 2, 3, 4], [1, 2, 3, True], (1, 2, 3, 4), None, [1.5, 2, 3, 4.5])
    problems: list[verify.Problem] = []
    assert verify._bbox_array("train", anns, problems) is None
    assert [(p.field, p.message, p.fix) for p in problems] == [(
        "annotations[].bbox",
        "5 bbox(es) are not [x, y, width, height] of 4 JSON numbers, first: id 11: [1, 2, 3], id 12: ['1', 2, 3, 4], "
        "id 13: [1, 2, 3, True]",
        "write bbox values as JSON numbers (not strings) or drop the box")]
    good = verify._bbox_array("train", _anns([1, 2, 3, 4], [1.5, 2, 3, 4.5]), problems)
    assert good.tolist() == [[1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 3.0, 4.5]] and good.dtype.name == "float64"
    assert verify._bbox_array("train", [], []).shape == (0, 4)


def test_file_name_problems_word_for_word() -> None:
    fp = verify.file_name_problem
    assert [fp(n) for n in ("img.jpg", "a..b.png", ".hidden.png")] == [None, None, None]
    assert fp("") == "'' is not a non-empty string" and fp(7) == "7 is not a non-empty string"
    assert fp(None) == "None is not a non-empty string"
    assert fp("a\x00.png") == "'a\\x00.png' contains a NUL byte"
    for absolute in ("/etc/passwd", "\\share\\x.png", "C:\\x.png", "c:/x.png"):
        assert fp(absolute) == f"{absolute!r} is an absolute path (it would read a file outside the dataset)"
    for climbing in ("../x.png", "a/../x.png", "..\\x.png", ".."):
        assert fp(climbing) == f"{climbing!r} climbs out of its split folder with '..'"
    for nested in ("sub/x.png", "sub\\x.png", "C:x/y.png"):
        assert fp(nested) == f"{nested!r} is in a subdirectory; images must lie directly in the split folder"
    assert fp(".") == "'.' is not an image file name"
    assert fp("_annotations.coco.json") == "'_annotations.coco.json' is not an image file name"
    assert fp("C:x.png") is None  # a drive letter without a separator is a plain (odd) name


def _split_with(tmp_path: Path, text: str | bytes) -> Path:
    (tmp_path / "train").mkdir(parents=True)
    data = text.encode() if isinstance(text, str) else text
    (tmp_path / "train" / "_annotations.coco.json").write_bytes(data)
    return tmp_path


def _load(root: Path, split: str = "train") -> tuple[object, list[tuple[str, str, str, str, str]]]:
    problems: list[verify.Problem] = []
    doc = verify._load_json(root, split, problems)
    return doc, [(p.split, p.file, p.field, p.message, p.fix) for p in problems]


def test_reading_an_annotation_file_names_each_way_it_can_fail(tmp_path: Path) -> None:
    ann = "_annotations.coco.json"
    assert _load(tmp_path) == (None, [("train", ann, "split", f"split folder {tmp_path / 'train'} is missing",
                                       "export all three splits train/valid/test")])
    (tmp_path / "train").mkdir()
    assert _load(tmp_path) == (None, [("train", ann, "file", "annotation file is missing",
                                       "export the dataset in COCO format (Roboflow layout)")])
    cases = {
        "[1, 2]": ("json", "top level is not a JSON object", "re-export in COCO format"),
        '{"images": [], "annotations": []}': ("categories", "missing or not a list: 'categories'",
                                               "re-export in COCO format"),
        '{"images": {}, "annotations": [], "categories": []}': ("images", "missing or not a list: 'images'",
                                                               "re-export in COCO format"),
        '{"images": [], "annotations": [{}, 3, "x"], "categories": []}': (
            "annotations[1]", "2 entr(y/ies) are not JSON objects, first: 3", "re-export in COCO format"),
    }
    for i, (text, (field, message, fix)) in enumerate(cases.items()):
        root = _split_with(tmp_path / f"c{i}", text)
        assert _load(root) == (None, [("train", ann, field, message, fix)]), text
    good = _split_with(tmp_path / "good", '{"images": [], "annotations": [], "categories": [], "info": {}}')
    assert _load(good) == ({"images": [], "annotations": [], "categories": [], "info": {}}, [])
    latin1 = _split_with(tmp_path / "latin1", b'{"images": "\xe9"}')
    doc, problems = _load(latin1)
    assert doc is None and [p[2:3] + p[4:] for p in problems] == [
        ("json", "re-download or re-export the annotation file")]
    assert problems[0][3].startswith("unreadable or truncated JSON (")


def test_a_linked_split_or_annotation_file_is_refused(tmp_path: Path) -> None:
    real = _split_with(tmp_path / "real", '{"images": [], "annotations": [], "categories": []}')
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "train").symlink_to(real / "train")
    expected = ("train", "_annotations.coco.json", "split",
                f"{linked / 'train'} is a symbolic link; links are not followed in dataset folders",
                "copy the real folder/file into the dataset")
    assert _load(linked) == (None, [expected])
    file_link = tmp_path / "file_link"
    (file_link / "train").mkdir(parents=True)
    (file_link / "train" / "_annotations.coco.json").symlink_to(real / "train" / "_annotations.coco.json")
    link = file_link / "train" / "_annotations.coco.json"
    assert _load(file_link) == (None, [("train", "_annotations.coco.json", "split",
                                        f"{link} is a symbolic link; links are not followed in dataset folders",
                                        "copy the real folder/file into the dataset")])


def test_ids_must_be_json_integers_that_fit_64_bits() -> None:
    fix = 'write ids as JSON integers (e.g. 12, not "12" or 12.0) and re-export'
    images = [{"id": 1}, {"id": "2"}, {"id": 3.0}, {}, {"id": True}]
    anns = [{"id": 2**63, "image_id": 1, "category_id": -(2**63) - 1}, {"id": 2**63 - 1, "image_id": 1,
                                                                       "category_id": -(2**63)}]
    problems: list[verify.Problem] = []
    assert verify._ids_are_integers("test", images, anns, problems) is False
    assert [(p.field, p.message, p.fix) for p in problems] == [
        ("images[].id", "4 value(s) are not JSON integers (bool, float, missing, str), first: ['2', 3.0, None]", fix),
        ("annotations[].id", "1 value(s) do not fit a 64-bit integer, first: [9223372036854775808]",
         "renumber the ids (e.g. 0, 1, 2, ...) and re-export"),
        ("annotations[].category_id", "1 value(s) do not fit a 64-bit integer, first: [-9223372036854775809]",
         "renumber the ids (e.g. 0, 1, 2, ...) and re-export")]
    assert verify._ids_are_integers("test", [{"id": 0}], [{"id": 2**63 - 1, "image_id": 0, "category_id": -(2**63)}],
                                    []) is True
    assert verify._ids_are_integers("test", [], [], []) is True


def test_categories_are_checked_in_every_split_against_the_first() -> None:
    ann = "_annotations.coco.json"
    ref = [{"id": 0, "name": "a"}, {"id": 1, "name": "b"}]
    docs = {"train": {"categories": ref},
            "valid": {"categories": [{"id": "0", "name": "a"}, {"id": 1.0, "name": ""}, {"id": None}]},
            "test": {"categories": [{"id": 1, "name": "b"}, {"id": 1, "name": 5}, {"id": 0, "name": "a"}]}}
    problems: list[verify.Problem] = []
    assert verify._check_categories(docs, problems) is ref
    assert [(p.split, p.file, p.field, p.message, p.fix) for p in problems] == [
        ("valid", ann, "categories[].id", "3 non-integer category id(s), first: ['0', 1.0, None]",
         'write ids as JSON integers (e.g. 12, not "12" or 12.0) and re-export'),
        ("valid", ann, "categories[].name", "2 category name(s) are not non-empty strings, first: ['', None]",
         "give every class a name and re-export"),
        ("valid", ann, "categories", "categories differ from the train split's",
         "export all splits from one dataset version"),
        ("test", ann, "categories[].name", "1 category name(s) are not non-empty strings, first: [5]",
         "give every class a name and re-export"),
        ("test", ann, "categories[].id", "duplicate category ids [1]", "re-export the dataset"),
        ("test", ann, "categories", "categories differ from the train split's",
         "export all splits from one dataset version")]
    same_order_free = {"train": {"categories": ref}, "test": {"categories": list(reversed(ref))}}
    problems = []
    verify._check_categories(same_order_free, problems)
    assert problems == []  # the order of the class list does not matter, the (id, name) pairs do


def _split_doc(tmp_path: Path, n_images: int = 2) -> dict:
    (tmp_path / "valid").mkdir(parents=True, exist_ok=True)
    images = []
    for i in range(n_images):
        _png(tmp_path / "valid", f"im{i}.png")
        images.append({"id": i, "file_name": f"im{i}.png", "width": 64, "height": 48})
    anns = [{"id": i, "image_id": i % n_images, "category_id": 1, "bbox": [1, 1, 4, 4], "area": 16} for i in range(3)]
    return {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "a"}]}


def _verify_split(tmp_path: Path, doc: dict, cats: set[int] = frozenset({1})) -> tuple[object, list[tuple]]:
    problems: list[verify.Problem] = []
    out = verify._verify_split(tmp_path, "valid", doc, set(cats), False, problems)
    return out, [(p.split, p.file, p.field, p.message, p.fix) for p in problems]


def test_a_split_names_empty_lists_duplicates_and_dangling_references(tmp_path: Path) -> None:
    ann = "_annotations.coco.json"
    out, problems = _verify_split(tmp_path, {"images": [], "annotations": [], "categories": []})
    assert out is None and problems == [("valid", ann, "images", "split has no images",
                                         "export a non-empty split (train, valid and test are all required)")]
    doc = _split_doc(tmp_path)
    out, problems = _verify_split(tmp_path, {**doc, "annotations": []})
    assert out is None and problems == [("valid", ann, "annotations", "split has no boxes (AP is undefined)",
                                         "export the split with its annotations")]
    bad = _split_doc(tmp_path)
    bad["images"] += [dict(bad["images"][0]), {**bad["images"][1], "id": 7}]  # id 0 twice, im1.png twice
    bad["annotations"] += [dict(bad["annotations"][0])] + [
        {"id": 10 + k, "image_id": 50 + k, "category_id": 1, "bbox": [1, 1, 4, 4]} for k in range(4)] + [
        {"id": 20 + k, "image_id": 0, "category_id": 9 + k, "bbox": [1, 1, 4, 4]} for k in range(4)]
    out, problems = _verify_split(tmp_path, bad)
    fix_ids = "re-export the dataset (ids must be unique per split)"
    assert out is None and problems == [
        ("valid", ann, "images[].id", "1 duplicate value(s), first: [0]", fix_ids),
        ("valid", ann, "images[].file_name", "2 duplicate value(s), first: ['im0.png', 'im1.png']", fix_ids),
        ("valid", ann, "annotations[].id", "1 duplicate value(s), first: [0]", fix_ids),
        ("valid", ann, "annotations[].image_id",
         "4 annotation(s) reference unknown image ids, first annotation ids: [10, 11, 12]",
         "re-export or drop those annotations"),
        ("valid", ann, "annotations[].category_id",
         "4 annotation(s) use category ids not in categories, first (annotation id, category id): "
         "[(20, 9), (21, 10), (22, 11)]", "re-export with a consistent class list or drop those boxes")]


def test_a_clean_split_returns_what_normalisation_needs(tmp_path: Path) -> None:
    import hashlib

    doc = _split_doc(tmp_path)
    doc["annotations"][1].pop("area")  # filled later
    doc["annotations"][2]["bbox"] = [62, 1, 4, 4]  # 2 px past the right edge: clipped
    out, problems = _verify_split(tmp_path, doc)
    assert problems == []
    assert out["images"] is doc["images"] and out["annotations"] is doc["annotations"] and out["doc"] is doc
    assert out["boxes"].tolist() == [[1, 1, 4, 4], [1, 1, 4, 4], [62, 1, 2, 4]]
    assert out["clipped"].tolist() == [False, False, True] and out["area_missing"].tolist() == [False, True, False]
    files = [tmp_path / "valid" / f"im{i}.png" for i in range(2)]
    assert out["image_bytes"] == sum(f.stat().st_size for f in files)
    assert out["image_sha256"] == {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    wrong_size = _split_doc(tmp_path / "w")
    wrong_size["images"][1]["height"] = 50
    out, problems = _verify_split(tmp_path / "w", wrong_size)
    assert out is None and problems == [(
        "valid", "_annotations.coco.json", "images[id=1].width/height", "JSON says 64x50 but im1.png is 64x48",
        "re-export so the JSON matches the image files (boxes are in the file's pixel grid)")]


def _dataset(root: Path) -> Path:
    """Three splits of one 64x48 PNG each; Roboflow's placeholder category 0 ("shapes", the others' supercategory)
    and two classes with ids 3 and 5; annotation ids from 0 as Roboflow writes them."""
    import json

    cats = [{"id": 0, "name": "shapes", "supercategory": "none"},
            {"id": 5, "name": "square", "supercategory": "shapes"},
            {"id": 3, "name": "circle", "supercategory": "shapes"}]
    for k, split in enumerate(("train", "valid", "test")):
        (root / split).mkdir(parents=True)
        _png(root / split, f"{split}.png")
        anns = [{"id": 0, "image_id": 4, "category_id": 3, "bbox": [1, 2, 3, 4], "area": 12, "iscrowd": 0},
                {"id": 1, "image_id": 4, "category_id": 5 if k else 3, "bbox": [10, 10, 5, 5]}]
        doc = {"info": {"split": split}, "licenses": [], "categories": cats, "annotations": anns,
               "images": [{"id": 4, "file_name": f"{split}.png", "width": 64, "height": 48}]}
        (root / split / "_annotations.coco.json").write_text(json.dumps(doc))
    return root


def test_a_dataset_is_verified_and_normalised_as_documented(tmp_path: Path) -> None:
    import hashlib

    root = _dataset(tmp_path / "ds")
    v = verify.verify_dataset(root)
    assert v.root == root and v.class_names == ["circle", "square"]
    assert v.categories == [{"id": 0, "name": "circle", "supercategory": "shapes"},
                            {"id": 1, "name": "square", "supercategory": "shapes"}]
    assert asdict(v.normalisations) == {
        "dropped_placeholder_categories": ["shapes"], "category_ids_remapped": 2,
        "annotation_ids_renumbered": {"train": 2, "valid": 2, "test": 2},
        "annotation_id_zero": {"train": 1, "valid": 1, "test": 1},
        "boxes_clipped": {"train": 0, "valid": 0, "test": 0}, "areas_filled": {"train": 1, "valid": 1, "test": 1}}
    assert list(v.coco) == ["train", "valid", "test"]
    assert v.coco["valid"]["annotations"] == [
        {"id": 1, "image_id": 4, "category_id": 0, "bbox": [1.0, 2.0, 3.0, 4.0], "area": 12, "iscrowd": 0},
        {"id": 2, "image_id": 4, "category_id": 1, "bbox": [10.0, 10.0, 5.0, 5.0], "area": 25.0, "iscrowd": 0}]
    assert v.coco["train"]["annotations"][1]["category_id"] == 0 and v.coco["test"]["info"] == {"split": "test"}
    assert all(v.coco[s]["categories"] == v.categories for s in v.coco)
    assert asdict(v.stats["test"]) == {"images": 1, "annotations": 2, "boxes_per_image_mean": 2.0,
                                       "boxes_per_image_max": 2, "images_without_boxes": 0, "classes_present": 2,
                                       "megapixels_mean": 0.0031, "megapixels_max": 0.0031,
                                       "image_bytes": (root / "test" / "test.png").stat().st_size,
                                       "images_over_max_det": 0}
    assert v.stats["train"].classes_present == 1
    assert v.image_sha256 == {s: {f"{s}.png": hashlib.sha256((root / s / f"{s}.png").read_bytes()).hexdigest()}
                              for s in ("train", "valid", "test")}


def test_a_dataset_missing_a_split_or_with_a_bad_split_fails_with_every_problem(tmp_path: Path) -> None:
    import shutil

    root = _dataset(tmp_path / "ds")
    shutil.rmtree(root / "valid")
    (root / "test" / "test.png").unlink()
    try:
        verify.verify_dataset(root)
    except verify.DatasetInvalid as err:
        assert [(p.split, p.field) for p in err.problems] == [("valid", "split")]  # reading stops the rest
    else:
        raise AssertionError("verified without its valid split")
    _png(root / "test", "x.png")
    (root / "valid").mkdir()
    shutil.copy(root / "train" / "_annotations.coco.json", root / "valid")
    try:
        verify.verify_dataset(root)
    except verify.DatasetInvalid as err:
        assert [(p.split, p.field) for p in err.problems] == [("valid", "images[].file_name"),
                                                              ("test", "images[].file_name")]
        assert str(err).startswith(
            f"dataset {root} failed verification with 2 problem(s):\n  - valid/")
    else:
        raise AssertionError("verified with missing images")


def test_a_class_without_a_supercategory_is_normalised_under_none(tmp_path: Path) -> None:
    import json

    root = _dataset(tmp_path / "ds")
    for split in ("train", "valid", "test"):
        path = root / split / "_annotations.coco.json"
        doc = json.loads(path.read_text())
        del doc["categories"][2]["supercategory"]  # circle
        path.write_text(json.dumps(doc))
    assert verify.verify_dataset(root).categories == [{"id": 0, "name": "circle", "supercategory": "none"},
                                                      {"id": 1, "name": "square", "supercategory": "shapes"}]


def test_survivors_of_the_first_mutation_pass(tmp_path: Path) -> None:
    """The last real gaps mutmut showed in verify.py (docs/testing.md lists the equivalent ones)."""
    import json
    import shutil

    import numpy as np

    # 26 problems: one more than shown
    assert str(verify.DatasetInvalid(Path("/d"), _problems(26))).endswith("\n  ... and 1 more")
    # megapixels divide by exactly 1e6: a 60 MP image is 60.0, not 59.9999
    checked = {"images": [{"id": 1, "width": 10000, "height": 6000}], "annotations": [], "image_bytes": 0}
    assert verify._split_stats({**checked, "annotations": [{"image_id": 1, "category_id": 0}]}).megapixels_max == 60.0
    # a non-number at any position of a bbox is refused
    for k in range(4):
        box = [1, 2, 3, 4]
        box[k] = str(box[k])
        assert not verify._is_bbox(box), box
    # integer boxes come out as floats
    assert verify._bbox_array("train", _anns([1, 2, 3, 4]), []).dtype == np.float64
    # several unsafe names and links: joined with "; ", with their fix
    split = tmp_path / "train"
    split.mkdir()
    good = _png(split, "good.png")
    for name in ("l1.png", "l2.png"):
        (split / name).symlink_to(good)
    problems: list[verify.Problem] = []
    verify._verify_images(tmp_path, "train", [{"id": 1, "file_name": "../a.png"}, {"id": 2, "file_name": "/b.png"},
                                              {"id": 3, "file_name": "l1.png"}, {"id": 4, "file_name": "l2.png"}],
                          False, problems)
    unsafe, links = problems
    assert unsafe.message == ("2 unsafe file name(s), first: image id 1: '../a.png' climbs out of its split folder "
                              "with '..'; image id 2: '/b.png' is an absolute path (it would read a file outside the "
                              "dataset)")
    assert links.message == (f"2 listed image(s) are symbolic links (not followed in dataset folders), first: "
                             f"'l1.png' -> {str(good)!r}; 'l2.png' -> {str(good)!r}")
    assert links.fix == "copy the real image files into the split folder in place of the links"
    # deep verification reaches every image through verify_dataset; the error keeps the root at every stage
    root = _dataset(tmp_path / "ds")
    _corrupt_idat(root / "valid" / "valid.png")
    verify.verify_dataset(root)  # the fast pass reads headers and end markers only
    try:
        verify.verify_dataset(root, deep=True)
    except verify.DatasetInvalid as err:
        assert err.root == root and [(p.split, p.file) for p in err.problems] == [("valid", "valid.png")]
    else:
        raise AssertionError("deep verification read past corrupt pixels")
    shutil.rmtree(root / "test")
    with pytest.raises(verify.DatasetInvalid) as missing:
        verify.verify_dataset(root)
    assert missing.value.root == root
    # a category with boxes is a class even when its name is another's supercategory or it is Roboflow's 0/"none"
    named = _dataset(tmp_path / "named")
    for s in ("train", "valid", "test"):
        path = named / s / "_annotations.coco.json"
        doc = json.loads(path.read_text())
        doc["annotations"].append({"id": 2, "image_id": 4, "category_id": 0, "bbox": [20, 20, 5, 5], "area": 25})
        path.write_text(json.dumps(doc))
    v = verify.verify_dataset(named)
    assert v.class_names == ["shapes", "circle", "square"] and v.normalisations.dropped_placeholder_categories == []


@pytest.mark.parametrize("gone", ["width", "height"])
def test_an_image_without_width_or_height_is_named_not_a_crash(tmp_path: Path, gone: str) -> None:
    import json

    root = _dataset(tmp_path / "ds")
    path = root / "train" / "_annotations.coco.json"
    doc = json.loads(path.read_text())
    del doc["images"][0][gone]
    path.write_text(json.dumps(doc))
    said = "Nonex48" if gone == "width" else "64xNone"
    try:
        verify.verify_dataset(root)
    except verify.DatasetInvalid as err:
        assert [(p.field, p.message) for p in err.problems] == [
            ("images[id=4].width/height", f"JSON says {said} but train.png is 64x48"),
            ("annotations[].bbox", "2 annotation(s) reach beyond the image by more than 2 px, first: id 0 (image 4) "
                                   "bbox [1, 2, 3, 4], id 1 (image 4) bbox [10, 10, 5, 5]")]
    else:
        raise AssertionError("verified without a width")
