"""Longest-first scheduling over lanes against its lower bound, checked on hand-worked cases and against a
brute-force optimum on small random sets (Graham's 4/3 bound)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from bench_assets.rf100vl.campaign.lane_plan import longest_first, lower_bound


def test_hand_worked_example() -> None:
    """Jobs 7, 5, 4, 3, 3 on 2 lanes: 7 -> lane 0, 5 -> lane 1, 4 -> lane 1 (free at 5), 3 -> lane 0 (free at 7),
    3 -> lane 1 (free at 9): lanes end at 10 and 12; the bound is max(7, 22 / 2) = 11."""
    plan = longest_first({"a": 7, "b": 5, "c": 4, "d": 3, "e": 3}, lanes=2)
    assert plan.assignments == (("a", "d"), ("b", "c", "e"))
    assert plan.makespan == 12 and plan.lower_bound == 11 and plan.finish["e"] == 12
    assert plan.ratio == pytest.approx(12 / 11)
    assert plan.busy_share == pytest.approx(22 / 24)


def test_one_long_job_dominates_and_more_lanes_than_jobs() -> None:
    plan = longest_first({"big": 100, "s1": 1, "s2": 1}, lanes=4)
    assert plan.makespan == 100 == plan.lower_bound and plan.ratio == 1.0
    assert [len(a) for a in plan.assignments] == [1, 1, 1, 0] and plan.finish_of(3) == 0.0
    assert longest_first({}, lanes=3).makespan == 0.0 and lower_bound({}, 3) == 0.0


def _optimum(durations: list[float], lanes: int) -> float:
    best = math.inf
    for assign in itertools.product(range(lanes), repeat=len(durations)):
        loads = [0.0] * lanes
        for d, lane in zip(durations, assign, strict=True):
            loads[lane] += d
        best = min(best, max(loads))
    return best


@pytest.mark.parametrize("seed", range(20))
def test_never_beats_the_optimum_and_stays_within_grahams_bound(seed: int) -> None:
    rng = random.Random(seed)
    lanes = rng.randint(2, 3)
    durations = [round(rng.lognormvariate(3, 1), 3) for _ in range(rng.randint(3, 7))]
    plan = longest_first({f"d{i}": d for i, d in enumerate(durations)}, lanes)
    best = _optimum(durations, lanes)
    assert plan.lower_bound <= best + 1e-9 <= plan.makespan + 2e-9
    assert plan.makespan <= (4 / 3 - 1 / (3 * lanes)) * best + 1e-9
    assert sorted(j for lane in plan.assignments for j in lane) == sorted(f"d{i}" for i in range(len(durations)))


def test_any_order_is_scheduled_on_the_lane_free_first() -> None:
    """The shortest job first on 2 lanes: 3 and 3 start at 0, 4 after the first 3, then 5 and 7: lanes end at
    3 + 4 + 7 = 14 and 3 + 5 = 8; an order that drops or repeats a job is refused."""
    from bench_assets.rf100vl.campaign.lane_plan import list_schedule

    jobs = {"a": 7, "b": 5, "c": 4, "d": 3, "e": 3}
    plan = list_schedule(jobs, 2, ["d", "e", "c", "b", "a"])
    assert plan.assignments == (("d", "c", "a"), ("e", "b")) and plan.makespan == 14
    assert plan.makespan > longest_first(jobs, 2).makespan
    with pytest.raises(ValueError, match="every job exactly once"):
        list_schedule(jobs, 2, ["a", "a", "b", "c", "d"])


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="lanes must be >= 1"):
        longest_first({"a": 1}, lanes=0)
    with pytest.raises(ValueError, match="finite and >= 0"):
        longest_first({"a": -1.0}, lanes=1)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite and >= 0"):
            lower_bound({"a": bad}, lanes=1)
