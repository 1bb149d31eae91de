"""A campaign started from the UI, the same as `bench campaign`: the launchpad job `rf100vl_launch_campaign` with
typed choices (the model from LibreYOLO's trainable families and this project's recipes, the recipe, the suite or
datasets, a pilot, replicates) registers the model, its replicates and its kill-and-resume check, and writes a
launch request (`BENCH_HOME/campaigns/<model>.json`); the sensor `rf100vl_campaign_launcher` then launches it:

1. the datasets not stored yet (`rf100vl_dataset_job`), then the model's pretrained weights when its recipe names
   some and none are locked (`rf100vl_pretrained_job`);
2. the first wave, longest first (`rf100vl_campaign_job`, priority = train images);
3. with a pilot, once every first-wave partition succeeded: a warehouse load if the warehouse is older than those
   runs, then the pilot gate (report/pilot_gate.py); green (or overridden in the request, which the registration
   records) launches the rest; red launches nothing and the sensor's skip reason names each red condition.

Run keys make each request once per launch request. Replaces "Add a partition" (free text, no recipe or suite,
which the partition guard removes again) as the way to start a campaign from the UI.
"""

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from bench_assets.platform.automation import sensor_interval_s
from bench_assets.platform.contribution import WAREHOUSE_KEY
from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.defs.jobs import campaign_job, dataset_job, pretrained_job
from bench_assets.rf100vl.defs.recipe_choice import RECIPE_HELP, RecipeChoice, recipe_override
from resources.bench_home import BenchHome

REQUESTS_DIR = "campaigns"
# The loader, selected by key (bench_assets/report owns its job; importing it would make a cycle): the pilot gate
# reads the warehouse, so the launcher reloads it after the pilot wave.
gate_warehouse_job = dg.define_asset_job(
    "rf100vl_gate_warehouse_job", selection=dg.AssetSelection.assets(WAREHOUSE_KEY),
    description="Reload the warehouse (and its checks, the pilot gate among them) after a campaign's pilot wave.")


def model_choices() -> list[str]:
    """Every family-size key LibreYOLO can train here that has a protocol recipe for its size."""
    from bench_assets.rf100vl.training.families import families
    from bench_assets.rf100vl.training.recipes import load_recipe, recipe_path

    keys = []
    for name, fam in sorted(families().items()):
        path = recipe_path(name, "default")
        if fam.trainable and path.is_file():
            keys += [f"{name}-{size}" for size in load_recipe(path).recipe.sizes]
    return keys


ModelChoice = Enum("ModelChoice", {k.replace("-", "_"): k for k in model_choices()})
SuiteChoice = Enum("SuiteChoice", {n: n for n in ("rf100vl", "rf20vl", "mini", "datasets")})
PilotChoice = Enum("PilotChoice", {n: n for n in ("none", "rf20vl", "datasets")})


class LaunchCampaignConfig(dg.Config):
    model: ModelChoice = Field(description="The model key (family-size): every trainable LibreYOLO family with a "
                                           "protocol recipe.")
    recipe: RecipeChoice = Field(default=RecipeChoice["registered"], description=RECIPE_HELP)
    suite: SuiteChoice = Field(default=SuiteChoice["rf100vl"], description="The suite, or `datasets` for the list "
                                                                           "below.")
    datasets: list[str] = Field(default=[], description="With suite `datasets`: the datasets; with a suite: a part "
                                                        "of it (empty: all).")
    pilot: PilotChoice = Field(default=PilotChoice["none"], description="The first wave: rf20vl, or `datasets` for "
                                                                         "pilot_datasets; the rest waits for the "
                                                                         "pilot gate.")
    pilot_datasets: list[str] = []
    replicates: int = Field(default=1, ge=1, description="Seeds per chosen dataset, the model's own included.")
    replicate_datasets: list[str] = Field(default=[], description="The datasets to replicate (empty: all).")
    override_gate: bool = Field(default=False, description="Launch the rest although the pilot gate is red "
                                                           "(recorded, and the report says so).")


def request_path(home: Path, model: str) -> Path:
    return home / REQUESTS_DIR / f"{model}.json"


