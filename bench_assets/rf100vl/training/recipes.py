"""Training recipes: one JSON file per model family under `recipes/rf100vl/`, validated here.

A recipe is conformant when its protocol block is exactly the RF100-VL fully supervised protocol
(REFERENCE.md section 2). Conformance is computed, never declared: a smoke recipe is simply one whose
protocol differs (fewer epochs, a smaller image size), and it shows as non-conformant everywhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench_assets.rf100vl.training.families import FamilyError, family
from resources.paths import REPO_ROOT

RECIPES_DIR = REPO_ROOT / "recipes" / "rf100vl"
PROTOCOL_VERSION = "rf100vl-fs-v1"
# The protocol's fixed values; a recipe that differs from any of these is not conformant.
PROTOCOL = {"version": PROTOCOL_VERSION, "epochs": 100, "effective_batch": 16,
            "selection_metric": "valid_mAP50_95", "eval_interval": 1, "patience": 0, "ema": True, "seed": 0}


class RecipeError(ValueError):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Protocol(_Strict):
    version: str
    epochs: int = Field(gt=0)
    effective_batch: int = Field(gt=0)
    selection_metric: Literal["valid_mAP50_95"]
    eval_interval: int = Field(gt=0)
    patience: int = Field(ge=0)
    ema: bool
    seed: int = Field(ge=0)
    precision: Literal["fp32", "bf16", "fp16"]
    cuda_graph: bool = False
    cache: Literal[False, "ram", "disk"] = False


class SizeRecipe(_Strict):
    imgsz: int = Field(gt=0, multiple_of=32)
    lr0: float = Field(gt=0, lt=1)
    physical_batch: int = Field(gt=0)
    fallback_physical_batch: int = Field(gt=0)

    @model_validator(mode="after")
    def _fallback_smaller(self) -> SizeRecipe:
        if self.fallback_physical_batch >= self.physical_batch:
            raise ValueError("fallback_physical_batch must be smaller than physical_batch")
        return self


class DenseFallback(_Strict):
    max_annotations_per_image_threshold: int = Field(gt=0)
    physical_batch: int = Field(gt=0)


class Source(_Strict):
    repository: str
    commit: str
    license: str
    # Where each value of the recipe comes from, by field (`train.optimizer`: "libreyolo 1.6.0 DFINEConfig default").
    values: dict[str, str] = {}


class PretrainedRef(_Strict):
    """The published weights a size fine-tunes from (LibreYOLO's naming, `bench models families`)."""
    name: str  # the file name runs record and the submission states, e.g. LibreYOLO9t.pt
    repo: str  # the Hugging Face repository, e.g. LibreYOLO/LibreYOLO9t
    revision: str = "main"  # what to fetch; the commit it resolved to is locked when the weights are acquired


class Invariants(_Strict):
    """Facts of the built model the run must have (training/invariants.py checks them before the first epoch)."""
    batchnorm_eps: float | None = Field(default=None, gt=0)


class Recipe(_Strict):
    family: str
    protocol: Protocol
    sizes: dict[str, SizeRecipe]
    # The protocol fine-tunes COCO-pretrained weights: per size, the weights a run starts from.
    pretrained: dict[str, PretrainedRef] = {}
    invariants: Invariants = Invariants()
    train: dict[str, float | int | str | bool | None] = {}
    dense_oom_fallback: DenseFallback
    source: Source

    @model_validator(mode="after")
    def _batches_divide(self) -> Recipe:
        eff = self.protocol.effective_batch
        for size, s in self.sizes.items():
            for b in (s.physical_batch, s.fallback_physical_batch):
                if eff % b:
                    raise ValueError(f"sizes.{size}: physical batch {b} does not divide effective_batch {eff}")
        if eff % self.dense_oom_fallback.physical_batch:
            raise ValueError("dense_oom_fallback.physical_batch must divide effective_batch")
        return self

    @property
    def conformant(self) -> bool:
        return not self.nonconformities()

    def nonconformities(self) -> list[str]:
        got = self.protocol.model_dump()
        out = [f"protocol.{k} is {got[k]!r}, the protocol requires {v!r}" for k, v in PROTOCOL.items() if got[k] != v]
        unstarted = [s for s in self.sizes if s not in self.pretrained]
        if unstarted:
            out.append(f"pretrained names no weights for {', '.join(unstarted)}: the protocol fine-tunes "
                       "COCO-pretrained weights, a run from scratch is not comparable with published rows")
        return out

    def size(self, size: str, path: Path | str = "recipe") -> SizeRecipe:
        if size not in self.sizes:
            raise RecipeError(f"{path}: no size {size!r} in sizes (has {', '.join(sorted(self.sizes))}); add it")
        return self.sizes[size]


class LoadedRecipe(_Strict):
    path: str
    sha256: str
    recipe: Recipe


def recipe_names() -> list[str]:
    """The recipe names `recipe_path` knows: `default` and every variant folder under RECIPES_DIR."""
    return ["default", *sorted(p.name for p in RECIPES_DIR.iterdir() if p.is_dir())]


def recipe_path(family: str, variant: str = "default") -> Path:
    """`default` -> recipes/rf100vl/<family>.json; `smoke` -> recipes/rf100vl/smoke/<family>.json;
    anything ending in .json is a path."""
    if variant.endswith(".json"):
        return Path(variant).expanduser().resolve()
    if variant == "default":
        return RECIPES_DIR / f"{family}.json"
    return RECIPES_DIR / variant / f"{family}.json"


def require_trainable(loaded: LoadedRecipe) -> LoadedRecipe:
    """`loaded`, when the installed LibreYOLO can train it (`family_problems`); RecipeError naming the file and each
    field otherwise. Registering a model and starting a training run ask this; reading a recorded recipe (the
    warehouse, the report) does not, so runs of a family a later LibreYOLO dropped still load."""
    problems = family_problems(loaded.recipe)
    if problems:
        raise RecipeError(f"{loaded.path}: invalid recipe for LibreYOLO's {loaded.recipe.family}:\n  "
                          + "\n  ".join(problems))
    return loaded


def family_problems(recipe: Recipe) -> list[str]:
    """What LibreYOLO's family says against the recipe: a family it cannot train, a size it does not have, an image
    size off the family's rule (training/families.py), each as `field: why`."""
    try:
        fam = family(recipe.family)
    except FamilyError as exc:
        return [f"family: {exc}"]
    if not fam.trainable:
        return [f"family: {recipe.family} cannot be trained with this LibreYOLO: {fam.reason}"]
    problems = []
    for size, s in recipe.sizes.items():
        if size not in fam.size_names:
            problems.append(f"sizes.{size}: {recipe.family} has no size {size!r}; its sizes: "
                            f"{', '.join(fam.size_names)}")
        else:
            multi_scale = recipe.train.get("multi_scale")
            problems += [f"sizes.{size}.imgsz: {p}" for p in fam.imgsz_problems(
                size, s.imgsz, None if multi_scale is None else bool(multi_scale))]
    return problems


def load_recipe(path: Path) -> LoadedRecipe:
    if not path.is_file():
        raise RecipeError(f"{path}: recipe file not found; recipes live in {RECIPES_DIR}: "
                          f"{', '.join(recipe_names())} or a recipe file's path ending in .json")
    raw = path.read_bytes()
    try:
        recipe = Recipe.model_validate_json(raw)
    except ValidationError as exc:
        lines = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise RecipeError(f"{path}: invalid recipe:\n  " + "\n  ".join(lines)) from None
    return LoadedRecipe(path=str(path), sha256=hashlib.sha256(raw).hexdigest(), recipe=recipe)
