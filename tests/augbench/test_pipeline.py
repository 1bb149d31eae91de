"""augbench end to end through the CLI and Dagster: plan refuses impossible cells, run measures every planned
cell into a terminal status, repeats append, the warehouse checks pass on a full run and fail on a planted
gap or a mixed paper table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.augbench import warehouse_checks as wc
from bench_assets.platform.warehouse import rebuild_warehouse
from tests.conftest import REPO, bench_in_process, run_bench
from tests.tables import ALL_TABLES

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

TINY = """
name: tiny-rgb
media: rgb
mode: micro
libraries: [albumentationsx, pillow]
transforms: [HorizontalFlip, RGBShift, Rotate]
num_items: 12
num_runs: 2
preflight: {items: 4, min_items_per_s: 1.0, max_seconds: 60}
media_source: {kind: embedded, item_size: 64}
"""


def _config(tmp_path: Path, text: str = TINY, name: str = "tiny.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_plan_lists_partitions_and_refuses_impossible_cells(bench_home: Path, tmp_path: Path) -> None:
    res = bench_in_process("augbench", "plan", "--config", str(REPO / "configs/paper/rgb-micro.yaml"), home=bench_home)
    assert res.returncode == 0, res.stderr
    assert "58 transforms x 4 libraries" in res.stdout
    assert "partition rgb-micro|pillow:" in res.stdout
    assert "unsupported RGBShift: torchvision has no RGBShift equivalent for rgb (micro)" in res.stdout
    assert "excluded from the paper set: Dithering" in res.stdout

    pillow_9ch = _config(tmp_path, TINY.replace("media: rgb", "media: 9ch"), "p9.yaml")
    res = bench_in_process("augbench", "plan", "--config", str(pillow_9ch), home=bench_home)
    assert res.returncode == 2 and "pillow cannot run 9ch micro on cpu: Pillow has no 9-channel" in res.stderr
    gpu = _config(tmp_path, TINY, "gpu.yaml")
    res = bench_in_process("augbench", "plan", "--config", str(gpu), "--device", "cuda", home=bench_home)
    assert res.returncode == 2 and "albumentationsx runs on CPU only, not on CUDA" in res.stderr
    res = bench_in_process("augbench", "plan", "--config", str(gpu), "--num-items", "0", home=bench_home)
    assert res.returncode == 2 and "field num_items: Input should be greater than 0" in res.stderr
    typo = _config(tmp_path, TINY + "num_itmes: 3\n", "typo.yaml")
    res = bench_in_process("augbench", "plan", "--config", str(typo), home=bench_home)
    assert res.returncode == 2 and f"{typo}: field num_itmes: Extra inputs are not permitted" in res.stderr
    unknown = _config(tmp_path, TINY.replace("Rotate]", "Rotate, Twirl]"), "unknown.yaml")
    res = bench_in_process("augbench", "plan", "--config", str(unknown), home=bench_home)
    assert res.returncode == 2 and "Twirl not in the rgb transform set" in res.stderr


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny config run through `bench augbench run` once in this process, then in 2 rounds of fresh processes
    in a seeded order (three repeats per library)."""
    root = tmp_path_factory.mktemp("augbench")
    home = root / "bench"
    cfg = _config(root)
    for extra in ((), ("--rounds", "2", "--order-seed", "3")):
        res = run_bench("augbench", "run", "--config", str(cfg), "--no-report", *extra, home=home, timeout=600)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return home


