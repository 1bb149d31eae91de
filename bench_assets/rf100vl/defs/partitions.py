"""Partition definitions of the RF100-VL domain (dataset names and model keys are registered at run time), and
what a name must be to become a partition.

A dataset partition must be a known dataset: in the RF100-VL catalogue or the mini suite, or with a source
recorded under BENCH_HOME/sources (an import, a synthetic dataset), a stored version under BENCH_HOME/datasets or an
entry waiting in BENCH_HOME/inbox. A model partition must be a registered model: recorded under
BENCH_HOME/models (`bench train/campaign`), with runs or evaluations stored, or a family-size key a default recipe
under recipes/rf100vl defines. `register_partitions` / `register_model_partition` refuse anything else; names
added past them (the UI's "Add a partition") are removed by the `rf100vl_partition_guard` sensor
(`partition_guard.py`), which uses the same rule (`unknown_names`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from bench_assets.rf100vl.scoring.eval_store import eval_root
from bench_assets.rf100vl.training.run_store import runs_root

if TYPE_CHECKING:
    from bench_assets.rf100vl.training.recipes import LoadedRecipe

# Beta in dagster 1.13, and exactly the mapping dataset x model partitions need onto dataset partitions.
warnings.filterwarnings("ignore", message="Class `MultiToSingleDimensionPartitionMapping` is currently in beta")

DATASET_PARTITIONS_NAME = "rf100vl_dataset"
MODEL_PARTITIONS_NAME = "rf100vl_model"
dataset_partitions = dg.DynamicPartitionsDefinition(name=DATASET_PARTITIONS_NAME)
model_partitions = dg.DynamicPartitionsDefinition(name=MODEL_PARTITIONS_NAME)
# Multi-partition keys order dimensions alphabetically: "dataset|model".
dataset_model_partitions = dg.MultiPartitionsDefinition({"dataset": dataset_partitions, "model": model_partitions})
on_dataset = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="dataset")
on_model = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="model")


def split_key(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> tuple[str, str]:
    """(dataset, model) of a dataset x model partition."""
    keys = context.partition_key.keys_by_dimension  # type: ignore[union-attr]
    return keys["dataset"], keys["model"]


# ------------------------------------------------------------------------------------------ what is known


@dataclass(frozen=True)
class KnownNames:
    """The dataset names and model keys that may be partitions, read from the catalogue, the recipes and
    BENCH_HOME at one moment (`known_names`)."""

    home: Path
    datasets: frozenset[str]
    models: frozenset[str]


def _subdirs(d: Path) -> set[str]:
    return {p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")} if d.is_dir() else set()


def _json_stems(d: Path) -> set[str]:
    return {p.stem for p in d.glob("*.json") if not p.name.startswith(".")} if d.is_dir() else set()


def known_datasets(home: Path) -> frozenset[str]:
    from bench_assets.rf100vl.datasets.catalog import MINI_SUITE, load_catalog
    from bench_assets.rf100vl.datasets.inbox import TAR_SUFFIXES, inbox_name

    inbox = home / "inbox"
    waiting = ({inbox_name(p) for p in inbox.iterdir() if not p.name.startswith(".")
                and (p.is_dir() or p.name.endswith(TAR_SUFFIXES))} if inbox.is_dir() else set())
    return frozenset(set(load_catalog()) | set(MINI_SUITE) | _json_stems(home / "sources")
                     | _subdirs(home / "datasets") | waiting)


def recipe_models() -> set[str]:
    """family-size keys the default recipes define (recipes/rf100vl/<family>.json, one key per size)."""
    from bench_assets.rf100vl.training.recipes import RECIPES_DIR, RecipeError, load_recipe

    out = set()
    for path in sorted(RECIPES_DIR.glob("*.json")):
        try:
            recipe = load_recipe(path).recipe
        except RecipeError:
            continue  # a broken recipe registers nothing; `bench train` says what is wrong with it
        out |= {f"{recipe.family}-{size}" for size in recipe.sizes}
    return out


def known_models(home: Path) -> frozenset[str]:
    return frozenset(recipe_models() | _json_stems(home / "models") | _subdirs(runs_root(home))
                     | _subdirs(eval_root(home)))


def known_names(home: Path) -> KnownNames:
    return KnownNames(home=home, datasets=known_datasets(home), models=known_models(home))


# ----------------------------------------------------------------------------------------- the rule (pure)


def dataset_problem(name: str, known: KnownNames) -> str | None:
    """Why `name` may not be a dataset partition (None: it may)."""
    from bench_assets.rf100vl.datasets.sources import check_dataset_name

    fix = (f"fix: import it with `bench datasets import PATH --name {name}` (or drop it into {known.home / 'inbox'}), "
           "or register a built-in suite with `bench datasets register --suite rf100vl|rf20vl|mini`")
    try:
        check_dataset_name(name)
    except ValueError as exc:
        return f"{DATASET_PARTITIONS_NAME}: {exc}; {fix}"
    if name in known.datasets:
        return None
    return (f"{DATASET_PARTITIONS_NAME}: {name!r} is not a known dataset: not in the RF100-VL catalogue or the mini "
            f"suite, no source recorded under {known.home / 'sources'}, no stored version under "
            f"{known.home / 'datasets'}, no entry in {known.home / 'inbox'}; {fix}")


def model_problem(name: str, known: KnownNames) -> str | None:
    """Why `name` may not be a model partition (None: it may)."""
    from bench_assets.rf100vl.training.runplan import parse_model

    if name in known.models:
        return None
    fix = (f"fix: register it with `bench campaign --model {name} --suite S` (or `bench train`), which needs a "
           f"recipe for its family with that size under recipes/rf100vl")
    try:
        parse_model(name)
        what = "is not a registered model"
    except ValueError:
        what = "is not a family-size model key (e.g. yolo9-t, yolox-n)"
    return (f"{MODEL_PARTITIONS_NAME}: {name!r} {what}: no {known.home / 'models' / (name + '.json')}, no runs "
            f"or evaluations stored, and no recipe defines it (known: {', '.join(sorted(known.models)) or 'none'}); "
            f"{fix}")


def unknown_names(partitions_name: str, names: list[str], known: KnownNames) -> dict[str, str]:
    """{name: reason} for each name of `names` that may not be a partition of `partitions_name`."""
    problem = {DATASET_PARTITIONS_NAME: dataset_problem, MODEL_PARTITIONS_NAME: model_problem}[partitions_name]
    out = {}
    for name in names:
        reason = problem(name, known)
        if reason is not None:
            out[name] = reason
    return out


# ---------------------------------------------------------------------------------------- registration


def _refuse_unknown(partitions_name: str, names: list[str], home: Path | None) -> None:
    from resources.paths import bench_home_path

    unknown = unknown_names(partitions_name, names, known_names(home or bench_home_path()))
    if unknown:
        raise ValueError(f"refusing to add {len(unknown)} partition(s) to {partitions_name} (nothing was added): "
                         + "; ".join(unknown.values()))


def register_partitions(instance: dg.DagsterInstance, names: list[str], *, home: Path | None = None) -> list[str]:
    """Add dataset partitions that do not exist yet; return the new ones. Refuses (ValueError, nothing added) when
    a name is not a known dataset (`dataset_problem`); `home` defaults to BENCH_HOME."""
    from bench_assets.platform.instance import add_partitions

    _refuse_unknown(DATASET_PARTITIONS_NAME, names, home)
    return add_partitions(instance, DATASET_PARTITIONS_NAME, names)


def register_model_partition(instance: dg.DagsterInstance, model: str, *, home: Path | None = None) -> None:
    """Add a model partition. Refuses (ValueError) a key that is not a registered model (`model_problem`)."""
    from bench_assets.platform.instance import add_partitions

    _refuse_unknown(MODEL_PARTITIONS_NAME, [model], home)
    add_partitions(instance, MODEL_PARTITIONS_NAME, [model])


def register_import(instance: dg.DagsterInstance, name: str, source: str | Path, *, suite: str = "",
                    home: Path | None = None) -> list[str]:
    """The registration path of an import (`bench datasets import`): record `source` (a Roboflow-layout folder or
    a tar of one) as where dataset `name` comes from, which makes it a known dataset, then add its partition. The
    import run records the source again with what it learns (e.g. the Roboflow version)."""
    from bench_assets.rf100vl.datasets.sources import local_spec, register
    from resources.paths import bench_home_path

    home = home or bench_home_path()
    register(home / "sources", name, local_spec(source, [suite] if suite else []))
    return register_partitions(instance, [name], home=home)


def owned_paths(home: Path, kind: str, name: str) -> list[Path]:
    """What `bench datasets|models remove NAME --purge` removes: a dataset's versions, source record, inbox entry and
    the runs and evaluations made on it; a model's runs, evaluations, registration and submission."""
    from bench_assets.rf100vl.datasets.inbox import REFUSED_SUFFIX, TAR_SUFFIXES

    if kind == "dataset":
        inbox = home / "inbox"
        return [home / "datasets" / name, home / "sources" / f"{name}.json",
                *[inbox / f"{name}{s}" for s in ("", *TAR_SUFFIXES, REFUSED_SUFFIX)],
                *sorted(runs_root(home).glob(f"*/{name}")), *sorted(eval_root(home).glob(f"*/{name}"))]
    return [runs_root(home) / name, eval_root(home) / name, home / "models" / f"{name}.json",
            home / "submissions" / f"{name}.json"]


