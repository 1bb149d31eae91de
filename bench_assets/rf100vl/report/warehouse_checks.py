"""The checks that make a campaign's silent failures loud, as queries over the warehouse (pure; no Dagster).

Each function opens the warehouse read-only (the loader replaces the file whole, so a reader never meets
its lock), runs one query and returns a `Finding`: pass/fail, a one-line description with the numbers,
and the offending rows (capped) for the check's metadata. The thresholds are arguments; the Dagster
shell in `check_assets.py` takes them from run config.

The lessons behind them (REFERENCE.md section 2): a BatchNorm bug scored valid 0.566 but test 0.162 and
a whole campaign published 0.36 instead of 0.49; adjacent sizes of one family land ~3 points apart, so
16 points is a bug; a summary function returned a -1 headline; uploads skipped files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench_assets.platform.findings import Finding
from bench_assets.platform.fsutil import sha256_file
from bench_assets.platform.warehouse import query
from bench_assets.rf100vl.report.thresholds import ADJACENT_MAX_GAP, SELECTION_TOLERANCE
from bench_assets.rf100vl.scoring.eval_store import CONF, MAX_DET, NMS_IOU, SPLIT

PARITY_TOL = 1e-6
MEAN_TOL = 1e-9

# The current test score of each model x dataset with its run (the rows every check judges).
_CURRENT = """
    SELECT s.*, r.valid_mAP50_95, r.recipe_file, r.recipe_conformant AS run_recipe_conformant,
           r.best_checkpoint, r.best_checkpoint_sha256, r.dataset_version AS run_dataset_version,
           r.family, r.size
    FROM scores s LEFT JOIN runs r USING (run_signature)
    WHERE s.is_current
