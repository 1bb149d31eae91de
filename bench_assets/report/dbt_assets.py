"""`report/<model>`: the dbt project `dbt_report/` as Dagster assets.

Every dbt model is the asset `report/<model name>` (group `report`) downstream of `report/warehouse`: all
`source('warehouse', ...)` tables map onto that one loader asset. Every dbt test is an asset check of the model
it tests, named as the test.

The integration is in-house and small: the asset and check specs are read from dbt's manifest
(`dbt_project.py`) with plain `json`, and a materialization runs the build of `dbt_build.py` (only the selected
models and tests when subset) and reads its run_results.json. Neither dagster-dbt nor dbt-core is imported by the
code location: importing them costs more than a second, which every code server and every run process would pay.
Importing this module runs no dbt: `report_dbt_assets` is created on first access (PEP 562), and a missing or
stale manifest then fails loudly with the fix, except under `dagster dev`, where it is re-parsed first.
"""

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_assets.report.dbt_build import (
    _FAILED,
    _Build,
    _describe,
    _failing_rows,
    _report_build,
    _run_dbt_build,
    _run_results,
)
from bench_assets.report.dbt_project import _manifest_for_definitions

if TYPE_CHECKING:
    import dagster as dg

    report_dbt_assets: dg.AssetsDefinition  # created on first access, see __getattr__ at the bottom


WAREHOUSE_KEY = ("report", "warehouse")


GROUP = "report"


POOL = "duckdb_writer"  # the warehouse loader's pool: one DuckDB writer at a time


_BUILT = {"model", "seed", "snapshot"}  # the dbt resources that are assets


@dataclass(frozen=True)
class _AssetNode:
    """A dbt model (seed, snapshot) that is the asset `report/<name>`."""

    unique_id: str
    key: tuple[str, ...]
    selector: str  # dbt --select for exactly this node
    table: str  # its relation in report.duckdb


@dataclass(frozen=True)
class _CheckNode:
    """A dbt test that is the check `check_name` of the asset `key`."""

    unique_id: str
    key: tuple[str, ...]
    check_name: str
    selector: str
    description: str
    deps: tuple[tuple[str, ...], ...]  # the other nodes the test reads (a relationships test's `to` model)


@dataclass(frozen=True)
class _ReportGraph:
    """What the Dagster side needs from the manifest, keyed by dbt unique_id, in manifest order."""

    assets: dict[str, _AssetNode]
    checks: dict[str, _CheckNode]
    specs: list[dict[str, Any]]  # per asset: key, deps, description, columns, ... (plain values, no Dagster)


def _selector(node: Mapping[str, Any]) -> str:
    return "fqn:" + ".".join(node["fqn"])


def _asset_name(node: Mapping[str, Any]) -> str:
    v = node.get("version")
    return node["name"] if v is None else f"{node['name']}_v{v}"  # as dagster-dbt keys versioned models


def _check_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)  # Dagster's rule for check names


def _attached_node(manifest: Mapping[str, Any], test: Mapping[str, Any]) -> str | None:
    """The node a test checks, as dagster-dbt finds it: a generic test's attached_node, a singular test's one
    upstream node, or the model named by `meta: {dagster: {ref: {name: ...}}}` in the test's config."""
    upstream = set(test.get("depends_on", {}).get("nodes", []))
    attached = test.get("attached_node")
    if len(upstream) == 1:
        [attached] = upstream
    ref = ((test.get("config", {}).get("meta") or test.get("meta") or {}).get("dagster") or {}).get("ref")
    if ref:
        package = ref.get("package") or manifest.get("metadata", {}).get("project_name")
        attached = next((uid for uid, n in manifest["nodes"].items()
                         if (n["name"], n.get("package_name"), n.get("version")) ==
                         (ref["name"], package, ref.get("version"))), None)
    return attached


def _test_definition(test: Mapping[str, Any], tested: str) -> str:
    """What a test asserts, in a line: "not_null on rf100vl_leaderboard.model", "unique_combination on scores (...)"."""
    if (test.get("description") or "").strip():
        text = test["description"].strip()
    elif test.get("test_metadata"):
        meta = test["test_metadata"]
        name = f"{meta['namespace']}.{meta['name']}" if meta.get("namespace") else meta["name"]
        target = f"{tested}.{test['column_name']}" if test.get("column_name") else tested
        args = ", ".join(f"{k}={v}" for k, v in (meta.get("kwargs") or {}).items() if k not in ("model", "column_name"))
        text = f"{name} on {target}" + (f" ({args})" if args else "")
    else:
        text = f"singular test {test.get('original_file_path', test['name'])} on {tested}"
    config = test.get("config") or {}
    if config.get("where"):
        text += f" where {config['where']}"
    if str(config.get("severity", "")).lower() == "warn":
        text += " [warn severity]"
    return text


