"""bench publish against the loopback Hub stand-in, through the real huggingface_hub client."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_assets.rf100vl.submission.publish import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PlanError,
    PublishError,
    RemoteExistsError,
    RemoteMismatchError,
    build_plan,
    compute_run_id,
    publish_main,
    publish_model,
)
from tests.hf_standin import DEFAULT_REPO_ID, HubStandIn, hf_standin, isolate_hub_env

FAKE_TOKEN = "hf_FAKE-publish-token-do-not-leak-0123456789"
MODEL = "yolo9-t"
DATASETS = ("ds-a", "ds-b", "ds-c")


@pytest.fixture(autouse=True)
def _isolated_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from huggingface_hub import close_session

    isolate_hub_env(monkeypatch, tmp_path / "hf_home")
    yield
    close_session()


def _write_json(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_bench_home(root: Path, model: str = MODEL, datasets: tuple[str, ...] = DATASETS) -> Path:
    """A small BENCH_HOME with finished runs, current predictions and scores, and a submission for ``model``.

    The first dataset has no CURRENT.score pointer (the score is found by its predictions fingerprint);
    each run dir also holds last.pt and a log, which no tier publishes.
    """
    home = root / "bench_home"
    recipe = home / "recipes" / "yolo9.json"
    _write_json(recipe, {"protocol": {"epochs": 100, "effective_batch": 16}, "sizes": {"t": {"imgsz": 640}}})
    recipe_sha = _sha256(recipe)
    rows = []
    for i, ds in enumerate(datasets):
        signature = hashlib.sha256(f"{model}/{ds}/sig".encode()).hexdigest()
        run_dir = home / "runs" / model / ds / signature[:16]
        run_dir.mkdir(parents=True)
        best = run_dir / "best.pt"
        best.write_bytes(os.urandom(3000 + i))
        (run_dir / "last.pt").write_bytes(os.urandom(4000))
        (run_dir / "train.log").write_text("epoch 1 ...\n")
        stats = {
            "dataset": ds, "dataset_version": "1", "model": model, "run_signature": signature,
            "recipe": {"file": str(recipe), "sha256": recipe_sha, "conformant": True},
            "best_checkpoint": str(best), "best_checkpoint_sha256": _sha256(best),
            "valid_mAP50_95": 0.4 + i / 100,
        }
        _write_json(run_dir / "stats.json", stats)
        _write_json(run_dir / "result.json", {"status": "done", "epochs": [{"epoch": 1, "valid_mAP50_95": 0.4}]})
        (run_dir.parent / "CURRENT").write_text(run_dir.name + "\n")

        eval_dir = home / "eval" / model / ds
        eval_dir.mkdir(parents=True)
        pred_fp = hashlib.sha256(f"pred/{ds}".encode()).hexdigest()
        predictions = eval_dir / f"{pred_fp[:16]}.predictions.json.gz"
        predictions.write_bytes(gzip.compress(json.dumps([{"image_id": 1, "score": 0.5 + i}]).encode(), mtime=0))
        _write_json(
            eval_dir / f"{pred_fp[:16]}.predictions.meta.json",
            {"fingerprint": pred_fp, "inputs": {"weights_sha256": stats["best_checkpoint_sha256"]}, "result": {}},
        )
        (eval_dir / "CURRENT.predictions").write_text(pred_fp + "\n")
        score_fp = hashlib.sha256(f"score/{ds}".encode()).hexdigest()
        _write_json(
            eval_dir / f"{score_fp[:16]}.score.json",
            {
                "fingerprint": score_fp, "metrics": {"mAP50_95": 0.41 + i / 100},
                "inputs": {"predictions_fingerprint": pred_fp, "predictions_sha256": _sha256(predictions)},
            },
        )
        # An older score of other predictions lies beside it and must not be picked up.
        _write_json(eval_dir / "0123456789abcdef.score.json", {"inputs": {"predictions_fingerprint": "0" * 64}})
        if i > 0:
            (eval_dir / "CURRENT.score").write_text(score_fp)
        rows.append({"dataset": ds, "weights_sha256": stats["best_checkpoint_sha256"], "mAP_50_95": 0.41})
    _write_json(
        home / "submissions" / f"{model}.json",
        {"rf100vl": {"datasets": rows, "recipe_sha256": recipe_sha, "valid_submission": False}},
    )
    return home


def _full_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


def _writes(hub: HubStandIn) -> list[str]:
    return [r.path for r in hub.requests if r.method in ("POST", "PUT")]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_bench_home(tmp_path)


def _publish(home: Path, hub: HubStandIn, tier: str = "all", **kwargs: object):
    lines: list[str] = []
    report = publish_model(home, MODEL, DEFAULT_REPO_ID, tier, endpoint=hub.endpoint, log=lines.append, **kwargs)
    return report, lines


def test_plan_lists_exactly_the_tier(home: Path) -> None:
    plan = build_plan(home, MODEL, DEFAULT_REPO_ID, "all")
    rel = sorted(f.remote[len(plan.prefix) + 1 :] for f in plan.files)
    per_dataset = ["best.pt", "predictions.json.gz", "predictions.meta.json", "result.json", "score.json",
                   "stats.json"]
    expected = sorted(
        ["submission.json", "manifest.results.json", "manifest.checkpoints.json"]
        + [f"recipes/{plan.files[1].sha256[:12]}/yolo9.json"]
        + [f"datasets/{ds}/{name}" for ds in DATASETS for name in per_dataset]
    )
    assert rel == expected
    signatures = {ds: hashlib.sha256(f"{MODEL}/{ds}/sig".encode()).hexdigest() for ds in DATASETS}
    assert plan.run_id == compute_run_id(MODEL, signatures) and len(plan.run_id) == 12
    # The same campaign has the same run id whatever the tier.
    assert build_plan(home, MODEL, DEFAULT_REPO_ID, "checkpoints").run_id == plan.run_id
    # The current score was picked for ds-a without a CURRENT.score pointer.
    score = next(f for f in plan.files if f.remote.endswith("ds-a/score.json"))
    assert score.local is not None and not score.local.name.startswith("0123456789abcdef")
    manifest = json.loads(next(f for f in plan.files if f.remote.endswith("manifest.checkpoints.json")).content or b"")
    assert [e["path"] for e in manifest["files"]] == [f"datasets/{ds}/best.pt" for ds in DATASETS]
    assert str(home) not in json.dumps(manifest)  # no local paths in published metadata


def test_dry_run_uploads_nothing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False) as hub:
        report, lines = _publish(home, hub, dry_run=True)
        lines_main: list[str] = []
        code = publish_main(home, MODEL, DEFAULT_REPO_ID, "results", dry_run=True, endpoint=hub.endpoint,
                            log=lines_main.append)
    assert code == EXIT_OK and report.dry_run and not report.uploaded and not report.verified
    assert hub.requests == [] and not hub.exists
    assert lines[0].startswith(f"publish plan: {MODEL} tier all: {len(report.plan.files)} files, ")
    assert f"{report.plan.total_bytes} bytes" in lines[0]
    assert any("datasets/ds-b/best.pt  <- " in line for line in lines)
    assert lines[-1].startswith("dry run: nothing uploaded")
    assert FAKE_TOKEN not in "\n".join(lines + lines_main)


def test_publish_creates_repo_uploads_and_verifies_with_pagination(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN, page_size=4) as hub:
        report, lines = _publish(home, hub)
        stored = hub.file_bytes()
        lfs = {p for p, b in hub.files.items() if b.lfs}
        commit_posts = hub.requests_for("/commit/main", "POST")
        last_commit = max(i for i, r in enumerate(hub.requests) if r.method == "POST" and "/commit/" in r.path)
        verify_pages = [r for r in hub.requests[last_commit:] if "/tree/main/" in r.path]
    plan = report.plan
    assert report.repo_created and report.verified and len(report.commits) == len(commit_posts) == 1
    assert sorted(report.uploaded) == sorted(f.remote for f in plan.files)
    for f in plan.files:
        assert stored[f.remote] == (f.content if f.local is None else f.local.read_bytes())
    # Checkpoints and predictions took the LFS path, the JSON files went inline.
    assert {f.remote for f in plan.files if f.remote.endswith((".pt", ".gz"))} <= lfs
    assert not any(p.endswith(".json") for p in lfs)
    # expand=true listings are paged (page size 4): the verification followed every Link.
    assert len(verify_pages) >= 2 and any("cursor=" in r.path for r in verify_pages)
    assert all("expand=true" in r.path.lower() and "recursive=true" in r.path.lower() for r in verify_pages)
    # Every API call carried the token; the storage PUTs (presigned-style URLs) did not.
    puts = hub.requests_for("/lfs-objects/", "PUT")
    assert len(puts) == 2 * len(DATASETS) and not any(r.authorized for r in puts)
    assert all(r.authorized for r in hub.requests if "/lfs-objects/" not in r.path)
    assert lines[-1].startswith(f"verified: all {len(plan.files)} planned files present")
    assert FAKE_TOKEN not in "\n".join(lines)
    assert not any(FAKE_TOKEN.encode() in data for data in stored.values())


def test_second_publish_refused_and_append_uploads_nothing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN, page_size=7) as hub:
        first, _ = _publish(home, hub)
        writes_before = len(_writes(hub))
        with pytest.raises(RemoteExistsError) as info:
            _publish(home, hub)
        lines: list[str] = []
        code = publish_main(home, MODEL, DEFAULT_REPO_ID, "all", endpoint=hub.endpoint, log=lines.append)
        refused_writes = len(_writes(hub))
        again, again_lines = _publish(home, hub, append=True)
        writes_after = len(_writes(hub))
    message = str(info.value)
    assert f"hf://datasets/{DEFAULT_REPO_ID}/{first.plan.prefix}/ already exists" in message
    assert "--append" in message
    assert code == EXIT_FAILED and "already exists" in lines[-1]
    assert refused_writes == writes_before  # refused before any upload
    assert again.verified and again.uploaded == [] and again.commits == []
    assert sorted(again.skipped_identical) == sorted(f.remote for f in first.plan.files)
    assert writes_after == writes_before
    assert "nothing to upload" in again_lines


def test_append_other_tier_and_conflicting_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN, page_size=5) as hub:
        results, _ = _publish(home, hub, tier="results")
        checkpoints, lines = _publish(home, hub, tier="checkpoints", append=True)
        assert checkpoints.plan.run_id == results.plan.run_id
        assert sorted(checkpoints.uploaded) == sorted(f.remote for f in checkpoints.plan.files)
        assert any("other file(s)" in line and "stay as they are" in line for line in lines)
        # A local file that differs from the published one fails loudly; nothing is overwritten.
        result_json = home / "runs" / MODEL / "ds-b"
        result_json = result_json / (result_json / "CURRENT").read_text().strip() / "result.json"
        result_json.write_bytes(result_json.read_bytes().replace(b"done", b"DONE"))  # same size, other bytes
        writes = len(_writes(hub))
        with pytest.raises(RemoteMismatchError) as info:
            _publish(home, hub, tier="all", append=True)
        assert len(_writes(hub)) == writes
    remote = f"{results.plan.prefix}/datasets/ds-b/result.json"
    assert f"{remote}: git blob" in str(info.value) and "nothing overwritten" in str(info.value)
    assert f"{results.plan.prefix}/manifest.results.json" in str(info.value)


def test_dropped_file_fails_verification(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN, page_size=6) as hub:
        hub.drop_globs = ("*/datasets/ds-b/score.json",)
        with pytest.raises(RemoteMismatchError) as info:
            _publish(home, hub)
        lines: list[str] = []
        code = publish_main(home, MODEL, DEFAULT_REPO_ID, "all", append=True, endpoint=hub.endpoint,
                            log=lines.append)
    run_id = build_plan(home, MODEL, DEFAULT_REPO_ID, "all").run_id
    dropped = f"{MODEL}/{run_id}/datasets/ds-b/score.json"
    assert info.value.problems == [f"{dropped}: missing"]
    assert "verification of" in str(info.value) and "FAILED" in str(info.value)
    # The re-run with --append uploads it again, and the stand-in drops it again: still loud.
    assert code == EXIT_FAILED and dropped in lines[-1]


def test_corrupted_files_fail_verification_naming_each(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN, page_size=6) as hub:
        hub.corrupt_globs = ("*/datasets/ds-a/best.pt", "*/datasets/ds-c/stats.json")
        with pytest.raises(RemoteMismatchError) as info:
            _publish(home, hub)
    prefix = f"{MODEL}/{build_plan(home, MODEL, DEFAULT_REPO_ID, 'all').run_id}"
    problems = sorted(info.value.problems)
    assert len(problems) == 2
    assert problems[0].startswith(f"{prefix}/datasets/ds-a/best.pt: lfs sha256 ")
    assert problems[1].startswith(f"{prefix}/datasets/ds-c/stats.json: git blob ")
    assert all(p in str(info.value) for p in problems)


def _current_run_dir(home: Path, ds: str) -> Path:
    pointer = home / "runs" / MODEL / ds / "CURRENT"
    return pointer.parent / pointer.read_text().strip()


@pytest.mark.parametrize(
    ("tier", "break_it", "expected"),
    [
        ("checkpoints", lambda h: (_current_run_dir(h, "ds-b") / "best.pt").unlink(), "missing checkpoint"),
        ("all", lambda h: (_current_run_dir(h, "ds-c") / "result.json").unlink(), "result.json; train it"),
        ("results", lambda h: (h / "submissions" / f"{MODEL}.json").unlink(), "bench submission build"),
        (
            "results",
            lambda h: [p.unlink() for p in (h / "eval" / MODEL / "ds-a").glob("*.predictions.json.gz")],
            "predictions.json.gz; evaluate it",
        ),
        ("checkpoints", lambda h: (_current_run_dir(h, "ds-a") / "best.pt").write_bytes(b"x"), "changed after"),
        ("all", lambda h: (h / "recipes" / "yolo9.json").write_text("{}"), "has changed since training"),
    ],
)
def test_local_problem_fails_before_any_request(
    home: Path, monkeypatch: pytest.MonkeyPatch, tier: str, break_it, expected: str
) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    break_it(home)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN) as hub:
        with pytest.raises(PlanError, match=expected) as info:
            _publish(home, hub, tier=tier)
        lines: list[str] = []
        code = publish_main(home, MODEL, DEFAULT_REPO_ID, tier, endpoint=hub.endpoint, log=lines.append)
    assert hub.requests == []
    assert code == EXIT_USAGE and expected in lines[-1]
    if "checkpoint" in expected:
        assert "best.pt" in str(info.value)


def test_checkpoints_without_submission_use_every_finished_run(home: Path) -> None:
    (home / "submissions" / f"{MODEL}.json").unlink()
    (home / "runs" / MODEL / "ds-d").mkdir()  # started, never finished
    plan = build_plan(home, MODEL, DEFAULT_REPO_ID, "checkpoints")
    assert sorted(plan.runs) == list(DATASETS)
    assert any("ds-d has no finished run" in n for n in plan.notes)
    assert any("last.pt" in n for n in plan.notes)


def test_token_never_leaks(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(required_token="hf_theRealOne") as hub:
        with pytest.raises(PublishError) as info:
            _publish(home, hub)
    text = _full_text(info.value)
    assert "HF_TOKEN" in str(info.value) and "401" in str(info.value)
    assert FAKE_TOKEN not in text
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert hub.requests and all(r.authorized for r in hub.requests)
    assert not _writes(hub) or all(w == "/api/repos/create" for w in _writes(hub))


def test_missing_token_fails_before_any_request(home: Path) -> None:
    with hf_standin(repo_exists=False) as hub:
        lines: list[str] = []
        code = publish_main(home, MODEL, DEFAULT_REPO_ID, "all", endpoint=hub.endpoint, log=lines.append)
    assert code == EXIT_USAGE and "set HF_TOKEN" in lines[-1] and hub.requests == []


def test_repo_that_cannot_be_created_fails_clearly(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    with hf_standin(repo_exists=False, required_token=FAKE_TOKEN) as hub:
        with pytest.raises(PublishError, match="creating dataset repo org/elsewhere: HTTP 403") as info:
            publish_model(home, MODEL, "org/elsewhere", "checkpoints", endpoint=hub.endpoint, log=lambda _: None)
    assert "HF_TOKEN" in str(info.value) and FAKE_TOKEN not in _full_text(info.value)
    assert not any("/commit/" in w or "lfs" in w for w in _writes(hub))
