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
