"""`bench` end to end against a real BENCH_HOME: import, list, failures, concurrency. The verbs run through
`bench`'s main() in the test's process (`bench` here is tests/conftest.py bench_in_process); two imports at once
run as two `bench` processes, which is what they show."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.conftest import BENCH, CORPUS, REPO, broken
from tests.conftest import bench_in_process as bench

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


def test_import_directory_then_tar_then_list(bench_home: Path, tmp_path: Path) -> None:
    r = bench("datasets", "import", str(broken("valid_base", tmp_path)), "--name", "shapes-a",
                  "--suite", "lab", home=bench_home)
    assert r.returncode == 0, r.stderr
    assert "dataset shapes-a: ok" in r.stdout
    r = bench("datasets", "import", str(CORPUS / "tars" / "good_macos.tar"), home=bench_home)
    assert r.returncode == 0, r.stderr
    r = bench("datasets", "list", "--json", home=bench_home)
    rows = {row["dataset"]: row for row in json.loads(r.stdout)}
    assert set(rows) == {"shapes-a", "good_macos"}
    assert rows["shapes-a"]["suites"] == "lab" and rows["shapes-a"]["classes"] == 2
    assert rows["good_macos"]["version"] == rows["shapes-a"]["version"]  # same content, same version
    con = duckdb.connect(str(bench_home / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM datasets WHERE is_current").fetchone() == (2,)


def test_bad_input_exits_nonzero_with_reason_on_stderr(bench_home: Path, tmp_path: Path) -> None:
    r = bench("datasets", "import", str(broken("missing_image", tmp_path)), home=bench_home)
    assert r.returncode == 1
    assert "dataset missing_image failed" in r.stderr
    assert "train/_annotations.coco.json: images[].file_name" in r.stderr and "fix:" in r.stderr
    r = bench("datasets", "import", str(CORPUS / "tars" / "symlink.tar"), home=bench_home)
    assert r.returncode == 1 and "is a link" in r.stderr
    r = bench("datasets", "import", str(tmp_path / "nope"), home=bench_home)
    assert r.returncode == 1 and "no such file" in r.stderr
    r = bench("datasets", "import", str(broken("valid_base", tmp_path)), "--name", "../evil", home=bench_home)
    assert r.returncode == 2 and "invalid dataset name" in r.stderr


def test_two_imports_at_once_lose_nothing(bench_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "BENCH_HOME": str(bench_home), "DAGSTER_HOME": str(bench_home / "dagster")}
    procs = [subprocess.Popen([*BENCH, "datasets", "import", str(broken(case, tmp_path / case)), "--name", case],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for case in ("valid_base", "bbox_slightly_outside")]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "Could not set lock" not in err and "database is locked" not in err
    con = duckdb.connect(str(bench_home / "warehouse.duckdb"), read_only=True)
    names = [r[0] for r in con.execute("SELECT dataset FROM datasets ORDER BY dataset").fetchall()]
    assert names == ["bbox_slightly_outside", "valid_base"]


def test_register_unknown_suite(bench_home: Path) -> None:
    r = bench("datasets", "register", "--suite", "nope", home=bench_home)
    assert r.returncode == 2 and "unknown suite" in r.stderr
    r = bench("datasets", "register", "--suite", "rf20vl", home=bench_home)
    assert r.returncode == 0 and "20 datasets, 20 newly registered" in r.stdout


def test_import_records_the_stated_roboflow_version(bench_home: Path, tmp_path: Path) -> None:
    """A local copy of a catalogue dataset carries no Roboflow version of its own: `--roboflow-version N` records
    it in the lock (project from the catalogue) and the warehouse; a version of another project, a non-integer
    or a dataset outside the catalogue without PROJECT/ is refused with the fix."""
    from bench_assets.rf100vl.datasets.store import load_record

    src = broken("valid_base", tmp_path)
    r = bench("datasets", "import", str(src), "--name", "cable-damage", "--roboflow-version", "1", home=bench_home)
    assert r.returncode == 0, r.stderr
    lock = load_record(bench_home / "datasets", "cable-damage").lock
    assert lock["roboflow"] == {"project_name": "cable-damage-z5nlo-9eslb-itoh", "version_id": 1}
    con = duckdb.connect(str(bench_home / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT roboflow_project, roboflow_version, locked_roboflow_version FROM datasets "
                       "WHERE dataset = 'cable-damage'").fetchone() == ("cable-damage-z5nlo-9eslb-itoh", 1, 1)
    con.close()
    r = bench("datasets", "import", str(src), "--name", "cable-damage", "--roboflow-version", "other-proj/3",
                  home=bench_home)
    assert r.returncode == 1 and "catalogue's project is 'cable-damage-z5nlo-9eslb-itoh'" in r.stderr
    r = bench("datasets", "import", str(src), "--name", "cable-damage", "--roboflow-version", "v2", home=bench_home)
    assert r.returncode == 1 and "not a positive integer version" in r.stderr
    r = bench("datasets", "import", str(src), "--name", "my-shapes", "--roboflow-version", "4", home=bench_home)
    assert r.returncode == 1 and "needs the project too" in r.stderr
    r = bench("datasets", "import", str(src), "--name", "my-shapes", "--roboflow-version", "shapes-xyz/4",
                  home=bench_home)
    assert r.returncode == 0, r.stderr
    assert load_record(bench_home / "datasets", "my-shapes").lock["roboflow"] == {
        "project_name": "shapes-xyz", "version_id": 4}


def test_campaign_datasets_outside_the_suite_are_refused(bench_home: Path) -> None:
    """--suite with --datasets runs that part of the suite (the datasets were ignored before, silently running
    the whole suite); a name outside it is refused with the fix, before anything is registered."""
    r = bench("campaign", "--model", "yolo9-t", "--suite", "mini", "--datasets", "mini-large,cable-damage",
                  "--recipe", "smoke", home=bench_home)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--datasets cable-damage: not in suite mini; drop them or the --suite" in r.stderr
    assert not (bench_home / "models").exists() and not (bench_home / "datasets").exists()
