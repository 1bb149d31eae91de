"""The pilot gate: may a campaign graduate from its pilot wave to the rest? (pure; queries over the warehouse)

The campaign guide's rule: "Pilot first: rf20vl end to end. Graduate to 100 only if all 20 complete, kill-and-resume
reproduces within noise, and AP ordering is sane." For one model with a declared pilot, four conditions:

1. **complete**: every pilot dataset has a current test score;
2. **resume**: the kill-and-resume check (`model@resume`: the model's own run of one pilot dataset, interrupted after
   half its epochs and resumed in a fresh process) scores within the replicate noise of the uninterrupted run. The
   noise is 1.96 x the model's pooled seed-to-seed standard deviation where seed replicates were trained
   (`--replicates`), else the guide's 0.005 (half a point of mAP50-95: "differences under 0.5 mAP are noise");
3. **sizes**: no adjacent-size pair with the model is inverted (the larger size scoring lower on the datasets both
   scored) or apart by more than the family rule (`max_gap`, the adjacent-size check's 0.10);
4. **selection**: no conformant run of the model on a pilot dataset has |valid - test| beyond the selection check's
   tolerance (a gap only in runs of a non-conformant recipe, the smoke recipe, is noted, not red).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_assets.platform.findings import Finding
from bench_assets.platform.warehouse import query
from bench_assets.rf100vl.report.thresholds import ADJACENT_MAX_GAP, SELECTION_TOLERANCE
from bench_assets.rf100vl.report.warehouse_checks import adjacent_size_pairs, selection_vs_test
from bench_assets.rf100vl.scoring.eval_store import SPLIT

DOCUMENTED_NOISE = 0.005  # the guide: differences under 0.5 mAP (points) on the 100-dataset mean are noise
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Condition:
    name: str  # complete | resume | sizes | selection
    passed: bool
    detail: str


def _current(warehouse: Path, model: str) -> dict[str, float | None]:
    rows = query(warehouse, "SELECT dataset, mAP50_95 FROM scores WHERE is_current AND split = ? AND model = ?",
                 [SPLIT, model])
    return {r["dataset"]: r["mAP50_95"] for r in rows}


def complete(warehouse: Path, model: str, pilot: list[str]) -> Condition:
    scored = _current(warehouse, model)
    missing = [d for d in pilot if d not in scored]
    if missing:
        more = " ..." if len(missing) > 10 else ""
        return Condition("complete", False, f"{len(pilot) - len(missing)}/{len(pilot)} pilot datasets scored; "
                                            f"missing {', '.join(missing[:10])}{more}")
    return Condition("complete", True, f"all {len(pilot)} pilot datasets scored")


def replicate_noise(warehouse: Path, model: str) -> tuple[float, str]:
    """(noise, source): 1.96 x the pooled seed standard deviation of `model` over the datasets trained with 2+
    seeds (the model and its model@seedN replicates), else the documented 0.005."""
    rows = query(warehouse, """
        SELECT dataset, var_samp(mAP50_95) AS v, count(*) AS n FROM scores
        WHERE is_current AND split = ? AND base_model = ? AND model NOT LIKE '%@resume' AND mAP50_95 IS NOT NULL
        GROUP BY dataset HAVING count(*) >= 2""", [SPLIT, model])
    if not rows:
        return DOCUMENTED_NOISE, f"documented {DOCUMENTED_NOISE} (no seed replicates of {model} yet)"
    pooled = sum(r["v"] for r in rows) / len(rows)
    return Z95 * math.sqrt(pooled), f"1.96 x the seed-to-seed SD over {len(rows)} replicated dataset(s)"


def resume(warehouse: Path, model: str, resume_model: str) -> Condition:
    check = _current(warehouse, resume_model)
    if not check:
        return Condition("resume", False, f"{resume_model} (the kill-and-resume check) has no score yet")
    dataset, value = sorted(check.items())[0]  # the check runs on one pilot dataset
    ref = _current(warehouse, model).get(dataset)
    if ref is None or value is None:
        return Condition("resume", False, f"{dataset}: no uninterrupted score of {model} to compare with")
    noise, source = replicate_noise(warehouse, model)
    diff = abs(value - ref)
    return Condition("resume", diff <= noise, f"{dataset}: killed and resumed {value:.4f} vs uninterrupted "
                                              f"{ref:.4f}, |diff| {diff:.4f} {'within' if diff <= noise else 'beyond'} "
                                              f"the noise {noise:.4f} ({source})")


def sizes(warehouse: Path, model: str, max_gap: float = ADJACENT_MAX_GAP) -> Condition:
    pairs = [p for p in adjacent_size_pairs(warehouse) if model in (p["smaller"], p["larger"])]
    bad = [p for p in pairs if p["gap"] < 0 or abs(p["gap"]) > max_gap]
    if bad:
        return Condition("sizes", False, "; ".join(
            f"{p['smaller']} {p['smaller_mAP50_95']:.4f} vs {p['larger']} {p['larger_mAP50_95']:.4f} on "
            f"{p['datasets']} shared dataset(s): " + ("inverted (the larger size scores lower)" if p["gap"] < 0
                                                     else f"gap {p['gap']:.4f} > {max_gap}") for p in bad))
    if not pairs:
        return Condition("sizes", True, f"no adjacent size of {model} scored on shared datasets yet")
    return Condition("sizes", True, f"{len(pairs)} adjacent-size pair(s) in order, within {max_gap}")


def selection(warehouse: Path, model: str, pilot: list[str], tolerance: float = SELECTION_TOLERANCE) -> Condition:
    rows = [r for r in selection_vs_test(warehouse, tolerance).rows if r["model"] == model and r["dataset"] in pilot]
    red = [r for r in rows if r["run_recipe_conformant"] is not False]
    listed = "; ".join(f"{r['dataset']} valid {r['valid_mAP50_95']:.4f} test {r['test_mAP50_95']:.4f}"
                       for r in (red or rows)[:5])
    if red:
        return Condition("selection", False,
                         f"{len(red)} conformant run(s) with |valid - test| > {tolerance}: {listed}")
    if rows:
        return Condition("selection", True, f"only non-conformant (smoke) runs beyond {tolerance}, noted: {listed}")
    return Condition("selection", True, f"every pilot run has |valid - test| <= {tolerance}")


def pilot_gate(warehouse: Path, model: str, pilot: list[str], resume_model: str, *, max_gap: float = ADJACENT_MAX_GAP,
               tolerance: float = SELECTION_TOLERANCE) -> Finding:
    """The gate of `model`'s pilot: passed only when every condition is; the rows are the conditions."""
    conditions = [complete(warehouse, model, pilot), resume(warehouse, model, resume_model),
                  sizes(warehouse, model, max_gap), selection(warehouse, model, pilot, tolerance)]
    red = [c for c in conditions if not c.passed]
    rows: list[dict[str, Any]] = [{"model": model, **asdict(c)} for c in conditions]
    if red:
        return Finding(False, f"{model}: pilot gate red: " + "; ".join(f"{c.name}: {c.detail}" for c in red), rows,
                       {"model": model, "pilot": len(pilot), "red": [c.name for c in red]})
    return Finding(True, f"{model}: pilot gate green ({len(pilot)} pilot dataset(s)): "
                         + "; ".join(f"{c.name}: {c.detail}" for c in conditions), rows,
                   {"model": model, "pilot": len(pilot), "red": []})


