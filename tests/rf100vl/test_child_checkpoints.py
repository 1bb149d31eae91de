"""How the training child reads and writes LibreYOLO checkpoints without paying for what it does not use.

* `checkpoint_scalars` (what `checkpoint_meta` reads: the epoch of last.pt, the best epoch of best.pt) gives what
  `torch.load` gives for every scalar, runs nothing the file names and reads no tensor; a file it cannot read is
  absent. test_children.py checks it against genuine LibreYOLO checkpoints.
* A checkpoint object LibreYOLO saves to several files in one epoch is serialised once and copied; last.pt is
  still written last.
* Once training returns, the trained model's reload of its best checkpoint is skipped; a training that raised
  leaves the model as it was.
"""

from __future__ import annotations

import collections
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bench_assets.rf100vl.training.child.checkpoint_file import checkpoint_scalars


class _OpensAFile:
    """Unpickled by torch.load(weights_only=False), this creates `path`: what a hostile checkpoint could run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return open, (str(self.path), "w")


def _libreyolo_like(tmp_path: Path) -> dict[str, Any]:
    import numpy as np
    import torch

    state = collections.OrderedDict([("conv.weight", torch.randn(4, 3, 3, 3)), ("bn.num_batches_tracked",
                                                                              torch.tensor(7))])
    return {
        "model_family": "yolo9", "size": "t", "nc": 2, "epoch": 4, "best_epoch": 3, "is_ema_weights": True,
        "best_mAP50_95": np.float64(0.4375), "best_mAP50": 0.61, "loss": float("nan"), "names": {0: "a", 1: "b"},
        "model": state, "ema": state, "optimizer": {"state": {0: {"momentum_buffer": torch.ones(3)}},
                                                     "param_groups": [{"lr": 0.01, "params": [0]}]},
        "config": {"data": tmp_path / "data.yaml", "imgsz": (128, 128), "classes": {"a", "b"}},
        "rng_state": {"torch": torch.get_rng_state()}, "hook": _OpensAFile(tmp_path / "ran"),
    }


def test_the_scalars_are_what_torch_load_reads_and_nothing_in_the_file_runs(tmp_path: Path) -> None:
    import math

    import torch

    path = tmp_path / "last.pt"
    torch.save(_libreyolo_like(tmp_path), path)
    got = checkpoint_scalars(path)
    assert not (tmp_path / "ran").exists()  # the reader ran nothing the pickle names
    full = torch.load(str(path), map_location="cpu", weights_only=False)
    assert (tmp_path / "ran").exists()  # ... which torch.load does: the file is hostile for real
    want = {k: v for k, v in full.items() if isinstance(v, (int, float, str, bool))}
    assert got is not None and set(got) == set(want) == {"model_family", "size", "nc", "epoch", "best_epoch",
                                                         "is_ema_weights", "best_mAP50_95", "best_mAP50", "loss"}
    assert all(got[k] == want[k] and type(got[k]) is type(want[k]) for k in want if k != "loss")
    assert math.isnan(got["loss"]) and got["best_mAP50_95"] == 0.4375


@pytest.mark.parametrize("content", ["empty", "text", "truncated", "two_pickles", "a_list"])
def test_a_checkpoint_it_cannot_read_is_absent(tmp_path: Path, content: str) -> None:
    import torch

    path = tmp_path / "last.pt"
    if content == "empty":
        path.write_bytes(b"")
    elif content == "text":
        path.write_text("epoch: 3\n")
    elif content == "truncated":
        torch.save(_libreyolo_like(tmp_path), path)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif content == "two_pickles":
        torch.save({"epoch": 1}, path)
        with zipfile.ZipFile(path, "a") as z:
            z.writestr("other/data.pkl", b"")
    else:
        torch.save([{"epoch": 1}], path)
    assert checkpoint_scalars(path) is None


def _hooks(model: Any = None) -> Any:
    from bench_assets.rf100vl.training.child.train import _Hooks
    from bench_assets.rf100vl.training.specs import FaultInjection

    return _Hooks(FaultInjection(), physical_batch=4, model=model)


def test_one_object_saved_to_several_files_is_serialised_once(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """LibreYOLO's _save_checkpoint saves one dict to last.pt, best.pt and epoch_N.pt: one serialisation, two
    copies, every file the same bytes, last.pt written last; a different object is serialised on its own."""
    import torch

    from bench_assets.rf100vl.training.child import train

    serialised: list[str] = []
    order: list[str] = []

    def save(obj: Any, f: Any, *_a: Any, **_k: Any) -> None:
        serialised.append(Path(str(f)).name)
        order.append(Path(str(f)).name)
        Path(f).write_bytes(repr(obj).encode())

    def copy(src: Path, dst: Path, real: Any = train.atomic_copy_file) -> None:
        order.append(dst.name)
        real(src, dst)

    monkeypatch.setattr(torch, "save", save)
    monkeypatch.setattr(train, "atomic_copy_file", copy)
    checkpoint, other = {"epoch": 9}, {"epoch": 9}

    def libreyolo_like_save(_trainer: Any) -> None:
        torch.save(checkpoint, tmp_path / "last.pt")
        torch.save(checkpoint, tmp_path / "best.pt")
        torch.save(checkpoint, tmp_path / "epoch_10.pt")
        torch.save(other, tmp_path / "other.pt")

    hooks = _hooks()
    hooks._orig_save = libreyolo_like_save
    hooks.pending_save = (object(), (), {})
    hooks.flush_save()
    assert serialised == ["best.pt", "other.pt"]
    names = ("best.pt", "epoch_10.pt", "last.pt", "other.pt")
    assert {n: (tmp_path / n).read_bytes() for n in names} == {n: b"{'epoch': 9}" for n in names}
    assert order == ["best.pt", "epoch_10.pt", "other.pt", "last.pt"]
    assert not list(tmp_path.glob(".*.tmp"))


class _Trainer:
    """A trainer class whose `train` LibreYOLO's model wrapper would call (patched as BaseTrainer is)."""

    fail = False

    def train(self) -> dict[str, str]:
        if self.fail:
            raise RuntimeError("epoch 2 failed")
        return {"best_checkpoint": "best.pt"}

    def _train_epoch(self, epoch: int) -> None:
        pass

    def _save_checkpoint(self) -> None:
        pass


class _Model:
    def __init__(self) -> None:
        self.loaded: list[str] = []

    def _load_weights(self, path: str) -> None:
        self.loaded.append(path)


@pytest.mark.parametrize("fails", [False, True])
def test_the_trained_model_is_not_reloaded_after_training(fails: bool) -> None:
    model = _Model()
    trainer_cls = type("Trainer", (_Trainer,), {"fail": fails})
    _hooks(model)._patch_trainer(trainer_cls, None)
    model._load_weights("init.pt")  # before training, loading works as LibreYOLO wrote it
    if fails:
        with pytest.raises(RuntimeError, match="epoch 2"):
            trainer_cls().train()
    else:
        assert trainer_cls().train() == {"best_checkpoint": "best.pt"}
    model._load_weights("best.pt")  # what every family's train() does once the trainer returns
    assert model.loaded == (["init.pt", "best.pt"] if fails else ["init.pt"])
