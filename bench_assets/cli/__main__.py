"""`python -m bench_assets.cli ...` is `bench ...`."""

from bench_assets.cli import main
from bench_assets.platform.process_gc import exit_process

if __name__ == "__main__":
    exit_process(main())
