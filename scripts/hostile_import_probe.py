"""Import each hostile corpus case through the `bench` CLI of a checkout; print one JSON line per case.

Usage: python scripts/hostile_import_probe.py CHECKOUT CORPUS PYTHON
  e.g. git worktree add /tmp/old <rev> && python scripts/hostile_import_probe.py /tmp/old tests/corpus .venv/bin/python

Per case: exit code, stack-trace lines on stderr, the CURRENT version afterwards, whether an empty
datasets/<name>/ was left, and copies of a planted victim image found outside the source (an escape).
`grccs` imports a 2-class dataset under a catalogue name with 7 classes (it must not become CURRENT).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HOSTILE = {"file_name_traversal", "file_name_absolute", "file_name_other_split", "file_name_subdir", "deep_json",
           "bbox_string", "image_id_string", "image_id_float", "image_bomb"}
VICTIM_SOURCE = "broken/valid_base/train/img_0000_png.rf.0000c0ffee000000.png"


def probe(repo: Path, corpus: Path, python: str, case: str) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="probe-"))
    try:
        home = tmp / "h" / "home"
        src = tmp / "s" / "a" / "b" / Path(case).name
        shutil.copytree(corpus / ("broken/valid_base" if case == "grccs" else case), src, symlinks=True)
        victim = src.parents[2] / "victim.png"  # where train/../../../../victim.png points
        shutil.copy(corpus / VICTIM_SOURCE, victim)
        name = "-grccs" if case == "grccs" else "case"
        env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"), "PYTHONPATH": str(repo)}
        r = subprocess.run([python, "-m", "bench_assets.cli", "datasets", "import", str(src), f"--name={name}"],
                           cwd=repo, env=env, capture_output=True, text=True)
        current = home / "datasets" / name / "CURRENT"
        folder = home / "datasets" / name
        return {"case": case, "exit": r.returncode, "traceback_lines": r.stderr.count('  File "'),
                "current": current.read_text().strip() if current.exists() else None,
                "empty_dir_left": folder.exists() and not any(folder.iterdir()),
                "victim_copies_outside_source": [str(p.relative_to(tmp)) for p in tmp.rglob("victim.png")
                                                 if p != victim]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    repo, corpus, python = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3]
    cases = sorted([f"broken/{p.name}" for p in (corpus / "broken").iterdir() if p.name in HOSTILE]
                   + [f"links/{p.name}" for p in (corpus / "links").iterdir()]) + ["grccs"]
    for case in cases:
        print(json.dumps(probe(repo, corpus, python, case)), flush=True)


if __name__ == "__main__":
    main()