@dg.op(description="Register a campaign (model, recipe, datasets, pilot, replicates) and request its launch.")
def launch_campaign(context: dg.OpExecutionContext, config: LaunchCampaignConfig, home: BenchHome) -> None:
    from bench_assets.rf100vl.defs.campaign_runs import campaign_waves
    from bench_assets.rf100vl.defs.partitions import register_campaign
    from bench_assets.rf100vl.training.recipes import RecipeError

    model = str(config.model.value)
    suite = None if config.suite.value == "datasets" else str(config.suite.value)
    if suite is None and not config.datasets:
        raise dg.Failure("suite `datasets` needs the datasets list", allow_retries=False)
    pilot = None
    if config.pilot.value == "datasets":
        pilot = config.pilot_datasets
    elif config.pilot.value == "rf20vl":
        from bench_assets.rf100vl.datasets.catalog import suite_members

        pilot = suite_members("rf20vl")
    try:
        names, _ = register_campaign(context.instance, home.path, model, recipe_override(config.recipe), suite,
                                     ",".join(config.datasets) or None, pilot)
        waves = campaign_waves(context.instance, home.path, model, names, config.replicates,
                               ",".join(config.replicate_datasets) or None, gated=True)
    except (RecipeError, ValueError, KeyError) as exc:
        raise dg.Failure(str(exc), allow_retries=False) from None
    doc = {"id": uuid.uuid4().hex[:12], "model": model, "override_gate": config.override_gate,
           "requested_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "datasets": names,
           "waves": [{"name": name, "partitions": [[r.dataset, r.model, r.train_images] for r in parts]}
                     for name, parts in waves]}
    atomic_write_json(request_path(home.path, model), doc)
    context.log.info(f"{model}: {sum(len(w['partitions']) for w in doc['waves'])} partition(s) in "
                     f"{len(doc['waves'])} wave(s) requested; rf100vl_campaign_launcher launches them")
    context.add_output_metadata({"model": model, "datasets": len(names), "request": str(request_path(home.path, model)),
                                 "waves": dg.MetadataValue.json([{"wave": w["name"], "partitions": len(w["partitions"])}
                                                                 for w in doc["waves"]])})


@dg.job(name="rf100vl_launch_campaign", description="Start a campaign from the UI: typed choices, the same as "
                                                     "`bench campaign` (the launcher sensor runs its waves).")
def launch_campaign_job() -> None:
    launch_campaign()


@dataclass(frozen=True)
class Step:
    """What the launcher does next for one request: run requests, or why it waits (`waiting`); `overridden`: the
    red conditions of a gate the request overrides (the sensor records the override once)."""
    runs: list[dg.RunRequest]
    waiting: str | None
    overridden: list[str] | None = None


def partition_request(rid: str, wave: str, dataset: str, model: str, images: int) -> dg.RunRequest:
    return dg.RunRequest(run_key=f"{rid}:{wave}:{dataset}|{model}", job_name=campaign_job.name,
                         partition_key=dg.MultiPartitionKey({"dataset": dataset, "model": model}),
                         tags={"dagster/priority": str(images), "bench/launched_by": "launchpad"})


def next_step(doc: dict[str, Any], *, missing_datasets: list[str], weights_missing: bool,
              statuses: dict[str, str], stale_since: float | None, gate: Any) -> Step:
    """The launcher's decision for one request (pure): `statuses` maps "dataset|model" to its latest campaign run's
    status; `stale_since` is when the newest pilot run ended if the warehouse is older than that, else None; `gate`
    returns the pilot gate's Finding, called only when needed."""
    rid, model = doc["id"], doc["model"]
    if missing_datasets:
        return Step([dg.RunRequest(run_key=f"{rid}:dataset:{d}", job_name=dataset_job.name, partition_key=d)
                     for d in missing_datasets], f"importing {len(missing_datasets)} dataset(s) first")
    if weights_missing:
        return Step([dg.RunRequest(run_key=f"{rid}:pretrained:{model}", job_name=pretrained_job.name,
                                   partition_key=model)], f"acquiring {model}'s pretrained weights first")
    first, *rest = doc["waves"]
    runs = [partition_request(rid, first["name"], d, m, n) for d, m, n in first["partitions"]]
    if not rest:
        return Step(runs, None)
    unfinished = [f"{d}|{m}" for d, m, _ in first["partitions"] if statuses.get(f"{d}|{m}") != "SUCCESS"]
    if unfinished:
        return Step(runs, f"{len(unfinished)} pilot partition(s) not finished: {', '.join(unfinished[:5])}")
    if stale_since is not None:
        return Step([dg.RunRequest(run_key=f"{rid}:warehouse:{stale_since:.0f}", job_name=gate_warehouse_job.name)],
                    "loading the warehouse for the pilot gate")
    finding = gate()
    red = [r["name"] for r in finding.rows if not r["passed"]]
    if red and not doc["override_gate"]:
        return Step([], "pilot gate red: " + finding.description)
    runs += [partition_request(rid, w["name"], d, m, n) for w in rest for d, m, n in w["partitions"]]
    return Step(runs, None, red or None)


