"""Loopback stand-in for the parts of the Hugging Face Hub HTTP API that our code uses.

Tests run the real ``huggingface_hub`` client (2.4.0) against this server on 127.0.0.1, so the
protocol details below follow what that client reads and sends, not the Hub's full API.

Reading:

* ``HEAD|GET /datasets/{repo}/resolve/{revision}/{path}`` (a model repo: ``/{repo}/resolve/...``, its API
  under ``/api/models/``) -- ``hf_hub_download`` sends a HEAD
  first and needs ``X-Repo-Commit`` (else it refuses the endpoint), an ``ETag`` (the cache key)
  and ``Content-Length``; then it GETs the same URL (or the redirect target) and may send
  ``Range: bytes=N-`` to resume.  LFS-style files carry the sha256 as ETag, other files the git
  blob sha1, like the Hub.  With ``cdn_redirect=True`` LFS files answer 302 to a different origin
  (``localhost`` instead of ``127.0.0.1``) with ``X-Linked-Etag``/``X-Linked-Size``, which is what
  makes the client drop the Authorization header, as it does for the Hub's CDN.
* ``GET /api/datasets/{repo}/tree/{revision}[/{path}]?recursive=&expand=`` -- used by
  ``HfApi.list_repo_tree``/``list_repo_files``; paginated with ``Link: <absolute url>; rel="next"``
  (the client requests that URL verbatim, so it must be absolute).  ``expand=true`` adds each
  file's ``lastCommit`` and, like the Hub, caps the page at ``expand_page_size`` (50) entries.
* ``GET /api/datasets/{repo}[/revision/{revision}]`` -- repo info (``HfApi.dataset_info``).

Writing (``HfApi.create_repo`` / ``create_commit`` / ``upload_folder`` over the legacy LFS path;
Xet uploads are not emulated, so tests set ``HF_HUB_DISABLE_XET``, see :func:`isolate_hub_env`):

* ``POST /api/repos/create`` -- creates the one repo this stand-in serves (``repo_exists=False``
  starts without it); 409 when it exists.  A new repo gets an initial commit with ``.gitattributes``.
* ``POST /api/datasets/{repo}/preupload/{revision}`` -- answers ``uploadMode`` per file: ``lfs``
  when the path matches ``lfs_globs`` (``*.pt``, ``*.gz``, ... as in the Hub's default
  ``.gitattributes``) or the file is 10 MiB or more, else ``regular``; plus the ``oid`` of the file
  already at that path (sha256 for LFS, git blob sha1 otherwise), which the client uses to drop
  unchanged files from a commit.
* ``POST /datasets/{repo}.git/info/lfs/objects/batch`` -- the git-lfs batch API; objects already
  stored get no ``actions``, others an ``upload`` href on the second origin (like a presigned
  storage URL, so the client sends it no Authorization) and a ``verify`` href.
* ``PUT /lfs-objects/{sha256}`` stores a blob (400 when the body does not hash to the oid);
  ``POST /lfs-verify/{sha256}`` answers 200 once it is stored with the announced size.
* ``POST /api/datasets/{repo}/commit/{revision}`` -- NDJSON: a ``header`` line, then ``file``
  (base64), ``lfsFile`` (must be stored already), ``deletedFile`` / ``deletedFolder`` lines; honours
  ``parentCommit`` (412 when stale).  Fault injection for tests: paths matching ``drop_globs`` are
  silently left out of the commit (an uploader that "skips" files while reporting success) and
  paths matching ``corrupt_globs`` are stored with their last byte flipped (same size, other hash).

Every write needs an ``Authorization`` header (and the exact ``required_token`` when one is set),
except the storage PUT, which is authorized by its URL as on the Hub.  Errors use the Hub's
``X-Error-Code`` header because the client maps exceptions from it (``RepoNotFound``,
``RevisionNotFound``, ``EntryNotFound``).  Revision ``main`` is the head; any commit sha this
stand-in produced is served as the snapshot of that commit.
"""

