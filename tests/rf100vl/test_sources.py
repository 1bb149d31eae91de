"""Acquisition paths other than local files: the rf100vl package and the HF mirror via the dataset asset."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from bench_assets.rf100vl.datasets.catalog import load_catalog, suite_members
from bench_assets.rf100vl.datasets.sources import SourceError, SourceSpec, default_spec, fetch
from tests.conftest import CORPUS, REPO
from tests.hf_standin import hf_standin


def test_rf100vl_path_needs_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROBOFLOW_API_KEY", raising=False)
    with pytest.raises(SourceError, match="ROBOFLOW_API_KEY"):
        fetch(SourceSpec(kind="rf100vl"), "actions", tmp_path, tmp_path)


def test_rf100vl_path_fails_clearly_when_unreachable_and_hides_the_key(tmp_path: Path) -> None:
    # A subprocess: roboflow reads API_URL at import; point it at a closed loopback port.
    code = (
        "import sys; from pathlib import Path\n"
        "from bench_assets.rf100vl.datasets.sources import SourceSpec, SourceError, fetch\n"
        "try:\n"
        f"    fetch(SourceSpec(kind='rf100vl'), 'actions', Path({str(tmp_path)!r}), Path({str(tmp_path)!r}))\n"
        "except SourceError as e:\n"
        "    print(e); sys.exit(3)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "ROBOFLOW_API_KEY": "rf_SECRET_KEY_123", "API_URL": "http://127.0.0.1:9",
           "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert "could not be reached" in r.stdout and "'actions'" in r.stdout
    assert "rf_SECRET_KEY_123" not in r.stdout + r.stderr


def test_default_spec_routes_catalogue_names() -> None:
    assert default_spec("mini-tiny", None).kind == "mini"
    assert default_spec("actions", None).kind == "rf100vl"
    assert default_spec("actions", "org/mirror").repo_id == "org/mirror"
    with pytest.raises(SourceError, match="bench datasets import"):
        default_spec("not-a-dataset", None)


def test_catalogue_and_suites() -> None:
    cat = load_catalog()
    assert len(cat) == 100 and "-grccs" in cat
    rf20 = suite_members("rf20vl")
    assert len(rf20) == 20 and all(cat[n].rf20vl for n in rf20)
    sizes = [cat[n].num_images for n in suite_members("rf100vl")]
    assert sizes == sorted(sizes, reverse=True)  # longest first


def _tar_of(folder: Path, top: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=top)
    return buf.getvalue()


def test_catalogue_dataset_from_hf_mirror_through_the_asset(instance, bench_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`actions` (a catalogue dataset) with no recorded source comes from the configured HF mirror."""
    # The stand-in holds a 2-class dataset; the catalogue says `actions` has 6 classes, so the
    # class-count check must fail while the import itself succeeds.
    tar = _tar_of(CORPUS / "broken" / "valid_base", "actions")
    lock = {"format": "rf100vl-hf-lock.v1", "datasets": {"actions": {
        "file": "datasets/actions.tar", "sha256": hashlib.sha256(tar).hexdigest(), "bytes": len(tar), "version": 7}}}
    files = {"lock.json": json.dumps(lock).encode(), "datasets/actions.tar": tar}
    with hf_standin(files, required_token="hf_TESTTOKEN_abcdefghijklmnop") as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_TOKEN", "hf_TESTTOKEN_abcdefghijklmnop")
        monkeypatch.setenv("BENCH_HF_REPO", "org/rf100vl-mirror")
        from bench_assets.cli.location import run_job
        from bench_assets.rf100vl.defs.jobs import dataset_job
        from bench_assets.rf100vl.defs.partitions import register_partitions

        register_partitions(instance, ["actions"])
        outcome = run_job(instance, dataset_job, partition_key="actions")
    assert not outcome.success
    assert [e for e in outcome.errors if "class_count_matches_catalog" in e]
    assert not [e for e in outcome.errors if "lock_matches_files" in e]
    lock_json = next((bench_home / "datasets" / "actions").glob("*/lock.json")).read_text()
    assert json.loads(lock_json)["source_version"] == "7"
    for f in bench_home.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".yaml", ".txt", ".log", ""):
            assert "hf_TESTTOKEN" not in f.read_text(errors="ignore"), f


def test_catalogue_mini_names_match_the_generator() -> None:
    from bench_assets.rf100vl.datasets.catalog import MINI_SUITE as catalogue_names
    from bench_assets.rf100vl.datasets.mini import MINI_SUITE as generated_names

    assert catalogue_names == generated_names


def test_rf100vl_package_fetches_exactly_the_locked_version_and_the_lock_records_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The package's own download takes the latest version; ours asks for the one rf100vl.versions.v1 locks."""
    from bench_assets.rf100vl.datasets import sources
    from bench_assets.rf100vl.datasets.lock import roboflow_version
    from bench_assets.rf100vl.datasets.store import load_record, materialize_dataset
    from tests.rf100vl.test_hostile_imports import StandInDataset

    stand_in = StandInDataset("valid_base")
    monkeypatch.setenv("ROBOFLOW_API_KEY", "rf_test_key_never_used")
    monkeypatch.setattr(sources, "_find_rf100vl_dataset", lambda name, key: stand_in)
    home = tmp_path / "bench"
    spec = sources.SourceSpec(kind="rf100vl")
    with pytest.raises(Exception, match="class_count_matches_catalog"):  # the corpus case is not the real data
        materialize_dataset(home, "actions", spec, home / "cache")
    assert stand_in.asked == [1]  # actions-zzid2-zb1hq-amih version 1, as the published entries lock it
    version = next((home / "datasets" / "actions").glob("*/lock.json")).parent.name
    rec = load_record(home / "datasets", "actions", version)
    assert rec.lock["roboflow"] == {"project_name": "actions-zzid2-zb1hq-amih", "version_id": 1}
    assert roboflow_version(rec.lock) == 1 and rec.lock["source_version"] == "actions-zzid2-zb1hq-amih/1"


def test_rf100vl_package_refuses_a_project_other_than_the_locked_one(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_assets.rf100vl.datasets import sources
    from tests.rf100vl.test_hostile_imports import StandInDataset

    stand_in = StandInDataset("valid_base", project="rf100-vl/actions-zzid2-zb1hq-amih-rsbpp")
    monkeypatch.setenv("ROBOFLOW_API_KEY", "rf_test_key_never_used")
    monkeypatch.setattr(sources, "_find_rf100vl_dataset", lambda name, key: stand_in)
    with pytest.raises(SourceError, match="serves project 'actions-zzid2-zb1hq-amih-rsbpp', the versions lock .* "
                                          "says 'actions-zzid2-zb1hq-amih'"):
        sources.fetch(sources.SourceSpec(kind="rf100vl"), "actions", tmp_path / "s", tmp_path / "c")
    assert stand_in.asked == []
