"""tests/suite_gc.py ends each pytest process with one collection and a freeze, so pytest's unraisable-exception
plugin has nothing left to walk: a finalizer that raises in garbage only a collection finds must still be reported.
During the run it freezes what survives a test that imported a library, and only then."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import suite_gc
from tests.conftest import REPO

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


@pytest.mark.integration  # a pytest run of its own in a fresh interpreter
def test_a_finalizer_raising_at_the_end_of_the_run_is_still_reported(tmp_path: Path) -> None:
    (tmp_path / "test_cycle.py").write_text(CYCLE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.suite_gc",
                          "--rootdir", str(tmp_path), str(tmp_path / "test_cycle.py")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr
    assert "PytestUnraisableExceptionWarning" in text and "raised by the finalizer of a cycle" in text, text


def test_a_test_that_imported_a_library_is_followed_by_one_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    base = len(sys.modules)
    monkeypatch.setattr(suite_gc, "_modules_frozen", [base])
    assert not suite_gc.freeze_new_libraries(base + suite_gc.NEW_MODULES - 1)  # a few modules: no collection
    alive = [[i] for i in range(1000)]  # container objects the collector tracks
    frozen = gc.get_freeze_count()
    assert suite_gc.freeze_new_libraries(base + suite_gc.NEW_MODULES)
    assert gc.get_freeze_count() >= frozen + len(alive)
    assert suite_gc._modules_frozen == [base + suite_gc.NEW_MODULES]
    assert not suite_gc.freeze_new_libraries(base + suite_gc.NEW_MODULES + 1)  # counted from the last freeze
