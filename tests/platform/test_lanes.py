from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from resources.lanes import NoLaneFree, lanes_from_env, lease_lane, plan_lanes
from tests.conftest import REPO


def test_plan_lanes_gpus_times_jobs() -> None:
    lanes = plan_lanes(["0", "1"], jobs_per_gpu=2, cpu_lanes=1, threads_per_lane=4)
    assert [(lane.index, lane.cuda_visible_devices, lane.device) for lane in lanes] == [
        (0, "0", "0"), (1, "0", "0"), (2, "1", "0"), (3, "1", "0")]
    env = lanes[2].child_env()
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["OMP_NUM_THREADS"] == "4" and env["OPENBLAS_NUM_THREADS"] == "4"
    cpu = lanes_from_env({"BENCH_CPU_LANES": "3"})
    assert [lane.device for lane in cpu] == ["cpu"] * 3 and cpu[0].child_env()["CUDA_VISIBLE_DEVICES"] == ""


def test_lease_gives_distinct_lanes_and_times_out(tmp_path: Path) -> None:
    lanes = plan_lanes([], 1, 2, 1)
    with lease_lane(lanes, tmp_path, "a") as a, lease_lane(lanes, tmp_path, "b") as b:
        assert {a.index, b.index} == {0, 1}
        with pytest.raises(NoLaneFree), lease_lane(lanes, tmp_path, "c", timeout_s=0.3, poll_s=0.1):
            pass
    with lease_lane(lanes, tmp_path, "d", timeout_s=0.3) as d:
        assert d.index == 0  # released on exit


def test_lease_is_released_when_the_holder_is_killed(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from resources.lanes import lease_lane, plan_lanes
        with lease_lane(plan_lanes([], 1, 1, 1), Path({str(tmp_path)!r}), "victim"):
            print("held", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == -9 and "held" in r.stdout
    with lease_lane(plan_lanes([], 1, 1, 1), tmp_path, "next", timeout_s=1.0) as lane:
        assert lane.index == 0
