"""The dbt project `dbt_report/` and its manifest: where they are, the project's fingerprint, and `prepare_manifest()`
(`dbt parse`, offline, a few seconds, and only when a project file changed since the last parse), with the rule for
a missing or stale manifest when the code location loads (fail with the fix; re-parse under `dagster dev`; leave
the dbt assets out where the process does not build the report). Imports neither Dagster nor dbt."""

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

from resources.paths import REPO_ROOT

log = logging.getLogger(__name__)


DBT_PROJECT_DIR = REPO_ROOT / "dbt_report"


MANIFEST_PATH = DBT_PROJECT_DIR / "target" / "manifest.json"


_FINGERPRINT_PATH = MANIFEST_PATH.with_name("manifest.fingerprint")


_PROJECT_SUFFIXES = {".sql", ".py", ".yml", ".yaml", ".csv", ".md"}


_NOT_PROJECT = {"target", "logs", "dbt_packages"}


class ReportBuildError(RuntimeError):
    """The dbt build failed (a model errored or a test failed); the previous report.duckdb is untouched."""


def _dbt_executable() -> str:
    beside = Path(sys.executable).parent / "dbt"
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


def _dbt_env(target: Path, *, partial_parse: bool = False) -> dict[str, str]:
    """dbt's environment for a build or parse into `target`. Its file log (`target/dbt.log`, every event at debug
    level) is off unless `DBT_LOG_LEVEL_FILE` is set: the scratch folder holding it is removed after every build,
    and what a failure needs is dbt's own output, which the error quotes."""
    return {**os.environ, "DBT_TARGET_PATH": str(target), "DBT_LOG_PATH": str(target),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PARTIAL_PARSE": str(partial_parse).lower(),
            "DBT_USE_COLORS": "false", "DBT_LOG_LEVEL_FILE": os.environ.get("DBT_LOG_LEVEL_FILE", "none")}


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
        f"{MANIFEST_PATH} {state}; run `.venv/bin/python -c \"from bench_assets.report.dbt_project import "
        "prepare_manifest; prepare_manifest()\"` (dbt parse, offline) before loading the code location")


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
