"""(informational) What opening a DuckDB file costs the warehouse's readers and its loader: each file attached to
the process's one in-memory engine (`bench_assets/platform/duckdb_files.py`, what the code does) against a fresh
`duckdb.connect` per read or per load (what it did before), measured in the same run on the same warehouse.

Setup: `tests/synthetic_campaign.py::make_campaign(home, MODELS, DATASETS)` and one `rebuild_warehouse` (not timed).

Timed, alternating the two ways, medians of `--repeat` (CPU of this process and wall):
- one small read: `query(warehouse, "SELECT count(*) AS n FROM scores")`;
- every campaign check of `bench_assets/rf100vl/report/warehouse_checks.py` except provenance (which hashes the
  artifact files and would hide the reads), one after another, as the check assets run them;
- `rebuild_warehouse`: every table into a new file, renamed into place.
The fresh-connection way is the module's `attached` swapped for one that calls `duckdb.connect` (read-only for
reads), so everything else is the same code.

    .venv/bin/python benchmarks/duckdb_reads.py [--models 4] [--datasets 8] [--repeat 21]

Writes `benchmarks/results/duckdb_reads.json` (docs/report.md quotes it).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _result import RESULTS, command, machine_facts, now, write_result  # noqa: E402

from bench_assets.platform import warehouse  # noqa: E402
from bench_assets.rf100vl.report import warehouse_checks as cc  # noqa: E402
from tests.synthetic_campaign import make_campaign  # noqa: E402
from tests.tables import ALL_TABLES  # noqa: E402

OUTPUT = RESULTS / "duckdb_reads.json"
CHECKS = (cc.selection_vs_test, cc.adjacent_size_gap, cc.coverage, cc.protocol_conformance, cc.scoring_integrity)


@contextlib.contextmanager
def connected(path: Path | str, *, read_only: bool = True) -> Iterator[Any]:
    """The way before: a DuckDB instance of its own per read or load."""
    import duckdb

    con = duckdb.connect(str(path), read_only=read_only)
    try:
        yield con
    finally:
        con.close()


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=4)
    ap.add_argument("--datasets", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--output", type=Path, default=OUTPUT)
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bench-duckdb-reads-")) / "home"
    make_campaign(home, args.models, args.datasets)
    wh = home / "warehouse.duckdb"
    warehouse.rebuild_warehouse(home, wh, ALL_TABLES)
    operations: dict[str, Callable[[], Any]] = {
        "one read": lambda: warehouse.query(wh, "SELECT count(*) AS n FROM scores"),
        "five checks": lambda: [check(wh) for check in CHECKS],
        "rebuild": lambda: warehouse.rebuild_warehouse(home, wh, ALL_TABLES),
    }
    ways = {"attached": warehouse.attached, "connect": connected}
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {op: {w: [] for w in ways} for op in operations}
    for op, fn in operations.items():
        for way in ways:  # one untimed call each: the first attach makes the engine
            warehouse.attached = ways[way]
            fn()
        for i in range(args.repeat):
            for way in (list(ways) if i % 2 == 0 else list(ways)[::-1]):
                warehouse.attached = ways[way]
                samples[op][way].append(timed(fn))
    opened: list[Path] = []

    def counted(path: Path, **kw: Any) -> Any:
        opened.append(path)
        return ways["attached"](path, **kw)

    warehouse.attached = counted
    operations["five checks"]()
    warehouse.attached = ways["attached"]

    figures: dict[str, Any] = {}
    print(f"the five checks open the warehouse {len(opened)} times")
    print("| operation | attached: CPU ms | wall ms | connect: CPU ms | wall ms | CPU ratio |")
    print("|---|---|---|---|---|---|")
    for op, by_way in samples.items():
        med = {w: (statistics.median(c for c, _ in s) * 1000, statistics.median(t for _, t in s) * 1000)
               for w, s in by_way.items()}
        ratio = med["attached"][0] / med["connect"][0]
        figures[op] = {f"{w}_{kind}_ms": round(med[w][k], 2) for w in ways for k, kind in enumerate(("cpu", "wall"))}
        figures[op]["cpu_ratio"] = round(ratio, 3)
        print(f"| {op} | {med['attached'][0]:.1f} | {med['attached'][1]:.1f} | {med['connect'][0]:.1f} | "
              f"{med['connect'][1]:.1f} | x{ratio:.2f} |")
    doc = {"benchmark": "duckdb_reads", "date": now(), "machine": machine_facts(), "command": command(),
           "models": args.models, "datasets": args.datasets, "repeat": args.repeat,
           "reads_in_five_checks": len(opened), "figures": figures}
    write_result(args.output, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
