"""How long a campaign takes on N lanes: longest-first list scheduling and its lower bound (pure; no Dagster).

A campaign is a set of independent partitions (one fine-tune + predict + score each) spread over lanes (GPUs x
jobs per GPU). The CLI and the backfill schedule hand partitions out longest first; each goes to the lane that
frees first. `longest_first` simulates exactly that and gives the makespan (when the last lane finishes) and each
lane's jobs; `lower_bound` is what no order can beat: the longest single job, or the total work spread evenly.
Graham's bound says longest-first is within 4/3 - 1/(3 x lanes) of the optimum, so `makespan / lower_bound`
tells how much a better order could still gain.

The durations come from the caller (measured per-image epoch costs, or a documented model); this module only
schedules them. It is the core of issue 13's lane planner and campaign simulation.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class LanePlan:
    lanes: int
    makespan: float  # seconds until the last lane finishes
    lower_bound: float  # no order can finish earlier
    assignments: tuple[tuple[str, ...], ...]  # per lane: job names in the order they run
    finish: Mapping[str, float]  # job -> its finish time

    @property
    def ratio(self) -> float:
        """makespan / lower bound (1.0 = provably optimal)."""
        return self.makespan / self.lower_bound if self.lower_bound else 1.0

    @property
    def busy_share(self) -> float:
        """Share of lane-seconds doing work until the makespan (1.0 = no lane ever idles)."""
        total = sum(self.finish_of(lane) for lane in range(self.lanes))
        return total / (self.makespan * self.lanes) if self.makespan else 1.0

    def finish_of(self, lane: int) -> float:
        jobs = self.assignments[lane]
        return self.finish[jobs[-1]] if jobs else 0.0


def lower_bound(durations: Mapping[str, float], lanes: int) -> float:
    _check(durations, lanes)
    if not durations:
        return 0.0
    return max(max(durations.values()), sum(durations.values()) / lanes)


def longest_first(durations: Mapping[str, float], lanes: int) -> LanePlan:
    """Jobs sorted by duration (longest first, ties by name), as the campaign runner hands them out."""
    return list_schedule(durations, lanes, sorted(durations, key=lambda name: (-durations[name], name)))


def list_schedule(durations: Mapping[str, float], lanes: int, order: Sequence[str]) -> LanePlan:
    """The jobs in `order` (every job once), each started on the lane that is free first (ties: the lowest
    lane number)."""
    _check(durations, lanes)
    if sorted(order) != sorted(durations):
        raise ValueError("order must list every job exactly once")
    free: list[tuple[float, int]] = [(0.0, lane) for lane in range(lanes)]  # (free at, lane)
    assignments: list[list[str]] = [[] for _ in range(lanes)]
    finish: dict[str, float] = {}
    for name in order:
        at, lane = heapq.heappop(free)
        end = at + durations[name]
        assignments[lane].append(name)
        finish[name] = end
        heapq.heappush(free, (end, lane))
    makespan = max(finish.values(), default=0.0)
    return LanePlan(lanes, makespan, lower_bound(durations, lanes), tuple(map(tuple, assignments)), finish)


def _check(durations: Mapping[str, float], lanes: int) -> None:
    if lanes < 1:
        raise ValueError(f"lanes must be >= 1, got {lanes}")
    bad = {k: v for k, v in durations.items() if not (math.isfinite(v) and v >= 0.0)}
    if bad:
        raise ValueError(f"durations must be finite and >= 0 seconds; got {bad}")
