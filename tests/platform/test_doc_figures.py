"""Figures quoted in the docs are the figures the committed scripts wrote: each quoted number is formatted from its
result file under `benchmarks/results/` and must appear, as formatted, in the doc that quotes it. Re-running a
script and not updating the doc (or editing the doc by hand) fails here; so does a result file that moved.

Counts quoted in the docs are checked against what they count: a number of tests against pytest's collection of the
file (parametrized cases included, as `pytest -q` reports them), a number of dbt tests against the dbt project's
manifest; and every "N tests" / "N passed" in the docs must be one of these checked quotes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

RESULTS = REPO / "benchmarks" / "results"
# Result files a doc quotes that only a long run on an idle machine writes: until it is committed the doc's figures
# are marked as awaiting it, and the check says which command writes the file.
PENDING = {
    "paper_run_rgb-micro.json": ".venv/bin/python benchmarks/paper_run.py (an idle 2-core machine, ~45-60 min)",
}


# The training child's module, as profiles recorded it before and after rf100vl's stage sub-packages.
TRAIN_CHILD_KINDS = ("bench_assets.rf100vl.child.train", "bench_assets.rf100vl.training.child.train")
# The files docs/testing.md's "What the kept tests cost" names: servers, the browser, trainings across a process
# boundary.
KEPT_SYSTEM_FILES = ("tests/platform/test_cluster.py", "tests/report/test_ui_browser.py",
                     "tests/rf100vl/test_replicates.py", "tests/rf100vl/test_campaign.py",
                     "tests/platform/test_real_boxes.py",
                     "tests/rf100vl/test_children.py", "tests/rf100vl/test_family_children.py",
                     "tests/rf100vl/test_pretrained.py")


def kept_files_since_baseline() -> list[str]:
    """The kept files the baseline of the side-by-side measurement (a4f80b8) has no test in: tests of features added
    since, read from the test ids `suite_time_against.json` records for that commit."""
    baseline = json.loads((RESULTS / "suite_time_against.json").read_text())["against"]["ids"]
    files = {node.split("::")[0] for node in baseline}
    return [f for f in KEPT_SYSTEM_FILES if f not in files]


def _cluster(r: dict[str, Any]) -> list[str]:
    run, writes = r["per_run"], r["postgres_writes"]
    small, big = r["partition_pages"]
    ratio = r["page_ratios_400_vs_4"]
    return [
        f"events per partition run (median of {run['runs']} runs) | {run['events']:.0f} |",
        f"bytes per event | {run['bytes_per_event']:,.0f} |",
        f"median | {run['startup_s']:.1f} s |",
        f"| {run['steps_s']:.1f} s |",
        f"| {writes['events_per_s']:.0f} events/s |",
        f"| {writes['seconds']:.0f} s = {100 * writes['campaign_share_of_8_lane_makespan']:.2f}% of the 8-lane "
        "makespan |",
        f"| {small['status_query_s']:.3f} s / {big['status_query_s']:.3f} s (x{ratio['status_query']:.2f}) |",
        f"| {small['page_load_s']:.2f} s / {big['page_load_s']:.2f} s (x{ratio['page_load']:.2f}) |",
    ]


def _simulation(r: dict[str, Any]) -> list[str]:
    return [f"| {row['lanes']} | {row['makespan_h']:.1f} | {row['lower_bound_h']:.1f} | "
            f"{row['ratio_to_lower_bound']:.4f} | {100 * row['busy_share']:.1f}% | "
            f"{row['random_order_median_h']:.1f} / {row['random_order_worst_h']:.1f} |" for row in r["rows"]]


def _ui_speed(r: dict[str, Any]) -> list[str]:
    return [f"| {row['cli_s']:.2f} s | {row['ui_run_s']:.2f} s | x{row['ratio']:.2f} | "
            f"{row['ui_click_to_done_s']:.1f} s |" for row in r["rows"]]


def _materialize_copy(r: dict[str, Any]) -> list[str]:
    us = r["us_per_call"]
    vflip = sorted(round(us[f"VerticalFlip view: {k}"]) for k in ("np.ascontiguousarray", "contiguous_copy (the rule)"))
    return [f"HorizontalFlip view {us['HorizontalFlip view: np.ascontiguousarray']:.0f} us with numpy's copy, "
            f"{us['HorizontalFlip view: contiguous_copy (the rule)']:.0f} us with the rule",
            f"(`cv2.flip` of the whole image {us['baseline: cv2.flip(image, 1)']:.0f} us, a plain copy "
            f"{us['baseline: image.copy()']:.0f} us); VerticalFlip view {vflip[0]}-{vflip[1]} us either way",
            f"(`.contiguous()` of a read_image-layout 375x500 view: "
            f"{us['torch: .contiguous() of a read_image-layout CHW view']:.0f} us; torchvision's flip "
            f"{us['torchvision horizontal_flip, contiguous CHW input']:.0f} us on a contiguous input, "
            f"{us['torchvision horizontal_flip, read_image-layout input + .contiguous()']:.0f} us the published way)"]


def _agreement(r: dict[str, Any]) -> list[str]:
    a = r["agreement"]
    lib = a["libraries"]
    return [f"| {lib['torchvision']['spearman']:.2f} | {lib['kornia']['spearman']:.2f} | "
            f"{lib['pillow']['spearman']:.2f} | {100 * a['same_winner']:.1f}% | "
            f"{len(a['outliers'])} ({len(a['unexplained'])}) |"]


def _import_time_table(r: dict[str, Any]) -> list[str]:
    res, base = r["results"], r["results"]["dagster"]["median_s"]
    rows = [f"| `import {k}` | {what} | {res[k]['median_s']:.2f} | {res[k]['min_s']:.2f} | "
            f"{res[k]['median_s'] / base:.2f}x |" for k, what in (("definitions", "code location (target)"),
                                                                   ("dagster", "baseline"),
                                                                   ("torch", "reference: one heavy import"))]
    return [*rows, f"`--runs {r['runs']}`", f"load average {r['machine']['load_average_1m']:.2f} at the start and "
            f"{r['load_average_1m_at_end']:.2f} at the end",
            f"Heavy modules imported by `import definitions`: {', '.join(r['heavy_imported']) or 'none'}"]


def _import_time_summary(r: dict[str, Any]) -> list[str]:
    res = r["results"]
    heavy = ", ".join(r["heavy_imported"]) + " loaded" if r["heavy_imported"] else "no heavy module loaded"
    return [f"{res['definitions']['median_s']:.2f} s median ({r['ratio_definitions_to_dagster']:.2f}x bare "
            f"`import dagster`; `import torch` alone {res['torch']['median_s']:.2f} s); {heavy}"]


def _report_speed(r: dict[str, Any]) -> list[str]:
    checks = [f"| check `{name}`{' (cold hash cache)' if name == 'provenance' else ''} | {t:.3f} | <= 1 s |"
              for name, t in r["checks_s"].items()]
    return [f"full dbt build of the report ({r['dbt_tests']} tests)",
            f"| loader (`rebuild_warehouse`) | {r['load_s']:.2f} | |",
            f"| dbt build of the report ({r['dbt_build_to_parse']:.2f}x a bare `dbt parse` of {r['dbt_parse_s']:.2f} s)"
            f" | {r['dbt_build_s']:.2f} | |",
            f"| loader + dbt build | {r['total_s']:.2f} | <= 30 s |", *checks,
            f"{r['rows']['runs']:,} runs, {r['rows']['epochs']:,} epochs, {r['rows']['scores']:,} scores and "
            f"{r['rows']['submission_datasets']:,} submission rows loaded; {r['dbt_tests']} dbt tests, load average "
            f"{r['machine']['load_average_1m']:.2f} at the start",
            f"{r['load_average_1m_at_end']:.2f} at the end",
            f"the dbt process took {r['dbt_build_cpu_s']:.2f} CPU s from it against "
            f"{r['dbt_build_full_parse_cpu_s']:.2f} s parsing from scratch ({r['kept_parse_cpu_ratio']:.2f}x; "
            f"wall {r['dbt_build_s']:.2f} s against {r['dbt_build_full_parse_s']:.2f} s)"]


def _report_speed_kept_parse(r: dict[str, Any]) -> list[str]:
    """docs/architecture.md's figures for a build from the kept parse against one parsing from scratch."""
    return [f"{r['dbt_build_full_parse_cpu_s']:.2f} CPU s parsing from scratch, {r['dbt_build_cpu_s']:.2f} s from "
            f"the kept parse ({r['kept_parse_cpu_ratio']:.2f}x)"]


