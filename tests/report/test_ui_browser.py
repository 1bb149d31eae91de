"""The Dagster UI as a person sees it: headless Chromium (driven by Playwright) against `bench ui`.

One server for the module, on a throw-away BENCH_HOME holding a finished synthetic campaign whose warehouse
(and, once `report_job` exists, the dbt report) was built before the server started. The tests open the
catalog, the lineage graph, the asset pages and their Checks tab, and finally plant a defect, rebuild the
warehouse and watch the check turn red. Set BENCH_UI_SCREENSHOTS=<dir> to keep a screenshot of every page.

Chromium and Playwright are required, never skipped (CI installs them): `apt-get install -y chromium` and
`pip install playwright` (Debian's browser is used; never `playwright install`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench_assets.platform.automation import SENSOR_INTERVAL_ENV
from bench_assets.report.jobs import report_job, warehouse_job
from tests.conftest import BENCH, REPO
from tests.report.test_ui import _free_port, _graphql, _pids_with_home
from tests.synthetic_campaign import make_campaign

pytestmark = pytest.mark.slow

# LEAD: flip to True once `report_job` (dbt models as report/<model> + report/rendered) is merged, so a
# code location without it fails here instead of skipping the leaderboard test.
REQUIRE_LEADERBOARD = True  # report_job exists: the leaderboard and its dbt tests must show
LEADERBOARD = "report/rf100vl_leaderboard"

N_MODELS, N_DATASETS = 4, 6
REQUIRED_KEYS = ("rf100vl/dataset", "rf100vl/scores", "rf100vl/submission", "report/warehouse")
# the six campaign checks and augbench's two (they pass vacuously here: no augbench config is registered)
WAREHOUSE_CHECKS = ("adjacent_size_gap", "augbench_consistency", "augbench_coverage", "coverage", "pilot_gate",
                    "protocol_conformance", "provenance", "scoring_integrity", "selection_vs_test")
# The texts Dagster 1.13 shows: the status line under a check's name in the Checks tab list, and the badge
# next to "Evaluation result" in the check's detail pane.
LIST_PASSED, LIST_FAILED = "Succeeded", "Failed"
BADGE_PASSED, BADGE_FAILED = "Passed", "Failed"

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
INSTALL_HINT = ("the browser UI test needs Debian's Chromium and Playwright: `apt-get install -y chromium` and "
                "`.venv/bin/pip install playwright` (never `playwright install`: the system browser is used)")
SERVER_START_S = 180
TIMEOUT_MS = 30_000  # per action/assertion; a page shows up in ~1 s here, the margin is for a loaded CI box


@dataclass
class Ui:
    url: str
    home: Path
    instance: Any
    has_report: bool
    log: Path

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


# --- the browser and the server ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError as exc:
        pytest.fail(f"{INSTALL_HINT} ({exc})")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{INSTALL_HINT} (no {CHROMIUM})")
    expect.set_options(timeout=TIMEOUT_MS)  # a global of Playwright's: put its default (5 s) back after
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            yield b
            b.close()
    finally:
        expect.set_options(timeout=5_000)


def _has_job(name: str) -> bool:
    import dagster as dg

    from definitions import defs

    try:
        defs.resolve_job_def(name)
    except dg.DagsterInvariantViolationError:
        return False
    return True


def _stop(proc: subprocess.Popen, home: Path) -> None:
    """SIGINT `bench ui` (it stops dagster dev's webserver, daemon and code servers), then kill what is left."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=45)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while (left := [p for p in _pids_with_home(home) if p != os.getpid()]) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in left:  # only processes carrying this module's own BENCH_HOME: the ones this server started
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def ui(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    from bench_assets.platform.instance import open_instance

    home = tmp_path_factory.mktemp("ui_browser") / "bench"
    mp = pytest.MonkeyPatch()
    mp.setenv("BENCH_HOME", str(home))
    mp.setenv("DAGSTER_HOME", str(home / "dagster"))
    mp.delenv("BENCH_HF_REPO", raising=False)
    mp.delenv("ROBOFLOW_API_KEY", raising=False)
    # The sensors the tests wait on (the report's automation, the partition guard) evaluate every 5 s here instead
    # of their declared 30 s: what is shown is that they act, not how often.
    mp.setenv(SENSOR_INTERVAL_ENV, "5")
    make_campaign(home, n_models=N_MODELS, n_datasets=N_DATASETS, seed=1)
    instance = open_instance(home)
    proc: subprocess.Popen | None = None
    try:
        outcome = _execute(instance, warehouse_job)
        assert outcome.success, outcome.errors
        has_report = _has_job(report_job.name)
        if has_report:
            outcome = _execute(instance, report_job)
            assert outcome.success, outcome.errors
        port = _free_port()
        log = home.parent / "bench_ui.log"
        with log.open("w") as out:  # a file, not a pipe: nobody drains a pipe while the tests run
            proc = subprocess.Popen([*BENCH, "ui", "--port", str(port)], cwd=REPO, env=dict(os.environ),
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        ui = Ui(f"http://127.0.0.1:{port}", home, instance, has_report, log)
        deadline = time.monotonic() + SERVER_START_S
        keys: list[str] = []
        while time.monotonic() < deadline and proc.poll() is None and "report/warehouse" not in keys:
            nodes = ((_graphql(port) or {}).get("data") or {}).get("assetNodes") or []
            keys = ["/".join(n["assetKey"]["path"]) for n in nodes]
            time.sleep(0.5)
        assert "report/warehouse" in keys, f"code location not loaded (exit {proc.poll()}):\n{ui.log_tail()}"
        yield ui
    finally:
        if proc is not None:
            _stop(proc, home)
        instance.dispose()
        mp.undo()


@pytest.fixture
def page(browser: Any, ui: Ui) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, base_url=ui.url)
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    answer_nux(pg, ui.url)
    yield pg
    context.close()


def answer_nux(pg: Any, url: str) -> None:
    """"Join the Dagster community" pops up, a few seconds after a page loads, until someone answers it once for
    the instance. Answer it now (the server says whether it will show), so it covers no screenshot and no click;
    then a handler clicks it away should it show up anyway in front of an action or an assertion. (The handler
    alone is not enough: on a loaded machine the popup outlived its own "Skip" click and held a click on the
    launch dialog for the whole 30 s timeout, seen in test_cluster.py on 2026-12-02.)"""
    skip = pg.get_by_role("button", name="Skip")
    if _query(url, "{ shouldShowNux }")["shouldShowNux"]:
        pg.goto("/")
        skip.click()
        deadline = time.monotonic() + 30
        while _query(url, "{ shouldShowNux }")["shouldShowNux"] and time.monotonic() < deadline:
            time.sleep(0.2)
    pg.add_locator_handler(skip, lambda button: button.click())


# --- helpers ----------------------------------------------------------------------------------------------


def _query(url: str, query: str) -> dict[str, Any]:
    req = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["data"]


def _execute(instance: Any, job: Any) -> Any:
    """`execute` in a worker thread: Playwright's sync API keeps an asyncio loop running on this one, and
    Dagster's in-process executor wants to run (and close) its own."""
    from bench_assets.cli.location import run_job

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run_job, instance, job).result()


def _expect(locator: Any) -> Any:
    from playwright.sync_api import expect

    return expect(locator)


def _shot(page: Any, name: str) -> None:
    """Screenshot to $BENCH_UI_SCREENSHOTS/<name>.png when that is set (docs); otherwise nothing."""
    out = os.environ.get("BENCH_UI_SCREENSHOTS")
    if not out:
        return
    skip = page.get_by_role("button", name="Skip")
    if skip.is_visible():
        skip.click()
    page.wait_for_timeout(300)  # let the last GraphQL answers paint
    Path(out).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(Path(out) / f"{name}.png"), full_page=True)


