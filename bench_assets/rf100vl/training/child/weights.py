"""What a weights file holds for a family and size: ``python -m bench_assets.rf100vl.training.child.weights FAMILY SIZE
PATH`` prints it as JSON (exit 0), or the reason it cannot be read (exit 1).

LibreYOLO loads a checkpoint non-strictly when the class count differs, so a file of another family or size "loads"
and the run silently trains from random weights wherever names or shapes did not match. This counts, against a
from-scratch model of the family and size, how many of the model's tensors the file provides by name and shape, in
all and in the backbone (the model's `backbone` module, else its first), plus the file's own metadata and its
SHA-256, size and parameter count. `training/pretrained.py` turns the counts into a verdict.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench_assets.platform.fsutil import sha256_file
from bench_assets.rf100vl.training.child.common import load_libraries, model_class

NB_CLASSES = 80  # COCO: what LibreYOLO's published detection weights were trained on


def file_state(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state dict, metadata) of a LibreYOLO checkpoint or a bare state dict. Read as LibreYOLO reads a file a user
    hands it (`load_untrusted_torch_file`: tensors and plain data only), never by unpickling arbitrary objects: the
    file may come from a stranger, and `bench weights import` reads it before anything else is known of it."""
    from libreyolo.utils.serialization import load_untrusted_torch_file

    loaded = load_untrusted_torch_file(path, map_location="cpu", context="pretrained weights")
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: holds a {type(loaded).__name__}, not a checkpoint or a state dict")
    state = loaded.get("model") if isinstance(loaded.get("model"), dict) else loaded.get("state_dict", loaded)
    state = {k.removeprefix("module."): v for k, v in state.items() if hasattr(v, "shape")}
    meta = {k: loaded[k] for k in ("model_family", "size", "nc", "epoch") if isinstance(loaded.get(k), (str, int))}
    if isinstance(loaded.get("names"), (dict, list)):
        meta["names"] = len(loaded["names"])
    return state, meta


def backbone_name(model: Any) -> str:
    """The model's `backbone` module, else its first child."""
    children = [name for name, _ in model.named_children()]
    return "backbone" if "backbone" in children else (children[0] if children else "")


def loaded_from(model: Any, path: Path) -> dict[str, Any]:
    """How many of `model`'s tensors hold exactly the file's values (by name): what loading really carried over,
    measured after LibreYOLO loaded `path` into the model the run trains."""
    import torch

    state, _ = file_state(path)
    target = model.state_dict()
    backbone = backbone_name(model)
    same = [k for k, v in target.items() if k in state and tuple(state[k].shape) == tuple(v.shape)
            and torch.equal(state[k].to(v.device, v.dtype), v)]
    return {"file_tensors": len(state), "model_tensors": len(target), "loaded_tensors": len(same),
            "backbone": backbone, "backbone_tensors": len([k for k in target if k.startswith(f"{backbone}.")]),
            "backbone_loaded": len([k for k in same if k.startswith(f"{backbone}.")])}


def inspect_weights(family: str, size: str, path: Path) -> dict[str, Any]:
    """The counts described in the module docstring."""
    load_libraries()  # offline settings first, then the libraries without collections
    cls = model_class(family)
    model = cls._from_scratch(size=size, nb_classes=NB_CLASSES, device="cpu", seed=0).model
    target = model.state_dict()
    backbone = backbone_name(model)
    state, meta = file_state(path)
    matched = [k for k, v in target.items() if k in state and tuple(state[k].shape) == tuple(v.shape)]
    shape_mismatch = [k for k, v in target.items() if k in state and tuple(state[k].shape) != tuple(v.shape)]
    in_backbone = [k for k in target if k.startswith(f"{backbone}.")]
    return {
        "family": family, "size": size, "sha256": sha256_file(path), "bytes": path.stat().st_size,
        "file_meta": meta, "file_tensors": len(state),
        "file_params": int(sum(v.numel() for v in state.values())),
        "model_tensors": len(target), "model_params": int(sum(v.numel() for v in target.values())),
        "loaded_tensors": len(matched), "shape_mismatches": len(shape_mismatch),
        "first_shape_mismatches": shape_mismatch[:5],
        "unused_file_tensors": len([k for k in state if k not in target]),
        "backbone": backbone, "backbone_tensors": len(in_backbone),
        "backbone_loaded": len([k for k in matched if k.startswith(f"{backbone}.")]),
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m bench_assets.rf100vl.training.child.weights FAMILY SIZE PATH", file=sys.stderr)
        return 2
    try:
        print(json.dumps(inspect_weights(args[0], args[1], Path(args[2]))))
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported the same way
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    from bench_assets.platform.process_gc import exit_process

    exit_process(main())
