"""Hostile dataset files through every source: nothing is read or written outside the version folder.

Each source (local folder, local tar, the Hugging Face mirror, the `rf100vl` package, the inbox) is fed a
committed corpus case whose `images[].file_name` leaves its split. The import must be refused with a message
naming `file_name`, no `datasets/<name>/` may appear, and no file anywhere in the test's tree may be created
or changed outside the platform's own bookkeeping (Dagster storage, source records, the warehouse).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from bench_assets.cli.location import run_job
from bench_assets.rf100vl.datasets.inbox import refusal_marker
from bench_assets.rf100vl.defs.jobs import DATASET_OP, dataset_job
from bench_assets.rf100vl.defs.partitions import register_import, register_partitions
from bench_assets.rf100vl.defs.sensors import inbox_requests, inbox_sensor
from resources.bench_home import BenchHome
from tests.conftest import CORPUS, bench_in_process
from tests.hf_standin import hf_standin, isolate_hub_env

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

# Files the platform itself writes while refusing an import (everything else must stay untouched).
BOOKKEEPING = ("dagster/", "sources/", "warehouse.duckdb", ".warehouse.duckdb", "cache/")


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            st = p.lstat()
            out[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def _touched(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], home: Path,
             root: Path) -> list[str]:
    """Paths created or changed, minus the platform's bookkeeping under BENCH_HOME."""
    prefix = home.relative_to(root).as_posix() + "/"
    changed = [p for p in after if before.get(p) != after[p]]
    return [p for p in changed if not (p.startswith(prefix) and p[len(prefix):].startswith(BOOKKEEPING))]


def _case(case: str, dest: Path) -> Path:
    folder = "links" if (CORPUS / "links" / case).exists() else "broken"
    shutil.copytree(CORPUS / folder / case, dest, symlinks=True)
    return dest


def _tar_of(folder: Path, top: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=top)
    return buf.getvalue()


def _plant_victim(case_root: Path) -> Path:
    """A real image where `../../../../victim.png` from the case's train/ folder points, as a stranger's
    dataset would find it: a naive importer reads it as a training image and writes it outside the version."""
    victim = case_root.parents[2] / "victim.png"
    shutil.copy(CORPUS / "broken" / "valid_base" / "train" / "img_0000_png.rf.0000c0ffee000000.png", victim)
    return victim


def _import(instance, name: str, source: Path | None = None):  # noqa: ANN001, ANN202
    if source:
        register_import(instance, name, source)  # records where it comes from, so the name is known
    else:
        register_partitions(instance, [name])
    cfg = {"ops": {DATASET_OP: {"config": {"source": str(source)}}}} if source else None
    return run_job(instance, dataset_job, partition_key=name, run_config=cfg)


def _assert_refused(outcome, name: str, home: Path, phrase: str) -> None:  # noqa: ANN001
    assert not outcome.success
    assert len(outcome.errors) == 1 and "file_name" in outcome.errors[0] and phrase in outcome.errors[0], \
        outcome.errors
    assert not (home / "datasets" / name).exists(), "a refused first import left datasets/<name>/ behind"


@pytest.mark.parametrize("case, phrase", [
    ("file_name_traversal", "climbs out of its split folder"),
    ("file_name_absolute", "is an absolute path"),
    ("file_name_other_split", "climbs out of its split folder"),
    ("file_name_subdir", "is in a subdirectory"),
    ("dir_symlink", "is in a subdirectory"),
    ("image_symlink", "symbolic link"),
])
def test_local_folder_source(instance, bench_home: Path, tmp_path: Path, case: str, phrase: str) -> None:
    src = _case(case, tmp_path / "src" / "a" / "b" / case)
    victim = _plant_victim(src)
    victim_bytes = victim.read_bytes()
    before = _tree(tmp_path)
    _assert_refused(_import(instance, "hostile", src), "hostile", bench_home, phrase)
    assert _touched(before, _tree(tmp_path), bench_home, tmp_path) == []
    assert victim.read_bytes() == victim_bytes
    assert not any(p.name == "victim.png" for p in bench_home.rglob("*"))


def test_local_tar_source(instance, bench_home: Path, tmp_path: Path) -> None:
    tar = tmp_path / "hostile.tar"
    tar.write_bytes(_tar_of(CORPUS / "broken" / "file_name_other_split", "hostile"))
    before = _tree(tmp_path)
    _assert_refused(_import(instance, "hostile", tar), "hostile", bench_home, "climbs out of its split folder")
    assert _touched(before, _tree(tmp_path), bench_home, tmp_path) == []


