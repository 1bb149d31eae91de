"""Submissions both ways in the published shape: a leaderboard entry exactly as the existing harness publishes it
(tests/rf100vl/published/yolov9-t.published.json, made by tests/rf100vl/published/make_published_submission.py from the
published field list) imports unchanged; a file we build has the same shape (JSON Schema in
bench_assets/rf100vl/data/va_submission_v1.schema.json); build -> import gives the same marts."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean

import pytest

from bench_assets.platform.warehouse import query
from bench_assets.rf100vl.datasets.catalog import DOMAINS, load_versions
from bench_assets.rf100vl.submission.build import SubmissionError, build_submission, check_imported
from bench_assets.rf100vl.submission.schema import schema_problems
from bench_assets.rf100vl.submission.shape import dataset_identity, weights_identity
from tests.shared_reports import CLEAN_TREE, PUBLISHED, SUBMISSION_NOW, completed, published_imports_report
from tests.synthetic_campaign import make_campaign

# The two tests that run `bench` and dbt are `integration` (not in `make test-fast`); the others read and check files in
# well under a second each, so `make test-fast` and the mutation selection (setup.cfg) run them.
INTEGRATION = pytest.mark.integration



def _published() -> dict:
    return json.loads(PUBLISHED.read_text())


def test_the_published_file_has_the_published_shape_and_identities() -> None:
    doc = _published()
    assert schema_problems(doc) == []
    assert "schema" not in doc and doc["schema_version"] == "va.submission.v1"
    assert all(type(d["dataset_version"]) is int for d in doc["rf100vl"]["datasets"])
    # the identity schemes recompute to what the file states
    assert dataset_identity(doc["repro"]["dataset"]["datasets"]) == doc["repro"]["dataset"]["image_id_sha256"]
    assert weights_identity(doc["repro"]["weights"]["datasets"]) == doc["repro"]["weights"]["sha256"]
    # its versions lock is ours (rf100vl.versions.v1 as published entries lock the 100 datasets)
    versions = doc["repro"]["dataset"]["versions"]["datasets"]
    locked = {d: (v["project_name"], v["version_id"]) for d, v in versions.items()}
    assert locked == load_versions()


@pytest.fixture(scope="module")
def imported_and_reported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One home for both round trips, built once per run of the suite (tests/shared_reports.py): a one-model
    campaign over the 100 datasets, the published entry imported through `bench submission import`, the
    campaign's own built submission imported under another name, then `bench report`. The tests only read it."""
    return published_imports_report(tmp_path_factory)


