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

Security and network policy:

* The token comes from the ``HF_TOKEN`` environment variable only.  When it is absent we pass
  ``token=False`` so ``huggingface_hub`` never falls back to a login cached under ``~/.cache``.
  The token value is scrubbed from every message we raise, and errors are raised without
  chaining the library's exceptions (those keep the request, Authorization header included).
* Telemetry is switched off in-process before any call: with it on, ``huggingface_hub`` 2.4.0
  builds its user agent by fetching ``<HF_ENDPOINT at import>/api/agent-harnesses`` (a request to
  huggingface.co even when we talk to a mirror) and caches it under ``HF_HOME``.
* Endpoint: the ``endpoint`` argument, else ``HF_ENDPOINT`` read at call time (the library reads
  it only at import), else https://huggingface.co.

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
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from bench_assets.platform.fsutil import sha256_file

LOCK_FILE = "lock.json"
LOCK_FORMAT = "rf100vl-hf-lock.v1"
REPO_TYPE = "dataset"
DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_METADATA_TIMEOUT_S = 10.0
_NAMES_SHOWN = 8
_DETAIL_CHARS = 300
_UNREACHABLE_FIX = "check network or use a local import"
_MIRROR_FIX = "the mirror is corrupt or the lock is stale; re-upload or fix lock.json"

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
class _Ctx:
    """What an error message needs to say where things went wrong (never holds the token)."""

    repo_id: str
    endpoint: str
    revision: str
    has_token: bool
    timeout_s: float


