"""Runners: time one library's transforms over a MediaSet and return one `CellResult` per transform.

Pure of Dagster. They drive an adapter (`bench_assets.augbench.adapters`) through this contract:

    adapter.availability(device) -> str | None      # None: usable; else why not (not installed, no CUDA)
    adapter.to_native(items, media, device) -> list  # the library's own item format, converted once
    adapter.build(transform, media, device) -> fn    # fn(native_item) -> output; may raise Unsupported
    adapter.materialize(out) -> Any                  # forces lazy/async output (inside the timer)
    adapter.dataloader_transform(transform, media) -> picklable fn(np uint8 HWC/THWC) -> float tensor

Every cell ends in a terminal status: `ok` (all timed passes done), `early_stopped` (the preflight found it too
slow; its preflight throughput is kept, it is never `ok`), `unsupported` (the adapter raised `Unsupported`;
the reason is kept) or `error` (anything else; the message is kept, and the other transforms go on).
A library that is unavailable on this machine gives `error` cells: the static support matrix (`support.py`)
already decided what is unsupported, so a missing install or device is a fault to fix, not a table gap.

Thread policy: micro runs are single-threaded. The caller (the asset or CLI process) calls
`apply_thread_policy` before building anything and stores what it returns with the results.
"""

from bench_assets.augbench.runners.common import CellResult, Status, apply_thread_policy
from bench_assets.augbench.runners.dataloader import run_dataloader
from bench_assets.augbench.runners.micro import run_micro

__all__ = ["CellResult", "Status", "apply_thread_policy", "run_dataloader", "run_micro"]
