"""Bad input on the terminal: one clear `bench:` message and exit 1, never a Python traceback by default.

Every hostile or broken corpus case goes through `bench datasets import` as a user would type it. The full
stack trace stays in the Dagster event log; `--verbose` prints it on the terminal too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench_assets.cli import main
from tests.conftest import CORPUS, run_bench

pytestmark = pytest.mark.integration  # not in `make test-fast`: Dagster runs, dbt, subprocesses, long setup

VALID = {"valid_base", "bbox_slightly_outside"}
CASES = ([f"broken/{p.name}" for p in sorted((CORPUS / "broken").iterdir()) if p.name not in VALID]
         + [f"links/{p.name}" for p in sorted((CORPUS / "links").iterdir())]
         + [f"tars/{p.name}" for p in sorted((CORPUS / "tars").iterdir()) if not p.name.startswith("good")])


@pytest.mark.parametrize("case", CASES)
def test_bad_input_gives_one_clear_message_and_no_traceback(bench_home: Path, tmp_path: Path,
                                                            capfd: pytest.CaptureFixture[str], case: str) -> None:
    src = tmp_path / Path(case).name
    if (CORPUS / case).is_dir():
        shutil.copytree(CORPUS / case, src, symlinks=True)
    else:
        shutil.copy(CORPUS / case, src)
    code = main(["datasets", "import", str(src), "--name", "bad"])
    err = capfd.readouterr().err
    assert code == 1
    assert "Traceback" not in err and "Stack Trace" not in err and 'File "' not in err, err
    failure = err[err.index("bench: dataset bad failed"):]
    if case.startswith("tars/"):  # safe_tar's refusals end in their own fix sentence
        assert "rebuild the archive" in failure or "archive the real files instead" in failure, failure
    else:
        assert "; fix: " in failure, failure
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
