"""`bench`: the terminal face of the platform. Every verb runs through Dagster on the product instance.

Exit code 0 on success, 1 when a run failed (the reason goes to stderr), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from resources.paths import REPO_ROOT, bench_home_path


def _fail(msg: str, code: int = 1) -> int:
    print(f"bench: {msg}", file=sys.stderr)
    return code


def _report(outcome, what: str, tolerate: tuple[str, ...] = ()) -> int:  # noqa: ANN001 (RunOutcome, lazily)
    for w in outcome.warnings or []:
        print(f"bench: {w}", file=sys.stderr)
    tolerated = [e for e in outcome.errors if any(e.startswith(f"check {name} ") for name in tolerate)]
    for e in tolerated:
        print(f"bench: (expected here) {e}", file=sys.stderr)
    if outcome.success or (outcome.errors and len(tolerated) == len(outcome.errors)):
        return 0
    print(f"bench: {what} failed (run {outcome.run_id}):", file=sys.stderr)
    for err in outcome.errors or ["unknown error; see the run in the UI"]:
        print(f"  {err}", file=sys.stderr)
    return 1


def _load_warehouse(instance, tolerate: tuple[str, ...] = ()) -> int:  # noqa: ANN001
    from bench_assets.instance import execute

    return _report(execute(instance, "warehouse_job"), "warehouse load", tolerate)


def _materialize_datasets(instance, names: list[str], run_config: dict | None = None) -> list[str]:  # noqa: ANN001
    """Run the dataset job per partition; return the names that failed (reasons printed)."""
    from bench_assets.instance import execute
    from bench_assets.rf100vl.sensors import DATASET_JOB

    failed = []
    for name in names:
        outcome = execute(instance, DATASET_JOB, partition_key=name, run_config=run_config)
        if _report(outcome, f"dataset {name}"):
            failed.append(name)
        else:
            print(f"dataset {name}: ok (run {outcome.run_id})")
    return failed


def _build_submission(instance, model: str) -> int:  # noqa: ANN001
    from bench_assets.instance import execute

    return _report(execute(instance, "rf100vl_submission_job", partition_key=model), f"submission {model}")


DEMO_MODEL = "yolo9-t"


def cmd_demo(args: argparse.Namespace) -> int:
    """The mini suite end to end: datasets, then yolo9-t with the (non-conformant) smoke recipe,
    trained, used to predict `test`, and scored; then the reduced augbench (configs/smoke/); then the report."""
    from bench_assets.instance import execute, open_instance, register_partitions
    from bench_assets.rf100vl.catalog import suite_members
    from bench_assets.rf100vl.sources import SourceSpec, register

    home = bench_home_path()
    instance = open_instance(home)
    names = suite_members("mini")
    for n in names:
        register(home / "sources", n, SourceSpec(kind="mini", suites=["mini"]))
    register_partitions(instance, names)
    code = _report(execute(instance, "rf100vl_catalog_job"), "catalogue + preflight")
    failed = _materialize_datasets(instance, names)
    code = code or _load_warehouse(instance)
    _print_datasets(home, as_json=False)
    if not args.datasets_only:
        code = run_campaign("rf100vl_campaign_job", DEMO_MODEL, suite="mini", recipe="smoke",
                            lanes=args.lanes) or code
        _print_scores(home)
    if not args.datasets_only and not args.no_augbench:
        for cfg in sorted((REPO_ROOT / "configs" / "smoke").glob("*.yaml")):  # the reduced augbench
            code = run_augbench(cfg, report=False) or code
    if not args.datasets_only:
        code = _build_report(instance) or code
    print(f"\nBENCH_HOME={home}\nwarehouse: {home / 'warehouse.duckdb'}")
    if (home / "report" / "index.html").exists():
        print(f"report: {home / 'report' / 'index.html'} (markdown: {home / 'report' / 'report.md'})")
    print("see it in the UI: make ui")
    return 1 if failed or code else 0


def _print_scores(home: Path) -> None:
    from bench_assets.report.warehouse import read_table

    rows = read_table(home / "warehouse.duckdb",
                      "SELECT s.model, s.dataset, s.mAP50_95, s.mAP50, s.AR_max_det, s.backend, r.valid_mAP50_95, "
                      "r.best_epoch, r.recipe_conformant, round(r.wall_seconds) AS train_s FROM scores s "
                      "JOIN runs r USING (run_signature) WHERE s.is_current ORDER BY s.dataset")
    print("\nmodel     dataset       test mAP50-95  mAP50   AR@500  valid mAP50-95  best epoch  train s  conformant")
    for r in rows:
        print(f"{r['model']:9s} {r['dataset']:13s} {r['mAP50_95']:13.4f}  {r['mAP50']:.4f}  {r['AR_max_det']:.4f}  "
              f"{r['valid_mAP50_95'] or 0:14.4f}  {r['best_epoch'] or 0:10d}  {r['train_s']:7.0f}  "
              f"{'yes' if r['recipe_conformant'] else 'NO (smoke recipe)'}")


def cmd_import(args: argparse.Namespace) -> int:
    from bench_assets.instance import open_instance, register_partitions
    from bench_assets.rf100vl.sensors import DATASET_OP, inbox_name
    from bench_assets.rf100vl.sources import check_dataset_name

    path = Path(args.path).expanduser().resolve()
    if not path.exists():
        return _fail(f"{path}: no such file or directory")
    try:
        name = check_dataset_name(args.name or inbox_name(path))
    except ValueError as exc:
        return _fail(f"{exc}; pass --name", 2)
    instance = open_instance(bench_home_path())
    register_partitions(instance, [name])
    config = {"ops": {DATASET_OP: {"config": {"source": str(path), "suite": args.suite or ""}}}}
    failed = _materialize_datasets(instance, [name], run_config=config)
    code = _load_warehouse(instance)
    return 1 if failed or code else 0


def cmd_register(args: argparse.Namespace) -> int:
    from bench_assets.instance import open_instance, register_partitions
    from bench_assets.rf100vl.catalog import suite_members

    try:
        names = suite_members(args.suite)
    except KeyError as exc:
        return _fail(str(exc.args[0]), 2)
    new = register_partitions(open_instance(bench_home_path()), names)
    print(f"suite {args.suite}: {len(names)} datasets, {len(new)} newly registered")
    if args.materialize:
        instance = open_instance(bench_home_path())
        failed = _materialize_datasets(instance, names)
        return 1 if failed or _load_warehouse(instance) else 0
    return 0


def _print_datasets(home: Path, as_json: bool) -> None:
    from bench_assets.rf100vl.sources import read_spec
    from bench_assets.rf100vl.store import blocked_versions, current_version, iter_versions, load_record

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
    _print_datasets(bench_home_path(), args.json)
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    from bench_assets.instance import open_instance
    from bench_assets.report.dbt_assets import prepare_manifest

    open_instance(bench_home_path())  # DAGSTER_HOME + pool limits before the daemon reads them
    prepare_manifest()  # the code server loads the dbt assets from it
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(REPO_ROOT / "workspace.yaml"),
           "-h", args.host, "-p", str(args.port)]

    def restore_signals() -> None:
        # A non-interactive parent may leave SIGINT ignored, and dagster dev then never stops.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    child = subprocess.Popen(cmd, cwd=REPO_ROOT, env=os.environ.copy(), preexec_fn=restore_signals,
                             start_new_session=True)
    print(f"bench ui: http://{args.host}:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']}); Ctrl-C stops")

    def stop(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)  # dagster dev shuts its webserver, daemon and code servers down

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        code = child.wait()
    finally:
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
        try:  # anything dagster dev left behind in its session
            os.killpg(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    return 0 if code in (0, -signal.SIGINT, 130) else code


def _register_for_campaign(instance, home: Path, model: str, recipe: str, suite: str | None,  # noqa: ANN001
                           datasets: str | None) -> list[str]:
    """Validate and record the model and its recipe, register partitions, import missing datasets."""
    from bench_assets.instance import register_model_partition, register_partitions
    from bench_assets.rf100vl.catalog import suite_members
    from bench_assets.rf100vl.models import register_model
    from bench_assets.rf100vl.sources import SourceSpec, register
    from bench_assets.rf100vl.store import current_version

    names = suite_members(suite) if suite else [d for d in (datasets or "").split(",") if d]
    _, loaded = register_model(home, model, recipe, suite=suite, datasets=names)
    if not loaded.recipe.conformant:
        print(f"bench: recipe {loaded.path} is NOT protocol-conformant ({'; '.join(loaded.recipe.nonconformities())})"
              "; its numbers are marked non-conformant everywhere", file=sys.stderr)
    if suite == "mini":
        for n in names:
            register(home / "sources", n, SourceSpec(kind="mini", suites=["mini"]))
    register_partitions(instance, names)
    register_model_partition(instance, model)
    missing = [n for n in names if current_version(home / "datasets", n) is None]
    failed = _materialize_datasets(instance, missing) if missing else []
    return [n for n in names if n not in failed]


def run_campaign(job: str, model: str, *, suite: str | None = None, datasets: str | None = None,
                 recipe: str = "default", lanes: int = 0, force: bool = False) -> int:
    """Register, then run `job` for every (dataset, model) partition longest first on the lanes."""
    from bench_assets.campaign import longest_first, run_partitions
    from bench_assets.instance import open_instance
    from bench_assets.lanes import lanes_from_env
    from bench_assets.rf100vl.recipes import RecipeError

    if not (suite or datasets):
        return _fail("pass --suite S or --datasets A,B", 2)
    home = bench_home_path()
    if lanes:
        os.environ["BENCH_CPU_LANES"] = str(lanes)
    instance = open_instance(home)
    try:
        names = _register_for_campaign(instance, home, model, recipe, suite, datasets)
    except (RecipeError, ValueError, KeyError) as exc:
        return _fail(str(exc), 2)
    runs = longest_first(home, model, names)
    config = {"ops": {"rf100vl__checkpoint": {"config": {"force": True}}}} if force else None
    n_lanes = len(lanes_from_env())
    print(f"{job}: {len(runs)} partitions of {model}, longest first, on {n_lanes} lane(s)")
    finished = run_partitions(runs, job, lanes=n_lanes, run_config=config)
    failed = [f for f in finished if f.returncode != 0]
    code = _build_submission(instance, model) if job == "rf100vl_campaign_job" else 0
    # Training alone leaves the suite unscored: coverage is expected to fail until `bench campaign` evaluates.
    code = _load_warehouse(instance, tolerate=("coverage",) if job == "rf100vl_train_job" else ()) or code
    for f in sorted(finished, key=lambda f: f.run.dataset):
        print(f"  {f.run.key:40s} {'ok' if f.returncode == 0 else 'FAILED'}  {f.seconds:7.1f}s")
    if failed:
        print(f"bench: {len(failed)} partition(s) failed: {', '.join(f.run.key for f in failed)}", file=sys.stderr)
    return 1 if failed or code else 0


def _campaign(args: argparse.Namespace, job: str) -> int:
    return run_campaign(job, args.model, suite=args.suite, datasets=args.datasets, recipe=args.recipe,
                        lanes=args.lanes, force=args.force)


def cmd_train(args: argparse.Namespace) -> int:
    return _campaign(args, "rf100vl_train_job")


def cmd_campaign(args: argparse.Namespace) -> int:
    return _campaign(args, "rf100vl_campaign_job")


def cmd_exec(args: argparse.Namespace) -> int:
    """One partition's run (used by the campaign scheduler to run lanes in parallel)."""
    import dagster as dg

    from bench_assets.instance import execute, open_instance

    instance = open_instance(bench_home_path())
    dataset_name, model = args.partition.split("|", 1)
    key = dg.MultiPartitionKey({"dataset": dataset_name, "model": model})
    config = json.loads(args.config) if args.config else None
    outcome = execute(instance, args.job, partition_key=key, run_config=config,
                      tags={"dagster/priority": args.priority} if args.priority else None)
    return _report(outcome, f"{args.job} {args.partition}")


