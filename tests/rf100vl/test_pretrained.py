"""Pretrained weights: what makes a file a model's starting point, `bench weights import|list`, and a run fine-tuned
from weights this project trained itself (yolo9-t on mini-tiny, imported as yolo9-t's pretrained weights), recorded
in stats.json, the run signature, the warehouse's runs and the run's conformance."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench_assets.rf100vl.submission.shape import model_block
from bench_assets.rf100vl.training.pretrained import (
    PretrainedError,
    list_locks,
    load_problems,
    model_dir,
    read_lock,
    starting_point,
    weights_path,
)
from bench_assets.rf100vl.training.recipes import PretrainedRef, load_recipe, recipe_path
from bench_assets.rf100vl.training.train_run import init_problems
from tests.conftest import REPO
from tests.shared_training import trained_yolo9_tiny

REF = PretrainedRef(name="LibreYOLO9t.pt", repo="LibreYOLO/LibreYOLO9t")


def _inspection(**kw: Any) -> dict[str, Any]:
    base = {"file_meta": {"model_family": "yolo9", "size": "t"}, "backbone": "backbone", "backbone_loaded": 570,
            "backbone_tensors": 570, "loaded_tensors": 1332, "model_tensors": 1338, "shape_mismatches": 6}
    return {**base, **kw}


def test_a_file_of_the_family_and_size_is_a_starting_point() -> None:
    assert load_problems("yolo9", "t", _inspection()) == []
    assert load_problems("yolo9", "t", _inspection(file_meta={})) == []  # a bare state dict names nothing


@pytest.mark.parametrize(("kw", "problem"), [
    ({"file_meta": {"model_family": "yolox", "size": "t"}}, "the file says it holds yolox weights, not yolo9"),
    ({"file_meta": {"model_family": "yolo9", "size": "s"}}, "the file says it holds size 's', not 't'"),
    ({"backbone_loaded": 569}, "only 569 of the 570 tensors of yolo9-t's backbone load from it (by name and shape)"),
    ({"loaded_tensors": 1200, "shape_mismatches": 138},
     "only 1200 of yolo9-t's 1338 tensors load from it (138 differ in shape), under 90%"),
])
def test_a_file_that_would_load_non_strictly_is_not(kw: dict[str, Any], problem: str) -> None:
    assert load_problems("yolo9", "t", _inspection(**kw)) == [problem]


def test_protocol_recipes_start_every_size_from_published_weights_and_a_missing_one_is_a_nonconformity(
        tmp_path: Path) -> None:
    loaded = load_recipe(recipe_path("yolo9"))
    assert loaded.recipe.pretrained["t"] == REF and loaded.recipe.conformant
    doc = json.loads(recipe_path("yolo9").read_text())
    del doc["pretrained"]["s"]
    path = tmp_path / "yolo9.json"
    path.write_text(json.dumps(doc))
    assert load_recipe(path).recipe.nonconformities() == [
        "pretrained names no weights for s: the protocol fine-tunes COCO-pretrained weights, a run from scratch is "
        "not comparable with published rows"]


def test_a_run_that_does_not_start_where_the_recipe_says_says_why() -> None:
    loaded = load_recipe(recipe_path("yolo9"))
    mine = {"name": "LibreYOLO9t.pt", "sha256": "ab" * 32}
    assert init_problems(loaded, "t", mine) == []
    assert init_problems(loaded, "t", None) == ["trained from scratch, the recipe starts t from LibreYOLO9t.pt"]
    assert init_problems(loaded, "t", {**mine, "name": "other.pt"}) == [
        "started from other.pt (sha256 abababababababab), the recipe names LibreYOLO9t.pt"]
    assert init_problems(load_recipe(recipe_path("yolo9", "smoke")), "t", None) == []  # names none: its own reason


def test_the_published_model_block_names_the_starting_weights_and_keeps_our_hash_apart() -> None:
    block = model_block("yolo9-t", "yolo9", "t", 640, ("LibreYOLO9t.pt", "cd" * 32))
    assert block["weights"] == "LibreYOLO9t.pt" and block["init_weights_sha256"] == "cd" * 32
    assert model_block("yolo9-t", "yolo9", "t", 640, ("", ""))["weights"] == "none (trained from scratch)"
    assert model_block("yolo9-t", "yolo9", "t", 640, None)["weights"] == "mixed (see the runs' stats.json)"


def test_a_run_never_silently_starts_from_scratch_or_from_a_changed_file(tmp_path: Path) -> None:
    assert starting_point(tmp_path, "yolo9-t", None) is None
    with pytest.raises(PretrainedError, match=r"the recipe starts yolo9-t from LibreYOLO9t.pt \(LibreYOLO/LibreYOLO9t\)"
                                              r" but no pretrained weights are stored.*bench weights import FILE "
                                              r"--model yolo9-t --name LibreYOLO9t.pt"):
        starting_point(tmp_path, "yolo9-t", REF)
    model_dir(tmp_path, "yolo9-t").mkdir(parents=True)
    weights_path(tmp_path, "yolo9-t").write_bytes(b"weights")
    lock = {"name": "LibreYOLO9t.pt", "sha256": hashlib.sha256(b"weights").hexdigest(), "source": {"kind": "file"}}
    (model_dir(tmp_path, "yolo9-t") / "lock.json").write_text(json.dumps(lock))
    got = starting_point(tmp_path, "yolo9-t", REF)
    assert got == {**lock, "path": str(weights_path(tmp_path, "yolo9-t"))}
    weights_path(tmp_path, "yolo9-t").write_bytes(b"weightz")
    with pytest.raises(PretrainedError, match="is not the .* its lock records"):
        starting_point(tmp_path, "yolo9-t", REF)


# --- with real weights ------------------------------------------------------------------------------------------

pytestmark_real = pytest.mark.integration


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class _Launched:
    def __init__(self, returncode: int, wall_seconds: float) -> None:
        self.returncode, self.timed_out, self.wall_seconds = returncode, False, wall_seconds


def _launch(spec_path: Path, run_dir: Path, spec: Any) -> _Launched:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "bench_assets.rf100vl.training.child.train", str(spec_path)],
                          cwd=REPO, env=_env(), capture_output=True, text=True)
    (run_dir / "child.log").write_text(proc.stdout + proc.stderr)
    return _Launched(proc.returncode, time.monotonic() - t0)


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """mini-tiny stored in a home, yolo9-t weights trained on it (our own file: the suite's shared two-epoch run on
    mini-tiny), and an untrained yolox-n checkpoint as LibreYOLO saves one (a file of another family; training it
    would add nothing to what it is)."""
    from bench_assets.rf100vl.datasets.sources import SourceSpec
    from bench_assets.rf100vl.datasets.store import materialize_dataset
    from bench_assets.rf100vl.training.child.common import build_model

    root = tmp_path_factory.mktemp("pretrained")
    home = root / "home"
    record = materialize_dataset(home, "mini-tiny", SourceSpec(kind="mini"), home / "cache")
    run, proc = trained_yolo9_tiny(tmp_path_factory)  # the suite's shared run (tests/shared_training.py)
    assert proc.returncode == 0, proc.stderr[-2000:]
    files = {"yolo9": run / "weights" / "best.pt", "yolox": root / "yolox-n.pt"}
    build_model("yolox", "n", 2, "cpu").save(str(files["yolox"]))
    return {"home": home, "record": record, "files": files, "root": root}


class _RunsCommand:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (self.command,))


def _pickle_running(command: str) -> bytes:
    """A torch checkpoint (a zip holding a pickle) whose `model` unpickles by running `command`."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save({"model": _RunsCommand(command)}, buf)
    return buf.getvalue()


