"""The toy family: `toy/tallies` writes BENCH_HOME/toy/tallies.json; the warehouse gets a `toy_tallies` table from
it; `toy_tallies_non_negative` checks that table on `report/warehouse`."""

import json
from pathlib import Path

import dagster as dg

from bench_assets.platform.check_results import check_result
from bench_assets.platform.contribution import WAREHOUSE_KEY, FamilyContribution
from bench_assets.platform.findings import Finding
from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.platform.warehouse import WarehouseTable, query
from resources.bench_home import BenchHome


def tallies_file(home: Path) -> Path:
    return home / "toy" / "tallies.json"


class TalliesConfig(dg.Config):
    tallies: dict[str, int] = {"apples": 3, "pears": 5}


@dg.asset(key=["toy", "tallies"], group_name="toy", description="Counts of things, written as a JSON file.")
def tallies(config: TalliesConfig, home: BenchHome) -> dg.MaterializeResult:
    atomic_write_json(tallies_file(home.path), config.tallies)
    return dg.MaterializeResult(metadata={"things": len(config.tallies)})


toy_job = dg.define_asset_job("toy_job", selection=dg.AssetSelection.assets(tallies))


def _tally_rows(home: Path):  # noqa: ANN202 - a DataFrame
    import pandas as pd

    path = tallies_file(home)
    doc = json.loads(path.read_text()) if path.exists() else {}
    return pd.DataFrame([{"thing": k, "count": v} for k, v in sorted(doc.items())])


def non_negative(warehouse: Path) -> Finding:
    bad = query(warehouse, "SELECT thing, count FROM toy_tallies WHERE count < 0 ORDER BY thing")
    if bad:
        listed = ", ".join(f"{r['thing']}={r['count']}" for r in bad)
        return Finding(False, f"{len(bad)} negative tally(ies): {listed}", bad)
    return Finding(True, "every tally is >= 0")


@dg.asset_check(asset=WAREHOUSE_KEY, name="toy_tallies_non_negative", blocking=False,
                description="No tally in the warehouse is negative.")
def tallies_non_negative(home: BenchHome) -> dg.AssetCheckResult:
    return check_result(non_negative(home.warehouse_path))


defs = dg.Definitions(assets=[tallies], jobs=[toy_job])
contribution = FamilyContribution(
    name="toy",
    tables=(WarehouseTable("toy_tallies", {"thing": "VARCHAR", "count": "BIGINT"}, _tally_rows, "thing"),),
    reads=(tallies,),
    warehouse_checks=(tallies_non_negative,),
)
