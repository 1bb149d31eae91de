"""A third family is a folder and one entry in FAMILIES: the toy family under tests/report/toy_family registers
through the same contribution as rf100vl and augbench; its table lands in the warehouse and its check runs on
`report/warehouse`, with no edit to report/ or the platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_assets.platform.instance import execute, open_instance
from bench_assets.platform.warehouse import query
from tests.report.toy_family import definitions as toy

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup


@pytest.fixture
def location():  # noqa: ANN201 - the composed Definitions
    import definitions

    return definitions.build_location((*definitions.FAMILIES, toy))


def test_the_toy_family_is_in_the_composed_location(location) -> None:  # noqa: ANN001
    graph = location.resolve_asset_graph()
    warehouse = graph.get(toy.WAREHOUSE_KEY)
    assert toy.tallies.key in warehouse.parent_keys  # the loader depends on what the toy table reads
    assert any(k.name == "toy_tallies_non_negative" for k in graph.asset_check_keys)
    # ...beside the existing families' contributions, which are unchanged
    assert {"selection_vs_test", "augbench_coverage"} <= {k.name for k in graph.asset_check_keys}


def test_toy_table_lands_in_the_warehouse_and_its_check_runs(location, tmp_path: Path) -> None:  # noqa: ANN001
    home = tmp_path / "bench"
    instance = open_instance(home)
    try:
        assert execute(instance, location.resolve_job_def(toy.toy_job.name)).success
        out = execute(instance, location.resolve_job_def("warehouse_job"))
        assert "check toy_tallies_non_negative" not in " ".join(out.errors)
        rows = query(home / "warehouse.duckdb", "SELECT thing, count FROM toy_tallies ORDER BY thing")
        assert rows == [{"thing": "apples", "count": 3}, {"thing": "pears", "count": 5}]
        evaluations = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [k for k in location.resolve_asset_graph().asset_check_keys if k.name == "toy_tallies_non_negative"])
        assert [r.status.value for r in evaluations.values()] == ["SUCCEEDED"]

        config = {"ops": {toy.tallies.op.name: {"config": {"tallies": {"apples": -2, "pears": 5}}}}}
        assert execute(instance, location.resolve_job_def(toy.toy_job.name), run_config=config).success
        out = execute(instance, location.resolve_job_def("warehouse_job"))
        assert not out.success
        expected = "check toy_tallies_non_negative failed on report/warehouse: 1 negative tally(ies): apples=-2"
        assert expected in out.errors
    finally:
        instance.dispose()
