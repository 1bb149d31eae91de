"""The order `make test`'s workers take the files in (tests/suite_schedule.py): the system tests first as one unit,
then the costliest files, then the rest; a renamed file in the lists is caught here, not by a slower suite."""

from __future__ import annotations

from tests.conftest import REPO
from tests.suite_schedule import HEAVY_FILES, SYSTEM_FILES, SYSTEM_SCOPE, next_scope, rank, scope_of


def test_every_listed_file_exists_once() -> None:
    listed = [*SYSTEM_FILES, *HEAVY_FILES]
    assert len(set(listed)) == len(listed)
    assert [f for f in listed if not (REPO / f).is_file()] == []


def test_the_system_tests_are_one_unit_and_other_files_their_own() -> None:
    assert {scope_of(f"{f}::test_x") for f in SYSTEM_FILES} == {SYSTEM_SCOPE}
    assert scope_of("tests/rf100vl/test_campaign.py::test_a[p::q]") == "tests/rf100vl/test_campaign.py"


def test_the_system_tests_go_first_then_the_costliest_then_xdists_order() -> None:
    queue = ["tests/a.py", HEAVY_FILES[3], "tests/b.py", HEAVY_FILES[0], SYSTEM_SCOPE]
    order = []
    while queue:
        order.append(next_scope(queue))
        queue.remove(order[-1])
    assert order == [SYSTEM_SCOPE, HEAVY_FILES[0], HEAVY_FILES[3], "tests/a.py", "tests/b.py"]
    assert rank(SYSTEM_SCOPE) < rank(HEAVY_FILES[0]) < rank(HEAVY_FILES[-1]) < rank("tests/unlisted.py")
