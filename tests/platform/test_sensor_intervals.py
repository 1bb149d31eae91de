"""Sensor intervals: every sensor keeps its declared minimum interval unless BENCH_SENSOR_INTERVAL_S is set where the
code location loads (tests that wait on a sensor set it short)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench_assets.platform.automation import SENSOR_INTERVAL_ENV, sensor_interval_s
from tests.conftest import REPO

DECLARED = {"rf100vl_partition_guard": 30, "inbox_sensor": 15, "rf100vl_rescore_on_scoring_change": 300,
            "rf100vl_automation": 30, "augbench_partition_guard": 30, "report_automation": 30,
            "rf100vl_campaign_launcher": 30}
# Each environment gets a process of its own that loads the code location, as `dagster` or `bench` would: one
# interpreter imports Dagster (third-party: nothing of ours is imported, and no environment is read yet), then forks
# a child per environment, which sets the environment first and only then loads the location (half the cost of a
# fresh interpreter per load, most of which is importing Dagster). The children answer one JSON line each, in order.
_INTERVALS = """
import json, os, sys, traceback
import dagster
for env in json.loads(sys.argv[1]):
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.environ.update(env)
            from bench_assets.cli.location import load_location
            intervals = {s.name: s.minimum_interval_seconds for s in load_location().sensors}
            print("intervals", json.dumps(intervals), flush=True)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1]:
        sys.exit(f"loading the code location with {env} failed")
"""


def _loaded_intervals(*envs: dict[str, str]) -> list[dict[str, int]]:
    """The sensors' minimum intervals of the code location loaded in a fresh process for each of `envs` (each
    added to this environment without the override)."""
    base = {k: v for k, v in os.environ.items() if k != SENSOR_INTERVAL_ENV}
    out = subprocess.run([sys.executable, "-c", _INTERVALS, json.dumps(envs)], cwd=REPO, capture_output=True,
                         text=True, env=base, check=True).stdout
    answers = [line.removeprefix("intervals ") for line in out.splitlines() if line.startswith("intervals ")]
    assert len(answers) == len(envs), out
    return [json.loads(a) for a in answers]


def test_the_code_location_keeps_each_declared_interval_unless_the_override_is_set() -> None:
    declared, overridden = _loaded_intervals({}, {SENSOR_INTERVAL_ENV: "5"})
    assert {k: declared[k] for k in DECLARED} == DECLARED
    assert set(overridden) == set(declared) and set(overridden.values()) == {5}


def test_the_override_must_be_a_whole_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SENSOR_INTERVAL_ENV, "0")
    assert sensor_interval_s(30) == 1
    monkeypatch.setenv(SENSOR_INTERVAL_ENV, "soon")
    with pytest.raises(ValueError, match="BENCH_SENSOR_INTERVAL_S='soon': not a whole number of seconds"):
        sensor_interval_s(30)
    monkeypatch.delenv(SENSOR_INTERVAL_ENV)
    assert sensor_interval_s(30) == 30
