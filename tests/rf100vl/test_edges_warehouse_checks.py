"""Edge cases of bench_assets/rf100vl/report/warehouse_checks.py that kill mutants the other tests let survive
(issue 15, docs/testing.md "Mutation testing").

`coverage`, `provenance` and `HashCache` were reached only by tests/rf100vl/test_warehouse_checks.py (a synthetic
campaign built through dbt: an `integration` file, outside the mutation selection). Here each runs on a DuckDB file
holding just the columns its query reads, so every branch's whole `Finding` is compared; file hashes are checked
against hashlib."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench_assets.platform.duckdb_files import attached
from bench_assets.platform.findings import Finding
from bench_assets.rf100vl.report import warehouse_checks as cc

_SCORES = ("CREATE TABLE scores (model VARCHAR, dataset VARCHAR, split VARCHAR, is_current BOOLEAN, "
           "run_signature VARCHAR, recipe_sha256 VARCHAR, weights_sha256 VARCHAR, predictions_path VARCHAR, "
           "predictions_sha256 VARCHAR)")
_RUNS = ("CREATE TABLE runs (run_signature VARCHAR, valid_mAP50_95 DOUBLE, recipe_file VARCHAR, "
         "recipe_conformant BOOLEAN, best_checkpoint VARCHAR, best_checkpoint_sha256 VARCHAR, "
         "dataset_version VARCHAR, family VARCHAR, size VARCHAR)")


def _warehouse(path: Path, models: list[tuple[str, str, int]], suites: list[tuple[str, str]],
               scores: list[tuple], runs: list[tuple] = ()) -> Path:
    with attached(path, read_only=False) as con:
        con.execute("CREATE TABLE models (model VARCHAR, suite VARCHAR, expected_datasets INTEGER)")
        con.execute("CREATE TABLE suites (suite VARCHAR, dataset VARCHAR)")
        con.execute(_SCORES)
        con.execute(_RUNS)
        for m in models:
            con.execute("INSERT INTO models VALUES (?, ?, ?)", list(m))
        for s in suites:
            con.execute("INSERT INTO suites VALUES (?, ?)", list(s))
        for s in scores:
            con.execute("INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", list(s))
        for r in runs:
            con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", list(r))
    return path


def _score(model: str, dataset: str, split: str = "test", current: bool = True, sig: str = "") -> tuple:
    return (model, dataset, split, current, sig or f"{model}-{dataset}", None, None, None, None)


def test_coverage_names_failed_missing_in_flight_and_empty_suites(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path / "w.duckdb",
                    [("m1", "s1", 4), ("m2", "s2", 1), ("m3", "empty", 0)],
                    [("s1", "d1"), ("s1", "d2"), ("s1", "d3"), ("s1", "d4"), ("s2", "d1")],
                    [_score("m1", "d1"), _score("m1", "d2", split="valid"), _score("m1", "d3", current=False),
                     _score("m2", "d1")])
    f = cc.coverage(wh, failed={("m1", "d2"), ("m2", "d1")}, in_flight={("m1", "d3")})
    m1 = {"model": "m1", "suite": "s1", "expected": 4, "scored": 1, "missing": ["d4"], "failed": ["d2"],
          "in_flight": ["d3"]}
    m3 = {"model": "m3", "suite": "empty", "expected": 0, "scored": 0, "missing": [], "failed": [], "in_flight": []}
    assert f == Finding(False, "incomplete coverage: m1 (s1): 1/4, failed d2, missing d4, running or queued 1; "
                               "m3 (empty): 0/0 — the suite has no datasets",
                        [m1, m3], {"coverage": "m1 1/4, m2 1/1, m3 0/0"}, severity="ERROR")


def test_coverage_only_in_flight_gaps_are_a_warning(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path / "w.duckdb", [("m1", "s1", 3)], [("s1", "d1"), ("s1", "d2"), ("s1", "d3")],
                    [_score("m1", "d1")])
    f = cc.coverage(wh, in_flight={("m1", "d2"), ("m1", "d3")})
    assert f == Finding(False, "campaign still running: m1 (s1): 1/3, running or queued 2",
                        [{"model": "m1", "suite": "s1", "expected": 3, "scored": 1, "missing": [], "failed": [],
                          "in_flight": ["d2", "d3"]}], {"coverage": "m1 1/3"}, severity="WARN")
    # the same gaps with nothing in flight: missing, an error
    missing = cc.coverage(wh)
    assert missing.severity == "ERROR" and missing.description == "incomplete coverage: m1 (s1): 1/3, missing d2, d3"
    # one failed among the in-flight ones: an error, the failed one named first
    mixed = cc.coverage(wh, failed={("m1", "d3")}, in_flight={("m1", "d2"), ("m1", "d3")})
    assert (mixed.severity, mixed.description) == (
        "ERROR", "incomplete coverage: m1 (s1): 1/3, failed d3, running or queued 1")


def test_coverage_lists_at_most_ten_datasets_per_kind(tmp_path: Path) -> None:
    ds = [f"d{i:02d}" for i in range(12)]
    wh = _warehouse(tmp_path / "w.duckdb", [("m", "s", 12)], [("s", d) for d in ds], [])
    f = cc.coverage(wh, failed={("m", d) for d in ds[6:]})
    assert f.description == f"incomplete coverage: m (s): 0/12, failed {', '.join(ds[6:])}, missing " \
                            f"{', '.join(ds[:6])}"
    f = cc.coverage(wh)
    assert f.description == f"incomplete coverage: m (s): 0/12, missing {', '.join(ds[:10])}"
    assert f.rows[0]["missing"] == ds
    f = cc.coverage(wh, failed={("m", d) for d in ds})
    assert f.description == f"incomplete coverage: m (s): 0/12, failed {', '.join(ds[:10])}"


def test_coverage_passes_when_every_model_scored_its_suite_and_without_models(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path / "w.duckdb", [("a", "s", 2), ("b", "t", 1)], [("s", "x"), ("s", "y"), ("t", "x")],
                    [_score("a", "x"), _score("a", "y"), _score("b", "x")])
    assert cc.coverage(wh, failed={("a", "x")}, in_flight={("b", "x")}) == Finding(
        True, "every model scored every dataset of its suite: a 2/2, b 1/1", [], {"coverage": "a 2/2, b 1/1"})
    empty = _warehouse(tmp_path / "e.duckdb", [], [("s", "x")], [])
    assert cc.coverage(empty) == Finding(True, "no model registered yet", [], {})


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _artifacts(tmp_path: Path) -> dict[str, Path]:
    files = {}
    for name, data in (("recipe.yaml", b"lr: 0.01\n"), ("best.pt", b"weights"), ("preds.json", b"[]")):
        files[name] = tmp_path / name
        files[name].write_bytes(data)
    return files


def _prov_row(model: str, dataset: str, recipe: str | None, recipe_sha: str | None, ckpt: str | None,
              ckpt_sha: str | None, preds: str | None, preds_sha: str | None) -> tuple[tuple, tuple]:
    sig = f"{model}-{dataset}"
    score = (model, dataset, "test", True, sig, recipe_sha, ckpt_sha, preds, preds_sha)
    run = (sig, 0.5, recipe, True, ckpt, None, "v1", "fam", "s")
    return score, run


def test_provenance_names_each_broken_artifact(tmp_path: Path) -> None:
    a = _artifacts(tmp_path)
    rec, ckpt, preds = (str(a["recipe.yaml"]), str(a["best.pt"]), str(a["preds.json"]))
    good = _prov_row("m", "d1", rec, _sha(b"lr: 0.01\n"), ckpt, _sha(b"weights"), preds, _sha(b"[]"))
    broken = _prov_row("m", "d2", None, "x", str(tmp_path / "gone.pt"), "y", preds, "0123456789abcdef")
    rows = [good, broken]
    wh = _warehouse(tmp_path / "w.duckdb", [], [], [r[0] for r in rows], [r[1] for r in rows])
    problems = ["recipe: no file recorded", f"checkpoint {tmp_path / 'gone.pt'} is missing",
                f"predictions {preds} has sha256 {_sha(b'[]')[:12]}, the score recorded 0123456789ab"]
    assert cc.provenance(wh) == Finding(
        False, f"1 of 2 scores lost their provenance: m/d2: {', '.join(problems)}",
        [{"model": "m", "dataset": "d2", "problems": problems}], {"scores_judged": 2})
    only_good = _warehouse(tmp_path / "g.duckdb", [], [], [good[0]], [good[1]])
    assert cc.provenance(only_good) == Finding(
        True, "all 1 scores: recipe, checkpoint and predictions present with matching hashes", [],
        {"scores_judged": 1})


def test_provenance_describes_five_broken_scores_and_counts_all(tmp_path: Path) -> None:
    rows = [_prov_row("m", f"d{i}", "", None, None, None, None, None) for i in range(6)]
    wh = _warehouse(tmp_path / "w.duckdb", [], [], [r[0] for r in rows], [r[1] for r in rows])
    f = cc.provenance(wh)
    each = "recipe: no file recorded, checkpoint: no file recorded, predictions: no file recorded"
    assert f.description == "6 of 6 scores lost their provenance: " + "; ".join(
        f"m/d{i}: {each}" for i in range(5)) + " ..."
    assert len(f.rows) == 6 and f.facts == {"scores_judged": 6} and not f.passed
    five = _warehouse(tmp_path / "f.duckdb", [], [], [r[0] for r in rows[:5]], [r[1] for r in rows[:5]])
    assert not cc.provenance(five).description.endswith("...")


def test_provenance_keeps_hashes_in_its_cache_keyed_by_size_and_mtime(tmp_path: Path) -> None:
    a = _artifacts(tmp_path)
    rec, ckpt, preds = (str(a["recipe.yaml"]), str(a["best.pt"]), str(a["preds.json"]))
    row = _prov_row("m", "d", rec, _sha(b"lr: 0.01\n"), ckpt, _sha(b"weights"), preds, "f" * 64)
    wh = _warehouse(tmp_path / "w.duckdb", [], [], [row[0]], [row[1]])
    cache = tmp_path / "cache.json"
    assert not cc.provenance(wh, cache).passed
    entries = json.loads(cache.read_text())
    assert set(entries) == {rec, ckpt, preds}
    for path, data in ((rec, b"lr: 0.01\n"), (ckpt, b"weights"), (preds, b"[]")):
        st = os.stat(path)
        assert entries[path] == [st.st_size, st.st_mtime_ns, _sha(data)]
    # a cached digest is used while size and mtime match: the cache claims the recorded hash, the check passes
    st = os.stat(preds)
    entries[preds] = [st.st_size, st.st_mtime_ns, "f" * 64]
    cache.write_text(json.dumps(entries))
    assert cc.provenance(wh, cache).passed
    # a changed mtime invalidates the entry: the file is hashed again
    os.utime(preds, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert not cc.provenance(wh, cache).passed
    assert json.loads(cache.read_text())[preds][2] == _sha(b"[]")
    # a changed size with the same mtime too
    entries = json.loads(cache.read_text())
    entries[preds] = [st.st_size + 1, st.st_mtime_ns + 1, "f" * 64]
    cache.write_text(json.dumps(entries))
    assert not cc.provenance(wh, cache).passed


def test_hash_cache_survives_a_corrupt_file_and_saves_nothing_without_a_path(tmp_path: Path) -> None:
    f = tmp_path / "x.bin"
    f.write_bytes(b"abc")
    bad = tmp_path / "cache.json"
    bad.write_text("{")
    c = cc.HashCache(bad)
    assert c.entries == {} and c.path == bad
    assert c.sha256(f) == _sha(b"abc")
    c.save()
    assert json.loads(bad.read_text()) == {str(f): [3, f.stat().st_mtime_ns, _sha(b"abc")]}
    # written compact, one line (the cache of every checkpoint of a campaign)
    assert bad.read_text() == json.dumps({str(f): [3, f.stat().st_mtime_ns, _sha(b"abc")]}) + "\n"
    assert cc.HashCache(bad).entries == json.loads(bad.read_text())
    none = cc.HashCache(None)
    assert none.entries == {} and none.sha256(f) == _sha(b"abc")
    none.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.json", "x.bin"]
    assert cc.HashCache(tmp_path / "absent.json").entries == {}


def test_fmt_writes_floats_to_four_places_and_at_most_five_rows() -> None:
    row = {"model": "m", "n": 3, "ap": 0.123456}
    one = "model=m, n=3, ap=0.1235"
    assert cc._fmt([row], ("model", "n", "ap")) == one
    assert cc._fmt([row] * 5, ("model", "n", "ap")) == "; ".join([one] * 5)
    assert cc._fmt([row] * 6, ("model", "n", "ap")) == "; ".join([one] * 5) + " ..."
    assert cc._fmt([row] * 3, ("ap",), n=2) == "ap=0.1235; ap=0.1235 ..."
    assert cc._fmt([], ("model",)) == ""


def test_selection_vs_test_names_the_widest_gaps_first_and_counts_the_judged_runs(tmp_path: Path) -> None:
    scores = [_score("m", "d1"), _score("m", "d2"), _score("m", "d3"), _score("n", "d1"),
              _score("n", "d2", current=False)]
    runs = [(f"{m}-{d}", valid, None, True, None, None, "v", "f", "s")
            for m, d, valid in (("m", "d1", 0.5), ("m", "d2", 0.6), ("m", "d3", None), ("n", "d1", 0.875),
                                ("n", "d2", 0.9))]
    wh = _warehouse(tmp_path / "w.duckdb", [], [], scores, runs)
    with attached(wh, read_only=False) as con:
        con.execute("ALTER TABLE scores ADD COLUMN mAP50_95 DOUBLE")
        for (m, d), test in {("m", "d1"): 0.25, ("m", "d2"): 0.5625, ("m", "d3"): 0.4, ("n", "d1"): 0.5,
                             ("n", "d2"): 0.0}.items():
            con.execute("UPDATE scores SET mAP50_95 = ? WHERE model = ? AND dataset = ?", [test, m, d])
    f = cc.selection_vs_test(wh)
    assert f.passed is False and f.facts == {"judged": 3, "tolerance": 0.1}
    assert f.description == ("2 of 3 runs have |valid - test| mAP50-95 > 0.1: model=n, dataset=d1, "
                             "valid_mAP50_95=0.8750, test_mAP50_95=0.5000; model=m, dataset=d1, "
                             "valid_mAP50_95=0.5000, test_mAP50_95=0.2500")
    assert f.rows == [{"model": "n", "dataset": "d1", "valid_mAP50_95": 0.875, "test_mAP50_95": 0.5, "gap": 0.375,
                       "run_recipe_conformant": True},
                      {"model": "m", "dataset": "d1", "valid_mAP50_95": 0.5, "test_mAP50_95": 0.25, "gap": 0.25,
                       "run_recipe_conformant": True}]
    assert f.severity == "ERROR"
    assert cc.selection_vs_test(wh, tolerance=0.375) == Finding(
        True, "all 3 runs have valid and test mAP50-95 within 0.375", [], {"judged": 3, "tolerance": 0.375})


@pytest.mark.parametrize(("conformant", "severity"), [
    ((False, False), "WARN"),  # every gap from a smoke (non-conformant) run: noise-prone, shown as a warning
    ((False, True), "ERROR"),  # one conformant run beyond the tolerance is enough for an error
    ((False, None), "ERROR"),  # a run whose conformance is unknown counts as conformant
])
def test_selection_vs_test_warns_only_when_every_gap_is_from_a_non_conformant_recipe(
        tmp_path: Path, conformant: tuple[bool | None, bool | None], severity: str) -> None:
    scores = [_score("m", "d1"), _score("m", "d2")]
    runs = [(f"m-{d}", 0.5, None, c, None, None, "v", "f", "s") for d, c in zip(("d1", "d2"), conformant, strict=True)]
    wh = _warehouse(tmp_path / "w.duckdb", [], [], scores, runs)
    with attached(wh, read_only=False) as con:
        con.execute("ALTER TABLE scores ADD COLUMN mAP50_95 DOUBLE")
        con.execute("UPDATE scores SET mAP50_95 = 0.25")
    f = cc.selection_vs_test(wh)
    assert f.passed is False and f.severity == severity and len(f.rows) == 2
    smoke = " (all from non-conformant recipes: a warning)" if severity == "WARN" else ""
    assert f.description.startswith(f"2 of 2 runs have |valid - test| mAP50-95 > 0.1{smoke}: model=m, dataset=d1")


def _size_warehouse(path: Path, models: list[tuple], scores: dict[tuple[str, str], float]) -> Path:
    with attached(path, read_only=False) as con:
        con.execute("CREATE TABLE models (model VARCHAR, family VARCHAR, size_rank INTEGER, base_model VARCHAR)")
        con.execute(_SCORES)
        con.execute("ALTER TABLE scores ADD COLUMN mAP50_95 DOUBLE")
        con.execute(_RUNS)
        for m in models:
            con.execute("INSERT INTO models VALUES (?, ?, ?, ?)", [*m[:3], m[3] if len(m) > 3 else m[0]])
        for (m, d), ap in scores.items():
            con.execute("INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [*_score(m, d), ap])
    return path


def test_adjacent_size_gap_compares_neighbouring_sizes_on_shared_datasets(tmp_path: Path) -> None:
    # m@seed1 is m trained again with seed 1 (a replicate): never a size of its own between m and l.
    models = [("s", "A", 1), ("m", "A", 2), ("m@seed1", "A", 2, "m"), ("l", "A", 3), ("u", "A", None), ("x", "B", 1)]
    aps = {("s", "d1"): 0.5, ("s", "d2"): 0.25, ("m", "d1"): 0.625, ("m", "d2"): 0.375, ("l", "d1"): 0.6875,
           ("u", "d1"): 0.0, ("x", "d1"): 0.0, ("m@seed1", "d1"): 0.1}
    wh = _size_warehouse(tmp_path / "w.duckdb", models, aps)
    pairs = [{"family": "A", "smaller": "s", "larger": "m", "datasets": 2, "smaller_mAP50_95": 0.375,
              "larger_mAP50_95": 0.5, "gap": 0.125},
             {"family": "A", "smaller": "m", "larger": "l", "datasets": 1, "smaller_mAP50_95": 0.625,
              "larger_mAP50_95": 0.6875, "gap": 0.0625}]
    assert cc.adjacent_size_gap(wh) == Finding(
        False, "1 adjacent-size pair(s) differ by more than 0.1 mAP50-95 on shared datasets: smaller=s, larger=m, "
               "smaller_mAP50_95=0.3750, larger_mAP50_95=0.5000", pairs[:1], {"pairs": 2, "max_gap": 0.1})
    assert cc.adjacent_size_gap(wh, max_gap=0.125) == Finding(
        True, "2 adjacent-size pair(s), largest gap 0.1250 <= 0.125", pairs, {"pairs": 2, "max_gap": 0.125})
    lone = _size_warehouse(tmp_path / "l.duckdb", models, {("s", "d1"): 0.5, ("m", "d2"): 0.5})
    assert cc.adjacent_size_gap(lone) == Finding(
        True, "no family has two adjacent sizes scored on shared datasets yet", [], {"pairs": 0, "max_gap": 0.1})


def _protocol_tables(con: Any) -> None:
    """The columns protocol_conformance reads: models, datasets, scores and runs."""
    con.execute("CREATE TABLE models (model VARCHAR, recipe VARCHAR, recipe_sha256 VARCHAR, recipe_conformant BOOLEAN, "
                "recipe_nonconformities VARCHAR)")
    con.execute("CREATE TABLE datasets (dataset VARCHAR, version VARCHAR, is_current BOOLEAN)")
    con.execute("CREATE TABLE scores (model VARCHAR, dataset VARCHAR, split VARCHAR, is_current BOOLEAN, "
                "run_signature VARCHAR, conf DOUBLE, nms_iou DOUBLE, max_det INTEGER, recipe_sha256 VARCHAR, "
                "dataset_version VARCHAR)")
    con.execute(_RUNS)


def test_protocol_conformance_describes_each_break_and_lists_declared_non_conformant_models(tmp_path: Path) -> None:
    with attached(tmp_path / "w.duckdb", read_only=False) as con:
        _protocol_tables(con)
        con.execute("INSERT INTO models VALUES ('good', 'a.yaml', 'r1', true, NULL), "
                    "('dec', 'b.yaml', 'r2', false, 'lr')")
        con.execute("INSERT INTO datasets VALUES ('d1', 'v1', true), ('d2', 'v0', false)")
        for model, dataset, conf, recipe in (("good", "d1", 0.001, "r1"), ("dec", "d1", 0.001, "r2"),
                                             ("good", "d2", 0.25, "r1")):
            sig = f"{model}-{dataset}"
            con.execute("INSERT INTO scores VALUES (?, ?, 'test', true, ?, ?, 0.65, 500, ?, 'v1')",
                        [model, dataset, sig, conf, recipe])
            con.execute("INSERT INTO runs VALUES (?, 0.5, NULL, ?, NULL, NULL, 'v1', 'f', 's')", [sig, model == "good"])
    wh = tmp_path / "w.duckdb"
    facts = {"scores_judged": 3, "declared_non_conformant": {"dec": "lr"}}
    problems = ["conf 0.25 (must be 0.001)", "dataset has no current version lock"]
    assert cc.protocol_conformance(wh) == Finding(
        False, f"1 of 3 scores break the protocol: good/d2: {', '.join(problems)}",
        [{"model": "good", "dataset": "d2", "problems": problems}], facts)
    with attached(wh, read_only=False) as con:
        con.execute("DELETE FROM scores WHERE dataset = 'd2'")
    assert cc.protocol_conformance(wh) == Finding(
        True, "all 2 scores follow the protocol; declared non-conformant (registered so, never a valid submission): "
              "dec [b.yaml]", [], {"scores_judged": 2, "declared_non_conformant": {"dec": "lr"}})


def test_protocol_conformance_names_every_break_of_a_row_and_shows_five_rows(tmp_path: Path) -> None:
    """Each reason of the protocol check, in its order, on one row; six broken rows: five described, then "..."."""
    wh = tmp_path / "w.duckdb"
    with attached(wh, read_only=False) as con:
        _protocol_tables(con)
        con.execute("INSERT INTO models VALUES ('m', 'm.yaml', 'aaaaaaaaaaaaaaaa', true, NULL)")
        con.execute("INSERT INTO datasets VALUES ('d0', 'v1', true), ('d1', 'v1', true), ('d2', 'v1', true), "
                    "('d3', 'v1', true), ('d4', 'v1', true), ('d5', 'v1', true)")
        # d0 breaks everything a row can break at once; d1..d5 only the model-wide recipe-hash count (two hashes).
        con.execute("INSERT INTO scores VALUES ('m', 'd0', 'valid', true, 's0', 0.001, 0.7, 300, "
                    "'bbbbbbbbbbbbbbbb', 'v2')")
        con.execute("INSERT INTO runs VALUES ('s0', 0.5, NULL, false, NULL, NULL, 'v3', 'f', 's')")
        for i in range(1, 6):
            con.execute("INSERT INTO scores VALUES ('m', ?, 'test', true, ?, 0.001, 0.65, 500, "
                        "'aaaaaaaaaaaaaaaa', 'v1')", [f"d{i}", f"s{i}"])
            con.execute("INSERT INTO runs VALUES (?, 0.5, NULL, true, NULL, NULL, 'v1', 'f', 's')", [f"s{i}"])
        con.execute("INSERT INTO scores VALUES ('ghost', 'd1', 'test', true, 'g', 0.001, 0.65, 500, 'cc', 'v1')")
    row0 = ["split valid (must be test)", "NMS IoU 0.7 (must be 0.65)", "max_det 300 (must be 500)",
            "2 different recipe hashes across the model's datasets", "recipe bbbbbbbbbbbb is not the registered "
            "aaaaaaaaaaaa", "run used a non-conformant recipe", "scored dataset version v2, the lock says v1",
            "trained on v3 but scored on v2"]
    two = ["2 different recipe hashes across the model's datasets"]
    rows = ([{"model": "ghost", "dataset": "d1", "problems": ["model not registered (no BENCH_HOME/models entry)"]},
             {"model": "m", "dataset": "d0", "problems": row0}]
            + [{"model": "m", "dataset": f"d{i}", "problems": two} for i in range(1, 6)])
    shown = "; ".join(f"{r['model']}/{r['dataset']}: {', '.join(r['problems'])}" for r in rows[:5])
    assert cc.protocol_conformance(wh) == Finding(
        False, f"7 of 7 scores break the protocol: {shown} ...", rows,
        {"scores_judged": 7, "declared_non_conformant": {}})


def test_scoring_integrity_names_each_problem_and_shows_five_rows(tmp_path: Path) -> None:
    """Every kind of scoring problem with its exact words: an undefined headline, a -1 and a 1.5 in a bucket, backend
    disparity, a submission headline that is not its datasets' mean, a stale submitted score; six rows: five shown."""
    metrics = ("mAP50_95", "mAP50", "mAP75", "mAP_small", "mAP_medium", "mAP_large", "AR1", "AR10", "AR100",
               "AR_small", "AR_medium", "AR_large", "AR_max_det")
    wh = tmp_path / "w.duckdb"
    with attached(wh, read_only=False) as con:
        con.execute("CREATE TABLE scores (model VARCHAR, dataset VARCHAR, is_current BOOLEAN, run_signature VARCHAR, "
                    + ", ".join(f'"{m}" DOUBLE' for m in metrics)
                    + ", parity_max_abs_deviation DOUBLE, parity_differing VARCHAR[])")
        con.execute(_RUNS)
        con.execute("CREATE TABLE submissions (model VARCHAR, origin VARCHAR, mAP50_95 DOUBLE)")
        con.execute("CREATE TABLE submission_datasets (model VARCHAR, origin VARCHAR, dataset VARCHAR, "
                    "mAP50_95 DOUBLE)")

        def score(dataset: str, differing: list[str] | None = None, deviation: float = 0.0,
                  **metric: float | None) -> None:
            values = [metric.get(m, 0.5) for m in metrics]
            con.execute(f"INSERT INTO scores VALUES ('m', ?, true, ?, {', '.join('?' * len(metrics))}, ?, ?)",
                        [dataset, f"s-{dataset}", *values, deviation, differing or []])

        score("d1", mAP50_95=None)
        score("d2", mAP_small=-1.0)
        score("d3", differing=["precision"], deviation=0.5)
        score("d4")
        score("d5", mAP50=1.5)
        score("old", mAP50_95=None)
        con.execute("UPDATE scores SET is_current = false WHERE dataset = 'old'")  # not judged: not current
        con.execute("INSERT INTO submissions VALUES ('m', 'ours', 0.9)")
        con.execute("INSERT INTO submission_datasets VALUES ('m', 'ours', 'd4', 0.5), ('m', 'theirs', 'd2', 0.4)")
        con.execute("INSERT INTO submission_datasets VALUES ('m', 'ours', 'd2', 0.25)")
    rows = [{"model": "m", "dataset": "d1", "problems": ["headline mAP50-95 undefined"]},
            {"model": "m", "dataset": "d2", "problems": ["a metric outside [0, 1] (a -1 that would enter a mean)"]},
            {"model": "m", "dataset": "d3", "problems": ["fast and reference backends differ on precision (max 0.5)"]},
            {"model": "m", "dataset": "d5", "problems": ["a metric outside [0, 1] (a -1 that would enter a mean)"]},
            {"model": "m", "dataset": None,
             "problems": ["submission headline 0.9 is not the mean 0.375 of its 2 datasets"]},
            {"model": "m", "dataset": "d2",
             "problems": ["submission says 0.25, the current score is 0.5 (stale submission: rebuild "
                          "rf100vl/submission)"]}]
    shown = "; ".join(f"{r['model']}/{r['dataset'] or '(headline)'}: {', '.join(r['problems'])}" for r in rows[:5])
    assert cc.scoring_integrity(wh) == Finding(False, f"6 scoring problem(s): {shown} ...", rows,
                                               {"scores_judged": 5})
    with attached(wh, read_only=False) as con:
        con.execute("DELETE FROM scores WHERE dataset <> 'd4'")
        con.execute("DELETE FROM submission_datasets WHERE dataset = 'd2'")
        con.execute("UPDATE submissions SET mAP50_95 = 0.5")
    assert cc.scoring_integrity(wh) == Finding(
        True, "all 1 current scores have a defined headline in [0, 1] and backend parity; submission headlines are "
              "the means of their datasets", [], {"scores_judged": 1})