def cmd_submission_import(args: argparse.Namespace) -> int:
    """Store an existing va.submission.v1 file so it sits beside our models in every mart."""
    from bench_assets.instance import open_instance
    from bench_assets.rf100vl.submission import SubmissionError, import_submission

    home = bench_home_path()
    try:
        out, sub, reasons = import_submission(home, Path(args.file).expanduser())
    except SubmissionError as exc:
        return _fail(str(exc))
    rf = sub.rf100vl
    print(f"imported {sub.model['name']}: {len(rf.datasets)} datasets, mAP50-95 {sub.accuracy['mAP_50_95']:.4f} "
          f"(recomputed from its per-dataset entries: agrees) -> {out}")
    if reasons:
        print("  not a valid leaderboard entry: " + "; ".join(reasons))
    return _load_warehouse(open_instance(home))


def cmd_submission_build(args: argparse.Namespace) -> int:
    from bench_assets.instance import open_instance, register_model_partition

    instance = open_instance(bench_home_path())
    register_model_partition(instance, args.model)
    code = _build_submission(instance, args.model)
    if code == 0:
        from bench_assets.rf100vl.submission import submission_path

        doc = json.loads(submission_path(bench_home_path(), args.model).read_text())
        rf = doc["rf100vl"]
        print(f"{args.model}: {len(rf['datasets'])} datasets, mAP50-95 {doc['accuracy']['mAP_50_95']}, "
              f"valid_submission={rf['valid_submission']} -> {submission_path(bench_home_path(), args.model)}")
        for r in rf["invalid_reasons"]:
            print(f"  not submittable because: {r}")
    return _load_warehouse(instance) or code


