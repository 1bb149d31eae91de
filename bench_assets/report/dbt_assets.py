"""`report/<model>`: the dbt project `dbt_report/` as Dagster assets, and the same build without Dagster.

Every dbt model is the asset `report/<model name>` (group `report`) downstream of `report/warehouse`: all
`source('warehouse', ...)` tables map onto that one loader asset. Every dbt test is an asset check of the model
it tests, named as the test.

The report file is never built in place. dbt writes a `report.duckdb` in a scratch folder beside the live one
(same file name, so dbt-duckdb's database name stays `report`) over a hard-linked snapshot of the warehouse (the
loader replaces warehouse.duckdb by rename, so the link pins the version the build started from), and the
finished file is renamed over `report.duckdb`. Readers never see a half-built report nor meet dbt's write lock;
a failed build leaves the previous report as it was.

The integration is in-house and small: the asset and check specs are read from dbt's manifest with plain `json`,
and a materialization runs `dbt build` as a subprocess (only the selected models and tests when subset) and
reads its run_results.json. Neither dagster-dbt nor dbt-core is imported by the code location: importing them
costs more than a second, which every code server and every run process would pay.

The manifest (dbt_report/target/manifest.json, git-ignored) is made by `prepare_manifest()`: `dbt parse`,
offline, a few seconds, and only when a project file changed since the last parse. Importing this module runs no
dbt: `report_dbt_assets` is created on first access (PEP 562), and a missing or stale manifest then fails loudly
with the fix, except under `dagster dev`, where it is re-parsed first. `build_report_db` and `prepare_manifest`
import neither Dagster nor duckdb until called, so the CLI can use them cheaply.
"""

import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resources.paths import REPO_ROOT

if TYPE_CHECKING:
    import dagster as dg

    report_dbt_assets: dg.AssetsDefinition  # created on first access, see __getattr__ at the bottom

__all__ = ["DBT_PROJECT_DIR", "MANIFEST_PATH", "ReportBuildError", "build_report_db", "kept_parses",
           "manifest_is_fresh", "prepare_manifest", "report_db_path", "report_dbt_assets"]

log = logging.getLogger(__name__)

DBT_PROJECT_DIR = REPO_ROOT / "dbt_report"
MANIFEST_PATH = DBT_PROJECT_DIR / "target" / "manifest.json"
_FINGERPRINT_PATH = MANIFEST_PATH.with_name("manifest.fingerprint")
_PROJECT_SUFFIXES = {".sql", ".py", ".yml", ".yaml", ".csv", ".md"}
_NOT_PROJECT = {"target", "logs", "dbt_packages"}
WAREHOUSE_KEY = ("report", "warehouse")
GROUP = "report"
POOL = "duckdb_writer"  # the warehouse loader's pool: one DuckDB writer at a time
_FAILED = {"error", "fail", "runtime error"}  # run_results statuses that fail a build ("warn" does not)
_BUILT = {"model", "seed", "snapshot"}  # the dbt resources that are assets
_BUILD_TIMEOUT_S = 900


class ReportBuildError(RuntimeError):
    """The dbt build failed (a model errored or a test failed); the previous report.duckdb is untouched."""


def _dbt_executable() -> str:
    beside = Path(sys.executable).parent / "dbt"
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


def _dbt_env(target: Path, *, partial_parse: bool = False) -> dict[str, str]:
    return {**os.environ, "DBT_TARGET_PATH": str(target), "DBT_LOG_PATH": str(target),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PARTIAL_PARSE": str(partial_parse).lower(),
            "DBT_USE_COLORS": "false"}


# --- the manifest -----------------------------------------------------------------------------------------


def _project_files() -> list[Path]:
    return sorted(p for p in DBT_PROJECT_DIR.rglob("*")
                  if p.is_file() and p.suffix in _PROJECT_SUFFIXES and not p.name.startswith(".")
                  and not _NOT_PROJECT & set(p.relative_to(DBT_PROJECT_DIR).parts))


