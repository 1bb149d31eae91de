"""The suite's shared inputs (tests/shared_cache.py): built once per key, rebuilt after a half build, shared by
concurrent processes under the lock, and copied with the recorded paths rewritten."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared_cache import private_copy, shared, shared_root


def test_one_build_per_key_and_a_new_key_for_new_arguments(tmp_path_factory: pytest.TempPathFactory) -> None:
    calls: list[Path] = []

    def build(folder: Path) -> None:
        calls.append(folder)
        (folder / "x.txt").write_text("built")

    a = shared(tmp_path_factory, "unit-once", {"n": 1}, build)
    assert shared(tmp_path_factory, "unit-once", {"n": 1}, build) == a and len(calls) == 1
    b = shared(tmp_path_factory, "unit-once", {"n": 2}, build)
    assert b != a and len(calls) == 2 and (b / "x.txt").read_text() == "built"


def test_a_half_build_is_removed_and_built_again(tmp_path_factory: pytest.TempPathFactory) -> None:
    def dies(folder: Path) -> None:
        (folder / "partial").write_text("half")
        raise RuntimeError("killed mid-build")

    with pytest.raises(RuntimeError):
        shared(tmp_path_factory, "unit-half", {}, dies)
    done = shared(tmp_path_factory, "unit-half", {}, lambda f: (f / "whole").write_text("ok"))
    assert sorted(p.name for p in done.iterdir() if not p.name.startswith(".")) == ["whole"]


def test_concurrent_processes_build_once(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """Four processes ask for the same input at once (as xdist workers do): one builds, all get its folder."""
    root = shared_root(tmp_path_factory)
    script = (
        "import sys, time, pathlib\n"
        "from tests.shared_cache import shared\n"
        "class F:\n"
        f"    def getbasetemp(self): return pathlib.Path({str(root.parent)!r})\n"
        "def build(f):\n"
        "    time.sleep(0.5)\n"
        "    with open(sys.argv[1], 'a') as log: log.write('built\\n')\n"
        "print(shared(F(), 'unit-concurrent', {}, build))\n")
    log = tmp_path / "builds.log"
    env_py = [sys.executable, "-c", script, str(log)]
    repo = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen(env_py, cwd=repo, stdout=subprocess.PIPE, text=True,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)}) for _ in range(4)]
    outs = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(outs) == 1 and log.read_text() == "built\n"


def test_a_private_copy_records_its_own_paths(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    def build(folder: Path) -> None:
        (folder / "runs").mkdir()
        (folder / "runs" / "stats.json").write_text(json.dumps({"run_dir": str(folder / "runs")}))
        (folder / "blob.bin").write_bytes(str(folder).encode() + b"\xff\xfe")

    src = shared(tmp_path_factory, "unit-copy", {}, build)
    dst = private_copy(src, tmp_path / "copy")
    assert json.loads((dst / "runs" / "stats.json").read_text()) == {"run_dir": str(dst / "runs")}
    assert json.loads((src / "runs" / "stats.json").read_text()) == {"run_dir": str(src / "runs")}
    assert (dst / "blob.bin").read_bytes() == (src / "blob.bin").read_bytes()  # binary files are copied as they are
    assert not list(dst.glob(".shared-complete"))
