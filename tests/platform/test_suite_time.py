"""benchmarks/suite_time.py's bookkeeping: test ids read from pytest's JUnit XML as pytest writes them, and which
ids of an earlier suite are kept, moved (recorded) or missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import suite_time  # noqa: E402


def test_ids_come_back_as_pytests_own_node_ids(tmp_path: Path) -> None:
    """A real pytest run's JUnit report (a function, a class method, a parametrized case) read into node ids."""
    tests = tmp_path / "tests" / "pkg"
    tests.mkdir(parents=True)
    for d in (tmp_path / "tests", tests):
        (d / "__init__.py").write_text("")
    (tests / "test_some.py").write_text(
        "import pytest\n"
        "def test_a():\n    pass\n"
        "class TestB:\n    def test_c(self):\n        pass\n"
        "@pytest.mark.parametrize('x', [1, 2])\ndef test_d(x):\n    assert x == 1\n")
    junit = tmp_path / "junit.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist",
                          f"--junitxml={junit}", "tests"], cwd=tmp_path, capture_output=True, text=True).stdout
    found = suite_time.read_junit(junit)
    # the same run's verbose lines name each test by pytest's own node id ("<id> PASSED  [ 25%]")
    assert found["ids"] == sorted(line.split(" ")[0] for line in run.splitlines() if "::" in line.split(" ")[0])
    assert found["ids"] == ["tests/pkg/test_some.py::TestB::test_c", "tests/pkg/test_some.py::test_a",
                            "tests/pkg/test_some.py::test_d[1]", "tests/pkg/test_some.py::test_d[2]"]
    assert found["outcomes"] == {"passed": 3, "failed": 1, "errors": 0, "skipped": 0}


def test_an_id_gone_without_a_recorded_move_is_missing() -> None:
    before = ["t/a.py::x", "t/a.py::y", "t/a.py::z"]
    after = ["t/a.py::x", "t/b.py::y", "t/c.py::new"]
    ids = suite_time.compare_ids(before, after, {"t/a.py::y": "t/b.py::y", "t/a.py::z": "t/b.py::gone"})
    assert ids["moved"] == {"t/a.py::y": "t/b.py::y"}  # a move to an id that is not there does not count
    assert ids["missing"] == ["t/a.py::z"] and (ids["kept"], ids["added"]) == (1, 2)


@pytest.mark.parametrize(("a", "b", "r"), [(30.0, 60.0, 0.5), (None, 60.0, None), (30.0, 0.0, None)])
def test_ratio(a: float | None, b: float | None, r: float | None) -> None:
    assert suite_time.ratio(a, b) == r


def test_the_run_summary_names_the_ten_most_expensive_files_first() -> None:
    from tests.suite_cost import cost_lines

    per_file = {f"tests/t{i}.py": float(i) for i in range(12)}
    lines = cost_lines(100.0, 150.0, 80.0, per_file, {f: {f"{f}::a", f"{f}::b"} for f in per_file})
    assert lines[0] == "wall 100 s; machine busy 150 s (1.50 cores); pytest's process tree 80 s CPU"
    assert [line.split()[2] for line in lines[1:]] == [f"tests/t{i}.py" for i in range(11, 1, -1)]
    assert lines[1] == "    11.0 s  tests/t11.py (2 tests)"
    assert "machine busy not measured" in cost_lines(1.0, None, 0.0, {}, {})[0]


def test_repeats_report_each_sides_medians_and_keep_every_run() -> None:
    def run(wall: float, busy: float | None, code: int = 0) -> dict:
        return {"wall_s": wall, "cpu_s": wall * 1.5, "machine_busy_s": busy, "pytest_exit_code": code,
                "files": [{"file": f"t/{wall}.py"}], "ids": [f"t/{wall}.py::a"]}

    mid = suite_time.median_run([run(90.0, 140.0), run(70.0, 150.0, 1), run(80.0, None)])
    assert (mid["wall_s"], mid["cpu_s"]) == (80.0, 120.0)
    assert mid["machine_busy_s"] == 150.0  # the median of the runs that measured it (140, 150)
    assert mid["files"] == [{"file": "t/80.0.py"}] and mid["ids"] == ["t/80.0.py::a"]  # the median-wall run's
    assert mid["pytest_exit_code"] == 1  # one failed run fails the side
    assert [r["wall_s"] for r in mid["runs"]] == [90.0, 70.0, 80.0] and mid["cpu_per_wall"] == 1.5
    one = suite_time.median_run([run(60.0, 100.0)])
    assert (one["wall_s"], one["machine_busy_s"], len(one["runs"])) == (60.0, 100.0, 1)
