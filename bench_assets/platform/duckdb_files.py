"""DuckDB files opened for one read or one write, through one DuckDB engine per process.

`duckdb.connect(path)` builds a whole database instance (its catalog of built-in functions and types) for every
call, which costs far more CPU than any query the warehouse checks or the report pages run. `attached(path)`
instead ATTACHes the file to an in-memory engine made once per process, runs the caller's statements with the file
as the current database, and DETACHes it. `benchmarks/duckdb_reads.py` times both ways in the same run (its
figures are in docs/report.md).

What a reader sees is what a fresh connection saw:
- each call ATTACHes the path again, so a file replaced whole since the last read (the warehouse loader's rename)
  is read anew, never a cached copy of the old one;
- read-only unless asked: a reader never takes a writer's lock;
- a file DuckDB cannot read is refused naming it, and no DuckDB extension is ever downloaded for it;
- unqualified names and `main.<table>` resolve in the file (it is the current database), and
  `current_database()` names it.

Threads read at once, each through a cursor of its own (a connection to the engine); only the ATTACH and DETACH
go one at a time, through the engine's own connection, which refuses a second caller while busy. The engine runs
single-threaded (no thread of its own to lose in a fork); a forked child makes its own engine and never touches
the one it inherited.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class _Engine:
    """This process's in-memory DuckDB, the lock of its own connection and its next alias number."""

    def __init__(self) -> None:
        import duckdb

        # Never fetch an extension: a SQLite file (say) would otherwise start a download of DuckDB's sqlite reader.
        self.con = duckdb.connect(":memory:", config={"threads": 1, "autoinstall_known_extensions": False,
                                                      "autoload_known_extensions": False})
        self.lock = threading.Lock()
        self.aliases = itertools.count()


_engine: _Engine | None = None
_setup = threading.Lock()
_inherited: list[_Engine] = []  # a forked child's copy of its parent's engine: kept, never used, never closed


def _forget_after_fork() -> None:
    global _engine, _setup
    if _engine is not None:
        _inherited.append(_engine)  # closing it could wait on state a thread of the parent held at the fork
    _engine = None
    _setup = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def engine() -> _Engine:
    global _engine
    with _setup:
        if _engine is None:
            _engine = _Engine()
        return _engine


def sql_string(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


@contextmanager
def attached(path: Path | str, *, read_only: bool = True) -> Iterator[Any]:
    """A DuckDB cursor whose current database is the file at `path`, detached (and so closed) on exit. A missing
    file is an error when `read_only` (DuckDB would otherwise create it)."""
    path = Path(path)
    if read_only and not path.is_file():
        raise FileNotFoundError(f"{path}: no such DuckDB file")
    eng = engine()
    alias = f"file_{next(eng.aliases)}"
    with eng.lock:  # the engine's own connection serves one call at a time
        cur = eng.con.cursor()  # a connection of its own: USE changes only its current database
        try:
            eng.con.execute(f"ATTACH {sql_string(str(path))} AS {alias}{' (READ_ONLY)' if read_only else ''}")
        except BaseException as exc:
            cur.close()
            if str(path) in str(exc) or not isinstance(exc, Exception):
                raise
            raise type(exc)(f"{path}: not readable as a DuckDB file: {exc}") from exc
    try:
        try:
            cur.execute(f"USE {alias}")
            yield cur
        finally:
            cur.close()
    finally:
        with eng.lock:
            eng.con.execute(f"DETACH {alias}")  # closes the file