def _report_speed_small(r: dict[str, Any]) -> list[str]:
    return [f"{r['dbt_build_cpu_s']:.2f} CPU s against {r['dbt_build_full_parse_cpu_s']:.2f} s "
            f"({r['kept_parse_cpu_ratio']:.2f}x)",
            f"--models {r['models']} --datasets {r['datasets']}"]


_VERIFY_KINDS = {"verify": "target", "coco": "baseline", "json": "baseline", "verify_deep_subset": "reference",
                 "verify_shallow_subset": "reference", "materialize": "informational"}


def _verify_table(r: dict[str, Any]) -> list[str]:
    res = r["results"]
    ratios = {"coco": f"{r['ratio_verify_to_coco']:.2f}x", "json": f"{r['ratio_verify_to_json']:.2f}x"}
    return [f"| {_VERIFY_KINDS[k]} | {x['wall_s']:.2f} | {x['wall_min_s']:.2f} | {x['peak_rss_mb']:.0f} | "
            f"{ratios.get(k, '')} |" for k, x in res.items()] + [
        f"`verify_dataset(root)` ({r['images_train']} train + {2 * r['images_small_splits']} images, "
        f"{res['verify']['annotations']:,} boxes)",
        f"train annotation file {r['train_json_mb']:.1f} MB",
        f"load average {r['machine']['load_average_1m']:.2f} at the start, "
        f"{r['load_average_1m_at_end']:.2f} at the end",
        f"verify {res['verify']['wall_s']:.2f} s (target <= 20 s)", f"peak RSS {res['verify']['peak_rss_mb']:.0f} MB",
        f"Deep mode adds {r['deep_ms_per_image']:.1f} ms per image"]