from __future__ import annotations

import base64
import datetime as dt
import fnmatch
import functools
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

DEFAULT_REPO_ID = "org/rf100vl-mirror"
# A subset of the Hub's default .gitattributes LFS patterns.
DEFAULT_LFS_GLOBS = ("*.tar", "*.tar.gz", "*.gz", "*.zip", "*.parquet", "*.pt", "*.pth", "*.bin", "*.safetensors")
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024  # the Hub sends files of 10 MiB or more to LFS whatever their name
EXPAND_PAGE_SIZE = 50  # the Hub's page size for tree listings with expand=true
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
    commit: str = ""  # the commit that last wrote this path


@dataclass(frozen=True)
class _Commit:
    sha: str
    title: str
    date: str
    files: Mapping[str, _Blob]  # full snapshot of the repo at this commit


def _git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blob(data: bytes, lfs: bool, commit: str = "") -> _Blob:
    return _Blob(data, _git_blob_oid(data), hashlib.sha256(data).hexdigest(), lfs, commit)


def _matches(path: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path, g) for g in globs)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass
class HubStandIn:
    repo_id: str
    page_size: int
    required_token: str | None
    cdn_redirect: bool
    lfs_globs: tuple[str, ...]
    exists: bool = True
    repo_type: str = "dataset"  # "model": files at /{repo}/resolve/..., the API under /api/models/ (reads only)
    commits: dict[str, _Commit] = field(default_factory=dict)
    head: str = ""
    lfs_store: dict[str, bytes] = field(default_factory=dict)
    drop_globs: tuple[str, ...] = ()  # fault injection: left out of commits, silently
    corrupt_globs: tuple[str, ...] = ()  # fault injection: stored with the last byte flipped
    expand_page_size: int = EXPAND_PAGE_SIZE
    port: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdn_endpoint(self) -> str:
        # A different origin for the client even though it is the same socket.
        return f"http://localhost:{self.port}"

    @property
    def commit(self) -> str:
        """The head commit sha ('' while the repo does not exist)."""
        return self.head

    @property
    def files(self) -> Mapping[str, _Blob]:
        """The files at the head commit."""
        head = self.commits.get(self.head)
        return head.files if head is not None else {}

    def file_bytes(self) -> dict[str, bytes]:
        """``{path: content}`` at the head, for assertions."""
        return {path: blob.data for path, blob in self.files.items()}

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def requests_for(self, fragment: str, method: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if fragment in r.path and method in (None, r.method)]

    def add_commit(self, title: str, files: Mapping[str, _Blob], sha: str | None = None) -> str:
        """Make ``files`` (a full snapshot) the new head; blobs without a commit get this one."""
        with self._lock:
            if sha is None:
                digest = hashlib.sha1(self.head.encode() + b"\0" + title.encode())
                for path in sorted(files):
                    digest.update(b"\0" + path.encode() + b"\0" + files[path].git_oid.encode())
                sha = digest.hexdigest()
            snapshot = {p: b if b.commit else replace(b, commit=sha) for p, b in files.items()}
            self.commits[sha] = _Commit(sha=sha, title=title, date=_now(), files=snapshot)
            self.head = sha
            return sha


def _load_files(files: Mapping[str, bytes | Path] | Path) -> dict[str, bytes]:
    if isinstance(files, Path):
        return {
            p.relative_to(files).as_posix(): p.read_bytes() for p in sorted(files.rglob("*")) if p.is_file()
        }
    # Read once up front: the served repo starts as an immutable single commit.
    return {
        path: data.read_bytes() if isinstance(data, Path) else bytes(data) for path, data in files.items()
    }


def _make_repo(files: Mapping[str, bytes], lfs_globs: tuple[str, ...]) -> tuple[dict[str, _Blob], str]:
    blobs: dict[str, _Blob] = {}
    digest = hashlib.sha1()
    for path in sorted(files):
        if not _is_safe_path(path):
            raise ValueError(f"bad path in repo: {path!r}")
        blob = _blob(files[path], _matches(path, lfs_globs))
        blobs[path] = blob
        digest.update(path.encode() + b"\0" + blob.git_oid.encode())
    return blobs, digest.hexdigest()