def _defined_keys() -> list[str]:
    from definitions import defs

    return sorted(k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys())


def _defined_checks(asset: str) -> list[str]:
    from definitions import defs

    return sorted(k.name for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key.to_user_string() == asset)


def _check_status(page: Any, name: str) -> Any:
    """The status line under check `name` in the Checks tab list (the list is virtualised: filter to it first).
    The list item holds the full name in `title` (long dbt test names are middle-truncated on screen)."""
    page.get_by_placeholder("Filter checks").fill(name)
    return page.locator(f'[title="{name}"] + span')


def _evaluation(page: Any) -> Any:
    """The detail pane's "Evaluation result" block: the label and its Passed/Failed badge."""
    return page.get_by_text("Evaluation result", exact=True).locator("xpath=..")


def _assert_materialized(page: Any, asset: str) -> None:
    page.goto(f"/assets/{asset}")
    latest = page.get_by_text("Latest materialization", exact=True).locator("xpath=..")
    _expect(latest).to_contain_text(re.compile(r"\bago\b"))  # "a few seconds ago", never "Never materialized"
    _expect(latest).not_to_contain_text("Never materialized")


def _assert_checks(page: Any, asset: str, expected: dict[str, str]) -> None:
    page.goto(f"/assets/{asset}?view=checks")
    _expect(page.get_by_text(f"Checks ({len(_defined_checks(asset))})", exact=True)).to_be_visible()
    for name, status in expected.items():
        _expect(_check_status(page, name)).to_have_text(status)
    page.get_by_placeholder("Filter checks").fill("")