def _build_report(instance) -> int:  # noqa: ANN001
    from bench_assets.instance import execute

    return _report(execute(instance, "report_job"), "report")


def cmd_report(args: argparse.Namespace) -> int:
    """Warehouse, dbt marts and the rendered report from the artifacts on disk; print (or open) where it is."""
    from bench_assets.instance import open_instance

    home = bench_home_path()
    code = _build_report(open_instance(home))
    html, md = home / "report" / "index.html", home / "report" / "report.md"
    if not html.exists():
        return code or _fail("no report was rendered; see the run in the UI")
    print(f"report: {html}\nmarkdown: {md}")
    paper = home / "report" / "augbench" / "index.html"
    if paper.exists():
        print(f"augbench paper report: {paper}")
    if code:
        print("bench: the report was built, but checks failed (listed at its top and above)", file=sys.stderr)
    if args.open:
        import webbrowser

        if not webbrowser.open(html.as_uri()):
            print(f"bench: no browser available here; open {html.as_uri()}", file=sys.stderr)
    return code


def cmd_status(args: argparse.Namespace) -> int:
    """Per model: done / running / queued / failed / missing partitions of its suite, and an ETA."""
    from bench_assets.instance import open_instance
    from bench_assets.lanes import lanes_from_env
    from bench_assets.rf100vl.progress import campaign_progress, format_progress

    home = bench_home_path()
    progress = campaign_progress(home, open_instance(home), [args.model] if args.model else None)
    if args.json:
        print(json.dumps([{"model": p.model, "suite": p.suite, "states": p.states,
                           "eta_seconds": p.eta_seconds(len(lanes_from_env()))} for p in progress], indent=1))
    else:
        print(format_progress(progress, len(lanes_from_env())))
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    """Upload a model's results and/or checkpoints to a HF dataset repo, then verify by listing the remote."""
    from bench_assets.rf100vl.publish import publish_main

    def log(msg: str) -> None:
        print(msg, file=sys.stderr if msg.startswith("publish failed") else sys.stdout)

    return publish_main(bench_home_path(), args.model, args.repo, args.tier, dry_run=args.dry_run,
                        append=args.append, log=log)


