"""LibreYOLO's detection families as this project knows them: the snapshot `child/families.py` wrote from the pinned
libreyolo (`training/libreyolo_families.json`), read without importing torch.

The snapshot names the libreyolo version it was read from; when the installed one differs, every use says so and
names the command that rewrites it (`tests/rf100vl/test_families.py` also compares it with the installed package).
Registering a model refuses a family that cannot train, with LibreYOLO's reason; loading a recipe checks each size's
image size against the family's rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).with_name("libreyolo_families.json")
REWRITE = "python -m bench_assets.rf100vl.training.child.families --write"


class FamilyError(ValueError):
    """A model key whose family or size LibreYOLO cannot train, with the reason and the fix."""


@dataclass(frozen=True)
class Family:
    family: str
    group: str | None
    sizes: tuple[tuple[str, int], ...]  # (size, LibreYOLO's default image size), in LibreYOLO's order
    trainable: bool
    reason: str | None
    trainer: str | None
    config: str | None
    defaults: dict[str, Any]
    override_keys: frozenset[str]
    imgsz_multiple: int
    min_imgsz: dict[str, int]  # per size, where a smaller image size fails (measured: child/families.py)
    weights: dict[str, dict[str, Any]]
    needs: tuple[str, ...]

    @property
    def size_names(self) -> list[str]:
        return [s for s, _ in self.sizes]

    def imgsz_problems(self, size: str, imgsz: int, multi_scale: bool | None = None) -> list[str]:
        """Why training `size` at `imgsz` fails (empty when it does not). With multi-scale training (the family's
        default unless the recipe's `train.multi_scale` says otherwise) the smallest batch LibreYOLO draws is
        `smallest_scale(imgsz)`, which must still reach the size's measured minimum."""
        problems = []
        if imgsz % self.imgsz_multiple:
            problems.append(f"{self.family} needs an image size that is a multiple of {self.imgsz_multiple}; "
                            f"{imgsz} is not")
        low = self.min_imgsz.get(size)
        scaled = self.defaults.get("multi_scale") is True if multi_scale is None else multi_scale
        smallest = smallest_scale(imgsz) if scaled else imgsz
        if low is not None and smallest < low:
            why = (f"multi-scale training draws batches down to {smallest} px" if scaled else f"{imgsz} is smaller")
            fix = " (or set train.multi_scale false)" if scaled else ""
            problems.append(f"{self.family}-{size}'s forward pass fails below {low} px and {why}; use at least "
                            f"{min_training_imgsz(low, self.imgsz_multiple, scaled)}{fix}")
        return problems


def smallest_scale(imgsz: int) -> int:
    """The smallest batch size LibreYOLO's DETR multi-scale collate draws for `imgsz` (0.75x, down to a multiple of
    32: `libreyolo.data.augment.detr._generate_scales`)."""
    return int(imgsz * 0.75 / 32) * 32


def min_training_imgsz(forward_min: int, multiple: int, multi_scale: bool) -> int:
    """The smallest multiple of `multiple` that trains when the forward pass needs `forward_min`."""
    imgsz = -(-forward_min // multiple) * multiple
    while multi_scale and smallest_scale(imgsz) < forward_min:
        imgsz += multiple
    return imgsz


def _family(d: dict[str, Any]) -> Family:
    return Family(family=d["family"], group=d["group"], sizes=tuple((s["size"], s["imgsz"]) for s in d["sizes"]),
                  trainable=d["trainable"], reason=d["reason"], trainer=d["trainer"], config=d["config"],
                  defaults=dict(d["defaults"]), override_keys=frozenset(d["override_keys"]),
                  imgsz_multiple=d["imgsz_multiple"], min_imgsz=dict(d.get("min_imgsz", {})),
                  weights=dict(d["weights"]), needs=tuple(d["needs"]))


@cache
def _read(path: Path) -> tuple[str, dict[str, Family]]:
    doc = json.loads(path.read_text())
    return doc["libreyolo"], {d["family"]: _family(d) for d in doc["families"]}


def snapshot_version(path: Path = SNAPSHOT) -> str:
    return _read(path)[0]


def stale_note(path: Path = SNAPSHOT) -> str | None:
    """A sentence when the installed libreyolo is not the one the snapshot was read from, else None."""
    want = snapshot_version(path)
    try:
        have = metadata.version("libreyolo")
    except metadata.PackageNotFoundError:
        return f"libreyolo is not installed; {path.name} describes libreyolo {want}"
    if have != want:
        return f"{path.name} describes libreyolo {want} but {have} is installed: run `{REWRITE}`"
    return None


def families(path: Path = SNAPSHOT) -> dict[str, Family]:
    return dict(_read(path)[1])


def family(name: str, path: Path = SNAPSHOT) -> Family:
    known = _read(path)[1]
    if name not in known:
        trainable = ", ".join(f for f, x in sorted(known.items()) if x.trainable)
        raise FamilyError(f"LibreYOLO {snapshot_version(path)} has no detection family {name!r}; the trainable ones: "
                          f"{trainable} (`bench models families` lists all)")
    return known[name]


def check_trainable(family_name: str, size: str, path: Path = SNAPSHOT) -> Family:
    """The family, when LibreYOLO can train `family_name-size`; FamilyError with its reason otherwise."""
    fam = family(family_name, path)
    if not fam.trainable:
        raise FamilyError(f"{family_name} cannot be trained with LibreYOLO {snapshot_version(path)}: {fam.reason}")
    if size not in fam.size_names:
        raise FamilyError(f"{family_name} has no size {size!r}; its sizes: {', '.join(fam.size_names)}")
    return fam