# --- the tests --------------------------------------------------------------------------------------------


def test_catalog_and_lineage_show_every_asset(ui: Ui, page: Any) -> None:
    keys = _defined_keys()
    assert set(REQUIRED_KEYS) <= set(keys), keys
    if ui.has_report or REQUIRE_LEADERBOARD:
        assert LEADERBOARD in keys, keys

    page.goto("/asset-groups")  # global lineage: one collapsed box per group; expand them from the context menu
    for group in sorted({k.split("/")[0] for k in keys}):
        _expect(page.get_by_text(group, exact=True).first).to_be_visible()
    page.mouse.click(1000, 200, button="right")  # empty canvas above the group boxes
    page.get_by_role("menuitem", name="Expand all groups").click()
    _expect(page).to_have_url(re.compile(r"[?&]expanded="))
    for key in REQUIRED_KEYS:  # expanded nodes are labelled with the last path component
        _expect(page.get_by_text(key.split("/")[-1], exact=True).first).to_be_visible()
    _shot(page, "lineage")

    page.set_viewport_size({"width": 1600, "height": max(1000, 400 + 70 * len(keys))})  # virtualised table
    page.goto("/assets")
    for key in keys:
        link = page.locator(f'a[href="/assets/{key}"]').first
        _expect(link).to_be_visible()
        _expect(link).to_contain_text(key.replace("/", " / "))
    for key in ["report/warehouse", *([LEADERBOARD] if ui.has_report else [])]:  # the Status column
        row = page.locator('[class*="VirtualizedTable_row"]').filter(has=page.locator(f'a[href="/assets/{key}"]'))
        _expect(row).to_contain_text("Materialized")
        _expect(row).not_to_contain_text("Never materialized")
    _shot(page, "catalog")


def test_warehouse_materialized_and_its_checks_pass(ui: Ui, page: Any) -> None:
    from bench_assets.rf100vl.report import warehouse_checks as cc

    _assert_materialized(page, "report/warehouse")
    rows = {"rows_scores": N_MODELS * N_DATASETS, "rows_runs": N_MODELS * N_DATASETS, "rows_datasets": N_DATASETS,
            "rows_models": N_MODELS}
    for key, value in rows.items():  # metadata table: key | timestamp ("Nov 30, 12:51 PM") | value
        cells = page.locator("tr").filter(has=page.get_by_text(key, exact=True)).locator("td")
        _expect(cells.nth(1)).to_have_text(re.compile(r"\d{1,2}:\d{2}"))
        _expect(cells.last).to_have_text(str(value))
    _shot(page, "warehouse")

    assert sorted(WAREHOUSE_CHECKS) == _defined_checks("report/warehouse")
    _assert_checks(page, "report/warehouse", dict.fromkeys(WAREHOUSE_CHECKS, LIST_PASSED))
    _shot(page, "warehouse_checks")

    page.goto("/assets/report/warehouse?view=checks&checkDetail=selection_vs_test")
    _expect(_evaluation(page)).to_contain_text(BADGE_PASSED)
    passing = cc.selection_vs_test(ui.home / "warehouse.duckdb").description
    _expect(page.get_by_text(passing, exact=True)).to_be_visible()