def _code_version(node: Mapping[str, Any]) -> str | None:
    code = node.get("raw_code") or node.get("raw_sql")  # as dagster-dbt: the model's code changed, or not
    return hashlib.sha1(code.encode()).hexdigest() if code else (node.get("checksum") or {}).get("checksum")


def _report_graph(manifest: Mapping[str, Any]) -> _ReportGraph:
    """Assets, their lineage and their checks from a dbt manifest (plain JSON; no Dagster, no dbt)."""
    nodes = manifest["nodes"]
    assets = {uid: _AssetNode(uid, (GROUP, _asset_name(n)), _selector(n), n.get("alias") or n["name"])
              for uid, n in nodes.items() if n["resource_type"] in _BUILT}

    def upstream(node: Mapping[str, Any]) -> list[tuple[str, ...]]:
        """Keys of the nodes `node` reads: models by name, every source as the loader's one asset."""
        keys: list[tuple[str, ...]] = []
        for up in node.get("depends_on", {}).get("nodes", []):
            key = WAREHOUSE_KEY if up.startswith("source.") else assets[up].key if up in assets else None
            if key is not None and key not in keys:
                keys.append(key)
        return keys

    specs = []
    for uid, asset in assets.items():
        n = nodes[uid]
        deps = upstream(n)
        columns = [(name, c.get("data_type") or "?", (c.get("description") or "").strip() or None)
                   for name, c in (n.get("columns") or {}).items()]
        relation = ".".join(p for p in (n.get("database"), n.get("schema"), n.get("alias")) if p)
        specs.append({"key": asset.key, "deps": deps, "description": (n.get("description") or "").strip() or None,
                      "code_version": _code_version(n), "columns": columns,
                      "table_name": relation or None, "unique_id": uid,
                      "materialized": (n.get("config") or {}).get("materialized")})
    checks: dict[str, _CheckNode] = {}
    taken: set[tuple[tuple[str, ...], str]] = set()
    for uid, n in nodes.items():
        if n["resource_type"] != "test":
            continue
        attached = _attached_node(manifest, n)
        if attached not in assets:
            continue  # a test of a source, or of nothing we can tell: it still runs (and fails) with the build
        key = assets[attached].key
        name = _check_name(n["name"])
        if (key, name) in taken:  # keep names unique per asset, and stable: the id's hash, not a counter
            name = _check_name(f"{name}_{uid.rsplit('.', 1)[-1]}")
        taken.add((key, name))
        checks[uid] = _CheckNode(uid, key, name, _selector(n), _test_definition(n, nodes[attached]["name"]),
                                 tuple(k for k in upstream(n) if k != key))
    return _ReportGraph(assets, checks, specs)


def _load_manifest(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _log_to(logger: Any, level: str, text: str) -> None:
    {"debug": logger.debug, "warn": logger.warning, "warning": logger.warning,
     "error": logger.error}.get(level, logger.info)(text)


def _check_result(build: _Build, check: _CheckNode, r: Mapping[str, Any]) -> "dg.AssetCheckResult":
    import dagster as dg

    status = r.get("status")
    passed = status == "pass"
    failures = r.get("failures")
    metadata: dict[str, Any] = {"dbt_status": str(status)}
    if failures is not None:
        metadata["failures"] = dg.MetadataValue.int(int(failures))
    if failures and r.get("compiled_code"):
        metadata["failing_rows"] = dg.MetadataValue.text(_failing_rows(build, r["compiled_code"]))
    message = (r.get("message") or "").strip()
    return dg.AssetCheckResult(
        asset_key=dg.AssetKey(list(check.key)), check_name=check.check_name, passed=passed,
        severity=dg.AssetCheckSeverity.WARN if status == "warn" else dg.AssetCheckSeverity.ERROR,
        description=check.description if passed or not message else f"{check.description}: {message}",
        metadata=metadata)


def _asset_specs(graph: _ReportGraph) -> "list[dg.AssetSpec]":
    """One Dagster AssetSpec per dbt model: lineage, code version, column schema and relation."""
    import dagster as dg

    from bench_assets.platform.automation import eager_until_requested

    return [
        dg.AssetSpec(
            key=dg.AssetKey(list(s["key"])), deps=[dg.AssetKey(list(d)) for d in s["deps"]],
            description=s["description"], group_name=GROUP, kinds={"dbt", "duckdb"}, code_version=s["code_version"],
            automation_condition=eager_until_requested(),  # a fresh warehouse rebuilds the report
            skippable=True,  # a node dbt does not build (ephemeral) yields nothing
            metadata={
                **({"dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(
                    columns=[dg.TableColumn(name, type=t, description=d) for name, t, d in s["columns"]]))}
                   if s["columns"] else {}),
                **({"dagster/table_name": s["table_name"]} if s["table_name"] else {}),
                "dbt/unique_id": s["unique_id"],
                **({"dbt/materialized": s["materialized"]} if s["materialized"] else {}),
            })
        for s in graph.specs]