def _verify_summary(r: dict[str, Any]) -> list[str]:
    res = r["results"]
    v, m = res["verify"], res["materialize"]
    return [f"({r['images_train']:,} images, {v['annotations']:,} boxes) <= 20 s",
            f"{v['wall_s']:.2f} s, {v['peak_rss_mb']:.0f} MB peak RSS ({r['ratio_verify_to_coco']:.2f}x pycocotools "
            f"`COCO()` load of the same file, {r['ratio_verify_to_json']:.2f}x `json.load`)",
            f"| same script | {m['wall_s']:.2f} s, {m['peak_rss_mb']:.0f} MB |"]


def _scoring_table(r: dict[str, Any]) -> list[str]:
    w, c = r["median_wall_s"], r["median_cpu_s"]
    fast = w["bench score --backend fast"]
    par = []
    for k, v in r["parity"].items():
        p, rc = v["precision"], v["recall"]
        par.append(f"| {k} | {p['differing']} / {p['cells']} | {rc['differing']} / {rc['cells']} | "
                   f"{max(p['max_abs_deviation'], rc['max_abs_deviation']):.3g} |")
    cpu_ratio = c["bench score --backend fast"] / c["bare hotcoco script"]
    first = "PASS" if r["checks"]["fast <= bare hotcoco"] else "FAIL"
    return [*(f"| {k} | {w[k]:.3f} | {c[k]:.3f} | {fast / w[k]:.2f} |" for k in w), *par,
            f"fast / bare hotcoco {r['ratios']['vs_hotcoco']:.2f} on `predictions.json` by wall time, "
            f"{cpu_ratio:.2f} by CPU time; bare pycocotools / fast {r['ratios']['pycocotools_over_fast']:.1f}x",
            f"load average {r['machine']['load_average_1m']:.2f} at the start, {r['load_average_1m_at_end']:.2f} at "
            "the end", f"{first} on the first target",
            f"the CLI's {r['metrics']} metrics equal the in-process ones" if r["cli_metrics_equal_in_process"] else
            "the CLI's metrics DIFFER from the in-process ones"]


def _scoring_summary(r: dict[str, Any]) -> list[str]:
    w = r["median_wall_s"]
    same = "arrays identical to pycocotools" if r["arrays_identical_to_pycocotools"] else "arrays DIFFER"
    return [f"fast {w['bench score --backend fast']:.2f} s vs pycocotools {w['bare pycocotools script']:.2f} s end to "
            f"end: {r['ratios']['pycocotools_over_fast']:.1f}x; {same}, {r['metrics']} metrics"]


def _overhead_table(r: dict[str, Any]) -> list[str]:
    rows = [f"| {x['transform']} | {x['harness_items_s']:,.0f} | {x['bare_items_s']:,.0f} | {x['overhead_pct']:+.2f}% "
            f"| {x['pooled_overhead_pct']:+.2f}% | {x['harness_cv']:.3f} | {x['bare_cv']:.3f} |" for x in r["rows"]]
    return [*rows, f"load average {r['machine']['load_average_1m']:.2f} at the start, "
                   f"{r['load_average_1m_at_end']:.2f} at the end",
            f"{'PASS' if r['pass'] else 'FAIL'} (target |overhead| <= 3%)"]


