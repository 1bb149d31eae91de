"""The RF100-VL catalogue (vendored from the benchmark's dataset list) and the named suites.

Each catalogue dataset also carries the Roboflow project and integer version the published leaderboard entries
lock it at (`data/rf100vl_versions.csv`, schema `rf100vl.versions.v1`): the rf100vl-package acquisition asks for
exactly that version, and a submission's `dataset_version` is that integer.

Suites: `rf100vl` (all 100), `rf20vl` (the 20-dataset pilot subset) and `mini` (the embedded
synthetic datasets that run on a laptop). Datasets imported by hand can join any other suite name.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

DOMAINS = ("Aerial", "Document", "Flora and Fauna", "Industrial", "Medical", "Other", "Sports")
CATALOG_SUITES = ("rf100vl", "rf20vl")
# The mini suite's names are owned by the generator; repeated here so the catalogue stays import-light.
MINI_SUITE = ("mini-dense", "mini-shapes", "mini-tiny", "mini-large")
BUILTIN_SUITES = (*CATALOG_SUITES, "mini")


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    domain: str
    rf20vl: bool
    num_classes: int
    num_images: int
    test_images: int
    universe_slug: str
    license: str
    project_name: str  # the Roboflow project the versions lock names (may differ from universe_slug)
    version_id: int  # the Roboflow version of that project the published entries were scored on


VERSIONS_FILE = "data/rf100vl_versions.csv"
VERSIONS_SCHEMA = "rf100vl.versions.v1"


def data_file(name: str) -> Path:
    """A file vendored under bench_assets/rf100vl/ (e.g. "data/rf100vl_versions.csv")."""
    return Path(str(resources.files("bench_assets.rf100vl").joinpath(name)))


def _data_text(name: str) -> str:
    return data_file(name).read_text()


@cache
def load_versions() -> dict[str, tuple[str, int]]:
    """dataset -> (Roboflow project name, version id) as the published entries lock them."""
    rows = list(csv.DictReader(_data_text(VERSIONS_FILE).splitlines()))
    versions = {r["dataset"]: (r["project_name"], int(r["version_id"])) for r in rows}
    if len(versions) != len(rows) or len(versions) != 100:
        raise ValueError(f"{VERSIONS_FILE}: expected 100 distinct datasets, found {len(versions)} in {len(rows)} rows")
    return versions


@cache
def load_catalog() -> dict[str, CatalogEntry]:
    rows = list(csv.DictReader(_data_text("data/rf100vl_datasets.csv").splitlines()))
    versions = load_versions()
    if set(versions) != {r["name"] for r in rows}:
        raise ValueError(f"{VERSIONS_FILE} and rf100vl_datasets.csv list different datasets")
    catalog = {
        r["name"]: CatalogEntry(
            name=r["name"],
            domain=r["domain"],
            rf20vl=r["rf20vl"] == "1",
            num_classes=int(r["num_classes"]),
            num_images=int(r["num_images"]),
            test_images=int(r["test_images"]),
            universe_slug=r["universe_slug"],
            license=r["license"],
            project_name=versions[r["name"]][0],
            version_id=versions[r["name"]][1],
        )
        for r in rows
    }
    if len(catalog) != 100:
        raise ValueError(f"rf100vl_datasets.csv: expected 100 datasets, found {len(catalog)}")
    unknown = {e.domain for e in catalog.values()} - set(DOMAINS)
    if unknown:
        raise ValueError(f"rf100vl_datasets.csv: unknown domains {sorted(unknown)}")
    return catalog


def suite_members(suite: str) -> list[str]:
    """Dataset names of a built-in suite, largest first (the order a campaign should start them)."""
    if suite == "mini":
        return list(MINI_SUITE)
    catalog = load_catalog()
    if suite == "rf100vl":
        entries = list(catalog.values())
    elif suite == "rf20vl":
        entries = [e for e in catalog.values() if e.rf20vl]
    else:
        raise KeyError(f"unknown suite {suite!r}; built-in suites are {', '.join(BUILTIN_SUITES)}")
    return [e.name for e in sorted(entries, key=lambda e: (-e.num_images, e.name))]


def catalog_entry(name: str) -> CatalogEntry | None:
    return load_catalog().get(name)
