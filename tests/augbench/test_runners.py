"""augbench runners and statistics: every cell reaches a terminal status, slow cells are early-stopped (never ok),
one failing transform does not stop the others, DataLoader start-up is timed apart from steady state."""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np
import pytest

from bench_assets.augbench.media import MediaSet
from bench_assets.augbench.runners import CellResult, apply_thread_policy, run_dataloader, run_micro
from bench_assets.augbench.stats import summarize, t_quantile_975

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

try:
    from bench_assets.augbench.adapters.base import Unsupported
except ImportError:  # the adapters land in parallel; the runners match the exception by name until then

    class Unsupported(Exception):  # type: ignore[no-redef]
        pass


# ------------------------------------------------------------------ stats


def test_summarize_hand_computed() -> None:
    s = summarize([10.0, 12.0, 14.0, 16.0])
    # mean 13, deviations -3 -1 1 3 -> sum of squares 20 -> var 20/3, std 2.581989
    assert s["n"] == 4 and s["mean"] == 13.0 and s["median"] == 13.0
    assert s["std"] == pytest.approx(math.sqrt(20 / 3))
    assert s["cv"] == pytest.approx(math.sqrt(20 / 3) / 13)
    half = 3.182446 * math.sqrt(20 / 3) / 2  # t(0.975, 3) * std / sqrt(4) = 4.108520
    assert s["ci95_low"] == pytest.approx(13 - half) and s["ci95_high"] == pytest.approx(13 + half)
    assert s["ci95_low"] == pytest.approx(8.891480, abs=1e-5)
    # linear percentiles: position (n-1) q / 100 -> p5 at 0.15: 10.3; p25 at 0.75: 11.5; p75 14.5; p95 15.7
    assert (s["p5"], s["p25"], s["p75"], s["p95"]) == pytest.approx((10.3, 11.5, 14.5, 15.7))
    assert s["unstable"] is True  # cv 0.199 > 0.15
    assert summarize([3.0, 1.0, 2.0])["median"] == 2.0
    assert summarize([100.0, 101.0, 99.0])["unstable"] is False  # cv 0.01