def _overhead_summary(r: dict[str, Any]) -> list[str]:
    ov = ", ".join(f"{x['transform']} {x['overhead_pct']:+.2f}%" for x in r["rows"])
    flip = [x for x in r["rows"] if x["transform"] == "HorizontalFlip"]
    return [f"{ov} (target |overhead| <= 3%: {'PASS' if r['pass'] else 'FAIL'})",
            f"load average {r['machine']['load_average_1m']:.2f} at the start",
            *(f"HorizontalFlip runs at {x['harness_items_s']:,.0f} items/s" for x in flip)]


def _paper_run(r: dict[str, Any]) -> list[str]:
    st = r["by_status"]
    early = ", ".join(f"{e['library']} {e['transform']}, preflight {e['preflight_items_per_s']:.1f} items/s"
                      for e in r["early_stopped"])
    checks = ", ".join(f"`{name}` {'passes' if c['passed'] else 'FAILS'}" for name, c in r["checks"].items())
    n_transforms = len({c["transform"] for c in r["per_cell"]})
    errors = len(r["errors"])
    quotes = [f"{n_transforms} transforms x {len(r['libraries'])} CPU libraries, {r['num_items']:,} items, "
              f"{r['num_runs']} run{'s' if r['num_runs'] != 1 else ''}", f"{r['run_wall']} wall",
              f"{r['terminal_cells']}/{r['planned_cells']} cells terminal: {st.get('ok', 0)} ok, "
              f"{st.get('early_stopped', 0)} early-stopped" + (f" ({early})" if early else "")
              + f", {st.get('unsupported', 0)} unsupported with reasons, "
              + (f"{errors} in error" if errors else "no cell in error"), checks,
              f"{r['unstable_ok_cells']} of {st.get('ok', 0)} ok cells are flagged `unstable`",
              f"load average {r['machine']['load_average_1m']:.2f} at the start"]
    if r["transforms"] != "paper":
        quotes.append(f"({', '.join(r['transforms'])})")
    if r["report_wall_s"] is not None:
        quotes.append(f"`bench report` after it (dbt marts + both reports): {r['report_wall_s']:.0f} s")
    return quotes


def _agreement_3(r: dict[str, Any]) -> list[str]:
    """benchmarks/README.md's table: three decimals, bold where a goal is met (bold is ignored here)."""
    a = r["agreement"]
    lib = a["libraries"]
    return [f"| {lib['torchvision']['spearman']:.3f} | {lib['kornia']['spearman']:.3f} | "
            f"{lib['pillow']['spearman']:.3f} | {100 * a['same_winner']:.1f}% | "
            f"{len(a['outliers'])} ({len(a['unexplained'])}) |"]


def _probes(r: dict[str, Any]) -> list[str]:
    calls = r["opencv_ipp"]["calls"]
    add = "cv2.add(float32 375x500, 1.0) us"
    ax = r["opencv_ipp"]["albumentationsx_items_per_s"]
    ill = ("CornerIllumination", "GaussianIllumination")
    pil = r["pillow_published_conversion"]
    sat = r["saturation"]
    return [f"`cv2.add(float32 map, 1.0)` {calls['ipp_on'][add]:,.0f} us with IPP vs {calls['ipp_off'][add]:,.0f} us "
            "without",
            f"Corner/GaussianIllumination {ax[ill[0]]['ipp_on']:,.0f} / {ax[ill[1]]['ipp_on']:,.0f} items/s with IPP, "
            f"{ax[ill[0]]['ipp_off']:,.0f} / {ax[ill[1]]['ipp_off']:,.0f} without",
            f"Pillow VerticalFlip {pil['VerticalFlip']['slowdown']:.1f}x slower with the published conversion "
            f"({pil['conversion_alone_us']:.0f} us per image)",
            f"AlbumentationsX {r['albumentationsx_hflip_output']['albumentationsx']}'s HorizontalFlip is a reversed "
            f"view ({r['albumentationsx_hflip_output']['call_then_ascontiguousarray_us']:.0f} us with "
            "`np.ascontiguousarray`)",
            "Saturation as `ColorJitter` {:,.0f} items/s, as `HueSaturationValue` {:,.0f}".format(
                *list(sat.values())[:2])]


