"""Fetch RF100-VL dataset tars from a Hugging Face *dataset* repo (our mirror), verified by a lock file.

Repo layout (defined by us, produced by the upload side)::

    lock.json                  # at the repo root
    datasets/<name>.tar        # one tar per dataset, a single top folder inside

``lock.json``::

    {"format": "rf100vl-hf-lock.v1",
     "datasets": {"<name>": {"file": "datasets/<name>.tar", "sha256": "<hex>",
                             "bytes": <int>, "version": <int or str>}}}

A fetch resolves the requested revision (branch, tag or commit) to a commit sha once, then downloads
``lock.json`` and the tar *at that commit*, so a push landing in between cannot pair a lock with a
tar from another commit.  The tar is checked against the lock's byte size and SHA-256.

Endpoint, token, secrets and hub settings come from :mod:`bench_assets.platform.hf` (``HF_ENDPOINT`` /
``HF_TOKEN`` read at call time, no cached login, the token scrubbed from every message and never chained
in, telemetry off); this module words its failures for someone fetching a dataset.

Timeouts: ``hf_hub_download`` does not retry its first metadata HEAD, but when it fails with a
network error and the file is not cached it retries with a 60 s timeout and five backoff sleeps
(1+2+4+8+8 s), which is ~25 s even for a refused connection and minutes for a black-holed host.
We therefore make the first metadata request ourselves with ``retry_on_errors=False`` and a short
timeout (``HF_HUB_ETAG_TIMEOUT`` or 10 s) and stop there if the endpoint is unreachable.  Body
downloads use the library's per-read timeout (``HF_HUB_DOWNLOAD_TIMEOUT``, 10 s), with its five
resume attempts for a connection lost mid-transfer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from bench_assets.platform import hf
from bench_assets.platform.fsutil import sha256_file
from bench_assets.platform.hf import HubAccess, HubReadError, RepoAt

LOCK_FILE = "lock.json"
LOCK_FORMAT = "rf100vl-hf-lock.v1"
REPO_TYPE = "dataset"
_NAMES_SHOWN = 8
_MIRROR_FIX = "the mirror is corrupt or the lock is stale; re-upload or fix lock.json"
_LOCK_MISSING_FIX = "upload lock.json at the repo root"

T = TypeVar("T")


class HFSourceError(Exception):
    """Any failure to obtain a verified dataset tar from the Hugging Face mirror."""


@dataclass(frozen=True)
class HFDatasetFile:
    name: str
    tar_path: Path  # inside the huggingface_hub cache under ``cache_dir``; treat as read-only
    sha256: str
    version: str
    repo_id: str
    revision: str  # the commit sha the lock and the tar were fetched from


@dataclass(frozen=True)
class _LockEntry:
    file: str
    sha256: str
    bytes: int
    version: str


def _as_source_error(call: Callable[[], T]) -> T:
    """``call()``, a hub read failure (worded by platform/hf.py) raised as an :class:`HFSourceError`."""
    error: HFSourceError
    try:
        return call()
    except HubReadError as exc:
        error = HFSourceError(str(exc))
    raise error


# -- the lock and the tar ---------------------------------------------------------------------------


def _lock_error(at_commit: RepoAt, problem: str) -> HFSourceError:
    return HFSourceError(
        f"{LOCK_FILE} in dataset repo {at_commit.repo_id} (commit {at_commit.revision}) {problem}; fix lock.json "
        f'(expected {{"format": "{LOCK_FORMAT}", "datasets": {{...}}}}, '
        "see bench_assets/rf100vl/datasets/hf_source.py)"
    )


def _read_lock(path: Path, at_commit: RepoAt) -> dict[str, Any]:
    """The ``datasets`` mapping of the downloaded lock.json."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _lock_error(at_commit, f"is unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != LOCK_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise _lock_error(at_commit, f"has format {found!r}, not {LOCK_FORMAT!r}")
    datasets = doc.get("datasets")
    if not isinstance(datasets, dict):
        raise _lock_error(at_commit, "has no 'datasets' mapping")
    return datasets


