"""Asset checks on `report/warehouse` that make a campaign's silent failures loud.

Thin shells over `warehouse_checks.py`: each reads the warehouse (in the `duckdb_writer` pool, so it
never races the loader), reports pass/fail with the numbers in the description and the offending
rows in metadata, at severity ERROR. Thresholds are run config, with the defaults below.
"""

import dagster as dg
from pydantic import Field

from bench_assets.platform.check_results import check_result
from bench_assets.platform.contribution import WAREHOUSE_KEY
from bench_assets.rf100vl.report import warehouse_checks as cc
from bench_assets.rf100vl.report.thresholds import ADJACENT_MAX_GAP, SELECTION_TOLERANCE
from resources.bench_home import BenchHome


class SelectionVsTestConfig(dg.Config):
    tolerance: float = Field(default=SELECTION_TOLERANCE, description="Largest |valid - test| mAP50-95 a partition "
                             "may show; healthy runs track within noise, the BatchNorm eps bug was 0.40 (the report's "
                             "valid-vs-test band uses the default).")


class AdjacentSizeConfig(dg.Config):
    max_gap: float = Field(default=ADJACENT_MAX_GAP, description="Largest gap in mean mAP50-95 between "
                           "neighbouring model sizes; healthy ~0.03, the bug report was 0.16.")


def _check(name: str, description: str):  # noqa: ANN202 - a decorator factory
    return dg.asset_check(asset=WAREHOUSE_KEY, name=name, description=description, pool="duckdb_writer",
                          blocking=False)


@_check("selection_vs_test", "Valid (selection) vs test mAP50-95 of every current run within a tolerance.")
def selection_vs_test(config: SelectionVsTestConfig, home: BenchHome) -> dg.AssetCheckResult:
    return check_result(cc.selection_vs_test(home.warehouse_path, config.tolerance))


@_check("adjacent_size_gap", "Neighbouring sizes of one family within a configured gap on shared datasets.")
def adjacent_size_gap(config: AdjacentSizeConfig, home: BenchHome) -> dg.AssetCheckResult:
    return check_result(cc.adjacent_size_gap(home.warehouse_path, config.max_gap))


def partition_runs(instance: dg.DagsterInstance) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(failed, in flight): (model, dataset) whose newest campaign/train/eval run failed, or runs/is queued."""
    from bench_assets.rf100vl.campaign.progress import classify
    from bench_assets.rf100vl.defs.jobs import latest_runs

    failed, in_flight = set(), set()
    for key, status in latest_runs(instance).items():
        dataset, model = key.split("|", 1)
        state = classify(False, status)
        if state == "failed":
            failed.add((model, dataset))
        elif state in ("running", "queued"):
            in_flight.add((model, dataset))
    return failed, in_flight


@_check("coverage", "Every registered model has a current test score for every dataset of its suite; missing "
                    "and failed partitions are listed.")
def coverage(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    failed, in_flight = partition_runs(context.instance)
    return check_result(cc.coverage(home.warehouse_path, failed, in_flight))


@_check("protocol_conformance", "Test split, conf 0.001, NMS IoU 0.65, max_det 500, the registered (conformant) "
                                "recipe, one recipe hash per model, dataset versions matching the lock.")
def protocol_conformance(home: BenchHome) -> dg.AssetCheckResult:
    return check_result(cc.protocol_conformance(home.warehouse_path))


@_check("scoring_integrity", "No undefined or -1 headline, no -1 bucket that could enter a mean, fast and "
                             "reference backends agree, submission headlines equal the mean of their datasets.")
def scoring_integrity(home: BenchHome) -> dg.AssetCheckResult:
    return check_result(cc.scoring_integrity(home.warehouse_path))


@_check("provenance", "Every score's recipe file, checkpoint and predictions file exists and matches its hash.")
def provenance(home: BenchHome) -> dg.AssetCheckResult:
    return check_result(cc.provenance(home.warehouse_path, home.path / "cache" / "provenance_sha256.json"))


@_check("pilot_gate", "Each campaign with a pilot may graduate to the rest: every pilot dataset scored, the "
                      "kill-and-resume check within the replicate noise, adjacent sizes in order and within the "
                      "family rule, selection vs test within tolerance (WARN once overridden).")
def pilot_gate(config: AdjacentSizeConfig, home: BenchHome) -> dg.AssetCheckResult:
    from bench_assets.rf100vl.report.pilot_gate import pilot_gates

    return check_result(pilot_gates(home.warehouse_path, max_gap=config.max_gap))


warehouse_checks = [selection_vs_test, adjacent_size_gap, coverage, protocol_conformance, scoring_integrity,
                    provenance, pilot_gate]
