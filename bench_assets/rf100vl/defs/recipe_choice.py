"""The recipe a launch may choose, as an enum: Dagster validates run config before it creates a run, so a mistyped
name is refused in the launchpad and never becomes a failed run that marks a good partition Failed."""

from enum import Enum

from bench_assets.rf100vl.training.recipes import recipe_names

RecipeChoice = Enum("RecipeChoice", {n: n for n in ("registered", *recipe_names())})
RECIPE_HELP = ("`registered`: the recipe the model was registered with (bench campaign/train --recipe); or `default` "
               "(the RF100-VL protocol), `smoke` (a short CPU run, not conformant), `gpu-smoke`.")


def recipe_override(choice: Enum) -> str:
    """The recipe name `training/models.model_recipe` takes: '' for the registered one."""
    return "" if choice == RecipeChoice["registered"] else str(choice.value)
