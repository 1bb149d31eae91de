"""The shared Hugging Face client layer (bench_assets/platform/hf.py) against the loopback Hub stand-in.

Failures are real ones: the real huggingface_hub client talking to tests/hf_standin.py, a closed port or a
listener that never answers; only the "other HTTP status" and "not a Hub" cases use constructed library
exceptions, because the stand-in has no route that answers that way.
"""

from __future__ import annotations

import socket
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench_assets.platform import hf
from bench_assets.platform.hf import FailureKind, HubAccess, HubFailure
from tests.hf_standin import DEFAULT_REPO_ID, hf_standin, isolate_hub_env

FAKE_TOKEN = "hf_FAKE-platform-token-do-not-leak-0123456789"


class FamilyError(Exception):
    """Stands for a family's own error class (HFSourceError, PublishError)."""


@pytest.fixture(autouse=True)
def _isolated_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from huggingface_hub import close_session

    isolate_hub_env(monkeypatch, tmp_path / "hf_home")
    yield
    close_session()


def _metadata(access: HubAccess, path: str, repo_id: str = DEFAULT_REPO_ID, revision: str = "main") -> object:
    """One metadata request for ``path``, as the families make it: no retries, the access's timeout."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(repo_id, path, repo_type="dataset", revision=revision, endpoint=access.endpoint)
    return get_hf_file_metadata(
        url,
        token=access.library_token,
        timeout=access.metadata_timeout_s,
        endpoint=access.endpoint,
        retry_on_errors=False,
    )


def _failure_of(call: Callable[[], object], access: HubAccess) -> HubFailure:
    with pytest.raises(Exception) as info:
        call()
    return hf.classify_failure(info.value, access.scrub)


def _everything(failure: HubFailure) -> str:
    """A wording that puts every field of the failure into the message."""
    return f"{failure.kind.value} status={failure.status} detail={failure.detail} network={failure.network_detail}"


def _guarded_error(call: Callable[[], object], access: HubAccess, describe=_everything) -> FamilyError:
    with pytest.raises(FamilyError) as info:
        hf.guarded(call, access, describe, FamilyError)
    return info.value


def _full_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


def _closed_port_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# -- endpoint, token, settings ---------------------------------------------------------------------


def test_endpoint_token_and_timeout_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    access = HubAccess.from_env()
    assert access.endpoint == "https://huggingface.co" and access.token is None
    assert access.library_token is False and not access.has_token  # never a cached login
    assert access.metadata_timeout_s == 10.0

    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example:8080/")
    monkeypatch.setenv("HF_TOKEN", f"  {FAKE_TOKEN}\n")
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2.5")
    access = HubAccess.from_env()
    assert access.endpoint == "http://mirror.example:8080"
    assert access.token == FAKE_TOKEN and access.library_token == FAKE_TOKEN and access.has_token
    assert access.metadata_timeout_s == 2.5
    assert FAKE_TOKEN not in repr(access)

    explicit = HubAccess.from_env("http://other.example", "hf_argument")
    assert explicit.endpoint == "http://other.example" and explicit.token == "hf_argument"
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "soon")
    monkeypatch.setenv("HF_TOKEN", "   ")
    blank = HubAccess.from_env()
    assert blank.metadata_timeout_s == 10.0 and blank.token is None


def test_configure_hub_switches_telemetry_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", False)
    hf.configure_hub()
    assert constants.HF_HUB_DISABLE_TELEMETRY is True


# -- translation of real failures -------------------------------------------------------------------


def test_rejected_token_is_auth_401(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin({"lock.json": b"{}"}, required_token="hf_theRealOne") as hub:
        access = HubAccess.from_env(hub.endpoint)
        failure = _failure_of(lambda: _metadata(access, "lock.json"), access)
    assert failure.kind is FailureKind.AUTH and failure.status == 401
    assert failure.network_detail == ""


def test_missing_token_is_auth_401() -> None:
    with hf_standin({"lock.json": b"{}"}, required_token=FAKE_TOKEN) as hub:
        access = HubAccess.from_env(hub.endpoint)
        failure = _failure_of(lambda: _metadata(access, "lock.json"), access)
        assert not any(r.authorized for r in hub.requests)
    assert failure.kind is FailureKind.AUTH and failure.status == 401


def test_not_found_tells_repo_from_file_from_revision() -> None:
    with hf_standin({"lock.json": b"{}"}) as hub:
        access = HubAccess.from_env(hub.endpoint)
        repo = _failure_of(lambda: _metadata(access, "lock.json", repo_id="org/other"), access)
        file = _failure_of(lambda: _metadata(access, "datasets/absent.tar"), access)
        revision = _failure_of(lambda: _metadata(access, "lock.json", revision="v9"), access)
    assert (repo.kind, repo.status) == (FailureKind.REPO_NOT_FOUND, 404)
    assert (file.kind, file.status) == (FailureKind.FILE_NOT_FOUND, 404)
    assert (revision.kind, revision.status) == (FailureKind.REVISION_NOT_FOUND, 404)
    assert repo.detail.startswith("RepositoryNotFoundError: ")


def test_closed_port_is_unreachable_with_its_network_cause() -> None:
    endpoint = _closed_port_endpoint()
    access = HubAccess.from_env(endpoint)
    failure = _failure_of(lambda: _metadata(access, "lock.json"), access)
    assert failure.kind is FailureKind.UNREACHABLE and failure.status is None
    assert failure.network_detail.startswith("ConnectError: ")


def test_silent_endpoint_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "0.2")  # read as a float (huggingface_hub itself reads whole seconds)
    with socket.socket() as listener:  # accepts TCP connections (backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        access = HubAccess.from_env(f"http://127.0.0.1:{listener.getsockname()[1]}")
        failure = _failure_of(lambda: _metadata(access, "lock.json"), access)
    assert failure.kind is FailureKind.TIMEOUT and access.metadata_timeout_s == 0.2


def test_offline_mode_is_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    with hf_standin({"lock.json": b"{}"}) as hub:
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        access = HubAccess.from_env(hub.endpoint)
        failure = _failure_of(lambda: _metadata(access, "lock.json"), access)
        assert hub.requests == []
    assert failure.kind is FailureKind.OFFLINE


def test_other_status_not_a_hub_and_anything_else() -> None:
    import httpx2
    from huggingface_hub import errors

    access = HubAccess("http://127.0.0.1:9", None)
    response = httpx2.Response(503, request=httpx2.Request("GET", "http://127.0.0.1:9/api/x"))
    busy = hf.classify_failure(errors.HfHubHTTPError("503 Service Unavailable\nretry later", response=response),
                               access.scrub)
    assert (busy.kind, busy.status) == (FailureKind.HTTP, 503)
    assert busy.detail == "HfHubHTTPError: 503 Service Unavailable"
    odd = hf.classify_failure(errors.FileMetadataError("no X-Repo-Commit"), access.scrub)
    assert odd.kind is FailureKind.NOT_A_HUB and odd.status is None
    other = hf.classify_failure(ValueError("x" * 1000), access.scrub)
    assert other.kind is FailureKind.OTHER and len(other.detail) == hf.DETAIL_CHARS


def test_exception_chain_follows_causes_and_stops_at_a_loop() -> None:
    outer, middle, inner = RuntimeError("outer"), OSError("middle"), ValueError("inner")
    outer.__cause__, middle.__context__, inner.__context__ = middle, inner, outer
    assert hf.exception_chain(outer) == [outer, middle, inner]


# -- guarded ----------------------------------------------------------------------------------------


def test_guarded_returns_the_value_and_lets_the_family_error_through() -> None:
    access = HubAccess("http://127.0.0.1:9", None)
    assert hf.guarded(lambda: 42, access, _everything, FamilyError) == 42
    original = FamilyError("already worded")

    def fail() -> None:
        raise original

    assert _guarded_error(fail, access) is original


def test_guarded_words_the_failure_and_chains_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin({"lock.json": b"{}"}, required_token="hf_theRealOne") as hub:
        access = HubAccess.from_env(hub.endpoint)
        error = _guarded_error(lambda: _metadata(access, "lock.json"), access)
    assert str(error).startswith("auth status=401 detail=")
    # The library's exception holds the request, Authorization header included.
    assert error.__cause__ is None and error.__context__ is None


@pytest.mark.parametrize("failure", ["rejected", "repo-404", "file-404", "unreachable"])
def test_token_from_the_environment_never_appears(monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    required = "hf_theRealOne" if failure == "rejected" else FAKE_TOKEN
    with hf_standin({"lock.json": b"{}"}, required_token=required) as hub:
        endpoint = _closed_port_endpoint() if failure == "unreachable" else hub.endpoint
        access = HubAccess.from_env(endpoint)
        repo_id = "org/other" if failure == "repo-404" else DEFAULT_REPO_ID
        path = "absent.tar" if failure == "file-404" else "lock.json"

        def call() -> object:
            return _metadata(access, path, repo_id=repo_id)

        failure_seen = _failure_of(call, access)
        # A careless wording that echoes the token itself is scrubbed too.
        error = _guarded_error(call, access, lambda f: f"{_everything(f)} token={access.token}")
    assert FAKE_TOKEN not in repr(failure_seen)
    assert FAKE_TOKEN not in _full_text(error) and "token=***" in str(error)


# -- repo operations --------------------------------------------------------------------------------


def test_listing_and_creating_a_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN) as hub:
        access = HubAccess.from_env(hub.endpoint)
        api = access.api()
        assert hf.list_files_under(api, DEFAULT_REPO_ID, "m/run", repo_type="dataset") is None
        assert hf.create_repo_unless_exists(api, DEFAULT_REPO_ID, repo_type="dataset", private=True) is True
        assert hf.create_repo_unless_exists(api, DEFAULT_REPO_ID, repo_type="dataset", private=True) is False
        assert hf.list_files_under(api, DEFAULT_REPO_ID, "m/run", repo_type="dataset") == {}
        api.upload_file(path_or_fileobj=b"{}", path_in_repo="m/run/a.json", repo_id=DEFAULT_REPO_ID,
                        repo_type="dataset")
        listed = hf.list_files_under(api, DEFAULT_REPO_ID, "m/run", repo_type="dataset")
    assert listed is not None and sorted(listed) == ["m/run/a.json"] and listed["m/run/a.json"].size == 2


def test_the_stand_in_clients_share_one_tls_context_that_still_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    """isolate_hub_env's clients reuse httpcore2's default context instead of building it per test: the same object
    for the same setting, a new one when SSL_CERT_FILE changes, and as strict as the library's own."""
    import ssl

    import httpcore2
    from httpcore2._ssl import default_ssl_context

    from tests.hf_standin import _one_ssl_context_per_setting

    assert httpcore2.default_ssl_context is _one_ssl_context_per_setting  # the autouse fixture installed it
    ctx = _one_ssl_context_per_setting()
    assert _one_ssl_context_per_setting() is ctx
    own = default_ssl_context()
    assert (ctx.verify_mode, ctx.check_hostname) == (own.verify_mode, own.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert ctx.cert_store_stats() == own.cert_store_stats()
    monkeypatch.setenv("SSL_CERT_FILE", ssl.get_default_verify_paths().openssl_cafile)
    assert _one_ssl_context_per_setting() is not ctx