def project_fingerprint() -> str:
    """Hash of every file dbt parses (and of dbt-core's version): the manifest is stale when it changes."""
    h = hashlib.sha256(f"dbt-core {version('dbt-core')}\n".encode())
    for p in _project_files():
        h.update(f"{p.relative_to(DBT_PROJECT_DIR).as_posix()}\n".encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def manifest_is_fresh() -> bool:
    if not MANIFEST_PATH.exists() or not _FINGERPRINT_PATH.exists():
        return False
    return _FINGERPRINT_PATH.read_text().strip() == project_fingerprint()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released on close, and by the OS if the process dies
        yield


def prepare_manifest(*, force: bool = False) -> Path:
    """Parse the dbt project into dbt_report/target/manifest.json when it is missing or stale (offline).

    Safe to call from many processes at once: one parses, the others wait and find it fresh. The manifest
    is written under a scratch name and renamed into place, so a reader never loads half a file.
    """
    from bench_assets.platform.fsutil import atomic_write_text

    if not force and manifest_is_fresh():
        return MANIFEST_PATH
    with _file_lock(MANIFEST_PATH.with_name(".prepare.lock")):
        if not force and manifest_is_fresh():
            return MANIFEST_PATH
        fingerprint = project_fingerprint()
        # Every parse holds this lock while its scratch exists: any scratch found now is a killed parse's.
        for leftover in MANIFEST_PATH.parent.glob(".parse-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        scratch = MANIFEST_PATH.parent / f".parse-{os.getpid()}"
        try:
            r = subprocess.run([_dbt_executable(), "parse", "--project-dir", str(DBT_PROJECT_DIR),
                                "--profiles-dir", str(DBT_PROJECT_DIR)],
                               cwd=DBT_PROJECT_DIR, env=_dbt_env(scratch), capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0 or not (scratch / "manifest.json").exists():
                raise ReportBuildError(f"{DBT_PROJECT_DIR}: `dbt parse` failed (exit {r.returncode}); fix the "
                                       f"project:\n{_tail(r.stdout + r.stderr)}")
            os.replace(scratch / "manifest.json", MANIFEST_PATH)
            atomic_write_text(_FINGERPRINT_PATH, fingerprint + "\n")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    log.info("dbt manifest prepared at %s", MANIFEST_PATH)
    return MANIFEST_PATH


def _using_dagster_dev() -> bool:
    return bool(os.environ.get("DAGSTER_IS_DEV_CLI"))  # set by `dagster dev` for its code servers


_UNPREPARED_OK = False


def load_without_preparing() -> None:
    """For a process that never builds the report (`bench`'s dataset, training and augbench runs): load the code
    location from the manifest as it is, stale or missing, instead of running `dbt parse` first. A missing
    manifest leaves the dbt assets out of the location (nothing such a process runs needs them)."""
    global _UNPREPARED_OK
    _UNPREPARED_OK = True


def _manifest_for_definitions() -> Path | None:
    if _using_dagster_dev():
        return prepare_manifest()
    if manifest_is_fresh():
        return MANIFEST_PATH
    if _UNPREPARED_OK:
        return MANIFEST_PATH if MANIFEST_PATH.exists() else None
    state = "is stale (a dbt_report/ file changed since the last parse)" if MANIFEST_PATH.exists() else \
        "is missing (dbt_report/target/ is git-ignored, so a fresh clone has none)"
    raise ReportBuildError(
        f"{MANIFEST_PATH} {state}; run `.venv/bin/python -c \"from bench_assets.report.dbt_assets import "
        "prepare_manifest; prepare_manifest()\"` (dbt parse, offline) before loading the code location")


# --- building the report file -----------------------------------------------------------------------------


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
        import duckdb

        from bench_assets.platform.fsutil import fsync_dir

        con = duckdb.connect(str(self.db))
        try:
            con.execute("CHECKPOINT")  # everything in the file itself, no WAL left behind by the rename
            tables = [t for (t,) in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                "AND table_type = 'BASE TABLE' AND table_catalog = current_database() ORDER BY table_name"
            ).fetchall()]
            counts = {t: con.execute(f'SELECT count(*) FROM main."{t}"').fetchone()[0] for t in tables}
        finally:
            con.close()
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

    try:
        con = duckdb.connect(str(build.db), read_only=True)
        try:
            path = str(build.warehouse).replace("'", "''")
            con.execute(f"ATTACH '{path}' AS warehouse (READ_ONLY)")
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


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


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


# --- Dagster ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _AssetNode:
    """A dbt model (seed, snapshot) that is the asset `report/<name>`."""

    unique_id: str
    key: tuple[str, ...]
    selector: str  # dbt --select for exactly this node
    table: str  # its relation in report.duckdb


@dataclass(frozen=True)
class _CheckNode:
    """A dbt test that is the check `check_name` of the asset `key`."""

    unique_id: str
    key: tuple[str, ...]
    check_name: str
    selector: str
    description: str
    deps: tuple[tuple[str, ...], ...]  # the other nodes the test reads (a relationships test's `to` model)


@dataclass(frozen=True)
class _ReportGraph:
    """What the Dagster side needs from the manifest, keyed by dbt unique_id, in manifest order."""

    assets: dict[str, _AssetNode]
    checks: dict[str, _CheckNode]
    specs: list[dict[str, Any]]  # per asset: key, deps, description, columns, ... (plain values, no Dagster)


def _selector(node: Mapping[str, Any]) -> str:
    return "fqn:" + ".".join(node["fqn"])


def _asset_name(node: Mapping[str, Any]) -> str:
    v = node.get("version")
    return node["name"] if v is None else f"{node['name']}_v{v}"  # as dagster-dbt keys versioned models


def _check_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)  # Dagster's rule for check names


def _attached_node(manifest: Mapping[str, Any], test: Mapping[str, Any]) -> str | None:
    """The node a test checks, as dagster-dbt finds it: a generic test's attached_node, a singular test's one
    upstream node, or the model named by `meta: {dagster: {ref: {name: ...}}}` in the test's config."""
    upstream = set(test.get("depends_on", {}).get("nodes", []))
    attached = test.get("attached_node")
    if len(upstream) == 1:
        [attached] = upstream
    ref = ((test.get("config", {}).get("meta") or test.get("meta") or {}).get("dagster") or {}).get("ref")
    if ref:
        package = ref.get("package") or manifest.get("metadata", {}).get("project_name")
        attached = next((uid for uid, n in manifest["nodes"].items()
                         if (n["name"], n.get("package_name"), n.get("version")) ==
                         (ref["name"], package, ref.get("version"))), None)
    return attached


def _test_definition(test: Mapping[str, Any], tested: str) -> str:
    """What a test asserts, in a line: "not_null on leaderboard.model", "unique_combination on scores (...)"."""
    if (test.get("description") or "").strip():
        text = test["description"].strip()
    elif test.get("test_metadata"):
        meta = test["test_metadata"]
        name = f"{meta['namespace']}.{meta['name']}" if meta.get("namespace") else meta["name"]
        target = f"{tested}.{test['column_name']}" if test.get("column_name") else tested
        args = ", ".join(f"{k}={v}" for k, v in (meta.get("kwargs") or {}).items() if k not in ("model", "column_name"))
        text = f"{name} on {target}" + (f" ({args})" if args else "")
    else:
        text = f"singular test {test.get('original_file_path', test['name'])} on {tested}"
    config = test.get("config") or {}
    if config.get("where"):
        text += f" where {config['where']}"
    if str(config.get("severity", "")).lower() == "warn":
        text += " [warn severity]"
    return text


def _code_version(node: Mapping[str, Any]) -> str | None:
    code = node.get("raw_code") or node.get("raw_sql")  # as dagster-dbt: the model's code changed, or not
    return hashlib.sha1(code.encode()).hexdigest() if code else (node.get("checksum") or {}).get("checksum")


def _report_graph(manifest: Mapping[str, Any]) -> _ReportGraph:
    """Assets, their lineage and their checks from a dbt manifest (plain JSON; no Dagster, no dbt)."""
    nodes = manifest["nodes"]
    assets = {uid: _AssetNode(uid, (GROUP, _asset_name(n)), _selector(n), n.get("alias") or n["name"])
              for uid, n in nodes.items() if n["resource_type"] in _BUILT}

    def upstream(node: Mapping[str, Any]) -> list[tuple[str, ...]]:
        """Keys of the nodes `node` reads: models by name, every source as the loader's one asset."""
        keys: list[tuple[str, ...]] = []
        for up in node.get("depends_on", {}).get("nodes", []):
            key = WAREHOUSE_KEY if up.startswith("source.") else assets[up].key if up in assets else None
            if key is not None and key not in keys:
                keys.append(key)
        return keys

    specs = []
    for uid, asset in assets.items():
        n = nodes[uid]
        deps = upstream(n)
        columns = [(name, c.get("data_type") or "?", (c.get("description") or "").strip() or None)
                   for name, c in (n.get("columns") or {}).items()]
        relation = ".".join(p for p in (n.get("database"), n.get("schema"), n.get("alias")) if p)
        specs.append({"key": asset.key, "deps": deps, "description": (n.get("description") or "").strip() or None,
                      "code_version": _code_version(n), "columns": columns,
                      "table_name": relation or None, "unique_id": uid,
                      "materialized": (n.get("config") or {}).get("materialized")})
    checks: dict[str, _CheckNode] = {}
    taken: set[tuple[tuple[str, ...], str]] = set()
    for uid, n in nodes.items():
        if n["resource_type"] != "test":
            continue
        attached = _attached_node(manifest, n)
        if attached not in assets:
            continue  # a test of a source, or of nothing we can tell: it still runs (and fails) with the build
        key = assets[attached].key
        name = _check_name(n["name"])
        if (key, name) in taken:  # keep names unique per asset, and stable: the id's hash, not a counter
            name = _check_name(f"{name}_{uid.rsplit('.', 1)[-1]}")
        taken.add((key, name))
        checks[uid] = _CheckNode(uid, key, name, _selector(n), _test_definition(n, nodes[attached]["name"]),
                                 tuple(k for k in upstream(n) if k != key))
    return _ReportGraph(assets, checks, specs)


def _load_manifest(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _log_to(logger: Any, level: str, text: str) -> None:
    {"debug": logger.debug, "warn": logger.warning, "warning": logger.warning,
     "error": logger.error}.get(level, logger.info)(text)


def _check_result(build: _Build, check: _CheckNode, r: Mapping[str, Any]) -> "dg.AssetCheckResult":
    import dagster as dg

    status = r.get("status")
    passed = status == "pass"
    failures = r.get("failures")
    metadata: dict[str, Any] = {"dbt_status": str(status)}
    if failures is not None:
        metadata["failures"] = dg.MetadataValue.int(int(failures))
    if failures and r.get("compiled_code"):
        metadata["failing_rows"] = dg.MetadataValue.text(_failing_rows(build, r["compiled_code"]))
    message = (r.get("message") or "").strip()
    return dg.AssetCheckResult(
        asset_key=dg.AssetKey(list(check.key)), check_name=check.check_name, passed=passed,
        severity=dg.AssetCheckSeverity.WARN if status == "warn" else dg.AssetCheckSeverity.ERROR,
        description=check.description if passed or not message else f"{check.description}: {message}",
        metadata=metadata)


def _asset_specs(graph: _ReportGraph) -> "list[dg.AssetSpec]":
    """One Dagster AssetSpec per dbt model: lineage, code version, column schema and relation."""
    import dagster as dg

    from bench_assets.platform.automation import eager_until_requested

    return [
        dg.AssetSpec(
            key=dg.AssetKey(list(s["key"])), deps=[dg.AssetKey(list(d)) for d in s["deps"]],
            description=s["description"], group_name=GROUP, kinds={"dbt", "duckdb"}, code_version=s["code_version"],
            automation_condition=eager_until_requested(),  # a fresh warehouse rebuilds the report
            skippable=True,  # a node dbt does not build (ephemeral) yields nothing
            metadata={
                **({"dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(
                    columns=[dg.TableColumn(name, type=t, description=d) for name, t, d in s["columns"]]))}
                   if s["columns"] else {}),
                **({"dagster/table_name": s["table_name"]} if s["table_name"] else {}),
                "dbt/unique_id": s["unique_id"],
                **({"dbt/materialized": s["materialized"]} if s["materialized"] else {}),
            })
        for s in graph.specs]


