"""hf_source against the loopback Hub stand-in, through the real huggingface_hub client."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import tarfile
import time
import traceback
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_assets.rf100vl.datasets.hf_source import LOCK_FORMAT, HFSourceError, fetch_hf_dataset
from tests.hf_standin import DEFAULT_REPO_ID, hf_standin, isolate_hub_env

FAKE_TOKEN = "hf_FAKE-token-do-not-leak-0123456789abcdef"
DATASET = "aerial-cows"


def _tar_bytes(top: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in {
            "train/_annotations.coco.json": b'{"images": [], "annotations": [], "categories": []}',
            "train/img0.jpg": b"\xff\xd8\xff fake jpeg",
            "README.txt": b"tiny test dataset\n",
        }.items():
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mtime = len(data), 0  # fixed mtime keeps the sha deterministic
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _repo(
    tar: bytes, *, sha: str | None = None, size: int | None = None, version: object = 3
) -> dict[str, bytes]:
    lock = {
        "format": LOCK_FORMAT,
        "datasets": {
            DATASET: {
                "file": f"datasets/{DATASET}.tar",
                "sha256": sha or hashlib.sha256(tar).hexdigest(),
                "bytes": len(tar) if size is None else size,
                "version": version,
            },
            "boat-yards": {"file": "datasets/boat-yards.tar", "sha256": "0" * 64, "bytes": 1, "version": 1},
        },
    }
    return {"lock.json": json.dumps(lock).encode(), f"datasets/{DATASET}.tar": tar}


@pytest.fixture(autouse=True)
def _isolated_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from huggingface_hub import close_session

    isolate_hub_env(monkeypatch, tmp_path / "hf_home")
    yield
    close_session()


def _fetch(endpoint: str, cache: Path, name: str = DATASET, **kwargs: object):
    return fetch_hf_dataset(DEFAULT_REPO_ID, name, cache, endpoint=endpoint, **kwargs)


def _full_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


def test_happy_path_downloads_and_verifies(tmp_path: Path) -> None:
    tar = _tar_bytes(DATASET)
    # A cached login must not be picked up implicitly when HF_TOKEN is unset.
    token_file = tmp_path / "hf_home" / "token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text(FAKE_TOKEN)
    with hf_standin(_repo(tar)) as hub:
        got = _fetch(hub.endpoint, tmp_path / "cache")

    assert got.name == DATASET and got.repo_id == DEFAULT_REPO_ID
    assert got.sha256 == hashlib.sha256(tar).hexdigest()
    assert got.version == "3"
    assert got.revision == hub.commit
    assert got.tar_path.read_bytes() == tar
    assert got.tar_path.is_relative_to(tmp_path / "cache")
    with tarfile.open(got.tar_path) as archive:
        assert f"{DATASET}/train/_annotations.coco.json" in archive.getnames()
    assert hub.requests and not any(r.authorized for r in hub.requests)
    # Lock and tar are pinned to the commit resolved from the branch.
    assert hub.requests_for(f"/resolve/{hub.commit}/datasets/{DATASET}.tar", "GET")


def test_second_fetch_reuses_cached_tar(tmp_path: Path) -> None:
    with hf_standin(_repo(_tar_bytes(DATASET))) as hub:
        first = _fetch(hub.endpoint, tmp_path / "cache")
        second = _fetch(hub.endpoint, tmp_path / "cache")
    assert first == second
    assert len(hub.requests_for(f"datasets/{DATASET}.tar", "GET")) == 1


def test_string_version_and_revision_argument(tmp_path: Path) -> None:
    with hf_standin(_repo(_tar_bytes(DATASET), version="2024-05-01")) as hub:
        got = _fetch(hub.endpoint, tmp_path / "cache", revision=hub.commit)
    assert got.version == "2024-05-01" and got.revision == hub.commit


def test_endpoint_from_hf_endpoint_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with hf_standin(_repo(_tar_bytes(DATASET))) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint + "/")
        got = fetch_hf_dataset(DEFAULT_REPO_ID, DATASET, tmp_path / "cache")
    assert got.revision == hub.commit


def test_token_required_and_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(_repo(_tar_bytes(DATASET)), required_token=FAKE_TOKEN) as hub:
        got = _fetch(hub.endpoint, tmp_path / "cache")
    assert got.version == "3"
    assert hub.requests and all(r.authorized for r in hub.requests)


def test_token_required_but_missing(tmp_path: Path) -> None:
    with hf_standin(_repo(_tar_bytes(DATASET)), required_token=FAKE_TOKEN) as hub:
        with pytest.raises(HFSourceError, match="set HF_TOKEN with read access") as info:
            _fetch(hub.endpoint, tmp_path / "cache")
    assert "401" in str(info.value) and DEFAULT_REPO_ID in str(info.value)


def test_wrong_token_is_never_echoed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(_repo(_tar_bytes(DATASET)), required_token="hf_theRealOne") as hub:
        with pytest.raises(HFSourceError, match="HF_TOKEN") as info:
            _fetch(hub.endpoint, tmp_path / "cache")
    assert hub.requests[0].authorized
    assert FAKE_TOKEN not in _full_text(info.value)
    # The library's exception holds the request (Authorization included): it must not ride along.
    assert info.value.__cause__ is None and info.value.__context__ is None


@pytest.mark.parametrize("failure", ["unknown-name", "sha", "size", "no-lock", "unreachable"])
def test_token_absent_from_every_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    tar = _tar_bytes(DATASET)
    files = {
        "unknown-name": _repo(tar),
        "sha": _repo(tar, sha="a" * 64),
        "size": _repo(tar, size=len(tar) + 1),
        "no-lock": {f"datasets/{DATASET}.tar": tar},
        "unreachable": _repo(tar),
    }[failure]
    with hf_standin(files, required_token=FAKE_TOKEN) as hub:
        endpoint = _closed_port_endpoint() if failure == "unreachable" else hub.endpoint
        name = "nope" if failure == "unknown-name" else DATASET
        with pytest.raises(HFSourceError) as info:
            _fetch(endpoint, tmp_path / "cache", name=name)
    assert FAKE_TOKEN not in _full_text(info.value)


def test_unknown_dataset_lists_available(tmp_path: Path) -> None:
    with hf_standin(_repo(_tar_bytes(DATASET))) as hub:
        with pytest.raises(HFSourceError, match="'rooftops' is not in lock.json") as info:
            _fetch(hub.endpoint, tmp_path / "cache", name="rooftops")
    assert f"available: {DATASET}, boat-yards" in str(info.value)
    assert not hub.requests_for(".tar")


def test_sha_mismatch(tmp_path: Path) -> None:
    tar = _tar_bytes(DATASET)
    with hf_standin(_repo(tar, sha="ab" * 32)) as hub:
        with pytest.raises(HFSourceError) as info:
            _fetch(hub.endpoint, tmp_path / "cache")
    message = str(info.value)
    assert "SHA-256 mismatch" in message and f"datasets/{DATASET}.tar" in message
    assert "ab" * 32 in message and hashlib.sha256(tar).hexdigest() in message
    assert "the mirror is corrupt or the lock is stale; re-upload or fix lock.json" in message


def test_size_mismatch(tmp_path: Path) -> None:
    tar = _tar_bytes(DATASET)
    with hf_standin(_repo(tar, size=7)) as hub:
        with pytest.raises(HFSourceError, match=f"expects 7 bytes, got {len(tar)}"):
            _fetch(hub.endpoint, tmp_path / "cache")


@pytest.mark.parametrize(
    ("lock", "match"),
    [
        (b"{not json", "lock.json .* is unreadable"),
        (json.dumps({"format": "other.v0", "datasets": {}}).encode(), "has format 'other.v0'"),
        (json.dumps({"format": LOCK_FORMAT}).encode(), "has no 'datasets' mapping"),
        (
            json.dumps(
                {
                    "format": LOCK_FORMAT,
                    "datasets": {DATASET: {"file": "../x.tar", "sha256": "0" * 64, "bytes": 1, "version": 1}},
                }
            ).encode(),
            "invalid 'file'",
        ),
    ],
)
def test_bad_lock(tmp_path: Path, lock: bytes, match: str) -> None:
    with hf_standin({"lock.json": lock}) as hub:
        with pytest.raises(HFSourceError, match=match) as info:
            _fetch(hub.endpoint, tmp_path / "cache")
    assert "fix lock.json" in str(info.value)


def test_missing_lock_file(tmp_path: Path) -> None:
    with hf_standin({"README.md": b"hi"}) as hub:
        with pytest.raises(HFSourceError, match="lock.json not found in dataset repo .*upload lock.json"):
            _fetch(hub.endpoint, tmp_path / "cache")


def test_tar_listed_but_missing(tmp_path: Path) -> None:
    files = _repo(_tar_bytes(DATASET))
    del files[f"datasets/{DATASET}.tar"]
    with hf_standin(files) as hub:
        with pytest.raises(
            HFSourceError, match=f"datasets/{DATASET}.tar not found .*re-upload or fix lock.json"
        ):
            _fetch(hub.endpoint, tmp_path / "cache")


def test_repo_or_revision_not_found(tmp_path: Path) -> None:
    with hf_standin(_repo(_tar_bytes(DATASET))) as hub:
        with pytest.raises(HFSourceError, match="dataset repo org/other not found .*HTTP 404"):
            fetch_hf_dataset("org/other", DATASET, tmp_path / "cache", endpoint=hub.endpoint)
        with pytest.raises(HFSourceError, match="revision 'v9' not found"):
            _fetch(hub.endpoint, tmp_path / "cache", revision="v9")


def _closed_port_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_unreachable_endpoint_fails_fast(tmp_path: Path) -> None:
    endpoint = _closed_port_endpoint()
    start = time.monotonic()
    with pytest.raises(HFSourceError) as info:
        _fetch(endpoint, tmp_path / "cache")
    assert time.monotonic() - start < 15
    assert f"cannot reach {endpoint}" in str(info.value)
    assert "check network or use a local import" in str(info.value)


def test_silent_endpoint_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "0.2")
    with socket.socket() as listener:  # accepts TCP connections (backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(HFSourceError, match="no answer within 0.2 s; check network or use a local import"):
            _fetch(endpoint, tmp_path / "cache")
    assert time.monotonic() - start < 10


def test_cdn_redirect_drops_authorization(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    tar = _tar_bytes(DATASET)
    with hf_standin(_repo(tar), required_token=FAKE_TOKEN, cdn_redirect=True) as hub:
        got = _fetch(hub.endpoint, tmp_path / "cache")
    assert got.tar_path.read_bytes() == tar
    cdn = hub.requests_for("/cdn/", "GET")
    assert len(cdn) == 1 and not cdn[0].authorized and cdn[0].host.startswith("localhost:")
    assert all(r.authorized for r in hub.requests if "/cdn/" not in r.path)


def test_listing_paginates(tmp_path: Path) -> None:
    from huggingface_hub import HfApi

    files = {f"datasets/ds{i:02d}.tar": bytes([i]) * (i + 1) for i in range(24)} | {"lock.json": b"{}"}
    with hf_standin(files, page_size=10) as hub:
        api = HfApi(endpoint=hub.endpoint, token=False)
        listed = api.list_repo_files(DEFAULT_REPO_ID, repo_type="dataset")
        pages = [r.path for r in hub.requests_for("/tree/main")]
        top = [e.path for e in api.list_repo_tree(DEFAULT_REPO_ID, repo_type="dataset")]
        sub = list(api.list_repo_tree(DEFAULT_REPO_ID, "datasets", repo_type="dataset"))
        info = api.dataset_info(DEFAULT_REPO_ID, files_metadata=True)
    assert sorted(listed) == sorted(files)
    # 25 files + the 'datasets' folder entry = 26 entries -> 3 pages, following the Link cursor.
    assert len(pages) == 3 and pages[1].endswith("cursor=10") and pages[2].endswith("cursor=20")
    assert top == ["datasets", "lock.json"]
    assert (
        len(sub) == 24 and sub[0].lfs is not None and sub[0].lfs.sha256 == hashlib.sha256(b"\x00").hexdigest()
    )
    assert info.sha == hub.commit and len(info.siblings or []) == 25


def test_standin_serves_ranges() -> None:
    with hf_standin({"a.bin": b"0123456789"}) as hub:
        url = f"{hub.endpoint}/datasets/{DEFAULT_REPO_ID}/resolve/main/a.bin"
        request = urllib.request.Request(url, headers={"Range": "bytes=4-"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 206 and response.read() == b"456789"
            assert response.headers["Content-Range"] == "bytes 4-9/10"


def test_standin_serves_files_from_disk(tmp_path: Path) -> None:
    from huggingface_hub import hf_hub_download

    (tmp_path / "repo" / "datasets").mkdir(parents=True)
    (tmp_path / "repo" / "datasets" / "x.tar").write_bytes(b"tar bytes")
    with hf_standin(tmp_path / "repo") as hub:
        path = hf_hub_download(
            DEFAULT_REPO_ID,
            "datasets/x.tar",
            repo_type="dataset",
            endpoint=hub.endpoint,
            cache_dir=tmp_path / "cache",
            token=False,
        )
    assert Path(path).read_bytes() == b"tar bytes"