def _probes_augbench_md(r: dict[str, Any]) -> list[str]:
    """docs/augbench.md's wording of the same probes ("Agreement with the published tables")."""
    calls = r["opencv_ipp"]["calls"]
    add = "cv2.add(float32 375x500, 1.0) us"
    ax = r["opencv_ipp"]["albumentationsx_items_per_s"]
    c, g = ax["CornerIllumination"], ax["GaussianIllumination"]
    pil = r["pillow_published_conversion"]
    sat = list(r["saturation"].values())
    return [f"{calls['ipp_on'][add]:,.0f} us with IPP, {calls['ipp_off'][add]:,.0f} us after",
            f"{c['ipp_on']:,.0f} and {g['ipp_on']:,.0f} items/s here ({c['ipp_off']:,.0f} and {g['ipp_off']:,.0f} "
            "with IPP off)",
            f"full image copy, {pil['conversion_alone_us']:.0f} us per image here",
            f"VerticalFlip is {pil['VerticalFlip']['slowdown']:.1f}x slower with it",
            f"takes {r['albumentationsx_hflip_output']['call_then_ascontiguousarray_us']:.0f} us instead of",
            f"(an HSV round trip, {sat[1]:,.0f} items/s here)", f"like Pillow's; {sat[0]:,.0f} items/s)"]


def _probes_published_versions(r: dict[str, Any]) -> list[str]:
    h = r["albumentationsx_hflip_output"]
    return [f"{h['albumentationsx']}'s is contiguous ({h['call_us']:.0f} us)"]


def _demo_run(r: dict[str, Any]) -> list[str]:
    """docs/training.md's row for `make demo` (benchmarks/demo_run.py)."""
    scores = ", ".join(f"{d} {x['test_mAP50_95']:.4f} / {x['valid_mAP50_95']:.4f}" for d, x in r["datasets"].items())
    return [f"| `.venv/bin/python benchmarks/demo_run.py` | {r['wall']}, exit {r['exit_code']}; test / valid mAP50-95 "
            f"{scores}; load average {r['machine']['load_average_1m']:.2f} at the start |"]


def _suite_time(r: dict[str, Any]) -> list[str]:
    """docs/testing.md's row for the suite's timing (benchmarks/suite_time.py) and its five slowest files."""
    o, busy = r["outcomes"], r["machine_busy_s"]
    return [f"| `{r['command']}` | {r['tests']} tests: {o['passed']} passed, {o['failed']} failed, "
            f"{o['errors']} errors, {o['skipped']} skipped | {r['wall']} | {r['cpu']} | "
            f"{'-' if busy is None else f'{busy:.0f} s'} | {r['machine']['load_average_1m']:.2f} |",
            "; ".join(f"`{f['file']}` {f['seconds']:.0f} s" for f in r["files"][:5])]


def _cluster_lifecycle(r: dict[str, Any]) -> list[str]:
    """docs/scale-out.md's rotate-secrets and down times (benchmarks/cluster_lifecycle.py)."""
    return [f"rotate-secrets` takes about {r['median_rotate_s']:.1f} s and `bench cluster down` about "
            f"{r['median_down_s']:.1f} s (medians"]


def _cluster_lifecycle_background(r: dict[str, Any]) -> list[str]:
    """docs/scale-out.md's times with every `bench` started with SIGINT ignored (cluster_lifecycle.py --background)."""
    assert r["sigint_ignored"], "measured without --background"
    return [f"`rotate-secrets` takes {r['median_rotate_s']:.1f} s and `down` {r['median_down_s']:.1f} s, as in the "
            "foreground"]


def _tmpfs_copy(r: dict[str, Any]) -> list[str]:
    """docs/testing.md's cost of copying the synthetic campaign on the disk and on tmpfs (benchmarks/tmpfs_copy.py)."""
    d, t = r["median"]["disk"], r["median"]["tmpfs"]
    return [f"medians of {r['repeat']} copies each:\n{r['tree']['files']} files in {r['tree']['folders']} folders per "
            f"copy, a median wall of {d['wall_s']:.3f} s on {r['places']['disk']} and {t['wall_s']:.3f} s on "
            f"{r['places']['tmpfs']}, of which system CPU\n{d['sys_s']:.3f} s and {t['sys_s']:.3f} s"]


def _process_gc(r: dict[str, Any]) -> list[str]:
    """docs/testing.md's cost of the garbage collector in a process's imports and exit (benchmarks/process_gc.py)."""
    quotes = [f"medians of {r['repeat']} processes each way"]
    for stack in ("training child", "code location", "both"):
        c, m = r["costs"][stack], r["median"][stack]
        quotes.append(f"{stack}: {c['import_collections']['cpu_s']:.2f} s of CPU in collections during the imports, "
                      f"{c['exit_normal']['cpu_s']:.2f} s to exit as a program returns and "
                      f"{c['exit_frozen']['cpu_s']:.2f} s frozen; the whole process {m['normal']['cpu_s']:.2f} s -> "
                      f"{m['paused_frozen']['cpu_s']:.2f} s")
    return quotes


