"""Simulated makespan of a full RF100-VL campaign on N lanes: longest-first vs its lower bound vs random order.

A partition's cost is taken proportional to its images outside `test` (train + valid, from the catalogue: the
catalogue lists total and test images only) times the epochs: the fine-tune dominates and scales with images per
epoch. Only ratios are reported (makespan / lower bound, busy share, longest-first vs random order), so the
seconds-per-image constant cancels; `--s-per-image-epoch` (default 0.01 s, a stated assumption, not a
measurement) turns them into hours for the table. Every model is given the same cost per image (`--models` copies
of the 100 datasets), so the simulation isolates the ordering: with real per-model costs the jobs only get more
uneven.

    .venv/bin/python benchmarks/campaign_simulation.py
    .venv/bin/python benchmarks/campaign_simulation.py --models 4 --lanes 8 16 --epochs 100

Prints a markdown table and writes `benchmarks/results/campaign_simulation.json` (date, command, figures). Not a
test: pure arithmetic over the committed catalogue, a second or two.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench_assets.rf100vl.campaign.lane_plan import list_schedule, longest_first  # noqa: E402
from bench_assets.rf100vl.datasets.catalog import load_catalog  # noqa: E402

OUTPUT = REPO / "benchmarks" / "results" / "campaign_simulation.json"


def random_order_makespan(durations: dict[str, float], lanes: int, seed: int) -> float:
    """Makespan when the jobs are handed out in a random order (each to the lane free first)."""
    order = list(durations)
    random.Random(seed).shuffle(order)
    return list_schedule(durations, lanes, order).makespan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=4)
    ap.add_argument("--lanes", type=int, nargs="+", default=[8, 16])
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--s-per-image-epoch", type=float, default=0.01)
    ap.add_argument("--random-seeds", type=int, default=200)
    ap.add_argument("--output", type=Path, default=OUTPUT)
    args = ap.parse_args()

    catalog = load_catalog()
    images = {name: e.num_images - e.test_images for name, e in catalog.items()}
    durations = {f"{name}|m{m}": n * args.epochs * args.s_per_image_epoch
                 for name, n in images.items() for m in range(args.models)}
    rows = []
    for lanes in args.lanes:
        plan = longest_first(durations, lanes)
        rnd = sorted(random_order_makespan(durations, lanes, s) for s in range(args.random_seeds))
        rows.append({"lanes": lanes, "jobs": len(durations), "makespan_h": plan.makespan / 3600,
                     "lower_bound_h": plan.lower_bound / 3600, "ratio_to_lower_bound": plan.ratio,
                     "busy_share": plan.busy_share, "longest_job_h": max(durations.values()) / 3600,
                     "random_order_median_h": rnd[len(rnd) // 2] / 3600, "random_order_worst_h": rnd[-1] / 3600})
    total_h = sum(durations.values()) / 3600
    print(f"{len(catalog)} datasets x {args.models} models = {len(durations)} partitions; images outside test: "
          f"min {min(images.values())}, median {sorted(images.values())[50]}, max {max(images.values())}; "
          f"{args.epochs} epochs at {args.s_per_image_epoch} s per image-epoch (assumed): {total_h:.0f} lane-hours\n")
    print("| lanes | makespan h | lower bound h | makespan / bound | busy share | random order h (median / worst) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['lanes']} | {r['makespan_h']:.1f} | {r['lower_bound_h']:.1f} | {r['ratio_to_lower_bound']:.4f} | "
              f"{r['busy_share']:.1%} | {r['random_order_median_h']:.1f} / {r['random_order_worst_h']:.1f} |")
    doc = {"benchmark": "campaign_simulation", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "command": shlex.join([".venv/bin/python", "benchmarks/campaign_simulation.py", *sys.argv[1:]]),
           "models": args.models, "epochs": args.epochs, "s_per_image_epoch_assumed": args.s_per_image_epoch,
           "lane_hours": total_h, "rows": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
