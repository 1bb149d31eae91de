"""The order `make test`'s workers take the files in (tests/suite_schedule.py): the system tests first as one unit,
then the units (a file, or the files importing torch in the worker together) the committed measurement found costly,
most expensive first, then the rest in xdist's order."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import REPO
from tests.suite_schedule import (
    COSTS,
    HEAVY_S,
    SYSTEM_FILES,
    SYSTEM_SCOPE,
    TORCH_FILES,
    TORCH_SCOPE,
    heavy_files,
    measured_heavy_files,
    next_scope,
    rank,
    scope_of,
)


def test_the_system_files_exist_and_the_measurement_orders_files_that_exist() -> None:
    assert [f for f in SYSTEM_FILES + TORCH_FILES if not (REPO / f).is_file()] == []
    heavy = measured_heavy_files()
    assert COSTS.is_file() and len(heavy) >= 10, heavy  # the committed measurement is read, not silently absent
    assert "tests/rf100vl/test_campaign.py" in heavy and not set(heavy) & set(SYSTEM_FILES)
    assert TORCH_SCOPE in heavy and not set(heavy) & set(TORCH_FILES)  # the unit is costed, not its files
    assert [f for f in TORCH_FILES if "    import torch\n" not in (REPO / f).read_text()] == []  # still import it
    assert [f for f in heavy if (REPO / f).is_file()], heavy


def test_heavy_files_are_the_costly_ones_most_expensive_first() -> None:
    result = {"this": {"files": [
        {"file": "tests/a.py", "seconds": HEAVY_S},
        {"file": "tests/b.py", "seconds": HEAVY_S - 0.1},
        {"file": SYSTEM_FILES[0], "seconds": 200.0},
        {"file": "tests/c.py", "seconds": 90.0},
    ]}}
    assert heavy_files(result) == ("tests/c.py", "tests/a.py")
    assert heavy_files({}) == ()


def test_a_units_files_are_costed_together() -> None:
    cheap = HEAVY_S / len(TORCH_FILES) + 0.01  # each below HEAVY_S, together above it
    files = [{"file": f, "seconds": cheap} for f in TORCH_FILES] + [{"file": "tests/a.py", "seconds": HEAVY_S + 1}]
    assert heavy_files({"this": {"files": files}}) == ("tests/a.py", TORCH_SCOPE)
    files[0]["seconds"] = 100.0
    assert heavy_files({"this": {"files": files}}) == (TORCH_SCOPE, "tests/a.py")


def test_a_missing_or_broken_measurement_leaves_xdists_order(tmp_path: Path) -> None:
    assert measured_heavy_files(tmp_path / "absent.json") == ()
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert measured_heavy_files(broken) == ()
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"this": {"files": "not a list of files"}}))
    assert measured_heavy_files(wrong) == ()


def test_the_system_tests_are_one_unit_the_torch_files_another_and_other_files_their_own() -> None:
    assert {scope_of(f"{f}::test_x") for f in SYSTEM_FILES} == {SYSTEM_SCOPE}
    assert {scope_of(f"{f}::test_x[a]") for f in TORCH_FILES} == {TORCH_SCOPE}
    assert not set(SYSTEM_FILES) & set(TORCH_FILES)
    assert scope_of("tests/rf100vl/test_campaign.py::test_a[p::q]") == "tests/rf100vl/test_campaign.py"


def test_the_system_tests_go_first_then_the_costliest_then_xdists_order() -> None:
    heavy = ("tests/h0.py", "tests/h1.py", "tests/h2.py", "tests/h3.py")
    queue = ["tests/a.py", heavy[3], "tests/b.py", heavy[0], SYSTEM_SCOPE]
    order = []
    while queue:
        order.append(next_scope(queue, heavy))
        queue.remove(order[-1])
    assert order == [SYSTEM_SCOPE, heavy[0], heavy[3], "tests/a.py", "tests/b.py"]
    assert rank(SYSTEM_SCOPE, heavy) < rank(heavy[0], heavy) < rank(heavy[-1], heavy) < rank("tests/x.py", heavy)
