"""Publish one model's campaign artifacts to a Hugging Face *dataset* repo, then prove they arrived.

``bench publish --model M --repo OWNER/NAME --tier results|checkpoints|all [--dry-run] [--append]``
(pure logic here, no Dagster).

Tiers (what is uploaded, per dataset the campaign covers):

* ``results``: ``submission.json`` (BENCH_HOME/submissions/<model>.json, required), each distinct recipe
  file the runs trained with, and per dataset ``stats.json`` and ``result.json`` of the current run,
  the current predictions (``predictions.json.gz`` + ``predictions.meta.json``) and the score of those
  predictions (``score.json``).
* ``checkpoints``: ``best.pt`` of each current run (the weights that were evaluated).  ``last.pt`` is
  not published: it is resume state (optimizer, EMA, scheduler), as large or larger, and it
  reproduces nothing a reader of the results needs.
* ``all``: both.

Remote layout, under ``<model>/<run_id>/`` in the repo::

    submission.json                          results
    recipes/<recipe sha256[:12]>/<file name> results
    datasets/<dataset>/stats.json            results
    datasets/<dataset>/result.json           results
    datasets/<dataset>/score.json            results
    datasets/<dataset>/predictions.json.gz   results
    datasets/<dataset>/predictions.meta.json results
    datasets/<dataset>/best.pt               checkpoints
    manifest.results.json                    results: every file of the tier with size and sha256
    manifest.checkpoints.json                checkpoints: idem

One manifest per tier (not one ``manifest.json``) because a published file is never overwritten:
publishing ``results`` and later ``--append``-ing ``checkpoints`` must not rewrite a manifest.
Manifests hold no timestamps and no local paths, so re-planning the same campaign gives identical bytes.

``run_id`` is the first 12 hex digits of the SHA-256 of the compact, sorted-key JSON
``{"model": M, "runs": {dataset: run_signature, ...}}`` over the datasets the campaign covers.  The
run signature already hashes the recipe, the dataset versions and every training setting, so the id
is the same for every tier of one trained campaign and changes whenever any dataset was retrained.
The datasets covered are those of the submission (``rf100vl.datasets[]``); without a submission
(``checkpoints`` only) every dataset with a finished run (``runs/<model>/<dataset>/CURRENT``).

Behaviour: the whole plan (local file -> remote path, size, sha256) is built before any network call
and every expected file that is missing or inconsistent locally fails the plan, named.  ``--dry-run``
prints the plan and makes no network call at all.  A ``<model>/<run_id>/`` that already holds files is
refused unless ``append``; with ``append`` files with identical content are skipped and any differing
one fails the publish before anything is uploaded.  Uploads go through ``huggingface_hub``
(``create_repo`` when the repo is missing, created private; then commits of at most
``FILES_PER_COMMIT`` files, manifests in the last one).  Verification lists ``<model>/<run_id>/`` with
``list_repo_tree(recursive=True, expand=True)`` (the client follows the ``Link`` pagination) and
compares every planned file: present, same size, same content (``lfs.sha256`` for LFS/Xet files, the
git blob sha1 for regular files).  The commit API's answer is never taken as proof.

Exit codes (:func:`publish_main`): 0 published and verified (or dry run); 1 refused or failed remotely
(already published, conflicting remote file, HTTP error, verification failure); 2 the local plan cannot
be built or nothing can be sent (missing/inconsistent local files, bad arguments, no HF_TOKEN).

Secrets: the token comes from ``HF_TOKEN`` (or the ``token`` argument); it is scrubbed from every
message, library exceptions are never chained into ours (their request keeps the Authorization
header), and it is written to no file.  Endpoint, token, hub settings and the sorting of Hub failures
come from :mod:`bench_assets.platform.hf`; this module words those failures for someone publishing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench_assets.platform import hf
from bench_assets.platform.fsutil import canonical_json_sha256, human_bytes
from bench_assets.platform.hf import AUTH_STATUSES, FailureKind, HubAccess, HubFailure
from bench_assets.rf100vl.scoring import eval_store
from bench_assets.rf100vl.training import run_store

TIERS = ("results", "checkpoints", "all")
REPO_TYPE = "dataset"
MANIFEST_FORMAT = "rf100vl-publish-manifest.v1"
FILES_PER_COMMIT = 100
RUN_ID_CHARS = 12
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_RESULTS_TIERS = ("results", "all")
_CHECKPOINT_TIERS = ("checkpoints", "all")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
# Dataset names may start with '-' or '_' (RF100-VL has "-grccs"); never '.', so no path component is '..'.
_SAFE_NAME = re.compile(r"^[\w-][\w.+-]*$")
_SUBMISSION_FIX = "build it with `bench submission build --model {model}` (or materialize rf100vl/submission)"
_TRAIN_FIX = "train it (materialize rf100vl/checkpoint for that partition)"
_EVAL_FIX = "evaluate it (materialize rf100vl/predictions and rf100vl/scores for that partition)"

T = TypeVar("T")
Log = Callable[[str], None]


class PublishError(Exception):
    """A publish that was refused or failed remotely (exit code 1)."""

    exit_code = EXIT_FAILED


class PlanError(PublishError):
    """The local side is not publishable as asked; nothing was sent (exit code 2)."""

    exit_code = EXIT_USAGE


class RemoteExistsError(PublishError):
    """``<model>/<run_id>/`` already holds files and ``append`` was not given."""


class RemoteMismatchError(PublishError):
    """Remote files differ from the plan: before upload (append conflict) or after (verification)."""

    def __init__(self, message: str, problems: Sequence[str]) -> None:
        super().__init__(message)
        self.problems = list(problems)


@dataclass(frozen=True)
class PlannedFile:
    remote: str  # full path in the repo, <model>/<run_id>/...
    size: int
    sha256: str
    git_oid: str  # git blob sha1: what the Hub reports for a regular (non-LFS) file
    tier: str  # "results" or "checkpoints"
    local: Path | None  # None for generated files (manifests)
    content: bytes | None = field(default=None, repr=False)  # generated files only

    def source(self) -> str | bytes:
        if self.content is not None:
            return self.content
        assert self.local is not None
        return str(self.local)


@dataclass(frozen=True)
class PublishPlan:
    model: str
    repo_id: str
    tier: str
    run_id: str
    runs: dict[str, str]  # dataset -> run signature
    files: tuple[PlannedFile, ...]
    notes: tuple[str, ...] = ()  # things deliberately left out, said out loud

    @property
    def prefix(self) -> str:
        return f"{self.model}/{self.run_id}"

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class PublishReport:
    plan: PublishPlan
    dry_run: bool
    uploaded: list[str] = field(default_factory=list)
    skipped_identical: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    repo_created: bool = False
    verified: bool = False


# -- hashing and local reading --------------------------------------------------------------------


def _digest_bytes(data: bytes) -> tuple[int, str, str]:
    git = hashlib.sha1(b"blob %d\0" % len(data))
    git.update(data)
    return len(data), hashlib.sha256(data).hexdigest(), git.hexdigest()


def _digest_file(path: Path) -> tuple[int, str, str]:
    """(size, sha256, git blob sha1) in one read."""
    size = path.stat().st_size
    sha, git = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size)
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
            git.update(chunk)
    return size, sha.hexdigest(), git.hexdigest()


def _read_json(path: Path, fix: str) -> dict[str, Any]:
    if not path.is_file():
        raise PlanError(f"missing {path}; {fix}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PlanError(f"unreadable {path} ({type(exc).__name__}: {exc}); {fix}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{path} is not a JSON object; {fix}")
    return doc


def _read_pointer(path: Path, fix: str) -> str:
    if not path.is_file():
        raise PlanError(f"missing {path}; {fix}")
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise PlanError(f"{path} is empty; {fix}")
    return value


def _require_file(path: Path, fix: str) -> Path:
    if not path.is_file():
        raise PlanError(f"missing {path}; {fix}")
    return path


# -- the plan ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Run:
    dataset: str
    run_dir: Path
    stats: dict[str, Any]
    stats_path: Path


def _current_runs(home: Path, model: str) -> tuple[dict[str, _Run], list[str]]:
    """Finished runs (``CURRENT`` pointers) of ``model`` by dataset, and notes on dataset dirs without one."""
    runs: dict[str, _Run] = {}
    unfinished: list[str] = []
    for ds_dir in run_store.model_partitions(home, model):
        pointer = run_store.current_pointer(home, model, ds_dir.name)
        if not pointer.is_file():
            unfinished.append(ds_dir.name)
            continue
        run_dir = ds_dir / _read_pointer(pointer, _TRAIN_FIX)
        stats_path = run_store.stats_path(run_dir)
        stats = _read_json(stats_path, f"{pointer} names a run without stats; {_TRAIN_FIX}")
        if stats.get("model") != model or stats.get("dataset") != ds_dir.name:
            raise PlanError(
                f"{stats_path} is for {stats.get('model')}/{stats.get('dataset')}, not {model}/{ds_dir.name}; "
                "the runs tree is inconsistent"
            )
        if not isinstance(stats.get("run_signature"), str) or not stats["run_signature"]:
            raise PlanError(f"{stats_path} has no run_signature; {_TRAIN_FIX}")
        runs[ds_dir.name] = _Run(ds_dir.name, run_dir, stats, stats_path)
    notes = [f"not published: {model}/{d} has no finished run (no CURRENT)" for d in unfinished]
    return runs, notes


def _submission_datasets(doc: dict[str, Any], path: Path, model: str) -> dict[str, str | None]:
    """dataset -> weights_sha256 (None when not recorded) from a va.submission.v1 document."""
    fix = _SUBMISSION_FIX.format(model=model)
    block = doc.get("rf100vl")
    entries = block.get("datasets") if isinstance(block, dict) else None
    if not isinstance(entries, list) or not entries:
        raise PlanError(f"{path} lists no rf100vl.datasets; {fix}")
    out: dict[str, str | None] = {}
    for entry in entries:
        name = entry.get("dataset") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not _SAFE_NAME.match(name):
            raise PlanError(f"{path} has an rf100vl.datasets entry without a valid 'dataset': {entry!r:.120}; {fix}")
        weights = entry.get("weights_sha256")
        out[name] = weights if isinstance(weights, str) else None
    return out


def compute_run_id(model: str, runs: dict[str, str]) -> str:
    """First 12 hex of sha256 over ``{"model": model, "runs": {dataset: run_signature}}`` (compact, sorted)."""
    return canonical_json_sha256({"model": model, "runs": runs})[:RUN_ID_CHARS]


class _Builder:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.files: list[PlannedFile] = []

    def add(self, local: Path, rel: str, tier: str) -> PlannedFile:
        size, sha, git = _digest_file(local)
        planned = PlannedFile(f"{self.prefix}/{rel}", size, sha, git, tier, local)
        if any(f.remote == planned.remote for f in self.files):
            raise PlanError(f"two local files map to {planned.remote}; the local tree is inconsistent")
        self.files.append(planned)
        return planned

    def add_manifest(self, tier: str, model: str, run_id: str, runs: dict[str, str]) -> None:
        listed = [f for f in self.files if f.tier == tier]
        doc = {
            "format": MANIFEST_FORMAT,
            "model": model,
            "run_id": run_id,
            "tier": tier,
            "runs": runs,
            "files": [
                {"path": f.remote[len(self.prefix) + 1 :], "size": f.size, "sha256": f.sha256}
                for f in sorted(listed, key=lambda f: f.remote)
            ],
        }
        content = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
        size, sha, git = _digest_bytes(content)
        self.files.append(PlannedFile(f"{self.prefix}/manifest.{tier}.json", size, sha, git, tier, None, content))


def _results_files(builder: _Builder, home: Path, model: str, run: _Run) -> None:
    ds = run.dataset
    rel = f"datasets/{ds}"
    builder.add(run.stats_path, f"{rel}/stats.json", "results")
    builder.add(_require_file(run_store.result_path(run.run_dir), _TRAIN_FIX), f"{rel}/result.json", "results")
    fp = _read_pointer(eval_store.current_predictions_pointer(home, model, ds), _EVAL_FIX)
    predictions = _require_file(eval_store.predictions_path(home, model, ds, fp), _EVAL_FIX)
    meta_path = eval_store.predictions_meta_path(home, model, ds, fp)
    meta = _read_json(meta_path, _EVAL_FIX)
    weights = (meta.get("inputs") or {}).get("weights_sha256")
    if weights is not None and weights != run.stats.get("best_checkpoint_sha256"):
        raise PlanError(
            f"{meta_path} was predicted with weights {str(weights)[:12]}, but the current run {run.run_dir} has "
            f"{str(run.stats.get('best_checkpoint_sha256'))[:12]}; predictions are stale: {_EVAL_FIX}"
        )
    score_path = _current_score(home, model, ds, fp)
    score = _read_json(score_path, _EVAL_FIX)
    pred_file = builder.add(predictions, f"{rel}/predictions.json.gz", "results")
    recorded = (score.get("inputs") or {}).get("predictions_sha256")
    if recorded is not None and recorded != pred_file.sha256:
        raise PlanError(
            f"{predictions} changed after it was scored ({score_path} recorded sha256 {str(recorded)[:12]}, "
            f"file has {pred_file.sha256[:12]}); re-score it (materialize rf100vl/scores)"
        )
    builder.add(meta_path, f"{rel}/predictions.meta.json", "results")
    builder.add(score_path, f"{rel}/score.json", "results")


def _current_score(home: Path, model: str, ds: str, predictions_fp: str) -> Path:
    """The score.json of the current predictions: CURRENT.score when written, else the only one that matches."""
    eval_dir = eval_store.eval_dir(home, model, ds)
    pointer = eval_store.current_score_pointer(home, model, ds)
    if pointer.is_file():
        path = eval_store.score_path(home, model, ds, _read_pointer(pointer, _EVAL_FIX))
        doc = _read_json(path, f"{pointer} names it; {_EVAL_FIX}")
        scored = (doc.get("inputs") or {}).get("predictions_fingerprint")
        if scored != predictions_fp:
            raise PlanError(
                f"{path} (named by {pointer}) scores predictions {str(scored)[:16]}, not the current "
                f"{predictions_fp[:16]}; {_EVAL_FIX}"
            )
        return path
    matching = []
    for path in eval_store.score_files(home, model, ds):
        doc = _read_json(path, _EVAL_FIX)
        if (doc.get("inputs") or {}).get("predictions_fingerprint") == predictions_fp:
            matching.append(path)
    if not matching:
        raise PlanError(
            f"no score.json in {eval_dir} scores the current predictions {predictions_fp[:16]}; {_EVAL_FIX}"
        )
    if len(matching) > 1:
        names = ", ".join(p.name for p in matching)
        raise PlanError(
            f"{len(matching)} score files in {eval_dir} score the current predictions ({names}) and there is no "
            f"CURRENT.score to pick one; re-materialize rf100vl/scores for that partition"
        )
    return matching[0]


def _recipe_files(builder: _Builder, runs: Iterable[_Run]) -> None:
    recipes: dict[str, tuple[Path, list[str]]] = {}
    for run in runs:
        recipe = run.stats.get("recipe") or {}
        file, sha = recipe.get("file"), recipe.get("sha256")
        if not isinstance(file, str) or not isinstance(sha, str):
            raise PlanError(f"{run.stats_path} has no recipe {{file, sha256}}; {_TRAIN_FIX}")
        recipes.setdefault(sha, (Path(file).expanduser(), []))[1].append(run.dataset)
    for sha, (path, datasets) in sorted(recipes.items()):
        used_by = f"the recipe of {', '.join(datasets[:3])}{' ...' if len(datasets) > 3 else ''}"
        if not path.is_file():
            raise PlanError(f"missing recipe file {path} ({used_by}); restore it (sha256 {sha})")
        planned = builder.add(path, f"recipes/{sha[:12]}/{path.name}", "results")
        if planned.sha256 != sha:
            raise PlanError(
                f"recipe file {path} has changed since training ({used_by} was trained with sha256 {sha[:12]}, "
                f"the file now has {planned.sha256[:12]}); restore that version to publish these results"
            )


def _checkpoint_file(builder: _Builder, run: _Run) -> None:
    raw = run.stats.get("best_checkpoint")
    expected = run.stats.get("best_checkpoint_sha256")
    if not isinstance(raw, str) or not raw:
        raise PlanError(f"{run.stats_path} names no best_checkpoint; {_TRAIN_FIX}")
    best = Path(raw) if Path(raw).is_absolute() else run.run_dir / raw
    if not best.is_file():
        raise PlanError(
            f"missing checkpoint {best} of {run.stats['model']}/{run.dataset} (named by {run.stats_path}); "
            f"restore it or retrain: {_TRAIN_FIX}"
        )
    planned = builder.add(best, f"datasets/{run.dataset}/best{best.suffix or '.pt'}", "checkpoints")
    if planned.sha256 != expected:
        raise PlanError(
            f"checkpoint {best} has sha256 {planned.sha256[:12]}, but {run.stats_path} recorded "
            f"{str(expected)[:12]}; the file changed after training: restore it or retrain"
        )


def _check_arguments(model: str, repo_id: str, tier: str) -> None:
    if tier not in TIERS:
        raise PlanError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}")
    if not _REPO_ID.match(repo_id):
        raise PlanError(f"repo id {repo_id!r} is not OWNER/NAME")
    if not _SAFE_NAME.match(model):
        raise PlanError(f"model key {model!r} is not a plain name")


def _submission_path(home: Path, model: str) -> Path:
    return home / "submissions" / f"{model}.json"


def _submission_runs(
    submission: dict[str, str | None], path: Path, home: Path, model: str, runs: dict[str, _Run]
) -> tuple[list[_Run], list[str]]:
    """The finished run of each dataset the submission lists, checked against it; notes on runs left out."""
    selected = []
    for ds, weights in submission.items():
        run = runs.get(ds)
        if run is None:
            raise PlanError(
                f"{path} lists {ds} but {run_store.current_pointer(home, model, ds)} is missing; "
                f"{_TRAIN_FIX}, or rebuild the submission"
            )
        if weights is not None and weights != run.stats.get("best_checkpoint_sha256"):
            raise PlanError(
                f"{path} is stale for {ds}: it scored weights {weights[:12]}, the current run has "
                f"{str(run.stats.get('best_checkpoint_sha256'))[:12]}; "
                + _SUBMISSION_FIX.format(model=model)
            )
        selected.append(run)
    notes = [
        f"not published: {model}/{d} has a finished run but is not in {path.name}"
        for d in sorted(set(runs) - set(submission))
    ]
    return selected, notes


def _selected_runs(home: Path, model: str, tier: str, runs: dict[str, _Run]) -> tuple[list[_Run], list[str]]:
    """The runs to publish and notes on the choice: the submission's datasets when there is a submission
    (the results tiers require one), else every finished run."""
    path = _submission_path(home, model)
    if path.is_file() or tier in _RESULTS_TIERS:
        fix = f"the {tier} tier publishes the submission; " + _SUBMISSION_FIX.format(model=model)
        submission = _submission_datasets(_read_json(path, fix), path, model)
        return _submission_runs(submission, path, home, model, runs)
    if not runs:
        raise PlanError(f"no finished runs under {run_store.runs_root(home) / model}; {_TRAIN_FIX}")
    selected = [runs[d] for d in sorted(runs)]
    return selected, [f"no {path.name}: publishing every finished run ({len(selected)})"]


def _add_tier_files(builder: _Builder, home: Path, model: str, tier: str, selected: list[_Run]) -> list[str]:
    """Adds every local file ``tier`` publishes for the selected runs; notes on what is left out by design."""
    notes = []
    if tier in _RESULTS_TIERS:
        builder.add(_submission_path(home, model), "submission.json", "results")
        _recipe_files(builder, selected)
        for run in selected:
            _results_files(builder, home, model, run)
    if tier in _CHECKPOINT_TIERS:
        for run in selected:
            _checkpoint_file(builder, run)
        notes.append("by design not published: last.pt (resume state) and training logs")
    return notes


def build_plan(home: Path, model: str, repo_id: str, tier: str) -> PublishPlan:
    """Everything ``tier`` publishes for ``model``, hashed; raises :class:`PlanError` naming what is missing."""
    _check_arguments(model, repo_id, tier)
    home = Path(home)
    runs, unfinished_notes = _current_runs(home, model)
    selected, selection_notes = _selected_runs(home, model, tier, runs)
    signatures = {run.dataset: run.stats["run_signature"] for run in selected}
    run_id = compute_run_id(model, signatures)
    builder = _Builder(f"{model}/{run_id}")
    tier_notes = _add_tier_files(builder, home, model, tier, selected)
    for part in ("results", "checkpoints"):
        if tier in (part, "all"):
            builder.add_manifest(part, model, run_id, signatures)
    notes = unfinished_notes + selection_notes + tier_notes
    return PublishPlan(model, repo_id, tier, run_id, signatures, tuple(builder.files), tuple(notes))


def format_plan(plan: PublishPlan) -> list[str]:
    lines = [
        f"publish plan: {plan.model} tier {plan.tier}: {len(plan.files)} files, {plan.total_bytes} bytes "
        f"({human_bytes(plan.total_bytes)}), {len(plan.runs)} datasets -> "
        f"hf://datasets/{plan.repo_id}/{plan.prefix}/"
    ]
    width = max((len(str(f.size)) for f in plan.files), default=1)
    for f in plan.files:
        origin = str(f.local) if f.local is not None else "(generated)"
        lines.append(f"  {f.size:>{width}}  {f.sha256[:12]}  {f.remote[len(plan.prefix) + 1 :]}  <- {origin}")
    lines += [f"  note: {n}" for n in plan.notes]
    return lines


# -- the remote side --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Destination:
    """The dataset repo a publish writes to, and how to reach it."""

    access: HubAccess
    repo_id: str

    @property
    def endpoint(self) -> str:
        return self.access.endpoint


def _failure_message(failure: HubFailure, dest: _Destination, action: str) -> str:
    """One actionable message for a failed ``action`` (a phrase such as "listing hf://...")."""
    where = f"dataset repo {dest.repo_id} at {dest.endpoint}"
    if failure.kind is FailureKind.TIMEOUT:
        return f"{action}: {dest.endpoint} did not answer in time; check the network and retry with --append"
    if failure.kind is FailureKind.UNREACHABLE:
        return f"{action}: cannot reach {dest.endpoint} ({failure.detail}); check the network and HF_ENDPOINT"
    if failure.status in AUTH_STATUSES:
        return (
            f"{action}: HTTP {failure.status} from {where}: the token in HF_TOKEN was rejected or lacks write "
            "access; set HF_TOKEN to a write token for that namespace"
        )
    if failure.status is not None:
        return f"{action}: HTTP {failure.status} from {where}: {failure.detail}"
    return f"{action} on {where} failed: {failure.detail}"


def _guarded(call: Callable[[], T], dest: _Destination, action: str) -> T:
    """``call()``, its failure raised as a :class:`PublishError` worded for ``action``."""
    return hf.guarded(call, dest.access, lambda failure: _failure_message(failure, dest, action), PublishError)


def _list_remote(api: Any, dest: _Destination, prefix: str, action: str) -> dict[str, Any] | None:
    """Files under ``prefix`` (path -> RepoFile), every page followed; {} when absent; None when no repo."""
    return _guarded(lambda: hf.list_files_under(api, dest.repo_id, prefix, repo_type=REPO_TYPE), dest, action)


def _difference(planned: PlannedFile, remote: Any) -> str | None:
    """Why ``remote`` (a RepoFile or None) is not ``planned``; None when identical."""
    if remote is None:
        return "missing"
    if remote.size != planned.size:
        return f"size {remote.size} != local {planned.size}"
    if remote.lfs is not None:
        if remote.lfs.sha256 != planned.sha256:
            return f"lfs sha256 {remote.lfs.sha256[:12]} != local {planned.sha256[:12]}"
    elif remote.blob_id != planned.git_oid:
        return f"git blob {str(remote.blob_id)[:12]} != local {planned.git_oid[:12]}"
    return None


def _commit_batches(files: list[PlannedFile]) -> list[list[PlannedFile]]:
    data = [f for f in files if f.content is None]
    manifests = [f for f in files if f.content is not None]
    batches = [data[i : i + FILES_PER_COMMIT] for i in range(0, len(data), FILES_PER_COMMIT)]
    # Manifests go last, so their presence means everything they list was committed before.
    if batches and len(batches[-1]) + len(manifests) <= FILES_PER_COMMIT:
        batches[-1] += manifests
    elif manifests:
        batches.append(manifests)
    return batches


def publish_model(
    home: Path,
    model: str,
    repo_id: str,
    tier: str,
    *,
    dry_run: bool = False,
    append: bool = False,
    endpoint: str | None = None,
    token: str | None = None,
    log: Log = print,
    private: bool = True,
) -> PublishReport:
    """Plan, upload and verify one model's artifacts; raises :class:`PublishError` (see module doc).

    ``token`` defaults to ``HF_TOKEN``; ``endpoint`` to ``HF_ENDPOINT`` read now, else the Hub.
    ``private`` only applies when the repo has to be created.
    """
    plan = build_plan(home, model, repo_id, tier)
    for line in format_plan(plan):
        log(line)
    report = PublishReport(plan=plan, dry_run=dry_run)
    if dry_run:
        log("dry run: nothing uploaded, no network call made")
        return report
    access = HubAccess.from_env(endpoint, token)
    if access.token is None:
        raise PlanError(f"publishing to {repo_id} needs a write token: set HF_TOKEN")
    _publish(plan, report, _Destination(access, repo_id), append, private, log)
    return report


def _remote_url(plan: PublishPlan) -> str:
    return f"hf://datasets/{plan.repo_id}/{plan.prefix}/"


def _publish(
    plan: PublishPlan, report: PublishReport, dest: _Destination, append: bool, private: bool, log: Log
) -> None:
    hf.configure_hub()
    api = dest.access.api()
    remote = _remote_files(api, dest, plan, report, private, log)
    to_upload = _files_to_upload(plan, remote, append, report, log)
    _upload(api, dest, plan, to_upload, report, log)
    _verify(api, dest, plan, _remote_url(plan), log)
    report.verified = True


def _remote_files(
    api: Any, dest: _Destination, plan: PublishPlan, report: PublishReport, private: bool, log: Log
) -> dict[str, Any]:
    """The files already under the plan's prefix; creates the repo when there is none."""
    remote = _list_remote(api, dest, plan.prefix, f"listing {_remote_url(plan)}")
    if remote is not None:
        return remote
    created = _guarded(
        lambda: hf.create_repo_unless_exists(api, plan.repo_id, repo_type=REPO_TYPE, private=private),
        dest,
        f"creating dataset repo {plan.repo_id}",
    )
    if not created:
        raise PublishError(
            f"dataset repo {plan.repo_id} exists at {dest.endpoint} but answered 'not found' to a listing: the "
            "token in HF_TOKEN cannot read it; set HF_TOKEN to a token with write access to that repo"
        )
    report.repo_created = True
    log(f"created dataset repo {plan.repo_id} ({'private' if private else 'public'})")
    return {}


