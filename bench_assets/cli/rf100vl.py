"""`bench` verbs of the RF100-VL family: datasets, train / campaign, status, submissions, publish, rescore, score."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench_assets.cli.common import fail, load_warehouse, report
from resources.paths import bench_home_path


def materialize_datasets(instance: Any, names: list[str], run_config: dict | None = None) -> list[str]:
    """Run the dataset job per partition; return the names that failed (reasons printed)."""
    from bench_assets.cli.location import run_job
    from bench_assets.rf100vl.defs.jobs import dataset_job

    failed = []
    for name in names:
        outcome = run_job(instance, dataset_job, partition_key=name, run_config=run_config)
        if report(outcome, f"dataset {name}"):
            failed.append(name)
        else:
            print(f"dataset {name}: ok (run {outcome.run_id})")
    return failed


def print_scores(home: Path) -> None:
    from bench_assets.platform.warehouse import query

    rows = query(home / "warehouse.duckdb",
                 "SELECT s.model, s.dataset, s.mAP50_95, s.mAP50, s.AR_max_det, s.backend, r.valid_mAP50_95, "
                 "r.best_epoch, r.recipe_conformant, round(r.wall_seconds) AS train_s FROM scores s "
                 "JOIN runs r USING (run_signature) WHERE s.is_current ORDER BY s.dataset")
    print("\nmodel     dataset       test mAP50-95  mAP50   AR@500  valid mAP50-95  best epoch  train s  conformant")
    for r in rows:
        print(f"{r['model']:9s} {r['dataset']:13s} {r['mAP50_95']:13.4f}  {r['mAP50']:.4f}  {r['AR_max_det']:.4f}  "
              f"{r['valid_mAP50_95'] or 0:14.4f}  {r['best_epoch'] or 0:10d}  {r['train_s']:7.0f}  "
              f"{'yes' if r['recipe_conformant'] else 'NO (smoke recipe)'}")


# ------------------------------------------------------------------------------------------------- datasets


def cmd_import(args: argparse.Namespace) -> int:
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.datasets.inbox import inbox_name
    from bench_assets.rf100vl.datasets.sources import check_dataset_name
    from bench_assets.rf100vl.defs.jobs import DATASET_OP
    from bench_assets.rf100vl.defs.partitions import register_import

    path = Path(args.path).expanduser().resolve()
    if not path.exists():
        return fail(f"{path}: no such file or directory")
    try:
        name = check_dataset_name(args.name or inbox_name(path))
    except ValueError as exc:
        return fail(f"{exc}; pass --name", 2)
    home = bench_home_path()
    instance = open_instance(home)
    register_import(instance, name, path, suite=args.suite or "", home=home)  # records the source, then the partition
    config = {"ops": {DATASET_OP: {"config": {"source": str(path), "suite": args.suite or "",
                                              "roboflow_version": args.roboflow_version or ""}}}}
    failed = materialize_datasets(instance, [name], run_config=config)
    code = load_warehouse(instance)
    return 1 if failed or code else 0


def cmd_register(args: argparse.Namespace) -> int:
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.datasets.catalog import suite_members
    from bench_assets.rf100vl.defs.partitions import register_partitions

    try:
        names = suite_members(args.suite)
    except KeyError as exc:
        return fail(str(exc.args[0]), 2)
    home = bench_home_path()
    instance = open_instance(home)
    new = register_partitions(instance, names, home=home)
    print(f"suite {args.suite}: {len(names)} datasets, {len(new)} newly registered")
    if args.materialize:
        failed = materialize_datasets(instance, names)
        return 1 if failed or load_warehouse(instance) else 0
    return 0


def _dataset_rows(home: Path) -> list[dict[str, Any]]:
    """The current version of every stored dataset, then each blocked version with its reasons."""
    from bench_assets.rf100vl.datasets.sources import read_spec
    from bench_assets.rf100vl.datasets.store import blocked_versions, current_version, iter_versions, load_record

    datasets_dir = home / "datasets"
    versions: dict[str, list[str]] = {}
    for name, version in iter_versions(datasets_dir):
        versions.setdefault(name, []).append(version)
    rows = []
    for name in sorted(versions):
        spec = read_spec(home / "sources", name)
        current = current_version(datasets_dir, name)
        blocked = blocked_versions(datasets_dir, name)
        # The current version first, then every blocked one with its reason; superseded good ones are counted.
        for version in [v for v in [current] if v] + [v for v in versions[name] if v in blocked]:
            rec = load_record(datasets_dir, name, version)
            if rec is None:
                continue
            splits = rec.manifest["splits"]
            rows.append({"dataset": name, "version": rec.version, "versions": len(versions[name]),
                         "status": "current" if version == current else "BLOCKED",
                         "suites": ",".join(spec.suites) if spec else "", "classes": rec.manifest["num_classes"],
                         **{s: splits[s]["images"] for s in ("train", "valid", "test")},
                         "boxes": sum(s["annotations"] for s in splits.values()),
                         "source": rec.manifest["source"]["kind"],
                         "blocked_reasons": blocked.get(version, {}).get("reasons", [])})
    return rows


def print_datasets(home: Path, as_json: bool) -> None:
    rows = _dataset_rows(home)
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    cols = ["dataset", "version", "status", "versions", "suites", "classes", "train", "valid", "test", "boxes",
            "source"]
    widths = {c: max([len(c)] + [len(str(r[c])) for r in rows]) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(str(r[c]).ljust(widths[c]) for c in cols))
        for reason in r["blocked_reasons"]:
            print(f"    blocked because {reason}")
    if not rows:
        print("(no datasets yet: `bench demo` or `bench datasets import PATH`)")


def cmd_list(args: argparse.Namespace) -> int:
    print_datasets(bench_home_path(), args.json)
    return 0


def cmd_check_datasets(args: argparse.Namespace) -> int:
    """Re-run the dataset checks on the current versions as stored now (nothing is re-imported)."""
    from bench_assets.cli.location import run_job
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.datasets.store import current_version, iter_versions, why_no_current
    from bench_assets.rf100vl.defs.jobs import dataset_job

    home = bench_home_path()
    names = args.names or sorted({n for n, _ in iter_versions(home / "datasets")})
    instance = open_instance(home)
    failed = []
    for name in names:
        if current_version(home / "datasets", name) is None:
            print(f"bench: {why_no_current(home / 'datasets', name)}", file=sys.stderr)
            failed.append(name)
            continue
        outcome = run_job(instance, dataset_job, partition_key=name, checks_only=True)
        if report(outcome, f"checks of dataset {name}"):
            failed.append(name)
        else:
            print(f"dataset {name}: checks pass (run {outcome.run_id})")
    return 1 if failed else 0


# --------------------------------------------------------------------------------- remove datasets / models


def remove_partition(kind: str, name: str, purge: bool) -> int:
    """`bench datasets|models remove NAME [--purge]` (defs/partition_removal.py): remove, then say what went."""
    from bench_assets.cli.location import load_for_runs
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.defs.partition_guard import partition_assets
    from bench_assets.rf100vl.defs.partition_removal import RemovalRefused
    from bench_assets.rf100vl.defs.partition_removal import remove_partition as remove

    home = bench_home_path()
    instance = open_instance(home)
    try:
        done = remove(instance, home, kind, name, purge,
                      lambda: partition_assets(load_for_runs().resolve_asset_graph()))
    except RemovalRefused as exc:
        return fail(str(exc))
    print(f"{kind} {name}: " + (f"partition removed from {done.partitions_name}" if done.was_partition
                                else f"was not a partition of {done.partitions_name}")
          + f"; status wiped ({done.wiped['events']} event record(s), {done.wiped['check_executions']} check "
            "result(s))")
    if purge:
        for r in done.owned:
            print(f"  removed {r}")
        if done.owned:
            print("  `bench report` rebuilds the warehouse and the report without them")
    elif done.owned:
        print("  files kept (`--purge` removes them): " + ", ".join(done.owned))
    return 0


def cmd_remove_dataset(args: argparse.Namespace) -> int:
    return remove_partition("dataset", args.name, args.purge)


def cmd_remove_model(args: argparse.Namespace) -> int:
    return remove_partition("model", args.name, args.purge)


def cmd_check_models(args: argparse.Namespace) -> int:
    """`bench models check MODEL... | --all`: train, kill + resume and predict each on a few mini-tiny images
    (training/child/family_check.py), with its smoke recipe's image size and train settings."""
    import tempfile

    from bench_assets.rf100vl.training.child.family_check import check_models
    from bench_assets.rf100vl.training.models import smoke_models

    keys = list(args.models) + (smoke_models() if args.all else [])
    if not keys:
        return fail("name model keys (e.g. dfine-n) or --all")
    results = check_models(keys, Path(tempfile.mkdtemp(prefix="bench-models-check-")),
                           lambda key, imgsz: print(f"checking {key} at {imgsz} px ...", file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(results, indent=1))
    for r in [] if args.json else results:
        verdict = "ok" if r["ok"] else f"FAILED at {r['failed']}: {r['reason']}"
        print(f"{r['model']}: {verdict} ({r.get('seconds', '?')} s)")
    return 0 if all(r["ok"] for r in results) else 1


def cmd_profile_memory(args: argparse.Namespace) -> int:
    """`bench models profile-memory MODEL [--recipe R]`: one profile epoch at the recipe's image size and batch on
    this box's device; the peak is stored for `bench plan` and the campaign's lane check
    (campaign/memory_profile.py)."""
    import tempfile

    from bench_assets.rf100vl.campaign.memory_plan import save_profile
    from bench_assets.rf100vl.campaign.memory_profile import ProfileFailed, profile_memory
    from bench_assets.rf100vl.training.models import model_recipe
    from bench_assets.rf100vl.training.recipes import RecipeError

    home = bench_home_path()
    try:
        _, recipe = model_recipe(home, args.model, args.recipe or "")
        with tempfile.TemporaryDirectory(prefix="bench-profile-memory-") as work:
            print(f"profiling {args.model} ({recipe.path}): one epoch ...", file=sys.stderr, flush=True)
            prof = profile_memory(args.model, recipe, Path(work))
    except (RecipeError, ValueError, KeyError, ProfileFailed) as exc:
        return fail(str(exc), 2 if not isinstance(exc, ProfileFailed) else 1)
    path = save_profile(home, prof)
    what = "VRAM reserved" if prof.kind == "gpu" else "resident memory"
    print(f"{prof.model} at {prof.imgsz} px, batch {prof.batch}: peak {what} {prof.peak_mb / 1024:.2f} GB on "
          f"{prof.device_name} -> {path}")
    return 0


def cmd_families(args: argparse.Namespace) -> int:
    """`bench models families [--json] [--live]`: LibreYOLO's detection families and this project's recipes."""
    from bench_assets.rf100vl.training.families import stale_note
    from bench_assets.rf100vl.training.models import family_rows

    if args.live:  # read the installed libreyolo itself (imports torch; builds no model)
        from bench_assets.rf100vl.training.child.families import inventory

        print(json.dumps(inventory(measure=False), indent=1))
        return 0
    note = stale_note()
    if note:
        print(f"bench: {note}", file=sys.stderr)
    rows = family_rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    cols = ("family", "sizes", "trains", "imgsz", "optimizer", "lr0", "no_aug", "weights", "recipes")
    table = [{"family": r["family"], "sizes": ",".join(r["sizes"]), "trains": "yes" if r["trainable"] else "no",
              "imgsz": f"x{r['imgsz_multiple']}" + (f", >={min(v for v in r['min_imgsz'].values() if v)}"
                                                    if any(r["min_imgsz"].values()) else ""),
              "optimizer": str(r["defaults"].get("optimizer", "")), "lr0": str(r["defaults"].get("lr0", "")),
              "no_aug": str(r["defaults"].get("no_aug_epochs", "")), "weights": str(len(r["weights"])),
              "recipes": ",".join(k.removesuffix("_recipe") for k in ("protocol_recipe", "smoke_recipe") if r[k])
              or "-"} for r in rows]
    widths = {c: max(len(c), *(len(x[c]) for x in table)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for x, r in zip(table, rows, strict=True):
        print("  ".join(x[c].ljust(widths[c]) for c in cols))
        if not r["trainable"]:
            print(f"    not trainable: {r['reason']}")
    print(f"{sum(r['trainable'] for r in rows)} of {len(rows)} detection families train; `--json` has every field")
    return 0


# ------------------------------------------------------------------------------------------ train / campaign


def _register_for_campaign(instance: Any, home: Path, model: str, recipe: str, suite: str | None,
                           datasets: str | None, pilot: list[str] | None = None) -> list[str]:
    """Register the campaign (defs/partitions.register_campaign), say when its recipe is not protocol-conformant,
    import the datasets not stored yet; the names that have data. ValueError when the recipe starts from pretrained
    weights that are not stored and cannot be acquired: no GPU hour is spent training from scratch by accident."""
    from bench_assets.rf100vl.datasets.store import current_version
    from bench_assets.rf100vl.defs.partitions import register_campaign
    from bench_assets.rf100vl.training.pretrained import read_lock
    from bench_assets.rf100vl.training.runplan import parse_model

    names, loaded = register_campaign(instance, home, model, recipe, suite, datasets, pilot)
    if not loaded.recipe.conformant:
        print(f"bench: recipe {loaded.path} is NOT protocol-conformant ({'; '.join(loaded.recipe.nonconformities())})"
              "; its numbers are marked non-conformant everywhere", file=sys.stderr)
    ref = loaded.recipe.pretrained.get(parse_model(model).size)
    if ref is not None and read_lock(home, model) is None and acquire_pretrained(instance, home, model, {}):
        raise ValueError(f"{model}: the recipe {loaded.path} starts it from {ref.name} ({ref.repo}), which could not "
                         f"be fetched (above); fix: `bench weights import PATH --model {model} --name {ref.name}` "
                         "with the file, then run the campaign again")
    missing = [n for n in names if current_version(home / "datasets", n) is None]
    failed = materialize_datasets(instance, missing) if missing else []
    return [n for n in names if n not in failed]


def _build_submission(instance: Any, model: str) -> int:
    from bench_assets.cli.location import run_job
    from bench_assets.rf100vl.defs.jobs import submission_job

    return report(run_job(instance, submission_job, partition_key=model), f"submission {model}")


def run_campaign(job: Any, model: str, *, suite: str | None = None, datasets: str | None = None,
                 recipe: str = "", lanes: int = 0, force: bool = False, replicates: int = 1,
                 replicate_datasets: str | None = None, pilot: str | None = None, override_gate: bool = False) -> int:
    """Register, then run `job` for every (dataset, model) partition longest first on the lanes. No `recipe`: the
    model's registered one, else `default` (training/models.registered_recipe). `replicates` K > 1: the model is
    also trained with seeds 1..K-1 as its own partitions (`model@seedN`) on `replicate_datasets` (default: all).
    A pilot (`pilot`, or the one the model was registered with) makes the campaign two waves: the pilot datasets
    and the kill-and-resume check (`model@resume`) first, then the rest only while the pilot gate is green
    (report/pilot_gate.py); `override_gate` runs the rest anyway and records that it did."""
    from bench_assets.platform.cluster.layout import load_state
    from bench_assets.platform.cluster.servers import ClusterError, require_servers
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.defs.campaign_runs import campaign_waves
    from bench_assets.rf100vl.defs.jobs import campaign_job, train_job
    from bench_assets.rf100vl.training.recipes import RecipeError
    from resources.lanes import lanes_from_env

    if not (suite or datasets):
        return fail("pass --suite S or --datasets A,B", 2)
    if replicates < 1:
        return fail("--replicates counts the seeds, the model's own included: 1 or more", 2)
    home = bench_home_path()
    if lanes:
        os.environ["BENCH_CPU_LANES"] = str(lanes)
    cluster = load_state(home)
    try:
        if cluster:  # every server must answer before anything is registered or submitted
            require_servers(cluster)
    except ClusterError as exc:
        return fail(str(exc), 1)
    refusals = _campaign_preflight(home, model, recipe, suite, datasets, None if cluster else lanes_from_env(),
                                   pilot=pilot, replicates=replicates, replicate_datasets=replicate_datasets)
    if refusals:
        return fail("refused before the first run:\n  " + "\n  ".join(refusals), 2)
    instance = open_instance(home)
    try:
        names = _register_for_campaign(instance, home, model, recipe, suite, datasets, _pilot_names(pilot))
        waves = campaign_waves(instance, home, model, names, replicates, replicate_datasets,
                               gated=job is campaign_job)
    except (RecipeError, ValueError, KeyError) as exc:
        return fail(str(exc), 2)
    n_lanes = cluster.total_lanes if cluster else len(lanes_from_env())
    where = (f"the cluster's {len(cluster.workers)} worker(s)" if cluster else "this machine")
    seeds = f" ({replicates} seeds)" if replicates > 1 else ""
    total = sum(len(w) for _, w in waves)
    print(f"{job.name}: {total} partitions of {model}{seeds}, longest first, on {n_lanes} lane(s) of {where}"
          + (f"; the pilot wave first ({len(waves[0][1])})" if len(waves) > 1 else ""))
    failed: list[Any] = []
    for name, partitions in waves:
        if name == "rest":
            gate = _pilot_gate_verdict(instance, home, model, override_gate)
            if gate:
                return gate
        try:
            failed += _run_wave(job, instance, home, cluster, partitions, force, n_lanes)
        except ClusterError as exc:
            return fail(str(exc), 1)
    code = _build_submission(instance, model) if job is campaign_job else 0
    # Training alone leaves the suite unscored: coverage is expected to fail until `bench campaign` evaluates.
    code = load_warehouse(instance, tolerate=("coverage",) if job is train_job else ()) or code
    if failed:
        print(f"bench: {len(failed)} partition(s) failed: {', '.join(r.run.label for r in failed)}", file=sys.stderr)
    return 1 if failed or code else 0


def _run_wave(job: Any, instance: Any, home: Path, cluster: Any, partitions: list[Any], force: bool,
              n_lanes: int) -> list[Any]:
    """Run `job` for `partitions` (longest first) on this box's lanes or the cluster; the runs that failed."""
    from bench_assets.cli.location import load_for_runs
    from bench_assets.platform.cluster_submit import submit, wait
    from bench_assets.platform.run_pool import run_all
    from bench_assets.rf100vl.defs.campaign_runs import pool_runs

    runs = pool_runs(sorted(partitions, key=lambda r: (-r.train_images, r.dataset, r.model)), job, force=force)

    def show(result: Any) -> None:
        code = report(result.outcome, f"{job.name} {result.run.label}")
        print(f"  {result.run.label:40s} {'ok' if code == 0 else 'FAILED'}  {result.seconds:7.1f}s", flush=True)

    if cluster:
        submitted = submit(cluster, runs)
        print(f"  submitted {len(submitted)} run(s) to the cluster (UI http://127.0.0.1:{cluster.webserver_port}); "
              "waiting for them", flush=True)
        finished = wait(instance, submitted, on_result=show)
    else:
        finished = run_all(runs, workers=n_lanes, home=home, load=load_for_runs, on_result=show)
    return [r for r in finished if not r.outcome.success]


def _pilot_names(pilot: str | None) -> list[str] | None:
    """The datasets `--pilot` names: a built-in suite or a comma list (None when not given)."""
    from bench_assets.rf100vl.datasets.catalog import BUILTIN_SUITES, suite_members

    if not pilot:
        return None
    return list(suite_members(pilot)) if pilot in BUILTIN_SUITES else [d for d in pilot.split(",") if d]


def _pilot_gate_verdict(instance: Any, home: Path, model: str, override: bool) -> int:
    """After the pilot wave: load the warehouse and judge the pilot gate. 0 to go on (green, or red and overridden:
    recorded), else the refusal's exit code (3) with each red condition said."""
    import datetime as dt

    from bench_assets.rf100vl.report.pilot_gate import pilot_gate
    from bench_assets.rf100vl.training.models import read_entry, record_gate_override
    from bench_assets.rf100vl.training.runplan import resume_check_key
    from resources.bench_home import BenchHome

    # The rest is not run yet (coverage) and the gate is judged here, below.
    load_warehouse(instance, tolerate=("coverage", "pilot_gate"))
    entry = read_entry(home, model)
    finding = pilot_gate(BenchHome(root=str(home)).warehouse_path, model, entry.pilot if entry else [],
                         resume_check_key(model))
    for row in finding.rows:
        print(f"  pilot gate {row['name']:9s} {'green' if row['passed'] else 'RED'}: {row['detail']}", flush=True)
    if finding.passed:
        print(f"{model}: pilot gate green; the rest of the campaign follows", flush=True)
        return 0
    red = [row["name"] for row in finding.rows if not row["passed"]]
    if override:
        record_gate_override(home, model, red, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        print(f"bench: {model}: pilot gate red ({', '.join(red)}) and OVERRIDDEN (--override-gate): recorded in its "
              "registration; the pilot_gate check and the report say so", file=sys.stderr)
        return 0
    print(f"bench: {model}: pilot gate red ({', '.join(red)}): the rest of the campaign is not started. Fix what is "
          "red and run the same command again (finished partitions are reused), or pass --override-gate to run it "
          "anyway (recorded and reported)", file=sys.stderr)
    return 3


def _campaign_preflight(home: Path, model: str, recipe: str, suite: str | None, datasets: str | None,
                        lanes: list[Any] | None, *, pilot: str | None = None, replicates: int = 1,
                        replicate_datasets: str | None = None) -> list[str]:
    """The disk projection and the lane memory check (campaign/budget.py) of what is left to run; a recipe or name
    problem is left to the registration, which names it."""
    from bench_assets.rf100vl.campaign.budget import preflight_refusals
    from bench_assets.rf100vl.training.recipes import RecipeError

    try:
        setup = campaign_setup(home, model, recipe, suite, datasets, pilot, replicates=replicates,
                               replicate_datasets=replicate_datasets)
    except (RecipeError, ValueError, KeyError):
        return []
    if setup is None:
        return []
    waves, size, loaded, params = setup
    return preflight_refusals(home, model, [d for _, ds in waves for d in ds], imgsz=size.imgsz,
                              disk_cache=loaded.recipe.protocol.cache == "disk",
                              lane_devices=None if lanes is None else [lane.cuda_visible_devices or "cpu"
                                                                       for lane in lanes], pretrained_params=params)


def _campaign(args: argparse.Namespace, job: Any) -> int:
    return run_campaign(job, args.model, suite=args.suite, datasets=args.datasets, recipe=args.recipe,
                        lanes=args.lanes, force=args.force, replicates=args.replicates,
                        replicate_datasets=args.replicate_datasets, pilot=args.pilot,
                        override_gate=args.override_gate)


def cmd_train(args: argparse.Namespace) -> int:
    from bench_assets.rf100vl.defs.jobs import train_job

    return _campaign(args, train_job)


def cmd_campaign(args: argparse.Namespace) -> int:
    from bench_assets.rf100vl.defs.jobs import campaign_job

    return _campaign(args, campaign_job)


def cmd_status(args: argparse.Namespace) -> int:
    """Per model: done / running / queued / failed / missing partitions of its suite, and an ETA (the lane
    planner's makespan of what is left: cost_model.py, lane_plan.py)."""
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.campaign.progress import campaign_lanes, campaign_progress, format_progress, remaining_eta

    home = bench_home_path()
    lanes = campaign_lanes(home)
    from bench_assets.rf100vl.defs.jobs import latest_runs

    progress = campaign_progress(home, latest_runs(open_instance(home)), [args.model] if args.model else None)
    etas = {p.model: remaining_eta(home, p, lanes) for p in progress}
    if args.json:
        print(json.dumps([{"model": p.model, "suite": p.suite, "states": p.states,
                           "eta_seconds": etas[p.model][0], "eta_source": etas[p.model][1]} for p in progress],
                         indent=1))
    else:
        print(format_progress(progress, lanes, etas))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """The four questions before the first GPU-hour (campaign/budget.py): makespan per wave (longest first, 1-4 jobs
    per GPU with a suggestion among those that fit the measured memory), disk, memory per lane and cost."""
    from bench_assets.rf100vl.campaign.budget import campaign_budget

    home = bench_home_path()
    try:
        setup = campaign_setup(home, args.model, args.recipe, args.suite, args.datasets, args.pilot,
                               include_done=args.all, replicates=args.replicates,
                               replicate_datasets=args.replicate_datasets)
    except (ValueError, KeyError) as exc:
        return fail(str(exc), 2)
    if setup is None:
        return fail("pass --suite S or --datasets A,B", 2)
    waves, size, recipe, params = setup
    plan = campaign_budget(home, args.model, waves, epochs=recipe.recipe.protocol.epochs, imgsz=size.imgsz,
                           disk_cache=recipe.recipe.protocol.cache == "disk", gpus=args.gpus,
                           jobs_per_gpu=args.jobs_per_gpu, cpu_lanes=args.cpu_lanes, sharing_cost=args.sharing_cost,
                           gpu_hour_price=args.gpu_hour_price, pretrained_params=params)
    print(json.dumps(plan, indent=1) if args.json else plan["text"])
    return 0


def campaign_setup(home: Path, model: str, recipe_arg: str, suite: str | None, datasets: str | None,
                   pilot: str | None = None, include_done: bool = False, replicates: int = 1,
                   replicate_datasets: str | None = None) -> tuple[list[tuple[str, list[str]]], Any, Any,
                                                                   int | None] | None:
    """(waves of the datasets still to score, the recipe's size entry, the loaded recipe, the pretrained weights'
    parameter count or None); None when neither a suite nor datasets were named. The pilot (a suite name or
    a comma list) is wave 1 with its kill-and-resume check (its smallest dataset again), the rest wave 2; a
    replicated dataset is named once per seed."""
    from bench_assets.rf100vl.datasets.catalog import BUILTIN_SUITES, suite_members
    from bench_assets.rf100vl.scoring.eval_store import current_score
    from bench_assets.rf100vl.training.models import model_recipe
    from bench_assets.rf100vl.training.pretrained import read_lock
    from bench_assets.rf100vl.training.runplan import parse_model

    names = suite_members(suite) if suite else [d for d in (datasets or "").split(",") if d]
    if not names:
        return None
    _, recipe = model_recipe(home, model, recipe_arg or "")
    size = recipe.recipe.size(parse_model(model).size, recipe.path)
    todo = names if include_done else [n for n in names if current_score(home, model, n) is None]
    waves = [("all", todo)]
    if pilot:
        first = set(suite_members(pilot) if pilot in BUILTIN_SUITES else [d for d in pilot.split(",") if d])
        outside = sorted(first - set(names))
        if outside:
            raise ValueError(f"--pilot names datasets outside the campaign: {', '.join(outside)}")
        waves = [("pilot", [n for n in todo if n in first]), ("rest", [n for n in todo if n not in first])]
    chosen = set([d for d in (replicate_datasets or "").split(",") if d] or names)
    waves = [(w, ds + [d for d in ds if d in chosen] * (replicates - 1)) for w, ds in waves]
    if pilot and waves[0][1]:
        from bench_assets.rf100vl.campaign.cost_model import partition_images

        images = partition_images(home, sorted(set(waves[0][1])))
        waves[0][1].append(min(images, key=lambda d: (images[d], d)))  # the kill-and-resume check
    lock = read_lock(home, model) or {}
    return waves, size, recipe, lock.get("params")


# ------------------------------------------------------------------------------- submissions, publish, rescore


def cmd_submission_import(args: argparse.Namespace) -> int:
    """Store an existing va.submission.v1 file so it sits beside our models in every mart."""
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.submission.build import SubmissionError, import_submission

    home = bench_home_path()
    try:
        out, sub, reasons = import_submission(home, Path(args.file).expanduser())
    except SubmissionError as exc:
        return fail(str(exc))
    rf = sub.rf100vl
    print(f"imported {sub.model['name']}: {len(rf.datasets)} datasets, mAP50-95 {sub.accuracy['mAP_50_95']:.4f} "
          f"(recomputed from its per-dataset entries: agrees) -> {out}")
    if reasons:
        print("  not a valid leaderboard entry: " + "; ".join(reasons))
    return load_warehouse(open_instance(home))


def cmd_submission_build(args: argparse.Namespace) -> int:
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.defs.partitions import register_model_partition
    from bench_assets.rf100vl.submission.build import submission_path

    home = bench_home_path()
    instance = open_instance(home)
    try:
        register_model_partition(instance, args.model, home=home)
    except ValueError as exc:
        return fail(str(exc), 2)
    code = _build_submission(instance, args.model)
    if code == 0:
        doc = json.loads(submission_path(home, args.model).read_text())
        rf = doc["rf100vl"]
        print(f"{args.model}: {len(rf['datasets'])} datasets, mAP50-95 {doc['accuracy']['mAP_50_95']}, "
              f"valid_submission={rf['valid_submission']} -> {submission_path(home, args.model)}")
        for r in rf["invalid_reasons"]:
            print(f"  not submittable because: {r}")
    return load_warehouse(instance) or code


def cmd_publish(args: argparse.Namespace) -> int:
    """Upload a model's results and/or checkpoints to a HF dataset repo, then verify by listing the remote."""
    from bench_assets.rf100vl.submission.publish import publish_main

    def log(msg: str) -> None:
        print(msg, file=sys.stderr if msg.startswith("publish failed") else sys.stdout)

    return publish_main(bench_home_path(), args.model, args.repo, args.tier, dry_run=args.dry_run,
                        append=args.append, log=log)


def cmd_rescore(args: argparse.Namespace) -> int:
    from bench_assets.rf100vl.scoring.rescore import rescore_all

    return rescore_all(bench_home_path(), model=args.model, datasets=args.datasets)


# --------------------------------------------------------------------------------- parsers


def _datasets_parser(sub: argparse._SubParsersAction) -> None:
    ds = sub.add_parser("datasets", help="import, register and list datasets").add_subparsers(
        dest="datasets_command", required=True)
    imp = ds.add_parser("import", help="import a Roboflow-layout folder or a tar of one")
    imp.add_argument("path")
    imp.add_argument("--name", help="dataset name (default: the folder or tar name)")
    imp.add_argument("--suite", help="suite to add the dataset to")
    imp.add_argument("--roboflow-version", metavar="[PROJECT/]N",
                     help="the Roboflow export these files are (integer version, project slug for datasets outside "
                          "the catalogue); recorded in the lock beside the content hash")
    imp.set_defaults(fn=cmd_import)
    reg = ds.add_parser("register", help="register a built-in suite's datasets as partitions")
    reg.add_argument("--suite", required=True, help="rf100vl, rf20vl or mini")
    reg.add_argument("--materialize", action="store_true", help="also fetch and verify them now")
    reg.set_defaults(fn=cmd_register)
    chk = ds.add_parser("check", help="re-run the dataset checks on the stored current versions (no re-import)")
    chk.add_argument("names", nargs="*", help="dataset names (default: every stored dataset)")
    chk.set_defaults(fn=cmd_check_datasets)
    ls = ds.add_parser("list", help="stored datasets: current and blocked versions")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_list)
    rm = ds.add_parser("remove", help="delete a dataset partition and its materialization status (files kept "
                                      "unless --purge)")
    rm.add_argument("name", help="dataset name (a leading dash needs `-- -grccs`)")
    rm.add_argument("--purge", action="store_true",
                    help="also remove its stored versions, source record, inbox entry and the runs and evaluations "
                         "made on it under BENCH_HOME")
    rm.set_defaults(fn=cmd_remove_dataset)


def _models_parser(sub: argparse._SubParsersAction) -> None:
    md = sub.add_parser("models", help="LibreYOLO's families; remove model partitions").add_subparsers(
        dest="models_command", required=True)
    fm = md.add_parser("families", help="every detection family of the pinned LibreYOLO: sizes, whether it trains "
                                        "(and why not), image-size rule, defaults, published weights, our recipes")
    fm.add_argument("--json", action="store_true", help="one object per family with every field")
    fm.add_argument("--live", action="store_true", help="read the installed libreyolo instead of the snapshot")
    fm.set_defaults(fn=cmd_families)
    ck = md.add_parser("check", help="train two epochs, kill and resume, predict: each model on a few mini-tiny images "
                                     "with its smoke recipe (a family that trains here resumes bit for bit)")
    ck.add_argument("models", nargs="*", help="model keys, e.g. dfine-n rtdetr-r18")
    ck.add_argument("--all", action="store_true", help="every trainable family's smallest smoke-recipe size")
    ck.add_argument("--json", action="store_true", help="one object per model")
    ck.set_defaults(fn=cmd_check_models)
    pm = md.add_parser("profile-memory", help="measure one training lane's peak memory (VRAM on a GPU, RSS on a CPU) "
                                              "at the recipe's image size and batch: for bench plan and campaign")
    pm.add_argument("model", help="model key, e.g. yolo9-t")
    pm.add_argument("--recipe", default="", help="default: the model's registered recipe (else default)")
    pm.set_defaults(fn=cmd_profile_memory)
    rm = md.add_parser("remove", help="delete a model partition and its materialization status (files kept unless "
                                      "--purge)")
    rm.add_argument("name", help="model key, e.g. yolo9-t")
    rm.add_argument("--purge", action="store_true",
                    help="also remove its runs, evaluations, registration and submission under BENCH_HOME")
    rm.set_defaults(fn=cmd_remove_model)


def _campaign_parsers(sub: argparse._SubParsersAction) -> None:
    for name, fn, helptext in (("train", cmd_train, "fine-tune a model on every dataset of a suite"),
                               ("campaign", cmd_campaign, "train, predict and score: one resumable campaign")):
        c = sub.add_parser(name, help=helptext)
        c.add_argument("--model", required=True, help="family-size, e.g. yolo9-t")
        c.add_argument("--suite", help="rf100vl, rf20vl or mini")
        c.add_argument("--datasets", help="comma-separated names; with --suite, a part of it (a leading dash "
                                            "needs --datasets=-grccs)")
        c.add_argument("--recipe", default="", help="default, smoke, or a path to a recipe JSON (default: the "
                                                      "model's registered recipe, else default)")
        c.add_argument("--lanes", type=int, default=0, help="CPU lanes on a box without GPUs (BENCH_CPU_LANES)")
        c.add_argument("--force", action="store_true", help="retrain even when a finished run exists")
        c.add_argument("--replicates", type=int, default=1,
                       help="K seeds per chosen dataset, the model's own (seed 0) included: seeds 1..K-1 train as "
                            "partitions MODEL@seedN (docs/campaigns.md)")
        c.add_argument("--replicate-datasets", help="comma-separated datasets to replicate (default: all of them)")
        c.add_argument("--pilot", help="the first wave (a suite such as rf20vl, or comma-separated datasets): the "
                                       "rest runs only while the pilot gate is green (docs/campaigns.md)")
        c.add_argument("--override-gate", action="store_true",
                       help="run the rest although the pilot gate is red: recorded, and the report says so")
        c.set_defaults(fn=fn)
    pl = sub.add_parser("plan", help="predict a campaign's makespan and finish time on N GPUs; suggest jobs per GPU")
    pl.add_argument("--model", required=True)
    pl.add_argument("--suite", help="rf100vl, rf20vl or mini")
    pl.add_argument("--datasets", help="comma-separated names")
    pl.add_argument("--recipe", default="", help="default: the model's registered recipe (else default)")
    pl.add_argument("--gpus", type=int, default=0, help="GPUs (0: plan for --cpu-lanes CPU lanes)")
    pl.add_argument("--jobs-per-gpu", type=int, default=0, help="plan this many jobs per GPU (default: suggest)")
    pl.add_argument("--cpu-lanes", type=int, default=1)
    pl.add_argument("--sharing-cost", type=float, default=None,
                    help="slowdown each extra job on a GPU adds (default 0.6, a stated assumption)")
    pl.add_argument("--pilot", help="the first wave: a suite (rf20vl) or comma-separated datasets; the rest follow")
    pl.add_argument("--gpu-hour-price", type=float, default=None, help="USD per GPU-hour (from a live offer): cost")
    pl.add_argument("--replicates", type=int, default=1, help="seeds per chosen dataset, as bench campaign")
    pl.add_argument("--replicate-datasets", help="comma-separated datasets to replicate (default: all of them)")
    pl.add_argument("--all", action="store_true", help="plan every partition, also those already scored")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(fn=cmd_plan)
    st = sub.add_parser("status", help="campaign progress per model: done/running/queued/failed/missing, ETA")
    st.add_argument("--model")
    st.add_argument("--json", action="store_true")
    st.set_defaults(fn=cmd_status)


def _results_parsers(sub: argparse._SubParsersAction) -> None:
    sb = sub.add_parser("submission", help="build or import va.submission.v1 files").add_subparsers(
        dest="submission_command", required=True)
    si = sb.add_parser("import", help="load an existing submission (e.g. a published leaderboard entry)")
    si.add_argument("file")
    si.set_defaults(fn=cmd_submission_import)
    sbb = sb.add_parser("build", help="(re)build a model's submission from its current scores")
    sbb.add_argument("--model", required=True)
    sbb.set_defaults(fn=cmd_submission_build)
    pb = sub.add_parser("publish", help="upload a model's results/checkpoints to a HF dataset repo and verify them "
                                        "by listing the remote (token from HF_TOKEN)")
    pb.add_argument("--model", required=True)
    pb.add_argument("--repo", required=True, help="OWNER/NAME of a Hugging Face dataset repo")
    pb.add_argument("--tier", required=True, choices=["results", "checkpoints", "all"])
    pb.add_argument("--dry-run", action="store_true", help="print the file plan, upload nothing")
    pb.add_argument("--append", action="store_true", help="add to an already published run (identical files are "
                                                          "skipped, differing ones fail)")
    pb.set_defaults(fn=cmd_publish)
    rs = sub.add_parser("rescore", help="recompute scores from saved predictions with the reference backend")
    rs.add_argument("--model")
    rs.add_argument("--datasets", help="comma-separated names")
    rs.set_defaults(fn=cmd_rescore)
    sub.add_parser("score", help="score a COCO predictions file: bench score GT PRED [--backend] [--max-det]")


def acquire_pretrained(instance: Any, home: Path, model: str, config: dict[str, Any]) -> bool:
    """Materialize `rf100vl/pretrained` for `model` (registering its partition) with `config`; True when it failed
    (the reason printed), else the stored lock is printed."""
    from bench_assets.cli.location import run_job
    from bench_assets.rf100vl.defs.jobs import PRETRAINED_OP, pretrained_job
    from bench_assets.rf100vl.defs.partitions import register_model_partition
    from bench_assets.rf100vl.training.pretrained import read_lock

    register_model_partition(instance, model, home=home)
    outcome = run_job(instance, pretrained_job, partition_key=model,
                      run_config={"ops": {PRETRAINED_OP: {"config": config}}})
    if report(outcome, f"pretrained {model}"):
        return True
    lock = read_lock(home, model) or {}
    print(f"{model}: {lock['name']} sha256 {lock['sha256']} ({lock['params'] / 1e6:.2f} M parameters; "
          f"{lock['loaded_tensors']} of {lock['model_tensors']} tensors load, the whole {lock['backbone']}; "
          f"run {outcome.run_id})")
    return False


def _weights(config: dict[str, Any], model: str) -> int:
    from bench_assets.platform.instance import open_instance

    home = bench_home_path()
    try:
        return 1 if acquire_pretrained(open_instance(home), home, model, config) else 0
    except ValueError as exc:  # a key that is not a model
        return fail(str(exc), 2)


def cmd_weights_import(args: argparse.Namespace) -> int:
    path = Path(args.path).expanduser().resolve()
    return _weights({"path": str(path), "name": args.name or ""}, args.model)


def cmd_weights_fetch(args: argparse.Namespace) -> int:
    from bench_assets.rf100vl.training.recipes import recipe_names

    if args.recipe and args.recipe not in recipe_names():
        return fail(f"--recipe {args.recipe!r}: not a recipe name; choose one of {', '.join(recipe_names())}", 2)
    return _weights({"recipe": args.recipe or "registered", "refresh": args.refresh}, args.model)


def cmd_weights_list(args: argparse.Namespace) -> int:
    from bench_assets.rf100vl.training.pretrained import list_locks

    locks = list_locks(bench_home_path())
    if args.json:
        print(json.dumps(locks, indent=1))
        return 0
    for lock in locks:
        src = lock["source"]
        where = src.get("path") or f"{src.get('repo')}@{src.get('commit') or src.get('revision')}"
        print(f"{lock['model']:<16} {lock['name']:<24} {lock['sha256'][:16]}  {lock['params'] / 1e6:7.2f} M  "
              f"{lock['loaded_tensors']}/{lock['model_tensors']} tensors  {src['kind']}: {where}")
    if not locks:
        print("(no pretrained weights yet: `bench weights fetch --model KEY` or `bench weights import PATH --model "
              "KEY`)")
    return 0


def _weights_parser(sub: argparse._SubParsersAction) -> None:
    wt = sub.add_parser("weights", help="pretrained weights the models fine-tune from").add_subparsers(
        dest="weights_command", required=True)
    im = wt.add_parser("import", help="check a local weights file against a model key and store it as that model's "
                                      "starting point")
    im.add_argument("path", help="a LibreYOLO .pt checkpoint")
    im.add_argument("--model", required=True, help="model key, e.g. yolo9-t")
    im.add_argument("--name", help="the name runs record (default: the file's name), e.g. LibreYOLO9t.pt")
    im.set_defaults(fn=cmd_weights_import)
    fe = wt.add_parser("fetch", help="fetch the weights a model's recipe names from the Hugging Face hub (HF_ENDPOINT, "
                                     "token from HF_TOKEN), check and lock them; kept when already stored")
    fe.add_argument("--model", required=True, help="model key, e.g. rfdetr-n")
    fe.add_argument("--recipe", help="the recipe naming the weights (default: the model's registered one, else "
                                     "`default`)")
    fe.add_argument("--refresh", action="store_true", help="fetch again even when they are stored")
    fe.set_defaults(fn=cmd_weights_fetch)
    ls = wt.add_parser("list", help="the stored pretrained weights, each with its sha256")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_weights_list)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The family's verbs: datasets, models, weights, train, campaign, plan, status, submission, publish, rescore,
    score."""
    for add in (_datasets_parser, _models_parser, _weights_parser, _campaign_parsers, _results_parsers):
        add(sub)
