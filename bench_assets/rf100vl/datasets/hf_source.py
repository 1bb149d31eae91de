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
from bench_assets.platform.hf import FailureKind, HubAccess, HubFailure

LOCK_FILE = "lock.json"
LOCK_FORMAT = "rf100vl-hf-lock.v1"
REPO_TYPE = "dataset"
_NAMES_SHOWN = 8
_UNREACHABLE_FIX = "check network or use a local import"
_MIRROR_FIX = "the mirror is corrupt or the lock is stale; re-upload or fix lock.json"
_LOCK_MISSING_FIX = "upload lock.json at the repo root"
_NOT_FOUND = (FailureKind.REVISION_NOT_FOUND, FailureKind.FILE_NOT_FOUND, FailureKind.REPO_NOT_FOUND)

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


@dataclass(frozen=True)
class _MirrorRevision:
    """The mirror repo at one revision (branch, tag or commit sha) and how to reach it."""

    access: HubAccess
    repo_id: str
    revision: str

    @property
    def endpoint(self) -> str:
        return self.access.endpoint


# -- failures, worded for someone fetching a dataset ------------------------------------------------


def _auth_message(mirror: _MirrorRevision, filename: str, status: int | None) -> str:
    where = f"dataset repo {mirror.repo_id} at {mirror.endpoint} (file {filename})"
    if mirror.access.has_token:
        return (
            f"HTTP {status}: the token in HF_TOKEN was rejected or cannot read {where}; "
            "set HF_TOKEN with read access to this repo"
        )
    return f"HTTP {status}: {where} requires authentication; set HF_TOKEN with read access"


def _not_found_message(kind: FailureKind, mirror: _MirrorRevision, filename: str, missing_hint: str) -> str:
    if kind is FailureKind.REVISION_NOT_FOUND:
        return (
            f"revision {mirror.revision!r} not found in dataset repo {mirror.repo_id} at {mirror.endpoint}; "
            "check the branch, tag or commit"
        )
    if kind is FailureKind.FILE_NOT_FOUND:
        return (
            f"{filename} not found in dataset repo {mirror.repo_id} at {mirror.endpoint} "
            f"(revision {mirror.revision}); {missing_hint}"
        )
    token_hint = (
        " or HF_TOKEN cannot read it"
        if mirror.access.has_token
        else "; if it is private, set HF_TOKEN with read access"
    )
    return (
        f"dataset repo {mirror.repo_id} not found at {mirror.endpoint} (HTTP 404) while fetching {filename}"
        f"{token_hint}; check the repo id and that it is a dataset repo"
    )


def _failure_message(failure: HubFailure, mirror: _MirrorRevision, filename: str, missing_hint: str) -> str:
    """One actionable message for a failed fetch of ``filename``; ``missing_hint`` says how to fix its absence."""
    kind, endpoint = failure.kind, mirror.endpoint
    if kind is FailureKind.OFFLINE:
        return f"HF_HUB_OFFLINE is set, cannot fetch {filename} from {endpoint}; unset it or use a local import"
    if kind is FailureKind.TIMEOUT:
        timeout_s = mirror.access.metadata_timeout_s
        return f"cannot reach {endpoint}: no answer within {timeout_s:g} s; {_UNREACHABLE_FIX}"
    if kind is FailureKind.UNREACHABLE:
        return f"cannot reach {endpoint} ({failure.network_detail}); {_UNREACHABLE_FIX}"
    if kind is FailureKind.GATED:
        return (
            f"dataset repo {mirror.repo_id} is gated; accept its conditions on the Hub with the account whose "
            "token is in HF_TOKEN (set HF_TOKEN with read access)"
        )
    if kind is FailureKind.AUTH:
        return _auth_message(mirror, filename, failure.status)
    if kind in _NOT_FOUND:
        return _not_found_message(kind, mirror, filename, missing_hint)
    if kind is FailureKind.HTTP:
        return (
            f"HTTP {failure.status} from {endpoint} while fetching {filename} from {mirror.repo_id}: "
            f"{failure.detail}"
        )
    if kind is FailureKind.NOT_A_HUB:
        return (
            f"{endpoint} did not answer like a Hugging Face Hub for {filename} ({failure.detail}); "
            "check HF_ENDPOINT"
        )
    return f"could not fetch {filename} from dataset repo {mirror.repo_id} at {endpoint}: {failure.detail}"


