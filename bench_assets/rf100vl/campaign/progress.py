"""Where a campaign stands: each expected (dataset, model) partition is done, running, queued, failed or
missing, and when the rest should be finished. Files say what is done (a current score on disk); the
Dagster instance says what is running, queued or failed (the newest run of the partition).

Used by `bench status` and by the backfill schedule, which requests the missing and failed ones.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from bench_assets.rf100vl.scoring.eval_store import current_score
from bench_assets.rf100vl.training.run_store import current_stats

STATES = ("done", "running", "queued", "failed", "missing")
_RUN_STATE = {"STARTED": "running", "STARTING": "running", "QUEUED": "queued", "NOT_STARTED": "queued",
              "FAILURE": "failed", "CANCELED": "failed", "CANCELING": "running", "SUCCESS": None}


@dataclass
class ModelProgress:
    model: str
    suite: str
    states: dict[str, str] = field(default_factory=dict)  # dataset -> state
    train_seconds: list[float] = field(default_factory=list)  # of finished partitions

    def count(self, state: str) -> int:
        return sum(1 for s in self.states.values() if s == state)

    def eta_seconds(self, lanes: int) -> float | None:
        """Remaining partitions x the median wall time of the finished ones, spread over the lanes.
        None until one partition has finished (an epoch-1-only estimate would be garbage)."""
        remaining = len(self.states) - self.count("done")
        if remaining == 0:
            return 0.0
        if not self.train_seconds:
            return None
        return remaining * median(self.train_seconds) / max(1, lanes)


def classify(scored: bool, latest_run_status: str | None) -> str:
    """The state of one partition from whether a current score exists and its newest run's status."""
    if scored:
        return "done"
    return _RUN_STATE.get(latest_run_status or "", None) or "missing"


def campaign_progress(home: Path, runs: Mapping[str, str], models: list[str] | None = None) -> list[ModelProgress]:
    """Every registered model's progress; `runs` maps a partition key ("dataset|model") to the status name of its
    newest campaign/train/eval run (`defs.jobs.latest_runs`; empty where no instance is at hand)."""
    from bench_assets.rf100vl.datasets.catalog import suite_members
    from bench_assets.rf100vl.training.models import iter_entries

    out = []
    for entry in iter_entries(home):
        if models and entry.model not in models:
            continue
        names = suite_members(entry.suite) if entry.suite else entry.datasets
        prog = ModelProgress(entry.model, entry.expected_suite())
        for name in names:
            rec = current_score(home, entry.model, name)
            prog.states[name] = classify(rec is not None, runs.get(f"{name}|{entry.model}"))
            if rec is not None:
                stats = current_stats(home, entry.model, name)
                if stats is not None:
                    prog.train_seconds.append(float(stats["wall_seconds"]))
        out.append(prog)
    return out


def campaign_lanes(home: Path) -> int:
    """The lanes campaigns run on: the cluster's while one is up, else this machine's."""
    from bench_assets.platform.cluster.layout import load_state
    from resources.lanes import lanes_from_env

    state = load_state(home)
    return state.total_lanes if state is not None else len(lanes_from_env())


def remaining_eta(home: Path, progress: ModelProgress, lanes: int) -> tuple[float, str]:
    """(seconds until every partition not yet done is, its cost source): the lane planner's longest-first makespan
    of the remaining partitions over `lanes` with the cost model (measured per-image epoch costs, else the
    documented model). Partitions running now count in full (a conservative estimate)."""
    from bench_assets.rf100vl.campaign.cost_model import cost_model, durations, partition_images
    from bench_assets.rf100vl.campaign.lane_plan import longest_first
    from bench_assets.rf100vl.training.models import model_recipe
    from bench_assets.rf100vl.training.recipes import PROTOCOL, RecipeError

    todo = [d for d, s in progress.states.items() if s != "done"]
    if not todo:
        return 0.0, "finished"
    try:
        epochs = model_recipe(home, progress.model)[1].recipe.protocol.epochs
    except (RecipeError, ValueError, OSError):  # no recipe for this family: the protocol's epochs
        epochs = PROTOCOL["epochs"]
    device = "gpu" if os.environ.get("BENCH_GPUS") else "cpu"
    model = cost_model(home, progress.model, epochs, device)
    return longest_first(durations(partition_images(home, todo), model), max(1, lanes)).makespan, model.source


def format_progress(progress: list[ModelProgress], lanes: int,
                    etas: dict[str, tuple[float, str]] | None = None) -> str:
    if not progress:
        return "no model registered yet: `bench campaign --model M --suite S`"
    lines = [f"{'model':16s} {'suite':18s} " + " ".join(f"{s:>7s}" for s in STATES) + "   ETA"]
    for p in progress:
        eta = etas[p.model][0] if etas and p.model in etas else p.eta_seconds(lanes)
        eta_text = "-" if eta is None else ("finished" if eta == 0 else f"{eta / 3600:.1f} h on {lanes} lane(s)")
        if etas and p.model in etas and eta:
            eta_text += f" ({etas[p.model][1]})"
        lines.append(f"{p.model:16s} {p.suite:18s} " + " ".join(f"{p.count(s):7d}" for s in STATES) + f"   {eta_text}")
        failed = sorted(d for d, s in p.states.items() if s == "failed")
        if failed:
            lines.append(f"  failed: {', '.join(failed[:10])}{' ...' if len(failed) > 10 else ''}")
    return "\n".join(lines)
