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
from dataclasses import dataclass, field
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
from bench_assets.augbench.runners.micro import PreflightRule, cuda_peaks, cuda_peaks_reset, cuda_sync
from bench_assets.augbench.stats import summarize
from bench_assets.platform.fsutil import proc_stat_fields


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
                        ppid = int(proc_stat_fields(fh.read())[1])
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


@dataclass
class _LoaderTimes:
    """What a DataLoader cell has measured so far (an error cell reports it as far as it got)."""

    startup: float | None = None  # iterator creation (worker start) to the first batch of the warm-up epoch
    first_epoch: float | None = None  # the whole warm-up epoch
    pss_mb: float | None = None  # after the warm-up epoch, workers alive
    throughputs: list[float] = field(default_factory=list)  # items/s of each timed epoch


@dataclass
class _LoaderRun:
    """One run_dataloader call: the adapter, the items and the settings every cell shares; `measure` makes
    one transform's cell."""

    adapter: Any
    library: str
    media: str
    items: Sequence[Any]
    device: str
    batch_size: int
    workers: int
    num_epochs: int
    rule: PreflightRule
    worker_policy: Any
    batch_timeout_s: float
    progress: Any
    say: Callable[[str], None]
    sync: Callable[[], None] = lambda: None  # set by run_dataloader once the call is not refused

    def result(self, transform: str, status: str, started: float, **kw: Any) -> dict[str, Any]:
        """The cell's result dict (seconds_total since `started`), logged in one line."""
        res = CellResult(transform=transform, status=status, seconds_total=time.perf_counter() - started,
                         library=self.library, mode="dataloader", media=self.media, device=self.device,
                         n_items=len(self.items), **kw)
        self.say(f"{self.library} {transform} (dataloader, {self.workers} workers): {res.status}"
                 + (f" median {res.summary['median']:.1f} items/s, start-up {res.startup_seconds:.2f} s"
                    if res.summary else "")
                 + (f" - {res.reason}" if res.reason else ""))
        return res.model_dump()

    def measure(self, transform: str) -> dict[str, Any]:
        """One transform's cell: build the pipeline, preflight it in this process, then time the epochs."""
        started = time.perf_counter()
        gc.collect()
        try:
            tf = self.adapter.dataloader_transform(transform, self.media)
        except Exception as exc:
            status = "unsupported" if is_unsupported(exc) else "error"
            return self.result(transform, status, started, reason=str(exc) if status == "unsupported"
                               else f"building the pipeline failed: {error_text(exc)}")
        try:
            pf, stop = self._preflight(tf)
        except Exception as exc:
            return self.result(transform, "error", started, reason=f"preflight: {error_text(exc)}")
        if stop:
            return self.result(transform, "early_stopped", started, preflight_throughput=pf, reason=stop)
        return self._time_epochs(transform, tf, pf, started)

    def _preflight(self, tf: Callable[[Any], Any]) -> tuple[float, str | None]:
        """(items/s, why the cell stops here or None) in this process: an untimed first call on item 0, then
        the first `rule.items` items one by one. No worker pool is started for a cell that stops here."""
        items, max_s = self.items, self.rule.max_s
        t0 = time.perf_counter()
        tf(items[0])  # untimed first call (lazy initialisation)
        first = time.perf_counter() - t0
        stop = self.rule.first_call_stop(first)
        if stop:
            return 1.0 / first, stop
        done, t0 = 0, time.perf_counter()
        for x in items[:self.rule.items]:
            tf(x)
            done += 1
            if time.perf_counter() - t0 > max_s:
                break
        elapsed = max(time.perf_counter() - t0, 1e-9)
        pf = done / elapsed
        return pf, self.rule.preflight_stop(pf, done, elapsed, " in one process")

    def _loader(self, tf: Callable[[Any], Any]) -> Any:
        """A DataLoader over the items through `tf`: persistent workers running the thread policy (when
        workers > 0), pinned memory on CUDA, `batch_timeout_s` to wait for a worker's batch."""
        from torch.utils.data import DataLoader

        workers, on_cuda = self.workers, self.device.startswith("cuda")
        return DataLoader(ItemDataset(self.items, tf), batch_size=self.batch_size, shuffle=False, drop_last=False,
                          num_workers=workers, persistent_workers=workers > 0, pin_memory=on_cuda,
                          worker_init_fn=WorkerInit(self.worker_policy) if workers > 0 else None,
                          timeout=self.batch_timeout_s if workers > 0 else 0)

    def _time_epochs(self, transform: str, tf: Callable[[Any], Any], pf: float, started: float) -> dict[str, Any]:
        """The warm-up epoch and the timed epochs, under the RSS sampler; the cell (ok, or error with what was
        measured). The workers are shut down either way."""
        loader = self._loader(tf)
        bar = progress_bar(self.progress, 1 + self.num_epochs, f"{self.library} {transform} start-up")
        times = _LoaderTimes()
        cuda_peaks_reset(self.device)
        rss = PeakRss()
        try:
            with rss:
                self._warmup_epoch(loader, times)
                bar.update()
                times.pss_mb = pss_tree_mb()  # workers alive and warm (persistent), outside every timer
                self._timed_epochs(loader, transform, bar, times)
        except Exception as exc:
            return self.result(transform, "error", started, reason=error_text(exc), throughputs=times.throughputs,
                               preflight_throughput=pf, startup_seconds=times.startup,
                               first_epoch_seconds=times.first_epoch, peak_rss_mb=rss.peak_mb, pss_mb=times.pss_mb,
                               **cuda_peaks(self.device))
        finally:
            bar.close()
            _shutdown(loader)
            del loader
        return self.result(transform, "ok", started, throughputs=times.throughputs, preflight_throughput=pf,
                           summary=summarize(times.throughputs), startup_seconds=times.startup,
                           first_epoch_seconds=times.first_epoch, peak_rss_mb=rss.peak_mb, pss_mb=times.pss_mb,
                           **cuda_peaks(self.device))

    def _warmup_epoch(self, loader: Any, times: _LoaderTimes) -> None:
        """Epoch 1, not in the throughputs: start-up (worker start to the first batch) and the whole epoch."""
        device, sync = self.device, self.sync
        t0 = time.perf_counter()
        it = iter(loader)
        batch = next(it)
        times.startup = time.perf_counter() - t0
        _consume(batch, device)
        for batch in it:
            _consume(batch, device)
        sync()
        times.first_epoch = time.perf_counter() - t0

    def _timed_epochs(self, loader: Any, transform: str, bar: Any, times: _LoaderTimes) -> None:
        """`num_epochs` timed epochs over the warm workers; each epoch's items/s is appended as it ends."""
        device, sync, items = self.device, self.sync, self.items
        for e in range(self.num_epochs):
            bar.set_description(f"{self.library} {transform} run {e + 1}/{self.num_epochs}")
            t0 = time.perf_counter()
            for batch in loader:
                _consume(batch, device)
            sync()
            times.throughputs.append(len(items) / max(time.perf_counter() - t0, 1e-9))
            bar.update()


