"""tests/suite_gc.py ends each pytest process with one collection and a freeze, so pytest's unraisable-exception
plugin has nothing left to walk: a finalizer that raises in garbage only a collection finds must still be reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration  # a pytest run of its own in a fresh interpreter

CYCLE = '''
import gc


class Cycle:
    def __del__(self):
        raise RuntimeError("raised by the finalizer of a cycle")


def test_leaves_a_cycle_only_a_collection_finds():
    gc.disable()  # nothing collects it before the session ends
    cycle = Cycle()
    cycle.me = cycle
'''


def test_a_finalizer_raising_at_the_end_of_the_run_is_still_reported(tmp_path: Path) -> None:
    (tmp_path / "test_cycle.py").write_text(CYCLE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.suite_gc",
                          "--rootdir", str(tmp_path), str(tmp_path / "test_cycle.py")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr
    assert "PytestUnraisableExceptionWarning" in text and "raised by the finalizer of a cycle" in text, text
