"""What a Dagster step hands to a training or prediction child, and what the child hands back.

Pure pydantic, no torch: the parent writes a spec JSON, launches
`python -m bench_assets.rf100vl.training.child.train SPEC.json` (or `child.predict`), and reads the result
JSON the child wrote atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

# Child exit codes (the protocol of the harness this platform replaces).
EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_OOM = 86
EXIT_GRAPH_CAPTURE = 87
EXIT_KILLED = 137  # what fault.exit_after_epoch exits with: the status of a process killed by SIGKILL

Precision = Literal["fp32", "bf16", "fp16"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FaultInjection(_Strict):
    """Test switches: make the child fail the way a GPU box fails, on a CPU box."""

    oom_at_step: int | None = None  # raise torch.cuda.OutOfMemoryError at this global optimizer step
    oom_only_if_physical_batch_above: int | None = None  # e.g. only the first (large) batch OOMs
    sleep_per_step_s: float = 0.0  # slow training down so a test can kill it mid-run
    exit_after_epoch: int | None = None  # end like a kill (os._exit 137) once this epoch's files are written


class TrainSpec(_Strict):
    family: str  # LibreYOLO family, e.g. "yolo9", "yolox"
    size: str  # e.g. "t", "n"
    num_classes: int
    class_names: list[str]
    dataset_dir: str  # canonical dataset version dir with {train,valid,test}/_annotations.coco.json
    run_dir: str  # everything the child writes lives here (weights/, metrics, result.json)
    epochs: int
    imgsz: int
    physical_batch: int
    effective_batch: int  # gradient accumulation = effective_batch / physical_batch
    lr0: float | None = None
    device: str = "cpu"  # "cpu" or a CUDA index as seen inside CUDA_VISIBLE_DEVICES ("0")
    workers: int = 0
    seed: int = 0
    eval_interval: int = 1
    patience: int = 0
    ema: bool = True
    precision: Precision = "fp32"
    cuda_graph: bool = False
    cache: Literal[False, "ram", "disk"] = False
    max_det: int = 500
    eval_max_det: int = 500
    resume: bool = False  # continue from run_dir/weights/last.pt
    init_weights: str | None = None  # local weights file; None = from scratch (nothing downloads)
    batchnorm_eps: float | None = None  # the recipe's invariant (training/invariants.py); None: only train == eval
    train_overrides: dict[str, float | int | str | bool | None] = {}
    fault: FaultInjection = FaultInjection()


class EpochRecord(_Strict):
    epoch: int
    train_loss: float | None = None
    losses: dict[str, float] = {}
    valid_mAP50: float | None = None
    valid_mAP50_95: float | None = None
    seconds: float | None = None
    lr: float | None = None


class TrainResult(_Strict):
    status: Literal["done", "oom", "failed"]
    epochs_done: int
    best_epoch: int | None
    valid_mAP50: float | None
    valid_mAP50_95: float | None
    best_checkpoint: str | None
    last_checkpoint: str | None
    wall_seconds: float
    resumed_from_epoch: int | None = None
    accumulation: int
    message: str = ""
    epochs: list[EpochRecord] = []
    peak_vram_allocated_mb: float | None = None  # CUDA only
    peak_vram_reserved_mb: float | None = None
    peak_rss_mb: float | None = None  # the training process's peak resident set (its own, not its loader workers')
    cuda_graph_captured: bool | None = None  # None when cuda_graph was not requested
    # With init_weights: how many of the model's tensors hold the file's values once LibreYOLO loaded it
    # (child/weights.loaded_from); None when the run started from scratch or resumed.
    init_load: dict[str, Any] | None = None
    # The built model's stack facts checked before the first epoch (training/invariants.py); None when not reached.
    stack: dict[str, Any] | None = None


class PredictSpec(_Strict):
    family: str
    size: str
    num_classes: int
    class_names: list[str]
    weights: str
    dataset_dir: str
    split: Literal["train", "valid", "test"] = "test"
    imgsz: int
    conf: float = 0.001
    iou: float = 0.65
    max_det: int = 500
    device: str = "cpu"
    out_path: str  # gzip COCO detections JSON


class PredictResult(_Strict):
    status: Literal["done", "failed"]
    images: int
    detections: int
    out_path: str
    wall_seconds: float
    message: str = ""
    # Inference cost measured after the predictions (the submission's timing/throughput/model_stats/memory):
    # None when the measurement itself failed (the predictions stand regardless).
    inference: dict[str, Any] | None = None


def predict_result_path(out_path: str | Path) -> Path:
    """Where the prediction child writes its PredictResult: `out_path`'s last suffix replaced (`p.json.gz` ->
    `p.json.result.json`), beside the predictions."""
    return Path(out_path).with_suffix(".result.json")
