"""Fixtures of the campaign-check tests (test_warehouse_checks, test_check_boundaries, test_blind_campaign_checks):
a clean synthetic campaign per module and a private copy of it per test. A module that defines its own `home`
fixture uses that one. And the mini datasets the tests here read (test_mini, test_verify), generated once per run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.shared_cache import shared
from tests.synthetic_campaign import make_campaign


@pytest.fixture(scope="session")
def mini_raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four mini datasets in the raw Roboflow layout (tests/conftest.py's `mini_raw`), generated once per run
    of the suite rather than once per xdist worker (tests/shared_cache.py: ~6 s of CPU each time); the tests only
    read them."""
    from bench_assets.rf100vl.datasets.catalog import MINI_SUITE
    from bench_assets.rf100vl.datasets.mini import generate_mini_dataset

    def build(folder: Path) -> None:
        for name in MINI_SUITE:
            generate_mini_dataset(name, folder / "raw" / name)

    return shared(tmp_path_factory, "mini-raw", {"datasets": list(MINI_SUITE)}, build) / "raw"


@pytest.fixture(scope="module")
def clean_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("clean") / "bench"
    make_campaign(home, n_models=4, n_datasets=6, seed=1)
    return home


@pytest.fixture
def home(clean_campaign: Path, tmp_path: Path) -> Path:
    """A private copy of the clean campaign (paths inside artifacts point at the copy's own files)."""
    dst = tmp_path / "bench"
    shutil.copytree(clean_campaign, dst, symlinks=True)
    for p in list(dst.glob("runs/*/*/*/stats.json")) + list(dst.glob("models/*.json")):
        p.write_text(p.read_text().replace(str(clean_campaign), str(dst)))
    return dst
