"""LibreYOLO's detection families: the snapshot of the pinned libreyolo, `bench models families`, the refusal of a
family that cannot train, the image-size rule checked when a recipe loads, and every shipped recipe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench_assets.rf100vl.training.families import (
    REWRITE,
    SNAPSHOT,
    FamilyError,
    check_trainable,
    families,
    family,
    min_training_imgsz,
    smallest_scale,
    stale_note,
)
from bench_assets.rf100vl.training.recipes import (
    RECIPES_DIR,
    RecipeError,
    load_recipe,
    recipe_path,
    require_trainable,
)

# The families issue 28 asks to train (deim or deimv2), and the two flagships.
REQUIRED = {"yolo9", "yolox", "rfdetr", "rtdetr", "dfine", "deim", "deimv2", "ec", "yolonas"}
PROTOCOL_RECIPES = sorted(p.stem for p in RECIPES_DIR.glob("*.json"))
SMOKE_RECIPES = sorted(p.stem for p in (RECIPES_DIR / "smoke").glob("*.json"))


def test_at_least_eight_families_train_and_every_required_one_does() -> None:
    trainable = {name for name, f in families().items() if f.trainable}
    assert len(trainable) >= 8
    assert REQUIRED <= trainable, REQUIRED - trainable


def test_a_family_that_cannot_train_says_why_in_libreyolos_words() -> None:
    lwdetr = family("lwdetr")
    assert not lwdetr.trainable and "inference-only" in (lwdetr.reason or "")
    with pytest.raises(FamilyError, match=r"lwdetr cannot be trained with LibreYOLO 1\.6\.0: LW-DETR is shipped "
                                          r"inference-only"):
        check_trainable("lwdetr", "t")


def test_unknown_families_and_sizes_name_what_exists() -> None:
    with pytest.raises(FamilyError, match=r"no detection family 'yolo99'; the trainable ones: .*dfine.*yolo9"):
        check_trainable("yolo99", "t")
    with pytest.raises(FamilyError, match=r"dfine has no size 't'; its sizes: n, s, m, l, x"):
        check_trainable("dfine", "t")


def test_registering_a_model_libreyolo_cannot_train_is_refused_and_records_nothing(tmp_path: Path) -> None:
    from bench_assets.rf100vl.training.models import register_model

    with pytest.raises(FamilyError, match="inference-only"):
        register_model(tmp_path, "lwdetr-t", "smoke")
    assert not (tmp_path / "models").exists()


def test_the_snapshot_names_its_libreyolo_and_a_different_one_installed_says_how_to_rewrite(tmp_path: Path) -> None:
    assert stale_note() is None  # the pinned libreyolo is the snapshot's
    doc = json.loads(SNAPSHOT.read_text())
    doc["libreyolo"] = "0.0.1"
    other = tmp_path / "snapshot.json"
    other.write_text(json.dumps(doc))
    assert stale_note(other) == f"snapshot.json describes libreyolo 0.0.1 but 1.6.0 is installed: run `{REWRITE}`"


@pytest.mark.parametrize(("forward_min", "multi_scale", "expected"), [
    (32, False, 32), (32, True, 64), (128, False, 128), (128, True, 192), (256, False, 256), (256, True, 352),
    (250, False, 256),
])
def test_the_smallest_training_size_keeps_every_multi_scale_batch_above_the_forward_minimum(
        forward_min: int, multi_scale: bool, expected: int) -> None:
    assert min_training_imgsz(forward_min, 32, multi_scale) == expected
    assert (smallest_scale(expected) if multi_scale else expected) >= forward_min
    if expected > 32:
        below = expected - 32
        assert (smallest_scale(below) if multi_scale else below) < forward_min


def test_smallest_scale_is_libreyolos_lowest_multi_scale_batch() -> None:
    """`libreyolo.data.augment.detr._generate_scales` starts at int(base * 0.75 / 32) * 32."""
    assert [smallest_scale(s) for s in (256, 320, 352, 640)] == [192, 224, 256, 480]


def _recipe_file(tmp_path: Path, family_name: str, mutate) -> Path:  # noqa: ANN001
    doc = json.loads(recipe_path(family_name).read_text())
    mutate(doc)
    path = tmp_path / f"{family_name}.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_recipe_whose_multi_scale_batches_fall_below_the_family_minimum_is_refused(tmp_path: Path) -> None:
    low = family("deim").min_imgsz["n"]
    path = _recipe_file(tmp_path, "deim", lambda d: d["sizes"]["n"].update(imgsz=low))
    with pytest.raises(RecipeError) as err:
        require_trainable(load_recipe(path))
    assert str(err.value) == (
        f"{path}: invalid recipe for LibreYOLO's deim:\n  sizes.n.imgsz: deim-n's forward pass fails below {low} px "
        f"and multi-scale training draws batches down to {smallest_scale(low)} px; use at least "
        f"{min_training_imgsz(low, 32, True)} (or set train.multi_scale false)")
    fixed = _recipe_file(tmp_path, "deim", lambda d: (d["sizes"]["n"].update(imgsz=low),
                                                      d["train"].update(multi_scale=False)))
    assert require_trainable(load_recipe(fixed)).recipe.sizes["n"].imgsz == low


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.update(family="lwdetr"), "family: lwdetr cannot be trained with this LibreYOLO: LW-DETR is shipped"),
    (lambda d: d.update(family="yolo99"), "family: LibreYOLO 1.6.0 has no detection family 'yolo99'"),
    (lambda d: d["sizes"].update(t=d["sizes"]["n"]), "sizes.t: dfine has no size 't'; its sizes: n, s, m, l, x"),
])
def test_a_recipe_for_what_libreyolo_cannot_train_names_the_field_and_still_loads_for_reading(
        tmp_path: Path, mutate, message: str) -> None:  # noqa: ANN001
    with pytest.raises(RecipeError, match="invalid recipe for LibreYOLO's") as err:
        require_trainable(load_recipe(_recipe_file(tmp_path, "dfine", mutate)))
    assert message in str(err.value)
    load_recipe(_recipe_file(tmp_path, "dfine", mutate))  # a recorded run's recipe is still readable


@pytest.mark.parametrize("name", PROTOCOL_RECIPES)
def test_every_protocol_recipe_loads_is_conformant_and_trains_a_size_libreyolo_has(name: str) -> None:
    loaded = require_trainable(load_recipe(recipe_path(name)))
    assert loaded.recipe.family == name and loaded.recipe.conformant, loaded.recipe.nonconformities()
    fam = check_trainable(name, next(iter(loaded.recipe.sizes)))
    for key in loaded.recipe.train:  # every train key reaches LibreYOLO's train() for this family
        assert key in fam.override_keys, f"recipes/rf100vl/{name}.json train.{key}"


@pytest.mark.parametrize("name", SMOKE_RECIPES)
def test_every_smoke_recipe_loads_and_is_marked_non_conformant(name: str) -> None:
    loaded = require_trainable(load_recipe(recipe_path(name, "smoke")))
    assert not loaded.recipe.conformant and loaded.recipe.family == name


def test_every_required_family_has_a_protocol_and_a_smoke_recipe() -> None:
    assert REQUIRED <= set(PROTOCOL_RECIPES) and REQUIRED <= set(SMOKE_RECIPES)


def test_bench_models_families_json_lists_every_family_with_its_recipes(capsys: pytest.CaptureFixture[str]) -> None:
    from bench_assets.cli import main

    assert main(["models", "families", "--json"]) == 0
    rows = {r["family"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(families())
    for row in rows.values():
        assert {"family", "sizes", "trainable", "reason", "protocol_recipe", "smoke_recipe"} <= set(row)
        assert (row["reason"] is None) == row["trainable"]
    assert rows["yolo9"]["protocol_recipe"] == "recipes/rf100vl/yolo9.json"
    assert rows["rfdetr"]["smoke_recipe"] == "recipes/rf100vl/smoke/rfdetr.json"
    assert rows["lwdetr"]["protocol_recipe"] is None and not rows["lwdetr"]["trainable"]
    assert rows["dfine"]["sizes"][:2] == ["n", "s"] and rows["dfine"]["weights"]["n"] == "LibreDFINEn"


def test_bench_models_families_table_says_how_many_train(capsys: pytest.CaptureFixture[str]) -> None:
    from bench_assets.cli import main

    assert main(["models", "families"]) == 0
    out = capsys.readouterr().out
    n = sum(f.trainable for f in families().values())
    assert f"{n} of {len(families())} detection families train" in out
    assert "not trainable: LW-DETR is shipped inference-only" in out


@pytest.mark.integration
def test_the_snapshot_is_what_the_pinned_libreyolo_says(tmp_path: Path) -> None:
    """Every field but the measured `min_imgsz` read again from the installed package (no model built)."""
    from bench_assets.rf100vl.training.child.families import inventory

    live = inventory(measure=False)
    snap = json.loads(SNAPSHOT.read_text())
    for doc in (live, snap):
        for f in doc["families"]:
            f.pop("min_imgsz")
    assert live == snap, f"the snapshot differs from the installed libreyolo: run `{REWRITE}`"
    shutil.rmtree(tmp_path)


def test_adjacent_sizes_are_ranked_in_libreyolos_order_whatever_recipe_registered_them() -> None:
    """`models.size_rank` (the adjacent-size check's order): yolo9-t registered with the smoke recipe (sizes: t) and
    yolo9-s with a recipe of its own (sizes: s) are neighbours, t before s; a family LibreYOLO does not list keeps its
    recipe's order (the synthetic campaigns' families)."""
    from bench_assets.rf100vl.report.warehouse_tables import _size_rank

    assert [_size_rank("yolo9", s, [s]) for s in ("t", "s", "m", "c")] == [0, 1, 2, 3]
    assert _size_rank("dfine", "s", ["s"]) == 1 and _size_rank("rtdetr", "r34", ["r34"]) == 1
    assert _size_rank("syna", "m", ["t", "s", "m", "c"]) == 2
