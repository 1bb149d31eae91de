"""Recipes, run signatures, variants and run states: the pure decisions behind training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.rf100vl.training.recipes import RECIPES_DIR, RecipeError, load_recipe, recipe_path
from bench_assets.rf100vl.training.runplan import (
    ModelKey,
    RunVariant,
    parse_model,
    run_signature,
    run_state,
    signature_fields,
    variant_sequence,
)


def _write(tmp_path: Path, mutate) -> Path:  # noqa: ANN001
    doc = json.loads((RECIPES_DIR / "yolo9.json").read_text())
    mutate(doc)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("family", ["yolo9", "yolox"])
def test_shipped_recipes_are_valid_and_conformant(family: str) -> None:
    loaded = load_recipe(recipe_path(family))
    assert loaded.recipe.conformant, loaded.recipe.nonconformities()
    assert len(loaded.sha256) == 64


@pytest.mark.parametrize("family", ["yolo9", "yolox"])
def test_smoke_recipes_are_marked_non_conformant(family: str) -> None:
    loaded = load_recipe(recipe_path(family, "smoke"))
    assert not loaded.recipe.conformant
    assert any("epochs" in n for n in loaded.recipe.nonconformities())


@pytest.mark.parametrize("mutate,phrase", [
    (lambda d: d.update(unknown_field=1), "unknown_field: Extra inputs are not permitted"),
    (lambda d: d["protocol"].update(selection_metric="valid_mAP50"), "protocol.selection_metric"),
    (lambda d: d["sizes"]["t"].update(imgsz=641), "sizes.t.imgsz"),
    (lambda d: d["sizes"]["t"].update(fallback_physical_batch=32), "fallback_physical_batch must be smaller"),
    (lambda d: d["sizes"]["t"].update(physical_batch=12, fallback_physical_batch=8), "does not divide"),
    (lambda d: d["protocol"].update(precision="int8"), "protocol.precision"),
])
def test_bad_recipes_name_the_field(tmp_path: Path, mutate, phrase: str) -> None:  # noqa: ANN001
    with pytest.raises(RecipeError) as err:
        load_recipe(_write(tmp_path, mutate))
    assert phrase in str(err.value) and "r.json" in str(err.value)


def test_recipe_sha_is_of_the_file_bytes(tmp_path: Path) -> None:
    a = load_recipe(_write(tmp_path, lambda d: None))
    b = load_recipe(_write(tmp_path, lambda d: d["source"].update(commit="other")))
    assert a.sha256 != b.sha256 and a.recipe.conformant and b.recipe.conformant


def test_model_keys() -> None:
    assert parse_model("yolo9-t") == ModelKey("yolo9", "t")
    assert parse_model("dfine-n").key == "dfine-n"
    for bad in ("yolo9", "YOLO9-t", "yolo9_t", "-t"):
        with pytest.raises(ValueError, match="family-size"):
            parse_model(bad)


def test_variants_dense_starts_in_fallback() -> None:
    r = load_recipe(recipe_path("yolo9"))
    normal = variant_sequence(r, "t", max_annotations_per_image=40)
    assert [v.name for v in normal] == ["standard", "oom_fallback"]
    assert normal[1].accumulation == 2 and normal[1].physical_batch * normal[1].accumulation == 16
    dense = variant_sequence(r, "t", max_annotations_per_image=250)
    assert [(v.name, v.physical_batch, v.accumulation) for v in dense] == [("dense_fallback", 4, 4)]


def _fields(**over):  # noqa: ANN003, ANN202
    r = load_recipe(recipe_path("yolo9"))
    args = dict(model=ModelKey("yolo9", "t"), recipe=r, dataset="d", dataset_version="v1", dataset_lock_sha256="l",
                train_annotations_sha256="t", variant=RunVariant("standard", 16, 16), epochs=100, imgsz=640,
                precision="bf16", max_det=500, eval_max_det=500)
    args.update(over)
    return signature_fields(**args)


def test_signature_is_stable_and_sensitive() -> None:
    base = run_signature(_fields())
    assert base == run_signature(_fields())
    assert len(base) == 64
    for change in (dict(dataset_version="v2"), dict(variant=RunVariant("oom_fallback", 8, 16)), dict(epochs=99),
                   dict(imgsz=512), dict(precision="fp32"), dict(max_det=100), dict(train_annotations_sha256="x")):
        assert run_signature(_fields(**change)) != base, change


def test_run_state(tmp_path: Path) -> None:
    sig = "s" * 64
    assert run_state(tmp_path, sig) == "new"
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "last.pt").write_bytes(b"x")
    assert run_state(tmp_path, sig) == "resumable"
    (tmp_path / "bench_status.json").write_text(json.dumps({"signature": sig, "state": "oom"}))
    assert run_state(tmp_path, sig) == "oom"
    (tmp_path / "bench_status.json").write_text(json.dumps({"signature": sig, "state": "running"}))
    assert run_state(tmp_path, sig) == "resumable"  # a step that died mid-run
    best = tmp_path / "weights" / "best.pt"
    best.write_bytes(b"best")
    import hashlib

    (tmp_path / "stats.json").write_text(json.dumps({"run_signature": sig, "best_checkpoint": str(best),
                                                     "best_checkpoint_sha256": hashlib.sha256(b"best").hexdigest()}))
    (tmp_path / "bench_status.json").write_text(json.dumps({"signature": sig, "state": "done"}))
    assert run_state(tmp_path, sig) == "done"
    best.write_bytes(b"tampered")
    assert run_state(tmp_path, sig) == "corrupt"  # done is only believed when the checkpoint matches
    (tmp_path / "bench_status.json").write_text(json.dumps({"signature": "other", "state": "done"}))
    with pytest.raises(ValueError, match="signature"):
        run_state(tmp_path, sig)


def test_a_verb_without_recipe_keeps_the_registered_one_and_every_verb_reads_it_the_same(tmp_path: Path) -> None:
    """A model registered with the smoke recipe stays on it when `bench campaign`, `train` or `plan` name none
    (a bare campaign used to re-register it with `default`); a named recipe still wins."""
    from bench_assets.cli import build_parser
    from bench_assets.rf100vl.training.models import model_recipe, register_model, registered_recipe

    assert registered_recipe(tmp_path, "yolo9-t") == "default"  # nothing registered yet
    register_model(tmp_path, "yolo9-t", "smoke", suite="mini")
    assert registered_recipe(tmp_path, "yolo9-t") == "smoke"
    assert model_recipe(tmp_path, "yolo9-t")[1].path == str(recipe_path("yolo9", "smoke"))
    assert model_recipe(tmp_path, "yolo9-t", "default")[1].path == str(recipe_path("yolo9", "default"))
    parser = build_parser()
    for verb in ("campaign", "train", "plan"):
        args = parser.parse_args([verb, "--model", "yolo9-t", "--suite", "mini"])
        assert args.recipe == "", verb  # "": the registered recipe (registered_recipe), not a fixed default