def _augbench_config(args: argparse.Namespace):  # noqa: ANN202
    from bench_assets.augbench.config import load_config

    overrides = {"num_items": args.num_items, "num_runs": args.num_runs, "device": args.device,
                 "workers": args.workers, "batch_size": args.batch_size}
    return load_config(Path(args.config), overrides)


def cmd_augbench_plan(args: argparse.Namespace) -> int:
    """Expand a config into partitions, cells and result files; refuse impossible cells with the reason."""
    from bench_assets.augbench.config import ConfigError
    from bench_assets.augbench.pipeline import register_config
    from bench_assets.augbench.plan import format_plan

    try:
        plan = register_config(bench_home_path(), _augbench_config(args))
    except ConfigError as exc:
        return _fail(str(exc), 2)
    print(format_plan(plan, bench_home_path()))
    return 0


def run_augbench(config_path: Path, overrides: dict | None = None, report: bool = True) -> int:
    """Register the config, build its media, then measure each library in turn (never two at once: they
    would share the cores being measured), then load the warehouse and rebuild the report."""
    import dagster as dg

    from bench_assets.augbench.config import ConfigError, load_config
    from bench_assets.augbench.partitions import CONFIG_PARTITIONS_NAME
    from bench_assets.augbench.pipeline import register_config
    from bench_assets.augbench.plan import format_plan
    from bench_assets.instance import _add_partitions, execute, open_instance

    home = bench_home_path()
    try:
        cfg = load_config(config_path, overrides)
        plan = register_config(home, cfg)
    except ConfigError as exc:
        return _fail(str(exc), 2)
    print(format_plan(plan, home))
    instance = open_instance(home)
    _add_partitions(instance, CONFIG_PARTITIONS_NAME, [cfg.name])
    code = _report(execute(instance, "augbench_media_job", partition_key=cfg.name), f"augbench media {cfg.name}")
    if code:
        return code
    for lib in cfg.libraries:
        key = dg.MultiPartitionKey({"config": cfg.name, "library": lib})
        outcome = execute(instance, "augbench_results_job", partition_key=key)
        code = _report(outcome, f"augbench {cfg.name}/{lib}") or code
        print(f"augbench {cfg.name}/{lib}: {'ok' if outcome.success else 'FAILED'} (run {outcome.run_id})")
    if report:
        code = _build_report(instance) or code
    return code


