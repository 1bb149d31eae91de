"""Standard JSON only in the annotation files a stranger sends: a key given twice (a second `"images": []` empties a
split silently) and NaN/Infinity anywhere (here in `info`, which no numeric check reads) are refused with the key,
or the token's line and column, named."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bench_assets.rf100vl.datasets import verify
from bench_assets.rf100vl.datasets.strict_json import StrictJsonError, strict_loads
from tests.conftest import CORPUS


def test_strict_loads_names_the_duplicate_key_and_the_token() -> None:
    assert strict_loads(b'{"a": [1, 2.5, null], "b": {"c": "NaN is text here"}}') == {
        "a": [1, 2.5, None], "b": {"c": "NaN is text here"}}
    with pytest.raises(StrictJsonError, match=r"duplicate key 'images' in one object \(keys: info, images, "
                                              r"categories, images\)"):
        strict_loads(b'{"info": {}, "images": [{"id": 1}], "categories": [], "images": []}')
    with pytest.raises(StrictJsonError, match="non-standard JSON token NaN at line 2 column 12"):
        strict_loads(b'{"info":\n  {"year": NaN}, "images": []}')
    with pytest.raises(StrictJsonError, match="token -Infinity at line 1 column 8"):
        strict_loads(b'{"a": [-Infinity]}')
    with pytest.raises(json.JSONDecodeError):
        strict_loads(b'{"a": ')


def _case(tmp_path: Path, edit: str, replacement: str) -> Path:
    root = tmp_path / "case"
    shutil.copytree(CORPUS / "broken" / "valid_base", root)
    ann = root / "valid" / "_annotations.coco.json"
    text = ann.read_text()
    assert edit in text
    ann.write_text(text.replace(edit, replacement, 1))
    return root


def test_verify_refuses_a_second_images_key_and_a_nan_in_info(tmp_path: Path) -> None:
    dup = _case(tmp_path / "d", '"images":', '"images": [], "images":')
    with pytest.raises(verify.DatasetInvalid) as exc:
        verify.verify_dataset(dup)
    (problem,) = exc.value.problems
    assert (problem.split, problem.field) == ("valid", "json") and "duplicate key 'images'" in problem.message
    assert "split has no images" not in str(exc.value)  # not the silent consequence: the cause
    nan = _case(tmp_path / "n", '"info": {', '"info": {"contributor_score": NaN, ')
    with pytest.raises(verify.DatasetInvalid) as exc:
        verify.verify_dataset(nan)
    (problem,) = exc.value.problems
    assert re.search(r"non-standard JSON token NaN at line \d+ column \d+", problem.message)
    assert "no NaN or Infinity" in problem.fix