def test_run_records_every_planned_cell_with_a_terminal_status(tiny_run: Path) -> None:
    alb = json.loads((tiny_run / "augbench/tiny-rgb/albumentationsx.results.json").read_text())
    pil = json.loads((tiny_run / "augbench/tiny-rgb/pillow.results.json").read_text())
    assert [r["repeat"] for r in alb["repeats"]] == [1, 2, 3]  # runs append as numbered repeats
    latest = {c["transform"]: c for c in alb["repeats"][-1]["cells"]}
    assert {t: c["status"] for t, c in latest.items()} == {"HorizontalFlip": "ok", "RGBShift": "ok", "Rotate": "ok"}
    assert all(len(c["throughputs"]) == 2 and c["summary"]["median"] > 0 for c in latest.values())
    pcells = {c["transform"]: c for c in pil["repeats"][-1]["cells"]}
    assert pcells["RGBShift"]["status"] == "unsupported"
    assert pcells["RGBShift"]["reason"] == "pillow has no RGBShift equivalent for rgb (micro)"
    rep = alb["repeats"][-1]
    assert rep["media_hash"] == pil["repeats"][-1]["media_hash"] and len(rep["media_hash"]) == 64
    assert rep["threads"]["OMP_NUM_THREADS"] == "1" and rep["hardware"]
    assert rep["versions"] and alb["config"]["num_items"] == 12
    # rounds: each repeat says where it ran in its round's seeded order; the first run was outside rounds
    from bench_assets.augbench.rounds import round_orders

    orders = round_orders(["albumentationsx", "pillow"], 2, 3)
    assert alb["repeats"][0]["schedule"] is None
    for doc, lib in ((alb, "albumentationsx"), (pil, "pillow")):
        scheds = [r["schedule"] for r in doc["repeats"][1:]]
        assert [s["round"] for s in scheds] == [1, 2] and [s["order"] for s in scheds] == orders
        assert [s["position"] for s in scheds] == [o.index(lib) + 1 for o in orders]
        assert all(s["process"] == "fresh" and s["order_seed"] == 3 for s in scheds)
    assert {"load_1m", "busy", "clock_moved", "materialize_us"} <= latest["HorizontalFlip"].keys()
    assert rep["machine"]["cpu_count"] and "governor" in rep["machine"]

    wh = tiny_run / "warehouse.duckdb"
    rebuild_warehouse(tiny_run, wh, ALL_TABLES)
    assert wc.coverage(wh).passed, wc.coverage(wh).description
    assert wc.consistency(wh).passed, wc.consistency(wh).description
    import duckdb

    con = duckdb.connect(str(wh), read_only=True)
    rows = con.execute("SELECT library, repeats, speedup_vs_reference, speedup_ci95_low, speedup_ci95_high "
                       "FROM augbench_cells WHERE transform = 'HorizontalFlip' ORDER BY library").fetchall()
    con.close()
    (alb_row, pil_row) = rows
    assert alb_row[1] == 3 and alb_row[2] == 1.0 and alb_row[3] <= 1.0 <= alb_row[4]
    assert pil_row[3] <= pil_row[2] <= pil_row[4]  # the interval holds the ratio of pooled medians


def test_planted_gap_and_mixed_conditions_fail_the_checks(tiny_run: Path, tmp_path: Path) -> None:
    import shutil

    home = tmp_path / "bench"
    shutil.copytree(tiny_run, home)
    path = home / "augbench/tiny-rgb/albumentationsx.results.json"
    doc = json.loads(path.read_text())
    doc["repeats"][-1]["cells"] = [c for c in doc["repeats"][-1]["cells"] if c["transform"] != "Rotate"]
    path.write_text(json.dumps(doc))
    ppath = home / "augbench/tiny-rgb/pillow.results.json"
    pdoc = json.loads(ppath.read_text())
    pdoc["repeats"][-1]["hardware"] = "some other box"
    flip = next(c for c in pdoc["repeats"][-1]["cells"] if c["transform"] == "HorizontalFlip")
    flip.update(status="error", reason="ValueError: boom", throughputs=[], summary=None)
    ppath.write_text(json.dumps(pdoc))
    wh = home / "warehouse.duckdb"
    rebuild_warehouse(home, wh, ALL_TABLES)
    cov = wc.coverage(wh)
    assert not cov.passed
    problems = {(r["library"], r["transform"]): r["problem"] for r in cov.rows}
    assert problems == {("albumentationsx", "Rotate"): "missing (never measured)",
                        ("pillow", "HorizontalFlip"): "error: ValueError: boom"}
    cons = wc.consistency(wh)
    assert not cons.passed and "some other box" in cons.description


def test_an_unavailable_device_records_unsupported_cells_not_a_crash(bench_home: Path, tmp_path: Path) -> None:
    cfg = _config(tmp_path, TINY.replace("[albumentationsx, pillow]", "[torchvision]") + "device: cuda\n", "gpu.yaml")
    res = run_bench("augbench", "run", "--config", str(cfg), "--no-report", home=bench_home, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((bench_home / "augbench/tiny-rgb/torchvision.results.json").read_text())
    cells = doc["repeats"][-1]["cells"]
    assert {c["status"] for c in cells} == {"unsupported"}
    reasons = {c["transform"]: c["reason"] for c in cells}
    assert reasons.pop("RGBShift") == "torchvision has no RGBShift equivalent for rgb (micro)"
    assert all("CUDA" in r for r in reasons.values()), reasons
