"""The one Hugging Face Hub client layer: where to connect, with which token, and what a failure means.

Every family that talks to the Hub through ``huggingface_hub`` goes through here; the family keeps its
own error class and the domain wording of its messages, this module keeps the mechanics.

* Endpoint: the ``endpoint`` argument, else ``HF_ENDPOINT`` read at call time (the library reads it
  only at import), else https://huggingface.co; a trailing ``/`` is dropped.
* Token: the ``token`` argument, else the ``HF_TOKEN`` environment variable, nothing else.  Without one
  we pass ``token=False`` so ``huggingface_hub`` never falls back to a login cached under ``~/.cache``.
* Secrets: the token is hidden from :class:`HubAccess`'s repr and scrubbed (``***``) from every
  message :func:`guarded` raises; those errors are raised without chaining the library's exception,
  whose request keeps the Authorization header.
* Telemetry is switched off in-process (:func:`configure_hub`) before any call: with it on,
  ``huggingface_hub`` 2.4.0 builds its user agent by fetching ``<HF_ENDPOINT at import>/api/agent-harnesses``
  (a request to huggingface.co even when we talk to a mirror) and caches it under ``HF_HOME``.
* Metadata timeout: ``HF_HUB_ETAG_TIMEOUT`` in seconds, else 10 s (:func:`metadata_timeout`).

Failures: :func:`classify_failure` sorts any exception from ``huggingface_hub`` or its HTTP transport
(``httpx2`` in huggingface_hub 2.4.0) into one :class:`FailureKind` (offline, timeout, unreachable,
gated, auth 401/403, repo / file / revision not found, other HTTP status, not a Hub, other) with the
HTTP status and a short scrubbed detail; :func:`guarded` runs a call and raises the family's error
with the message the family words for that failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from huggingface_hub import HfApi

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_METADATA_TIMEOUT_S = 10.0
DETAIL_CHARS = 300  # the most of a library message that goes into ours
AUTH_STATUSES = (401, 403)

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


# -- endpoint, token and hub settings ---------------------------------------------------------------


def resolve_endpoint(endpoint: str | None = None) -> str:
    """``endpoint``, else ``HF_ENDPOINT`` as set now, else the public Hub; without a trailing ``/``."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def token_from_env() -> str | None:
    """``HF_TOKEN`` without surrounding blanks; None when unset or blank."""
    token = os.environ.get("HF_TOKEN", "").strip()
    return token or None


def metadata_timeout() -> float:
    """Seconds to wait for a metadata answer: ``HF_HUB_ETAG_TIMEOUT`` when it is a number, else 10."""
    raw = os.environ.get("HF_HUB_ETAG_TIMEOUT", "").strip()
    try:
        return float(raw) if raw else DEFAULT_METADATA_TIMEOUT_S
    except ValueError:
        return DEFAULT_METADATA_TIMEOUT_S


def configure_hub() -> None:
    """Process-wide ``huggingface_hub`` settings; call before the first request of any piece of work."""
    from huggingface_hub import constants

    # Read per request by huggingface_hub; the env var alone is only seen at import time.
    constants.HF_HUB_DISABLE_TELEMETRY = True


