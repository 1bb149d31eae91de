"""`rf100vl/pretrained`: weights fetched from a Hugging Face model repo (the loopback stand-in, through the real
huggingface_hub client) or imported from a file, checked, locked with the commit the revision named, kept on the next
acquisition, and upstream of every checkpoint of the model. The served file is shaped like LibreYOLO's published
weights: a COCO (80-class) yolo9-t as LibreYOLO saves one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_assets.rf100vl.training.pretrained import PretrainedError, read_lock, weights_path
from bench_assets.rf100vl.training.pretrained_hub import acquire_weights
from bench_assets.rf100vl.training.recipes import PretrainedRef
from tests.conftest import REPO
from tests.hf_standin import hf_standin, isolate_hub_env

pytestmark = pytest.mark.integration

REF = PretrainedRef(name="LibreYOLO9t.pt", repo="LibreYOLO/LibreYOLO9t")
TOKEN = "hf_FAKE-weights-token-do-not-leak-0123456789"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Files shaped like the published ones: yolo9-t and yolox-n with LibreYOLO's 80 COCO classes, untrained."""
    from bench_assets.rf100vl.training.child.common import build_model

    root = tmp_path_factory.mktemp("published")
    files = {"yolo9": root / "LibreYOLO9t.pt", "yolox": root / "LibreYOLOXn.pt"}
    build_model("yolo9", "t", 80, "cpu").save(str(files["yolo9"]))
    build_model("yolox", "n", 80, "cpu").save(str(files["yolox"]))
    return files


@pytest.fixture(autouse=True)
def _isolated_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from huggingface_hub import close_session

    isolate_hub_env(monkeypatch, tmp_path / "hf_home")
    yield
    close_session()


def _model_repo(file: Path, **kw: Any):  # noqa: ANN202
    return hf_standin({REF.name: file}, repo_id=REF.repo, repo_type="model", **kw)


