"""Loopback stand-in for the parts of the Hugging Face Hub HTTP API that our code uses.

Tests run the real ``huggingface_hub`` client (2.4.0) against this server on 127.0.0.1, so the
protocol details below follow what that client reads, not the Hub's full API:

* ``HEAD|GET /datasets/{repo}/resolve/{revision}/{path}`` -- ``hf_hub_download`` sends a HEAD
  first and needs ``X-Repo-Commit`` (else it refuses the endpoint), an ``ETag`` (the cache key)
  and ``Content-Length``; then it GETs the same URL (or the redirect target) and may send
  ``Range: bytes=N-`` to resume.  LFS-style files carry the sha256 as ETag, other files the git
  blob sha1, like the Hub.  With ``cdn_redirect=True`` LFS files answer 302 to a different origin
  (``localhost`` instead of ``127.0.0.1``) with ``X-Linked-Etag``/``X-Linked-Size``, which is what
  makes the client drop the Authorization header, as it does for the Hub's CDN.
* ``GET /api/datasets/{repo}/tree/{revision}[/{path}]?recursive=&expand=`` -- used by
  ``HfApi.list_repo_tree``/``list_repo_files``; paginated with ``Link: <absolute url>; rel="next"``
  (the client requests that URL verbatim, so it must be absolute).
* ``GET /api/datasets/{repo}[/revision/{revision}]`` -- repo info (``HfApi.dataset_info``).

Errors use the Hub's ``X-Error-Code`` header because the client maps exceptions from it
(``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``).  The repo has a single commit whose
sha is derived from the content; revision ``main`` or that sha are accepted.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

DEFAULT_REPO_ID = "org/rf100vl-mirror"
DEFAULT_LFS_GLOBS = ("*.tar", "*.tar.gz", "*.zip", "*.parquet")
_LFS_POINTER_SIZE = 134  # size of a git-lfs pointer file; the client only stores it
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # path and query, as received
    authorized: bool  # an Authorization header was present (its value is never recorded)
    host: str


@dataclass(frozen=True)
class _Blob:
    data: bytes
    git_oid: str
    sha256: str
    lfs: bool


def _git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class HubStandIn:
    repo_id: str
    files: dict[str, _Blob]
    commit: str
    page_size: int
    required_token: str | None
    cdn_redirect: bool
    port: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdn_endpoint(self) -> str:
        # A different origin for the client even though it is the same socket.
        return f"http://localhost:{self.port}"

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def requests_for(self, fragment: str, method: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if fragment in r.path and method in (None, r.method)]


def _load_files(files: Mapping[str, bytes | Path] | Path) -> dict[str, bytes]:
    if isinstance(files, Path):
        return {
            p.relative_to(files).as_posix(): p.read_bytes() for p in sorted(files.rglob("*")) if p.is_file()
        }
    # Read once up front: the served repo is an immutable single commit.
    return {
        path: data.read_bytes() if isinstance(data, Path) else bytes(data) for path, data in files.items()
    }


def _make_repo(files: Mapping[str, bytes], lfs_globs: tuple[str, ...]) -> tuple[dict[str, _Blob], str]:
    blobs: dict[str, _Blob] = {}
    digest = hashlib.sha1()
    for path in sorted(files):
        data = files[path]
        if path.startswith("/") or not path or ".." in path.split("/"):
            raise ValueError(f"bad path in repo: {path!r}")
        blob = _Blob(
            data=data,
            git_oid=_git_blob_oid(data),
            sha256=hashlib.sha256(data).hexdigest(),
            lfs=any(fnmatch.fnmatch(path, g) for g in lfs_globs),
        )
        blobs[path] = blob
        digest.update(path.encode() + b"\0" + blob.git_oid.encode())
    return blobs, digest.hexdigest()


def _split_repo_path(segments: list[str]) -> tuple[str, list[str]] | None:
    """``['org', 'name', rest...]`` -> (repo_id, rest); repo ids on the Hub are always namespaced."""
    if len(segments) < 2:
        return None
    return f"{segments[0]}/{segments[1]}", segments[2:]


class _Handler(BaseHTTPRequestHandler):
    server_version = "hf-standin/1"
    protocol_version = "HTTP/1.1"  # keep-alive, as the real client pools connections
    hub: HubStandIn  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean; the request record is the log

    # -- plumbing -------------------------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch(send_body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch(send_body=True)

    def _dispatch(self, send_body: bool) -> None:
        self.hub.record(
            RecordedRequest(
                method=self.command,
                path=self.path,
                authorized=self.headers.get("Authorization") is not None,
                host=self.headers.get("Host", ""),
            )
        )
        url = urlsplit(self.path)
        # Split before unquoting: the client percent-encodes '/' inside revisions and tree paths.
        segments = [unquote(s) for s in url.path.split("/")[1:]]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if segments[:1] == ["cdn"] and len(segments) == 2:
            self._serve_cdn(segments[1], send_body)
            return
        if not self._authorized(send_body):
            return
        if segments[:1] == ["datasets"]:
            self._serve_resolve(segments[1:], send_body)
        elif segments[:2] == ["api", "datasets"] and send_body:
            self._serve_api(segments[2:], query)
        else:
            self._error(HTTPStatus.NOT_FOUND, None, "no such route in the stand-in", send_body)

    def _authorized(self, send_body: bool) -> bool:
        required = self.hub.required_token
        if required is None:
            return True
        sent = self.headers.get("Authorization")
        if sent is None:
            # The Hub hides private repos from anonymous callers behind 401 + RepoNotFound.
            self._error(HTTPStatus.UNAUTHORIZED, "RepoNotFound", "Invalid username or password.", send_body)
            return False
        if sent != f"Bearer {required}":
            self._error(
                HTTPStatus.UNAUTHORIZED, None, "Invalid credentials in Authorization header", send_body
            )
            return False
        return True

    def _send(self, status: int, headers: Mapping[str, str], body: bytes, send_body: bool) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)

    def _error(self, status: int, code: str | None, message: str, send_body: bool) -> None:
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code is not None:
            headers["X-Error-Code"] = code
        if code == "EntryNotFound":
            headers["X-Repo-Commit"] = self.hub.commit
        self._send(status, headers, json.dumps({"error": message}).encode(), send_body)

    def _json(self, payload: Any, extra: Mapping[str, str] | None = None) -> None:
        headers = {"Content-Type": "application/json", **(extra or {})}
        self._send(HTTPStatus.OK, headers, json.dumps(payload).encode(), True)

    def _check_repo_and_revision(self, repo_id: str, revision: str, send_body: bool) -> bool:
        if repo_id != self.hub.repo_id:
            self._error(HTTPStatus.NOT_FOUND, "RepoNotFound", "Repository not found", send_body)
            return False
        if revision not in ("main", self.hub.commit):
            self._error(HTTPStatus.NOT_FOUND, "RevisionNotFound", "Invalid rev id: " + revision, send_body)
            return False
        return True

    # -- file resolution ------------------------------------------------------------------------

    def _serve_resolve(self, segments: list[str], send_body: bool) -> None:
        split = _split_repo_path(segments)
        if split is None or len(split[1]) < 3 or split[1][0] != "resolve":
            self._error(HTTPStatus.NOT_FOUND, None, "bad resolve url", send_body)
            return
        repo_id, rest = split
        revision, path = rest[1], "/".join(rest[2:])
        if not self._check_repo_and_revision(repo_id, revision, send_body):
            return
        blob = self.hub.files.get(path)
        if blob is None:
            self._error(HTTPStatus.NOT_FOUND, "EntryNotFound", f"{path} does not exist", send_body)
            return
        common = {"X-Repo-Commit": self.hub.commit}
        if blob.lfs and self.hub.cdn_redirect:
            headers = {
                **common,
                "Location": f"{self.hub.cdn_endpoint}/cdn/{blob.sha256}",
                "X-Linked-Etag": f'"{blob.sha256}"',
                "X-Linked-Size": str(len(blob.data)),
                "ETag": f'"{blob.git_oid}"',
            }
            self._send(HTTPStatus.FOUND, headers, b"", send_body)
            return
        etag = blob.sha256 if blob.lfs else blob.git_oid
        self._send_bytes(blob.data, {**common, "ETag": f'"{etag}"'}, send_body)

    def _serve_cdn(self, sha256: str, send_body: bool) -> None:
        blob = next((b for b in self.hub.files.values() if b.sha256 == sha256), None)
        if blob is None:
            self._error(HTTPStatus.NOT_FOUND, None, "no such blob", send_body)
            return
        self._send_bytes(blob.data, {"ETag": f'"{sha256}"'}, send_body)

    def _send_bytes(self, data: bytes, headers: dict[str, str], send_body: bool) -> None:
        headers = {**headers, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        match = _RANGE.match(self.headers.get("Range", "").strip())
        if match is None or (not match.group(1) and not match.group(2)):
            self._send(HTTPStatus.OK, headers, data, send_body)
            return
        start_s, end_s = match.groups()
        if start_s:
            start, end = int(start_s), int(end_s) if end_s else len(data) - 1
        else:  # suffix range: last N bytes
            start, end = max(len(data) - int(end_s), 0), len(data) - 1
        if start >= len(data):
            self._send(
                HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE,
                {"Content-Range": f"bytes */{len(data)}"},
                b"",
                send_body,
            )
            return
        end = min(end, len(data) - 1)
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        self._send(HTTPStatus.PARTIAL_CONTENT, headers, data[start : end + 1], send_body)

    # -- JSON API -------------------------------------------------------------------------------

    def _serve_api(self, segments: list[str], query: dict[str, str]) -> None:
        split = _split_repo_path(segments)
        if split is None:
            self._error(HTTPStatus.NOT_FOUND, None, "bad api url", True)
            return
        repo_id, rest = split
        if not rest:
            self._repo_info(repo_id, "main", query)
        elif rest[0] == "revision" and len(rest) == 2:
            self._repo_info(repo_id, rest[1], query)
        elif rest[0] == "tree" and len(rest) >= 2:
            self._tree(repo_id, rest[1], "/".join(rest[2:]).strip("/"), query)
        else:
            self._error(HTTPStatus.NOT_FOUND, None, "no such api route in the stand-in", True)

    def _repo_info(self, repo_id: str, revision: str, query: dict[str, str]) -> None:
        if not self._check_repo_and_revision(repo_id, revision, True):
            return
        with_blobs = query.get("blobs", "").lower() == "true"
        siblings = []
        for path, blob in sorted(self.hub.files.items()):
            sibling: dict[str, Any] = {"rfilename": path}
            if with_blobs:
                sibling.update(size=len(blob.data), blobId=blob.git_oid)
                if blob.lfs:
                    sibling["lfs"] = {
                        "sha256": blob.sha256,
                        "size": len(blob.data),
                        "pointerSize": _LFS_POINTER_SIZE,
                    }
            siblings.append(sibling)
        self._json(
            {
                "_id": self.hub.commit[:24],
                "id": repo_id,
                "author": repo_id.split("/")[0],
                "sha": self.hub.commit,
                "private": self.hub.required_token is not None,
                "gated": False,
                "disabled": False,
                "tags": [],
                "siblings": siblings,
            }
        )

    def _tree_entries(self, prefix: str, recursive: bool) -> list[dict[str, Any]] | None:
        base = f"{prefix}/" if prefix else ""
        files = {p: b for p, b in self.hub.files.items() if p.startswith(base)}
        if prefix and not files:
            return None
        dirs: set[str] = set()
        entries: list[dict[str, Any]] = []
        for path, blob in files.items():
            parts = path[len(base) :].split("/")
            # Every ancestor directory below the prefix is an entry of its own, as on the Hub.
            for depth in range(1, len(parts)):
                dirs.add(base + "/".join(parts[:depth]))
            if recursive or len(parts) == 1:
                entry: dict[str, Any] = {
                    "type": "file",
                    "oid": blob.git_oid,
                    "size": len(blob.data),
                    "path": path,
                }
                if blob.lfs:
                    entry["lfs"] = {
                        "oid": blob.sha256,
                        "size": len(blob.data),
                        "pointerSize": _LFS_POINTER_SIZE,
                    }
                entries.append(entry)
        for directory in dirs:
            if recursive or "/" not in directory[len(base) :]:
                oid = hashlib.sha1(directory.encode()).hexdigest()
                entries.append({"type": "directory", "oid": oid, "size": 0, "path": directory})
        # The Hub's order is unspecified; a stable order keeps the cursor meaningful across pages.
        return sorted(entries, key=lambda e: e["path"])

    def _tree(self, repo_id: str, revision: str, prefix: str, query: dict[str, str]) -> None:
        if not self._check_repo_and_revision(repo_id, revision, True):
            return
        entries = self._tree_entries(prefix, query.get("recursive", "").lower() == "true")
        if entries is None:
            self._error(HTTPStatus.NOT_FOUND, "EntryNotFound", f"{prefix} does not exist", True)
            return
        start = int(query.get("cursor", "0") or 0)
        page = entries[start : start + self.hub.page_size]
        extra: dict[str, str] = {}
        if start + self.hub.page_size < len(entries):
            next_query = {k: v for k, v in query.items() if k != "cursor"}
            next_query["cursor"] = str(start + self.hub.page_size)
            path_part = urlsplit(self.path).path  # keep the client's own encoding of the path
            extra["Link"] = f'<{self.hub.endpoint}{path_part}?{urlencode(next_query)}>; rel="next"'
        self._json(page, extra)


@contextmanager
def hf_standin(
    files: Mapping[str, bytes | Path] | Path,
    repo_id: str = DEFAULT_REPO_ID,
    required_token: str | None = None,
    page_size: int = 1000,
    *,
    cdn_redirect: bool = False,
    lfs_globs: tuple[str, ...] = DEFAULT_LFS_GLOBS,
) -> Iterator[HubStandIn]:
    """Serve ``files`` as dataset repo ``repo_id`` until the block exits.

    ``files`` is ``{path_in_repo: bytes or a Path to read}`` or a folder on disk (served as the repo root).
    ``required_token`` makes every repo route answer 401 unless ``Authorization: Bearer <token>`` is sent;
    ``page_size`` is the tree listing page size; ``cdn_redirect`` sends LFS files through a 302 to a
    second origin, like the Hub's CDN; ``lfs_globs`` picks which paths count as LFS files.

    Yields the :class:`HubStandIn`; point the client at ``.endpoint`` and inspect ``.requests``.
    """
    if page_size < 1:
        raise ValueError("page_size must be >= 1")
    blobs, commit = _make_repo(_load_files(files), lfs_globs)
    hub = HubStandIn(
        repo_id=repo_id,
        files=blobs,
        commit=commit,
        page_size=page_size,
        required_token=required_token,
        cdn_redirect=cdn_redirect,
    )
    handler = type("_BoundHandler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    hub.port = server.server_address[1]
    # A short poll interval keeps shutdown (and so every test using the stand-in) fast.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="hf-standin", daemon=True
    )
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
