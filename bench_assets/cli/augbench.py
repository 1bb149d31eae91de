"""`bench augbench` verbs: expand a config into its plan, and run it through Dagster."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_assets.cli.common import build_report, fail, report
from resources.paths import bench_home_path


def _overrides(args: argparse.Namespace) -> dict:
    return {"num_items": args.num_items, "num_runs": args.num_runs, "device": args.device,
            "workers": args.workers, "batch_size": args.batch_size}


def cmd_plan(args: argparse.Namespace) -> int:
    """Expand a config into partitions, cells and result files; refuse impossible cells with the reason."""
    from bench_assets.augbench.config import ConfigError, load_config
    from bench_assets.augbench.pipeline import register_config
    from bench_assets.augbench.plan import format_plan

    try:
        plan = register_config(bench_home_path(), load_config(Path(args.config), _overrides(args)))
    except ConfigError as exc:
        return fail(str(exc), 2)
    print(format_plan(plan, bench_home_path()))
    return 0


def run_augbench(config_path: Path, overrides: dict | None = None, with_report: bool = True, rounds: int = 1,
                 order_seed: int = 0) -> int:
    """Register the config, build its media, then measure each library in turn (never two at once: they
    would share the cores being measured), then load the warehouse and rebuild the report.

    rounds == 1: the libraries in config order, in this process. rounds > 1: `rounds` rounds, each library once
    per round in a seeded random order (`augbench.rounds`), every run in a fresh worker process; each repeat
    records its round, position and order."""
    import dagster as dg

    from bench_assets.augbench.config import ConfigError, load_config
    from bench_assets.augbench.jobs import media_job, results_job
    from bench_assets.augbench.partitions import register_config_partition
    from bench_assets.augbench.pipeline import register_config
    from bench_assets.augbench.plan import format_plan
    from bench_assets.cli.location import load_location, run_job
    from bench_assets.platform.instance import open_instance

    home = bench_home_path()
    try:
        cfg = load_config(config_path, overrides)
        plan = register_config(home, cfg)
    except ConfigError as exc:
        return fail(str(exc), 2)
    print(format_plan(plan, home))
    load_location(builds_report=with_report)
    instance = open_instance(home)
    register_config_partition(instance, cfg.name)
    code = report(run_job(instance, media_job, partition_key=cfg.name), f"augbench media {cfg.name}")
    if code:
        return code
    if rounds > 1:
        code = _run_rounds(home, cfg, rounds, order_seed) or code
    for lib in cfg.libraries if rounds == 1 else ():
        key = dg.MultiPartitionKey({"config": cfg.name, "library": lib})
        outcome = run_job(instance, results_job, partition_key=key)
        code = report(outcome, f"augbench {cfg.name}/{lib}") or code
        print(f"augbench {cfg.name}/{lib}: {'ok' if outcome.success else 'FAILED'} (run {outcome.run_id})")
    if with_report:
        code = build_report(instance) or code
    return code


def _run_rounds(home: Path, cfg: object, rounds: int, order_seed: int) -> int:
    """Every (round, library) run in a fresh process, one at a time, in each round's seeded order."""
    from bench_assets.augbench.jobs import results_job
    from bench_assets.augbench.rounds import round_orders, schedule_tags
    from bench_assets.cli.location import load_for_runs
    from bench_assets.platform.run_pool import PoolRun, run_all

    runs = []
    for r, order in enumerate(round_orders(cfg.libraries, rounds, order_seed), start=1):
        print(f"augbench {cfg.name}: round {r}/{rounds} order {', '.join(order)}")
        runs += [PoolRun(label=f"{cfg.name}/{lib} round {r}", job_name=results_job.name,
                         partition={"config": cfg.name, "library": lib},
                         tags=schedule_tags(r, k, order, order_seed)) for k, lib in enumerate(order, start=1)]

    def show(result: object) -> None:
        ok = result.outcome.success
        print(f"augbench {result.run.label}: {'ok' if ok else 'FAILED'} ({result.seconds:.0f} s, run "
              f"{result.outcome.run_id})" + ("" if ok else f": {'; '.join(result.outcome.errors)[:500]}"))

    results = run_all(runs, workers=1, home=home, load=load_for_runs, on_result=show, runs_per_worker=1)
    return 0 if all(r.outcome.success for r in results) else 1


def cmd_run(args: argparse.Namespace) -> int:
    if args.rounds < 1:
        return fail(f"--rounds must be >= 1, got {args.rounds}", 2)
    return run_augbench(Path(args.config), _overrides(args), with_report=not args.no_report, rounds=args.rounds,
                        order_seed=args.order_seed)


def add_parser(sub: argparse._SubParsersAction) -> None:
    ab = sub.add_parser("augbench", help="the augmentation speed benchmark: plan and run configs").add_subparsers(
        dest="augbench_command", required=True)
    for name, fn, helptext in (("plan", cmd_plan, "expand a config into partitions, cells and result files"),
                               ("run", cmd_run, "run a config's plan through Dagster, then the report")):
        a = ab.add_parser(name, help=helptext)
        a.add_argument("--config", required=True, help="a YAML config, e.g. configs/paper/rgb-micro.yaml")
        a.add_argument("--num-items", type=int)
        a.add_argument("--num-runs", type=int)
        a.add_argument("--device", choices=["cpu", "cuda"])
        a.add_argument("--workers", type=int)
        a.add_argument("--batch-size", type=int)
        if name == "run":
            a.add_argument("--no-report", action="store_true", help="skip the warehouse load and report rebuild")
            a.add_argument("--rounds", type=int, default=1,
                           help="measure every library this many times, each run in a fresh process, libraries in "
                                "a seeded random order per round (default 1: config order, this process)")
            a.add_argument("--order-seed", type=int, default=0, help="seed of the rounds' library orders")
        a.set_defaults(fn=fn)
