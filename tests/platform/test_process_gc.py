"""The garbage collector at the two ends of the project's processes (bench_assets/platform/process_gc.py): no
collections while a block of imports runs, what it loaded frozen after; and an exit without the interpreter's last
collections, nothing else about the ending changed (the exit code, what was printed, atexit handlers). Each entry
point is started as `python -m` starts it, with an atexit handler of the test's own that reports whether the live
objects were frozen when the process ended. Every case runs in a fresh interpreter: freezing is for a whole
process, never for the pytest worker's."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.shared_training import train_spec

REPORT_AT_EXIT = ("import atexit, gc, runpy, sys\n"
                  "atexit.register(lambda: print(f'frozen at exit: {gc.get_freeze_count() > 0}', file=sys.stderr))\n")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_exit_process_keeps_the_code_the_output_and_the_atexit_handlers() -> None:
    done = _python(REPORT_AT_EXIT + "from bench_assets.platform.process_gc import exit_process\n"
                   "cycle = [];  cycle.append(cycle)\n"
                   "sys.stdout.write('written without a newline')\n"
                   "exit_process(3)\n")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "written without a newline"
    assert "frozen at exit: True" in done.stderr


def test_a_paused_block_runs_no_collection_then_freezes_what_it_loaded(tmp_path: Path) -> None:
    (tmp_path / "heavy_module.py").write_text(  # an import that allocates like a library: cycles, many of them
        "NODES = []\nfor _ in range(300_000):\n    node = []\n    node.append(node)\n    NODES.append(node)\n")
    done = _python(
        f"import gc, sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
        "from bench_assets.platform.process_gc import collections_paused, load_without_collections\n"
        "started = []\n"
        "gc.callbacks.append(lambda phase, info: started.append(info['generation']) if phase == 'start' else None)\n"
        "load_without_collections(['heavy_module'])\n"
        "during, frozen, enabled = len(started), gc.get_freeze_count(), gc.isenabled()\n"
        "import heavy_module\n"
        "for _ in range(300_000):\n    node = []\n    node.append(node)\n"
        "after = len(started) - during\n"
        "gc.disable()\n"
        "with collections_paused():\n    pass\n"
        "print(during, frozen >= len(heavy_module.NODES), enabled, after > 0, gc.isenabled())\n")
    assert done.returncode == 0, done.stderr
    # none during the import, the module's objects frozen, the collector back on and collecting; left off when it
    # was off before the block
    assert done.stdout.split() == ["0", "True", "True", "True", "False"], done.stdout


def test_the_same_import_with_the_collector_on_collects(tmp_path: Path) -> None:
    (tmp_path / "heavy_module.py").write_text(
        "NODES = []\nfor _ in range(300_000):\n    node = []\n    node.append(node)\n    NODES.append(node)\n")
    done = _python(f"import gc, sys\nsys.path.insert(0, {str(tmp_path)!r})\nstarted = []\n"
                   "gc.callbacks.append(lambda phase, info: started.append(1) if phase == 'start' else None)\n"
                   "import heavy_module\nprint(len(started))\n")
    assert int(done.stdout) > 0  # what the paused block saves is real: this import triggers collections


def test_a_process_that_returns_normally_is_not_frozen() -> None:
    done = _python(REPORT_AT_EXIT + "print('plain')\n")  # the report itself tells the two apart
    assert done.returncode == 0 and "frozen at exit: False" in done.stderr


@pytest.mark.parametrize("module,argv,code,says", [
    ("bench_assets.rf100vl.training.child.train", [], 1, "usage: python -m bench_assets.rf100vl.training.child.train"),
    ("bench_assets.rf100vl.training.child.predict", [], 1, "usage: python -m"),
    ("bench_assets.rf100vl.training.child.weights", [], 2, "usage: python -m"),
    ("bench_assets.cli.score", ["/nonexistent/gt.json", "/nonexistent/pred.json"], 1, "no such file"),
], ids=["train-child", "predict-child", "weights-child", "bench-score"])
def test_each_entry_point_ends_frozen_with_its_own_code(module: str, argv: list[str], code: int, says: str) -> None:
    done = _python(REPORT_AT_EXIT + f"sys.argv = [{module!r}, *{argv!r}]\n"
                   f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n")
    assert done.returncode == code, done.stderr
    assert says in done.stderr and "frozen at exit: True" in done.stderr, done.stderr


def test_bench_itself_ends_as_a_python_program_does() -> None:
    """Not frozen: a `bench` process may be a cluster's Celery worker or the one restarting its servers
    (bench_assets/cli/__main__.py says why)."""
    done = _python(REPORT_AT_EXIT + "sys.argv = ['bench', 'score', '/nonexistent/gt.json', '/nonexistent/pred.json']\n"
                   "runpy.run_module('bench_assets.cli', run_name='__main__', alter_sys=True)\n")
    assert done.returncode == 1 and "frozen at exit: False" in done.stderr, done.stderr


def _main_blocks() -> dict[str, str]:
    """Each module under bench_assets/ with an `if __name__ == "__main__":` block: the block's source."""
    blocks = {}
    for path in sorted((REPO / "bench_assets").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(
                    node.test):
                blocks[str(path.relative_to(REPO))] = ast.unparse(node)
    return blocks


def test_every_program_under_bench_assets_ends_through_exit_process() -> None:
    blocks = _main_blocks()
    generators = {str(Path("bench_assets/augbench/transform_specs.py")),  # regenerates a doc: seconds, no torch
                  str(Path("bench_assets/cli/__main__.py"))}  # bench: test_bench_itself_ends_as_a_python_program_does
    assert "bench_assets/rf100vl/training/child/families.py" in blocks and generators <= set(blocks)
    assert [f for f, src in blocks.items() if f not in generators and "exit_process(" not in src] == []


def _broken_torch(tmp_path: Path) -> dict[str, str]:
    """An environment whose `torch` cannot be imported (a planted package earlier on the path)."""
    (tmp_path / "planted" / "torch").mkdir(parents=True)
    (tmp_path / "planted" / "torch" / "__init__.py").write_text("raise ImportError('planted: this torch is broken')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "planted"), str(REPO)])}


def _train_child(tmp_path: Path, spec: dict[str, object]) -> dict[str, object]:
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    subprocess.run([sys.executable, "-m", "bench_assets.rf100vl.training.child.train", str(tmp_path / "spec.json")],
                   cwd=REPO, env=_broken_torch(tmp_path), capture_output=True, text=True, timeout=120)
    return json.loads((tmp_path / "run" / "result.json").read_text())


def test_a_training_child_whose_libraries_fail_to_import_still_writes_its_result(tmp_path: Path) -> None:
    result = _train_child(tmp_path, train_spec(tmp_path / "no-dataset", tmp_path / "run"))
    assert result["status"] == "failed" and "planted: this torch is broken" in result["message"], result


def test_a_spec_that_contradicts_itself_fails_before_the_libraries_load(tmp_path: Path) -> None:
    result = _train_child(tmp_path, train_spec(tmp_path / "no-dataset", tmp_path / "run", num_classes=3))
    assert result["status"] == "failed" and "num_classes=3 but 2 class_names" in result["message"], result


def test_the_weights_child_names_a_library_that_fails_to_import(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bench_assets.rf100vl.training.child.weights", "yolo9", "t",
                           str(tmp_path / "w.pt")], cwd=REPO, env=_broken_torch(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and "ImportError: planted: this torch is broken" in done.stderr, done.stderr
