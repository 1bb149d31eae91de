"""What every runner shares: the cell result model, status and error texts, the progress bar and the thread
policy (see the package docstring for the adapter contract)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["ok", "early_stopped", "unsupported", "error"]
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class CellResult(BaseModel):
    """One (transform, library) cell of a micro or DataLoader row; the shape result files store."""

    model_config = ConfigDict(extra="forbid")

    transform: str
    library: str
    status: Status
    reason: str | None = None  # unsupported: why; error: the message; early_stopped: the rule that stopped it
    throughputs: list[float] = Field(default_factory=list)  # items/s of each timed pass (or steady-state epoch)
    preflight_throughput: float | None = None
    summary: dict[str, Any] | None = None  # stats.summarize(throughputs) when status is ok
    seconds_total: float = 0.0  # wall time spent on the cell, build and preflight included
    mode: Literal["micro", "dataloader"] = "micro"
    media: str = ""
    device: str = "cpu"
    n_items: int = 0
    startup_seconds: float | None = None  # dataloader: iterator creation to first batch of the first epoch
    first_epoch_seconds: float | None = None  # dataloader: the whole first (warm-up, untimed) epoch
    peak_rss_mb: float | None = None  # dataloader: peak RSS of the process plus its workers (upper bound)
    pss_mb: float | None = None  # dataloader: PSS of the process plus its workers after the warm-up epoch
    peak_cuda_allocated_mb: float | None = None
    peak_cuda_reserved_mb: float | None = None
    # micro: what the materialization rule itself cost on this cell's outputs (measured apart from the timed
    # passes, on up to MATERIALIZE_SAMPLE items): microseconds per item, and the share of outputs it copied
    materialize_us: float | None = None
    materialize_copied: float | None = None
    # the machine during the cell (augbench.machine.conditions): highest 1-min load average at its start/end,
    # busy (load above the thread budget), the mean CPU clock at both ends and whether it moved
    load_1m: float | None = None
    busy: bool | None = None
    cpu_mhz_start: float | None = None
    cpu_mhz_end: float | None = None
    clock_moved: bool | None = None

    @property
    def supported(self) -> bool:
        return self.status != "unsupported"


def library_name(adapter: Any) -> str:
    for attr in ("name", "library"):
        value = getattr(adapter, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(adapter).__name__


def is_unsupported(exc: BaseException) -> bool:
    """The adapters' `Unsupported` (imported lazily: adapters are optional to the runners and their tests)."""
    try:
        from bench_assets.augbench.adapters.base import Unsupported
    except ImportError:
        return type(exc).__name__ == "Unsupported"
    return isinstance(exc, Unsupported) or type(exc).__name__ == "Unsupported"


def error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 2000 else text[:2000] + " ..."


def refusal(adapter: Any, device: str, n_items: int) -> str | None:
    """Why no cell of this runner call can be measured (empty media, library or device unavailable); the
    runners record it as `error` on every cell, never as a silent drop."""
    if not n_items:
        return "the media set is empty"
    try:
        why = adapter.availability(device)
    except Exception as exc:  # noqa: BLE001 - a broken availability probe is itself the reason
        why = f"availability check failed: {error_text(exc)}"
    return f"{library_name(adapter)} unavailable on {device}: {why}" if why else None


class _NoBar:
    def update(self, n: int = 1) -> None: ...
    def set_description(self, desc: str, refresh: bool = True) -> None: ...
    def close(self) -> None: ...


def progress_bar(progress: Any, total: int, desc: str) -> Any:
    """A tqdm-like bar, or a no-op: `progress` is None/False (none), True (tqdm) or a tqdm-like factory.

    Bars advance between passes, never inside a timed loop.
    """
    if not progress:
        return _NoBar()
    if progress is True:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, leave=False)
    return progress(total=total, desc=desc, leave=False)


def apply_thread_policy(policy: Any = None) -> dict[str, Any]:
    """Pin the thread pools; return what was set, for the result file.

    `policy` is `config.ThreadPolicy`, a dict with the same keys (omp, opencv, torch) or None (1, 0, 1).
    OMP/MKL/OPENBLAS_NUM_THREADS only bind libraries loaded after they are set (and child processes), so the
    entry point should call this (or set the variables) before numpy loads; `env_in_effect` records whether that held.
    OpenCV (0 = no worker pool) and torch are set at run time and take effect immediately.
    """
    if policy is None:
        policy = {}
    get: Callable[[str, int], int] = (policy.get if isinstance(policy, dict)
                                      else lambda k, d: getattr(policy, k, d))
    omp, opencv, torch_threads = int(get("omp", 1)), int(get("opencv", 0)), int(get("torch", 1))
    # The env vars bind BLAS/OpenMP pools only if they held these values before numpy loaded: either numpy is not
    # loaded yet, or they were already set (by the launcher or the entry point's first lines).
    applied: dict[str, Any] = {"env_in_effect": "numpy" not in sys.modules
                               or all(os.environ.get(v) == str(omp) for v in THREAD_ENV)}
    for var in THREAD_ENV:
        os.environ[var] = str(omp)
        applied[var] = str(omp)
    try:
        import cv2

        cv2.setNumThreads(opencv)
        applied["opencv_threads"] = cv2.getNumThreads()
    except ImportError:
        applied["opencv_threads"] = None
    try:
        import torch

        torch.set_num_threads(torch_threads)
        applied["torch_threads"] = torch.get_num_threads()
        applied["torch_interop_threads"] = torch.get_num_interop_threads()
    except ImportError:
        applied["torch_threads"] = None
    return applied