def test_summarize_unstable_and_edge_cases() -> None:
    s = summarize([100.0, 50.0])  # mean 75, std 35.355, cv 0.471
    assert s["cv"] == pytest.approx(0.4714045) and s["unstable"] is True
    assert s["ci95_high"] - s["mean"] == pytest.approx(12.706205 * 35.3553391 / math.sqrt(2))
    one = summarize([42.0])
    assert one["n"] == 1 and one["std"] == 0.0 and one["cv"] == 0.0 and one["unstable"] is False
    assert one["ci95_low"] == one["ci95_high"] == one["median"] == one["p5"] == one["p95"] == 42.0
    none = summarize([])
    assert none["n"] == 0 and none["median"] is None and none["unstable"] is None
    assert summarize([5.0, 5.0, 5.0])["cv"] == 0.0
    with pytest.raises(ValueError, match="finite"):
        summarize([1.0, float("inf")])
    assert t_quantile_975(1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile_975(60) == pytest.approx(2.000298, abs=1e-5)
    assert t_quantile_975(1000) == pytest.approx(1.962339, abs=1e-5)


# ------------------------------------------------------------------ a fake library


class FailingTransform:
    """Raises on the call number `after` + 1 (counted per transform), i.e. after the preflight has passed."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.calls = 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError(f"kaboom on call {self.calls}")
        return x


class ToFloat:
    """A picklable DataLoader pipeline: uint8 HWC -> float32 CHW tensor; sleeps `delay` s per item;
    raises on an item whose first pixel equals `poison`."""

    def __init__(self, delay: float = 0.0, poison: int | None = None) -> None:
        self.delay, self.poison = delay, poison

    def __call__(self, x: np.ndarray) -> Any:
        import torch

        if self.delay:
            time.sleep(self.delay)
        if self.poison is not None and int(x.flat[0]) == self.poison:
            raise ValueError(f"poisoned item (first pixel {self.poison})")
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))).float().div_(255)


class FakeAdapter:
    library = "fake"

    def __init__(self, unavailable: str | None = None) -> None:
        self.unavailable = unavailable
        self.to_native_calls = 0
        self.materialized = 0

    def availability(self, device: str) -> str | None:
        return self.unavailable

    def versions(self) -> dict[str, str]:
        return {"fake": "1.0"}

    def to_native(self, items: list[np.ndarray], media: str, device: str) -> list[np.ndarray]:
        self.to_native_calls += 1
        return [np.ascontiguousarray(x) for x in items]

    def build(self, transform: str, media: str, device: str) -> Any:
        if transform == "Flip":
            return lambda x: x[:, ::-1]
        if transform == "Slow":
            return lambda x: (time.sleep(0.06), x)[1]  # ~16 items/s, under the 20 items/s bar
        if transform == "NotHere":
            raise Unsupported("fake has no NotHere for rgb")
        if transform == "BadBuild":
            raise KeyError("missing parameter 'sigma'")
        if transform == "MidRunFail":
            return FailingTransform(after=12)  # first call + 10 preflight items pass; warm-up fails
        raise AssertionError(transform)

    def materialize(self, out: Any) -> Any:
        self.materialized += 1
        return out

    def dataloader_transform(self, transform: str, media: str) -> Any:
        if transform == "Flip":
            return ToFloat()
        if transform == "Slow":
            return ToFloat(delay=0.06)
        if transform == "NotHere":
            raise Unsupported("fake has no NotHere pipeline")
        if transform == "Poisoned":
            return ToFloat(poison=201)
        raise AssertionError(transform)


def _media(n: int = 20, size: int = 16) -> MediaSet:
    rng = np.random.default_rng(0)
    items = [rng.integers(0, 200, (size, size, 3), dtype=np.uint8) for _ in range(n)]
    return MediaSet(items, "rgb", "random test items")


class RecordingBar:
    descs: list[str] = []

    def __init__(self, total: int, desc: str, leave: bool) -> None:
        RecordingBar.descs.append(desc)

    def update(self, n: int = 1) -> None: ...

    def set_description(self, desc: str, refresh: bool = True) -> None:
        RecordingBar.descs.append(desc)

    def close(self) -> None: ...


# ------------------------------------------------------------------ micro


def test_micro_statuses_and_others_continue() -> None:
    adapter, logs = FakeAdapter(), []
    RecordingBar.descs = []
    out = run_micro(adapter, _media(), ["Flip", "Slow", "NotHere", "BadBuild", "MidRunFail", "Flip"],
                    num_runs=3, warmup=1, progress=RecordingBar, log=logs.append)
    assert [c["transform"] for c in out] == ["Flip", "Slow", "NotHere", "BadBuild", "MidRunFail", "Flip"]
    assert [c["status"] for c in out] == ["ok", "early_stopped", "unsupported", "error", "error", "ok"]
    for c in out:
        CellResult.model_validate(c)
        assert c["library"] == "fake" and c["mode"] == "micro" and c["n_items"] == 20 and c["seconds_total"] >= 0
    ok, slow, unsup, bad, mid = out[:5]
    assert len(ok["throughputs"]) == 3 and ok["summary"]["n"] == 3 and ok["summary"]["median"] > 20
    assert ok["preflight_throughput"] > 20 and ok["reason"] is None
    assert slow["throughputs"] == [] and slow["summary"] is None
    assert 5 < slow["preflight_throughput"] <= 20 and "preflight" in slow["reason"]
    assert unsup["reason"] == "fake has no NotHere for rgb"
    assert "KeyError" in bad["reason"] and "sigma" in bad["reason"]
    assert "kaboom on call 13" in mid["reason"] and mid["throughputs"] == []
    assert adapter.to_native_calls == 1  # media converted once per library, not per transform
    assert len(logs) == 6 and "early_stopped" in logs[1]
    assert "fake Flip run 3/3" in RecordingBar.descs and "fake Flip warmup 1/1" in RecordingBar.descs


def test_micro_error_after_some_timed_runs_keeps_them() -> None:
    class Late(FakeAdapter):
        def build(self, transform: str, media: str, device: str) -> Any:
            return FailingTransform(after=1 + 10 + 20 + 2 * 20 + 5)  # first call, preflight, warm-up, 2 runs

    out = run_micro(Late(), _media(), ["X"], num_runs=4, warmup=1)
    assert out[0]["status"] == "error" and len(out[0]["throughputs"]) == 2 and out[0]["summary"] is None


def test_micro_preflight_budget_and_video_defaults() -> None:
    out = run_micro(FakeAdapter(), _media(), ["Flip"], num_runs=1, warmup=0, preflight_max_s=0.0)
    assert out[0]["status"] == "early_stopped" and out[0]["preflight_throughput"] > 0
    clips = MediaSet([np.zeros((16, 8, 8, 3), np.uint8)] * 4, "video", "clips")
    out = run_micro(FakeAdapter(), clips, ["Slow"], num_runs=2, warmup=0)  # 16 clips/s >> 0.5 clips/s
    assert out[0]["status"] == "ok" and len(out[0]["throughputs"]) == 2


def test_micro_unavailable_library_is_an_error_per_cell() -> None:
    adapter = FakeAdapter(unavailable="fake is not installed")
    out = run_micro(adapter, _media(), ["Flip", "Slow"], num_runs=1)
    assert [c["status"] for c in out] == ["error", "error"]
    assert "fake is not installed" in out[0]["reason"] and adapter.to_native_calls == 0


def test_micro_unsupported_media_type_marks_every_cell_unsupported() -> None:
    class NoNineChannels(FakeAdapter):
        def to_native(self, items: list[np.ndarray], media: str, device: str) -> list[np.ndarray]:
            raise Unsupported("fake has no 9-channel image type")

    out = run_micro(NoNineChannels(), _media(), ["Flip", "Slow"], num_runs=1)
    assert [(c["status"], c["reason"]) for c in out] == [("unsupported", "fake has no 9-channel image type")] * 2


def test_micro_materializes_every_output_inside_passes() -> None:
    """first call + preflight + warm-up and timed passes, then the rule's own cost: 3 passes over the sample."""
    adapter = FakeAdapter()
    out = run_micro(adapter, _media(n=12), ["Flip"], num_runs=2, warmup=1, preflight_items=5)
    assert adapter.materialized == 1 + 5 + 12 * (1 + 2) + 3 * 12
    assert out[0]["materialize_copied"] == 1.0  # the fake flip returns a view on every item
    assert out[0]["materialize_us"] > 0


def test_micro_records_the_materialization_cost_apart_from_the_passes() -> None:
    """A rule that costs ~2 ms per output shows as ~2000 us per item in the cell, whatever the transform; an
    output that needs no copy is counted as not copied."""
    class CostlyRule(FakeAdapter):
        def materialize(self, out: Any) -> Any:
            time.sleep(0.002)
            return out

    out = run_micro(CostlyRule(), _media(n=6), ["Flip", "Slow"], num_runs=1, warmup=0, preflight_items=1,
                    min_items_per_s=1.0)
    flip, slow = out
    assert 1900 < flip["materialize_us"] < 20000 and flip["materialize_copied"] == 1.0
    assert slow["status"] == "ok" and slow["materialize_copied"] == 0.0


def test_contiguous_copy_equals_numpy_for_every_layout() -> None:
    """The rule's fast path (OpenCV's flip for a view reversed along one axis) writes exactly what
    np.ascontiguousarray writes, for every axis of HWC, 9-channel, THWC and 2-D arrays and other dtypes; other
    layouts (crops, two reversed axes, strided) go through numpy."""
    from bench_assets.augbench.adapters.base import contiguous_copy, needs_copy

    rng = np.random.default_rng(3)
    for shape in [(37, 50, 3), (20, 31, 9), (4, 12, 16, 3), (7, 5), (1, 5, 3), (6, 4, 600)]:
        a = rng.integers(0, 255, shape, dtype=np.uint8)
        views = [np.flip(a, k) for k in range(a.ndim)] + [a[::-1, ::-1], a[1:-1, ::2], a[::-1][1:]]
        for v in views:
            c = contiguous_copy(v)
            assert c.flags.c_contiguous and c.shape == v.shape and np.array_equal(c, v)
            assert needs_copy(v) == (not v.flags.c_contiguous)
        assert contiguous_copy(a) is a and not needs_copy(a)
    for dtype in (np.float32, np.float64, np.int16, np.bool_, np.int64):
        v = rng.random((9, 11, 3)).astype(dtype)[:, ::-1]
        assert np.array_equal(contiguous_copy(v), v) and contiguous_copy(v).flags.c_contiguous


def test_cell_results_fit_the_result_file_schema() -> None:
    from bench_assets.augbench.results import CellRecord

    for c in run_micro(FakeAdapter(), _media(), ["Flip", "NotHere"], num_runs=2):
        CellRecord.model_validate(c)


# ------------------------------------------------------------------ dataloader


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_runner(workers: int) -> None:
    media = _media(n=24)
    media.items[20].flat[0] = 201  # poisoned, past the preflight items
    out = run_dataloader(FakeAdapter(), media, ["Flip", "Slow", "NotHere", "Poisoned"], batch_size=8,
                         workers=workers, num_epochs=2, preflight_items=5)
    assert [c["status"] for c in out] == ["ok", "early_stopped", "unsupported", "error"]
    ok, slow, _, poisoned = out
    CellResult.model_validate(ok)
    assert ok["mode"] == "dataloader" and len(ok["throughputs"]) == 2 and ok["summary"]["n"] == 2
    assert 0 < ok["startup_seconds"] <= ok["first_epoch_seconds"]
    assert ok["peak_rss_mb"] > 10 and ok["peak_cuda_allocated_mb"] is None
    assert 10 < ok["pss_mb"] <= ok["peak_rss_mb"] + 1
    assert slow["preflight_throughput"] <= 20 and slow["startup_seconds"] is None  # no pool was started
    assert "poisoned item" in poisoned["reason"]
    if workers:
        assert "worker" in poisoned["reason"]


def test_dataloader_workers_shut_down_between_cells() -> None:
    psutil = pytest.importorskip("psutil")
    # Children this worker had before (multiprocessing's resource tracker, started by an earlier file's spawned
    # processes, lives as long as the worker) are not the cells' workers.
    before = {p.pid for p in psutil.Process().children(recursive=True)}

    def left() -> list:  # noqa: ANN202
        return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]

    run_dataloader(FakeAdapter(), _media(n=16), ["Flip", "Flip"], batch_size=4, workers=2, num_epochs=1,
                   preflight_items=3)
    deadline = time.time() + 10
    while left() and time.time() < deadline:
        time.sleep(0.1)
    assert left() == []


