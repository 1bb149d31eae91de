"""Expensive test inputs built once per run of the suite and shared by every test that only reads them.

A shared input (a finished campaign home with its report built, a trained mini checkpoint, imported mini
datasets) lives under one folder that every pytest-xdist worker of the run sees (the parent of the workers'
base temp folders), named for what it is and keyed by the SHA-256 of the code and inputs that produce it: the
repository's product code, the dbt project, the test helpers it names and the builder's own arguments. The first
worker that asks builds it under a file lock; the others wait for the lock and reuse it. A build that died half way
(no completion marker) is removed and built again.

A test that changes what it was given works on `private_copy`, which rewrites the absolute paths the artifacts
record (stats.json, the model registry, dataset records) to the copy's own.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# What a shared input depends on besides its own arguments: the product's code, the dbt project, the recipes and
# the shared test helpers. A change to any of these gives new keys (a cache kept across runs cannot go stale).
CODE_ROOTS = ("bench_assets", "dbt_report/models", "dbt_report/macros", "dbt_report/tests", "recipes",
              "dbt_report/dbt_project.yml", "tests/synthetic_campaign.py", "tests/shared_cache.py")
_DONE = ".shared-complete"
_CODE_KEY: str | None = None


def _files(roots: Iterable[str]) -> Iterator[Path]:
    for root in roots:
        path = REPO / root
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def code_key() -> str:
    """SHA-256 (16 hex) of every file under CODE_ROOTS, by path and content; computed once per process."""
    global _CODE_KEY
    if _CODE_KEY is None:
        h = hashlib.sha256()
        for path in _files(CODE_ROOTS):
            h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE_KEY = h.hexdigest()[:16]
    return _CODE_KEY


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this run shares: pytest-N/ under xdist (each worker's base is pytest-N/gwK),
    the run's own base temp otherwise."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def shared(tmp_path_factory: pytest.TempPathFactory, name: str, args: dict[str, object],
           build: Callable[[Path], None]) -> Path:
    """The folder `build(folder)` fills for (`name`, `args`) at this code, built by the first worker that asks.
    `args` are the builder's arguments (JSON-serialisable): they are part of the key."""
    key = hashlib.sha256(json.dumps({"code": code_key(), "name": name, "args": args}, sort_keys=True).encode())
    folder = shared_root(tmp_path_factory) / f"{name}-{key.hexdigest()[:12]}"
    with _locked(folder.with_name(folder.name + ".lock")):
        if not (folder / _DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that died half way
            folder.mkdir(parents=True)
            build(folder)
            (folder / _DONE).write_text(json.dumps({"name": name, "args": args, "code": code_key()}) + "\n")
    return folder


def private_copy(src: Path, dst: Path) -> Path:
    """A copy of a shared folder that a test may change: every text file that records `src`'s absolute path
    (JSON, YAML, TOML, text) records `dst` instead; the completion marker is left behind."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(_DONE))
    old, new = str(src), str(dst)
    for path in dst.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.suffix in (".json", ".yaml", ".yml", ".toml", ".txt"):
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            if old in text:
                path.write_text(text.replace(old, new))
    return dst