@INTEGRATION
def test_a_genuine_published_file_imports_unchanged_into_every_mart(imported_and_reported: Path) -> None:
    home = imported_and_reported / "bench"
    res = completed(imported_and_reported, "import")
    assert res.returncode == 0, res.stderr
    assert "imported yolov9-t: 100 datasets" in res.stdout and "not a valid leaderboard entry" not in res.stdout
    stored = home / "submissions" / "imported" / "yolov9-t.json"
    assert stored.read_bytes() == PUBLISHED.read_bytes()  # unchanged
    doc = _published()
    res = completed(imported_and_reported, "report")
    assert (home / "report" / "report.md").exists(), res.stderr
    report = home / "report.duckdb"
    lead = {r["model"]: r for r in query(report, "SELECT model, origin, mAP50_95, datasets_scored, valid_submission "
                                                 "FROM rf100vl_leaderboard")}
    entry = lead["yolov9-t"]
    headline = fmean(d["mAP_50_95"] for d in doc["rf100vl"]["datasets"])  # recomputed from the entries
    assert entry["origin"] == "imported" and entry["datasets_scored"] == 100 and entry["valid_submission"]
    assert entry["mAP50_95"] == pytest.approx(headline, abs=1e-9)
    domains = {r["domain"]: r for r in query(report, "SELECT domain, datasets, mAP50_95 FROM rf100vl_domain_scores "
                                                     "WHERE model = 'yolov9-t'")}
    assert set(domains) == set(DOMAINS) and sum(r["datasets"] for r in domains.values()) == 100
    from bench_assets.rf100vl.datasets.catalog import catalog_entry

    for domain, row in domains.items():
        mine = [d["mAP_50_95"] for d in doc["rf100vl"]["datasets"] if catalog_entry(d["dataset"]).domain == domain]
        assert row["mAP50_95"] == pytest.approx(fmean(mine), abs=1e-9)
    # (this home holds a second imported file, the round trip's, with its own row for `actions`)
    rows = query(home / "warehouse.duckdb", "SELECT dataset_version FROM submission_datasets WHERE dataset = 'actions' "
                                            "AND model = 'yolov9-t'")
    assert rows == [{"dataset_version": str(load_versions()["actions"][1])}]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["accuracy"].__setitem__("mAP_50_95", d["accuracy"]["mAP_50_95"] + 0.01),
     r"accuracy.mAP_50_95 states 0\.\d{6} but the mean over its 100 datasets is 0\.\d{6}"),
    (lambda d: d["accuracy"].__setitem__("AR_max_det", 0.9),
     r"accuracy.AR_max_det states 0.900000 but the mean"),
    (lambda d: d["dataset"].__setitem__("num_images", 1),
     r"dataset.num_images states 1 but rf100vl.datasets sum to \d+"),
    (lambda d: d["rf100vl"]["datasets"][0].__setitem__("dataset_version", 99),
     r"rf100vl.datasets\[-grccs\].dataset_version is 99 but the file's own versions lock says 2"),
    (lambda d: d["rf100vl"]["datasets"][0].__setitem__("dataset_version", "a1b2c3"),
     r"rf100vl.datasets.0.dataset_version: 'a1b2c3' is not of type 'integer'"),
    (lambda d: d.__setitem__("schema", d.pop("schema_version")),
     r"field schema is set but the published shape's key is schema_version"),
    (lambda d: d.pop("timing"), r"\(top level\): 'timing' is a required property"),
    # hostile: NaN passes every min/max bound of a JSON Schema and every |stated - recomputed| test
    (lambda d: d["accuracy"].__setitem__("mAP_50_95", float("nan")), r"accuracy.mAP_50_95: nan is not a JSON number"),
    (lambda d: d["rf100vl"]["datasets"][5].__setitem__("mAP_50", float("inf")),
     r"rf100vl.datasets.5.mAP_50: inf is not a JSON number"),
])
def test_real_disagreements_are_refused_with_field_and_values(edit, message: str) -> None:  # noqa: ANN001
    doc = _published()
    edit(doc)
    with pytest.raises(SubmissionError, match=message):
        check_imported(doc, "published.json")


@pytest.mark.parametrize("dirty", [None, True, False])
def test_libreyolo_dirty_may_be_null_or_a_boolean_wherever_the_harness_writes_it(dirty: bool | None) -> None:
    """Genuine published files write `software.libreyolo_dirty: null` (a field list of ours once said str) and the
    benchmark block's `libreyolo_dirty` as a boolean or null: each imports with the reasons of the file as published."""
    _, expected = check_imported(_published(), "published.json")
    doc = _published()
    doc["software"]["libreyolo_dirty"] = dirty
    doc["benchmark"]["libreyolo_dirty"] = dirty
    assert check_imported(doc, "published.json")[1] == expected


def test_a_file_locked_at_other_versions_imports_but_is_not_a_valid_entry() -> None:
    doc = _published()
    doc["repro"]["dataset"]["versions"]["datasets"]["actions"]["version_id"] = 7
    next(d for d in doc["rf100vl"]["datasets"] if d["dataset"] == "actions")["dataset_version"] = 7
    _, reasons = check_imported(doc, "published.json")
    assert reasons[0] == ("actions: locked at actions-zzid2-zb1hq-amih version 7, rf100vl.versions.v1 says "
                          "actions-zzid2-zb1hq-amih version 1")


