"""Fixtures of the campaign-check tests (test_warehouse_checks, test_check_boundaries, test_blind_campaign_checks):
a clean synthetic campaign (one for the whole run) and a private copy of it per test. A module that defines its own
`home` fixture uses that one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared_cache import private_copy, shared
from tests.synthetic_campaign import make_campaign


@pytest.fixture(scope="module")
def clean_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made once per run of the suite (tests/shared_cache.py) and never changed: tests plant in `home`, a copy."""
    args = {"n_models": 4, "n_datasets": 6, "seed": 1}
    return shared(tmp_path_factory, "clean-campaign", args, lambda folder: make_campaign(folder / "bench", **args)
                  ) / "bench"


@pytest.fixture
def home(clean_campaign: Path, tmp_path: Path) -> Path:
    """A private copy of the clean campaign (paths inside artifacts point at the copy's own files)."""
    return private_copy(clean_campaign, tmp_path / "bench")
