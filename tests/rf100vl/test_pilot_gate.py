"""The pilot gate's conditions over a warehouse written with the loader's own schemas: green on a healthy pilot,
red on each planted defect (a pilot dataset missing, a kill-and-resume score off by more than the noise, an
inverted or too-distant size pair, a conformant run whose valid and test disagree), and WARN once overridden."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_assets.platform.duckdb_files import attached
from bench_assets.rf100vl.report.pilot_gate import DOCUMENTED_NOISE, Z95, pilot_gate, pilot_gates, replicate_noise
from tests.tables import TABLE_SCHEMAS, create_sql

PILOT = ["p1", "p2", "p3"]
T = {"p1": 0.40, "p2": 0.30, "p3": 0.50, "r1": 0.45}  # yolo9-t, test mAP50-95
S = {"p1": 0.43, "p2": 0.33, "p3": 0.52, "r1": 0.47}  # yolo9-s: ~3 points above, the healthy family step


def _score(model: str, dataset: str, value: float, *, valid: float | None = None, conformant: bool = True,
           base: str | None = None, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    sig = f"sig-{model}-{dataset}"
    score = {"model": model, "dataset": dataset, "split": "test", "is_current": True, "mAP50_95": value,
             "run_signature": sig, "base_model": base or model, "seed": seed}
    run = {"model": model, "dataset": dataset, "run_signature": sig, "is_current": True,
           "valid_mAP50_95": value + 0.01 if valid is None else valid, "recipe_conformant": conformant,
           "base_model": base or model, "seed": seed}
    return score, run


def _warehouse(path: Path, *, t: dict[str, float] = T, s: dict[str, float] = S, resume: float | None = 0.30,
               seeds: dict[str, float] | None = None, override: dict | None = None,
               valid: dict[str, float] | None = None) -> Path:
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLE_SCHEMAS}
    rows["models"] = [
        {"model": "yolo9-t", "family": "yolo9", "size": "t", "size_rank": 0, "base_model": "yolo9-t", "seed": 0,
         "pilot": PILOT, "gate_override": json.dumps(override) if override else None},
        {"model": "yolo9-s", "family": "yolo9", "size": "s", "size_rank": 1, "base_model": "yolo9-s", "seed": 0,
         "pilot": []},
        {"model": "yolo9-t@resume", "family": "yolo9", "size": "t", "size_rank": 0, "base_model": "yolo9-t",
         "seed": 0, "pilot": []}]
    pairs = [_score("yolo9-t", d, v, valid=(valid or {}).get(d)) for d, v in t.items()]
    pairs += [_score("yolo9-s", d, v) for d, v in s.items()]
    if resume is not None:
        pairs.append(_score("yolo9-t@resume", "p2", resume, base="yolo9-t"))
    pairs += [_score("yolo9-t@seed1", d, v, base="yolo9-t", seed=1) for d, v in (seeds or {}).items()]
    rows["scores"] = [p[0] for p in pairs]
    rows["runs"] = [p[1] for p in pairs]
    with attached(path, read_only=False) as con:
        for table in TABLE_SCHEMAS:
            con.execute(create_sql(table))
            for row in rows[table]:
                cols = ", ".join(f'"{c}"' for c in row)
                con.execute(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    return path


def _conditions(finding: Any) -> dict[str, bool]:
    return {r["name"]: r["passed"] for r in finding.rows}


def test_a_healthy_pilot_is_green(tmp_path: Path) -> None:
    f = pilot_gate(_warehouse(tmp_path / "w.duckdb"), "yolo9-t", PILOT, "yolo9-t@resume")
    assert f.passed and _conditions(f) == {"complete": True, "resume": True, "sizes": True, "selection": True}
    assert "p2: killed and resumed 0.3000 vs uninterrupted 0.3000, |diff| 0.0000 within the noise" in f.description
    gates = pilot_gates(tmp_path / "w.duckdb")
    assert gates.passed and gates.facts == {"models": 1}  # yolo9-s declared no pilot; the replicate is no model


def test_each_planted_defect_turns_its_condition_red(tmp_path: Path) -> None:
    missing = pilot_gate(_warehouse(tmp_path / "m.duckdb", t={k: v for k, v in T.items() if k != "p3"}),
                         "yolo9-t", PILOT, "yolo9-t@resume")
    assert _conditions(missing)["complete"] is False and "2/3 pilot datasets scored; missing p3" in missing.description

    # The kill-and-resume check 1 point off its uninterrupted run: beyond the documented 0.5-point noise.
    off = pilot_gate(_warehouse(tmp_path / "o.duckdb", resume=0.31), "yolo9-t", PILOT, "yolo9-t@resume")
    assert not off.passed and _conditions(off) == {"complete": True, "resume": False, "sizes": True,
                                                   "selection": True}
    assert "|diff| 0.0100 beyond the noise 0.0050 (documented 0.005" in off.description
    unrun = pilot_gate(_warehouse(tmp_path / "u.duckdb", resume=None), "yolo9-t", PILOT, "yolo9-t@resume")
    assert "yolo9-t@resume (the kill-and-resume check) has no score yet" in unrun.description

    # yolo9-s below yolo9-t: an inverted pair, although only 2 points apart.
    inverted = pilot_gate(_warehouse(tmp_path / "i.duckdb", s={d: v - 0.05 for d, v in T.items()}),
                          "yolo9-t", PILOT, "yolo9-t@resume")
    assert _conditions(inverted)["sizes"] is False and "inverted (the larger size scores lower)" in inverted.description
    far = pilot_gate(_warehouse(tmp_path / "f.duckdb", s={d: v + 0.16 for d, v in T.items()}),
                     "yolo9-t", PILOT, "yolo9-t@resume")
    assert _conditions(far)["sizes"] is False and "gap 0.1600 > 0.1" in far.description

    # The BatchNorm-eps lesson on a pilot dataset: valid 0.566, test 0.30.
    bn = pilot_gate(_warehouse(tmp_path / "b.duckdb", valid={"p2": 0.566}), "yolo9-t", PILOT, "yolo9-t@resume")
    assert _conditions(bn)["selection"] is False and "p2 valid 0.5660 test 0.3000" in bn.description
    outside = pilot_gate(_warehouse(tmp_path / "x.duckdb", valid={"r1": 0.9}), "yolo9-t", PILOT, "yolo9-t@resume")
    assert outside.passed  # a dataset of the rest is not the pilot's to judge


def test_the_noise_comes_from_seed_replicates_when_measured(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path / "n.duckdb", seeds={"p1": 0.42, "p2": 0.33}, resume=0.31)
    noise, source = replicate_noise(wh, "yolo9-t")
    pooled = ((0.40 - 0.42) ** 2 / 2 + (0.30 - 0.33) ** 2 / 2) / 2  # var_samp of two values: d^2 / 2
    assert noise == pytest.approx(Z95 * pooled ** 0.5) and "2 replicated dataset(s)" in source
    assert noise > DOCUMENTED_NOISE
    f = pilot_gate(wh, "yolo9-t", PILOT, "yolo9-t@resume")
    assert f.passed and "|diff| 0.0100 within the noise" in f.description  # 1 point is noise for these seeds


def test_a_red_gate_once_overridden_is_a_warning_that_says_so(tmp_path: Path) -> None:
    red = pilot_gates(_warehouse(tmp_path / "r.duckdb", resume=0.31))
    assert not red.passed and red.severity == "ERROR"
    over = pilot_gates(_warehouse(tmp_path / "o.duckdb", resume=0.31,
                                  override={"at": "2026-12-05T10:00:00+00:00", "red": ["resume"]}))
    assert not over.passed and over.severity == "WARN"
    assert "OVERRIDDEN 2026-12-05T10:00:00+00:00: the next wave ran anyway" in over.description
