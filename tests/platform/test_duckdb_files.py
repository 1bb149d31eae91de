"""DuckDB files read through the process's one engine (bench_assets/platform/duckdb_files.py) read as a fresh
connection read them: a replaced file anew, read-only unless asked, closed after each read, in threads and in a
forked child."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import duckdb
import pytest

from bench_assets.platform.duckdb_files import attached, engine
from bench_assets.platform.warehouse import query


def _write(path: Path, value: int) -> None:
    with attached(path, read_only=False) as con:
        con.execute("CREATE TABLE t AS SELECT ? AS v", [value])
        con.execute("CHECKPOINT")


def _attached_names() -> set[str]:
    rows = engine().con.execute("SELECT database_name FROM duckdb_databases() WHERE NOT internal").fetchall()
    return {r[0] for r in rows} - {"memory"}


def test_a_file_replaced_whole_is_read_anew(tmp_path: Path) -> None:
    wh = tmp_path / "warehouse.duckdb"
    _write(wh, 1)
    assert query(wh, "SELECT v FROM t") == [{"v": 1}]
    _write(tmp_path / "next.duckdb", 2)
    os.replace(tmp_path / "next.duckdb", wh)  # the loader's rename
    assert query(wh, "SELECT v FROM main.t") == [{"v": 2}]


def test_reads_are_read_only_and_leave_the_file_closed(tmp_path: Path) -> None:
    wh = tmp_path / "warehouse.duckdb"
    _write(wh, 1)
    with pytest.raises(duckdb.Error, match="read-only"):
        query(wh, "INSERT INTO t VALUES (3)")
    with pytest.raises(duckdb.CatalogException, match="nope"):
        query(wh, "SELECT * FROM nope")
    assert _attached_names() == set()  # detached after a failed read too
    con = duckdb.connect(str(wh))  # so another instance may write it (DuckDB locks a file per instance)
    con.execute("INSERT INTO t VALUES (4)")
    con.close()
    assert query(wh, "SELECT sum(v) AS s FROM t") == [{"s": 5}]


def test_the_file_is_the_current_database(tmp_path: Path) -> None:
    wh = tmp_path / "it's here.duckdb"  # a quote in the path
    _write(wh, 7)
    with attached(wh) as con:
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_catalog = current_database()"
                           ).fetchone() == (1,)


def test_a_missing_file_is_refused_and_not_created(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such DuckDB file"), attached(tmp_path / "none.duckdb"):
        pass
    assert not (tmp_path / "none.duckdb").exists()


def test_a_file_that_is_not_duckdb_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "warehouse.duckdb"
    bad.write_text("not a database")
    with pytest.raises(duckdb.IOException, match=f"{bad}.*not a valid DuckDB database file"):
        query(bad, "SELECT 1")
    assert _attached_names() == set()


def test_a_sqlite_file_is_refused_naming_it_without_fetching_a_reader(tmp_path: Path) -> None:
    """A SQLite file (Python's sqlite3 writes it) sent where a warehouse belongs: DuckDB would download its sqlite
    extension to read it; the engine never fetches one, so the read fails at once, naming the file."""
    import sqlite3

    other = tmp_path / "warehouse.duckdb"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE scores (v REAL)")
    with pytest.raises(duckdb.Error, match=f"{other}: not readable as a DuckDB file: .*sqlite") as e:
        query(other, "SELECT * FROM scores")
    assert "download" not in str(e.value).lower()
    assert _attached_names() == set()


def test_threads_read_at_once(tmp_path: Path) -> None:
    files = [tmp_path / f"{i}.duckdb" for i in range(2)]
    for i, f in enumerate(files):
        _write(f, i)
    seen: list[int] = []
    errors: list[BaseException] = []

    def read(f: Path) -> None:
        try:
            for _ in range(30):
                seen.append(query(f, "SELECT v FROM t")[0]["v"])
                seen.append(query(files[0], "SELECT v FROM t")[0]["v"])  # the same file from both threads
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(seen) == [0] * 90 + [1] * 30


def test_a_forked_child_reads_with_an_engine_of_its_own(tmp_path: Path) -> None:
    wh = tmp_path / "warehouse.duckdb"
    _write(wh, 5)
    parent = engine()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own engine, the parent's never touched
        try:
            os.close(r)
            ok = engine() is not parent and query(wh, "SELECT v FROM t") == [{"v": 5}]
            os.write(w, b"ok" if ok else b"wrong")
        finally:
            os._exit(0)
    os.close(w)
    answer = os.read(r, 16)
    os.close(r)
    os.waitpid(pid, 0)
    assert answer == b"ok"
    assert engine() is parent and query(wh, "SELECT v FROM t") == [{"v": 5}]
