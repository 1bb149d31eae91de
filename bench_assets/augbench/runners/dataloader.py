"""DataLoader runs: a torch DataLoader over the uint8 items, each worker applying the library's pipeline.

Timing (epoch-based; items/s = items / epoch seconds):

- epoch 1 is the warm-up and is not in `throughputs`: `startup_seconds` is iterator creation (worker processes
  start) to the first batch, `first_epoch_seconds` the whole epoch. Counting worker start-up in a timed epoch is
  the trap that made 0 workers beat 2 on 100 items.
- epochs 2 .. num_epochs + 1 are timed; with workers > 0 `persistent_workers=True`, so they reuse the warm
  workers and measure steady state (each epoch still pays its pipeline refill, as real training does).
- on CUDA each batch is copied to the device (pinned memory, non-blocking) and the epoch ends with a sync, all
  inside the timer; the transform itself runs in the workers on CPU.

Before any worker starts, the pipeline is preflighted in this process on the first items (same rule and
defaults as micro runs), so a transform too slow to time, unsupported or broken never spawns a pool.
`peak_rss_mb` is sampled every 50 ms (a daemon thread reading /proc/<pid>/status) as the RSS of this process plus
all its children (workers): shared pages (torch's libraries, copy-on-write items) count once per process, so it
is an upper bound. `pss_mb` (proportional set size, shared pages split) is read once after the warm-up epoch
with the workers alive: the figure that adds up to real memory. Workers run single-threaded
(`apply_thread_policy`).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench_assets.augbench.media import MediaSet
from bench_assets.augbench.runners.common import (
    CellResult,
    apply_thread_policy,
    error_text,
    is_unsupported,
    library_name,
    progress_bar,
    refusal,
)
from bench_assets.augbench.runners.micro import cuda_peaks, cuda_peaks_reset, cuda_sync, preflight_defaults
from bench_assets.augbench.stats import summarize


class ItemDataset:
    """Map-style dataset (DataLoader needs only __len__/__getitem__): item i through the pipeline."""

    def __init__(self, items: Sequence[Any], transform: Callable[[Any], Any]) -> None:
        self.items = items
        self.transform = transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.transform(self.items[i])


class WorkerInit:
    """Picklable worker_init_fn: the thread policy in every worker."""

    def __init__(self, policy: Any = None) -> None:
        self.policy = policy

    def __call__(self, _worker_id: int) -> None:
        apply_thread_policy(self.policy)


def _process_tree() -> list[int]:
    """This process and all its descendants (DataLoader workers, pin-memory helpers)."""
    try:
        import psutil
    except ImportError:
        parents: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                parents.setdefault(ppid, []).append(int(entry))
        pids, todo = [], [os.getpid()]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            todo += parents.get(pid, [])
        return pids
    me = psutil.Process()
    return [me.pid, *(c.pid for c in me.children(recursive=True))]


def _proc_kb(pid: int, file: str, key: str) -> int:
    try:
        with open(f"/proc/{pid}/{file}") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):  # a worker that just exited
        pass
    return 0


def _rss_tree_bytes() -> int:
    """Sum of RSS (cheap: /proc/<pid>/status) over the tree; shared pages count once per process."""
    return 1024 * sum(_proc_kb(pid, "status", "VmRSS:") for pid in _process_tree())


def pss_tree_mb() -> float | None:
    """Sum of PSS over the tree: shared pages split between their users, so it adds up to real memory use.

    Reading smaps_rollup costs ~10 ms per process with torch loaded, so it is sampled once, outside the timers.
    """
    if not os.path.exists("/proc/self/smaps_rollup"):
        return None
    return sum(_proc_kb(pid, "smaps_rollup", "Pss:") for pid in _process_tree()) / 1024


class PeakRss:
    """Background sampler of the process tree's RSS (a daemon thread; it only holds the GIL to sample)."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="augbench-rss", daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_tree_bytes())
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_tree_bytes())

    @property
    def peak_mb(self) -> float:
        return self.peak / 2**20


def _consume(batch: Any, device: str) -> None:
    if device.startswith("cuda"):
        if isinstance(batch, (list, tuple)):
            for b in batch:
                _consume(b, device)
        elif hasattr(batch, "to"):
            batch.to(device, non_blocking=True)


def _shutdown(loader: Any) -> None:
    it = getattr(loader, "_iterator", None)  # persistent workers live here until shut down
    if it is not None and hasattr(it, "_shutdown_workers"):
        it._shutdown_workers()