@INTEGRATION
def test_a_built_submission_has_the_published_shape_and_round_trips(imported_and_reported: Path) -> None:
    home = imported_and_reported / "bench"
    built = build_submission(home, "syna-t", tree=CLEAN_TREE, now=SUBMISSION_NOW)  # reads the home only
    assert schema_problems(built) == [] and built["rf100vl"]["valid_submission"], built["rf100vl"]["invalid_reasons"]
    published_keys = set(_published())
    assert published_keys <= set(built) and set(built) - published_keys == {"bench"}  # ours under a new key
    for block in ("benchmark", "model", "dataset", "config", "hardware", "software", "accuracy", "timing",
                  "throughput", "model_stats", "memory", "metadata", "eval", "implementation", "runtime"):
        assert set(_published()[block]) <= set(built[block]), block
    assert built["repro"]["dataset"]["identity_scheme"] == _published()["repro"]["dataset"]["identity_scheme"]
    assert built["repro"]["weights"]["identity_scheme"] == _published()["repro"]["weights"]["identity_scheme"]
    assert built["rf100vl"]["dataset_versions_sha256"] == built["repro"]["dataset"]["versions"]["sha256"]
    assert {d["dataset"]: d["dataset_version"] for d in built["rf100vl"]["datasets"]} == {
        d: v for d, (_, v) in load_versions().items()}
    # round trip: the built file imported under another name lands in the marts with the same numbers (the home
    # imported the file built before anything was imported: the same document)
    assert json.loads((imported_and_reported / "built.json").read_text()) == json.loads(json.dumps(built))
    res = completed(imported_and_reported, "report")
    assert (home / "report.duckdb").exists(), res.stderr
    marts = {m: {r["origin"]: r for r in query(home / "report.duckdb",
                                               f"SELECT * FROM {m} WHERE model IN ('syna-t', 'syna-t-again')")}
             for m in ("rf100vl_leaderboard",)}
    ours, again = marts["rf100vl_leaderboard"]["ours"], marts["rf100vl_leaderboard"]["imported"]
    for col in ("mAP50_95", "mAP50", "mAP75", "AR_max_det", "datasets_scored"):
        assert again[col] == pytest.approx(ours[col], abs=1e-12), col
    scores = query(home / "report.duckdb", "SELECT model, dataset, mAP50_95, mAP50 FROM rf100vl_dataset_scores "
                                           "WHERE model IN ('syna-t', 'syna-t-again') ORDER BY dataset, model")
    pairs = {}
    for r in scores:
        pairs.setdefault(r["dataset"], []).append((r["mAP50_95"], r["mAP50"]))
    assert len(pairs) == 100 and all(a == b for a, b in pairs.values())


def test_a_dataset_not_at_the_locked_roboflow_version_invalidates_the_build(tmp_path: Path) -> None:
    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=100, seed=3)
    for name, roboflow in (("actions", None), ("aerial-airport", {"project_name": "x", "version_id": 9})):
        lock_file = next((home / "datasets" / name).glob("*/lock.json"))
        lock = json.loads(lock_file.read_text())
        lock["roboflow"] = roboflow
        lock_file.write_text(json.dumps(lock))
    doc = build_submission(home, "syna-t", tree=CLEAN_TREE, now=SUBMISSION_NOW)
    reasons = doc["rf100vl"]["invalid_reasons"]
    assert ("actions: the Roboflow version of the scored data is unknown (not fetched through the rf100vl package); "
            "the versions lock names actions-zzid2-zb1hq-amih version 1") in reasons
    assert "aerial-airport: scored on Roboflow version 9, the versions lock (rf100vl.versions.v1) says 1" in reasons
    assert not doc["rf100vl"]["valid_submission"]
    shape = [r for r in reasons if r.startswith("not in the published shape: rf100vl.datasets.")]
    assert len(shape) == 1 and "dataset_version: null where the published shape wants an integer" in shape[0], shape


def test_catalogue_domains_follow_the_rf100vl_domain_manifest() -> None:
    """Our catalogue's domains are the rf100-vl repository's categories with the published canonicalization."""
    from importlib import resources

    from bench_assets.rf100vl.datasets.catalog import load_catalog
    from bench_assets.rf100vl.submission.shape import DOMAIN_SOURCE

    raw = json.loads(resources.files("rf100vl").joinpath("assets/dataset_name_to_category.json").read_text())
    canon = DOMAIN_SOURCE["canonicalization"]
    assert {n: e.domain for n, e in load_catalog().items()} == {n: canon.get(c, c) for n, c in raw.items()}
