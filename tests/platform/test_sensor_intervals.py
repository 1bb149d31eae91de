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
            "rf100vl_automation": 30, "augbench_partition_guard": 30, "report_automation": 30}
_INTERVALS = ("from bench_assets.cli.location import load_location; import json; "
              "print(json.dumps({s.name: s.minimum_interval_seconds for s in load_location().sensors}))")


def _loaded_intervals(**env: str) -> dict[str, int]:
    base = {k: v for k, v in os.environ.items() if k != SENSOR_INTERVAL_ENV}
    out = subprocess.run([sys.executable, "-c", _INTERVALS], cwd=REPO, capture_output=True, text=True,
                         env={**base, **env}, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_code_location_keeps_each_declared_interval_unless_the_override_is_set() -> None:
    declared = _loaded_intervals()
    assert {k: declared[k] for k in DECLARED} == DECLARED
    overridden = _loaded_intervals(**{SENSOR_INTERVAL_ENV: "5"})
    assert set(overridden) == set(declared) and set(overridden.values()) == {5}


def test_the_override_must_be_a_whole_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SENSOR_INTERVAL_ENV, "0")
    assert sensor_interval_s(30) == 1
    monkeypatch.setenv(SENSOR_INTERVAL_ENV, "soon")
    with pytest.raises(ValueError, match="BENCH_SENSOR_INTERVAL_S='soon': not a whole number of seconds"):
        sensor_interval_s(30)
    monkeypatch.delenv(SENSOR_INTERVAL_ENV)
    assert sensor_interval_s(30) == 30