def run_dataloader(adapter: Any, media_set: MediaSet, transforms: Sequence[str], *, batch_size: int,
                   workers: int, num_epochs: int, device: str = "cpu", preflight_items: int | None = None,
                   min_items_per_s: float | None = None, preflight_max_s: float = 60.0, worker_policy: Any = None,
                   batch_timeout_s: float = 0.0, progress: Any = None,
                   log: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One dict (`CellResult`, mode "dataloader") per transform. `num_epochs` timed epochs after one warm-up
    epoch; `workers=0` loads in this process; `batch_timeout_s` > 0 fails a cell whose workers stall."""
    from torch.utils.data import DataLoader

    library = library_name(adapter)
    media = media_set.media
    d_items, d_rate = preflight_defaults(media)
    pf_items = preflight_items if preflight_items is not None else d_items
    pf_rate = min_items_per_s if min_items_per_s is not None else d_rate
    say = log or (lambda _m: None)
    items = media_set.items
    base = {"library": library, "mode": "dataloader", "media": media, "device": device, "n_items": len(items)}

    def cell(transform: str, status: str, started: float, **kw: Any) -> dict[str, Any]:
        res = CellResult(transform=transform, status=status, seconds_total=time.perf_counter() - started,
                         **base, **kw)
        say(f"{library} {transform} (dataloader, {workers} workers): {res.status}"
            + (f" median {res.summary['median']:.1f} items/s, start-up {res.startup_seconds:.2f} s"
               if res.summary else "")
            + (f" - {res.reason}" if res.reason else ""))
        return res.model_dump()

    t_start = time.perf_counter()
    refused = refusal(adapter, device, len(items))
    if refused:
        return [cell(t, "error", t_start, reason=refused) for t in transforms]
    sync = cuda_sync(device)
    on_cuda = device.startswith("cuda")

    results = []
    for transform in transforms:
        started = time.perf_counter()
        gc.collect()
        try:
            tf = adapter.dataloader_transform(transform, media)
        except Exception as exc:
            status = "unsupported" if is_unsupported(exc) else "error"
            results.append(cell(transform, status, started, reason=str(exc) if status == "unsupported"
                                else f"building the pipeline failed: {error_text(exc)}"))
            continue
        pf: float | None = None
        try:
            t0 = time.perf_counter()
            tf(items[0])  # untimed first call (lazy initialisation)
            first = time.perf_counter() - t0
            if first > preflight_max_s:
                results.append(cell(transform, "early_stopped", started, preflight_throughput=1.0 / first,
                                    reason=f"first call took {first:.1f} s > {preflight_max_s:g} s"))
                continue
            done, t0 = 0, time.perf_counter()
            for x in items[:pf_items]:
                tf(x)
                done += 1
                if time.perf_counter() - t0 > preflight_max_s:
                    break
            elapsed = max(time.perf_counter() - t0, 1e-9)
            pf = done / elapsed
        except Exception as exc:
            results.append(cell(transform, "error", started, reason=f"preflight: {error_text(exc)}"))
            continue
        if pf <= pf_rate or elapsed > preflight_max_s:
            rule = (f"preflight {pf:.2f} items/s <= {pf_rate:g} items/s on {done} item(s) in one process"
                    if pf <= pf_rate else f"preflight took {elapsed:.1f} s > {preflight_max_s:g} s")
            results.append(cell(transform, "early_stopped", started, preflight_throughput=pf, reason=rule))
            continue

        loader = DataLoader(ItemDataset(items, tf), batch_size=batch_size, shuffle=False, drop_last=False,
                            num_workers=workers, persistent_workers=workers > 0, pin_memory=on_cuda,
                            worker_init_fn=WorkerInit(worker_policy) if workers > 0 else None,
                            timeout=batch_timeout_s if workers > 0 else 0)
        bar = progress_bar(progress, 1 + num_epochs, f"{library} {transform} start-up")
        throughputs: list[float] = []
        startup = first_epoch = pss = None
        cuda_peaks_reset(device)
        rss = PeakRss()
        try:
            with rss:
                t0 = time.perf_counter()
                it = iter(loader)
                batch = next(it)
                startup = time.perf_counter() - t0
                _consume(batch, device)
                for batch in it:
                    _consume(batch, device)
                sync()
                first_epoch = time.perf_counter() - t0
                bar.update()
                del it, batch
                pss = pss_tree_mb()  # workers alive and warm (persistent), outside every timer
                for e in range(num_epochs):
                    bar.set_description(f"{library} {transform} run {e + 1}/{num_epochs}")
                    t0 = time.perf_counter()
                    for batch in loader:
                        _consume(batch, device)
                    sync()
                    throughputs.append(len(items) / max(time.perf_counter() - t0, 1e-9))
                    bar.update()
        except Exception as exc:
            results.append(cell(transform, "error", started, reason=error_text(exc), throughputs=throughputs,
                                preflight_throughput=pf, startup_seconds=startup, first_epoch_seconds=first_epoch,
                                peak_rss_mb=rss.peak_mb, pss_mb=pss, **cuda_peaks(device)))
            continue
        finally:
            bar.close()
            _shutdown(loader)
            del loader
        results.append(cell(transform, "ok", started, throughputs=throughputs, preflight_throughput=pf,
                            summary=summarize(throughputs), startup_seconds=startup, first_epoch_seconds=first_epoch,
                            peak_rss_mb=rss.peak_mb, pss_mb=pss, **cuda_peaks(device)))
    return results
