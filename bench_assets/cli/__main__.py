"""`python -m bench_assets.cli ...` is `bench ...`."""

import sys

from bench_assets.cli import main

if __name__ == "__main__":
    sys.exit(main())
