"""Edge cases of bench_assets/rf100vl/submission/build.py that kill mutants the other tests let survive (issue 15,
docs/testing.md "Mutation testing")."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bench_assets.platform.fsutil import canonical_json_sha256
from bench_assets.rf100vl.submission import build as sm
from bench_assets.rf100vl.submission import shape

# A leaderboard entry in the existing harness's published shape (tests/rf100vl/published/): every edit starts from it.
PUBLISHED = json.loads((Path(__file__).resolve().parent / "published" / "yolov9-t.published.json").read_text())
CLEAN_TREE = {"commit": "1" * 40, "dirty": False, "changed_files": []}  # a clean git checkout, for `build_submission`


def _doc() -> dict[str, Any]:
    return copy.deepcopy(PUBLISHED)


def _refused(doc: dict[str, Any]) -> str:
    with pytest.raises(sm.SubmissionError) as err:
        sm.check_imported(doc, "f.json")
    return str(err.value)


def test_protocol_reasons_name_each_departure_in_order() -> None:
    assert sm.protocol_reasons(split="test", n_datasets=100, expected=100, nms_iou=0.65, max_det=500) == []
    assert sm.protocol_reasons(split="test", n_datasets=100, expected=100, nms_iou=0.65 + 1e-10, max_det=500) == []
    assert sm.protocol_reasons(split="valid", n_datasets=99, expected=100, nms_iou=0.7, max_det=300) == [
        "scored on split 'valid', the leaderboard requires 'test'",
        "99 datasets scored, the leaderboard requires exactly 100",
        "NMS IoU 0.7, the protocol requires 0.65",
        "max_det 300, the protocol requires 500"]
    assert sm.protocol_reasons(split="test", n_datasets=4, expected=4, nms_iou=0.6500001, max_det=500) == [
        "NMS IoU 0.6500001, the protocol requires 0.65"]


def test_the_published_file_parses_and_is_a_valid_entry() -> None:
    sub, reasons = sm.check_imported(_doc(), "f.json")
    assert reasons == [] and len(sub.rf100vl.datasets) == 100
    with_old_key_too = {**_doc(), "schema": "va.submission.v1"}  # schema beside schema_version is only extra
    assert sm.check_imported(with_old_key_too, "f.json")[1] == []


def test_parse_errors_name_the_field_and_the_fix() -> None:
    old = _doc()
    old["schema"] = old.pop("schema_version")
    assert _refused(old) == ("f.json: field schema is set but the published shape's key is schema_version (this is an "
                             "older bench file); rebuild it with `bench submission build`")
    bare = _doc()
    del bare["schema_version"]
    assert _refused(bare) == ("f.json: not in the published va.submission.v1 shape (1 problem(s)): (top level): "
                              "'schema_version' is a required property; fix the file")
    many = _doc()
    gone = ["accuracy", "eval", "hardware", "memory", "metadata", "repro", "runtime", "software", "throughput",
            "timing"]
    for key in gone:
        del many[key]
    shown = "; ".join(f"(top level): '{k}' is a required property" for k in gone[:8])
    assert _refused(many) == (f"f.json: not in the published va.submission.v1 shape (10 problem(s)): {shown}; "
                              "fix the file")
    model_only = _doc()  # the JSON schema leaves domain_means open; the model wants an object per domain
    model_only["rf100vl"]["domain_means"] = {"x": [1], "y": 2}
    assert _refused(model_only) == ("f.json: field rf100vl.domain_means.x: Input should be a valid dictionary; fix the "
                                    "file (2 problem(s) in all)")


def test_dataset_names_must_be_distinct_and_present() -> None:
    sm._require_distinct_datasets(["a", "b"], "f.json")
    with pytest.raises(sm.SubmissionError) as err:
        sm._require_distinct_datasets(["b", "a", "c", "b", "a", "a"], "f.json")
    assert str(err.value) == "f.json: rf100vl.datasets lists a, b more than once"
    with pytest.raises(sm.SubmissionError) as err:
        sm._require_distinct_datasets([], "f.json")
    assert str(err.value) == "f.json: rf100vl.datasets is empty; nothing to import"


def _mean_of(doc: dict[str, Any], field: str) -> float:
    values = [d[field] for d in doc["rf100vl"]["datasets"] if d.get(field) is not None]
    return sum(values) / len(values)


def test_stated_headlines_must_be_the_mean_of_the_datasets_within_1e_4() -> None:
    doc = _doc()
    mean = _mean_of(doc, "mAP_50")
    doc["accuracy"]["mAP_50"] = mean + 0.9e-4  # within the files' four-decimal rounding
    sm.check_imported(doc, "f.json")
    doc["accuracy"]["mAP_50"] = mean + 1.1e-4
    doc["accuracy"]["AR_max_det"] = 0.9
    assert _refused(doc) == (
        "f.json: the stated means do not follow from the per-dataset entries: "
        f"accuracy.mAP_50 states {mean + 1.1e-4:.6f} but the mean over its 100 datasets is {mean:.6f}; "
        f"accuracy.AR_max_det states 0.900000 but the mean over its 100 datasets is {_mean_of(doc, 'AR_max_det'):.6f}")
    sub = sm._parse_submission(_doc(), "f.json")
    sub.accuracy.update(AR100=0.0, mAP_75=None)  # AR100 off; mAP_75 not stated: nothing to compare
    assert sm._accuracy_problems(sub) == [
        f"accuracy.AR100 states 0.000000 but the mean over its 100 datasets is {_mean_of(PUBLISHED, 'AR100'):.6f}"]
    sub.accuracy.update(mAP_50_95=None, AR100=PUBLISHED["accuracy"]["AR100"])
    assert sm._accuracy_problems(sub) == ["accuracy.mAP_50_95 is missing"]


def test_stated_counts_and_hashes_must_match_the_entries() -> None:
    doc = _doc()
    assert sm._count_problems(doc) == []
    total = doc["dataset"]["num_images"]
    doc["dataset"]["num_images"] = total + 1
    doc["dataset"]["num_datasets"] = 99
    doc["rf100vl"]["dataset_versions_sha256"] = "ab" * 32
    first = doc["rf100vl"]["datasets"][0]
    first["dataset_version"] = 7
    assert sm._count_problems(doc) == [
        f"dataset.num_images states {total + 1} but rf100vl.datasets sum to {total}",
        "dataset.num_datasets states 99 but 100 are listed",
        f"rf100vl.dataset_versions_sha256 is {'ab' * 32} but repro.dataset.versions.sha256 is "
        f"{doc['repro']['dataset']['versions']['sha256']}",
        "rf100vl.datasets[-grccs].dataset_version is 7 but the file's own versions lock says 2"]
    unlocked = _doc()
    del unlocked["repro"]["dataset"]["versions"]["datasets"]["-grccs"]  # no lock entry: nothing to compare
    unlocked["rf100vl"]["datasets"][0]["dataset_version"] = 7
    assert sm._count_problems(unlocked) == []


def test_a_file_locked_at_another_roboflow_version_or_project_is_named() -> None:
    doc = _doc()
    assert sm._lock_reasons(doc) == []
    locks = doc["repro"]["dataset"]["versions"]["datasets"]
    locks["-grccs"]["version_id"] = 9
    locks["13-lkc01"]["project_name"] = "someone-else"
    locks["not-rf100vl"] = {"project_name": "x", "version_id": 1}  # not ours: not judged
    assert sm._lock_reasons(doc) == [
        "-grccs: locked at -grccs-yi3bi-sge1z-anexl-hayl version 9, rf100vl.versions.v1 says "
        "-grccs-yi3bi-sge1z-anexl-hayl version 2",
        "13-lkc01: locked at someone-else version 1, rf100vl.versions.v1 says 13-lkc01-axmll-qtoq version 1"]


def test_stated_domain_means_must_follow_from_the_entries() -> None:
    entries = PUBLISHED["rf100vl"]["datasets"]
    ours = sm.domain_means(entries)
    assert sm._domain_mean_problems(ours, entries) == []
    domain = sorted(ours)[0]
    got = ours[domain]
    stated = {domain: {"datasets": got["datasets"] + 1, "mAP_50_95": got["mAP_50_95"] + 0.5e-4,
                       "mAP_50": got["mAP_50"] - 2e-4},
              "atlantis": {"datasets": 1}}
    assert sm._domain_mean_problems(stated, entries) == [  # by domain name: "Aerial" sorts before "atlantis"
        f"rf100vl.domain_means.{domain}.mAP_50 states {got['mAP_50'] - 2e-4:.6f} but its datasets give "
        f"{got['mAP_50']:.6f}",
        f"rf100vl.domain_means.{domain}.datasets states {got['datasets'] + 1} but {got['datasets']} datasets are "
        "listed",
        "rf100vl.domain_means.atlantis: no dataset of that domain in rf100vl.datasets"]
    unstated = {domain: {"mAP_50_95": None, "mAP_50": got["mAP_50"] + 2e-4}}  # no count stated: not compared
    assert sm._domain_mean_problems(unstated, entries) == [
        f"rf100vl.domain_means.{domain}.mAP_50 states {got['mAP_50'] + 2e-4:.6f} but its datasets give "
        f"{got['mAP_50']:.6f}"]
    doc = _doc()
    doc["rf100vl"]["domain_means"] = stated
    assert "rf100vl.domain_means.atlantis: no dataset of that domain" in _refused(doc)


def test_why_a_well_formed_file_is_not_a_valid_entry() -> None:
    doc = _doc()
    doc["config"].update(conf=0.25, iou=0.7)
    doc["rf100vl"]["aggregation"] = "weighted by images"
    doc["dataset"]["split"] = "valid"
    assert sm.check_imported(doc, "f.json")[1] == [
        "the file claims valid_submission=true, but:",
        "scored on split 'valid', the leaderboard requires 'test'",
        "config conf=0.25, the protocol scores every detection above 0.001",
        "config iou=0.7 max_det=500 differ from the protocol",
        "aggregation 'weighted by images', the leaderboard requires 'unweighted mean across datasets'"]
    only_max_det = _doc()
    only_max_det["config"]["max_det"] = 100
    assert sm.check_imported(only_max_det, "f.json")[1] == [
        "the file claims valid_submission=true, but:", "config iou=0.65 max_det=100 differ from the protocol"]
    stated = _doc()
    stated["rf100vl"].update(valid_submission=False, invalid_reasons=["trained on valid", "no seed"])
    assert sm.check_imported(stated, "f.json")[1] == ["(stated in the file) trained on valid",
                                                      "(stated in the file) no seed"]
    stated["rf100vl"]["invalid_reasons"] = []
    stated["config"]["conf"] = 0.01
    assert sm.check_imported(stated, "f.json")[1] == [
        "config conf=0.01, the protocol scores every detection above 0.001", "(stated in the file) invalid"]


# --- building: the pure steps between the stored records and the document --------------------------------------


def _row(dataset: str, **kw: Any) -> dict[str, Any]:
    return {"dataset": dataset, "split": "test", "nms_iou": 0.65, "max_det": 500, "conf": 0.001,
            "dataset_version": None, "wall_seconds": None, **kw}


def test_scored_settings_are_the_distinct_values_or_the_protocols_when_nothing_was_scored() -> None:
    rows = [_row("a"), _row("b", split="valid", nms_iou=0.7, max_det=300, conf=0.25), _row("c")]
    assert sm._scored_settings(rows) == {"split": {"test", "valid"}, "nms_iou": {0.65, 0.7}, "max_det": {500, 300},
                                         "conf": {0.001, 0.25}}
    assert sm._scored_settings([]) == {"split": {"test"}, "nms_iou": {0.65}, "max_det": {500}, "conf": {0.001}}


def test_campaign_reasons_name_every_break_of_the_protocol_in_order() -> None:
    scores = sm._CampaignScores(rows=[_row(f"d{i}") for i in range(100)])
    assert sm._campaign_reasons(scores, sm._scored_settings(scores.rows), 100) == []
    scores = sm._CampaignScores(rows=[_row("a"), _row("b")], missing=[f"m{i:02d}" for i in range(11)],
                                stale=["a (scored v1, lock says v2)", "b (scored v3, lock says v4)"],
                                recipe_shas={"b" * 64, "a" * 64}, conformant=False,
                                nonconformities={"protocol.epochs is 20", "protocol.effective_batch is 4"})
    settings = {"split": {"test", "valid", "train"}, "nms_iou": {0.65, 0.7, 0.5}, "max_det": {500, 300, 100},
                "conf": {0.001, 0.25, 0.0010000000001}}
    assert sm._campaign_reasons(scores, settings, 13) == [
        "scored on split 'train', the leaderboard requires 'test'",
        "scored on split 'valid', the leaderboard requires 'test'",
        "2 datasets scored, the leaderboard requires exactly 100",
        "11 of the campaign's 13 datasets have no score: m00, m01, m02, m03, m04, m05, m06, m07, m08, m09 ...",
        "NMS IoU 0.5, the protocol requires 0.65",
        "NMS IoU 0.7, the protocol requires 0.65",
        "max_det 100, the protocol requires 500",
        "max_det 300, the protocol requires 500",
        "conf 0.25, the protocol requires 0.001",
        "dataset versions differ from the stored lock: a (scored v1, lock says v2), b (scored v3, lock says v4)",
        f"mixed recipe hashes across datasets: {'a' * 12}, {'b' * 12}",
        "non-conformant recipe: protocol.effective_batch is 4; protocol.epochs is 20"]
    ten = sm._CampaignScores(rows=[_row(f"d{i}") for i in range(100)], missing=[f"m{i}" for i in range(10)],
                             recipe_shas={"c" * 64})
    assert sm._campaign_reasons(ten, sm._scored_settings(ten.rows), 110) == [
        "10 of the campaign's 110 datasets have no score: m0, m1, m2, m3, m4, m5, m6, m7, m8, m9"]


def test_source_tree_reasons() -> None:
    assert sm._source_tree_reasons({"commit": "0123456789abcdef", "dirty": False, "changed_files": []}) == []
    dirty = {"commit": "0123456789abcdef", "dirty": True, "changed_files": [f"f{i}.py" for i in range(7)]}
    assert sm._source_tree_reasons(dirty) == ["dirty source tree at 0123456789ab: f0.py, f1.py, f2.py, f3.py, f4.py"]
    assert sm._source_tree_reasons({"commit": None, "dirty": False}) == [
        "source tree commit unknown (not a git checkout); the run is not reproducible"]


def test_version_reasons_compare_the_scored_roboflow_version_with_the_lock() -> None:
    rows = [_row("-grccs", dataset_version=2), _row("-grccs", dataset_version=3), _row("-grccs"),
            _row("mini-tiny", dataset_version=None)]  # not in RF100-VL: nothing to compare
    assert sm._version_reasons(rows) == [
        "-grccs: scored on Roboflow version 3, the versions lock (rf100vl.versions.v1) says 2",
        "-grccs: the Roboflow version of the scored data is unknown (not fetched through the rf100vl package); the "
        "versions lock names -grccs-yi3bi-sge1z-anexl-hayl version 2"]


def test_accuracy_means_inference_costs_and_train_runtime_strip_their_keys() -> None:
    metrics = dict.fromkeys(sm.ACCURACY_FIELDS, 0.5)
    rows = [_row("a", wall_seconds=30.0, _metrics={**metrics, "mAP50_95": 0.2, "AR1": None}, _cost={"ms": 1}),
            _row("b", wall_seconds=10.0, _metrics={**metrics, "mAP50_95": 0.4, "AR1": 0.3}, _cost=None),
            _row("c", wall_seconds=None, _metrics={**metrics, "mAP50_95": 0.9, "AR1": 0.1})]
    accuracy = sm._accuracy_means(rows)
    assert accuracy == {**dict.fromkeys(sm.ACCURACY_FIELDS.values(), 0.5), "mAP_50_95": pytest.approx(0.5),
                        "AR1": pytest.approx(0.2)}
    assert sm._inference_costs(rows) == [{"ms": 1}]
    assert all("_metrics" not in r and "_cost" not in r for r in rows)
    # 10 and 30 s: the "median" is the upper of the two (sorted(walls)[n // 2]); with 10, 20, 30 the middle one
    assert sm._train_runtime(rows) == {"train_wall_seconds_total": 40.0, "train_wall_seconds_median": 30.0}
    rows.append(_row("d", wall_seconds=20.0))
    assert sm._train_runtime(rows)["train_wall_seconds_median"] == 20.0
    assert sm._train_runtime([_row("x")]) == {"train_wall_seconds_total": None, "train_wall_seconds_median": None}


# --- building: a whole document from a synthetic campaign's files ------------------------------------------------


def _files(home: Path, dataset: str) -> tuple[dict[str, Any], dict[str, Any], Path, Path]:
    """(stats.json of the current run, the current score record, its path, the predictions file) as written."""
    run = home / "runs" / "syna-t" / dataset
    stats = json.loads((run / (run / "CURRENT").read_text().strip() / "stats.json").read_text())
    edir = home / "eval" / "syna-t" / dataset
    score_file = next(edir.glob("*.score.json"))
    return stats, json.loads(score_file.read_text()), score_file, next(edir.glob("*.predictions.json.gz"))


def test_a_built_document_carries_each_field_from_the_campaign_files(tmp_path: Path) -> None:
    import hashlib
    from statistics import fmean

    from bench_assets.rf100vl.datasets.catalog import catalog_entry
    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=2, seed=5)
    run = home / "runs" / "syna-t" / "13-lkc01"  # its training was resumed (from a last.pt)
    stats_file = run / (run / "CURRENT").read_text().strip() / "stats.json"
    stats_file.write_text(json.dumps({**json.loads(stats_file.read_text()), "resumed": True}))
    doc = sm.build_submission(home, "syna-t", now="2026-12-02T03:04:05Z", tree=CLEAN_TREE)
    rows = doc["rf100vl"]["datasets"]
    assert [r["dataset"] for r in rows] == ["-grccs", "13-lkc01"]  # the campaign's list, in name order
    for row in rows:
        d = row["dataset"]
        stats, score, score_file, pred_file = _files(home, d)
        pin, m, entry = score["prediction_inputs"], score["metrics"], catalog_entry(d)
        assert row == {
            "dataset": d, "num_images": score["num_images"], "num_classes": stats["data"]["num_classes"],
            "dataset_version": entry.version_id, "weights": stats["best_checkpoint"],
            "weights_sha256": pin["weights_sha256"], "result_file": str(score_file), "predictions_file": str(pred_file),
            "resumed_from_cache": d == "13-lkc01", "wall_seconds": stats["wall_seconds"], "mAP_50": m["mAP50"],
            "mAP_50_95": m["mAP50_95"], "mAP_75": m["mAP75"], "AR100": m["AR100"], "AR_max_det": m["AR_max_det"],
            "domain": entry.domain, "dataset_content_version": score["dataset_version"],
            "image_id_sha256": pin["image_ids_sha256"], "best_epoch": stats["best_epoch"],
            "valid_mAP_50_95": stats["valid_mAP50_95"], "split": "test", "conf": pin["conf"], "nms_iou": pin["iou"],
            "max_det": pin["max_det"], "imgsz": pin["imgsz"]}
    n_images = sum(r["num_images"] for r in rows)
    assert doc["dataset"] == {"id": "rf100_vl", "split": "test", "num_images": n_images, "num_datasets": 2,
                              "num_datasets_discovered": 2, "num_datasets_selected": 2}
    assert doc["config"] == {"batch_size": 16, "input_size": 640, "conf": 0.001, "iou": 0.65, "max_det": 500}
    assert doc["eval"] == {"dataset": "rf100_vl", "split": "test", "numImages": n_images, "maxDets": [1, 10, 100, 500]}
    assert doc["created_at"] == "2026-12-02T03:04:05Z"
    assert doc["metadata"] == {"benchmark_date": "2026-12-02", "benchmark_version": sm.HARNESS_VERSION}
    assert doc["runtime"] == {"format": "pytorch", "precision": "bf16", "provider": "cuda", "device": "gpu"}
    assert (doc["hardware"]["gpu"], doc["hardware"]["cpu"]) == ("NVIDIA H200", "Synthetic CPU")  # the child measured
    assert doc["implementation"] == {"provider": "libreyolo", "version": doc["software"]["libreyolo"]}
    assert doc["benchmark"] == {"harness": "bench-platform", "harness_version": sm.HARNESS_VERSION,
                                "libreyolo_version": doc["software"]["libreyolo"], "libreyolo_commit": "unknown",
                                "libreyolo_dirty": None}
    assert doc["accuracy"]["mAP_50_95"] == pytest.approx(fmean(r["mAP_50_95"] for r in rows))
    walls = sorted(r["wall_seconds"] for r in rows)
    recipe = home / "recipes" / "syna.json"
    assert doc["bench"] == {"suite": "custom", "recipe_variant": str(recipe),
                            "builder": "bench_assets.rf100vl.submission.build",
                            "train_runtime": {"train_wall_seconds_total": sum(walls),
                                              "train_wall_seconds_median": walls[1]}}
    recipe_sha = hashlib.sha256(recipe.read_bytes()).hexdigest()
    repro = doc["repro"]
    assert {k: repro[k] for k in ("harness_version", "harness_commit", "harness_dirty", "protocol_version", "argv",
                                  "command", "recipe", "bench")} == {
        "harness_version": sm.HARNESS_VERSION, "harness_commit": "1" * 40, "harness_dirty": False,
        "protocol_version": "rf100vl-fs-v1", "argv": ["bench", "submission", "build"],
        "command": "bench submission build",
        "recipe": {"file": str(recipe), "sha256": recipe_sha, "source": "per-dataset stats.json", "dataset_count": 2},
        "bench": {"source_tree": CLEAN_TREE,
                  "content_versions": {r["dataset"]: r["dataset_content_version"] for r in rows}}}
    assert repro["dataset"]["datasets"] == [
        {"dataset": r["dataset"], "num_images": r["num_images"], "image_id_sha256": r["image_id_sha256"],
         "version_id": r["dataset_version"]} for r in rows]
    assert repro["dataset"]["versions"]["datasets"] == {
        r["dataset"]: {"project_name": catalog_entry(r["dataset"]).project_name, "version_id": r["dataset_version"]}
        for r in rows}
    weights = [{"dataset": r["dataset"], "file": r["weights"], "sha256": r["weights_sha256"],
                "source": "per-dataset-finetuned"} for r in rows]
    assert repro["weights"] == {"file": "per-dataset checkpoints", "sha256": shape.weights_identity(weights),
                                "source": "fine-tuned", "identity_scheme": shape.WEIGHTS_IDENTITY_SCHEME,
                                "datasets": weights}
    from bench_assets.rf100vl.datasets.catalog import data_file

    versions_csv = data_file("data/rf100vl_versions.csv")
    rf = doc["rf100vl"]
    assert {k: v for k, v in rf.items() if k not in ("datasets", "content_versions_sha256", "domain_means")} == {
        "regime": "fine-tuned", "aggregation": "unweighted mean across datasets",
        "protocol": {"version": "rf100vl-fs-v1", "nms_iou": 0.65, "max_det": 500, "expected_datasets": 100},
        "dataset_versions_sha256": hashlib.sha256(versions_csv.read_bytes()).hexdigest(), "recipe_sha256": recipe_sha,
        "per_dataset_results_dir": str(home / "eval" / "syna-t"), "valid_submission": False,
        "invalid_reasons": ["2 datasets scored, the leaderboard requires exactly 100"], "skipped_datasets": []}
    assert rf["domain_means"] == sm.domain_means(rows)
    assert rf["content_versions_sha256"] == canonical_json_sha256(
        {r["dataset"]: r["dataset_content_version"] for r in rows})
    assert doc["submission_id"] == shape.submission_id(doc["model"], doc["runtime"], doc["hardware"],
                                                       "2026-12-02T03:04:05Z")


def test_a_build_names_unscored_unlocked_and_untrained_datasets(tmp_path: Path) -> None:
    import shutil

    from bench_assets.rf100vl.datasets.catalog import catalog_entry
    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=4, seed=5)
    unscored, unlocked, no_pointer, no_stats = sorted(p.name for p in (home / "datasets").iterdir())
    shutil.rmtree(home / "eval" / "syna-t" / unscored)  # never predicted nor scored; first, so the rest still count
    version = (home / "datasets" / unlocked / "CURRENT").read_text()
    shutil.rmtree(home / "datasets" / unlocked / version)  # purged after it was scored: CURRENT names nothing stored
    (home / "runs" / "syna-t" / no_pointer / "CURRENT").unlink()  # scored, but the run's pointer is gone
    run = home / "runs" / "syna-t" / no_stats
    (run / (run / "CURRENT").read_text().strip() / "stats.json").unlink()  # the pointer names a run without stats
    doc = sm.build_submission(home, "syna-t", now="2026-12-02T03:04:05Z",
                              tree={"commit": None, "dirty": None, "changed_files": []})  # not a git checkout
    assert (doc["repro"]["harness_commit"], doc["repro"]["harness_dirty"]) == ("unknown", None)
    rf = doc["rf100vl"]
    assert [r["dataset"] for r in rf["datasets"]] == [unlocked, no_pointer, no_stats]
    assert rf["skipped_datasets"] == [unscored]
    entry = catalog_entry(unlocked)
    assert rf["invalid_reasons"][:5] == [
        f"{unlocked}: no version lock stored for the dataset",
        "3 datasets scored, the leaderboard requires exactly 100",
        f"1 of the campaign's 4 datasets have no score: {unscored}",
        f"{unlocked}: the Roboflow version of the scored data is unknown (not fetched through the rf100vl package); "
        f"the versions lock names {entry.project_name} version {entry.version_id}",
        "source tree commit unknown (not a git checkout); the run is not reproducible"]
    # and the published shape's own complaints: no integer Roboflow version for the purged one, ...
    shape = rf["invalid_reasons"][5:]
    assert shape and all(r.startswith("not in the published shape: ") for r in shape), shape
    assert ("not in the published shape: rf100vl.datasets.0.dataset_version: null where the published shape wants "
            "an integer") in shape  # one entry: its own path (several: one line, `datasets.*`, schema.py)
    assert rf["datasets"][0]["dataset_version"] is None
    for untrained in rf["datasets"][1:]:
        assert {k: untrained[k] for k in ("num_classes", "weights", "resumed_from_cache", "wall_seconds", "best_epoch",
                                          "valid_mAP_50_95")} == {"num_classes": None, "weights": "",
                                                                  "resumed_from_cache": False, "wall_seconds": None,
                                                                  "best_epoch": None, "valid_mAP_50_95": None}
    with pytest.raises(sm.SubmissionError) as err:
        sm.build_submission(home, "nobody-t")
    assert str(err.value) == (f"{home / 'models' / 'nobody-t.json'}: model 'nobody-t' is not registered; run "
                              "`bench campaign --model nobody-t --suite ...` first")


def test_importing_names_the_file_and_refuses_unusable_names(tmp_path: Path) -> None:
    home = tmp_path / "bench"
    missing = tmp_path / "nope.json"
    with pytest.raises(sm.SubmissionError) as err:
        sm.import_submission(home, missing)
    assert str(err.value) == f"{missing}: cannot read (No such file or directory); check the path"
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{\n  oops")
    with pytest.raises(sm.SubmissionError) as err:
        sm.import_submission(home, garbled)
    assert str(err.value) == (f"{garbled}: not JSON (Expecting property name enclosed in double quotes at line 2); "
                              "fix the file")
    dupes = _doc()
    dupes["rf100vl"]["datasets"].append(dict(dupes["rf100vl"]["datasets"][0]))
    bad = tmp_path / "dupes.json"
    bad.write_text(json.dumps(dupes))
    with pytest.raises(sm.SubmissionError) as err:
        sm.import_submission(home, bad)
    assert str(err.value).startswith(f"{bad}: rf100vl.datasets lists -grccs more than once")
    for name in ("", "a/b", ".hidden"):
        doc = _doc()
        doc["model"]["name"] = name
        path = tmp_path / "named.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(sm.SubmissionError) as err:
            sm.import_submission(home, path)
        assert str(err.value) == f"{path}: field model.name is {name!r}; give the model a plain name", name
    (home / "models").mkdir(parents=True)
    (home / "models" / "ours-t.json").write_text("{}")
    doc = _doc()
    doc["model"]["name"] = "ours-t"
    path = tmp_path / "ours.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(sm.SubmissionError) as err:
        sm.import_submission(home, path)
    assert str(err.value) == (f"{path}: model.name 'ours-t' is one of our registered models; rename the imported "
                              "entry (e.g. add a '-published' suffix)")
    doc["model"]["name"] = "theirs.v2"
    path.write_text(json.dumps(doc))
    out, sub, reasons = sm.import_submission(home, path)
    assert out == home / "submissions" / "imported" / "theirs.v2.json" and out.read_bytes() == path.read_bytes()
    assert reasons == [] and sub.model["name"] == "theirs.v2"


def test_an_unknown_stated_domain_does_not_hide_the_next_ones() -> None:
    entries = PUBLISHED["rf100vl"]["datasets"]
    ours = sm.domain_means(entries)
    domain = sorted(ours)[0]
    stated = {"AAA unknown": {"datasets": 1}, domain: {**ours[domain], "datasets": ours[domain]["datasets"] + 1}}
    assert sm._domain_mean_problems(stated, entries) == [
        "rf100vl.domain_means.AAA unknown: no dataset of that domain in rf100vl.datasets",
        f"rf100vl.domain_means.{domain}.datasets states {ours[domain]['datasets'] + 1} but {ours[domain]['datasets']} "
        "datasets are listed"]


def test_a_dataset_without_a_current_version_or_with_half_a_version_is_unlocked(tmp_path: Path) -> None:
    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=2, seed=5)
    first, second = sorted(p.name for p in (home / "datasets").iterdir())
    (home / "datasets" / first / "CURRENT").unlink()  # never made current (or blocked)
    version = (home / "datasets" / second / "CURRENT").read_text()
    (home / "datasets" / second / version / "dataset.json").unlink()  # the lock alone is not a stored version
    doc = sm.build_submission(home, "syna-t", now="2026-12-02T03:04:05Z",
                              tree=CLEAN_TREE)
    assert doc["rf100vl"]["invalid_reasons"][:2] == [f"{first}: no version lock stored for the dataset",
                                                     f"{second}: no version lock stored for the dataset"]
    assert [r["dataset_version"] for r in doc["rf100vl"]["datasets"]] == [2, None]  # first's scored version is kept


def test_the_software_block_states_the_versions_the_runs_trained_with(tmp_path: Path) -> None:
    """The document credits the libraries that trained the weights, not those installed where it is built; runs
    trained with different versions, or recording none, make it invalid with the reason."""
    from tests.rf100vl.test_warehouse_checks import _current_stats_file, _edit
    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=4, seed=5)
    names = sorted(p.name for p in (home / "datasets").iterdir())
    older = {"libreyolo": "1.5.1", "torch": "2.13.0"}  # not what this venv has (1.6.0 / 2.14.1)
    for d in names:
        _edit(_current_stats_file(home, "syna-t", d), lambda s: s.update(capabilities=dict(older)))

    def build() -> dict[str, Any]:
        return sm.build_submission(home, "syna-t", now="2026-12-02T03:04:05Z",
                                   tree=CLEAN_TREE)

    doc = build()
    assert (doc["software"]["libreyolo"], doc["software"]["torch"]) == ("1.5.1", "2.13.0")
    assert doc["benchmark"]["libreyolo_version"] == doc["implementation"]["version"] == "1.5.1"
    assert not [r for r in doc["rf100vl"]["invalid_reasons"] if "library versions" in r or "trained with" in r]

    _edit(_current_stats_file(home, "syna-t", names[1]), lambda s: s["capabilities"].update(libreyolo="1.6.0"))
    for d in names[2:]:
        _edit(_current_stats_file(home, "syna-t", d), lambda s: s.pop("capabilities"))
    doc = build()
    assert doc["software"]["libreyolo"] == "1.5.1 + 1.6.0" and doc["software"]["torch"] == "2.13.0"
    reasons = doc["rf100vl"]["invalid_reasons"]
    assert "the runs trained with libreyolo 1.5.1, 1.6.0: retrain so one version trained all" in reasons
    assert f"2 run(s) recorded no library versions ({names[2]}, {names[3]}): retrain them" in reasons
    assert not [r for r in reasons if "trained with torch" in r]


def test_a_stated_domain_mean_exactly_at_the_tolerance_passes() -> None:
    entries = [{"dataset": d["dataset"], "mAP_50_95": 0.0, "mAP_50": 0.0} for d in PUBLISHED["rf100vl"]["datasets"]]
    domain = sorted(sm.domain_means(entries))[0]
    n = sm.domain_means(entries)[domain]["datasets"]
    for field_name in ("mAP_50_95", "mAP_50"):
        on = {domain: {"datasets": n, "mAP_50_95": 0.0, "mAP_50": 0.0, field_name: sm.MEAN_TOLERANCE}}
        assert sm._domain_mean_problems(on, entries) == [], field_name  # |1e-4 - 0.0| is exactly the tolerance
        over = {domain: {**on[domain], field_name: sm.MEAN_TOLERANCE * (1 + 1e-12)}}
        assert sm._domain_mean_problems(over, entries) == [
            f"rf100vl.domain_means.{domain}.{field_name} states 0.000100 but its datasets give 0.000000"]


def test_a_stated_headline_exactly_at_the_tolerance_passes() -> None:
    for field_name in sm.MEAN_CHECKED:
        doc = _doc()
        for d in doc["rf100vl"]["datasets"]:
            d.update({f: 0.0 for f in sm.MEAN_CHECKED})
        doc["accuracy"].update({f: 0.0 for f in sm.MEAN_CHECKED}, **{field_name: sm.MEAN_TOLERANCE})
        assert sm._accuracy_problems(sm._parse_submission(doc, "f.json")) == [], field_name  # exactly on: passes
        doc["accuracy"][field_name] = sm.MEAN_TOLERANCE * (1 + 1e-12)
        assert sm._accuracy_problems(sm._parse_submission(doc, "f.json")) == [
            f"accuracy.{field_name} states 0.000100 but the mean over its 100 datasets is 0.000000"]


def _stand_in_dist(site: Path, name: str, version: str) -> None:
    """An installed distribution's metadata as `importlib.metadata` finds it on sys.path (no code needed)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_the_domain_manifest_names_the_rf100vl_package_or_falls_back_to_the_catalogue(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the domains come from: the rf100vl package's category file when it is installed (a stand-in package
    with its dist-info here), our catalogue when it is not."""
    import hashlib
    import importlib
    import sys

    from bench_assets.rf100vl.datasets.catalog import data_file

    monkeypatch.setitem(sys.modules, "rf100vl", None)  # not importable, whatever this venv holds
    catalogue = hashlib.sha256(data_file("data/rf100vl_datasets.csv").read_bytes()).hexdigest()
    assert sm._domain_manifest() == {"file": "bench_assets/rf100vl/data/rf100vl_datasets.csv", "sha256": catalogue,
                                     "source": {**shape.DOMAIN_SOURCE, "commit": "unknown"}}
    monkeypatch.delitem(sys.modules, "rf100vl")
    site = tmp_path / "site"
    (site / "rf100vl" / "assets").mkdir(parents=True)
    (site / "rf100vl" / "__init__.py").write_text("")
    asset = site / "rf100vl" / "assets" / "dataset_name_to_category.json"
    asset.write_text(json.dumps({"aerial-pool": "Aerial"}))
    _stand_in_dist(site, "rf100vl", "9.8.7")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    try:
        assert sm._domain_manifest() == {
            "file": "rf100vl/assets/dataset_name_to_category.json",
            "sha256": hashlib.sha256(asset.read_bytes()).hexdigest(),
            "source": {**shape.DOMAIN_SOURCE, "commit": "rf100vl==9.8.7 (PyPI)"}}
    finally:
        sys.modules.pop("rf100vl", None)


def test_scores_of_two_recipes_state_both_hashes(tmp_path: Path) -> None:
    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=2, seed=5)
    _, score, score_file, _ = _files(home, "13-lkc01")
    first = score["prediction_inputs"]["recipe_sha256"]
    score["prediction_inputs"]["recipe_sha256"] = "0" * 64  # predicted with another recipe's checkpoint
    score_file.write_text(json.dumps(score))
    doc = sm.build_submission(home, "syna-t", now="2026-12-02T03:04:05Z",
                              tree=CLEAN_TREE)
    both = ",".join(sorted([first, "0" * 64]))
    assert doc["repro"]["recipe"]["sha256"] == doc["rf100vl"]["recipe_sha256"] == both


def test_small_helpers_at_their_edges() -> None:
    assert sm.domain_of("no-such-dataset") == sm.NOT_IN_CATALOG
    assert sm._mean([None, -1.0]) is None  # nothing defined: no mean, not an error
    rows = [_row("no-such-dataset", dataset_version=None), _row("aerial-pool", dataset_version=None)]
    # a dataset outside the catalogue has no lock entry to compare with; the next one is still judged
    assert [r.split(":")[0] for r in sm._version_reasons(rows)] == ["aerial-pool"]


def test_the_machine_blocks_name_every_package_the_first_cost_and_the_device(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Packages not installed here are written "not-installed"; stand-in dist-infos show each is looked up by its
    own name. The hardware is the first measured cost's; without costs there are no inference blocks, and a
    campaign whose runs recorded no device is on the CPU."""
    import importlib
    import platform

    site = tmp_path / "site"
    stand_ins = {"onnxruntime": "1.2.3", "onnx": "4.5.6", "tensorrt": "7.8.9"}
    for name, version in stand_ins.items():
        _stand_in_dist(site, name, version)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    scores = sm._CampaignScores()
    block = sm._machine(scores, [], "2026-12-02T03:04:05Z")
    assert {k: block["software"][k] for k in ("python", *stand_ins)} == {"python": platform.python_version(),
                                                                         **stand_ins}
    assert block["runtime"] == {"format": "pytorch", "precision": "fp32", "provider": "cpu", "device": "cpu"}
    assert block["hardware"] == shape.hardware_block({})
    assert not {"timing", "throughput", "model_stats", "memory"} & set(block)
    first = {"hardware": {"gpu": "NVIDIA A100", "cpu": "first"}}
    second = {"hardware": {"gpu": "NVIDIA H200", "cpu": "second"}}
    cost = {"total_ms": dict.fromkeys(("mean", "std", "p50", "p95", "p99"), 1.0), "num_images": 1,
            "peak_vram_mb": None, "params_millions": 1.0, "gflops": 1.0, "peak_ram_mb": 1.0}
    timed = sm._machine(scores, [{**cost, **first}, {**cost, **second}], "2026-12-02T03:04:05Z")
    assert timed["hardware"] == shape.hardware_block(first["hardware"])
    assert timed["timing"]["num_images"] == 2


