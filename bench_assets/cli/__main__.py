"""`python -m bench_assets.cli ...` is `bench ...`.

It ends as a Python program does, with the interpreter's last garbage collections (unlike the training children,
bench_assets/platform/process_gc.py): a `bench` process may be a cluster's Celery worker or the one that stops and
restarts the cluster's servers, and with the freeze the cluster tests failed three times in three whole-suite runs
(a joined worker that did not exit after `down`, a task record left behind), where they had passed before."""

import sys

from bench_assets.cli import main

if __name__ == "__main__":
    sys.exit(main())
