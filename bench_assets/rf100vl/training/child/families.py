"""What the installed LibreYOLO says about its detection families: read from its classes, never from a list of ours.

``python -m bench_assets.rf100vl.training.child.families [--write]`` prints the inventory as JSON (``--write``
stores it as the snapshot ``training/families.py`` reads, so registering a model never imports torch). For every
family whose classes support the ``detect`` task (LibreYOLO's sibling APIs, open-vocabulary and VLM families, are
left out): its sizes and default image sizes; whether it trains, and when not, the reason its ``train`` gives; its
trainer and the trainer's config class with the defaults a recipe starts from; the image-size rule; the published
weights' names; and the extra packages it needs.

Nothing here builds a model or downloads: the facts are class attributes, dataclass defaults and the source of a
``train`` that only raises.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import json
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

# The config fields a recipe's `train` block may take from a family's defaults, in the order they are shown.
DEFAULT_FIELDS = ("optimizer", "lr0", "backbone_lr_mult", "lr_backbone", "weight_decay", "scheduler",
                  "warmup_epochs", "min_lr_ratio", "mosaic_prob", "mixup_prob", "no_aug_epochs", "multi_scale", "imgsz",
                  "epochs", "batch", "ema")
# LibreYOLO's image sizes are multiples of this unless a family's class says otherwise (IMGSZ_STRIDE).
DEFAULT_IMGSZ_MULTIPLE = 32
SNAPSHOT = Path(__file__).resolve().parents[1] / "libreyolo_families.json"


def _raised_reason(func: Any) -> str | None:
    """The message of `raise NotImplementedError("...")` when that is all `func` does, else None."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    stmts = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(stmts) != 1 or not isinstance(stmts[0], ast.Raise) or not isinstance(stmts[0].exc, ast.Call):
        return None
    call = stmts[0].exc
    if not (isinstance(call.func, ast.Name) and call.func.id == "NotImplementedError"):
        return None
    try:
        return " ".join(str(ast.literal_eval(call.args[0])).split()) if call.args else "not implemented"
    except ValueError:
        return "not implemented"


def detect_trainer(model_cls: type) -> type | None:
    """The family's detection trainer: the BaseTrainer subclass defined in the family's `trainer` module."""
    from libreyolo.training.trainer import BaseTrainer

    package = model_cls.__module__.rsplit(".", 1)[0]
    try:
        module = importlib.import_module(f"{package}.trainer")
    except ImportError:
        return None
    found = [c for c in vars(module).values()
             if inspect.isclass(c) and issubclass(c, BaseTrainer) and c.__module__ == module.__name__]
    return found[0] if len(found) == 1 else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


def config_defaults(config_cls: type) -> dict[str, Any]:
    """The defaults of a trainer's config class for the fields a recipe may take (absent fields left out)."""
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    out = {}
    for name in DEFAULT_FIELDS:
        f = fields.get(name)
        if f is not None and f.default is not dataclasses.MISSING:
            out[name] = _jsonable(f.default)
    return out


def override_keys(model_cls: type, config_cls: type | None) -> list[str]:
    """Every key `model.train(**kwargs)` accepts for the family: the config class's fields and the named
    parameters of the wrapper's `train`."""
    keys = {f.name for f in dataclasses.fields(config_cls)} if config_cls is not None else set()
    keys |= {p for p in inspect.signature(model_cls.train).parameters if p not in ("self", "args", "kwargs")}
    return sorted(keys)


def _weights(model_cls: type, sizes: list[str]) -> dict[str, dict[str, Any]]:
    """Per size: the published weights' name, Hugging Face repository and file (LibreYOLO's own naming:
    `BaseModel.get_download_url`), or why LibreYOLO publishes none."""
    out = {}
    for size in sizes:
        name = f"{model_cls.FILENAME_PREFIX}{size}"
        reason = model_cls.UNPUBLISHED_WEIGHTS.get(name)
        out[size] = {"name": name, "repo": f"LibreYOLO/{name}", "file": f"{name}{model_cls.WEIGHT_EXT}",
                     "published": reason is None, **({"reason": reason} if reason else {})}
    return out


def measure_min_imgsz(model_cls: type, size: str, multiple: int, up_to: int) -> int | None:
    """The smallest multiple of `multiple` at which a from-scratch `size` model's forward pass (evaluation mode, one
    blank image) runs, up to `up_to`; None when none does. DETR-style heads fail below it when the image has fewer
    anchors than the decoder's queries ("selected index k out of range"). Training with `multi_scale` draws batches
    down to 0.75x the image size, which training/families.py accounts for."""
    import torch

    model = model_cls._from_scratch(size=size, nb_classes=2, device="cpu", seed=0).model.eval()
    for imgsz in range(multiple, up_to + 1, multiple):
        try:
            with torch.no_grad():
                model(torch.zeros(1, 3, imgsz, imgsz))
        except Exception:  # noqa: BLE001 - any failure means "not at this size"
            continue
        return imgsz
    return None