def _suite_time_against(r: dict[str, Any]) -> list[str]:
    """docs/testing.md's ratios of a side-by-side run (benchmarks/suite_time.py --against)."""
    return [f"wall x{r['wall_ratio']:.3f} and machine busy x{r['machine_busy_ratio']:.3f}",
            f"{r['ids']['before']} -> {r['ids']['after']} tests"]


def _profile_summary(r: dict[str, Any], kinds: int) -> list[str]:
    """A profiled selection's (benchmarks/suite_profile.py) summary line and table of its largest kinds."""
    return [f"{r['wall']} wall, {r['cpu_s']:,.0f} CPU s in {r['processes']:,} processes",
            *[f"| `{k['kind']}` | {k['cpu_s']:.1f} | {k['processes']} |" for k in r["by_kind"][:kinds]]]


def _suite_profile(r: dict[str, Any]) -> list[str]:
    """docs/testing.md's profile of the two system test files: summary, ten largest kinds, PostgreSQL's rate."""
    postgres = next(k for k in r["by_kind"] if k["kind"] == "postgres")
    return [*_profile_summary(r, 10), f"about {postgres['processes'] / r['wall_s']:.0f} a second over the run"]


def _suite_profile_full(r: dict[str, Any]) -> list[str]:
    """docs/testing.md's profile of make test's whole selection: summary, twelve largest kinds, training total."""
    train = [k for k in r["by_kind"] if k["kind"].startswith(TRAIN_CHILD_KINDS)]
    by_file = {f["file"]: f["cpu_s"] for f in r["by_file"]}
    kept = sum(by_file[f] for f in KEPT_SYSTEM_FILES)
    with_workers = kept + by_file["(pytest worker)"]
    return [*_profile_summary(r, 12),
            f"Training children of every kind among the 40 largest: {sum(k['cpu_s'] for k in train):.1f} CPU s in "
            f"{sum(k['processes'] for k in train)} processes",
            *[f"`{Path(f).name}` {by_file[f]:.1f}" for f in KEPT_SYSTEM_FILES],
            f"{kept:.1f} CPU s, {100 * kept / r['cpu_s']:.1f} % of the {r['cpu_s']:,.0f} recorded",
            f"{', '.join(f'`{Path(f).name}`' for f in kept_files_since_baseline())}: "
            f"{sum(by_file[f] for f in kept_files_since_baseline()):.1f} CPU s of them",
            f"pytest workers' {by_file['(pytest worker)']:.1f} s",
            f"{with_workers:,.1f} s, {100 * with_workers / r['cpu_s']:.1f} % of the recording"]


def _child_checkpoint_io(r: dict[str, Any]) -> list[str]:
    """docs/libreyolo_notes.md's cost of each checkpoint operation the training child avoids
    (benchmarks/child_checkpoint_io.py), and the sum it draws for a 2-epoch run."""
    rd, sv, rl, saved = r["read"], r["save"], r["reload"], r["per_run"]["saved_cpu_s"]
    return [f"medians of {r['repeat']} runs of each",
            f"takes {rd['median_old_s']:.3f} s by `torch.load(mmap=True)`",
            f"and {rd['median_new_s']:.3f} s from `data.pkl`",
            f"{sv['median_old_s']:.3f} s by two `torch.save`s and {sv['median_new_s']:.3f} s by one and a copy",
            f"the reload after training {rl['median_old_s']:.3f} s, skipped",
            f"saves at most about {saved:.1f} CPU s of the {r['training']['child_cpu_s']:.1f} s"]


def _duckdb_reads(r: dict[str, Any]) -> list[str]:
    """docs/report.md's cost of opening a DuckDB file per read and per load (benchmarks/duckdb_reads.py)."""
    f = r["figures"]
    one, checks, load = f["one read"], f["five checks"], f["rebuild"]
    return [f"synthetic campaign of {r['models']} models x {r['datasets']} datasets, medians of {r['repeat']}",
            f"one small read {one['attached_cpu_ms']:.1f} ms CPU against {one['connect_cpu_ms']:.1f} ms",
            f"({r['reads_in_five_checks']} reads) {checks['attached_cpu_ms']:.0f} ms against "
            f"{checks['connect_cpu_ms']:.0f} ms",
            f"a load {load['attached_cpu_ms']:.0f} ms against {load['connect_cpu_ms']:.0f} ms"]


