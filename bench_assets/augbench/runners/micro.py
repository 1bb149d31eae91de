"""Micro runs: one transform at a time on single items, single-threaded, items/s per timed pass.

Per library: media converted to the library's native format once (`to_native`, outside every timer).
Per transform:

1. build (`Unsupported` -> `unsupported`; any other exception -> `error`);
2. one untimed first call on item 0 (lazy initialisation, CUDA kernel loading: not a steady-state cost);
   if that call alone exceeds `preflight_max_s` the cell is `early_stopped`;
3. preflight: the first `preflight_items` items timed; at or below `min_items_per_s`, or past
   `preflight_max_s`, the cell is `early_stopped` with that throughput and is not timed in full;
4. `warmup` untimed passes over all items, then `num_runs` timed passes:
   `t0 = perf_counter(); for x in native: materialize(fn(x)); t = perf_counter() - t0`, throughput = items / t.
   On CUDA the pass ends with `torch.cuda.synchronize()` inside the timer.
5. the materialization rule's own cost, apart from the timed passes: the outputs of the first
   `MATERIALIZE_SAMPLE` items are made, then `materialize` alone is timed over them (median of 3 passes);
   the cell records microseconds per item (`materialize_us`) and the share of outputs it had to copy
   (`materialize_copied`), so a reader sees what the harness added to each cell.

An exception at any step makes the cell `error` with the message; the next transform runs regardless.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench_assets.augbench.media import MediaSet
from bench_assets.augbench.runners.common import (
    CellResult,
    error_text,
    is_unsupported,
    library_name,
    progress_bar,
    refusal,
)
from bench_assets.augbench.stats import summarize

DEFAULT_PREFLIGHT = {"video": (3, 0.5)}  # media -> (items, min items/s); others (10, 20)
MATERIALIZE_SAMPLE = 50  # items whose outputs the materialization cost is measured on


def preflight_defaults(media: str) -> tuple[int, float]:
    return DEFAULT_PREFLIGHT.get(media, (10, 20.0))


@dataclass(frozen=True)
class PreflightRule:
    """When a cell stops before its timed passes (`early_stopped`): a first call longer than `max_s`, or a
    preflight over the first `items` items at or below `min_items_per_s`, or longer than `max_s`."""

    items: int
    min_items_per_s: float
    max_s: float

    @classmethod
    def for_media(cls, media: str, items: int | None, min_items_per_s: float | None, max_s: float) -> PreflightRule:
        """The rule with the media's defaults (`preflight_defaults`) where `items`/`min_items_per_s` are None."""
        d_items, d_rate = preflight_defaults(media)
        return cls(items if items is not None else d_items,
                   min_items_per_s if min_items_per_s is not None else d_rate, max_s)

    def first_call_stop(self, first: float) -> str | None:
        """Why an untimed first call of `first` seconds stops the cell, or None."""
        return f"first call took {first:.1f} s > {self.max_s:g} s" if first > self.max_s else None

    def preflight_stop(self, throughput: float, done: int, elapsed: float, where: str = "") -> str | None:
        """Why a preflight of `done` items in `elapsed` seconds stops the cell, or None (`where`: how it ran)."""
        if throughput <= self.min_items_per_s:
            return f"preflight {throughput:.2f} items/s <= {self.min_items_per_s:g} items/s on {done} item(s){where}"
        if elapsed > self.max_s:
            return f"preflight took {elapsed:.1f} s > {self.max_s:g} s"
        return None


def cuda_sync(device: str) -> Callable[[], None]:
    if not device.startswith("cuda"):
        return lambda: None
    import torch

    return torch.cuda.synchronize


