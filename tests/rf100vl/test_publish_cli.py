"""`bench publish` end to end: a synthetic campaign's real submission and artifacts, through the CLI, to the
loopback Hub stand-in, verified by listing; a second publish is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.submission.build import build_submission, submission_path
from tests.conftest import run_bench
from tests.hf_standin import hf_standin, isolate_hub_env
from tests.synthetic_campaign import make_campaign

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

TOKEN = "hf_FAKE-cli-publish-token-0123456789"


@pytest.fixture(autouse=True)
def _isolated_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    isolate_hub_env(monkeypatch, tmp_path / "hf_home")
    yield


def test_publish_a_campaign_through_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "bench"
    make_campaign(home, n_models=1, n_datasets=3, seed=4)
    atomic_write_json(submission_path(home, "syna-t"), build_submission(home, "syna-t"))

    dry = run_bench("publish", "--model", "syna-t", "--repo", "lab/rf100vl-results", "--tier", "all", "--dry-run",
                    home=home)
    assert dry.returncode == 0, dry.stderr
    assert "best.pt" in dry.stdout and "submission.json" in dry.stdout

    with hf_standin({}, repo_id="lab/rf100vl-results", required_token=TOKEN, page_size=4) as hub:
        env = {"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": TOKEN}
        res = run_bench("publish", "--model", "syna-t", "--repo", "lab/rf100vl-results", "--tier", "all",
                        home=home, env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        listed = [r for r in hub.requests if "/tree/" in r.path]
        assert len(listed) >= 2  # the verification followed the listing's pages
        again = run_bench("publish", "--model", "syna-t", "--repo", "lab/rf100vl-results", "--tier", "results",
                          home=home, env=env)
        assert again.returncode == 1 and "append" in again.stderr
        for out in (res, again, dry):
            assert TOKEN not in out.stdout + out.stderr