# (doc, result file, what the doc must quote from it)
QUOTED: list[tuple[str, str, Callable[[dict[str, Any]], list[str]]]] = [
    ("docs/scale-out.md", "cluster_overhead.json", _cluster),
    ("docs/scale-out.md", "campaign_simulation.json", _simulation),
    ("docs/scale-out.md", "cluster_lifecycle.json", _cluster_lifecycle),
    ("docs/scale-out.md", "cluster_lifecycle_background.json", _cluster_lifecycle_background),
    ("docs/report.md", "ui_run_speed.json", _ui_speed),
    ("docs/report.md", "duckdb_reads.json", _duckdb_reads),
    ("docs/augbench.md", "materialize_copy.json", _materialize_copy),
    *[("docs/augbench.md", f"augbench_vs_published{run}.json", _agreement)
      for run in ("", "_macos", "_replication", "_published_versions")],
    *[("benchmarks/README.md", f"augbench_vs_published{run}.json", _agreement_3)
      for run in ("", "_macos", "_replication", "_published_versions")],
    ("benchmarks/README.md", "campaign_simulation.json", _simulation),
    ("benchmarks/README.md", "published_outlier_probes.json", _probes),
    ("benchmarks/README.md", "published_outlier_probes_published_versions.json", _probes_published_versions),
    ("docs/augbench.md", "published_outlier_probes.json", _probes_augbench_md),
    ("benchmarks/README.md", "import_time.json", _import_time_table),
    ("docs/datasets.md", "import_time.json", _import_time_summary),
    ("benchmarks/README.md", "report_speed.json", _report_speed),
    ("benchmarks/README.md", "report_speed_small.json", _report_speed_small),
    ("docs/architecture.md", "report_speed.json", _report_speed_kept_parse),
    ("docs/architecture.md", "report_speed_small.json", _report_speed_kept_parse),
    ("benchmarks/README.md", "verify_speed.json", _verify_table),
    ("docs/datasets.md", "verify_speed.json", _verify_summary),
    ("benchmarks/README.md", "scoring_speed.json", _scoring_table),
    ("docs/training.md", "scoring_speed.json", _scoring_summary),
    ("docs/training.md", "demo_run.json", _demo_run),
    ("docs/testing.md", "suite_time.json", _suite_time),
    ("docs/testing.md", "suite_time_fast.json", _suite_time),
    ("docs/testing.md", "suite_time_against.json", _suite_time_against),
    ("docs/testing.md", "tmpfs_copy.json", _tmpfs_copy),
    ("docs/libreyolo_notes.md", "child_checkpoint_io.json", _child_checkpoint_io),
    ("docs/testing.md", "process_gc.json", _process_gc),
    ("docs/testing.md", "suite_time_against_fast.json", _suite_time_against),
    ("docs/testing.md", "suite_profile.json", _suite_profile),
    ("docs/testing.md", "suite_profile_full.json", _suite_profile_full),
    ("benchmarks/README.md", "augbench_overhead.json", _overhead_table),
    ("docs/augbench.md", "augbench_overhead.json", _overhead_summary),
    ("docs/augbench.md", "paper_run_rgb-micro.json", _paper_run),
    ("docs/augbench.md", "paper_run_rgb-micro_smoke.json", _paper_run),
    *[("docs/augbench.md", f"paper_run_{family}_reduced.json", _paper_run)
      for family in ("rgb-dataloader", "9ch-dataloader", "video-dataloader", "video-micro")],
]


def _text(doc: str) -> str:
    return " ".join((REPO / doc).read_text().replace("**", "").split())  # line breaks and bold do not matter


def _quotes(result: str, quotes: Callable[[dict[str, Any]], list[str]]) -> list[str]:
    path = RESULTS / result
    if result in PENDING and not path.exists():
        pytest.skip(f"benchmarks/results/{result} is not committed yet: `{PENDING[result]}` writes it")
    return [" ".join(q.split()) for q in quotes(json.loads(path.read_text()))]


@pytest.mark.parametrize(("doc", "result", "quotes"), QUOTED, ids=[f"{d}<-{r}" for d, r, _ in QUOTED])
def test_docs_quote_the_committed_results(doc: str, result: str,
                                          quotes: Callable[[dict[str, Any]], list[str]]) -> None:
    text = _text(doc)
    missing = [q for q in _quotes(result, quotes) if q not in text]
    assert not missing, f"{doc} does not quote these figures of benchmarks/results/{result}: {missing}"


def test_a_pending_paper_run_is_marked_as_such_in_the_doc() -> None:
    """Until the full paper run's output is committed, the doc says its figures await that command; once it is,
    the doc no longer does (its old figures replaced by the ones the file holds, checked above)."""
    for result, cmd in PENDING.items():
        marked = f"to be re-measured by `{cmd.split(' (')[0]}`" in _text("docs/augbench.md")
        assert marked != (RESULTS / result).exists(), (
            f"benchmarks/results/{result} is committed: replace docs/augbench.md's figures marked 'to be re-measured' "
            "with the sentence the script printed" if marked else f"docs/augbench.md must mark the figures "
            f"benchmarks/results/{result} will hold as 'to be re-measured by `{cmd.split(' (')[0]}`'")


