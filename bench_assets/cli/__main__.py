"""`python -m bench_assets.cli ...` is `bench ...` (the installed `bench` command calls `console`)."""

from bench_assets.cli import main
from bench_assets.platform.process_gc import exit_process


def console() -> None:
    exit_process(main())


if __name__ == "__main__":
    exit_process(main())
