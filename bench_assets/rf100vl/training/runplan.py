"""Pure decisions about one training run: model key, run variant, batches, the run signature,
and whether an existing run directory is finished, resumable or must start fresh."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench_assets.platform.fsutil import canonical_json_sha256, sha256_file
from bench_assets.rf100vl.training.recipes import LoadedRecipe
from bench_assets.rf100vl.training.run_store import last_weights, stats_path, status_path

# family-size; a replicate, the same model trained again, is family-size@seedN (N >= 1: another seed) or
# family-size@resume (the pilot's kill-and-resume check: the model's own seed, interrupted once and resumed).
MODEL_RE = re.compile(r"^(?P<family>[a-z][a-z0-9_]*)-(?P<size>[a-z0-9]+)"
                      r"(?:@(?:seed(?P<seed>[1-9][0-9]{0,5})|(?P<resume>resume)))?$")
RESUME_SUFFIX = "@resume"
Variant = Literal["standard", "oom_fallback", "dense_fallback"]
AMP_DTYPES = {"fp32": None, "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class ModelKey:
    family: str
    size: str
    seed: int | None = None  # a replicate's seed; None: the model itself (the recipe's seed, 0)
    resume_check: bool = False  # family-size@resume: the model's own seed, interrupted once and resumed

    @property
    def key(self) -> str:
        if self.resume_check:
            return self.base + RESUME_SUFFIX
        return self.base + (f"@seed{self.seed}" if self.seed is not None else "")

    @property
    def base(self) -> str:
        """The model a replicate repeats (the key itself for a model): its weights, recipe and leaderboard row."""
        return f"{self.family}-{self.size}"


def parse_model(key: str) -> ModelKey:
    m = MODEL_RE.match(key)
    if not m:
        raise ValueError(f"model key {key!r} is not family-size (e.g. yolo9-t, yolox-n, dfine-n) or a replicate "
                         f"family-size@seedN (e.g. yolo9-t@seed1) or family-size@resume")
    return ModelKey(m["family"], m["size"], int(m["seed"]) if m["seed"] else None, bool(m["resume"]))


def replicate_key(model: str, seed: int) -> str:
    """The model key of `model`'s replicate trained with `seed` (>= 1; seed 0 is the model itself)."""
    base = parse_model(model)
    if base.key != base.base:
        raise ValueError(f"{model!r} is already a replicate; name the model itself")
    if seed < 1:
        raise ValueError("a replicate's seed is >= 1 (seed 0 is the model itself)")
    return ModelKey(base.family, base.size, seed).key


def resume_check_key(model: str) -> str:
    """The key of `model`'s kill-and-resume check (the pilot gate's replicate)."""
    base = parse_model(model)
    if base.key != base.base:
        raise ValueError(f"{model!r} is already a replicate; name the model itself")
    return ModelKey(base.family, base.size, resume_check=True).key


@dataclass(frozen=True)
class RunVariant:
    name: Variant
    physical_batch: int
    effective_batch: int

    @property
    def accumulation(self) -> int:
        return self.effective_batch // self.physical_batch


def variant_sequence(recipe: LoadedRecipe, size: str, max_annotations_per_image: int) -> list[RunVariant]:
    """The variants to try in order: dense datasets start in the fallback directly; others get the
    standard batch first and the OOM fallback after a CUDA out-of-memory."""
    r = recipe.recipe
    eff = r.protocol.effective_batch
    s = r.size(size, recipe.path)
    if max_annotations_per_image >= r.dense_oom_fallback.max_annotations_per_image_threshold:
        return [RunVariant("dense_fallback", r.dense_oom_fallback.physical_batch, eff)]
    return [RunVariant("standard", s.physical_batch, eff), RunVariant("oom_fallback", s.fallback_physical_batch, eff)]


def effective_precision(recipe_precision: str, device: str) -> str:
    """Mixed precision runs on CUDA only; a CPU lane trains in fp32 whatever the recipe says."""
    return recipe_precision if device != "cpu" else "fp32"


def signature_fields(*, model: ModelKey, recipe: LoadedRecipe, dataset: str, dataset_version: str,
                     dataset_lock_sha256: str, train_annotations_sha256: str, variant: RunVariant,
                     epochs: int, imgsz: int, precision: str, max_det: int, eval_max_det: int) -> dict[str, Any]:
    return {
        "protocol_version": recipe.recipe.protocol.version,
        "model": model.key,
        "recipe_sha256": recipe.sha256,
        "dataset_versions_sha256": dataset_lock_sha256,
        "dataset": dataset,
        "dataset_version": dataset_version,
        "train_annotations_sha256": train_annotations_sha256,
        "run_variant": variant.name,
        "physical_batch": variant.physical_batch,
        "effective_batch": variant.effective_batch,
        "epochs": epochs,
        "imgsz": imgsz,
        "precision": {"amp": precision != "fp32", "amp_dtype": AMP_DTYPES[precision]},
        "evaluation": {"max_det": max_det, "eval_max_det": eval_max_det},
    }


def run_signature(fields: dict[str, Any]) -> str:
    """SHA-256 of sorted-key compact JSON: the identity of a run; resume only within one signature."""
    return canonical_json_sha256(fields)


RunState = Literal["new", "resumable", "done", "oom", "corrupt"]


def run_state(run_dir: Path, signature: str) -> RunState:
    """What an existing run directory holds. `done` only when status, stats and checkpoint all agree;
    a stale `running` (the step died) with a readable last.pt is resumable."""
    status_file = status_path(run_dir)
    if not status_file.exists():
        return "resumable" if last_weights(run_dir).exists() else "new"
    status = json.loads(status_file.read_text())
    if status.get("signature") != signature:
        raise ValueError(f"{status_file}: signature {status.get('signature')} != directory's {signature}")
    state = status.get("state")
    if state == "done":
        stats_file = stats_path(run_dir)
        if stats_file.exists():
            stats = json.loads(stats_file.read_text())
            best = Path(stats.get("best_checkpoint") or "")
            if (stats.get("run_signature") == signature and best.is_file()
                    and sha256_file(best) == stats.get("best_checkpoint_sha256")):
                return "done"
            return "corrupt"  # finished once, but its checkpoint is gone or changed: never trust it
        return "resumable" if last_weights(run_dir).exists() else "new"
    if state == "oom":
        return "oom"  # this variant cannot fit: the caller moves on to the fallback
    # failed, timed out or a stale "running" (the step died): continue from last.pt when there is one
    return "resumable" if last_weights(run_dir).exists() else "new"