def test_hf_mirror_source(instance, bench_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import close_session

    isolate_hub_env(monkeypatch, tmp_path / "hf_home")
    tar = _tar_of(CORPUS / "broken" / "file_name_other_split", "actions")
    lock = {"format": "rf100vl-hf-lock.v1", "datasets": {"actions": {
        "file": "datasets/actions.tar", "sha256": hashlib.sha256(tar).hexdigest(), "bytes": len(tar), "version": 7}}}
    before = _tree(tmp_path)
    with hf_standin({"lock.json": json.dumps(lock).encode(), "datasets/actions.tar": tar}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("BENCH_HF_REPO", "org/rf100vl-mirror")
        outcome = _import(instance, "actions")
    close_session()
    _assert_refused(outcome, "actions", bench_home, "climbs out of its split folder")
    touched = [p for p in _touched(before, _tree(tmp_path), bench_home, tmp_path) if not p.startswith("hf_home/")]
    assert touched == []


class _StandInVersion:
    """A Roboflow project version whose export is a corpus case instead of Roboflow's."""

    def __init__(self, case: str, asked: list[int], number: int):
        self.case, self.asked, self.number = case, asked, number

    def download(self, model_format: str, location: str, overwrite: bool) -> None:
        assert model_format == "coco"
        self.asked.append(self.number)
        shutil.copytree(CORPUS / "broken" / self.case, location, dirs_exist_ok=overwrite)


class StandInDataset:
    """What `rf100vl.get_rf100vl_projects()` yields for one dataset: its Roboflow project (id, versions) and the
    package's COCO clean-up, which runs for real (`rf100vl.dataset.RF100VlDataset.clean_coco_dataset`)."""

    def __init__(self, case: str, name: str = "actions", project: str = "rf100-vl/actions-zzid2-zb1hq-amih"):
        from rf100vl.dataset import RF100VlDataset

        self.name, self.asked = name, []
        self.rf_project = type("Project", (), {"id": project,
                                               "version": lambda _s, n: _StandInVersion(case, self.asked, n)})()
        self.clean_coco_dataset = RF100VlDataset.clean_coco_dataset.__get__(self)
        self.get_clean_ann_data = RF100VlDataset.get_clean_ann_data.__get__(self)


def test_rf100vl_package_source(instance, bench_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench_assets.rf100vl.datasets import sources

    monkeypatch.setenv("ROBOFLOW_API_KEY", "rf_test_key_never_used")
    monkeypatch.setattr(sources, "_find_rf100vl_dataset", lambda name, key: StandInDataset("file_name_other_split"))
    before = _tree(tmp_path)
    _assert_refused(_import(instance, "actions"), "actions", bench_home, "climbs out of its split folder")
    assert _touched(before, _tree(tmp_path), bench_home, tmp_path) == []


def _aged(path: Path) -> None:
    old = time.time() - 120
    for p in [path, *path.rglob("*")]:
        os.utime(p, (old, old), follow_symlinks=False)


def test_inbox_source_refuses_and_says_so_beside_the_entry(instance, bench_home: Path, tmp_path: Path) -> None:
    inbox = bench_home / "inbox"
    entry = _case("file_name_traversal", inbox / "hostile")
    victim = entry.parents[2] / "victim.png"  # BENCH_HOME's parent: outside the platform's home altogether
    shutil.copy(CORPUS / "broken" / "valid_base" / "train" / "img_0000_png.rf.0000c0ffee000000.png", victim)
    _aged(entry)
    ctx = dg.build_sensor_context(instance=instance, resources={"home": BenchHome()})
    result = inbox_sensor(ctx)
    request = next(r for r in result.run_requests if r.partition_key == "hostile")
    before = _tree(tmp_path)
    register_partitions(instance, ["hostile"])
    outcome = run_job(instance, dataset_job, partition_key="hostile", run_config=request.run_config)
    _assert_refused(outcome, "hostile", bench_home, "climbs out of its split folder")
    touched = _touched(before, _tree(tmp_path), bench_home, tmp_path)
    marker = refusal_marker(entry)
    assert touched == [marker.relative_to(tmp_path).as_posix()]
    assert "file_name" in marker.read_text() and "../../../../victim.png" in marker.read_text()


def test_inbox_name_refusal_writes_a_marker_and_warns(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    (inbox / "bad name!").mkdir(parents=True)
    _, runs, skipped = inbox_requests(inbox, set(), now=time.time() + 100)
    assert not runs
    assert skipped[0].startswith("refused bad name!") and "rename the entry" in skipped[0]
    marker = inbox / "bad name!.refused.txt"
    assert "not a valid dataset name" in marker.read_text()
    mtime = marker.stat().st_mtime_ns
    inbox_requests(inbox, set(), now=time.time() + 200)
    assert marker.stat().st_mtime_ns == mtime  # rewritten only when the reason changes


def test_inbox_marker_goes_away_when_the_entry_imports(instance, bench_home: Path) -> None:
    inbox = bench_home / "inbox"
    entry = _case("file_name_subdir", inbox / "fixable")
    config = {"ops": {DATASET_OP: {"config": {"source": str(entry), "suite": "inbox"}}}}
    register_partitions(instance, ["fixable"])
    assert not run_job(instance, dataset_job, partition_key="fixable", run_config=config).success
    assert refusal_marker(entry).exists()
    shutil.rmtree(entry)
    _case("valid_base", entry)
    assert run_job(instance, dataset_job, partition_key="fixable", run_config=config).success
    assert not refusal_marker(entry).exists()


@pytest.fixture
def seven_classes(tmp_path: Path) -> Iterator[Path]:
    """valid_base with five more (unused) classes: 7, as the catalogue says for `-grccs`."""
    root = _case("valid_base", tmp_path / "seven")
    for split in ("train", "valid", "test"):
        ann = root / split / "_annotations.coco.json"
        doc = json.loads(ann.read_text())
        doc["categories"] += [{"id": i, "name": f"extra{i}", "supercategory": "corpus-base"} for i in range(3, 8)]
        ann.write_text(json.dumps(doc))
    yield root


def test_blocked_version_never_becomes_current(instance, bench_home: Path, tmp_path: Path,
                                               seven_classes: Path) -> None:
    from bench_assets.rf100vl.datasets.store import blocked_versions, current_version, load_record, why_no_current

    datasets = bench_home / "datasets"
    first = _import(instance, "-grccs", _case("valid_base", tmp_path / "two"))  # 2 classes, catalogue says 7
    assert not first.success and "BLOCKED" in first.errors[0] and "catalogue says 7" in first.errors[0]
    assert current_version(datasets, "-grccs") is None and load_record(datasets, "-grccs") is None
    assert "is blocked" in why_no_current(datasets, "-grccs")
    (blocked,) = blocked_versions(datasets, "-grccs")

    good = _import(instance, "-grccs", seven_classes)
    assert good.success, good.errors
    good_version = current_version(datasets, "-grccs")
    assert good_version not in (None, blocked)

    again = _import(instance, "-grccs", _case("valid_base", tmp_path / "two-again"))  # identical blocked content
    assert not again.success and f"CURRENT stays {good_version}" in again.errors[0]
    assert current_version(datasets, "-grccs") == good_version
    assert (datasets / "-grccs" / blocked / "lock.json").exists()  # kept on disk, listed as blocked

    listed = json.loads(bench_in_process("datasets", "list", "--json", home=bench_home).stdout)
    status = {r["version"]: (r["status"], r["blocked_reasons"]) for r in listed if r["dataset"] == "-grccs"}
    assert status[good_version] == ("current", [])
    assert status[blocked][0] == "BLOCKED" and "catalogue says 7" in status[blocked][1][0]


def test_tampered_current_version_is_blocked_at_the_next_import(instance, bench_home: Path, tmp_path: Path) -> None:
    """A stored version whose files no longer match its lock stops being current (campaigns never use it)."""
    from bench_assets.rf100vl.datasets.store import current_version, load_record

    assert _import(instance, "ds", _case("valid_base", tmp_path / "a")).success
    rec = load_record(bench_home / "datasets", "ds")
    (rec.path / "train" / "stray.png").write_bytes(b"not listed anywhere")
    outcome = _import(instance, "ds", _case("valid_base", tmp_path / "b"))
    assert not outcome.success and "no image lists" in outcome.errors[0]
    assert current_version(bench_home / "datasets", "ds") is None


def test_inbox_sensor_evaluation_warns_about_a_refused_entry(instance, bench_home: Path,
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    entry = bench_home / "inbox" / "bad name!"
    entry.mkdir(parents=True)
    _aged(entry)
    result = inbox_sensor(dg.build_sensor_context(instance=instance, resources={"home": BenchHome()}))
    assert not result.run_requests
    err = capfd.readouterr().err
    assert "WARNING - refused bad name!" in err and "is not a valid dataset name" in err
    assert refusal_marker(entry).exists()