def _files_to_upload(
    plan: PublishPlan, remote: dict[str, Any], append: bool, report: PublishReport, log: Log
) -> list[PlannedFile]:
    """Planned files not yet in ``remote``; identical ones are skipped, differing ones fail before any upload."""
    where = _remote_url(plan)
    if remote and not append:
        raise RemoteExistsError(
            f"{where} already exists ({len(remote)} files); refusing to publish over it. Pass --append to add "
            "what is missing (identical files are skipped, differing ones fail), or publish to another repo"
        )
    to_upload: list[PlannedFile] = []
    conflicts: list[str] = []
    for planned in plan.files:
        entry = remote.get(planned.remote)
        if entry is None:
            to_upload.append(planned)
        elif (why := _difference(planned, entry)) is None:
            report.skipped_identical.append(planned.remote)
        else:
            conflicts.append(f"{planned.remote}: {why}")
    if conflicts:
        raise RemoteMismatchError(
            f"{len(conflicts)} file(s) under {where} differ from the local ones; nothing uploaded, nothing "
            "overwritten:\n  " + "\n  ".join(conflicts),
            conflicts,
        )
    others = sorted(set(remote) - {f.remote for f in plan.files})
    if others:
        log(f"{len(others)} other file(s) under {where} are not in this plan and stay as they are")
    if report.skipped_identical:
        log(f"{len(report.skipped_identical)} file(s) already published with identical content: skipped")
    return to_upload


