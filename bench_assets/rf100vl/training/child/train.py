"""Training child: ``python -m bench_assets.rf100vl.training.child.train SPEC.json``.

Reads a :class:`~bench_assets.rf100vl.training.specs.TrainSpec`, fine-tunes one LibreYOLO model on one canonical
dataset, and always leaves ``run_dir/result.json`` (a :class:`TrainResult`, written atomically).

Exit codes (specs.py): 0 done, 86 out of memory, 87 CUDA-graph capture failure (only with
``cuda_graph=True``), 1 anything else. Progress goes through Dagster Pipes when the parent launched us
with Pipes (``DAGSTER_PIPES_CONTEXT`` set), to stdout otherwise.

What ``run_dir`` holds afterwards (LibreYOLO's own layout, project=run_dir.parent, name=run_dir.name):
``data.yaml``, ``weights/{last,best}.pt``, ``metrics.jsonl`` (one row per epoch, all families),
``results.csv``/``summary.json`` (YOLO9 only), ``status.json``, ``train.log``, ``train_config.yaml``,
``val/``, ``image_links/`` (only with ``cache="disk"``) and ``result.json``. See docs/libreyolo_notes.md for
the LibreYOLO behaviour this relies on.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench_assets.rf100vl.training import run_store
from bench_assets.rf100vl.training.child.checkpoint_file import checkpoint_scalars
from bench_assets.rf100vl.training.child.common import (
    Reporter,
    Stopwatch,
    atomic_copy_file,
    atomic_write_json,
    build_model,
    exception_chain,
    install_atomic_torch_save,
    install_class_guard,
    is_oom,
    load_libraries,
    model_class,
    pin_threads,
    precision_to_amp,
    read_spec_arg,
    remove_stale_temps,
    require_local_file,
    write_data_yaml,
)
from bench_assets.rf100vl.training.child.families import detect_trainer, override_keys
from bench_assets.rf100vl.training.child.weights import loaded_from
from bench_assets.rf100vl.training.invariants import stack_problems
from bench_assets.rf100vl.training.specs import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_GRAPH_CAPTURE,
    EXIT_KILLED,
    EXIT_OOM,
    EpochRecord,
    FaultInjection,
    TrainResult,
    TrainSpec,
)

METRICS_FILE = "metrics.jsonl"

# Train arguments the spec owns; train_overrides may not set them.
RESERVED_KEYS = frozenset({
    "data", "epochs", "imgsz", "batch", "nbs", "device", "workers", "seed", "eval_interval", "val", "patience",
    "ema", "amp", "amp_dtype", "cuda_graph", "cache", "max_det", "eval_max_det", "project", "name", "exist_ok",
    "resume", "lr0", "callbacks", "loggers", "pretrained", "cfg", "size", "num_classes",
})


class StackInvariantBroken(RuntimeError):
    """The model about to train breaks a stack invariant (training/invariants.py)."""


def _bn_eps(module: Any) -> list[float]:
    import torch

    return sorted({float(m.eps) for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)})


def stack_facts(model: Any, spec: TrainSpec) -> dict[str, Any]:
    """BatchNorm eps of the model about to train and of the same weights built as the prediction child builds them
    (saved by LibreYOLO, loaded through the family's class). Every random generator is left as it was: building the
    second model draws random initial weights, and the run must train exactly as it would without this check."""
    import random
    import tempfile

    import numpy as np
    import torch

    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    try:
        with tempfile.TemporaryDirectory(prefix="stack-", dir=spec.run_dir) as tmp:
            path = Path(tmp) / "stack.pt"
            model.save(str(path))
            evaluated = build_model(spec.family, spec.size, spec.num_classes, "cpu", weights=str(path))
            return {"train_bn_eps": _bn_eps(model.model), "eval_bn_eps": _bn_eps(evaluated.model)}
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])


class Terminated(BaseException):  # noqa: N818 - BaseException so LibreYOLO's `except Exception` cannot eat it
    """SIGTERM arrived (the parent cancelled the run)."""


def _on_sigterm(signum: int, _frame: Any) -> None:
    raise Terminated(f"terminated by signal {signum}")


# --------------------------------------------------------------------------------------------------
# Reading LibreYOLO's outputs


def checkpoint_meta(path: Path) -> dict[str, Any] | None:
    """The scalar metadata of a LibreYOLO checkpoint (epoch is 0-based there), or None if absent/unreadable. Read
    from the archive's pickle alone: no tensor is loaded and nothing the file names runs (checkpoint_file.py)."""
    if not path.is_file():
        return None
    scalars = checkpoint_scalars(path)
    if scalars is None:
        return None
    keep = ("epoch", "best_epoch", "best_mAP50_95", "best_mAP50", "best_metric_key", "best_metric_value")
    return {k: scalars[k] for k in keep if k in scalars}


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None or v == "":
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def epoch_record(row: dict[str, Any]) -> EpochRecord:
    """One metrics.jsonl row (TrainingStatusCallback, schema of results.csv) -> EpochRecord."""
    losses = {}
    for k, v in row.items():
        if k.startswith("train/") and k != "train/loss" and _num(v) is not None:
            losses[k.removeprefix("train/").removesuffix("_loss")] = float(v)
    validated = bool(row.get("validated"))
    lr = _num(row.get("lr/group0"))
    if lr is None:
        lr = next((_num(v) for k, v in sorted(row.items()) if k.startswith("lr/") and _num(v) is not None), None)
    return EpochRecord(
        epoch=int(row["epoch"]),
        train_loss=_num(row.get("train/loss")),
        losses=losses,
        valid_mAP50=_num(row.get("metrics/mAP50")) if validated else None,
        valid_mAP50_95=_num(row.get("metrics/mAP50-95")) if validated else None,
        seconds=_num(row.get("time")),
        lr=lr,
    )


def read_epoch_records(run_dir: Path, max_epoch: int | None) -> list[EpochRecord]:
    """Epoch rows of metrics.jsonl, one per epoch (a resumed run appends; the last row of an epoch wins)."""
    path = run_dir / METRICS_FILE
    if not path.is_file():
        return []
    by_epoch: dict[int, EpochRecord] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = epoch_record(json.loads(line))
        except Exception:  # noqa: BLE001 - a torn last line after a kill is skipped
            continue
        if max_epoch is None or rec.epoch <= max_epoch:
            by_epoch[rec.epoch] = rec
    return [by_epoch[e] for e in sorted(by_epoch)]


def build_result(spec: TrainSpec, status: str, message: str, wall: float, resumed_from: int | None,
                 accumulation: int) -> TrainResult:
    run_dir = Path(spec.run_dir).resolve()
    last, best = run_store.last_weights(run_dir), run_store.best_weights(run_dir)
    last_meta = checkpoint_meta(last)
    best_meta = checkpoint_meta(best)
    epochs_done = int(last_meta["epoch"]) + 1 if last_meta and "epoch" in last_meta else 0
    records = read_epoch_records(run_dir, epochs_done if last_meta else None)
    if not last_meta and records:
        epochs_done = 0  # rows without a checkpoint describe nothing we can resume or evaluate
        records = []
    best_epoch = int(best_meta["best_epoch"]) if best_meta and best_meta.get("best_epoch") else None
    v50 = v5095 = None
    if best_epoch is not None:
        at_best = next((r for r in records if r.epoch == best_epoch), None)
        v50 = at_best.valid_mAP50 if at_best else _num(best_meta.get("best_mAP50"))
        v5095 = at_best.valid_mAP50_95 if at_best else _num(best_meta.get("best_mAP50_95"))
    return TrainResult(
        status=status,  # type: ignore[arg-type]
        epochs_done=epochs_done,
        best_epoch=best_epoch,
        valid_mAP50=v50,
        valid_mAP50_95=v5095,
        best_checkpoint=str(best) if best_meta else None,
        last_checkpoint=str(last) if last_meta else None,
        wall_seconds=round(wall, 3),
        resumed_from_epoch=resumed_from,
        accumulation=accumulation,
        message=message,
        epochs=records,
    )


# --------------------------------------------------------------------------------------------------
# Hooks into LibreYOLO (this process only)


def reseed_for_epoch(seed: int, epoch: int) -> None:
    import random

    import numpy as np
    import torch

    s = (seed * 1_000_003 + epoch) % 2**32
    random.seed(s)
    np.random.seed(s)
    torch.manual_seed(s)  # seeds every CUDA device too


def _no_reload(*_args: Any, **_kwargs: Any) -> None:
    """Stands in for a trained model's `_load_weights` (_Hooks.skip_reload)."""


class _Hooks:
    """Process-wide patches of LibreYOLO's BaseTrainer for this child.

    * remember the trainer (for the global optimizer step of fault injection);
    * fault injection in a global optimizer step pre-hook (fires once per optimizer step, i.e. once per
      accumulation window);
    * validation errors fail the run instead of being logged and swallowed;
    * checkpoint writes are deferred to the end of the epoch callbacks, so ``metrics.jsonl`` (appended by
      LibreYOLO's status callback, which runs before user callbacks) always has the epoch's row before
      ``last.pt`` says the epoch is done. LibreYOLO saves first, so a kill between the two would lose
      the row for good; in this order a kill re-trains the epoch and rewrites the row. A checkpoint LibreYOLO
      writes to several files in one epoch (last.pt, best.pt, epoch_N.pt: one object) is serialised once and
      copied to the others;
    * once training returns, `model`'s reload of the best checkpoint for inference is skipped: the child exits
      without using the model (every family's `train` reloads through `_load_weights`, LibreYOLO's safe loader
      unpickling the model, its EMA and the optimizer in Python).
    """

    def __init__(self, fault: FaultInjection, physical_batch: int, seed: int = 0, model: Any = None) -> None:
        self.seed = seed
        self.fault = fault
        self.physical_batch = physical_batch
        self.model = model  # the LibreYOLO model whose train() this child runs
        self.trainer: Any = None
        self.steps_seen = 0
        self.validation_errors: list[BaseException] = []
        self.pending_save: tuple[Any, tuple[Any, ...], dict[str, Any]] | None = None
        self._orig_save: Any = None
        self.in_epoch = False

    def flush_save(self) -> None:
        """Write the checkpoint LibreYOLO asked for at the end of this epoch (if still pending)."""
        pending, self.pending_save = self.pending_save, None
        if pending is None:
            return
        import torch

        # LibreYOLO writes last.pt before best.pt: a kill between the two would leave a last.pt claiming an
        # epoch whose best.pt never landed (the first epoch is always "best"), and the resumed run would end
        # without a best checkpoint. Write last.pt last, so its presence implies every other file of its epoch.
        real_save, held = torch.save, []
        written: list[tuple[Any, Path]] = []  # (object, the file it was serialised to) in this flush

        def save_once(obj: Any, f: Any, a: tuple[Any, ...], k: dict[str, Any]) -> None:
            src = next((path for o, path in written if o is obj), None)
            if src is not None and isinstance(f, (str, os.PathLike)) and not a and not k:
                atomic_copy_file(src, Path(f))
                return
            real_save(obj, f, *a, **k)
            if isinstance(f, (str, os.PathLike)):
                written.append((obj, Path(f)))

        def save_last_last(obj: Any, f: Any, *a: Any, **k: Any) -> None:
            if Path(str(f)).name == run_store.LAST_WEIGHTS:
                held.append((obj, f, a, k))
            else:
                save_once(obj, f, a, k)

        trainer, args, kwargs = pending
        torch.save = save_last_last
        try:
            self._orig_save(trainer, *args, **kwargs)
        finally:
            torch.save = real_save
        for obj, f, a, k in held:
            save_once(obj, f, a, k)

    def skip_reload(self) -> None:
        """Make `model`'s reload of its best checkpoint after training a no-op (the child is done with the model)."""
        if self.model is not None:
            self.model._load_weights = _no_reload

    def install(self, family_trainer_cls: type | None = None) -> None:
        """Patch LibreYOLO's BaseTrainer (and every epoch loop of `family_trainer_cls`'s classes: D-FINE's and DEIM's
        trainers replace BaseTrainer's `_train_epoch` without calling it)."""
        from libreyolo.training.trainer import BaseTrainer
        from libreyolo.validation.base import BaseValidator
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._patch_trainer(BaseTrainer, family_trainer_cls)
        self._patch_validation(BaseTrainer, BaseValidator)
        register_optimizer_step_pre_hook(self._before_step)

    def _patch_trainer(self, trainer_cls: Any, family_trainer_cls: type | None) -> None:
        """Seeded epochs, the trainer remembered, checkpoint writes deferred to the end of the epoch callbacks."""
        hooks = self
        orig_train = trainer_cls.train
        self._orig_save = trainer_cls._save_checkpoint


        def train(self: Any) -> Any:
            hooks.trainer = self
            try:
                out = orig_train(self)
            finally:
                hooks.pending_save = None  # an epoch that died before its callbacks is not complete
            hooks.skip_reload()
            return out

        def save_checkpoint(self: Any, *args: Any, **kwargs: Any) -> None:
            hooks.flush_save()
            hooks.pending_save = (self, args, kwargs)

        trainer_cls.train = train
        trainer_cls._save_checkpoint = save_checkpoint
        for cls in _epoch_loops(family_trainer_cls or trainer_cls):
            cls._train_epoch = self._seeded(cls.__dict__["_train_epoch"])
        if family_trainer_cls is not None and len(_epoch_loops(family_trainer_cls)) > 1:
            family_trainer_cls._initialize_scheduler_lr = _resumed_lr_with_group_multipliers(
                family_trainer_cls._initialize_scheduler_lr)

    def _seeded(self, train_epoch: Any) -> Any:
        """Every epoch starts from RNG states that depend only on (seed, epoch): shuffling, mosaic and augmentation
        draws of epoch k are then the same whether the run got there uninterrupted or resumed from last.pt, so a
        killed and resumed campaign reproduces the uninterrupted scores. Only the outermost epoch loop of a call
        reseeds (a subclass's loop calling its parent's must not reseed mid-epoch)."""
        hooks = self

        def seeded(trainer: Any, epoch: int, *args: Any, **kwargs: Any) -> Any:
            if hooks.in_epoch:
                return train_epoch(trainer, epoch, *args, **kwargs)
            hooks.in_epoch = True
            try:
                reseed_for_epoch(hooks.seed, epoch)
                return train_epoch(trainer, epoch, *args, **kwargs)
            finally:
                hooks.in_epoch = False

        return seeded

    def _patch_validation(self, trainer_cls: Any, validator_cls: Any) -> None:
        """Validation errors fail the run.

        LibreYOLO's _run_validation catches every Exception, logs it and returns None: the epoch then
        silently has no metric and best.pt selection goes wrong (or an OOM in validation is lost).
        Record what the validator raised and re-raise it once LibreYOLO has returned.
        """
        hooks = self
        orig_run_validation = trainer_cls._run_validation
        orig_validator_run = validator_cls.run

        def validator_run(self: Any, **kwargs: Any) -> Any:
            try:
                return orig_validator_run(self, **kwargs)
            except Exception as exc:
                hooks.validation_errors.append(exc)
                raise

        def run_validation(self: Any, epoch: int, **kwargs: Any) -> Any:
            hooks.validation_errors.clear()
            out = orig_run_validation(self, epoch, **kwargs)
            if hooks.validation_errors:
                raise hooks.validation_errors[0]
            return out

        trainer_cls._run_validation = run_validation
        validator_cls.run = validator_run

    def global_step(self) -> int:
        """1-based global optimizer step about to run (continues across a resume)."""
        t = self.trainer
        if t is not None and isinstance(getattr(t, "current_iter", None), int):
            # BaseTrainer sets current_iter to the 0-based optimizer-step index before stepping, with and
            # without accumulation (trainer.py `_train_epoch`, `_train_epoch_accum`).
            return t.current_iter + 1
        return self.steps_seen

    def _before_step(self, _optimizer: Any, _args: Any, _kwargs: Any) -> None:
        import torch

        self.steps_seen += 1
        f = self.fault
        if f.sleep_per_step_s > 0:
            time.sleep(f.sleep_per_step_s)
        if f.oom_at_step is None or self.global_step() != f.oom_at_step:
            return
        if f.oom_only_if_physical_batch_above is not None and self.physical_batch <= f.oom_only_if_physical_batch_above:
            return
        raise torch.cuda.OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate 2.00 GiB (injected by fault.oom_at_step={f.oom_at_step}, "
            f"physical_batch={self.physical_batch})"
        )


def _resumed_lr_with_group_multipliers(initialize: Any) -> Any:
    """LibreYOLO 1.6.0's D-FINE and DEIM epoch loops set every parameter group's LR to the scheduler's LR times the
    group's `lr_mult` after each step (backbone groups at 0.5x), but on resume `BaseTrainer._initialize_scheduler_lr`
    sets the plain scheduler LR on every group: the resumed run's first step trained the backbone at twice the LR the
    uninterrupted run used, and the two runs parted (`bench models check deimv2-atto`). On resume, apply the
    multipliers as the loop would have; a fresh start is left as LibreYOLO has it."""

    def initialize_scheduler_lr(trainer: Any) -> None:
        initialize(trainer)
        start = getattr(trainer, "start_epoch", 0)
        if not start or trainer.optimizer is None or trainer.lr_scheduler is None:
            return
        base_lr = trainer.lr_scheduler.update_lr(start * trainer._scheduler_steps_per_epoch())
        for group in trainer.optimizer.param_groups:
            group["lr"] = base_lr * group.get("lr_mult", 1.0)

    return initialize_scheduler_lr


def _epoch_loops(trainer_cls: type) -> list[type]:
    """The classes in `trainer_cls`'s MRO that define their own `_train_epoch` (BaseTrainer's included)."""
    return [c for c in trainer_cls.__mro__ if "_train_epoch" in c.__dict__]


class Progress:
    """LibreYOLO epoch callback: a log line and a structured message per epoch.

    ETA = mean wall time of this invocation's epochs except its first (epoch 1 builds the validator,
    spins up loaders and warms caches) times the epochs left; None until such an epoch exists.
    """

    def __init__(self, reporter: Reporter, total_epochs: int, hooks: _Hooks) -> None:
        self.reporter = reporter
        self.total = total_epochs
        self.hooks = hooks
        self.wall: list[float] = []  # per epoch of this invocation, including checkpoint writing
        self.t_last = time.monotonic()

    def on_train_start(self, event: Any) -> None:
        self.t_last = time.monotonic()
        self.reporter.info(f"training epochs {event.start_epoch}..{event.total_epochs} -> {event.save_dir}")

    def on_train_epoch_end(self, event: Any) -> None:
        self.hooks.flush_save()  # metrics.jsonl already has this epoch's row (see _Hooks)
        if self.hooks.fault.exit_after_epoch == int(event.epoch):
            os._exit(EXIT_KILLED)  # a kill right after an epoch's files landed: nothing else runs, no result.json
        now = time.monotonic()
        self.wall.append(now - self.t_last)
        self.t_last = now
        steady = self.wall[1:]
        remaining = max(self.total - int(event.epoch), 0)
        eta = (sum(steady) / len(steady)) * remaining if steady else None
        vm = dict(event.val_metrics)
        m50 = _num(vm.get("metrics/mAP50")) if event.validated else None
        m5095 = _num(vm.get("metrics/mAP50-95")) if event.validated else None
        losses = {str(k): round(float(v), 5) for k, v in dict(event.train_loss_items).items() if _num(v) is not None}
        payload = {
            "kind": "epoch",
            "epoch": int(event.epoch),
            "epochs": self.total,
            "train_loss": _num(event.train_loss),
            "losses": losses,
            "valid_mAP50": m50,
            "valid_mAP50_95": m5095,
            "is_best": bool(event.is_best),
            "best_epoch": event.best_epoch,
            "epoch_seconds": round(float(event.epoch_seconds), 3),
            "wall_seconds": round(self.wall[-1], 3),
            "eta_seconds": None if eta is None else round(eta, 1),
        }
        loss_txt = " ".join(f"{k}={v:.4f}" for k, v in losses.items())
        map_txt = "not validated" if m5095 is None else f"valid mAP50={m50:.4f} mAP50-95={m5095:.4f}"
        eta_txt = "eta=?" if eta is None else f"eta={eta:.0f}s"
        self.reporter.info(
            f"epoch {event.epoch}/{self.total} loss={float(event.train_loss):.4f} ({loss_txt}) {map_txt}"
            f"{' *best*' if event.is_best else ''} {self.wall[-1]:.1f}s/epoch {eta_txt}"
        )
        self.reporter.progress(payload)


# --------------------------------------------------------------------------------------------------
# The run


def family_trainer(cls: type) -> tuple[type | None, type | None]:
    """(trainer class, its config class) LibreYOLO trains the family's detection task with. The config class is the
    trainer's own (`_config_class()`): `TRAIN_CONFIG` on the model class is None for dfine, ec and yolonas."""
    trainer = detect_trainer(cls)
    return trainer, (trainer._config_class() if trainer is not None else getattr(cls, "TRAIN_CONFIG", None))


def allowed_override_keys(cls: type) -> set[str]:
    return set(override_keys(cls, family_trainer(cls)[1]))


def default_no_aug_epochs(cls: type, epochs: int) -> int:
    """The family's own no-augmentation tail (its config class's `no_aug_epochs`: 15 for yolo9 and yolox, 4 for
    dfine and ec, 0 for rtdetr and yolonas), cut to a quarter of a short run so that it never covers it all."""
    config = family_trainer(cls)[1]
    fields = {f.name: f.default for f in dataclasses.fields(config)} if config is not None else {}
    default = fields.get("no_aug_epochs", 15)
    return min(int(default) if isinstance(default, int) else 15, epochs // 4)


def _fresh_start(run_dir: Path) -> None:
    """A non-resumed run starts clean: stale checkpoints/metrics of an earlier attempt must not leak in."""
    for p in [*run_store.weights_dir(run_dir).glob("*.pt"), run_dir / METRICS_FILE, run_dir / "results.csv",
              run_dir / "summary.json", run_store.result_path(run_dir), run_store.init_load_path(run_dir)]:
        p.unlink(missing_ok=True)


class _Run:
    def __init__(self, spec: TrainSpec, reporter: Reporter) -> None:
        self.spec = spec
        self.reporter = reporter
        self.run_dir = Path(spec.run_dir).resolve()
        self.accumulation = max(1, round(spec.effective_batch / spec.physical_batch))
        self.resumed_from: int | None = None
        self.init_load: dict[str, Any] | None = None  # TrainResult.init_load
        self.stack: dict[str, Any] | None = None  # TrainResult.stack

    def execute(self) -> str:
        spec, run_dir, log = self.spec, self.run_dir, self.reporter.info
        _check_spec(spec)
        last = run_store.last_weights(run_dir)
        resume = spec.resume and last.is_file()
        if spec.init_weights is not None and not resume:
            require_local_file(spec.init_weights, "init_weights")  # before the ~3-9 s torch/LibreYOLO import
        if spec.effective_batch % spec.physical_batch:
            log(f"effective_batch {spec.effective_batch} is not a multiple of physical_batch {spec.physical_batch}: "
                f"accumulating {self.accumulation} (effective {self.accumulation * spec.physical_batch})")
        threads, data_yaml = self._prepare()
        if resume:
            if not self._resume_from(last):
                return "done"
        else:
            if spec.resume:
                log(f"resume requested but {last} does not exist: starting from scratch")
            _fresh_start(run_dir)
        overrides = _checked_overrides(spec)
        weights = None if resume else spec.init_weights
        model = build_model(spec.family, spec.size, spec.num_classes, spec.device, weights=weights, seed=spec.seed)
        if weights is not None:
            load = self.init_load = loaded_from(model.model, Path(weights))
            atomic_write_json(run_store.init_load_path(run_dir), load)  # a resumed run reports it too
            log(f"init weights {weights}: {load['loaded_tensors']} of the model's {load['model_tensors']} tensors "
                f"hold the file's values ({load['backbone_loaded']} of {load['backbone_tensors']} in its "
                f"{load['backbone']})")
        self.stack = stack_facts(model, spec)
        broken = stack_problems(self.stack, spec.batchnorm_eps)
        if broken:
            raise StackInvariantBroken("stack invariant broken before the first epoch: " + "; ".join(broken))
        log(f"stack invariants hold: BatchNorm eps {self.stack['train_bn_eps']} in training and prediction builds")
        hooks = _Hooks(spec.fault, spec.physical_batch, spec.seed, model=model)
        hooks.install(family_trainer(model_class(spec.family))[0])
        kwargs = self._train_kwargs(data_yaml, overrides, last if resume else None, hooks)
        if spec.cuda_graph:
            _watch_graph_capture()
        init = "last.pt (resume)" if resume else weights or "scratch"
        log(f"{spec.family}-{spec.size} nc={spec.num_classes} imgsz={spec.imgsz} batch={spec.physical_batch}x"
            f"{self.accumulation} (effective {spec.effective_batch}) epochs={spec.epochs} device={spec.device} "
            f"precision={spec.precision} threads={threads} init={init}")
        model.train(**kwargs)
        return "done"

    def _prepare(self) -> tuple[int | None, Path]:
        """Set up this process (offline, pinned threads, atomic checkpoint writes, no stale temporaries) and
        write data.yaml; return the thread count pinned and the data.yaml path."""
        spec, run_dir = self.spec, self.run_dir
        load_libraries()  # after the spec's own checks: a bad spec fails before seconds of imports
        threads = pin_threads()
        install_atomic_torch_save()
        install_class_guard(spec.num_classes)  # validation scores only the dataset's classes (RF-DETR's background)
        remove_stale_temps(run_store.weights_dir(run_dir))
        # cache="disk" writes .npy sidecars beside the images it reads: keep them out of the dataset store.
        links = run_dir / "image_links" if spec.cache == "disk" else None
        return threads, write_data_yaml(spec.dataset_dir, run_dir, spec.class_names, link_images_to=links)

    def _resume_from(self, last: Path) -> bool:
        """Set `resumed_from` from the epoch `last` holds; False when that checkpoint already has every epoch."""
        meta = checkpoint_meta(last)
        if meta is None or "epoch" not in meta:
            raise RuntimeError(f"cannot resume: {last} is not a readable LibreYOLO training checkpoint")
        done = int(meta["epoch"]) + 1
        if done >= self.spec.epochs:
            self.reporter.info(f"{last} already holds {done}/{self.spec.epochs} epochs: nothing left to train")
            return False
        self.resumed_from = done + 1
        self.reporter.info(f"resuming at epoch {self.resumed_from}/{self.spec.epochs} from {last}")
        return True

    def _train_kwargs(self, data_yaml: Path, overrides: dict[str, Any], resume_from: Path | None,
                      hooks: _Hooks) -> dict[str, Any]:
        """LibreYOLO's `model.train` arguments: the spec's, our defaults, the overrides, resume and callbacks."""
        spec, run_dir = self.spec, self.run_dir
        amp, amp_dtype = precision_to_amp(spec.precision)
        kwargs: dict[str, Any] = dict(
            data=str(data_yaml), epochs=spec.epochs, imgsz=spec.imgsz, batch=spec.physical_batch,
            nbs=spec.effective_batch, device=spec.device, workers=spec.workers, seed=spec.seed,
            eval_interval=spec.eval_interval, patience=spec.patience, ema=spec.ema, amp=amp, amp_dtype=amp_dtype,
            cuda_graph=spec.cuda_graph, cache=spec.cache, max_det=spec.max_det, eval_max_det=spec.eval_max_det,
            project=str(run_dir.parent), name=run_dir.name, exist_ok=True,
            # Our defaults, overridable: no epoch_N.pt copies; the family's no-augmentation tail, cut to a quarter
            # of short runs (yolo9's 15 would make a 15-epoch run mosaic-free, and YOLOX's LR plateau cover it all).
            save_period=0, no_aug_epochs=default_no_aug_epochs(model_class(spec.family), spec.epochs),
        )
        if spec.lr0 is not None:
            kwargs["lr0"] = spec.lr0
        kwargs.update(overrides)
        if resume_from is not None:  # a path: resume=True would mean "the checkpoint the model was loaded from"
            kwargs["resume"] = str(resume_from)
        kwargs["callbacks"] = [Progress(self.reporter, spec.epochs, hooks)]
        return kwargs


def _check_spec(spec: TrainSpec) -> None:
    """Reject a spec that contradicts itself (ValueError), before anything is imported or written."""
    if len(spec.class_names) != spec.num_classes:
        raise ValueError(f"num_classes={spec.num_classes} but {len(spec.class_names)} class_names")
    if spec.epochs < 1 or spec.physical_batch < 1 or spec.effective_batch < 1:
        raise ValueError("epochs, physical_batch and effective_batch must be >= 1")
    bad = sorted(set(spec.train_overrides) & RESERVED_KEYS)
    if bad:
        raise ValueError(f"train_overrides may not set {bad}: the TrainSpec fields own them")


def _checked_overrides(spec: TrainSpec) -> dict[str, Any]:
    """The spec's train_overrides, once LibreYOLO's model class for the family is known to accept every key."""
    cls = model_class(spec.family)
    overrides = dict(spec.train_overrides)
    unknown = sorted(set(overrides) - allowed_override_keys(cls))
    if unknown:
        raise ValueError(f"train_overrides has keys LibreYOLO {spec.family} does not know: {unknown}")
    return overrides


_graph_captured = False


def _watch_graph_capture() -> None:
    """Record whether LibreYOLO's graph manager ever held a captured graph (it logs, but a GPU smoke
    run needs a yes/no it can print)."""
    from libreyolo.training import cuda_graph

    original = cuda_graph.TrainGraphManager.run

    def run(self, *args: Any, **kwargs: Any) -> Any:
        global _graph_captured
        out = original(self, *args, **kwargs)
        _graph_captured = _graph_captured or self.captured
        return out

    cuda_graph.TrainGraphManager.run = run


def _device_facts(spec: TrainSpec) -> dict[str, Any]:
    facts: dict[str, Any] = {"cuda_graph_captured": _graph_captured if spec.cuda_graph else None,
                             "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        facts["peak_vram_allocated_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        facts["peak_vram_reserved_mb"] = round(torch.cuda.max_memory_reserved() / 2**20, 1)
    return facts


def _graph_capture_error(exc: BaseException) -> bool:
    return any("captur" in str(e).lower() and "graph" in str(e).lower() for e in exception_chain(exc))


def main(argv: list[str] | None = None) -> int:
    clock = Stopwatch()
    spec = read_spec_arg(sys.argv[1:] if argv is None else argv, "bench_assets.rf100vl.training.child.train", TrainSpec)
    if spec is None:
        return EXIT_FAILED
    run_dir = Path(spec.run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _on_sigterm)
    reporter = Reporter()
    run = _Run(spec, reporter)
    status, message, code = "failed", "", EXIT_FAILED
    try:
        status = run.execute()
        code = EXIT_DONE
    except BaseException as exc:  # noqa: BLE001 - every outcome must end in result.json
        if is_oom(exc):
            status, code = "oom", EXIT_OOM
        else:
            status, code = "failed", EXIT_FAILED
            if spec.cuda_graph and _graph_capture_error(exc):
                code = EXIT_GRAPH_CAPTURE
        message = f"{type(exc).__name__}: {exc}"
        reporter.info(f"training {status}: {message}")
        if status == "failed":
            traceback.print_exc(file=sys.stderr)
    try:
        result = build_result(spec, status, message, clock(), run.resumed_from, run.accumulation)
    except BaseException as exc:  # noqa: BLE001 - still leave a result behind
        result = TrainResult(status="failed", epochs_done=0, best_epoch=None, valid_mAP50=None, valid_mAP50_95=None,
                             best_checkpoint=None, last_checkpoint=None, wall_seconds=round(clock(), 3),
                             resumed_from_epoch=run.resumed_from, accumulation=run.accumulation,
                             message=f"{message}; result assembly failed: {type(exc).__name__}: {exc}")
        code = EXIT_FAILED if code == EXIT_DONE else code
    init_load = run.init_load
    if init_load is None and run_store.init_load_path(run_dir).is_file():  # resumed: loaded by an earlier attempt
        init_load = json.loads(run_store.init_load_path(run_dir).read_text())
    result = result.model_copy(update={**_device_facts(spec), "init_load": init_load, "stack": run.stack})
    atomic_write_json(run_store.result_path(run_dir), result.model_dump(mode="json"))
    reporter.info(
        f"result {result.status}: epochs_done={result.epochs_done} best_epoch={result.best_epoch} "
        f"valid mAP50-95={result.valid_mAP50_95} wall={result.wall_seconds:.1f}s -> {run_store.result_path(run_dir)}"
    )
    reporter.close()
    return code


if __name__ == "__main__":
    from bench_assets.platform.process_gc import exit_process

    exit_process(main())