def test_protocol_conformance_elides_from_the_sixth_row_and_lists_every_declared_model(tmp_path: Path) -> None:
    """Five broken rows are all shown with no "...", six show five then "..."; a passing check names each declared
    non-conformant model, comma-separated, and says nothing more when there is none."""
    wh = tmp_path / "w.duckdb"
    with attached(wh, read_only=False) as con:
        _protocol_tables(con)
        con.execute("INSERT INTO models VALUES ('m', 'm.yaml', 'r', true, NULL)")
        for i in range(6):
            con.execute("INSERT INTO datasets VALUES (?, 'v1', true)", [f"d{i}"])
            con.execute("INSERT INTO scores VALUES ('m', ?, 'test', true, ?, 0.25, 0.65, 500, 'r', 'v1')",
                        [f"d{i}", f"s{i}"])
            con.execute("INSERT INTO runs VALUES (?, 0.5, NULL, true, NULL, NULL, 'v1', 'f', 's')", [f"s{i}"])
    row = "conf 0.25 (must be 0.001)"
    six = cc.protocol_conformance(wh).description
    assert six == "6 of 6 scores break the protocol: " + "; ".join(f"m/d{i}: {row}" for i in range(5)) + " ..."
    with attached(wh, read_only=False) as con:
        con.execute("DELETE FROM scores WHERE dataset = 'd5'")
    five = cc.protocol_conformance(wh).description
    assert five == "5 of 5 scores break the protocol: " + "; ".join(f"m/d{i}: {row}" for i in range(5))
    with attached(wh, read_only=False) as con:
        con.execute("UPDATE scores SET conf = 0.001")
    assert cc.protocol_conformance(wh) == Finding(True, "all 5 scores follow the protocol", [],
                                                  {"scores_judged": 5, "declared_non_conformant": {}})
    with attached(wh, read_only=False) as con:
        con.execute("INSERT INTO models VALUES ('x', 'x.json', 'rx', false, 'epochs'), "
                    "('w', 'w.json', 'rw', false, 'lr')")
    assert cc.protocol_conformance(wh).description == (
        "all 5 scores follow the protocol; declared non-conformant (registered so, never a valid submission): "
        "w [w.json], x [x.json]")