# --- counts --------------------------------------------------------------------------------------------------------

# (doc, the quote with {n} for the count, the test file counted): the number of tests pytest collects from the file
TEST_COUNTS = [
    ("docs/training.md", "`.venv/bin/pytest -q tests/rf100vl/test_campaign.py` | {n} tests",
     "tests/rf100vl/test_campaign.py"),
]
# (doc, the quote with {n} for the number of tests in the dbt project)
DBT_TEST_COUNTS = [("README.md", "(`marts/rf100vl/`, `marts/augbench/`), {n} tests |")]
SCANNED = ["README.md", "benchmarks/README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
COUNT = re.compile(r"\b\d[\d,]* (?:dbt )?(?:tests|passed)\b")


def collected_tests(*files: str) -> dict[str, int]:
    """Test ids pytest collects from each file (parametrized cases count one each, as `pytest -q` counts them)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", "-p", "no:cacheprovider",
                          *files], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    ids = [line.split("::")[0] for line in out.stdout.splitlines() if "::" in line]
    return {f: ids.count(f) for f in files}


def dbt_tests() -> int:
    from bench_assets.report.dbt_project import prepare_manifest

    nodes = json.loads(prepare_manifest().read_text())["nodes"].values()
    return sum(n["resource_type"] == "test" for n in nodes)


@pytest.fixture(scope="module")
def counted_quotes() -> list[tuple[str, str]]:
    """(doc, quote) for every count the docs quote, formatted with the real count."""
    counts = collected_tests(*sorted({f for _, _, f in TEST_COUNTS}))
    n_dbt = dbt_tests()
    return ([(doc, quote.format(n=counts[f])) for doc, quote, f in TEST_COUNTS]
            + [(doc, quote.format(n=n_dbt)) for doc, quote in DBT_TEST_COUNTS])


def test_quoted_counts_are_the_real_counts(counted_quotes: list[tuple[str, str]]) -> None:
    missing = [(doc, q) for doc, q in counted_quotes if " ".join(q.split()) not in _text(doc)]
    assert not missing, f"these counts are not what the docs quote (test files collected, dbt manifest): {missing}"


def test_report_speed_was_measured_with_the_projects_dbt_tests() -> None:
    measured = json.loads((RESULTS / "report_speed.json").read_text())["dbt_tests"]
    assert measured == dbt_tests(), (
        f"benchmarks/results/report_speed.json was measured with {measured} dbt tests, the project has "
        f"{dbt_tests()}: re-run `.venv/bin/python benchmarks/report_speed.py --repeat 3` and update "
        "benchmarks/README.md")


def test_every_count_of_tests_in_the_docs_is_checked(counted_quotes: list[tuple[str, str]]) -> None:
    """An "N tests" / "N passed" a doc quotes outside the checked quotes above is a count nobody checks."""
    checked: dict[str, list[str]] = {}
    for doc, q in counted_quotes:
        checked.setdefault(doc, []).append(" ".join(q.split()))
    for doc, result, quotes in QUOTED:
        if (RESULTS / result).exists():
            checked.setdefault(doc, []).extend(" ".join(q.split()) for q in quotes(json.loads(
                (RESULTS / result).read_text())))
    unchecked = []
    for doc in SCANNED:
        text = _text(doc)
        for q in checked.get(doc, []):
            text = text.replace(q, " ")
        unchecked += [f"{doc}: ...{text[max(0, m.start() - 60):m.end()]}" for m in COUNT.finditer(text)]
    assert not unchecked, f"counts of tests not checked against anything (add them to TEST_COUNTS): {unchecked}"


def test_the_check_sees_a_drifted_figure(tmp_path: Path) -> None:
    data = json.loads((RESULTS / "ui_run_speed.json").read_text())
    data["rows"][0]["ui_run_s"] += 0.5  # a rerun the doc was not updated for
    text = " ".join((REPO / "docs" / "report.md").read_text().split())
    assert any(q not in text for q in _ui_speed(data))


def test_the_count_check_sees_a_wrong_count(counted_quotes: list[tuple[str, str]]) -> None:
    for doc, q in counted_quotes:
        wrong = re.sub(r"\d+ tests", lambda m: f"{int(m.group().split()[0]) + 1} tests", q)
        assert wrong != q and " ".join(wrong.split()) not in _text(doc), (doc, wrong)
