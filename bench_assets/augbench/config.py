"""The run config: the single source of truth for one augbench row family's shape.

A YAML file in `configs/paper/` (or a smoke config) is validated into `RunConfig`; CLI overrides
(`--num-items`, `--num-runs`, `--device`, `--workers`, `--batch-size`) go through the same model, so an
override can never produce a shape the file could not. Errors name the file and the field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Media = Literal["rgb", "9ch", "video"]
Library = Literal["albumentationsx", "torchvision", "kornia", "pillow", "dali"]
DEFAULT_BATCH = {"rgb": 256, "9ch": 128, "video": 8}
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class ConfigError(ValueError):
    """A config cannot be used; the message names the file, the field and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ThreadPolicy(_Strict):
    omp: int = Field(1, ge=1)  # OMP/MKL/OPENBLAS_NUM_THREADS
    opencv: int = Field(0, ge=0)  # cv2.setNumThreads (0 = OpenCV runs single-threaded, no pool)
    torch: int = Field(1, ge=1)  # torch.set_num_threads


class MediaSource(_Strict):
    kind: Literal["embedded", "imagenet", "ucf101"] = "embedded"
    path: str | None = None  # tarball or directory of the real paper media
    seed: int = Field(0, ge=0)  # deterministic item selection
    # None (default): the paper media's native sizes (embedded: an ImageNet-like size mix, 320x240 clips;
    # staged: each file's own size); an int: square item_size x item_size items instead (an explicit override)
    item_size: int | None = Field(None, ge=32)


class Preflight(_Strict):
    items: int = Field(10, ge=1)
    min_items_per_s: float = Field(20.0, gt=0)  # at or below: early_stopped with the preflight throughput
    max_seconds: float = Field(60.0, gt=0)


class RunConfig(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    media: Media
    mode: Literal["micro", "dataloader"]
    device: Literal["cpu", "cuda"] = "cpu"
    libraries: list[Library] = Field(min_length=1)
    transforms: Literal["paper"] | list[str] = "paper"
    num_items: int = Field(gt=0)
    num_runs: int = Field(5, gt=0)
    warmup: int = Field(1, ge=0)
    batch_size: int | None = Field(None, gt=0)
    workers: int = Field(0, ge=0)
    threads: ThreadPolicy = ThreadPolicy()
    media_source: MediaSource = MediaSource()
    preflight: Preflight | None = None  # default per media: 10 items at 20 items/s; video 3 clips at 2 s/clip
    clip_frames: int = Field(16, gt=0)
    # How torchvision and Kornia receive their items. "contiguous" (the benchmark's rule): contiguous CHW
    # tensors, converted once outside the timer. "decoder": CHW views with the channels-last strides
    # `torchvision.io.decode_jpeg`/`read_image` return, as the published benchmark's runner passes them (every
    # output that keeps them is then copied by the materialization rule inside the timer); only for
    # reproducing the published table (configs/replication/).
    tensor_layout: Literal["contiguous", "decoder"] = "contiguous"
    # How outputs are finished inside the timer. "benchmark": the materialization rule
    # (adapters.base.materialize_output). "published": the published runner's own step
    # (`make_contiguous_transform_output`: np.ascontiguousarray for numpy, load() then np.ascontiguousarray for
    # Pillow, .contiguous() for torch); only for reproducing the published table (configs/replication/).
    output_rule: Literal["benchmark", "published"] = "benchmark"

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        if len(set(self.libraries)) != len(self.libraries):
            raise ValueError("libraries lists a library twice")
        if isinstance(self.transforms, list) and not self.transforms:
            raise ValueError("transforms is an empty list; use 'paper' or name at least one transform")
        if self.mode == "micro" and (self.threads.omp != 1 or self.threads.torch != 1):
            raise ValueError("micro runs use the single-thread policy (threads.omp = threads.torch = 1)")
        if self.mode == "micro" and self.workers:
            raise ValueError("workers applies to dataloader runs only; micro runs are single-process")
        wanted = {"rgb": ("embedded", "imagenet"), "9ch": ("embedded", "imagenet"), "video": ("embedded", "ucf101")}
        if self.media_source.kind not in wanted[self.media]:
            raise ValueError(f"media_source.kind {self.media_source.kind!r} does not hold {self.media} items "
                             f"(use one of {', '.join(wanted[self.media])})")
        if self.tensor_layout == "decoder" and (self.media, self.mode) != ("rgb", "micro"):
            raise ValueError("tensor_layout 'decoder' reproduces the published RGB micro runner only (media rgb, "
                             "mode micro)")
        if self.output_rule == "published" and (self.media, self.mode) != ("rgb", "micro"):
            raise ValueError("output_rule 'published' reproduces the published RGB micro runner only (media rgb, "
                             "mode micro)")
        if self.media_source.kind != "embedded" and not self.media_source.path:
            raise ValueError(f"media_source.path is required for {self.media_source.kind} media")
        return self

    @property
    def effective_batch_size(self) -> int:
        return self.batch_size or DEFAULT_BATCH[self.media]

    @property
    def effective_preflight(self) -> Preflight:
        if self.preflight:
            return self.preflight
        return Preflight(items=3, min_items_per_s=0.5) if self.media == "video" else Preflight()

    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True,
                                         separators=(",", ":")).encode()).hexdigest()


OVERRIDABLE = ("num_items", "num_runs", "device", "workers", "batch_size")


def _errors_text(source: str, exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(config)"
        parts.append(f"field {loc}: {e['msg']}")
    return f"{source}: " + "; ".join(parts)


def parse_config(doc: dict[str, Any], source: str, overrides: dict[str, Any] | None = None) -> RunConfig:
    unknown = set(overrides or {}) - set(OVERRIDABLE)
    if unknown:
        raise ConfigError(f"{source}: cannot override {sorted(unknown)}; overridable: {', '.join(OVERRIDABLE)}")
    merged = {**doc, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_errors_text(source, exc)) from None


def load_config(path: Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror}); check the path") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc}); fix the file") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping of fields at the top level")
    return parse_config(doc, str(path), overrides)