def cmd_augbench_run(args: argparse.Namespace) -> int:
    overrides = {"num_items": args.num_items, "num_runs": args.num_runs, "device": args.device,
                 "workers": args.workers, "batch_size": args.batch_size}
    return run_augbench(Path(args.config), overrides, report=not args.no_report)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Find (and with --fix repair) what faults left: stuck pool slots, dead runs, orphaned temp files."""
    from bench_assets.doctor import doctor_main

    return doctor_main(bench_home_path(), args.fix, print)


def cmd_check_datasets(args: argparse.Namespace) -> int:
    """Re-run the dataset checks on the current versions as stored now (nothing is re-imported)."""
    from bench_assets.instance import execute, open_instance
    from bench_assets.rf100vl.sensors import DATASET_JOB
    from bench_assets.rf100vl.store import current_version, iter_versions, why_no_current

    home = bench_home_path()
    names = args.names or sorted({n for n, _ in iter_versions(home / "datasets")})
    instance = open_instance(home)
    failed = []
    for name in names:
        if current_version(home / "datasets", name) is None:
            print(f"bench: {why_no_current(home / 'datasets', name)}", file=sys.stderr)
            failed.append(name)
            continue
        outcome = execute(instance, DATASET_JOB, partition_key=name, checks_only=True)
        if _report(outcome, f"checks of dataset {name}"):
            failed.append(name)
        else:
            print(f"dataset {name}: checks pass (run {outcome.run_id})")
    return 1 if failed else 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from bench_assets.rescore import rescore_all

    return rescore_all(bench_home_path(), model=args.model, datasets=args.datasets)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0],
                                epilog="--verbose (anywhere): print failed steps' stack traces on the terminal "
                                       "too (they are always in the Dagster event log)")
    sub = p.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="the embedded mini suite end to end: datasets, training, scores")
    demo.add_argument("--datasets-only", action="store_true", help="stop after the datasets")
    demo.add_argument("--lanes", type=int, default=2, help="CPU lanes for training (default 2)")
    demo.add_argument("--no-augbench", action="store_true", help="skip the reduced augmentation benchmark")
    demo.set_defaults(fn=cmd_demo)
    ds = sub.add_parser("datasets", help="import, register and list datasets").add_subparsers(
        dest="datasets_command", required=True)
    imp = ds.add_parser("import", help="import a Roboflow-layout folder or a tar of one")
    imp.add_argument("path")
    imp.add_argument("--name", help="dataset name (default: the folder or tar name)")
    imp.add_argument("--suite", help="suite to add the dataset to")
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
    for name, fn, helptext in (("train", cmd_train, "fine-tune a model on every dataset of a suite"),
                               ("campaign", cmd_campaign, "train, predict and score: one resumable campaign")):
        c = sub.add_parser(name, help=helptext)
        c.add_argument("--model", required=True, help="family-size, e.g. yolo9-t")
        c.add_argument("--suite", help="rf100vl, rf20vl or mini")
        c.add_argument("--datasets", help="comma-separated names (a leading dash needs --datasets=-grccs)")
        c.add_argument("--recipe", default="default", help="default, smoke, or a path to a recipe JSON")
        c.add_argument("--lanes", type=int, default=0, help="CPU lanes on a box without GPUs (BENCH_CPU_LANES)")
        c.add_argument("--force", action="store_true", help="retrain even when a finished run exists")
        c.set_defaults(fn=fn)
    ex = sub.add_parser("_exec", help=argparse.SUPPRESS)
    ex.add_argument("job")
    ex.add_argument("partition")
    ex.add_argument("--config")
    ex.add_argument("--priority")
    ex.set_defaults(fn=cmd_exec)
    rp = sub.add_parser("report", help="build the report (warehouse, dbt marts, report.md + index.html) and print "
                                       "where it is")
    rp.add_argument("--open", action="store_true", help="open index.html in a browser")
    rp.set_defaults(fn=cmd_report)
    st = sub.add_parser("status", help="campaign progress per model: done/running/queued/failed/missing, ETA")
    st.add_argument("--model")
    st.add_argument("--json", action="store_true")
    st.set_defaults(fn=cmd_status)
    sb = sub.add_parser("submission", help="build or import va.submission.v1 files").add_subparsers(
        dest="submission_command", required=True)
    si = sb.add_parser("import", help="load an existing submission (e.g. a published leaderboard entry)")
    si.add_argument("file")
    si.set_defaults(fn=cmd_submission_import)
    sbb = sb.add_parser("build", help="(re)build a model's submission from its current scores")
    sbb.add_argument("--model", required=True)
    sbb.set_defaults(fn=cmd_submission_build)
    ab = sub.add_parser("augbench", help="the augmentation speed benchmark: plan and run configs").add_subparsers(
        dest="augbench_command", required=True)
    for name, fn, helptext in (("plan", cmd_augbench_plan, "expand a config into partitions, cells and result files"),
                               ("run", cmd_augbench_run, "run a config's plan through Dagster, then the report")):
        a = ab.add_parser(name, help=helptext)
        a.add_argument("--config", required=True, help="a YAML config, e.g. configs/paper/rgb-micro.yaml")
        a.add_argument("--num-items", type=int)
        a.add_argument("--num-runs", type=int)
        a.add_argument("--device", choices=["cpu", "cuda"])
        a.add_argument("--workers", type=int)
        a.add_argument("--batch-size", type=int)
        if name == "run":
            a.add_argument("--no-report", action="store_true", help="skip the warehouse load and report rebuild")
        a.set_defaults(fn=fn)
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
    dr = sub.add_parser("doctor", help="find stuck pool slots, runs whose process is gone and orphaned temp "
                                       "files under BENCH_HOME; --fix repairs them")
    dr.add_argument("--fix", action="store_true", help="free the slots, mark dead runs failed, remove the temps")
    dr.set_defaults(fn=cmd_doctor)
    ui = sub.add_parser("ui", help="start the Dagster UI on this machine")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(fn=cmd_ui)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--verbose" in argv:  # anywhere on the line: stack traces of failed steps reach the terminal too
        argv = [a for a in argv if a != "--verbose"]
        os.environ["BENCH_VERBOSE"] = "1"
    if argv[:1] in (["augbench"], ["demo"]):
        # The single-thread policy must be in the environment before numpy/torch load their thread pools.
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(var, "1")
    if argv[:1] == ["score"]:  # the fast path: no Dagster, no torch
        from bench_assets.rf100vl.score_cli import main as score_main

        return score_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