def test_process_tree_memory_without_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from bench_assets.augbench.runners import dataloader as dl

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with_psutil = sorted(dl._process_tree())
        monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil -> ImportError: the /proc fallback
        assert sorted(dl._process_tree()) == with_psutil and child.pid in with_psutil
        assert dl._rss_tree_bytes() > 10 * 2**20 and dl.pss_tree_mb() > 1
    finally:
        child.kill()
        child.wait()


# ------------------------------------------------------------------ thread policy


def test_apply_thread_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    import cv2
    import torch

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, "4")  # recorded, so teardown restores whatever was there
    before_torch, before_cv = torch.get_num_threads(), cv2.getNumThreads()
    try:
        applied = apply_thread_policy(None)
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
        assert torch.get_num_threads() == 1 and applied["torch_threads"] == 1
        assert applied["opencv_threads"] == cv2.getNumThreads() <= 1
        assert applied["OMP_NUM_THREADS"] == "1" and applied["env_in_effect"] is False  # numpy loaded with 4
        from bench_assets.augbench.config import ThreadPolicy

        applied = apply_thread_policy(ThreadPolicy(omp=2, opencv=0, torch=2))
        assert applied["torch_threads"] == 2 and os.environ["MKL_NUM_THREADS"] == "2"
    finally:
        torch.set_num_threads(before_torch)
        cv2.setNumThreads(before_cv)