def _upload(
    api: Any, dest: _Destination, plan: PublishPlan, files: list[PlannedFile], report: PublishReport, log: Log
) -> None:
    """Commits ``files`` in batches (manifests last), recording each commit in ``report``."""
    batches = _commit_batches(files)
    for number, batch in enumerate(batches, 1):
        part = f"{number}/{len(batches)}"
        log(f"commit {part}: {len(batch)} files, {human_bytes(sum(f.size for f in batch))}")
        report.commits.append(_commit_batch(api, dest, plan, batch, part))
        report.uploaded += [f.remote for f in batch]
    if not batches:
        log("nothing to upload")


def _commit_batch(api: Any, dest: _Destination, plan: PublishPlan, batch: list[PlannedFile], part: str) -> str:
    """One commit of ``batch``; returns its commit id ("" when the client reports none)."""
    from huggingface_hub import CommitOperationAdd

    operations = [CommitOperationAdd(path_in_repo=f.remote, path_or_fileobj=f.source()) for f in batch]
    info = _guarded(
        lambda: api.create_commit(
            plan.repo_id,
            operations,
            commit_message=f"publish {plan.prefix} ({plan.tier}, part {part})",
            repo_type=REPO_TYPE,
        ),
        dest,
        f"uploading commit {part} to {_remote_url(plan)} (re-run with --append to resume)",
    )
    return str(getattr(info, "oid", ""))