def test_leaderboard_materialized_and_its_dbt_tests_pass(ui: Ui, page: Any) -> None:
    if not ui.has_report:
        if REQUIRE_LEADERBOARD:
            pytest.fail(f"no job {report_job.name!r} in definitions.defs, but REQUIRE_LEADERBOARD is set")
        pytest.skip(f"no job {report_job.name!r} in definitions.defs yet (dbt report not merged)")
    _assert_materialized(page, LEADERBOARD)
    _shot(page, "leaderboard")
    checks = _defined_checks(LEADERBOARD)
    assert checks, f"{LEADERBOARD} has no dbt tests as asset checks"
    _assert_checks(page, LEADERBOARD, dict.fromkeys(checks, LIST_PASSED))
    _shot(page, "leaderboard_checks")


def test_a_planted_defect_turns_selection_vs_test_red(ui: Ui, page: Any) -> None:
    from bench_assets.rf100vl.report import warehouse_checks as cc
    from tests.rf100vl.test_warehouse_checks import _current_score_file, _current_stats_file, _datasets, _edit

    ds = _datasets(ui.home)[2]
    stats, score = _current_stats_file(ui.home, "syna-s", ds), _current_score_file(ui.home, "syna-s", ds)
    originals = {p: p.read_bytes() for p in (stats, score)}
    try:
        _edit(stats, lambda d: d.update(valid_mAP50_95=0.566))  # the batch-norm bug: selected on valid,
        _edit(score, lambda d: d["metrics"].update(mAP50_95=0.162))  # collapsed on test
        bad = _execute(ui.instance, warehouse_job)
        assert not bad.success
        assert any(e.startswith("check selection_vs_test failed") for e in bad.errors), bad.errors
        failing = cc.selection_vs_test(ui.home / "warehouse.duckdb").description
        assert "0.5660" in failing and "0.1620" in failing and ds in failing

        expected = {**dict.fromkeys(WAREHOUSE_CHECKS, LIST_PASSED), "selection_vs_test": LIST_FAILED}
        _assert_checks(page, "report/warehouse", expected)
        page.goto("/assets/report/warehouse?view=checks&checkDetail=selection_vs_test")
        _expect(_evaluation(page)).to_contain_text(BADGE_FAILED)
        _expect(_evaluation(page)).not_to_contain_text(BADGE_PASSED)
        _expect(page.get_by_text(failing, exact=True)).to_be_visible()  # the numbers a reader acts on
        _shot(page, "warehouse_check_failed")
    finally:  # leave the module's campaign clean for any test that runs after this one
        for path, data in originals.items():
            path.write_bytes(data)
        good = _execute(ui.instance, warehouse_job)
        assert good.success, good.errors


def _open_launch_dialog(page: Any, asset: str) -> Any:
    """Click the asset page's "Materialize..." and return the launch dialog. When upstream assets were never
    materialized (a campaign made from files, as here), Dagster asks "Are you sure?" first: confirm it."""
    page.goto(f"/assets/{asset}")
    page.get_by_role("button", name="Materialize…").first.click()
    launch = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
    confirm = page.get_by_role("button", name="Confirm")
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not launch.is_visible():
        assert time.monotonic() < deadline, page.locator("body").inner_text()[-2000:]
        if confirm.is_visible():
            confirm.click()
        page.wait_for_timeout(300)
    return launch


def _latest_materialization(instance: Any, asset: str) -> float:
    import dagster as dg

    event = instance.get_latest_materialization_event(dg.AssetKey(asset.split("/")))
    return event.timestamp if event is not None else 0.0


def _wait(what: str, ready: Any, timeout_s: float, ui: Ui) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"{what} did not happen within {timeout_s:.0f} s\n{ui.log_tail()}")


