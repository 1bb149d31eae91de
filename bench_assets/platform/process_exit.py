"""How this project's own processes end: without the interpreter's last cyclic garbage collections.

When a process exits, CPython runs full garbage collections over every object still alive. A process that imported
torch, torchvision and LibreYOLO (a training or prediction child) holds millions of them, and those passes cost it
about a second of CPU (`benchmarks/process_exit.py`, quoted in docs/testing.md) to free memory the operating
system takes back at once anyway. `gc.freeze()` moves the live objects out of the collector's reach. Nothing else
changes: reference counting still frees what it frees, atexit handlers run (logging flushes its handlers), and a file
is closed where the code closes it. Every artifact the project writes is written atomically and closed before its
process returns, so nothing waits on a finalizer at exit.

Used by the training children's, the `bench` command's and the run pool workers' last lines.
"""

from __future__ import annotations

import gc
import sys
from typing import NoReturn


def skip_final_collections() -> None:
    """Leave the objects alive now to the operating system at exit (call it once the process's work is done)."""
    gc.freeze()


def exit_process(code: int | None) -> NoReturn:
    """`sys.exit(code)` without the interpreter's last garbage collections over what the process imported."""
    skip_final_collections()
    sys.exit(code)