@dg.sensor(jobs=[campaign_job, dataset_job, pretrained_job, gate_warehouse_job],
           minimum_interval_seconds=sensor_interval_s(30), default_status=dg.DefaultSensorStatus.RUNNING,
           description="Launches the campaigns the launchpad job requested: datasets and weights first, the pilot "
                       "wave, then the rest while the pilot gate is green.")
def rf100vl_campaign_launcher(context: dg.SensorEvaluationContext, home: BenchHome) -> dg.SensorResult | dg.SkipReason:
    folder = home.path / REQUESTS_DIR
    docs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    if not docs:
        return dg.SkipReason("no campaign requested from the launchpad")
    from bench_assets.rf100vl.defs.jobs import latest_runs

    statuses = latest_runs(context.instance)  # once per tick: it reads every campaign run's record
    runs, waiting = [], []
    for doc in docs:
        step = next_step(doc, **_facts(context.instance, home.path, doc, statuses))
        runs += step.runs
        if step.waiting:
            waiting.append(f"{doc['model']}: {step.waiting}")
        if step.overridden and not doc.get("override_recorded"):
            from bench_assets.rf100vl.training.models import record_gate_override

            record_gate_override(home.path, doc["model"], step.overridden,
                                 dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
            atomic_write_json(request_path(home.path, doc["model"]), {**doc, "override_recorded": True})
            context.log.warning(f"{doc['model']}: pilot gate red ({', '.join(step.overridden)}) and OVERRIDDEN by "
                                "the launch request: recorded; the rest is launched")
    for line in waiting:
        context.log.info(line)
    return dg.SensorResult(run_requests=runs, skip_reason="; ".join(waiting) if waiting and not runs else None)


def _facts(instance: dg.DagsterInstance, home: Path, doc: dict[str, Any], statuses: dict[str, str]
           ) -> dict[str, Any]:
    """What next_step needs to know about the home and the instance."""
    from bench_assets.rf100vl.datasets.store import current_version
    from bench_assets.rf100vl.report.pilot_gate import pilot_gate
    from bench_assets.rf100vl.training.models import model_recipe, read_entry
    from bench_assets.rf100vl.training.pretrained import read_lock
    from bench_assets.rf100vl.training.runplan import parse_model, resume_check_key

    model = doc["model"]
    _, recipe = model_recipe(home, model)
    names = {d for w in doc["waves"] for d, _, _ in w["partitions"]}
    warehouse = BenchHome(root=str(home)).warehouse_path
    first = doc["waves"][0]["partitions"]
    finished = [_run_end(instance, f"{d}|{m}") for d, m, _ in first]
    newest = max((t for t in finished if t is not None), default=0.0)
    entry = read_entry(home, model)
    stale = not warehouse.exists() or warehouse.stat().st_mtime < newest
    return {"missing_datasets": sorted(n for n in names if current_version(home / "datasets", n) is None),
            "weights_missing": (recipe.recipe.pretrained.get(parse_model(model).size) is not None
                                and read_lock(home, model) is None),
            "statuses": statuses, "stale_since": newest if stale else None,
            "gate": lambda: pilot_gate(warehouse, model, entry.pilot if entry else [], resume_check_key(model))}


def _run_end(instance: dg.DagsterInstance, partition: str) -> float | None:
    """When the newest campaign run of a "dataset|model" partition ended (epoch seconds), None if none has."""
    records = instance.get_run_records(dg.RunsFilter(job_name=campaign_job.name,
                                                     tags={"dagster/partition": partition}), limit=1)
    return records[0].end_time if records else None
