"""augbench assets: `augbench/media` [config] -> `augbench/results` [config x library], with the partition's
coverage check (every planned cell present with a terminal status, none `error`)."""

import sys

import dagster as dg

from bench_assets.augbench.config import ConfigError
from bench_assets.augbench.naming import results_file
from bench_assets.augbench.partitions import config_library_partitions, config_partitions, on_config, split_key
from bench_assets.augbench.pipeline import build_media, measure_library, registered_config
from bench_assets.augbench.rounds import schedule_from_tags
from resources.bench_home import BenchHome


@dg.asset(key=["augbench", "media"], group_name="augbench", partitions_def=config_partitions, kinds={"numpy"},
          description="The config's items (real photos, 9-channel stacks or 16-frame clips; or staged ImageNet / "
                      "UCF101), content-hashed and written once.")
def media(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
    try:
        cfg = registered_config(home.path, context.partition_key)
        record, written = build_media(home.path, cfg)
    except ConfigError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    if record["problems"]:
        context.log.warning(f"{len(record['problems'])} unreadable media files skipped: {record['problems'][:5]}")
    return dg.MaterializeResult(
        metadata={"content_hash": dg.MetadataValue.text(record["content_hash"]),
                  "items": dg.MetadataValue.int(record["n_items"]),
                  "shapes": dg.MetadataValue.json(record["shapes"]),
                  "description": dg.MetadataValue.text(record["description"]),
                  "written_now": dg.MetadataValue.bool(written),
                  "problems": dg.MetadataValue.json(record["problems"])},
        data_version=dg.DataVersion(record["content_hash"][:16]))


def _table(cells: list[dict]) -> str:
    lines = ["| transform | status | median items/s | CV | note |", "|---|---|---:|---:|---|"]
    for c in cells:
        s = c.get("summary") or {}
        med = f"{s['median']:.1f}" if s.get("median") is not None else (
            f"({c['preflight_throughput']:.1f} preflight)" if c.get("preflight_throughput") is not None else "")
        cv = f"{s['cv']:.3f}" if s.get("cv") is not None else ""
        note = (c.get("reason") or "").replace("|", "/")[:80]
        lines.append(f"| {c['transform']} | {c['status']} | {med} | {cv} | {note} |")
    return "\n".join(lines)


@dg.asset(key=["augbench", "results"], group_name="augbench", partitions_def=config_library_partitions,
          deps=[dg.AssetDep(media, partition_mapping=on_config)], kinds={"json"},
          description="One library's cells of a config, measured once more and appended as a numbered repeat to "
                      "`BENCH_HOME/augbench/<config>/<library>.results.json`; every planned cell ends ok, "
                      "early_stopped, unsupported (with the reason) or error (with the message).")
def results(context: dg.AssetExecutionContext, home: BenchHome) -> dg.MaterializeResult:
    config_name, library = split_key(context)
    try:
        cfg = registered_config(home.path, config_name)
        # Named tqdm bars (library, transform, run) when a person watches a terminal; the log always.
        repeat, cells = measure_library(home.path, cfg, library, log=context.log.info,
                                        progress=True if sys.stderr.isatty() else None,
                                        schedule=schedule_from_tags(context.run.tags))
    except ConfigError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    counts = {s: sum(1 for c in cells if c["status"] == s) for s in ("ok", "early_stopped", "unsupported", "error")}
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(results_file(home.path, config_name, library))),
        "repeat": dg.MetadataValue.int(repeat),
        **{f"cells_{s}": dg.MetadataValue.int(n) for s, n in counts.items()},
        "cells": dg.MetadataValue.md(_table(cells)),
    })


@dg.asset_check(asset=results, name="cells_complete", blocking=False,
                description="The latest repeat holds every planned cell exactly once with a terminal status and "
                            "none in error; ok cells have timed runs, early-stopped ones their preflight figure.")
def cells_complete(context: dg.AssetCheckExecutionContext, home: BenchHome) -> dg.AssetCheckResult:
    from bench_assets.augbench.plan import make_plan
    from bench_assets.augbench.results import coverage_problems, read_results

    config_name, library = split_key(context)
    cfg = registered_config(home.path, config_name)
    planned = [(c.transform, c.library) for c in make_plan(cfg).cells_for(library)]
    doc = read_results(results_file(home.path, config_name, library))
    if doc is None or not doc.repeats:
        return dg.AssetCheckResult(passed=False, description=f"no results file for {config_name}/{library}")
    problems = coverage_problems(planned, doc.repeats[-1])
    return dg.AssetCheckResult(
        passed=not problems,
        description=(f"{len(problems)} of {len(planned)} cells are missing, duplicated or in error: "
                     + "; ".join(problems[:5]) if problems else f"all {len(planned)} planned cells are terminal"),
        metadata={"problems": dg.MetadataValue.json(problems[:100]), "planned": dg.MetadataValue.int(len(planned)),
                  "repeat": dg.MetadataValue.int(doc.repeats[-1].repeat)})