def _bench(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    from tests.conftest import bench_in_process

    return bench_in_process(*args, home=home)


@pytestmark_real
def test_bench_weights_import_checks_stores_and_lists_with_the_sha256(ours: dict[str, Any], tmp_path: Path) -> None:
    home, mine = tmp_path / "home", ours["files"]["yolo9"]
    wrong = _bench(home, "weights", "import", str(ours["files"]["yolox"]), "--model", "yolo9-t")
    assert wrong.returncode == 1
    assert ("not a starting point for yolo9-t: the file says it holds yolox weights, not yolo9; the file says it holds "
            "size 'n', not 't'; only 0 of the 570 tensors of yolo9-t's backbone load") in wrong.stderr
    assert not model_dir(home, "yolo9-t").exists()
    garbage = tmp_path / "notes.pt"
    garbage.write_text("not weights")
    bad = _bench(home, "weights", "import", str(garbage), "--model", "yolo9-t")
    assert bad.returncode == 1 and f"{garbage}: cannot be read as yolo9-t weights" in bad.stderr
    # A hostile file: a checkpoint whose pickle runs a command when unpickled. It is read weights-only, so refused
    # and the command never runs.
    marker, hostile = tmp_path / "pwned", tmp_path / "hostile.pt"
    hostile.write_bytes(_pickle_running(f"touch {marker}"))
    evil = _bench(home, "weights", "import", str(hostile), "--model", "yolo9-t")
    assert evil.returncode == 1 and f"{hostile}: cannot be read as yolo9-t weights" in evil.stderr
    assert not marker.exists() and not model_dir(home, "yolo9-t").exists()

    ok = _bench(home, "weights", "import", str(mine), "--model", "yolo9-t", "--name", "LibreYOLO9t.pt")
    assert ok.returncode == 0, ok.stderr
    sha = hashlib.sha256(mine.read_bytes()).hexdigest()
    assert weights_path(home, "yolo9-t").read_bytes() == mine.read_bytes()
    lock = read_lock(home, "yolo9-t")
    assert lock is not None and lock["sha256"] == sha and lock["name"] == "LibreYOLO9t.pt"
    assert lock["backbone_loaded"] == lock["backbone_tensors"] > 0 and lock["source"] == {"kind": "file",
                                                                                           "path": str(mine)}
    listed = json.loads(_bench(home, "weights", "list", "--json").stdout)
    assert [(e["model"], e["sha256"]) for e in listed] == [("yolo9-t", sha)] == [(e["model"], e["sha256"])
                                                                                 for e in list_locks(home)]


@pytestmark_real
def test_a_run_fine_tuned_from_imported_weights_records_them_everywhere(ours: dict[str, Any], tmp_path: Path) -> None:
    from bench_assets.rf100vl.report.warehouse_tables import _run_rows
    from bench_assets.rf100vl.training.models import model_recipe
    from bench_assets.rf100vl.training.pretrained import import_weights
    from bench_assets.rf100vl.training.train_run import TrainRequest, train_partition

    home = ours["home"]
    lock = import_weights(home, "yolo9-t", ours["files"]["yolo9"], name="LibreYOLO9t.pt")
    doc = json.loads(recipe_path("yolo9", "smoke").read_text())
    doc["protocol"]["epochs"] = 1
    doc["sizes"]["t"]["imgsz"] = 128
    doc["pretrained"] = {"t": REF.model_dump()}
    recipe_file = tmp_path / "yolo9.json"
    recipe_file.write_text(json.dumps(doc))
    model, recipe = model_recipe(home, "yolo9-t", str(recipe_file))
    init = starting_point(home, "yolo9-t", recipe.recipe.pretrained["t"])
    req = TrainRequest(model=model, recipe=recipe, dataset=ours["record"], runs_dir=home / "runs", init_weights=init)
    out = train_partition(req, _launch)
    st = out.stats
    load = st["init_weights"].pop("load")
    assert st["init_weights"] == {"name": "LibreYOLO9t.pt", "sha256": lock["sha256"], "source": lock["source"]}
    assert load["backbone_loaded"] == load["backbone_tensors"] == 570 and load["loaded_tensors"] > 1300
    assert st["signature_fields"]["init_weights_sha256"] == lock["sha256"]
    assert json.loads((out.run_dir / "train_spec.json").read_text())["init_weights"] == str(weights_path(home,
                                                                                                          "yolo9-t"))
    assert f"init={weights_path(home, 'yolo9-t')}" in (out.run_dir / "child.log").read_text()
    assert not any("recipe names" in n or "from scratch" in n for n in st["recipe"]["nonconformities"])
    row = _run_rows(home).set_index("run_signature").loc[st["run_signature"]]
    assert (row["init_weights"], row["init_weights_sha256"]) == ("LibreYOLO9t.pt", lock["sha256"])

    # The same run from scratch is another run (its own signature), recorded as such and non-conformant for it.
    scratch = train_partition(TrainRequest(model=model, recipe=recipe, dataset=ours["record"],
                                           runs_dir=home / "runs"), _launch)
    assert scratch.run_dir != out.run_dir and scratch.stats["init_weights"] is None
    assert "trained from scratch, the recipe starts t from LibreYOLO9t.pt" in scratch.stats["recipe"]["nonconformities"]
    assert scratch.stats["recipe"]["conformant"] is False


def _stats_with(load: dict[str, Any] | None) -> dict[str, Any]:
    return {"init_weights": {"name": "LibreYOLO9t.pt", "sha256": "ab" * 32, "load": load}}


LOAD = {"file_tensors": 1338, "model_tensors": 1338, "loaded_tensors": 1332, "backbone": "backbone",
        "backbone_tensors": 570, "backbone_loaded": 570}


def test_the_weights_loaded_check_passes_a_whole_load_and_names_what_did_not_load() -> None:
    from bench_assets.rf100vl.scoring.sanity import weights_loaded

    assert weights_loaded("p", {"init_weights": None}).passed
    ok = weights_loaded("p", _stats_with(LOAD))
    assert ok.passed and ok.description == "p: started from LibreYOLO9t.pt: 1332 of 1338 tensors, the whole backbone"
    bad = weights_loaded("p", _stats_with({**LOAD, "loaded_tensors": 0, "backbone_loaded": 0}))
    assert not bad.passed and bad.description == (
        "p: the run did not start from LibreYOLO9t.pt: only 0 of the 570 tensors of its backbone hold the file's "
        "values; only 0 of its 1338 tensors do (0% < 90%): LibreYOLO loaded the file non-strictly and trained the "
        "rest from random weights (another family's or size's file?)")
    assert not weights_loaded("p", _stats_with({**LOAD, "backbone_loaded": 569})).passed
    assert not weights_loaded("p", _stats_with({**LOAD, "loaded_tensors": 1200})).passed
    assert not weights_loaded("p", _stats_with(None)).passed  # given weights, but nothing measured


@pytestmark_real
def test_a_run_given_another_familys_bare_weights_trains_but_fails_the_weights_loaded_check(
        ours: dict[str, Any], tmp_path: Path) -> None:
    """The planted defect: yolox-n's state dict without its metadata, handed to yolo9-t. LibreYOLO loads it
    non-strictly (a warning in its log) and trains yolo9-t from random weights; the check names it."""
    import torch

    from bench_assets.rf100vl.scoring.sanity import weights_loaded
    from bench_assets.rf100vl.training.models import model_recipe
    from bench_assets.rf100vl.training.train_run import TrainRequest, train_partition

    bare = tmp_path / "LibreYOLO9t.pt"
    torch.save(torch.load(ours["files"]["yolox"], map_location="cpu", weights_only=False)["model"], bare)
    doc = json.loads(recipe_path("yolo9", "smoke").read_text())
    doc["protocol"]["epochs"], doc["sizes"]["t"]["imgsz"] = 1, 128
    recipe_file = tmp_path / "yolo9.json"
    recipe_file.write_text(json.dumps(doc))
    model, recipe = model_recipe(ours["home"], "yolo9-t", str(recipe_file))
    init = {"name": bare.name, "sha256": hashlib.sha256(bare.read_bytes()).hexdigest(), "source": {"kind": "file"},
            "path": str(bare)}
    out = train_partition(TrainRequest(model=model, recipe=recipe, dataset=ours["record"],
                                       runs_dir=tmp_path / "runs", init_weights=init), _launch)
    load = out.stats["init_weights"]["load"]
    assert (load["loaded_tensors"], load["backbone_loaded"]) == (0, 0) and load["backbone_tensors"] == 570
    finding = weights_loaded("yolo9-t/mini-tiny", out.stats)
    assert not finding.passed and "only 0 of the 570 tensors of its backbone" in finding.description
