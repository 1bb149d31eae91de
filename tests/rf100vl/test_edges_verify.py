"""Edge cases of bench_assets/rf100vl/verify.py that kill mutants the other tests let survive (issue 15,
docs/testing.md "Mutation testing")."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path

from bench_assets.rf100vl import verify


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