def _available(names: list[str]) -> str:
    if not names:
        return "the lock lists no datasets"
    shown = ", ".join(names[:_NAMES_SHOWN])
    more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    return f"available: {shown}{more}"


def _is_safe_repo_path(path: str) -> bool:
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts and "\\" not in path


def _lock_entry(datasets: dict[str, Any], name: str, at_commit: RepoAt) -> _LockEntry:
    """The checked lock entry of dataset ``name``."""
    if name not in datasets:
        raise HFSourceError(
            f"dataset {name!r} is not in {LOCK_FILE} of dataset repo {at_commit.repo_id} "
            f"(commit {at_commit.revision}); {_available(sorted(datasets))}; upload it to the mirror or check the name"
        )
    raw = datasets[name]
    if not isinstance(raw, dict):
        raise _lock_error(at_commit, f"has a non-object entry for {name!r}")
    file, sha, size, version = raw.get("file"), raw.get("sha256"), raw.get("bytes"), raw.get("version")
    if not isinstance(file, str) or not _is_safe_repo_path(file):
        raise _lock_error(at_commit, f"has an invalid 'file' for {name!r}: {file!r}")
    if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdefABCDEF" for c in sha):
        raise _lock_error(at_commit, f"has an invalid 'sha256' for {name!r}: {sha!r}")
    # bool is an int subclass; a JSON true/false here is a broken lock, not a size or version.
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise _lock_error(at_commit, f"has an invalid 'bytes' for {name!r}: {size!r}")
    if isinstance(version, bool) or not isinstance(version, (int, str)) or version == "":
        raise _lock_error(at_commit, f"has an invalid 'version' for {name!r}: {version!r}")
    return _LockEntry(file=file, sha256=sha.lower(), bytes=size, version=str(version))


def _verify(path: Path, entry: _LockEntry, at_commit: RepoAt) -> None:
    where = f"{entry.file} from dataset repo {at_commit.repo_id} (commit {at_commit.revision}, local {path})"
    actual_size = path.stat().st_size
    if actual_size != entry.bytes:
        raise HFSourceError(
            f"size mismatch for {where}: lock.json expects {entry.bytes} bytes, got {actual_size}; "
            f"{_MIRROR_FIX}"
        )
    actual_sha = sha256_file(path)
    if actual_sha != entry.sha256:
        raise HFSourceError(
            f"SHA-256 mismatch for {where}: expected {entry.sha256}, actual {actual_sha}; {_MIRROR_FIX}"
        )


def fetch_hf_dataset(
    repo_id: str,
    name: str,
    cache_dir: Path,
    *,
    revision: str | None = None,
    endpoint: str | None = None,
) -> HFDatasetFile:
    """Download and verify the tar of dataset ``name`` from the mirror ``repo_id``.

    Raises :class:`HFSourceError` for every expected failure (auth, not found, unreachable,
    bad lock, checksum mismatch).  Files land in the huggingface_hub cache layout under ``cache_dir``.
    """
    hf.configure_hub()
    mirror = RepoAt(HubAccess.from_env(endpoint), REPO_TYPE, repo_id, revision or "main")
    lock_hint = f"{_LOCK_MISSING_FIX} (see bench_assets/rf100vl/datasets/hf_source.py)"
    pinned = _as_source_error(lambda: hf.pin_revision(mirror, LOCK_FILE, lock_hint))
    at_commit = replace(mirror, revision=str(pinned.commit))
    cache_dir = Path(cache_dir)

    lock_path = _as_source_error(lambda: hf.download_file(at_commit, LOCK_FILE, cache_dir, _LOCK_MISSING_FIX))
    entry = _lock_entry(_read_lock(lock_path, at_commit), name, at_commit)
    tar_hint = f"{LOCK_FILE} lists it for {name!r}; {_MIRROR_FIX}"
    tar_path = _as_source_error(lambda: hf.download_file(at_commit, entry.file, cache_dir, tar_hint))
    _verify(tar_path, entry, at_commit)
    return HFDatasetFile(
        name=name,
        tar_path=tar_path,
        sha256=entry.sha256,
        version=entry.version,
        repo_id=repo_id,
        revision=at_commit.revision,
    )