class _Scrubber:
    def __init__(self, secret: str | None) -> None:
        self._secret = secret

    def __call__(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _resolve_endpoint(endpoint: str | None) -> str:
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _token_from_env() -> str | None:
    token = os.environ.get("HF_TOKEN", "").strip()
    return token or None


def _metadata_timeout() -> float:
    raw = os.environ.get("HF_HUB_ETAG_TIMEOUT", "").strip()
    try:
        return float(raw) if raw else DEFAULT_METADATA_TIMEOUT_S
    except ValueError:
        return DEFAULT_METADATA_TIMEOUT_S


def _configure_hub() -> None:
    from huggingface_hub import constants

    # Read per request by huggingface_hub; the env var alone is only seen at import time.
    constants.HF_HUB_DISABLE_TELEMETRY = True


def _short(exc: BaseException, scrub: _Scrubber) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return scrub(text)[:_DETAIL_CHARS]


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _auth_message(ctx: _Ctx, filename: str, status: int) -> str:
    where = f"dataset repo {ctx.repo_id} at {ctx.endpoint} (file {filename})"
    if ctx.has_token:
        return (
            f"HTTP {status}: the token in HF_TOKEN was rejected or cannot read {where}; "
            "set HF_TOKEN with read access to this repo"
        )
    return f"HTTP {status}: {where} requires authentication; set HF_TOKEN with read access"


def _not_found_message(exc: BaseException, ctx: _Ctx, filename: str, missing_hint: str) -> str:
    from huggingface_hub import errors

    if isinstance(exc, errors.RevisionNotFoundError):
        return (
            f"revision {ctx.revision!r} not found in dataset repo {ctx.repo_id} at {ctx.endpoint}; "
            "check the branch, tag or commit"
        )
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return (
            f"{filename} not found in dataset repo {ctx.repo_id} at {ctx.endpoint} "
            f"(revision {ctx.revision}); {missing_hint}"
        )
    access = (
        " or HF_TOKEN cannot read it"
        if ctx.has_token
        else "; if it is private, set HF_TOKEN with read access"
    )
    return (
        f"dataset repo {ctx.repo_id} not found at {ctx.endpoint} (HTTP 404) while fetching {filename}"
        f"{access}; check the repo id and that it is a dataset repo"
    )


def _translate(
    exc: Exception, ctx: _Ctx, filename: str, missing_hint: str, scrub: _Scrubber
) -> HFSourceError:
    """Map a huggingface_hub / httpx2 failure to one actionable message."""
    import httpx2
    from huggingface_hub import errors

    detail = _short(exc, scrub)
    chain = _exception_chain(exc)
    if any(isinstance(e, errors.OfflineModeIsEnabled) for e in chain):
        message = (
            f"HF_HUB_OFFLINE is set, cannot fetch {filename} from {ctx.endpoint}; "
            "unset it or use a local import"
        )
    elif any(isinstance(e, httpx2.TimeoutException) for e in chain):
        message = f"cannot reach {ctx.endpoint}: no answer within {ctx.timeout_s:g} s; {_UNREACHABLE_FIX}"
    elif any(isinstance(e, (httpx2.ConnectError, httpx2.NetworkError)) for e in chain):
        cause = next(e for e in chain if isinstance(e, (httpx2.ConnectError, httpx2.NetworkError)))
        message = f"cannot reach {ctx.endpoint} ({_short(cause, scrub)}); {_UNREACHABLE_FIX}"
    elif isinstance(exc, errors.GatedRepoError):
        message = (
            f"dataset repo {ctx.repo_id} is gated; accept its conditions on the Hub with the account whose "
            "token is in HF_TOKEN (set HF_TOKEN with read access)"
        )
    elif isinstance(exc, errors.HfHubHTTPError) and exc.response is not None:
        status = exc.response.status_code
        if status in (401, 403):
            message = _auth_message(ctx, filename, status)
        elif status == 404:
            message = _not_found_message(exc, ctx, filename, missing_hint)
        else:
            message = (
                f"HTTP {status} from {ctx.endpoint} while fetching {filename} from {ctx.repo_id}: {detail}"
            )
    elif isinstance(exc, errors.FileMetadataError):
        message = (
            f"{ctx.endpoint} did not answer like a Hugging Face Hub for {filename} ({detail}); "
            "check HF_ENDPOINT"
        )
    else:
        message = f"could not fetch {filename} from dataset repo {ctx.repo_id} at {ctx.endpoint}: {detail}"
    return HFSourceError(scrub(message))


def _guarded(call: Callable[[], T], ctx: _Ctx, filename: str, missing_hint: str, scrub: _Scrubber) -> T:
    error: HFSourceError
    try:
        return call()
    except HFSourceError:
        raise
    except Exception as exc:
        error = _translate(exc, ctx, filename, missing_hint, scrub)
    # Raised outside the handler so neither __cause__ nor __context__ keeps the library's
    # exception, whose request object carries the Authorization header.
    raise error


def _resolve_commit(ctx: _Ctx, token: str | bool, scrub: _Scrubber) -> str:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(
        ctx.repo_id, LOCK_FILE, repo_type=REPO_TYPE, revision=ctx.revision, endpoint=ctx.endpoint
    )
    metadata = _guarded(
        lambda: get_hf_file_metadata(
            url, token=token, timeout=ctx.timeout_s, endpoint=ctx.endpoint, retry_on_errors=False
        ),
        ctx,
        LOCK_FILE,
        "upload lock.json at the repo root (see bench_assets/rf100vl/hf_source.py)",
        scrub,
    )
    if not metadata.commit_hash:
        raise HFSourceError(
            f"{ctx.endpoint} sent no X-Repo-Commit header for {LOCK_FILE}; it does not look like a "
            "Hugging Face Hub endpoint, check HF_ENDPOINT"
        )
    return metadata.commit_hash


def _download(
    ctx: _Ctx,
    commit: str,
    filename: str,
    cache_dir: Path,
    token: str | bool,
    missing_hint: str,
    scrub: _Scrubber,
) -> Path:
    from huggingface_hub import hf_hub_download

    def call() -> str:
        return hf_hub_download(
            ctx.repo_id,
            filename,
            repo_type=REPO_TYPE,
            revision=commit,
            cache_dir=cache_dir,
            endpoint=ctx.endpoint,
            token=token,
            etag_timeout=ctx.timeout_s,
        )

    return Path(_guarded(call, replace(ctx, revision=commit), filename, missing_hint, scrub))


def _lock_error(ctx: _Ctx, commit: str, problem: str) -> HFSourceError:
    return HFSourceError(
        f"{LOCK_FILE} in dataset repo {ctx.repo_id} (commit {commit}) {problem}; fix lock.json "
        f'(expected {{"format": "{LOCK_FORMAT}", "datasets": {{...}}}}, '
        "see bench_assets/rf100vl/hf_source.py)"
    )


def _read_lock(path: Path, ctx: _Ctx, commit: str) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _lock_error(ctx, commit, f"is unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != LOCK_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise _lock_error(ctx, commit, f"has format {found!r}, not {LOCK_FORMAT!r}")
    datasets = doc.get("datasets")
    if not isinstance(datasets, dict):
        raise _lock_error(ctx, commit, "has no 'datasets' mapping")
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


def _lock_entry(datasets: dict[str, Any], name: str, ctx: _Ctx, commit: str) -> _LockEntry:
    if name not in datasets:
        raise HFSourceError(
            f"dataset {name!r} is not in {LOCK_FILE} of dataset repo {ctx.repo_id} (commit {commit}); "
            f"{_available(sorted(datasets))}; upload it to the mirror or check the name"
        )
    raw = datasets[name]
    if not isinstance(raw, dict):
        raise _lock_error(ctx, commit, f"has a non-object entry for {name!r}")
    file, sha, size, version = raw.get("file"), raw.get("sha256"), raw.get("bytes"), raw.get("version")
    if not isinstance(file, str) or not _is_safe_repo_path(file):
        raise _lock_error(ctx, commit, f"has an invalid 'file' for {name!r}: {file!r}")
    if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdefABCDEF" for c in sha):
        raise _lock_error(ctx, commit, f"has an invalid 'sha256' for {name!r}: {sha!r}")
    # bool is an int subclass; a JSON true/false here is a broken lock, not a size or version.
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise _lock_error(ctx, commit, f"has an invalid 'bytes' for {name!r}: {size!r}")
    if isinstance(version, bool) or not isinstance(version, (int, str)) or version == "":
        raise _lock_error(ctx, commit, f"has an invalid 'version' for {name!r}: {version!r}")
    return _LockEntry(file=file, sha256=sha.lower(), bytes=size, version=str(version))


def _verify(path: Path, entry: _LockEntry, ctx: _Ctx, commit: str) -> None:
    where = f"{entry.file} from dataset repo {ctx.repo_id} (commit {commit}, local {path})"
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
    _configure_hub()
    token = _token_from_env()
    scrub = _Scrubber(token)
    ctx = _Ctx(
        repo_id=repo_id,
        endpoint=_resolve_endpoint(endpoint),
        revision=revision or "main",
        has_token=token is not None,
        timeout_s=_metadata_timeout(),
    )
    hub_token: str | bool = token if token is not None else False
    cache_dir = Path(cache_dir)

    commit = _resolve_commit(ctx, hub_token, scrub)
    lock_path = _download(
        ctx, commit, LOCK_FILE, cache_dir, hub_token, "upload lock.json at the repo root", scrub
    )
    entry = _lock_entry(_read_lock(lock_path, ctx, commit), name, ctx, commit)
    tar_path = _download(
        ctx,
        commit,
        entry.file,
        cache_dir,
        hub_token,
        f"{LOCK_FILE} lists it for {name!r}; {_MIRROR_FIX}",
        scrub,
    )
    _verify(tar_path, entry, ctx, commit)
    return HFDatasetFile(
        name=name,
        tar_path=tar_path,
        sha256=entry.sha256,
        version=entry.version,
        repo_id=repo_id,
        revision=commit,
    )
