"""`report/<model>`: the dbt project `dbt_report/` as Dagster assets, and the same build without Dagster.

Every dbt model is the asset `report/<model name>` (group `report`) downstream of `report/warehouse`: all
`source('warehouse', ...)` tables map onto that one loader asset. Every dbt test is an asset check.

The report file is never built in place. dbt writes a `report.duckdb` in a scratch folder beside the live one
(same file name, so dbt-duckdb's database name stays `report`) over a hard-linked snapshot of the warehouse (the
loader replaces warehouse.duckdb by rename, so the link pins the version the build started from), and the
finished file is renamed over `report.duckdb`. Readers never see a half-built report nor meet dbt's write lock;
a failed build leaves the previous report as it was.

The manifest the asset definitions are read from (dbt_report/target/manifest.json, git-ignored) is made by
`prepare_manifest()`: `dbt parse`, offline, a few seconds, and only when a project file changed since the last
parse. Importing this module runs no dbt: `report_dbt_assets` is created on first access (PEP 562), and a
missing or stale manifest then fails loudly with the fix, except under `dagster dev`, where it is re-parsed the
way `DbtProject.prepare_if_dev()` would. `build_report_db` and `prepare_manifest` import neither Dagster's dbt
integration nor duckdb until called, so the CLI can use them cheaply.
"""

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, cached_property
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resources.paths import REPO_ROOT

if TYPE_CHECKING:
    import dagster as dg
    from dagster_dbt import DbtCliResource, DbtProject

    report_dbt_assets: dg.AssetsDefinition  # created on first access, see __getattr__ at the bottom

__all__ = ["DBT_PROJECT_DIR", "MANIFEST_PATH", "ReportBuildError", "build_report_db", "manifest_is_fresh",
           "prepare_manifest", "report_db_path", "report_dbt_assets", "report_dbt_resource", "report_project"]

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


class ReportBuildError(RuntimeError):
    """The dbt build failed (a model errored or a test failed); the previous report.duckdb is untouched."""


def _dbt_executable() -> str:
    beside = Path(sys.executable).parent / "dbt"
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


def _dbt_env(target: Path) -> dict[str, str]:
    return {**os.environ, "DBT_TARGET_PATH": str(target), "DBT_LOG_PATH": str(target),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PARTIAL_PARSE": "false"}


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
    from bench_assets.fsutil import atomic_write_text

    if not force and manifest_is_fresh():
        return MANIFEST_PATH
    with _file_lock(MANIFEST_PATH.with_name(".prepare.lock")):
        if not force and manifest_is_fresh():
            return MANIFEST_PATH
        fingerprint = project_fingerprint()
        scratch = MANIFEST_PATH.parent / f".parse-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
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


def _manifest_for_definitions() -> Path:
    from dagster_dbt.dbt_project import using_dagster_dev

    if using_dagster_dev():
        return prepare_manifest()
    if not manifest_is_fresh():
        state = "is stale (a dbt_report/ file changed since the last parse)" if MANIFEST_PATH.exists() else \
            "is missing (dbt_report/target/ is git-ignored, so a fresh clone has none)"
        raise ReportBuildError(
            f"{MANIFEST_PATH} {state}; run `.venv/bin/python -c \"from bench_assets.report.dbt_assets import "
            "prepare_manifest; prepare_manifest()\"` (dbt parse, offline) before loading the code location")
    return MANIFEST_PATH


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
        return json.dumps({"report_db": str(self.db), "warehouse_db": str(self.warehouse)})

    def publish(self) -> dict[str, int]:
        """Checkpoint the built file, count the rows of every table, and rename it over the live report."""
        import duckdb

        from bench_assets.fsutil import fsync_dir

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
    from bench_assets.fsutil import staging_dir

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


def build_report_db(home: Path) -> dict[str, int]:
    """`dbt build` the whole report from BENCH_HOME/warehouse.duckdb into BENCH_HOME/report.duckdb.

    Builds into a scratch file and renames it into place on success; returns the row count of every table
    (the marts). Raises ReportBuildError, naming each failed model or test with dbt's message, when anything
    fails; the previous report.duckdb is then left as it was. Warn-severity test failures are logged.
    """
    home = Path(home)
    with _report_build(report_db_path(home), home / "warehouse.duckdb", start_from_live=False) as build:
        r = subprocess.run([_dbt_executable(), "build", "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir",
                            str(DBT_PROJECT_DIR), "--vars", build.dbt_vars()],
                           cwd=DBT_PROJECT_DIR, env=_dbt_env(build.target), capture_output=True, text=True,
                           timeout=900)
        results = _run_results(build.target)
        failed = _results_with_status(results, _FAILED)
        if r.returncode != 0 or failed:
            detail = _describe(build, failed) if failed else _tail(r.stdout + r.stderr)
            raise ReportBuildError(f"{build.final}: dbt build failed (exit {r.returncode}); the previous report is "
                                   f"unchanged. Failed:\n{detail}")
        warned = _results_with_status(results, {"warn"})
        if warned:
            log.warning("dbt tests warned:\n%s", _describe(build, warned))
        return build.publish()


# --- Dagster ------------------------------------------------------------------------------------------------


@cache
def report_project() -> "DbtProject":
    from dagster_dbt import DbtProject

    return DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)


