"""The paper transform sets (vendored `data/paper_transform_sets.csv`): which transforms each library offers
per media kind, for micro runs and for DataLoader pipelines.

A paper set keeps only transforms present in at least two libraries: a speed comparison needs a pair.
The rest is listed as excluded with the reason, so a reader sees what was left out and why.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources

MEDIA = ("rgb", "9ch", "video")
MIN_LIBRARIES = 2


@dataclass(frozen=True)
class TransformRow:
    media: str
    transform: str
    libraries: tuple[str, ...]  # micro: libraries with an equivalent transform
    dataloader_libraries: tuple[str, ...]  # DataLoader recipe: ... ("dali" = GPU only)
    notes: str


def _libs(text: str) -> tuple[str, ...]:
    return tuple(x.strip().removesuffix("(gpu)") for x in text.split(";") if x.strip())


@cache
def load_rows() -> tuple[TransformRow, ...]:
    text = resources.files("bench_assets.augbench").joinpath("data/paper_transform_sets.csv").read_text()
    rows = []
    for r in csv.DictReader(text.splitlines()):
        if r["set"] not in MEDIA:
            raise ValueError(f"paper_transform_sets.csv: unknown set {r['set']!r} for {r['transform']}")
        rows.append(TransformRow(r["set"], r["transform"], _libs(r["libraries"]), _libs(r["dataloader_libraries"]),
                                 r["notes"].strip()))
    return tuple(rows)


def all_rows(media: str) -> list[TransformRow]:
    return [r for r in load_rows() if r.media == media]


def paper_set(media: str) -> list[TransformRow]:
    """The transforms of a media kind's paper table (in at least two libraries), in CSV order."""
    return [r for r in all_rows(media) if len(r.libraries) >= MIN_LIBRARIES]


def excluded(media: str) -> list[tuple[str, str]]:
    """(transform, reason) of rows left out of the paper set."""
    out = []
    for r in all_rows(media):
        if len(r.libraries) < MIN_LIBRARIES:
            libs = ", ".join(r.libraries) or "no library"
            out.append((r.transform, f"only in {libs}; a paper row needs at least {MIN_LIBRARIES} libraries"
                        + (f" ({r.notes})" if r.notes else "")))
    return out


def row(media: str, transform: str) -> TransformRow | None:
    return next((r for r in all_rows(media) if r.transform == transform), None)
