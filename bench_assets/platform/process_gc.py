"""The cyclic garbage collector at the two ends of this project's own processes: while they import their heavy
libraries, and when they exit.

CPython runs a full collection each time the objects that survived earlier ones grow by a quarter, and importing
torch, torchvision and LibreYOLO grows them from nothing to millions: a training child spent about half a second of
CPU in collections during those imports, which free nothing (modules, classes and functions stay alive for the
life of the process). At exit CPython runs full collections over every object still alive, about a second more, to
free memory the operating system takes back at once anyway. `benchmarks/process_gc.py` measures both (quoted in
docs/testing.md).

- `collections_paused()`: a block (a process's imports, a code location's loading) run with the collector paused,
  after which everything alive moves into the permanent generation (`gc.freeze()`), so the collections that follow
  no longer walk the libraries' objects; `load_without_collections(modules)` imports modules in such a block.
- `skip_final_collections()`: `gc.freeze()` as the process ends (an atexit handler: it runs once threading has
  joined the process's threads, and before the last collections); `exit_process(code)` is `sys.exit(code)` with it.

Nothing else changes: reference counting frees what it frees, atexit handlers run (logging flushes its handlers),
and a file is closed where the code closes it. Every artifact the project writes is written atomically and closed
before its process returns, so nothing waits on a finalizer at exit. Both are for a process's own entry point (the
training children, `bench score`, the run pool's workers), never for a function a long-lived process calls.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import NoReturn


@contextmanager
def collections_paused() -> Iterator[None]:
    """The block runs with the collector paused; then what is alive is frozen and the collector's state restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def load_without_collections(modules: Iterable[str]) -> None:
    """Import `modules` in a `collections_paused` block."""
    with collections_paused():
        for name in modules:
            importlib.import_module(name)


def skip_final_collections() -> None:
    """Freeze what is alive once the process is ending: after threading's wait for its threads (a thread that some
    object's collection would stop keeps that chance), before the interpreter's last collections."""
    atexit.register(gc.freeze)


def exit_process(code: int | None) -> NoReturn:
    """`sys.exit(code)`, ending without the interpreter's last garbage collections over what the process imported."""
    skip_final_collections()
    sys.exit(code)
