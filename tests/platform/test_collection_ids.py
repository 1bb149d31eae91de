"""Each pytest-xdist worker collects the suite on its own, and a run stops before its first test when two workers
collected different ids ("Different tests were collected between gw0 and gw1"). An id built from the clock, the hash
seed or a random draw (a parameter of gzip bytes carries the second it was compressed in) fails a whole run now and
then, on whichever host collects across a second boundary. This collects the suite again in a child, seconds later and
with another hash seed, and asks for every id this run collected."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_a_second_collection_later_with_another_hash_seed_gives_the_same_ids(request: pytest.FixtureRequest) -> None:
    ours = {item.nodeid for item in request.session.items}
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, timeout=300,
    )
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    theirs = {line for line in child.stdout.splitlines() if "::" in line}
    assert len(theirs) >= len(ours) > 0
    assert sorted(ours - theirs) == [], "ids that change between collections: give these parameters explicit ids"