def describe(model_cls: type, group: str | None, needs: list[str], measure: bool = True) -> dict[str, Any]:
    """One family's entry (see the module docstring)."""
    detect_sizes = model_cls.TASK_INPUT_SIZES.get("detect") or model_cls.INPUT_SIZES
    sizes = [{"size": str(k), "imgsz": int(v)} for k, v in detect_sizes.items()]
    reason = _raised_reason(model_cls.train)
    if reason is None and group in ("g3", "g4"):
        reason = f"LibreYOLO files {model_cls.FAMILY} under group {group}: families without a training implementation"
    trainer = None if reason else detect_trainer(model_cls)
    config_cls = trainer._config_class() if trainer is not None else model_cls.TRAIN_CONFIG
    if reason is None and trainer is None:
        reason = f"no detection trainer found in {model_cls.__module__.rsplit('.', 1)[0]}.trainer"
    multiple = int(getattr(model_cls, "IMGSZ_STRIDE", None) or DEFAULT_IMGSZ_MULTIPLE)
    return {
        "family": model_cls.FAMILY,
        "class": f"{model_cls.__module__}.{model_cls.__name__}",
        "group": group,
        "sizes": sizes,
        "trainable": reason is None,
        "reason": reason,
        "trainer": None if trainer is None else f"{trainer.__module__}.{trainer.__name__}",
        "config": None if config_cls is None else f"{config_cls.__module__}.{config_cls.__name__}",
        "defaults": {} if config_cls is None or reason else config_defaults(config_cls),
        "override_keys": [] if reason else override_keys(model_cls, config_cls),
        "imgsz_multiple": multiple,
        "min_imgsz": {s["size"]: measure_min_imgsz(model_cls, s["size"], multiple, s["imgsz"]) for s in sizes}
        if measure and reason is None else {},
        "weights": _weights(model_cls, [s["size"] for s in sizes]),
        "needs": needs,
    }


def inventory(measure: bool = True) -> dict[str, Any]:
    """Every detection family of the installed LibreYOLO, with its version: `{"libreyolo": ..., "families": [...]}`.
    `measure` builds each trainable size once to find its smallest image size (`measure_min_imgsz`, seconds per
    size on a CPU); without it `min_imgsz` is left empty.
    Families behind an optional dependency that is not installed are listed with `trainable` false and the package
    named (rfdetr needs `transformers`)."""
    import libreyolo  # noqa: F401 - populates the registry
    from libreyolo.models import try_ensure_rfdetr
    from libreyolo.models.base.model import BaseModel
    from libreyolo.models.registry import group_of

    rfdetr = try_ensure_rfdetr()
    families = {}
    for cls in BaseModel._registry:
        family = getattr(cls, "FAMILY", "")
        if not family or "detect" not in cls.SUPPORTED_TASKS or group_of(family) == "s":
            continue
        families[family] = describe(cls, group_of(family), ["transformers"] if family == "rfdetr" else [], measure)
    if rfdetr is None:
        families["rfdetr"] = {"family": "rfdetr", "class": "libreyolo.models.rfdetr.model.LibreRFDETR",
                              "group": group_of("rfdetr"), "sizes": [], "trainable": False,
                              "reason": "needs the package transformers (libreyolo[rfdetr]), which is not installed",
                              "trainer": None, "config": None, "defaults": {}, "override_keys": [],
                              "imgsz_multiple": DEFAULT_IMGSZ_MULTIPLE, "min_imgsz": {}, "weights": {},
                              "needs": ["transformers"]}
    return {"libreyolo": metadata.version("libreyolo"), "families": [families[k] for k in sorted(families)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench_assets.rf100vl.training.child.families")
    parser.add_argument("--write", action="store_true", help=f"store the inventory as {SNAPSHOT}")
    parser.add_argument("--no-measure", action="store_true", help="leave min_imgsz empty (builds no model)")
    args = parser.parse_args(argv)
    text = json.dumps(inventory(measure=not args.no_measure), indent=1, sort_keys=True) + "\n"
    if args.write:
        from bench_assets.platform.fsutil import atomic_write_bytes

        atomic_write_bytes(SNAPSHOT, text.encode())
        print(f"wrote {SNAPSHOT}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    from bench_assets.platform.process_gc import exit_process

    exit_process(main())