def test_a_build_without_a_clock_or_tree_reads_utc_now_and_this_checkout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime as dt
    import time

    from bench_assets.platform.provenance import source_tree
    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=1, seed=5)
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # local time 9 h from UTC: the stamp must be UTC
    time.tzset()
    try:
        before = dt.datetime.now(dt.UTC).replace(microsecond=0)
        doc = sm.build_submission(home, "syna-t")
        after = dt.datetime.now(dt.UTC)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    stamp = dt.datetime.strptime(doc["created_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert before <= stamp <= after, (before, doc["created_at"], after)
    assert doc["repro"]["bench"]["source_tree"] == source_tree()


def test_a_build_states_a_registered_recipe_name_by_its_file_and_has_the_published_keys(
        tmp_path: Path) -> None:
    """A model registered with a recipe name (`--recipe smoke`, not a file) states the file that name resolves to
    for the model's family; the document has the published entry's keys plus `bench`, and starts as it does."""
    from bench_assets.rf100vl.training.recipes import RECIPES_DIR
    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=1, seed=5)
    entry_file = home / "models" / "syna-t.json"
    entry_file.write_text(json.dumps({**json.loads(entry_file.read_text()), "recipe": "smoke"}))
    doc = sm.build_submission(home, "syna-t", now="2026-12-02T03:04:05Z",
                              tree=CLEAN_TREE)
    assert doc["repro"]["recipe"]["file"] == str(RECIPES_DIR / "smoke" / "syna.json")
    assert doc["bench"]["recipe_variant"] == "smoke"
    assert sorted(doc) == sorted([*PUBLISHED, "bench"])
    assert list(doc)[:3] == list(PUBLISHED)[:3] == ["schema_version", "submission_id", "created_at"]


def test_a_build_with_no_scored_dataset_is_a_document_that_says_so(tmp_path: Path) -> None:
    import shutil

    from tests.synthetic_campaign import make_campaign

    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=2, seed=5)
    shutil.rmtree(home / "eval" / "syna-t")  # trained, never scored
    doc = sm.build_submission(home, "syna-t", now="2026-12-02T03:04:05Z",
                              tree=CLEAN_TREE)
    rf = doc["rf100vl"]
    assert rf["datasets"] == [] and len(rf["skipped_datasets"]) == 2
    assert rf["valid_submission"] is False
    assert "0 datasets scored, the leaderboard requires exactly 100" in rf["invalid_reasons"]
    assert doc["config"]["input_size"] is None  # no scored run states an image size


def test_one_line_per_cause_however_many_entries_show_it() -> None:
    """A genuine published file with five datasets' versions nulled and one metric missing: the schema's raw
    messages ("None is not of type 'integer'" once per dataset) become one sentence per cause."""
    from bench_assets.rf100vl.submission.schema import schema_problems

    doc = json.loads((Path(__file__).parent / "published" / "yolov9-t.published.json").read_text())
    for entry in doc["rf100vl"]["datasets"][:5]:
        entry["dataset_version"] = None
    doc["accuracy"]["mAP_small"] = None
    first = [f"rf100vl.datasets.{i}.dataset_version" for i in range(3)]
    assert schema_problems(doc) == [
        "accuracy.mAP_small: null where the published shape wants a number",
        "rf100vl.datasets.*.dataset_version: null where the published shape wants an integer, in 5 entries "
        f"({', '.join(first)} ...)"]
