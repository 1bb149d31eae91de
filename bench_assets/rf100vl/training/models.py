"""The model registry: which recipe a model key trains with, recorded under BENCH_HOME/models/.

Like dataset sources, the choice is recorded when a model is registered (`bench train`, `bench
campaign`, `bench demo`) so that UI materializations and backfills use the same recipe without run
config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.training.families import check_trainable, families
from bench_assets.rf100vl.training.recipes import (
    LoadedRecipe,
    RecipeError,
    load_recipe,
    recipe_path,
    require_trainable,
)
from bench_assets.rf100vl.training.runplan import ModelKey, parse_model
from resources.paths import REPO_ROOT


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    recipe: str = "default"  # "default", "smoke", or a path to a recipe JSON
    suite: str | None = None  # the suite the model's campaign targets (coverage is judged against it)
    datasets: list[str] = []  # the explicit dataset list of a campaign started without a suite
    pilot: list[str] = []  # the campaign's first wave (`--pilot`): the pilot gate must be green before the rest
    gate_overrides: list[dict[str, Any]] = []  # each `--override-gate`: when, and the conditions that were red

    def expected_suite(self) -> str:
        """The suite name coverage is judged against: the campaign's suite, or the model's own list."""
        return self.suite or f"{self.model}:datasets"


def models_dir(home: Path) -> Path:
    return home / "models"


def register_model(home: Path, key: str, recipe: str = "default", suite: str | None = None,
                   datasets: list[str] | None = None, pilot: list[str] | None = None) -> tuple[ModelKey, LoadedRecipe]:
    """Validate the key and its recipe (a bad recipe fails here, before anything is queued) and record it
    with the suite (or dataset list) its campaign targets. A pilot, once declared, and every gate override stay
    recorded when the model is registered again without one."""
    model = parse_model(key)
    check_trainable(model.family, model.size)  # LibreYOLO's reason, before a recipe is looked for
    loaded = load_recipe(recipe_path(model.family, recipe))
    loaded.recipe.size(model.size, loaded.path)
    if loaded.recipe.family != model.family:
        raise RecipeError(f"{loaded.path}: recipe is for family {loaded.recipe.family!r}, not {model.family!r}")
    require_trainable(loaded)
    before = read_entry(home, key)
    entry = ModelEntry(model=key, recipe=recipe, suite=suite, datasets=[] if suite else datasets or [],
                       pilot=pilot if pilot is not None else (before.pilot if before else []),
                       gate_overrides=before.gate_overrides if before else [])
    atomic_write_json(models_dir(home) / f"{key}.json", entry.model_dump())
    return model, loaded


def record_gate_override(home: Path, key: str, red: list[str], at: str) -> None:
    """Record that the pilot gate of `key` was overridden at `at` while `red` conditions failed."""
    entry = read_entry(home, key)
    if entry is None:
        raise ValueError(f"{key} is not registered")
    entry.gate_overrides.append({"at": at, "red": red})
    atomic_write_json(models_dir(home) / f"{key}.json", entry.model_dump())


def read_entry(home: Path, key: str) -> ModelEntry | None:
    p = models_dir(home) / f"{key}.json"
    return ModelEntry.model_validate_json(p.read_text()) if p.exists() else None


def iter_entries(home: Path) -> list[ModelEntry]:
    d = models_dir(home)
    return [ModelEntry.model_validate_json(p.read_text()) for p in sorted(d.glob("*.json"))] if d.exists() else []


def registered_recipe(home: Path, key: str) -> str:
    """The recipe a model trains with when none is named: the one it was registered with, else `default`. Every
    verb that takes `--recipe` (`bench train`, `campaign`, `plan`) and every materialization follow this rule."""
    entry = read_entry(home, key)
    return entry.recipe if entry is not None else "default"


def model_recipe(home: Path, key: str, override: str = "") -> tuple[ModelKey, LoadedRecipe]:
    model = parse_model(key)
    variant = override or registered_recipe(home, key)
    loaded = load_recipe(recipe_path(model.family, variant))
    if loaded.recipe.family != model.family:
        raise RecipeError(f"{loaded.path}: recipe is for family {loaded.recipe.family!r}, not {model.family!r}")
    loaded.recipe.size(model.size, loaded.path)
    return model, loaded


def family_rows() -> list[dict[str, Any]]:
    """`bench models families`: every detection family of the pinned LibreYOLO (training/families.py) with the
    recipes this project has for it (a path relative to the repository, or None)."""
    rows = []
    for name, fam in sorted(families().items()):
        recipes = {kind: recipe_path(name, variant) for kind, variant in (("protocol_recipe", "default"),
                                                                          ("smoke_recipe", "smoke"))}
        rows.append({
            "family": name, "group": fam.group, "sizes": fam.size_names,
            "default_imgsz": dict(fam.sizes), "trainable": fam.trainable, "reason": fam.reason,
            "imgsz_multiple": fam.imgsz_multiple, "min_imgsz": fam.min_imgsz, "defaults": fam.defaults,
            "weights": {size: w["name"] for size, w in fam.weights.items() if w["published"]},
            "unpublished_weights": {size: w.get("reason") for size, w in fam.weights.items() if not w["published"]},
            "needs": list(fam.needs), "trainer": fam.trainer, "config": fam.config,
            **{kind: str(p.relative_to(REPO_ROOT)) if p.is_file() else None for kind, p in recipes.items()},
        })
    return rows


def smoke_models() -> list[str]:
    """The model key of every trainable family with a smoke recipe, at that recipe's first size (`bench models check
    --all`, `scripts/gpu_smoke.sh`)."""
    return [f"{name}-{next(iter(load_recipe(recipe_path(name, 'smoke')).recipe.sizes))}"
            for name, fam in sorted(families().items()) if fam.trainable and recipe_path(name, "smoke").is_file()]