def _check_specs(graph: _ReportGraph) -> "list[dg.AssetCheckSpec]":
    """One non-blocking Dagster AssetCheckSpec per dbt test, on the model it tests."""
    import dagster as dg

    return [dg.AssetCheckSpec(c.check_name, asset=dg.AssetKey(list(c.key)), description=c.description,
                              additional_deps=[dg.AssetKey(list(d)) for d in c.deps], blocking=False,
                              metadata={"dbt/unique_id": c.unique_id})
            for c in graph.checks.values()]


def _materializations(results: list[dict[str, Any]], selected_assets: set[_AssetNode],
                      counts: dict[str, int]) -> "Iterator[dg.MaterializeResult]":
    """A MaterializeResult for each selected model dbt built successfully: its run time and, for a table,
    its row count in the published report."""
    import dagster as dg

    assets = {a.unique_id: a for a in selected_assets}
    for r in results:
        asset = assets.get(r.get("unique_id"))
        if asset is None or r.get("status") != "success":
            continue
        metadata: dict[str, Any] = {"execution_time_s": dg.MetadataValue.float(
            round(float(r.get("execution_time") or 0.0), 3))}
        if asset.table in counts:  # tables; a view has no stored rows to count
            metadata["dagster/row_count"] = dg.MetadataValue.int(counts[asset.table])
        yield dg.MaterializeResult(asset_key=dg.AssetKey(list(asset.key)), metadata=metadata)