def scrub_secret(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``."""
    return text.replace(secret, "***") if secret else text


@dataclass(frozen=True)
class HubAccess:
    """How one piece of work reaches the Hub: endpoint, token (never shown) and metadata timeout.

    Messages say :attr:`has_token`, never the token, and every message goes through :meth:`scrub`.
    """

    endpoint: str
    token: str | None = field(repr=False)
    metadata_timeout_s: float = DEFAULT_METADATA_TIMEOUT_S

    @classmethod
    def from_env(cls, endpoint: str | None = None, token: str | None = None) -> HubAccess:
        """Arguments first, then the environment as it is now (see the module doc)."""
        return cls(resolve_endpoint(endpoint), token or token_from_env(), metadata_timeout())

    @property
    def has_token(self) -> bool:
        return self.token is not None

    @property
    def library_token(self) -> str | bool:
        """The ``token=`` for huggingface_hub: ``False`` without a token, so no cached login is used."""
        return self.token if self.token is not None else False

    def scrub(self, text: str) -> str:
        return scrub_secret(text, self.token)

    def api(self) -> HfApi:
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.endpoint, token=self.library_token)


# -- what a failure means ---------------------------------------------------------------------------


class FailureKind(Enum):
    OFFLINE = "offline"  # HF_HUB_OFFLINE made the library refuse the call
    TIMEOUT = "timeout"  # the endpoint did not answer in time
    UNREACHABLE = "unreachable"  # no connection: refused, DNS, reset, ...
    GATED = "gated"  # the repo's conditions are not accepted by the token's account
    AUTH = "auth"  # HTTP 401 / 403
    REVISION_NOT_FOUND = "revision-not-found"  # HTTP 404 for the branch, tag or commit
    FILE_NOT_FOUND = "file-not-found"  # HTTP 404 for a path in an existing repo and revision
    REPO_NOT_FOUND = "repo-not-found"  # any other HTTP 404
    HTTP = "http"  # any other HTTP error status
    NOT_A_HUB = "not-a-hub"  # an answer without the Hub's metadata headers
    OTHER = "other"


@dataclass(frozen=True)
class HubFailure:
    kind: FailureKind
    status: int | None  # the HTTP status whenever the Hub answered with an error, whatever the kind
    detail: str  # "<exception type>: <first line>", scrubbed, at most DETAIL_CHARS
    network_detail: str = ""  # the same for the network error in the chain, "" when there is none


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes / contexts, outermost first, each once."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def short_detail(exc: BaseException, scrub: Callable[[str], str]) -> str:
    """``"<type>: <first non-blank line>"`` of ``exc``, scrubbed, at most :data:`DETAIL_CHARS`."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return scrub(text)[:DETAIL_CHARS]


def http_status(exc: BaseException) -> int | None:
    """The status of the Hub's error answer carried by ``exc``; None when there was no answer."""
    from huggingface_hub import errors

    if isinstance(exc, errors.HfHubHTTPError) and exc.response is not None:
        return exc.response.status_code
    return None


def classify_failure(exc: BaseException, scrub: Callable[[str], str]) -> HubFailure:
    """Sort ``exc`` (from huggingface_hub or its HTTP transport) into one :class:`HubFailure`."""
    import httpx2

    chain = exception_chain(exc)
    # ConnectError, ReadError, WriteError, CloseError; timeouts are sorted out before this.
    network = next((e for e in chain if isinstance(e, httpx2.NetworkError)), None)
    status = http_status(exc)
    return HubFailure(
        kind=_failure_kind(exc, chain, status),
        status=status,
        detail=short_detail(exc, scrub),
        network_detail=short_detail(network, scrub) if network is not None else "",
    )


def _failure_kind(exc: BaseException, chain: list[BaseException], status: int | None) -> FailureKind:
    import httpx2
    from huggingface_hub import errors

    if any(isinstance(e, errors.OfflineModeIsEnabled) for e in chain):
        return FailureKind.OFFLINE
    if any(isinstance(e, httpx2.TimeoutException) for e in chain):
        return FailureKind.TIMEOUT
    if any(isinstance(e, httpx2.NetworkError) for e in chain):
        return FailureKind.UNREACHABLE
    if isinstance(exc, errors.GatedRepoError):
        return FailureKind.GATED
    if status is not None:
        return _status_kind(exc, status)
    if isinstance(exc, errors.FileMetadataError):
        return FailureKind.NOT_A_HUB
    return FailureKind.OTHER


def _status_kind(exc: BaseException, status: int) -> FailureKind:
    from huggingface_hub import errors

    if status in AUTH_STATUSES:
        return FailureKind.AUTH
    if status != 404:
        return FailureKind.HTTP
    if isinstance(exc, errors.RevisionNotFoundError):
        return FailureKind.REVISION_NOT_FOUND
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return FailureKind.FILE_NOT_FOUND
    return FailureKind.REPO_NOT_FOUND


def guarded(
    call: Callable[[], T], access: HubAccess, describe: Callable[[HubFailure], str], error_type: type[E]
) -> T:
    """``call()``; any failure but an ``error_type`` becomes ``error_type(<describe(failure), scrubbed>)``.

    The new error chains nothing: the library's exception keeps the request, Authorization header included.
    """
    error: E
    try:
        return call()
    except error_type:
        raise
    except Exception as exc:
        error = error_type(access.scrub(describe(classify_failure(exc, access.scrub))))
    # Raised outside the handler, so neither __cause__ nor __context__ holds the library's exception.
    raise error


# -- repo operations --------------------------------------------------------------------------------


def list_files_under(api: Any, repo_id: str, prefix: str, *, repo_type: str) -> dict[str, Any] | None:
    """Files under ``prefix`` (path -> RepoFile), every page followed; {} when absent; None when no repo.

    Other failures propagate: run it under :func:`guarded`.
    """
    from huggingface_hub import errors
    from huggingface_hub.hf_api import RepoFile

    try:
        entries = api.list_repo_tree(repo_id, prefix, recursive=True, expand=True, repo_type=repo_type)
        return {e.path: e for e in entries if isinstance(e, RepoFile)}
    except errors.RepositoryNotFoundError:
        return None
    except errors.HfHubHTTPError as exc:
        if http_status(exc) == 404 and not isinstance(exc, errors.RevisionNotFoundError):
            return {}  # the repo exists, the path does not (yet)
        raise


def create_repo_unless_exists(api: Any, repo_id: str, *, repo_type: str, private: bool) -> bool:
    """True when created; False when it already exists (HTTP 409).  Other failures propagate."""
    from huggingface_hub import errors

    try:
        api.create_repo(repo_id, repo_type=repo_type, private=private)
    except errors.HfHubHTTPError as exc:
        if http_status(exc) == 409:
            return False
        raise
    return True


# -- reading one file of a repo at a revision ------------------------------------------------------------


class HubReadError(Exception):
    """A file could not be read from a repo; families catch it and raise their own error with its message."""


@dataclass(frozen=True)
class RepoAt:
    """A repo at one revision (branch, tag or commit sha), how to reach it, and what messages call it."""

    access: HubAccess
    repo_type: str  # "dataset" or "model", as huggingface_hub names them
    repo_id: str
    revision: str

    @property
    def endpoint(self) -> str:
        return self.access.endpoint

    @property
    def where(self) -> str:
        return f"{self.repo_type} repo {self.repo_id}"


_UNREACHABLE_FIX = "check network or use a local import"
_NOT_FOUND = (FailureKind.REVISION_NOT_FOUND, FailureKind.FILE_NOT_FOUND, FailureKind.REPO_NOT_FOUND)


def _auth_message(at: RepoAt, filename: str, status: int | None) -> str:
    where = f"{at.where} at {at.endpoint} (file {filename})"
    if at.access.has_token:
        return (
            f"HTTP {status}: the token in HF_TOKEN was rejected or cannot read {where}; "
            "set HF_TOKEN with read access to this repo"
        )
    return f"HTTP {status}: {where} requires authentication; set HF_TOKEN with read access"


def _not_found_message(kind: FailureKind, at: RepoAt, filename: str, missing_hint: str) -> str:
    if kind is FailureKind.REVISION_NOT_FOUND:
        return f"revision {at.revision!r} not found in {at.where} at {at.endpoint}; check the branch, tag or commit"
    if kind is FailureKind.FILE_NOT_FOUND:
        return f"{filename} not found in {at.where} at {at.endpoint} (revision {at.revision}); {missing_hint}"
    token_hint = (" or HF_TOKEN cannot read it" if at.access.has_token
                  else "; if it is private, set HF_TOKEN with read access")
    return (
        f"{at.where} not found at {at.endpoint} (HTTP 404) while fetching {filename}{token_hint}; check the repo id "
        f"and that it is a {at.repo_type} repo"
    )


def describe_read_failure(failure: HubFailure, at: RepoAt, filename: str, missing_hint: str) -> str:
    """One actionable message for a failed read of ``filename``; ``missing_hint`` says how to fix its absence."""
    kind, endpoint = failure.kind, at.endpoint
    if kind is FailureKind.OFFLINE:
        return f"HF_HUB_OFFLINE is set, cannot fetch {filename} from {endpoint}; unset it or use a local import"
    if kind is FailureKind.TIMEOUT:
        return f"cannot reach {endpoint}: no answer within {at.access.metadata_timeout_s:g} s; {_UNREACHABLE_FIX}"
    if kind is FailureKind.UNREACHABLE:
        return f"cannot reach {endpoint} ({failure.network_detail}); {_UNREACHABLE_FIX}"
    if kind is FailureKind.GATED:
        return (
            f"{at.where} is gated; accept its conditions on the Hub with the account whose "
            "token is in HF_TOKEN (set HF_TOKEN with read access)"
        )
    if kind is FailureKind.AUTH:
        return _auth_message(at, filename, failure.status)
    if kind in _NOT_FOUND:
        return _not_found_message(kind, at, filename, missing_hint)
    if kind is FailureKind.HTTP:
        return f"HTTP {failure.status} from {endpoint} while fetching {filename} from {at.repo_id}: {failure.detail}"
    if kind is FailureKind.NOT_A_HUB:
        return f"{endpoint} did not answer like a Hugging Face Hub for {filename} ({failure.detail}); check HF_ENDPOINT"
    return f"could not fetch {filename} from {at.where} at {endpoint}: {failure.detail}"


def guarded_read(call: Callable[[], T], at: RepoAt, filename: str, missing_hint: str) -> T:
    """``call()``, its failure raised as a :class:`HubReadError` worded for reading ``filename``."""
    return guarded(call, at.access, lambda f: describe_read_failure(f, at, filename, missing_hint), HubReadError)


@dataclass(frozen=True)
class FileFacts:
    """What the Hub announces for a file at a revision."""

    commit: str | None  # the commit sha the revision names (None when the endpoint sent none)
    etag: str | None  # the sha256 of an LFS file, the git blob sha1 of another
    size: int | None


def file_metadata(at: RepoAt, filename: str, missing_hint: str) -> FileFacts:
    """One quick metadata request for ``filename`` (no retries: an unreachable endpoint fails within the metadata
    timeout)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    access = at.access
    url = hf_hub_url(at.repo_id, filename, repo_type=at.repo_type, revision=at.revision, endpoint=access.endpoint)
    metadata = guarded_read(
        lambda: get_hf_file_metadata(url, token=access.library_token, timeout=access.metadata_timeout_s,
                                     endpoint=access.endpoint, retry_on_errors=False),
        at, filename, missing_hint,
    )
    return FileFacts(metadata.commit_hash or None, metadata.etag, metadata.size)


def pin_revision(at: RepoAt, filename: str, missing_hint: str) -> FileFacts:
    """The metadata of ``filename`` at ``at.revision``, with the commit sha that revision names now (read the repo
    at that commit from then on, so a push landing in between cannot mix two commits)."""
    facts = file_metadata(at, filename, missing_hint)
    if not facts.commit:
        raise HubReadError(
            f"{at.endpoint} sent no X-Repo-Commit header for {filename}; it does not look like a "
            "Hugging Face Hub endpoint, check HF_ENDPOINT"
        )
    return facts


def download_file(at: RepoAt, filename: str, cache_dir: Path, missing_hint: str) -> Path:
    """``filename`` of the repo at ``at.revision`` (a commit sha, for a reproducible read), into the
    huggingface_hub cache under ``cache_dir``."""
    from huggingface_hub import hf_hub_download

    access = at.access

    def call() -> str:
        return hf_hub_download(at.repo_id, filename, repo_type=at.repo_type, revision=at.revision,
                               cache_dir=cache_dir, endpoint=access.endpoint, token=access.library_token,
                               etag_timeout=access.metadata_timeout_s)

    return Path(guarded_read(call, at, filename, missing_hint))
