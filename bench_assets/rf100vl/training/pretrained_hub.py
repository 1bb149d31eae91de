"""Acquiring a model's pretrained weights: from the recipe's Hugging Face model repo (`LibreYOLO/<Name>`, the
revision resolved to a commit once and locked) or from a local file, checked and stored by `pretrained.py`.

    acquire_weights(home, "rfdetr-n", ref)            the recipe's weights: kept when already stored for that ref,
                                                      else fetched from the hub at ref.revision and imported
    acquire_weights(home, "rfdetr-n", ref, path=P)    a local file instead (an offline box; your own weights)

Endpoint and token come from the platform's hub layer (`HF_ENDPOINT`, `HF_TOKEN` read at call time, never written
anywhere); the file lands in the hub cache under `cache_dir`, then is copied into `pretrained/<model>/`, so training
never downloads. A stored file is kept while its lock names the same repo, file and revision and its bytes still hash
to the lock; `refresh` fetches again (a moved branch then gives another sha256, so runs get another signature).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench_assets.platform import hf
from bench_assets.platform.fsutil import sha256_file
from bench_assets.platform.hf import HubAccess, HubReadError, RepoAt
from bench_assets.rf100vl.training.pretrained import PretrainedError, import_weights, read_lock, weights_path

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Acquired:
    lock: dict[str, Any]
    how: str  # "kept" (already stored for this ref), "fetched" (from the hub), "imported" (a local file)


def hub_source(ref: Any, commit: str, endpoint: str) -> dict[str, Any]:
    """The lock's `source` of weights fetched for `ref` (a recipes.PretrainedRef) at `commit`."""
    return {"kind": "hub", "repo": ref.repo, "file": ref.name, "revision": ref.revision, "commit": commit,
            "endpoint": endpoint}


def fetch_weights(ref: Any, cache_dir: Path, *, endpoint: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Download `ref.name` from model repo `ref.repo` at the commit `ref.revision` names now; (the file in the hub
    cache, its lock source). PretrainedError naming the repo, the file and the fix when it cannot be had or arrives
    other than the hub announced it."""
    hf.configure_hub()
    at = RepoAt(HubAccess.from_env(endpoint), "model", ref.repo, ref.revision)
    hint = (f"the recipe names {ref.name} in {ref.repo}; fix the recipe's `pretrained` entry, or import the file "
            f"with `bench weights import PATH --model KEY --name {ref.name}`")
    try:
        expected = hf.pin_revision(at, ref.name, hint)
        commit = str(expected.commit)
        path = hf.download_file(replace(at, revision=commit), ref.name, cache_dir, hint)
    except HubReadError as exc:
        raise PretrainedError(f"{ref.repo}/{ref.name}: {exc}") from None
    got_bytes, got_sha = path.stat().st_size, sha256_file(path)
    if expected.size is not None and got_bytes != expected.size:
        raise PretrainedError(f"{ref.repo}/{ref.name} (commit {commit}): {got_bytes} bytes arrived, the hub announced "
                              f"{expected.size}; fix: fetch again (refresh) once the download is whole")
    etag = (expected.etag or "").strip('"').lower()
    if _SHA256.fullmatch(etag) and etag != got_sha:
        raise PretrainedError(f"{ref.repo}/{ref.name} (commit {commit}): sha256 {got_sha} arrived, the hub announced "
                              f"{etag}; fix: fetch again (refresh)")
    return path, hub_source(ref, commit, at.endpoint)


def _stored_for(home: Path, model_key: str, ref: Any) -> dict[str, Any] | None:
    """The lock of weights stored for `ref` whose file still hashes to it, else None."""
    lock = read_lock(home, model_key)
    if lock is None or lock.get("name") != ref.name or not weights_path(home, model_key).is_file():
        return None
    src = lock["source"]
    same_ref = src.get("kind") != "hub" or (src.get("repo"), src.get("revision")) == (ref.repo, ref.revision)
    return lock if same_ref and sha256_file(weights_path(home, model_key)) == lock["sha256"] else None


def acquire_weights(home: Path, model_key: str, ref: Any | None, *, cache_dir: Path, path: Path | None = None,
                    name: str | None = None, refresh: bool = False, endpoint: str | None = None) -> Acquired:
    """Store `model_key`'s starting point: the local file `path` (named `name`, else the file's name), else the
    recipe's `ref` (kept when stored already and not `refresh`, else fetched). PretrainedError when the recipe names
    no weights and no file is given, and for every reason the file is not this model's starting point."""
    if path is not None:
        return Acquired(import_weights(home, model_key, path, name=name), "imported")
    if ref is None:
        raise PretrainedError(f"{model_key}: its recipe names no pretrained weights (its runs train from scratch), so "
                              "there is nothing to fetch; fix: use a recipe with a `pretrained` entry for the size, "
                              "or import a file (`bench weights import PATH --model KEY`)")
    if not refresh and (lock := _stored_for(home, model_key, ref)) is not None:
        return Acquired(lock, "kept")
    file, source = fetch_weights(ref, cache_dir, endpoint=endpoint)
    return Acquired(import_weights(home, model_key, file, name=ref.name, source=source), "fetched")