def _is_safe_path(path: str) -> bool:
    return bool(path) and not path.startswith("/") and ".." not in path.split("/")


def _split_repo_path(segments: list[str]) -> tuple[str, list[str]] | None:
    """``['org', 'name', rest...]`` -> (repo_id, rest); repo ids on the Hub are always namespaced."""
    if len(segments) < 2:
        return None
    return f"{segments[0]}/{segments[1]}", segments[2:]


class _Handler(BaseHTTPRequestHandler):
    server_version = "hf-standin/1"
    protocol_version = "HTTP/1.1"  # keep-alive, as the real client pools connections
    disable_nagle_algorithm = True  # headers and body are two writes: with Nagle each response waits for an ACK
    hub: HubStandIn  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean; the request record is the log

    # -- plumbing -------------------------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch(send_body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch(send_body=True)

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch_write()

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch_write()

    def _record(self) -> None:
        self.hub.record(
            RecordedRequest(
                method=self.command,
                path=self.path,
                authorized=self.headers.get("Authorization") is not None,
                host=self.headers.get("Host", ""),
            )
        )

    def _route(self) -> tuple[list[str], dict[str, str]]:
        url = urlsplit(self.path)
        # Split before unquoting: the client percent-encodes '/' inside revisions and tree paths.
        segments = [unquote(s) for s in url.path.split("/")[1:]]
        return segments, {k: v[-1] for k, v in parse_qs(url.query).items()}

    def _dispatch(self, send_body: bool) -> None:
        self._record()
        segments, query = self._route()
        if segments[:1] == ["cdn"] and len(segments) == 2:
            self._serve_cdn(segments[1], send_body)
            return
        if not self._authorized(send_body):
            return
        api = ["api", f"{self.hub.repo_type}s"]
        if segments[:2] == api and send_body:
            self._serve_api(segments[2:], query)
        elif self.hub.repo_type == "dataset" and segments[:1] == ["datasets"]:
            self._serve_resolve(segments[1:], send_body)
        elif self.hub.repo_type == "model" and segments[2:3] == ["resolve"]:
            self._serve_resolve(segments, send_body)  # a model repo's files have no type prefix
        else:
            self._error(HTTPStatus.NOT_FOUND, None, "no such route in the stand-in", send_body)

    def _dispatch_write(self) -> None:
        self._record()
        body = self._read_body()  # always drain it: the connection is kept alive
        segments, _ = self._route()
        if self.command == "PUT":
            if segments[:1] == ["lfs-objects"] and len(segments) == 2:
                self._lfs_put(segments[1], body)
            else:
                self._error(HTTPStatus.NOT_FOUND, None, "no such route in the stand-in", True)
            return
        if not self._authorized_write():
            return
        if segments == ["api", "repos", "create"]:
            self._create_repo(body)
        elif segments[:1] == ["lfs-verify"] and len(segments) == 2:
            self._lfs_verify(segments[1], body)
        elif segments[:1] == ["datasets"] and segments[3:] == ["info", "lfs", "objects", "batch"]:
            self._lfs_batch(f"{segments[1]}/{segments[2].removesuffix('.git')}", body)
        elif segments[:2] == ["api", "datasets"] and len(segments) == 6 and segments[4] == "preupload":
            self._preupload(f"{segments[2]}/{segments[3]}", segments[5], body)
        elif segments[:2] == ["api", "datasets"] and len(segments) == 6 and segments[4] == "commit":
            self._commit(f"{segments[2]}/{segments[3]}", segments[5], body)
        else:
            self._error(HTTPStatus.NOT_FOUND, None, "no such write route in the stand-in", True)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

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

    def _authorized_write(self) -> bool:
        if self.headers.get("Authorization") is None:
            self._error(HTTPStatus.UNAUTHORIZED, None, "You must be authenticated to write", True)
            return False
        return self._authorized(True)

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

    def _json_body(self, body: bytes) -> Any:
        try:
            return json.loads(body or b"null")
        except json.JSONDecodeError:
            self._error(HTTPStatus.BAD_REQUEST, None, "body is not JSON", True)
            return None

    def _snapshot(self, repo_id: str, revision: str, send_body: bool) -> _Commit | None:
        """The commit ``revision`` names in ``repo_id``, or None after answering an error."""
        if repo_id != self.hub.repo_id or not self.hub.exists:
            self._error(HTTPStatus.NOT_FOUND, "RepoNotFound", "Repository not found", send_body)
            return None
        with self.hub._lock:
            sha = self.hub.head if revision == "main" else revision
            commit = self.hub.commits.get(sha)
        if commit is None:
            self._error(HTTPStatus.NOT_FOUND, "RevisionNotFound", "Invalid rev id: " + revision, send_body)
        return commit

    # -- file resolution ------------------------------------------------------------------------

    def _serve_resolve(self, segments: list[str], send_body: bool) -> None:
        split = _split_repo_path(segments)
        if split is None or len(split[1]) < 3 or split[1][0] != "resolve":
            self._error(HTTPStatus.NOT_FOUND, None, "bad resolve url", send_body)
            return
        repo_id, rest = split
        revision, path = rest[1], "/".join(rest[2:])
        snapshot = self._snapshot(repo_id, revision, send_body)
        if snapshot is None:
            return
        blob = snapshot.files.get(path)
        if blob is None:
            self._error(HTTPStatus.NOT_FOUND, "EntryNotFound", f"{path} does not exist", send_body)
            return
        common = {"X-Repo-Commit": snapshot.sha}
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
        with self.hub._lock:
            blobs = [b for c in self.hub.commits.values() for b in c.files.values()]
        blob = next((b for b in blobs if b.sha256 == sha256), None)
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
        snapshot = self._snapshot(repo_id, revision, True)
        if snapshot is None:
            return
        with_blobs = query.get("blobs", "").lower() == "true"
        siblings = []
        for path, blob in sorted(snapshot.files.items()):
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
                "_id": snapshot.sha[:24],
                "id": repo_id,
                "author": repo_id.split("/")[0],
                "sha": snapshot.sha,
                "private": self.hub.required_token is not None,
                "gated": False,
                "disabled": False,
                "tags": [],
                "siblings": siblings,
            }
        )

    def _tree_entries(
        self, snapshot: _Commit, prefix: str, recursive: bool, expand: bool
    ) -> list[dict[str, Any]] | None:
        base = f"{prefix}/" if prefix else ""
        files = {p: b for p, b in snapshot.files.items() if p.startswith(base)}
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
                if expand:
                    last = self.hub.commits.get(blob.commit)
                    if last is not None:
                        entry["lastCommit"] = {"id": last.sha, "title": last.title, "date": last.date}
                entries.append(entry)
        for directory in dirs:
            if recursive or "/" not in directory[len(base) :]:
                oid = hashlib.sha1(directory.encode()).hexdigest()
                entries.append({"type": "directory", "oid": oid, "size": 0, "path": directory})
        # The Hub's order is unspecified; a stable order keeps the cursor meaningful across pages.
        return sorted(entries, key=lambda e: e["path"])

    def _tree(self, repo_id: str, revision: str, prefix: str, query: dict[str, str]) -> None:
        snapshot = self._snapshot(repo_id, revision, True)
        if snapshot is None:
            return
        expand = query.get("expand", "").lower() == "true"
        entries = self._tree_entries(snapshot, prefix, query.get("recursive", "").lower() == "true", expand)
        if entries is None:
            self._error(HTTPStatus.NOT_FOUND, "EntryNotFound", f"{prefix} does not exist", True)
            return
        page_size = min(self.hub.page_size, self.hub.expand_page_size) if expand else self.hub.page_size
        start = int(query.get("cursor", "0") or 0)
        page = entries[start : start + page_size]
        extra: dict[str, str] = {}
        if start + page_size < len(entries):
            next_query = {k: v for k, v in query.items() if k != "cursor"}
            next_query["cursor"] = str(start + page_size)
            path_part = urlsplit(self.path).path  # keep the client's own encoding of the path
            extra["Link"] = f'<{self.hub.endpoint}{path_part}?{urlencode(next_query)}>; rel="next"'
        self._json(page, extra)

    # -- writes ---------------------------------------------------------------------------------

    def _create_repo(self, body: bytes) -> None:
        payload = self._json_body(body)
        if not isinstance(payload, dict):
            return
        organization, name = payload.get("organization"), payload.get("name")
        repo_id = f"{organization}/{name}" if organization else str(name)
        if payload.get("type") != "dataset" or repo_id != self.hub.repo_id:
            self._error(HTTPStatus.FORBIDDEN, None, f"the stand-in only serves dataset {self.hub.repo_id}", True)
            return
        url = f"{self.hub.endpoint}/datasets/{repo_id}"
        with self.hub._lock:
            if self.hub.exists:
                self._send(
                    HTTPStatus.CONFLICT,
                    {"Content-Type": "application/json", "X-Error-Message": "You already created this dataset repo"},
                    json.dumps({"error": "You already created this dataset repo", "url": url}).encode(),
                    True,
                )
                return
            self.hub.exists = True
            attributes = "".join(f"{g} filter=lfs diff=lfs merge=lfs -text\n" for g in self.hub.lfs_globs)
            self.hub.add_commit("initial commit", {".gitattributes": _blob(attributes.encode(), lfs=False)})
        self._json({"url": url, "name": repo_id, "id": hashlib.sha1(repo_id.encode()).hexdigest()[:24]})

    def _upload_mode(self, path: str, size: int) -> str:
        return "lfs" if size >= LFS_SIZE_THRESHOLD or _matches(path, self.hub.lfs_globs) else "regular"

    def _preupload(self, repo_id: str, revision: str, body: bytes) -> None:
        snapshot = self._snapshot(repo_id, revision, True)
        payload = self._json_body(body) if snapshot is not None else None
        if snapshot is None or not isinstance(payload, dict):
            return
        answers = []
        for item in payload.get("files", []):
            path, size = item["path"], int(item["size"])
            existing = snapshot.files.get(path)
            oid = None if existing is None else existing.sha256 if existing.lfs else existing.git_oid
            answers.append(
                {"path": path, "uploadMode": self._upload_mode(path, size), "shouldIgnore": False, "oid": oid}
            )
        self._json({"files": answers, "commitOid": snapshot.sha})

    def _lfs_batch(self, repo_id: str, body: bytes) -> None:
        snapshot = self._snapshot(repo_id, "main", True)
        payload = self._json_body(body) if snapshot is not None else None
        if snapshot is None or not isinstance(payload, dict):
            return
        objects = []
        for item in payload.get("objects", []):
            oid, size = str(item["oid"]), int(item["size"])
            answer: dict[str, Any] = {"oid": oid, "size": size}
            with self.hub._lock:
                stored = self.hub.lfs_store.get(oid)
            if stored is None or len(stored) != size:
                answer["authenticated"] = True
                answer["actions"] = {
                    "upload": {"href": f"{self.hub.cdn_endpoint}/lfs-objects/{oid}"},
                    "verify": {"href": f"{self.hub.endpoint}/lfs-verify/{oid}", "header": {}},
                }
            objects.append(answer)
        body_out = json.dumps({"transfer": "basic", "objects": objects}).encode()
        self._send(HTTPStatus.OK, {"Content-Type": "application/vnd.git-lfs+json"}, body_out, True)

    def _lfs_put(self, oid: str, body: bytes) -> None:
        if hashlib.sha256(body).hexdigest() != oid:
            self._error(HTTPStatus.BAD_REQUEST, None, "content does not match the object id", True)
            return
        with self.hub._lock:
            self.hub.lfs_store[oid] = body
        self._send(HTTPStatus.OK, {"ETag": f'"{oid}"'}, b"", True)

    def _lfs_verify(self, oid: str, body: bytes) -> None:
        payload = self._json_body(body)
        if not isinstance(payload, dict):
            return
        with self.hub._lock:
            stored = self.hub.lfs_store.get(oid)
        if stored is None or len(stored) != payload.get("size"):
            self._error(HTTPStatus.NOT_FOUND, None, f"LFS object {oid} not stored with that size", True)
            return
        self._json({"success": True})

    def _commit(self, repo_id: str, revision: str, body: bytes) -> None:
        if revision != "main":
            self._error(HTTPStatus.NOT_FOUND, "RevisionNotFound", "the stand-in commits to main only", True)
            return
        if self._snapshot(repo_id, revision, True) is None:
            return
        try:
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        except json.JSONDecodeError:
            self._error(HTTPStatus.BAD_REQUEST, None, "commit body is not NDJSON", True)
            return
        if not lines or lines[0].get("key") != "header":
            self._error(HTTPStatus.BAD_REQUEST, None, "commit body must start with a header line", True)
            return
        header = lines[0]["value"]
        with self.hub._lock:
            parent = header.get("parentCommit")
            if parent is not None and parent != self.hub.head:
                self._error(HTTPStatus.PRECONDITION_FAILED, None, "parentCommit is not the head of main", True)
                return
            files = dict(self.hub.files)
            problem = self._apply(files, lines[1:])
            if problem is not None:
                self._error(HTTPStatus.UNPROCESSABLE_ENTITY, None, problem, True)
                return
            sha = self.hub.add_commit(str(header.get("summary") or "commit"), files)
        self._json(
            {
                "success": True,
                "commitOid": sha,
                "commitUrl": f"{self.hub.endpoint}/datasets/{repo_id}/commit/{sha}",
                "hookOutput": "",
                "pullRequestUrl": None,
            }
        )

    def _apply(self, files: dict[str, _Blob], operations: list[dict[str, Any]]) -> str | None:
        """Apply commit lines to ``files``; returns why the commit is refused, else None."""
        for operation in operations:
            key, value = operation.get("key"), operation.get("value") or {}
            path = str(value.get("path", ""))
            if not _is_safe_path(path):
                return f"invalid path {path!r}"
            if key == "deletedFile":
                if files.pop(path, None) is None:
                    return f"A file with this name doesn't exist: {path}"
                continue
            if key == "deletedFolder":
                for existing in [p for p in files if p.startswith(path.rstrip("/") + "/")]:
                    del files[existing]
                continue
            if key == "file":
                data, lfs = base64.b64decode(value["content"]), False
            elif key == "lfsFile":
                stored = self.hub.lfs_store.get(value.get("oid", ""))
                if stored is None:
                    return f"LFS object for {path} was never uploaded"
                if "size" in value and value["size"] != len(stored):
                    return f"LFS object for {path} has {len(stored)} bytes, the commit says {value['size']}"
                data, lfs = stored, True
            else:
                return f"unknown commit operation {key!r}"
            if _matches(path, self.hub.drop_globs):
                continue  # the fault under test: accepted, reported as committed, never stored
            if _matches(path, self.hub.corrupt_globs):
                data = data[:-1] + bytes([data[-1] ^ 0xFF]) if data else b"\0"
            files[path] = _blob(data, lfs)
        return None


