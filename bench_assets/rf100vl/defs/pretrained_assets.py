"""`rf100vl/pretrained` [model]: the weights a model fine-tunes from, acquired from its recipe's Hugging Face repo or a
local file, checked against the family and size, and locked (`training/pretrained_hub.py`, `training/pretrained.py`).
Every checkpoint of the model depends on it."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from bench_assets.rf100vl.defs.partitions import model_partitions
from bench_assets.rf100vl.defs.recipe_choice import RECIPE_HELP, RecipeChoice, recipe_override
from bench_assets.rf100vl.training.models import model_recipe
from bench_assets.rf100vl.training.pretrained import PretrainedError
from bench_assets.rf100vl.training.pretrained_hub import acquire_weights
from bench_assets.rf100vl.training.recipes import RecipeError
from resources.bench_home import BenchHome


class PretrainedConfig(dg.Config):
    path: str = Field(default="", description="A local weights file (.pt) to check and store instead of fetching the "
                      "recipe's from the Hugging Face hub (an offline box, or weights of your own).")
    name: str = Field(default="", description="With `path`: the name runs record, e.g. LibreYOLO9t.pt (default: the "
                      "file's name). A run is protocol-conformant only when it names the recipe's weights.")
    recipe: RecipeChoice = Field(default=RecipeChoice["registered"], description=RECIPE_HELP)
    refresh: bool = Field(default=False, description="Fetch from the hub again even when the recipe's weights are "
                          "stored (a moved branch gives another sha256: the model's runs then get a new signature).")


def _metadata(lock: dict, how: str) -> dict[str, dg.MetadataValue]:
    src = lock["source"]
    return {
        "name": dg.MetadataValue.text(lock["name"]),
        "sha256": dg.MetadataValue.text(lock["sha256"]),
        "acquired": dg.MetadataValue.text(how),
        "source": dg.MetadataValue.json(src),
        "commit": dg.MetadataValue.text(src.get("commit") or "(local file)"),
        "params_millions": dg.MetadataValue.float(round(lock["params"] / 1e6, 3)),
        "megabytes": dg.MetadataValue.float(round(lock["bytes"] / 1e6, 3)),
        "tensors_loaded": dg.MetadataValue.text(f"{lock['loaded_tensors']} of {lock['model_tensors']}"),
        "backbone_loaded": dg.MetadataValue.text(f"{lock['backbone_loaded']} of {lock['backbone_tensors']} "
                                                 f"({lock['backbone']})"),
    }


@dg.asset(key=["rf100vl", "pretrained"], group_name="rf100vl", partitions_def=model_partitions, kinds={"pytorch"},
          description="The weights a model fine-tunes from (`pretrained/<model>/`): its recipe's published COCO "
                      "weights from the hub (revision resolved to a commit and locked) or a local file; loads into "
                      "its family and size, sha256 and parameters recorded.")
def pretrained(context: dg.AssetExecutionContext, config: PretrainedConfig, home: BenchHome) -> dg.MaterializeResult:
    model_key = context.partition_key
    try:
        model, recipe = model_recipe(home.path, model_key, recipe_override(config.recipe))
        ref = recipe.recipe.pretrained.get(model.size)
        if config.name and not config.path:
            raise PretrainedError(f"{model_key}: `name` names a local file's weights; set `path` too, or leave "
                                  "`name` empty to fetch the recipe's")
        got = acquire_weights(home.path, model_key, ref, cache_dir=home.hf_cache_dir,
                              path=Path(config.path) if config.path else None, name=config.name or None,
                              refresh=config.refresh)
    except (PretrainedError, RecipeError, ValueError) as exc:
        raise dg.Failure(description=str(exc), metadata={"model": model_key}, allow_retries=False) from None
    lock = got.lock
    context.log.info(f"{model_key}: {lock['name']} sha256 {lock['sha256']} ({got.how})")
    return dg.MaterializeResult(metadata=_metadata(lock, got.how), data_version=dg.DataVersion(lock["sha256"][:16]))

