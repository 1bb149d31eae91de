"""Runs the augbench equivalence audit and writes its two committed outputs:

- bench_assets/augbench/data/equivalence_audit.csv (one row per media, transform and library), and
- docs/augbench_equivalence.md (per media a table: transform, libraries, verdict, reason),

then re-renders docs/augbench_transforms.md, whose notes column shows each transform's audit verdict.

Usage: .venv/bin/python scripts/augbench_equivalence.py [--media rgb 9ch video] [--no-write]
Takes about a minute on 2 cores (torch and OpenCV single-threaded). `--media` with a subset, or `--no-write`,
only prints (the committed files always cover every set).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_assets.augbench import equivalence
from bench_assets.augbench import equivalence_audit as eq  # noqa: E402
from bench_assets.augbench import transform_specs as ts  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--media", nargs="+", choices=ts.MEDIA, default=list(ts.MEDIA))
    ap.add_argument("--no-write", action="store_true", help="print the verdicts, write nothing")
    args = ap.parse_args(argv)
    media_sets = [m for m in ts.MEDIA if m in args.media]

    t0 = time.perf_counter()
    rows = eq.run_audit(media_sets, progress=lambda s: print(s, flush=True))
    runtime = time.perf_counter() - t0
    print(f"{len(rows)} rows in {runtime:.1f} s")
    for media in media_sets:
        flagged = {r.transform: r.verdict for r in rows if r.media == media and r.flag}
        print(f"{media}: flagged {', '.join(flagged) or 'none'}")

    if args.no_write or media_sets != list(ts.MEDIA):
        print("not written (--no-write or a subset of --media)")
        return 0
    eq.write_csv(rows)
    inputs = {m: eq.audit_items(m).description for m in media_sets}
    eq.DOC_PATH.write_text(eq.render_markdown(rows, inputs, runtime_s=round(runtime, -1)))
    ts.write_doc()
    for path in (equivalence.CSV_PATH, eq.DOC_PATH, ts.DOC_PATH):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
