"""Building the report file: `dbt build` over the warehouse into `BENCH_HOME/report.duckdb`, with no Dagster.

The report file is never built in place. dbt writes a `report.duckdb` in a scratch folder beside the live one
(same file name, so dbt-duckdb's database name stays `report`) over a hard-linked snapshot of the warehouse (the
loader replaces warehouse.duckdb by rename, so the link pins the version the build started from), and the
finished file is renamed over `report.duckdb`. Readers never see a half-built report nor meet dbt's write lock;
a failed build leaves the previous report as it was. A build starts from the last build's parse
(`partial_parse.msgpack`, kept under `dbt_report/target/`). `build_report_db` imports neither Dagster nor duckdb
until called, so the CLI can use it cheaply."""

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_assets.report.dbt_project import (
    DBT_PROJECT_DIR,
    MANIFEST_PATH,
    ReportBuildError,
    _dbt_env,
    _dbt_executable,
    _file_lock,
    _tail,
    project_fingerprint,
)

log = logging.getLogger(__name__)


_FAILED = {"error", "fail", "runtime error"}  # run_results statuses that fail a build ("warn" does not)


_BUILD_TIMEOUT_S = 900


def report_db_path(home: Path) -> Path:
    """BENCH_HOME/report.duckdb, as BenchHome.report_db_path says (kept here so the CLI needs no Dagster)."""
    return home / "report.duckdb"


