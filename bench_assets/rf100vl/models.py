"""The model registry: which recipe a model key trains with, recorded under BENCH_HOME/models/.

Like dataset sources, the choice is recorded when a model is registered (`bench train`, `bench
campaign`, `bench demo`) so that UI materializations and backfills use the same recipe without run
config.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bench_assets.fsutil import atomic_write_json
from bench_assets.rf100vl.recipes import LoadedRecipe, RecipeError, load_recipe, recipe_path
from bench_assets.rf100vl.runplan import ModelKey, parse_model


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    recipe: str = "default"  # "default", "smoke", or a path to a recipe JSON


def models_dir(home: Path) -> Path:
    return home / "models"


def register_model(home: Path, key: str, recipe: str = "default") -> tuple[ModelKey, LoadedRecipe]:
    """Validate the key and its recipe (a bad recipe fails here, before anything is queued) and record it."""
    model = parse_model(key)
    loaded = load_recipe(recipe_path(model.family, recipe))
    loaded.recipe.size(model.size, loaded.path)
    if loaded.recipe.family != model.family:
        raise RecipeError(f"{loaded.path}: recipe is for family {loaded.recipe.family!r}, not {model.family!r}")
    atomic_write_json(models_dir(home) / f"{key}.json", ModelEntry(model=key, recipe=recipe).model_dump())
    return model, loaded


def model_recipe(home: Path, key: str, override: str = "") -> tuple[ModelKey, LoadedRecipe]:
    model = parse_model(key)
    variant = override
    if not variant:
        p = models_dir(home) / f"{key}.json"
        variant = ModelEntry.model_validate_json(p.read_text()).recipe if p.exists() else "default"
    loaded = load_recipe(recipe_path(model.family, variant))
    if loaded.recipe.family != model.family:
        raise RecipeError(f"{loaded.path}: recipe is for family {loaded.recipe.family!r}, not {model.family!r}")
    loaded.recipe.size(model.size, loaded.path)
    return model, loaded