def _guarded(call: Callable[[], T], mirror: _MirrorRevision, filename: str, missing_hint: str) -> T:
    """``call()``, its failure raised as an :class:`HFSourceError` worded for fetching ``filename``."""
    return hf.guarded(
        call,
        mirror.access,
        lambda failure: _failure_message(failure, mirror, filename, missing_hint),
        HFSourceError,
    )


# -- the fetch --------------------------------------------------------------------------------------


def _resolve_commit(mirror: _MirrorRevision) -> str:
    """The commit sha ``mirror.revision`` names, from one quick metadata request for lock.json."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    access = mirror.access
    url = hf_hub_url(
        mirror.repo_id, LOCK_FILE, repo_type=REPO_TYPE, revision=mirror.revision, endpoint=access.endpoint
    )
    metadata = _guarded(
        lambda: get_hf_file_metadata(
            url,
            token=access.library_token,
            timeout=access.metadata_timeout_s,
            endpoint=access.endpoint,
            retry_on_errors=False,
        ),
        mirror,
        LOCK_FILE,
        f"{_LOCK_MISSING_FIX} (see bench_assets/rf100vl/datasets/hf_source.py)",
    )
    if not metadata.commit_hash:
        raise HFSourceError(
            f"{access.endpoint} sent no X-Repo-Commit header for {LOCK_FILE}; it does not look like a "
            "Hugging Face Hub endpoint, check HF_ENDPOINT"
        )
    return metadata.commit_hash


def _download(at_commit: _MirrorRevision, filename: str, cache_dir: Path, missing_hint: str) -> Path:
    """``filename`` of the mirror at a commit sha, into the huggingface_hub cache under ``cache_dir``."""
    from huggingface_hub import hf_hub_download

    access = at_commit.access

    def call() -> str:
        return hf_hub_download(
            at_commit.repo_id,
            filename,
            repo_type=REPO_TYPE,
            revision=at_commit.revision,
            cache_dir=cache_dir,
            endpoint=access.endpoint,
            token=access.library_token,
            etag_timeout=access.metadata_timeout_s,
        )

    return Path(_guarded(call, at_commit, filename, missing_hint))


# -- the lock and the tar ---------------------------------------------------------------------------


def _lock_error(at_commit: _MirrorRevision, problem: str) -> HFSourceError:
    return HFSourceError(
        f"{LOCK_FILE} in dataset repo {at_commit.repo_id} (commit {at_commit.revision}) {problem}; fix lock.json "
        f'(expected {{"format": "{LOCK_FORMAT}", "datasets": {{...}}}}, '
        "see bench_assets/rf100vl/datasets/hf_source.py)"
    )


def _read_lock(path: Path, at_commit: _MirrorRevision) -> dict[str, Any]:
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


def _lock_entry(datasets: dict[str, Any], name: str, at_commit: _MirrorRevision) -> _LockEntry:
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


def _verify(path: Path, entry: _LockEntry, at_commit: _MirrorRevision) -> None:
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
    mirror = _MirrorRevision(HubAccess.from_env(endpoint), repo_id, revision or "main")
    at_commit = replace(mirror, revision=_resolve_commit(mirror))
    cache_dir = Path(cache_dir)

    lock_path = _download(at_commit, LOCK_FILE, cache_dir, _LOCK_MISSING_FIX)
    entry = _lock_entry(_read_lock(lock_path, at_commit), name, at_commit)
    tar_path = _download(at_commit, entry.file, cache_dir, f"{LOCK_FILE} lists it for {name!r}; {_MIRROR_FIX}")
    _verify(tar_path, entry, at_commit)
    return HFDatasetFile(
        name=name,
        tar_path=tar_path,
        sha256=entry.sha256,
        version=entry.version,
        repo_id=repo_id,
        revision=at_commit.revision,
    )