def pilot_gates(warehouse: Path, max_gap: float = ADJACENT_MAX_GAP, tolerance: float = SELECTION_TOLERANCE) -> Finding:
    """Every registered model with a declared pilot, gated. A red gate is an ERROR, or a WARN when the campaign
    recorded an override (`--override-gate`): the override is said, never hidden."""
    import json

    from bench_assets.rf100vl.training.runplan import resume_check_key

    models = query(warehouse, "SELECT model, pilot, gate_override FROM models WHERE len(coalesce(pilot, [])) > 0 "
                              "AND coalesce(base_model, model) = model ORDER BY model")
    if not models:
        return Finding(True, "no campaign declared a pilot", [], {"models": 0})
    findings = [(m, pilot_gate(warehouse, m["model"], list(m["pilot"]), resume_check_key(m["model"]),
                               max_gap=max_gap, tolerance=tolerance)) for m in models]
    rows = [r for _, f in findings for r in f.rows]
    red = [(m, f) for m, f in findings if not f.passed]
    if not red:
        return Finding(True, "; ".join(f.description for _, f in findings), rows, {"models": len(models)})
    overridden = [(m, f) for m, f in red if m["gate_override"]]
    notes = [f.description + (f" (OVERRIDDEN {json.loads(m['gate_override'])['at']}: the next wave ran anyway)"
                              if m["gate_override"] else "") for m, f in red]
    return Finding(False, "; ".join(notes), rows, {"models": len(models), "red": len(red),
                                                   "overridden": len(overridden)},
                   severity="WARN" if len(overridden) == len(red) else "ERROR")