@functools.cache
def _ssl_context(trust_env: bool, cert_file: str | None, cert_dir: str | None) -> Any:
    from httpcore2._ssl import default_ssl_context

    return default_ssl_context(_trust_env=trust_env)


def _one_ssl_context_per_setting(*, _trust_env: bool = True) -> Any:
    """httpcore2's default TLS context, built once per process for each setting it reads (the env variables it
    honours are part of the key). Each test closes the hub session, so each test's first request made a new client,
    and with it a context loading the system's CA bundle again: about 20 ms of CPU per client, whatever the URL."""
    return _ssl_context(_trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


def isolate_hub_env(monkeypatch: Any, hf_home: Path) -> None:
    """Keep ``huggingface_hub`` off ~/.cache, the internet and Xet whatever the developer's environment holds.

    Call from a fixture with pytest's ``monkeypatch``; call ``huggingface_hub.close_session()`` after the test.
    The clients it makes share one TLS context (`_one_ssl_context_per_setting`).
    """
    import httpcore2
    from huggingface_hub import close_session, constants

    monkeypatch.setattr(httpcore2, "default_ssl_context", _one_ssl_context_per_setting)

    monkeypatch.setenv("HF_HOME", str(hf_home))
    for var in ("HF_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE", "HF_HUB_ETAG_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    # Paths below were computed when huggingface_hub was imported, before HF_HOME pointed here.
    monkeypatch.setattr(constants, "HF_HOME", str(hf_home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(hf_home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(hf_home / "stored_tokens"))
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(hf_home / ".agent_harnesses.json"))
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # The stand-in speaks the legacy LFS upload protocol only; with hf_xet installed the client
    # would otherwise chunk uploads to a Xet CAS server.
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")  # and for `bench` subprocesses the test starts
    close_session()  # a client made earlier may carry proxy settings from the old environment


@contextmanager
def hf_standin(
    files: Mapping[str, bytes | Path] | Path | None = None,
    repo_id: str = DEFAULT_REPO_ID,
    required_token: str | None = None,
    page_size: int = 1000,
    *,
    cdn_redirect: bool = False,
    lfs_globs: tuple[str, ...] = DEFAULT_LFS_GLOBS,
    repo_exists: bool = True,
    repo_type: str = "dataset",
) -> Iterator[HubStandIn]:
    """Serve ``files`` as dataset repo ``repo_id`` (``repo_type="model"``: as a model repo, read-only) until the block
    exits.

    ``files`` is ``{path_in_repo: bytes or a Path to read}`` or a folder on disk (served as the repo root).
    ``required_token`` makes every repo route answer 401 unless ``Authorization: Bearer <token>`` is sent;
    ``page_size`` is the tree listing page size; ``cdn_redirect`` sends LFS files through a 302 to a
    second origin, like the Hub's CDN; ``lfs_globs`` picks which paths count as LFS files (and which
    uploads the preupload endpoint sends to LFS); ``repo_exists=False`` starts without the repo, for
    ``create_repo`` (``files`` must then be empty).

    Yields the :class:`HubStandIn`; point the client at ``.endpoint``, inspect ``.requests`` and
    ``.files``, and set ``.drop_globs`` / ``.corrupt_globs`` to inject commit faults.
    """
    if page_size < 1:
        raise ValueError("page_size must be >= 1")
    loaded = _load_files(files if files is not None else {})
    if loaded and not repo_exists:
        raise ValueError("files given for a repo that does not exist yet")
    hub = HubStandIn(
        repo_id=repo_id,
        page_size=page_size,
        required_token=required_token,
        cdn_redirect=cdn_redirect,
        lfs_globs=lfs_globs,
        exists=repo_exists,
        repo_type=repo_type,
    )
    if repo_exists:
        blobs, commit = _make_repo(loaded, lfs_globs)
        hub.add_commit("initial commit", blobs, sha=commit)
        hub.lfs_store.update({b.sha256: b.data for b in blobs.values() if b.lfs})
    handler = type("_BoundHandler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    hub.port = server.server_address[1]
    # A short poll interval keeps shutdown (and so every test using the stand-in) fast.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.005}, name="hf-standin", daemon=True
    )
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