@dataclass(frozen=True)
class _Build:
    """One build of the report: a scratch folder beside the live file, removed when done."""

    final: Path
    scratch: Path

    @property
    def db(self) -> Path:
        return self.scratch / self.final.name  # same name: dbt-duckdb derives the database name from it

    @property
    def warehouse(self) -> Path:
        return self.scratch / "warehouse.duckdb"

    @property
    def target(self) -> Path:
        return self.scratch / "target"

    def dbt_vars(self) -> str:
        """The two files by name, relative to the scratch folder dbt runs in: the same text for every build, so
        one build's parse is valid for the next (dbt re-parses when `--vars` or the profile's paths change)."""
        return json.dumps({"report_db": self.db.name, "warehouse_db": self.warehouse.name})

    def publish(self) -> dict[str, int]:
        """Checkpoint the built file, count the rows of every table, and rename it over the live report."""
        from bench_assets.platform.duckdb_files import attached
        from bench_assets.platform.fsutil import fsync_dir

        with attached(self.db, read_only=False) as con:
            con.execute("CHECKPOINT")  # everything in the file itself, no WAL left behind by the rename
            tables = [t for (t,) in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                "AND table_type = 'BASE TABLE' AND table_catalog = current_database() ORDER BY table_name"
            ).fetchall()]
            counts = {t: con.execute(f'SELECT count(*) FROM main."{t}"').fetchone()[0] for t in tables}
        with open(self.db, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(self.db, self.final)
        fsync_dir(self.final.parent)
        return counts


@contextmanager
def _report_build(final: Path, warehouse: Path, *, start_from_live: bool) -> Iterator[_Build]:
    """Serialise report builds, snapshot the warehouse, and (for a subset build) start from the live report."""
    from bench_assets.platform.fsutil import staging_dir

    if not warehouse.exists():
        raise ReportBuildError(f"{warehouse}: no warehouse yet; materialize report/warehouse (the loader) before "
                               "building the report")
    with _file_lock(final.with_name(f".{final.name}.lock")), staging_dir(final.parent, "report") as scratch:
        build = _Build(final, scratch)
        try:
            os.link(warehouse, build.warehouse)  # the loader renames a new file in: the link keeps this one
        except OSError:
            shutil.copy2(warehouse, build.warehouse)
        if start_from_live and final.exists():
            # A subset (one mart, or checks only) rebuilds its nodes over a copy of the live report, whose other
            # tables and views it needs.
            shutil.copy2(final, build.db)
        yield build


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


LineSink = Callable[[str, str], None]  # (level: info | warn | error, message)


@dataclass(frozen=True)
class _DbtRun:
    returncode: int
    lines: list[str]  # dbt's messages, in order
    timed_out: bool

    def tail(self) -> str:
        return _tail("\n".join(self.lines)) + (f"\n(killed after {_BUILD_TIMEOUT_S} s)" if self.timed_out else "")


def _dbt_message(raw: str) -> tuple[str, str]:
    """(level, text) of one line of dbt's `--log-format json` output; any other line as it is, at info.

    The level of a node's START line is "start": a node's result line follows it.
    """
    try:
        info = json.loads(raw)["info"]
        level = "start" if info.get("name") == "LogStartLine" else str(info.get("level") or "info")
        return level, _ANSI.sub("", str(info.get("msg") or "")).rstrip()
    except (ValueError, KeyError, TypeError):
        return "info", _ANSI.sub("", raw).rstrip()


def _run_dbt_build(build: _Build, select: Sequence[str] | None, on_line: LineSink) -> _DbtRun:
    """`dbt build` into `build`, every node when `select` is None, else only the selected models and tests.

    dbt's log lines are passed to `on_line` as they come: the result of each node ("3 of 114 OK created sql view
    model ..."), dbt's header and summary, warnings and errors. A node's START line is not (each log event costs
    Dagster a few ms of the CPU dbt runs on; the result line says the same).
    """
    cmd = [_dbt_executable(), "build", "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
           "--vars", build.dbt_vars(), "--log-format", "json"]
    env = _dbt_env(build.target, partial_parse=True)
    parse_cache = _parse_cache_path(build.dbt_vars())
    if parse_cache.exists():
        build.target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(parse_cache, build.target / _PARTIAL_PARSE)
    if select is not None:
        cmd += ["--select", *select]
        env["DBT_INDIRECT_SELECTION"] = "empty"  # the tests asked for, not every test touching a selected model
    lines: list[str] = []
    timed_out = threading.Event()
    proc = subprocess.Popen(cmd, cwd=build.scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")

    def kill() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(_BUILD_TIMEOUT_S, kill)
    timer.daemon = True
    timer.start()
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            if not raw.strip():
                continue
            level, text = _dbt_message(raw)
            if text:
                lines.append(text)
                if level != "start":
                    on_line(level, text)
        returncode = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:  # on_line raised: do not leave dbt writing into a folder about to be removed
            proc.kill()
            proc.wait()
    if returncode in (0, 1) and not timed_out.is_set():  # dbt ran to its end (1: a model or test failed), so
        _keep_parse(build.target / _PARTIAL_PARSE, parse_cache)  # its parse file is whole
    return _DbtRun(returncode, lines, timed_out.is_set())


# dbt's own parse cache (`partial_parse.msgpack`): starting from it takes 0.70-0.87x the CPU of a build that
# parses the project from scratch (benchmarks/results/report_speed*.json, 2026-12-03). Each build runs in a fresh
# scratch target, so the parse of the last build is kept under dbt_report/target/ and copied into the next one's.
# dbt itself re-checks every project file's checksum, the vars, the profile and dbt's version against it and
# re-parses what changed; the cache file is named for the project's fingerprint and the vars as well, so a parse
# of another project state or other paths is never even offered.
_PARTIAL_PARSE = "partial_parse.msgpack"


def _parse_cache_path(dbt_vars: str) -> Path:
    key = hashlib.sha256(f"{project_fingerprint()}\n{dbt_vars}".encode()).hexdigest()[:16]
    return MANIFEST_PATH.with_name(f"partial_parse.{key}.msgpack")


def kept_parses() -> list[Path]:
    """The parse files kept for the next build (one per project state and vars; normally one)."""
    return sorted(MANIFEST_PATH.parent.glob("partial_parse.*.msgpack"))


def _keep_parse(parsed: Path, cache: Path) -> None:
    """Keep the parse a build wrote as the next build's starting point (renamed into place: a build copying it
    at the same moment reads the old file or the new one, never half of one)."""
    if not parsed.exists():
        return
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(parsed, tmp)
        os.replace(tmp, cache)
        for older in kept_parses():  # earlier project states: never valid again
            if older != cache:
                older.unlink(missing_ok=True)
    except OSError as exc:  # a read-only checkout: the next build parses from scratch, nothing else changes
        log.debug("dbt parse not kept at %s: %s", cache, exc)
        tmp.unlink(missing_ok=True)


def _run_results(target: Path) -> dict[str, Any]:
    path = target / "run_results.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _results_with_status(run_results: dict[str, Any], statuses: set[str]) -> list[dict[str, Any]]:
    return [r for r in run_results.get("results", []) if r.get("status") in statuses]


def _failing_rows(build: _Build, sql: str, limit: int = 5) -> str:
    """The first rows a failed test returned, so the message names the culprit (not just "Got 1 result")."""
    import duckdb

    from bench_assets.platform.duckdb_files import sql_string

    try:
        con = duckdb.connect(str(build.db), read_only=True)
        try:
            con.execute(f"ATTACH {sql_string(str(build.warehouse))} AS warehouse (READ_ONLY)")
            cur = con.execute(f"SELECT * FROM ({sql}) LIMIT {limit}")
            cols = [d[0] for d in cur.description]
            return "; ".join(", ".join(f"{c}={v!r}" for c, v in zip(cols, row, strict=True))
                             for row in cur.fetchall())
        finally:
            con.close()
    except duckdb.Error as exc:  # the message is a courtesy: never hide the failure behind it
        return f"(rows not shown: {exc})"


def _describe(build: _Build, results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        line = f"{r['unique_id']}: {r['status']}: {(r.get('message') or '').strip()}"
        if r["unique_id"].startswith("test.") and r.get("compiled_code") and r.get("failures"):
            line += f"\n    failing rows: {_failing_rows(build, r['compiled_code'])}"
        lines.append(line)
    return "\n".join(lines)


def _log_dbt_line(level: str, text: str) -> None:
    log.debug("dbt: %s", text)


def build_report_db(home: Path) -> dict[str, int]:
    """`dbt build` the whole report from BENCH_HOME/warehouse.duckdb into BENCH_HOME/report.duckdb.

    Builds into a scratch file and renames it into place on success; returns the row count of every table
    (the marts). Raises ReportBuildError, naming each failed model or test with dbt's message, when anything
    fails; the previous report.duckdb is then left as it was. Warn-severity test failures are logged.
    """
    home = Path(home)
    with _report_build(report_db_path(home), home / "warehouse.duckdb", start_from_live=False) as build:
        run = _run_dbt_build(build, None, _log_dbt_line)
        results = _run_results(build.target)
        failed = _results_with_status(results, _FAILED)
        if run.returncode != 0 or failed:
            detail = _describe(build, failed) if failed else run.tail()
            raise ReportBuildError(f"{build.final}: dbt build failed (exit {run.returncode}); the previous report "
                                   f"is unchanged. Failed:\n{detail}")
        warned = _results_with_status(results, {"warn"})
        if warned:
            log.warning("dbt tests warned:\n%s", _describe(build, warned))
        return build.publish()
