"""`bench`: the terminal face of the platform. Every verb runs through Dagster on the product instance.

Exit code 0 on success, 1 when a run failed (the reason goes to stderr), 2 on bad usage. The verbs live beside
this file: the platform's own (`platform_verbs.py`), one module per family (`rf100vl.py`, `augbench.py`) and
the demo that runs both; each owns its parsers, and this module only assembles them.
"""

from __future__ import annotations

import argparse
import os
import sys

from bench_assets.cli.common import fail


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0],
                                epilog="--verbose (anywhere): print failed steps' stack traces on the terminal "
                                       "too (they are always in the Dagster event log)")
    sub = p.add_subparsers(dest="command", required=True)
    # Each verb's module owns its parsers and loads only when the parser is built (`bench score` needs none).
    from bench_assets.cli import augbench, cluster, demo, platform_verbs, rf100vl

    for add in (demo.add_parser, rf100vl.add_parsers, augbench.add_parser, platform_verbs.add_parsers,
                cluster.add_parser):
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
