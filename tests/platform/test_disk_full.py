"""A full disk, for real: BENCH_HOME on a small tmpfs mounted in a private mount namespace.

`unshare -rm` gives the child its own mount table (as a mapped root when the caller is not root), so the
test mounts nothing on the host. Where neither unshare nor root is available the test is skipped with
the reason; everywhere else it runs the real import against a disk that cannot hold it.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO, mount_namespace_prefix

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

SCRIPT = r'''
import contextlib, io, json, sys
from pathlib import Path
from bench_assets.cli import main
from bench_assets.platform.fsutil import DiskSpaceError
from bench_assets.rf100vl.datasets.sources import SourceSpec
from bench_assets.rf100vl.datasets.store import materialize_dataset

out = {}
for label, argv in (("too_big", ["datasets", "import", sys.argv[1], "--name", "too-big"]),
                    ("small_ok", ["datasets", "import", sys.argv[2], "--name", "small"])):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    out[label] = {"code": code, "stderr": err.getvalue()}
# No size known in advance (like the rf100vl package path): the write itself hits ENOSPC.
tiny = Path(sys.argv[3])
try:
    materialize_dataset(tiny, "mini-large", SourceSpec(kind="mini"), tiny / "cache")
    out["enospc"] = "imported?!"
except DiskSpaceError as exc:
    out["enospc"] = str(exc)
out["tiny_left"] = sorted(str(p.relative_to(tiny)) for p in tiny.rglob("*"))
print("RESULT " + json.dumps(out))
'''


def _big_tar(path: Path) -> None:
    """valid_base plus 200 MB of zeros: 200 KB on disk, far more than the 48 MB disk once extracted."""
    with tarfile.open(path, "w:gz") as tar:
        tar.add(CORPUS / "broken" / "valid_base", arcname="too-big")
        info = tarfile.TarInfo("too-big/train/zeros.bin")
        info.size = 200 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert path.stat().st_size < 1 << 20
    assert gzip.open(path).read(10)  # a real gzip stream


def test_full_disk_is_refused_with_path_needed_and_free(tmp_path: Path) -> None:
    prefix = mount_namespace_prefix()
    if prefix is None:
        pytest.skip("no private mount namespace here (unshare missing or refused); the full-disk test needs one")
    home, tiny = tmp_path / "home", tmp_path / "tiny"
    home.mkdir()
    tiny.mkdir()
    big = tmp_path / "too-big.tar.gz"
    _big_tar(big)
    small = tmp_path / "small"
    shutil.copytree(CORPUS / "broken" / "valid_base", small)
    shell = (f"mount -t tmpfs -o size=48m tmpfs {home} && mount -t tmpfs -o size=1m tmpfs {tiny} && "
             f"exec {sys.executable} -c \"$0\" {big} {small} {tiny}")
    env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"), "PYTHONPATH": str(REPO)}
    r = subprocess.run([*prefix, "sh", "-c", shell, SCRIPT], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=300)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, r.stdout[-2000:] + r.stderr[-4000:]
    import json

    out = json.loads(line.removeprefix("RESULT "))

    too_big = out["too_big"]
    assert too_big["code"] == 1
    assert "not enough disk space under" in too_big["stderr"] and "MB free" in too_big["stderr"]
    assert "this needs about 2" in too_big["stderr"]  # ~226 MB of members (+ margin) named, not a bare errno
    assert "Traceback" not in too_big["stderr"] and "Errno 28" not in too_big["stderr"], too_big["stderr"]

    small_ok = out["small_ok"]  # fits, but training would not: a warning in words, not a failed import
    assert small_ok["code"] == 0, small_ok["stderr"][-3000:]
    assert "check disk_projection warns" in small_ok["stderr"]
    assert "GB with the 640 px cache" in small_ok["stderr"] and "GB free under" in small_ok["stderr"]
    assert "NOT enough for the default cache" in small_ok["stderr"]

    assert out["enospc"].startswith("not enough disk space under") and "MB free" in out["enospc"]
    assert not [p for p in out["tiny_left"] if ".tmp-" in p or p.startswith("datasets/")], out["tiny_left"]