def test_a_ui_materialization_reaches_the_leaderboard_without_a_manual_step(ui: Ui, page: Any) -> None:
    """Materialize rf100vl/submission for every model from its asset page ("Materialize..." -> "All" -> "Launch
    backfill"); the backfill finishes, and the report's automation (the daemon of `bench ui` evaluating
    `report_automation`) rebuilds the warehouse and the leaderboard mart after it, with nobody launching them."""
    from bench_assets.rf100vl.defs.partitions import register_model_partition
    from bench_assets.rf100vl.training.models import iter_entries

    for entry in iter_entries(ui.home):
        register_model_partition(ui.instance, entry.model)
    before = _latest_materialization(ui.instance, LEADERBOARD)
    backfills = "{ partitionBackfillsOrError(limit: 5) { ... on PartitionBackfills { results { id status } } } }"
    known = {b["id"] for b in _query(ui.url, backfills)["partitionBackfillsOrError"]["results"]}

    dialog = _open_launch_dialog(page, "rf100vl/submission")
    everything = f"{N_MODELS} partitions"
    deadline = time.monotonic() + 60
    while everything not in dialog.inner_text():  # "All" does nothing until the dialog has loaded the partitions
        assert time.monotonic() < deadline, dialog.inner_text()
        dialog.get_by_role("button", name="All", exact=True).first.click()
        page.wait_for_timeout(1000)
    _shot(page, "materialize_dialog")
    dialog.get_by_role("button", name="Launch backfill").click()

    def finished() -> str | None:
        rows = _query(ui.url, backfills)["partitionBackfillsOrError"]["results"]
        new = [b for b in rows if b["id"] not in known]
        return new[0]["status"] if new and new[0]["status"] not in ("REQUESTED", "CANCELING", "FAILING") else None

    assert _wait("the UI backfill of rf100vl/submission", finished, 300, ui) == "COMPLETED_SUCCESS"
    submitted = _latest_materialization(ui.instance, "rf100vl/submission")
    assert submitted > before
    # The backfill's runs finish one by one and the automation may rebuild after the first ones: wait for the
    # rebuild that follows the last submission, warehouse first, then the leaderboard mart from it.
    def rebuilt_after_the_last() -> bool:
        warehouse = _latest_materialization(ui.instance, "report/warehouse")
        return warehouse > submitted and _latest_materialization(ui.instance, LEADERBOARD) > warehouse

    _wait("the warehouse and the leaderboard mart rebuilt by the automation", rebuilt_after_the_last, 420, ui)
    _assert_materialized(page, LEADERBOARD)
    _shot(page, "leaderboard_refreshed")


def test_a_partition_name_typed_in_the_ui_that_names_nothing_is_removed_with_the_reason(ui: Ui, page: Any) -> None:
    """"Add a partition" in the launch dialog accepts any name (Dagster cannot refuse it there); the
    rf100vl_partition_guard sensor, run by the daemon of `bench ui`, removes a name that is no known dataset and
    says why in its tick, while the real partitions stay."""
    from bench_assets.rf100vl.defs.partitions import DATASET_PARTITIONS_NAME, register_partitions

    bad = "not-a-dataset"
    register_partitions(ui.instance, _datasets_of(ui.home))  # real ones, which the guard must keep
    dialog = _open_launch_dialog(page, "rf100vl/checkpoint")
    dialog.get_by_text("Add a partition").first.click()  # the dataset dimension's
    add = page.get_by_role("dialog").filter(has_text="Add a partition for rf100vl_dataset")
    add.get_by_role("textbox").fill(bad)
    _shot(page, "add_partition")
    add.get_by_role("button", name="Save").click()

    def added() -> bool:
        return bad in ui.instance.get_dynamic_partitions(DATASET_PARTITIONS_NAME)

    def guard_reasons() -> list[str]:
        ticks = _query(ui.url, """{ sensorOrError(sensorSelector: {repositoryLocationName: "bench",
            repositoryName: "__repository__", sensorName: "rf100vl_partition_guard"}) {
            ... on Sensor { sensorState { ticks(limit: 20) { status skipReason } } } } }""")
        return [t["skipReason"] or "" for t in ticks["sensorOrError"]["sensorState"]["ticks"]]

    # The guard may remove the name between two polls (it evaluates every 5 s here): its tick naming the name shows
    # the UI added it as well as seeing it in the partitions does.
    _wait("the UI adding the partition", lambda: added() or any(bad in r for r in guard_reasons()), 60, ui)
    _wait("the guard removing the unknown partition", lambda: not added(), 180, ui)
    assert set(_datasets_of(ui.home)) <= set(ui.instance.get_dynamic_partitions(DATASET_PARTITIONS_NAME))
    reasons = guard_reasons()
    assert any(bad in r and "not a known dataset" in r for r in reasons), reasons


def _datasets_of(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "datasets").iterdir() if p.is_dir())
