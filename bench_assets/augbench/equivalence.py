"""The committed equivalence audit as the product reads it: which paper transforms' libraries disagree (light: csv
only). The audit that writes the CSV is `equivalence_audit.py`, run offline by `scripts/augbench_equivalence.py`."""

from __future__ import annotations

import csv
from pathlib import Path

from bench_assets.augbench import transform_specs as ts

CSV_PATH = Path(__file__).resolve().parent / "data" / "equivalence_audit.csv"


def read_csv(path: Path = CSV_PATH) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def flagged_transforms(media: str, path: Path = CSV_PATH) -> dict[str, str]:
    """{transform: reason} for the transforms of `media` the committed audit flags: "library: reason; ..." and,
    when there is one, " -- " + the transform's note (e.g. which library is the odd one out)."""
    ts.check_media(media)
    out: dict[str, list[str]] = {}
    notes: dict[str, str] = {}
    for r in read_csv(path):
        if r["media"] == media and r["flag"] == "true":
            out.setdefault(r["transform"], []).append(f"{r['library']}: {r['reason']}")
            notes[r["transform"]] = r.get("note", "")
    return {t: "; ".join(reasons) + (f" -- {notes[t]}" if notes[t] else "") for t, reasons in out.items()}


def verdicts(media: str, path: Path = CSV_PATH) -> dict[str, str]:
    """{transform: verdict} of the committed audit for `media`."""
    ts.check_media(media)
    return {r["transform"]: r["verdict"] for r in read_csv(path) if r["media"] == media}