# ------------------------------------------------------------------ the real AlbumentationsX adapter


def test_micro_with_real_albumentationsx_adapter() -> None:
    adapters = pytest.importorskip("bench_assets.augbench.adapters")
    from bench_assets.augbench.media import embedded_items

    adapter = adapters.get_adapter("albumentationsx")
    out = run_micro(adapter, embedded_items("rgb", 12, size=64), ["HorizontalFlip"], num_runs=2, warmup=1)
    assert out[0]["status"] == "ok", out[0]["reason"]
    assert out[0]["library"] == "albumentationsx" and out[0]["summary"]["median"] > 20


def test_progress_true_uses_tqdm(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_micro(FakeAdapter(), _media(n=12), ["Flip"], num_runs=2, warmup=0, preflight_items=3, progress=True)
    assert out[0]["status"] == "ok"
    assert "fake Flip run" in capsys.readouterr().err


def test_machine_conditions_flag_busy_cells_and_moved_clocks() -> None:
    """busy: the 1-min load at the start or end of a cell above its thread budget + BUSY_MARGIN; clock_moved:
    the mean clock changed by more than CLOCK_TOLERANCE; unknown values stay None, never a guess."""
    from bench_assets.augbench.machine import BUSY_MARGIN, CLOCK_TOLERANCE, Snapshot, conditions, cpu_mhz

    idle = conditions(Snapshot(1.0, 2600.0), Snapshot(1.0 + BUSY_MARGIN, 2600.0), thread_budget=1)
    assert idle["busy"] is False and idle["clock_moved"] is False and idle["load_1m"] == 1.0 + BUSY_MARGIN
    busy = conditions(Snapshot(1.0, 2600.0), Snapshot(1.0 + BUSY_MARGIN + 0.01, 2600.0), thread_budget=1)
    assert busy["busy"] is True
    assert conditions(Snapshot(3.2, None), Snapshot(0.2, None), thread_budget=4)["busy"] is False
    moved = conditions(Snapshot(0.5, 2600.0), Snapshot(0.5, 2600.0 * (1 + CLOCK_TOLERANCE) + 1), thread_budget=1)
    assert moved["clock_moved"] is True and moved["busy"] is False
    unknown = conditions(Snapshot(None, None), Snapshot(None, None), thread_budget=1)
    assert unknown["busy"] is False and unknown["clock_moved"] is None and unknown["load_1m"] is None
    assert cpu_mhz("model name : x\ncpu MHz\t\t: 2000.000\ncpu MHz\t\t: 3000.0\n") == 2500.0
    assert cpu_mhz("no clock here\n") is None


def test_micro_cells_record_the_machine_conditions() -> None:
    out = run_micro(FakeAdapter(), _media(), ["Flip", "NotHere"], num_runs=1)
    ok = out[0]
    assert ok["status"] == "ok" and isinstance(ok["busy"], bool) and ok["load_1m"] is not None
    assert {"cpu_mhz_start", "cpu_mhz_end", "clock_moved"} <= ok.keys()