def campaign_datasets(suite: str | None, datasets: str | None) -> list[str]:
    """The datasets a campaign covers: the suite's, or `datasets` (comma-separated), or the part of the suite they
    name (ValueError for names outside it)."""
    from bench_assets.rf100vl.datasets.catalog import suite_members

    chosen = [d for d in (datasets or "").split(",") if d]
    names = suite_members(suite) if suite else chosen
    if suite and chosen:  # a part of the suite (the model is still registered for the whole suite)
        outside = [d for d in chosen if d not in names]
        if outside:
            raise ValueError(f"--datasets {','.join(outside)}: not in suite {suite}; drop them or the --suite")
        names = chosen
    return names


def register_campaign(instance: dg.DagsterInstance, home: Path, model: str, recipe: str, suite: str | None,
                      datasets: str | None, pilot: list[str] | None = None) -> tuple[list[str], LoadedRecipe]:
    """Validate and record the model with its recipe (none named: its registered one, else `default`), record the
    mini suite's sources, and register the dataset and model partitions. (names, the recipe loaded)."""
    from bench_assets.rf100vl.datasets.sources import SourceSpec, register
    from bench_assets.rf100vl.training.models import register_model, registered_recipe

    names = campaign_datasets(suite, datasets)
    outside = sorted(set(pilot or []) - set(names))
    if outside:
        raise ValueError(f"--pilot names datasets outside the campaign: {', '.join(outside)}")
    _, loaded = register_model(home, model, recipe or registered_recipe(home, model), suite=suite, datasets=names,
                               pilot=pilot)
    if suite == "mini":
        for n in names:
            register(home / "sources", n, SourceSpec(kind="mini", suites=["mini"]))
    register_partitions(instance, names, home=home)
    register_model_partition(instance, model, home=home)
    return names, loaded
