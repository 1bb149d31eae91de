"""Fixtures of the campaign-check tests (test_warehouse_checks, test_check_boundaries, test_blind_campaign_checks):
a clean synthetic campaign per module and a private copy of it per test. A module that defines its own `home`
fixture uses that one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.synthetic_campaign import make_campaign


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