@cache
def _report_dbt_cli_class() -> type["DbtCliResource"]:
    from dagster_dbt import DbtCliResource
    from packaging.version import Version

    class ReportDbtCli(DbtCliResource):
        """DbtCliResource without two start-up costs this project never uses, about 4 s of each materialization.

        dagster-dbt 0.29 runs `dbt --version` to learn which dbt it will run (that command also asks PyPI for the
        latest release: a network call on an offline box); it is the installed dbt-core. And it builds an
        in-process adapter handle, used only to fetch column metadata and row counts, which we read from the
        built file ourselves. Both hooks are private: if a dagster-dbt upgrade renames them, these overrides go
        unused and the build is merely slower.
        """

        @cached_property
        def _cli_version(self) -> Version:
            return Version(version("dbt-core"))

        def _initialize_dbt_core_adapter(self, args: Any) -> None:
            return None

    return ReportDbtCli


def report_dbt_resource() -> "DbtCliResource":
    """The `report_dbt` resource the dbt assets use."""
    return _report_dbt_cli_class()(project_dir=report_project(), dbt_executable=_dbt_executable())


def _define_report_dbt_assets() -> "dg.AssetsDefinition":
    import dagster as dg
    from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtCliResource, dbt_assets

    from resources.bench_home import BenchHome

    class ReportTranslator(DagsterDbtTranslator):
        """Sources are the loader's one asset; models are `report/<name>`, so keys mirror bench_assets/report/."""

        def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
            if dbt_resource_props["resource_type"] == "source":
                return dg.AssetKey(list(WAREHOUSE_KEY))
            return dg.AssetKey([GROUP, dbt_resource_props["name"]])

        def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
            return GROUP

        def get_automation_condition(self, dbt_resource_props: Mapping[str, Any]) -> dg.AutomationCondition | None:
            # A fresh warehouse rebuilds the report without anyone launching dbt (report_automation evaluates it).
            return dg.AutomationCondition.eager()

    translator = ReportTranslator(settings=DagsterDbtTranslatorSettings(enable_duplicate_source_asset_keys=True))

    @dbt_assets(manifest=_manifest_for_definitions(), project=report_project(), dagster_dbt_translator=translator,
                name="report_dbt_assets", pool=POOL)
    def report_dbt_assets(context: dg.AssetExecutionContext, report_dbt: DbtCliResource, home: BenchHome):
        """dbt build of the report into a scratch file, renamed over report.duckdb when every node passed."""
        with _report_build(home.report_db_path, home.warehouse_path, start_from_live=context.is_subset) as build:
            invocation = report_dbt.cli(["build", "--vars", build.dbt_vars()], context=context,
                                        target_path=build.target, raise_on_error=False)
            # Held back until the file is in place: a model is materialized when readers can see it.
            events = list(invocation.stream())
            failed = _results_with_status(_run_results(build.target), _FAILED)
            if failed or not invocation.is_successful():
                yield from (e for e in events if not isinstance(e, dg.Output))  # the check results, pass or fail
                detail = _describe(build, failed) if failed else str(invocation.get_error())
                raise dg.Failure(description=f"dbt build failed; {home.report_db_path} is unchanged. "
                                             f"Failed:\n{detail}")
            counts = build.publish()
        keys = context.assets_def.keys_by_output_name
        for event in events:
            if isinstance(event, dg.Output) and keys[event.output_name].path[-1] in counts:
                rows = counts[keys[event.output_name].path[-1]]
                event = event.with_metadata({**event.metadata, "dagster/row_count": dg.MetadataValue.int(rows)})
            yield event

    return report_dbt_assets


def __getattr__(name: str) -> Any:
    # PEP 562: the asset definitions (and the manifest they need) only when someone asks for them.
    if name == "report_dbt_assets":
        value = _define_report_dbt_assets()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