def _check_specs(graph: _ReportGraph) -> "list[dg.AssetCheckSpec]":
    """One non-blocking Dagster AssetCheckSpec per dbt test, on the model it tests."""
    import dagster as dg

    return [dg.AssetCheckSpec(c.check_name, asset=dg.AssetKey(list(c.key)), description=c.description,
                              additional_deps=[dg.AssetKey(list(d)) for d in c.deps], blocking=False,
                              metadata={"dbt/unique_id": c.unique_id})
            for c in graph.checks.values()]


def _materializations(results: list[dict[str, Any]], selected_assets: set[_AssetNode],
                      counts: dict[str, int]) -> "Iterator[dg.MaterializeResult]":
    """A MaterializeResult for each selected model dbt built successfully: its run time and, for a table,
    its row count in the published report."""
    import dagster as dg

    assets = {a.unique_id: a for a in selected_assets}
    for r in results:
        asset = assets.get(r.get("unique_id"))
        if asset is None or r.get("status") != "success":
            continue
        metadata: dict[str, Any] = {"execution_time_s": dg.MetadataValue.float(
            round(float(r.get("execution_time") or 0.0), 3))}
        if asset.table in counts:  # tables; a view has no stored rows to count
            metadata["dagster/row_count"] = dg.MetadataValue.int(counts[asset.table])
        yield dg.MaterializeResult(asset_key=dg.AssetKey(list(asset.key)), metadata=metadata)


def _define_report_dbt_assets() -> "dg.AssetsDefinition | None":
    """The multi-asset `report_dbt_assets` (every dbt model an asset, every test a check of it), or None when
    the manifest may be absent (`load_without_preparing`) and is."""
    import dagster as dg

    from resources.bench_home import BenchHome

    manifest = _manifest_for_definitions()
    if manifest is None:
        return None
    graph = _report_graph(_load_manifest(manifest))
    asset_specs = _asset_specs(graph)
    check_specs = _check_specs(graph)
    asset_by_key = {dg.AssetKey(list(a.key)): a for a in graph.assets.values()}
    check_by_key = {dg.AssetCheckKey(dg.AssetKey(list(c.key)), c.check_name): c for c in graph.checks.values()}

    @dg.multi_asset(name="report_dbt_assets", specs=asset_specs, check_specs=check_specs, can_subset=True,
                    pool=POOL)
    def report_dbt_assets(context: dg.AssetExecutionContext, home: BenchHome):
        """dbt build of the report into a scratch file, renamed over report.duckdb when every node passed."""
        selected_assets = {asset_by_key[k] for k in context.selected_asset_keys}
        selected_checks = {check_by_key[k] for k in context.selected_asset_check_keys}
        select = None
        if context.is_subset:
            select = sorted({a.selector for a in selected_assets} | {c.selector for c in selected_checks})
        with _report_build(home.report_db_path, home.warehouse_path, start_from_live=context.is_subset) as build:
            run = _run_dbt_build(build, select, lambda level, text: _log_to(context.log, level, text))
            results = _run_results(build.target).get("results", [])
            checks = {c.unique_id: c for c in selected_checks}
            check_results = [_check_result(build, checks[r["unique_id"]], r) for r in results
                             if r.get("unique_id") in checks and r.get("status") != "skipped"]
            failed = [r for r in results if r.get("status") in _FAILED]
            if failed or run.returncode != 0:
                yield from check_results  # pass or fail: the checks say which test broke
                detail = _describe(build, failed) if failed else run.tail()
                raise dg.Failure(description=f"dbt build failed (exit {run.returncode}); {home.report_db_path} is "
                                             f"unchanged. Failed:\n{detail}")
            # Checks only (no model selected) changed nothing: the live report stays as it is.
            counts = build.publish() if selected_assets else {}
        # Held back until the file is in place: a model is materialized when readers can see it.
        yield from _materializations(results, selected_assets, counts)
        yield from check_results

    return report_dbt_assets


def __getattr__(name: str) -> Any:
    # PEP 562: the asset definitions (and the manifest they need) only when someone asks for them.
    if name == "report_dbt_assets":
        value = _define_report_dbt_assets()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