def cuda_peaks_reset(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats()


def cuda_peaks(device: str) -> dict[str, float | None]:
    if not device.startswith("cuda"):
        return {}
    import torch

    return {"peak_cuda_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
            "peak_cuda_reserved_mb": torch.cuda.max_memory_reserved() / 2**20}


def timed_pass(fn: Callable[[Any], Any], materialize: Callable[[Any], Any], native: Sequence[Any],
               sync: Callable[[], None]) -> float:
    """Seconds for one pass; nothing but the calls and the final device sync inside the timer."""
    t0 = time.perf_counter()
    for x in native:
        materialize(fn(x))
    sync()
    return time.perf_counter() - t0


@dataclass
class _MicroRun:
    """One run_micro call: the adapter, the media in its native format and the settings every cell shares;
    `measure` makes one transform's cell."""

    adapter: Any
    library: str
    media: str
    device: str
    n_items: int
    num_runs: int
    warmup: int
    rule: PreflightRule
    progress: Any
    say: Callable[[str], None]
    # Set by run_micro once the media is in the library's format (the defaults are never used to time):
    native: list[Any] = field(default_factory=list)
    sync: Callable[[], None] = lambda: None
    materialize: Callable[[Any], Any] = lambda out: out
    before: Any = None  # machine.Snapshot at the start of the cell being measured

    def result(self, transform: str, status: str, started: float, **kw: Any) -> dict[str, Any]:
        """The cell's result dict (seconds_total since `started`, the machine's conditions since the cell's
        start snapshot), logged in one line."""
        from bench_assets.augbench import machine

        if self.before is not None:
            kw.update(machine.conditions(self.before, machine.snapshot(), thread_budget=1))
        res = CellResult(transform=transform, status=status, seconds_total=time.perf_counter() - started,
                         library=self.library, mode="micro", media=self.media, device=self.device,
                         n_items=self.n_items, **kw)
        self.say(f"{self.library} {transform}: {res.status}" + (" [machine busy]" if res.busy else "")
                 + (f" median {res.summary['median']:.1f} items/s" if res.summary else "")
                 + (f" (preflight {res.preflight_throughput:.2f} items/s)" if res.status == "early_stopped" else "")
                 + (f" - {res.reason}" if res.reason and res.status != "early_stopped" else ""))
        return res.model_dump()

    def measure(self, transform: str) -> dict[str, Any]:
        """Build, preflight and time one transform; its cell."""
        from bench_assets.augbench import machine

        started = time.perf_counter()
        self.before = machine.snapshot()
        gc.collect()
        cuda_peaks_reset(self.device)
        try:
            fn = self.adapter.build(transform, self.media, self.device)
        except Exception as exc:
            status = "unsupported" if is_unsupported(exc) else "error"
            return self.result(transform, status, started, reason=str(exc) if status == "unsupported"
                               else f"build failed: {error_text(exc)}")
        bar = progress_bar(self.progress, self.warmup + self.num_runs, f"{self.library} {transform} preflight")
        throughputs: list[float] = []
        pf: float | None = None
        try:
            pf, stop = self._preflight(fn)
            if stop:
                return self.result(transform, "early_stopped", started, preflight_throughput=pf, reason=stop)
            self._timed_passes(fn, transform, bar, throughputs)
            cost = self._materialize_cost(fn)
        except Exception as exc:
            return self.result(transform, "error", started, reason=error_text(exc), throughputs=throughputs,
                               preflight_throughput=pf, **cuda_peaks(self.device))
        finally:
            bar.close()
            fn = None  # noqa: F841 - drop the transform (and any device buffers) before the next one
        return self.result(transform, "ok", started, throughputs=throughputs, preflight_throughput=pf,
                           summary=summarize(throughputs), **cost, **cuda_peaks(self.device))

    def _materialize_cost(self, fn: Callable[[Any], Any]) -> dict[str, float]:
        """The rule's own cost on this cell: `materialize` alone over the outputs of the first
        MATERIALIZE_SAMPLE items (made beforehand, outside the timer); median of 3 passes, per item."""
        from bench_assets.augbench.adapters.base import needs_copy

        outs = [fn(x) for x in self.native[:MATERIALIZE_SAMPLE]]
        self.sync()
        copied = sum(map(needs_copy, outs)) / len(outs)
        passes = []
        for _ in range(3):
            t0 = time.perf_counter()
            for out in outs:
                self.materialize(out)
            self.sync()
            passes.append(time.perf_counter() - t0)
        passes.sort()
        return {"materialize_us": passes[1] / len(outs) * 1e6, "materialize_copied": copied}

    def _preflight(self, fn: Callable[[Any], Any]) -> tuple[float, str | None]:
        """(items/s, why the cell stops here or None): an untimed first call on item 0, then the first
        `rule.items` items one by one."""
        materialize, native, sync, max_s = self.materialize, self.native, self.sync, self.rule.max_s
        first = timed_pass(fn, materialize, native[:1], sync)
        k = min(self.rule.items, len(native))
        stop = self.rule.first_call_stop(first)
        if stop:
            return 1.0 / first, stop
        done, t0 = 0, time.perf_counter()
        for x in native[:k]:  # item by item, so a transform that hangs is stopped after one item over budget
            materialize(fn(x))
            done += 1
            if time.perf_counter() - t0 > max_s:
                break
        sync()
        elapsed = max(time.perf_counter() - t0, 1e-9)
        pf = done / elapsed
        return pf, self.rule.preflight_stop(pf, done, elapsed)

    def _timed_passes(self, fn: Callable[[Any], Any], transform: str, bar: Any, throughputs: list[float]) -> None:
        """`warmup` untimed passes, then `num_runs` timed ones; each timed pass's items/s is appended to
        `throughputs` as it ends (an error cell keeps the passes done)."""
        materialize, native, sync = self.materialize, self.native, self.sync
        for i in range(self.warmup):
            bar.set_description(f"{self.library} {transform} warmup {i + 1}/{self.warmup}")
            timed_pass(fn, materialize, native, sync)
            bar.update()
        for i in range(self.num_runs):
            bar.set_description(f"{self.library} {transform} run {i + 1}/{self.num_runs}")
            t = timed_pass(fn, materialize, native, sync)
            throughputs.append(len(native) / max(t, 1e-9))
            bar.update()


def run_micro(adapter: Any, media_set: MediaSet, transforms: Sequence[str], *, device: str = "cpu",
              num_runs: int = 5, warmup: int = 1, preflight_items: int | None = None,
              min_items_per_s: float | None = None, preflight_max_s: float = 60.0, progress: Any = None,
              log: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One dict (`CellResult`) per transform, in order. Preflight defaults: 10 items at 20 items/s; video 3 clips
    at 0.5 clips/s. `progress`: None, True (tqdm) or a tqdm-like factory; `log`: e.g. `context.log.info`.
    """
    library = library_name(adapter)
    media = media_set.media
    run = _MicroRun(adapter=adapter, library=library, media=media, device=device, n_items=len(media_set),
                    num_runs=num_runs, warmup=warmup,
                    rule=PreflightRule.for_media(media, preflight_items, min_items_per_s, preflight_max_s),
                    progress=progress, say=log or (lambda _m: None))
    t_start = time.perf_counter()
    refused = refusal(adapter, device, len(media_set))
    if refused:
        return [run.result(t, "error", t_start, reason=refused) for t in transforms]
    try:
        run.native = list(adapter.to_native(media_set.items, media, device))
        run.sync = cuda_sync(device)
        run.sync()
    except Exception as exc:
        if is_unsupported(exc):  # e.g. a library with no 9-channel or video type
            return [run.result(t, "unsupported", t_start, reason=str(exc)) for t in transforms]
        msg = f"converting the media to {library}'s format failed: {error_text(exc)}"
        return [run.result(t, "error", t_start, reason=msg) for t in transforms]
    run.materialize = adapter.materialize
    return [run.measure(t) for t in transforms]