"""


def _fmt(rows: list[dict[str, Any]], keys: tuple[str, ...], n: int = 5) -> str:
    return "; ".join(", ".join(f"{k}={r[k]:.4f}" if isinstance(r[k], float) else f"{k}={r[k]}" for k in keys)
                     for r in rows[:n]) + (" ..." if len(rows) > n else "")


def selection_vs_test(warehouse: Path, tolerance: float = SELECTION_TOLERANCE) -> Finding:
    """Valid (selection) and test mAP50-95 of a healthy run track within noise; a gap beyond
    `tolerance` means evaluation differs between the two (the BatchNorm-eps bug: 0.566 vs 0.162).
    Gaps only in runs of a non-conformant recipe (the smoke recipe: 20 epochs, a few-image valid and test split)
    are a WARN: there an unconverged model's gap is noise as often as a bug (mini-large on a Zen 3 host: valid
    0.159, test 0.050). One conformant run beyond the tolerance makes it an ERROR."""
    rows = query(warehouse, f"""
        SELECT model, dataset, valid_mAP50_95, mAP50_95 AS test_mAP50_95,
               abs(valid_mAP50_95 - mAP50_95) AS gap, run_recipe_conformant
        FROM ({_CURRENT}) WHERE valid_mAP50_95 IS NOT NULL AND abs(valid_mAP50_95 - mAP50_95) > ?
        ORDER BY gap DESC, model, dataset""", [tolerance])
    judged = query(warehouse, f"SELECT count(*) AS n FROM ({_CURRENT}) WHERE valid_mAP50_95 IS NOT NULL")[0]["n"]
    if rows:
        smoke_only = all(r["run_recipe_conformant"] is False for r in rows)
        return Finding(False, f"{len(rows)} of {judged} runs have |valid - test| mAP50-95 > {tolerance}"
                       + (" (all from non-conformant recipes: a warning)" if smoke_only else "") + ": "
                       + _fmt(rows, ("model", "dataset", "valid_mAP50_95", "test_mAP50_95")), rows,
                       {"judged": judged, "tolerance": tolerance}, severity="WARN" if smoke_only else "ERROR")
    return Finding(True, f"all {judged} runs have valid and test mAP50-95 within {tolerance}", [],
                   {"judged": judged, "tolerance": tolerance})


def adjacent_size_pairs(warehouse: Path) -> list[dict[str, Any]]:
    """Every pair of neighbouring registered sizes of one family (replicates aside) with their mean mAP50-95 on the
    datasets both scored and the gap (larger - smaller; negative: the larger size scores lower, an inversion)."""
    return query(warehouse, f"""
        WITH m AS (
            SELECT model, family, size_rank,
                   lead(model) OVER (PARTITION BY family ORDER BY size_rank) AS next_model
            FROM models WHERE size_rank IS NOT NULL AND coalesce(base_model, model) = model),  -- not replicates
        cur AS (SELECT model, dataset, mAP50_95 FROM ({_CURRENT}))
        SELECT m.family, m.model AS smaller, m.next_model AS larger, count(*) AS datasets,
               avg(a.mAP50_95) AS smaller_mAP50_95, avg(b.mAP50_95) AS larger_mAP50_95,
               avg(b.mAP50_95) - avg(a.mAP50_95) AS gap
        FROM m JOIN cur a ON a.model = m.model JOIN cur b ON b.model = m.next_model AND b.dataset = a.dataset
        WHERE m.next_model IS NOT NULL
        GROUP BY ALL ORDER BY abs(gap) DESC, family, smaller""")


def adjacent_size_gap(warehouse: Path, max_gap: float = ADJACENT_MAX_GAP) -> Finding:
    """Neighbouring registered sizes of one family (by the recipe's size order), compared on the datasets
    both scored: a mean gap beyond `max_gap` is a bug report, not a result (healthy: ~3 points)."""
    pairs = adjacent_size_pairs(warehouse)
    bad = [p for p in pairs if abs(p["gap"]) > max_gap]
    facts = {"pairs": len(pairs), "max_gap": max_gap}
    if bad:
        return Finding(False, f"{len(bad)} adjacent-size pair(s) differ by more than {max_gap} mAP50-95 on shared "
                       "datasets: " + _fmt(bad, ("smaller", "larger", "smaller_mAP50_95", "larger_mAP50_95")),
                       bad, facts)
    if not pairs:
        return Finding(True, "no family has two adjacent sizes scored on shared datasets yet", [], facts)
    return Finding(True, f"{len(pairs)} adjacent-size pair(s), largest gap {max(abs(p['gap']) for p in pairs):.4f} "
                   f"<= {max_gap}", pairs, facts)


def coverage(warehouse: Path, failed: set[tuple[str, str]] | None = None,
             in_flight: set[tuple[str, str]] | None = None) -> Finding:
    """Each registered model has a current test score for every dataset of its campaign's suite.
    `failed` holds (model, dataset) partitions whose newest run failed and `in_flight` those running or
    queued (both from the Dagster instance). Gaps that are all in flight are a WARN (the campaign is not
    finished); any failed or missing partition with nothing to fill it is an ERROR."""
    failed, in_flight = failed or set(), in_flight or set()
    rows = query(warehouse, f"""
        SELECT m.model, m.suite, m.expected_datasets, s.dataset,
               c.dataset IS NOT NULL AS scored
        FROM models m JOIN suites s ON s.suite = m.suite
        LEFT JOIN (SELECT DISTINCT model, dataset FROM ({_CURRENT}) WHERE split = '{SPLIT}') c
               ON c.model = m.model AND c.dataset = s.dataset
        ORDER BY m.model, s.dataset""")
    per_model: dict[str, dict[str, Any]] = {}
    for r in rows:
        m = per_model.setdefault(r["model"], {"model": r["model"], "suite": r["suite"], "expected": 0, "scored": 0,
                                              "missing": [], "failed": [], "in_flight": []})
        m["expected"] += 1
        if r["scored"]:
            m["scored"] += 1
        elif (r["model"], r["dataset"]) in failed:
            m["failed"].append(r["dataset"])
        elif (r["model"], r["dataset"]) in in_flight:
            m["in_flight"].append(r["dataset"])
        else:
            m["missing"].append(r["dataset"])
    for model in query(warehouse, "SELECT model, suite FROM models ORDER BY model"):
        per_model.setdefault(model["model"], {"model": model["model"], "suite": model["suite"], "expected": 0,
                                              "scored": 0, "missing": [], "failed": [], "in_flight": []})
    summary = ", ".join(f"{m['model']} {m['scored']}/{m['expected']}" for m in per_model.values())
    short = [m for m in per_model.values() if m["scored"] < m["expected"] or m["expected"] == 0]
    if not per_model:
        return Finding(True, "no model registered yet", [], {})
    if short:
        detail = "; ".join(f"{m['model']} ({m['suite']}): {m['scored']}/{m['expected']}"
                           + (f", failed {', '.join(m['failed'][:10])}" if m["failed"] else "")
                           + (f", missing {', '.join(m['missing'][:10])}" if m["missing"] else "")
                           + (f", running or queued {len(m['in_flight'])}" if m["in_flight"] else "")
                           + (" — the suite has no datasets" if m["expected"] == 0 else "") for m in short)
        unfinished_only = all(not m["failed"] and not m["missing"] and m["expected"] for m in short)
        return Finding(False, f"{'campaign still running' if unfinished_only else 'incomplete coverage'}: {detail}",
                       short, {"coverage": summary}, severity="WARN" if unfinished_only else "ERROR")
    return Finding(True, f"every model scored every dataset of its suite: {summary}", [], {"coverage": summary})


def protocol_conformance(warehouse: Path) -> Finding:
    """Test split, conf 0.001, NMS IoU 0.65, max_det 500; one recipe hash per model and it is the registered
    one; a conformant recipe unless the model was registered with a declared non-conformant one; dataset
    versions of score and run equal the dataset's current (locked) version."""
    problems = query(warehouse, f"""
        WITH cur AS ({_CURRENT}),
        hashes AS (SELECT model, count(DISTINCT recipe_sha256) AS n FROM cur GROUP BY model)
        SELECT c.model, c.dataset, list_value(
            CASE WHEN c.split <> '{SPLIT}' THEN 'split ' || c.split || ' (must be {SPLIT})' END,
            CASE WHEN abs(c.conf - {CONF}) > 1e-12 THEN 'conf ' || c.conf || ' (must be {CONF})' END,
            CASE WHEN abs(c.nms_iou - {NMS_IOU}) > 1e-9 THEN 'NMS IoU ' || c.nms_iou || ' (must be {NMS_IOU})' END,
            CASE WHEN c.max_det <> {MAX_DET} THEN 'max_det ' || c.max_det || ' (must be {MAX_DET})' END,
            CASE WHEN h.n > 1 THEN h.n || ' different recipe hashes across the model''s datasets' END,
            CASE WHEN m.model IS NULL THEN 'model not registered (no BENCH_HOME/models entry)' END,
            CASE WHEN m.recipe_sha256 IS NOT NULL AND c.recipe_sha256 <> m.recipe_sha256
                 THEN 'recipe ' || left(c.recipe_sha256, 12) || ' is not the registered ' || left(m.recipe_sha256, 12)
                 END,
            CASE WHEN m.recipe_conformant AND NOT coalesce(c.run_recipe_conformant, false)
                 THEN 'run used a non-conformant recipe' END,
            CASE WHEN d.version IS NULL THEN 'dataset has no current version lock' END,
            CASE WHEN d.version IS NOT NULL AND c.dataset_version <> d.version
                 THEN 'scored dataset version ' || c.dataset_version || ', the lock says ' || d.version END,
            CASE WHEN c.run_dataset_version IS NOT NULL AND c.run_dataset_version <> c.dataset_version
                 THEN 'trained on ' || c.run_dataset_version || ' but scored on ' || c.dataset_version END
        ) AS reasons
        FROM cur c LEFT JOIN hashes h USING (model) LEFT JOIN models m USING (model)
        LEFT JOIN datasets d ON d.dataset = c.dataset AND d.is_current
        ORDER BY c.model, c.dataset""")
    bad = [{"model": p["model"], "dataset": p["dataset"], "problems": [r for r in p["reasons"] if r]}
           for p in problems if any(p["reasons"])]
    declared = query(warehouse, "SELECT model, recipe, recipe_nonconformities FROM models "
                                "WHERE NOT recipe_conformant ORDER BY model")
    facts = {"scores_judged": len(problems),
             "declared_non_conformant": {d["model"]: d["recipe_nonconformities"] for d in declared}}
    if bad:
        return Finding(False, f"{len(bad)} of {len(problems)} scores break the protocol: "
                       + "; ".join(f"{b['model']}/{b['dataset']}: {', '.join(b['problems'])}" for b in bad[:5])
                       + (" ..." if len(bad) > 5 else ""), bad, facts)
    note = (f"; declared non-conformant (registered so, never a valid submission): "
            f"{', '.join(d['model'] + ' [' + d['recipe'] + ']' for d in declared)}" if declared else "")
    return Finding(True, f"all {len(problems)} scores follow the protocol{note}", [], facts)


def scoring_integrity(warehouse: Path) -> Finding:
    """No undefined or out-of-range headline, no -1 stored in any bucket (it would enter a mean), the fast
    and reference backends agree, and each of our submissions' headline is the mean of its datasets'."""
    metric_cols = ("mAP50_95", "mAP50", "mAP75", "mAP_small", "mAP_medium", "mAP_large", "AR1", "AR10", "AR100",
                   "AR_small", "AR_medium", "AR_large", "AR_max_det")
    out_of_range = " OR ".join(f'("{c}" < 0 OR "{c}" > 1)' for c in metric_cols)
    bad = query(warehouse, f"""
        SELECT model, dataset, mAP50_95, parity_max_abs_deviation, parity_differing,
               list_value(
                 CASE WHEN mAP50_95 IS NULL THEN 'headline mAP50-95 undefined' END,
                 CASE WHEN {out_of_range} THEN 'a metric outside [0, 1] (a -1 that would enter a mean)' END,
                 CASE WHEN len(parity_differing) > 0 OR parity_max_abs_deviation > {PARITY_TOL}
                      THEN 'fast and reference backends differ on ' || array_to_string(parity_differing, ',')
                           || ' (max ' || parity_max_abs_deviation || ')' END) AS reasons
        FROM ({_CURRENT}) ORDER BY model, dataset""")
    rows = [{"model": b["model"], "dataset": b["dataset"], "problems": [r for r in b["reasons"] if r]}
            for b in bad if any(b["reasons"])]
    means = query(warehouse, f"""
        SELECT s.model, s.mAP50_95 AS stated, avg(d.mAP50_95) AS recomputed, count(d.dataset) AS datasets
        FROM submissions s LEFT JOIN submission_datasets d USING (model, origin)
        GROUP BY ALL HAVING stated IS NULL OR recomputed IS NULL OR abs(stated - recomputed) > {MEAN_TOL}""")
    drift = query(warehouse, f"""
        SELECT d.model, d.dataset, d.mAP50_95 AS submitted, c.mAP50_95 AS current
        FROM submission_datasets d JOIN ({_CURRENT}) c USING (model, dataset)
        WHERE d.origin = 'ours' AND abs(d.mAP50_95 - c.mAP50_95) > {MEAN_TOL}""")
    rows += [{"model": m["model"], "dataset": None,
              "problems": [f"submission headline {m['stated']} is not the mean {m['recomputed']} of its "
                           f"{m['datasets']} datasets"]} for m in means]
    rows += [{"model": d["model"], "dataset": d["dataset"],
              "problems": [f"submission says {d['submitted']}, the current score is {d['current']} "
                           "(stale submission: rebuild rf100vl/submission)"]} for d in drift]
    if rows:
        return Finding(False, f"{len(rows)} scoring problem(s): " + "; ".join(
            f"{r['model']}/{r['dataset'] or '(headline)'}: {', '.join(r['problems'])}" for r in rows[:5])
            + (" ..." if len(rows) > 5 else ""), rows, {"scores_judged": len(bad)})
    return Finding(True, f"all {len(bad)} current scores have a defined headline in [0, 1] and backend parity; "
                   "submission headlines are the means of their datasets", [], {"scores_judged": len(bad)})


class HashCache:
    """sha256 of files keyed by (path, size, mtime_ns), kept in a JSON file so checkpoints are hashed once."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        if path and path.exists():
            try:
                self.entries = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                self.entries = {}

    def sha256(self, file: Path) -> str:
        st = file.stat()
        key = str(file)
        hit = self.entries.get(key)
        if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return hit[2]
        digest = sha256_file(file)
        self.entries[key] = [st.st_size, st.st_mtime_ns, digest]
        return digest

    def save(self) -> None:
        if self.path:
            from bench_assets.platform.fsutil import atomic_write_json

            atomic_write_json(self.path, self.entries, indent=None)


def provenance(warehouse: Path, cache_file: Path | None = None) -> Finding:
    """Every current score's recipe file, checkpoint and predictions file exists and hashes to what the
    score recorded (a moved, edited or re-trained artifact breaks the chain)."""
    rows = query(warehouse, f"""
        SELECT model, dataset, recipe_file, recipe_sha256, best_checkpoint, weights_sha256,
               predictions_path, predictions_sha256
        FROM ({_CURRENT}) ORDER BY model, dataset""")
    cache = HashCache(cache_file)
    bad = []
    for r in rows:
        problems = []
        for what, path, expected in (("recipe", r["recipe_file"], r["recipe_sha256"]),
                                     ("checkpoint", r["best_checkpoint"], r["weights_sha256"]),
                                     ("predictions", r["predictions_path"], r["predictions_sha256"])):
            if not path:
                problems.append(f"{what}: no file recorded")
            elif not os.path.isfile(path):
                problems.append(f"{what} {path} is missing")
            elif cache.sha256(Path(path)) != expected:
                problems.append(f"{what} {path} has sha256 {cache.sha256(Path(path))[:12]}, the score recorded "
                                f"{str(expected)[:12]}")
        if problems:
            bad.append({"model": r["model"], "dataset": r["dataset"], "problems": problems})
    cache.save()
    if bad:
        return Finding(False, f"{len(bad)} of {len(rows)} scores lost their provenance: " + "; ".join(
            f"{b['model']}/{b['dataset']}: {', '.join(b['problems'])}" for b in bad[:5])
            + (" ..." if len(bad) > 5 else ""), bad, {"scores_judged": len(rows)})
    return Finding(True, f"all {len(rows)} scores: recipe, checkpoint and predictions present with matching hashes",
                   [], {"scores_judged": len(rows)})