def _verify(api: Any, dest: _Destination, plan: PublishPlan, where: str, log: Log) -> None:
    """Proof from the repo listing that every planned file arrived intact; raises RemoteMismatchError if not."""
    remote = _list_remote(api, dest, plan.prefix, f"verifying {where}") or {}
    problems = [
        f"{f.remote}: {why}" for f in plan.files if (why := _difference(f, remote.get(f.remote))) is not None
    ]
    if problems:
        raise RemoteMismatchError(
            f"verification of {where} FAILED: {len(problems)} of {len(plan.files)} planned file(s) are missing or "
            "differ in the repo listing (the upload reported success):\n  " + "\n  ".join(problems)
            + "\nre-run with --append to upload the missing ones; a differing file must be deleted on the Hub first",
            problems,
        )
    log(
        f"verified: all {len(plan.files)} planned files present in {where} with matching size and hash "
        f"({human_bytes(plan.total_bytes)}, from the repo listing)"
    )


def publish_main(
    home: Path,
    model: str,
    repo_id: str,
    tier: str,
    *,
    dry_run: bool = False,
    append: bool = False,
    endpoint: str | None = None,
    log: Log = print,
) -> int:
    """CLI wrapper: runs :func:`publish_model`, logs a failure's message, returns the exit code (0/1/2)."""
    try:
        publish_model(home, model, repo_id, tier, dry_run=dry_run, append=append, endpoint=endpoint, log=log)
    except PublishError as exc:
        log(f"publish failed: {exc}")
        return exc.exit_code
    return EXIT_OK
