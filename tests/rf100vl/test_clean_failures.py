"""Bad input: every hostile or broken corpus case refused with a message naming the fix, nothing stored; and on the
terminal one clear `bench:` message and exit 1, never a Python traceback by default.

Every case goes through what `rf100vl/dataset` runs on an import (`local_spec`, then `materialize_dataset`); one case
of each kind of refusal (each exception class the cases raise) also goes through `bench datasets import` as a user
would type it, a Dagster run included. The full stack trace stays in the Dagster event log; `--verbose` prints it on
the terminal too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench_assets.cli import main
from bench_assets.platform.archives import UnsafeArchiveError
from bench_assets.platform.fsutil import DiskSpaceError
from bench_assets.rf100vl.datasets.sources import SourceError, local_spec
from bench_assets.rf100vl.datasets.store import DatasetBlocked, materialize_dataset
from bench_assets.rf100vl.datasets.verify import DatasetInvalid
from tests.conftest import CORPUS, run_bench

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

VALID = {"valid_base", "bbox_slightly_outside"}
CASES = ([f"broken/{p.name}" for p in sorted((CORPUS / "broken").iterdir()) if p.name not in VALID]
         + [f"links/{p.name}" for p in sorted((CORPUS / "links").iterdir())]
         + [f"tars/{p.name}" for p in sorted((CORPUS / "tars").iterdir()) if not p.name.startswith("good")])
# What the dataset asset turns into a failed partition with its message (defs/dataset_assets.py).
REFUSALS = (DatasetInvalid, DatasetBlocked, DiskSpaceError, SourceError, UnsafeArchiveError, ValueError)
# One case per kind of refusal the cases raise, run end to end through `bench datasets import`.
END_TO_END = {DatasetInvalid: "broken/bbox_outside", UnsafeArchiveError: "tars/dotdot.tar"}


def _copy(case: str, tmp_path: Path) -> Path:
    src = tmp_path / Path(case).name
    if (CORPUS / case).is_dir():
        shutil.copytree(CORPUS / case, src, symlinks=True)
    else:
        shutil.copy(CORPUS / case, src)
    return src


def _says_the_fix(case: str, message: str) -> bool:
    if case.startswith("tars/"):  # safe_tar's refusals end in their own fix sentence
        return "rebuild the archive" in message or "archive the real files instead" in message
    return "; fix: " in message


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_naming_the_fix_and_nothing_is_stored(tmp_path: Path, case: str) -> None:
    home = tmp_path / "home"
    with pytest.raises(REFUSALS) as caught:
        materialize_dataset(home, "bad", local_spec(_copy(case, tmp_path)), home / "hf_cache")
    assert _says_the_fix(case, str(caught.value)), caught.value
    assert type(caught.value) in END_TO_END, f"{case}: a new kind of refusal, {type(caught.value).__name__}: add " \
                                             "one of its cases to END_TO_END"
    assert not (home / "datasets" / "bad").exists()


@pytest.mark.parametrize("case", sorted(END_TO_END.values()))
def test_bad_input_gives_one_clear_message_and_no_traceback(bench_home: Path, tmp_path: Path,
                                                            capfd: pytest.CaptureFixture[str], case: str) -> None:
    code = main(["datasets", "import", str(_copy(case, tmp_path)), "--name", "bad"])
    err = capfd.readouterr().err
    assert code == 1
    assert "Traceback" not in err and "Stack Trace" not in err and 'File "' not in err, err
    assert _says_the_fix(case, err[err.index("bench: dataset bad failed"):]), err
    assert not (bench_home / "datasets" / "bad").exists()


def test_verbose_prints_the_stack_trace(bench_home: Path, tmp_path: Path) -> None:
    src = tmp_path / "case"
    shutil.copytree(CORPUS / "broken" / "file_name_absolute", src)
    quiet = run_bench("datasets", "import", str(src), "--name", "bad", home=bench_home)
    loud = run_bench("--verbose", "datasets", "import", str(src), "--name", "bad", home=bench_home)
    assert quiet.returncode == loud.returncode == 1
    assert "Stack Trace" not in quiet.stderr and "Stack Trace" in loud.stderr
    for r in (quiet, loud):
        assert "'/etc/passwd' is an absolute path" in r.stderr
