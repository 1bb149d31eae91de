"""`bench`: the terminal face of the platform. Every verb runs through Dagster on the product instance.

Exit code 0 on success, 1 when a run failed (the reason goes to stderr), 2 on bad usage. The verbs live beside
this file: the platform's own (`platform_verbs.py`), one module per family (`rf100vl.py`, `augbench.py`) and
the demo that runs both; this module only assembles the parser.
"""

from __future__ import annotations

import argparse
import os
import sys

from bench_assets.cli.common import fail


def _demo_parser(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import demo  # a verb's module loads only when its parser is built

    p = sub.add_parser("demo", help="the embedded mini suite end to end: datasets, training, scores")
    p.add_argument("--datasets-only", action="store_true", help="stop after the datasets")
    p.add_argument("--lanes", type=int, default=2, help="CPU lanes for training (default 2)")
    p.add_argument("--no-augbench", action="store_true", help="skip the reduced augmentation benchmark")
    p.set_defaults(fn=demo.cmd_demo)


def _datasets_parser(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import rf100vl  # a verb's module loads only when its parser is built

    ds = sub.add_parser("datasets", help="import, register and list datasets").add_subparsers(
        dest="datasets_command", required=True)
    imp = ds.add_parser("import", help="import a Roboflow-layout folder or a tar of one")
    imp.add_argument("path")
    imp.add_argument("--name", help="dataset name (default: the folder or tar name)")
    imp.add_argument("--suite", help="suite to add the dataset to")
    imp.add_argument("--roboflow-version", metavar="[PROJECT/]N",
                     help="the Roboflow export these files are (integer version, project slug for datasets outside "
                          "the catalogue); recorded in the lock beside the content hash")
    imp.set_defaults(fn=rf100vl.cmd_import)
    reg = ds.add_parser("register", help="register a built-in suite's datasets as partitions")
    reg.add_argument("--suite", required=True, help="rf100vl, rf20vl or mini")
    reg.add_argument("--materialize", action="store_true", help="also fetch and verify them now")
    reg.set_defaults(fn=rf100vl.cmd_register)
    chk = ds.add_parser("check", help="re-run the dataset checks on the stored current versions (no re-import)")
    chk.add_argument("names", nargs="*", help="dataset names (default: every stored dataset)")
    chk.set_defaults(fn=rf100vl.cmd_check_datasets)
    ls = ds.add_parser("list", help="stored datasets: current and blocked versions")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=rf100vl.cmd_list)
    rm = ds.add_parser("remove", help="delete a dataset partition and its materialization status (files kept "
                                      "unless --purge)")
    rm.add_argument("name", help="dataset name (a leading dash needs `-- -grccs`)")
    rm.add_argument("--purge", action="store_true",
                    help="also remove its stored versions, source record, inbox entry and the runs and evaluations "
                         "made on it under BENCH_HOME")
    rm.set_defaults(fn=rf100vl.cmd_remove_dataset)


def _models_parser(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import rf100vl  # a verb's module loads only when its parser is built

    md = sub.add_parser("models", help="remove model partitions").add_subparsers(dest="models_command",
                                                                                  required=True)
    rm = md.add_parser("remove", help="delete a model partition and its materialization status (files kept unless "
                                      "--purge)")
    rm.add_argument("name", help="model key, e.g. yolo9-t")
    rm.add_argument("--purge", action="store_true",
                    help="also remove its runs, evaluations, registration and submission under BENCH_HOME")
    rm.set_defaults(fn=rf100vl.cmd_remove_model)


def _campaign_parsers(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import rf100vl  # a verb's module loads only when its parser is built

    for name, fn, helptext in (("train", rf100vl.cmd_train, "fine-tune a model on every dataset of a suite"),
                               ("campaign", rf100vl.cmd_campaign, "train, predict and score: one resumable campaign")):
        c = sub.add_parser(name, help=helptext)
        c.add_argument("--model", required=True, help="family-size, e.g. yolo9-t")
        c.add_argument("--suite", help="rf100vl, rf20vl or mini")
        c.add_argument("--datasets", help="comma-separated names; with --suite, a part of it (a leading dash "
                                            "needs --datasets=-grccs)")
        c.add_argument("--recipe", default="default", help="default, smoke, or a path to a recipe JSON")
        c.add_argument("--lanes", type=int, default=0, help="CPU lanes on a box without GPUs (BENCH_CPU_LANES)")
        c.add_argument("--force", action="store_true", help="retrain even when a finished run exists")
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
    pl.add_argument("--all", action="store_true", help="plan every partition, also those already scored")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(fn=rf100vl.cmd_plan)
    st = sub.add_parser("status", help="campaign progress per model: done/running/queued/failed/missing, ETA")
    st.add_argument("--model")
    st.add_argument("--json", action="store_true")
    st.set_defaults(fn=rf100vl.cmd_status)


def _results_parsers(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import rf100vl  # a verb's module loads only when its parser is built

    sb = sub.add_parser("submission", help="build or import va.submission.v1 files").add_subparsers(
        dest="submission_command", required=True)
    si = sb.add_parser("import", help="load an existing submission (e.g. a published leaderboard entry)")
    si.add_argument("file")
    si.set_defaults(fn=rf100vl.cmd_submission_import)
    sbb = sb.add_parser("build", help="(re)build a model's submission from its current scores")
    sbb.add_argument("--model", required=True)
    sbb.set_defaults(fn=rf100vl.cmd_submission_build)
    pb = sub.add_parser("publish", help="upload a model's results/checkpoints to a HF dataset repo and verify them "
                                        "by listing the remote (token from HF_TOKEN)")
    pb.add_argument("--model", required=True)
    pb.add_argument("--repo", required=True, help="OWNER/NAME of a Hugging Face dataset repo")
    pb.add_argument("--tier", required=True, choices=["results", "checkpoints", "all"])
    pb.add_argument("--dry-run", action="store_true", help="print the file plan, upload nothing")
    pb.add_argument("--append", action="store_true", help="add to an already published run (identical files are "
                                                          "skipped, differing ones fail)")
    pb.set_defaults(fn=rf100vl.cmd_publish)
    rs = sub.add_parser("rescore", help="recompute scores from saved predictions with the reference backend")
    rs.add_argument("--model")
    rs.add_argument("--datasets", help="comma-separated names")
    rs.set_defaults(fn=rf100vl.cmd_rescore)
    sub.add_parser("score", help="score a COCO predictions file: bench score GT PRED [--backend] [--max-det]")


def _augbench_parser(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import augbench  # a verb's module loads only when its parser is built

    ab = sub.add_parser("augbench", help="the augmentation speed benchmark: plan and run configs").add_subparsers(
        dest="augbench_command", required=True)
    for name, fn, helptext in (("plan", augbench.cmd_plan, "expand a config into partitions, cells and result files"),
                               ("run", augbench.cmd_run, "run a config's plan through Dagster, then the report")):
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


def _platform_parsers(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import platform_verbs  # a verb's module loads only when its parser is built

    rp = sub.add_parser("report", help="build the report (warehouse, dbt marts, report.md + index.html) and print "
                                       "where it is")
    rp.add_argument("--open", action="store_true", help="open index.html in a browser")
    rp.set_defaults(fn=platform_verbs.cmd_report)
    dr = sub.add_parser("doctor", help="find stuck pool slots, runs whose process is gone and orphaned temp "
                                       "files under BENCH_HOME; --fix repairs them")
    dr.add_argument("--fix", action="store_true", help="free the slots, mark dead runs failed, remove the temps")
    dr.set_defaults(fn=platform_verbs.cmd_doctor)
    ui = sub.add_parser("ui", help="start the Dagster UI on this machine")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(fn=platform_verbs.cmd_ui)


def _cluster_parser(sub: argparse._SubParsersAction) -> None:
    from bench_assets.cli import cluster  # a verb's module loads only when its parser is built

    cluster.add_parser(sub)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0],
                                epilog="--verbose (anywhere): print failed steps' stack traces on the terminal "
                                       "too (they are always in the Dagster event log)")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_demo_parser, _datasets_parser, _models_parser, _campaign_parsers, _results_parsers,
                _augbench_parser, _platform_parsers, _cluster_parser):
        add(sub)
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
    if argv[:1] == ["score"]:  # the fast path: no Dagster, no torch, no other verb's module
        from bench_assets.cli.score import main as score_main

        return score_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