def _define_report_dbt_assets() -> "dg.AssetsDefinition | None":
    """The multi-asset `report_dbt_assets` (every dbt model an asset, every test a check of it), or None when
    the manifest may be absent (`load_without_preparing`) and is."""
    import dagster as dg

    from resources.bench_home import BenchHome

    manifest = _manifest_for_definitions()
    if manifest is None:
        return None
    graph = _report_graph(_load_manifest(manifest))
    asset_specs = _asset_specs(graph)
    check_specs = _check_specs(graph)
    asset_by_key = {dg.AssetKey(list(a.key)): a for a in graph.assets.values()}
    check_by_key = {dg.AssetCheckKey(dg.AssetKey(list(c.key)), c.check_name): c for c in graph.checks.values()}

    @dg.multi_asset(name="report_dbt_assets", specs=asset_specs, check_specs=check_specs, can_subset=True,
                    pool=POOL)
    def report_dbt_assets(context: dg.AssetExecutionContext, home: BenchHome):
        """dbt build of the report into a scratch file, renamed over report.duckdb when every node passed."""
        selected_assets = {asset_by_key[k] for k in context.selected_asset_keys}
        selected_checks = {check_by_key[k] for k in context.selected_asset_check_keys}
        select = None
        if context.is_subset:
            select = sorted({a.selector for a in selected_assets} | {c.selector for c in selected_checks})
        with _report_build(home.report_db_path, home.warehouse_path, start_from_live=context.is_subset) as build:
            run = _run_dbt_build(build, select, lambda level, text: _log_to(context.log, level, text))
            results = _run_results(build.target).get("results", [])
            checks = {c.unique_id: c for c in selected_checks}
            check_results = [_check_result(build, checks[r["unique_id"]], r) for r in results
                             if r.get("unique_id") in checks and r.get("status") != "skipped"]
            failed = [r for r in results if r.get("status") in _FAILED]
            if failed or run.returncode != 0:
                yield from check_results  # pass or fail: the checks say which test broke
                detail = _describe(build, failed) if failed else run.tail()
                raise dg.Failure(description=f"dbt build failed (exit {run.returncode}); {home.report_db_path} is "
                                             f"unchanged. Failed:\n{detail}")
            # Checks only (no model selected) changed nothing: the live report stays as it is.
            counts = build.publish() if selected_assets else {}
        # Held back until the file is in place: a model is materialized when readers can see it.
        yield from _materializations(results, selected_assets, counts)
        yield from check_results

    return report_dbt_assets


def __getattr__(name: str) -> Any:
    # PEP 562: the asset definitions (and the manifest they need) only when someone asks for them.
    if name == "report_dbt_assets":
        value = _define_report_dbt_assets()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