def run_dataloader(adapter: Any, media_set: MediaSet, transforms: Sequence[str], *, batch_size: int,
                   workers: int, num_epochs: int, device: str = "cpu", preflight_items: int | None = None,
                   min_items_per_s: float | None = None, preflight_max_s: float = 60.0, worker_policy: Any = None,
                   batch_timeout_s: float = 0.0, progress: Any = None,
                   log: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One dict (`CellResult`, mode "dataloader") per transform. `num_epochs` timed epochs after one warm-up
    epoch; `workers=0` loads in this process; `batch_timeout_s` > 0 fails a cell whose workers stall."""
    import torch.utils.data  # noqa: F401 - without torch there is no DataLoader: fail before any cell

    media = media_set.media
    run = _LoaderRun(adapter=adapter, library=library_name(adapter), media=media, items=media_set.items,
                     device=device, batch_size=batch_size, workers=workers, num_epochs=num_epochs,
                     rule=PreflightRule.for_media(media, preflight_items, min_items_per_s, preflight_max_s),
                     worker_policy=worker_policy, batch_timeout_s=batch_timeout_s, progress=progress,
                     say=log or (lambda _m: None))
    t_start = time.perf_counter()
    refused = refusal(adapter, device, len(run.items))
    if refused:
        return [run.result(t, "error", t_start, reason=refused) for t in transforms]
    run.sync = cuda_sync(device)
    return [run.measure(t) for t in transforms]
