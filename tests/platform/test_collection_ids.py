"""What collecting the suite does, seen from a fresh process: each pytest-xdist worker collects the whole suite on
its own before its first test.

- A run stops before its first test when two workers collected different ids ("Different tests were collected
  between gw0 and gw1"). An id built from the clock, the hash seed or a random draw (a parameter of gzip bytes
  carries the second it was compressed in) fails a whole run now and then, on whichever host collects across a
  second boundary. This collects the suite again in a child, seconds later and with another hash seed, and asks for
  every id this run collected.
- Every worker pays for what collection imports, even for the tests it never runs: a library that takes a second or
  more to import (torch, scipy.stats, kornia, ...) is imported inside the tests that use it, not at module level."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("torch", "torchvision", "libreyolo", "kornia", "albumentations", "scipy", "cv2", "pandas", "matplotlib")
CHILD = ("import sys, pytest\n"
         "code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider'])\n"
         f"print('imported by collection:', sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
         "sys.exit(code)\n")


@pytest.fixture(scope="module")
def collection() -> subprocess.CompletedProcess[str]:
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    child = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed},
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    return child


@pytest.mark.slow
def test_a_second_collection_later_with_another_hash_seed_gives_the_same_ids(
        request: pytest.FixtureRequest, collection: subprocess.CompletedProcess[str]) -> None:
    ours = {item.nodeid for item in request.session.items}
    theirs = {line for line in collection.stdout.splitlines() if "::" in line}
    assert len(theirs) >= len(ours) > 0
    assert sorted(ours - theirs) == [], "ids that change between collections: give these parameters explicit ids"


@pytest.mark.slow
def test_collection_imports_no_heavy_library(collection: subprocess.CompletedProcess[str]) -> None:
    assert "imported by collection: []" in collection.stdout, collection.stdout[-500:]
