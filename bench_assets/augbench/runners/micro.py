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

An exception at any step makes the cell `error` with the message; the next transform runs regardless.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
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


def preflight_defaults(media: str) -> tuple[int, float]:
    return DEFAULT_PREFLIGHT.get(media, (10, 20.0))


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


def run_micro(adapter: Any, media_set: MediaSet, transforms: Sequence[str], *, device: str = "cpu",
              num_runs: int = 5, warmup: int = 1, preflight_items: int | None = None,
              min_items_per_s: float | None = None, preflight_max_s: float = 60.0, progress: Any = None,
              log: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One dict (`CellResult`) per transform, in order. Preflight defaults: 10 items at 20 items/s; video 3 clips
    at 0.5 clips/s. `progress`: None, True (tqdm) or a tqdm-like factory; `log`: e.g. `context.log.info`.
    """
    library = library_name(adapter)
    media = media_set.media
    d_items, d_rate = preflight_defaults(media)
    pf_items = preflight_items if preflight_items is not None else d_items
    pf_rate = min_items_per_s if min_items_per_s is not None else d_rate
    say = log or (lambda _m: None)
    base = {"library": library, "mode": "micro", "media": media, "device": device, "n_items": len(media_set)}

    def cell(transform: str, status: str, started: float, **kw: Any) -> dict[str, Any]:
        res = CellResult(transform=transform, status=status, seconds_total=time.perf_counter() - started,
                         **base, **kw)
        say(f"{library} {transform}: {res.status}"
            + (f" median {res.summary['median']:.1f} items/s" if res.summary else "")
            + (f" (preflight {res.preflight_throughput:.2f} items/s)" if res.status == "early_stopped" else "")
            + (f" - {res.reason}" if res.reason and res.status != "early_stopped" else ""))
        return res.model_dump()

    t_start = time.perf_counter()
    refused = refusal(adapter, device, len(media_set))
    if refused:
        return [cell(t, "error", t_start, reason=refused) for t in transforms]
    try:
        native = list(adapter.to_native(media_set.items, media, device))
        sync = cuda_sync(device)
        sync()
    except Exception as exc:
        if is_unsupported(exc):  # e.g. a library with no 9-channel or video type
            return [cell(t, "unsupported", t_start, reason=str(exc)) for t in transforms]
        msg = f"converting the media to {library}'s format failed: {error_text(exc)}"
        return [cell(t, "error", t_start, reason=msg) for t in transforms]
    materialize = adapter.materialize

    results = []
    for transform in transforms:
        started = time.perf_counter()
        gc.collect()
        cuda_peaks_reset(device)
        try:
            fn = adapter.build(transform, media, device)
        except Exception as exc:
            status = "unsupported" if is_unsupported(exc) else "error"
            results.append(cell(transform, status, started, reason=str(exc) if status == "unsupported"
                                else f"build failed: {error_text(exc)}"))
            continue
        bar = progress_bar(progress, warmup + num_runs, f"{library} {transform} preflight")
        throughputs: list[float] = []
        pf: float | None = None
        try:
            first = timed_pass(fn, materialize, native[:1], sync)
            k = min(pf_items, len(native))
            if first > preflight_max_s:
                results.append(cell(transform, "early_stopped", started, preflight_throughput=1.0 / first,
                                    reason=f"first call took {first:.1f} s > {preflight_max_s:g} s"))
                continue
            done, t0 = 0, time.perf_counter()
            for x in native[:k]:  # item by item, so a transform that hangs is stopped after one item over budget
                materialize(fn(x))
                done += 1
                if time.perf_counter() - t0 > preflight_max_s:
                    break
            sync()
            elapsed = max(time.perf_counter() - t0, 1e-9)
            pf = done / elapsed
            if pf <= pf_rate or elapsed > preflight_max_s:
                rule = (f"preflight {pf:.2f} items/s <= {pf_rate:g} items/s on {done} item(s)" if pf <= pf_rate
                        else f"preflight took {elapsed:.1f} s > {preflight_max_s:g} s")
                results.append(cell(transform, "early_stopped", started, preflight_throughput=pf, reason=rule))
                continue
            for i in range(warmup):
                bar.set_description(f"{library} {transform} warmup {i + 1}/{warmup}")
                timed_pass(fn, materialize, native, sync)
                bar.update()
            for i in range(num_runs):
                bar.set_description(f"{library} {transform} run {i + 1}/{num_runs}")
                t = timed_pass(fn, materialize, native, sync)
                throughputs.append(len(native) / max(t, 1e-9))
                bar.update()
        except Exception as exc:
            results.append(cell(transform, "error", started, reason=error_text(exc), throughputs=throughputs,
                                preflight_throughput=pf, **cuda_peaks(device)))
            continue
        finally:
            bar.close()
            fn = None  # noqa: F841 - drop the transform (and any device buffers) before the next one
        results.append(cell(transform, "ok", started, throughputs=throughputs, preflight_throughput=pf,
                            summary=summarize(throughputs), **cuda_peaks(device)))
    return results