def test_fetched_weights_are_locked_with_the_commit_and_kept_until_a_refresh(published: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    home, cache = tmp_path / "home", tmp_path / "cache"
    with _model_repo(published["yolo9"], cdn_redirect=True) as hub:
        got = acquire_weights(home, "yolo9-t", REF, cache_dir=cache, endpoint=hub.endpoint)
        assert got.how == "fetched"
        lock = got.lock
        assert lock["source"] == {"kind": "hub", "repo": REF.repo, "file": REF.name, "revision": "main",
                                  "commit": hub.commit, "endpoint": hub.endpoint}
        assert lock["name"] == REF.name and lock["sha256"] == hub.files[REF.name].sha256
        assert weights_path(home, "yolo9-t").read_bytes() == published["yolo9"].read_bytes()
        assert lock["backbone_loaded"] == lock["backbone_tensors"] > 0  # only the 80-class head differs
        asked = len(hub.requests)
        again = acquire_weights(home, "yolo9-t", REF, cache_dir=cache, endpoint=hub.endpoint)
        assert again.how == "kept" and again.lock == lock and len(hub.requests) == asked  # no network
        assert acquire_weights(home, "yolo9-t", REF, cache_dir=cache, endpoint=hub.endpoint,
                               refresh=True).how == "fetched"
        # The lock names the revision asked for; a recipe pinning another revision fetches again.
        pinned = REF.model_copy(update={"revision": hub.commit})
        assert acquire_weights(home, "yolo9-t", pinned, cache_dir=cache, endpoint=hub.endpoint).how == "fetched"
        assert read_lock(home, "yolo9-t")["source"]["revision"] == hub.commit


def test_a_served_file_of_another_family_is_refused_and_nothing_is_stored(published: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _model_repo(published["yolox"]) as hub, pytest.raises(PretrainedError) as caught:
        acquire_weights(home, "yolo9-t", REF, cache_dir=tmp_path / "cache", endpoint=hub.endpoint)
    assert "not a starting point for yolo9-t: the file says it holds yolox weights, not yolo9" in str(caught.value)
    assert read_lock(home, "yolo9-t") is None and not weights_path(home, "yolo9-t").exists()


def test_hub_failures_name_the_repo_the_file_and_the_fix_and_never_the_token(published: dict[str, Path],
                                                                            tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    home, cache = tmp_path / "home", tmp_path / "cache"
    with _model_repo(published["yolo9"], required_token=TOKEN) as hub:
        with pytest.raises(PretrainedError, match=r"HTTP 401: model repo LibreYOLO/LibreYOLO9t at .* requires "
                                                  r"authentication; set HF_TOKEN"):
            acquire_weights(home, "yolo9-t", REF, cache_dir=cache, endpoint=hub.endpoint)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        wrong_rev = REF.model_copy(update={"revision": "v9"})
        with pytest.raises(PretrainedError, match=r"revision 'v9' not found in model repo LibreYOLO/LibreYOLO9t"):
            acquire_weights(home, "yolo9-t", wrong_rev, cache_dir=cache, endpoint=hub.endpoint)
        wrong_name = REF.model_copy(update={"name": "LibreYOLO9tiny.pt"})
        with pytest.raises(PretrainedError, match=r"LibreYOLO9tiny.pt not found in model repo .* fix the recipe's "
                                                  r"`pretrained` entry, or import the file"):
            acquire_weights(home, "yolo9-t", wrong_name, cache_dir=cache, endpoint=hub.endpoint)
        assert acquire_weights(home, "yolo9-t", REF, cache_dir=cache, endpoint=hub.endpoint).how == "fetched"
    stored = [p for p in home.rglob("*") if p.is_file()]
    assert stored and not any(TOKEN.encode() in p.read_bytes() for p in stored)
    with pytest.raises(PretrainedError, match="names no pretrained weights .* nothing to fetch"):
        acquire_weights(home, "yolo9-t", None, cache_dir=cache)


def _bench(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return subprocess.run([sys.executable, "-m", "bench_assets.cli", *args], cwd=REPO, capture_output=True, text=True,
                          env={**base, "BENCH_HOME": str(home), "OMP_NUM_THREADS": "1", **env})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bench_weights_fetch_materializes_the_partition_upstream_of_the_models_checkpoints(
        published: dict[str, Path], tmp_path: Path) -> None:
    import dagster as dg

    from bench_assets.platform.instance import open_instance

    home = tmp_path / "home"
    # Offline (nothing listens): a campaign whose recipe starts from published weights stops before any training.
    dead = f"http://127.0.0.1:{_closed_port()}"
    refused = _bench(home, "campaign", "--model", "yolo9-t", "--datasets", "mini-tiny", HF_ENDPOINT=dead)
    assert refused.returncode == 2, refused.stderr
    assert "yolo9-t: the recipe" in refused.stderr and "could not be fetched" in refused.stderr
    assert "bench weights import PATH --model yolo9-t --name LibreYOLO9t.pt" in refused.stderr
    assert not (home / "runs").exists()

    with _model_repo(published["yolo9"], required_token=TOKEN) as hub:
        done = _bench(home, "weights", "fetch", "--model", "yolo9-t", HF_ENDPOINT=hub.endpoint, HF_TOKEN=TOKEN)
    assert done.returncode == 0, done.stderr
    assert f"yolo9-t: LibreYOLO9t.pt sha256 {hub.files[REF.name].sha256}" in done.stdout
    listed = json.loads(_bench(home, "weights", "list", "--json").stdout)
    assert [(e["model"], e["sha256"], e["source"]["commit"]) for e in listed] == [
        ("yolo9-t", hub.files[REF.name].sha256, hub.commit)]

    instance = open_instance(home)
    key = dg.AssetKey(["rf100vl", "pretrained"])
    event = instance.get_latest_materialization_event(key)
    assert event is not None and event.dagster_event.partition == "yolo9-t"
    meta = event.asset_materialization.metadata
    assert meta["sha256"].value == hub.files[REF.name].sha256 and meta["commit"].value == hub.commit
    assert TOKEN not in json.dumps({k: str(v.value) for k, v in meta.items()})
    assert not any(TOKEN.encode() in p.read_bytes() for p in home.rglob("*") if p.is_file())

    from bench_assets.cli.location import load_location

    graph = load_location().resolve_asset_graph()
    assert key in graph.get(dg.AssetKey(["rf100vl", "checkpoint"])).parent_keys
