"""What an import does not store is said: files no annotation references (a tar bomb's 100,000 files under junk/
imported "silently" before) are counted, sized and named in the manifest, the log and the asset's metadata."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench_assets.rf100vl.datasets.sources import SourceSpec
from bench_assets.rf100vl.datasets.store import materialize_dataset
from tests.conftest import CORPUS


def test_unreferenced_files_are_counted_sized_and_named(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(CORPUS / "broken" / "valid_base", src)
    (src / "junk").mkdir()
    for i in range(3):
        (src / "junk" / f"{i}.bin").write_bytes(b"x" * (i + 1))
    (src / "train" / "stray.png").write_bytes(b"not listed")
    lines: list[str] = []
    rec = materialize_dataset(tmp_path / "home", "dropped", SourceSpec(kind="local", path=str(src)),
                              tmp_path / "cache", log=lines.append)
    dropped = rec.manifest["dropped_unreferenced"]
    assert dropped == {"files": 4, "bytes": 1 + 2 + 3 + 10,
                       "examples": ["junk/0.bin", "junk/1.bin", "junk/2.bin", "train/stray.png"]}
    said = [ln for ln in lines if "not stored" in ln]
    assert said == ["dropped: not stored: 4 file(s), 16 B, that no annotation references (first: junk/0.bin, "
                    "junk/1.bin, junk/2.bin, train/stray.png); 0 macOS junk file(s)"]
    assert not (rec.path / "junk").exists() and not (rec.path / "train" / "stray.png").exists()


def test_images_with_more_boxes_than_the_protocol_scores_are_warned_about(tmp_path: Path) -> None:
    """501 boxes on one test image (the stranger's 252 MB file had ~95,000 per image): imported, with a warning that
    names how many images exceed maxDets 500, and the count in the manifest (the boxes_within_max_det check's)."""
    import json

    from bench_assets.rf100vl.datasets.verify import PROTOCOL_MAX_DET
    from bench_assets.rf100vl.scoring.eval_store import MAX_DET

    assert PROTOCOL_MAX_DET == MAX_DET  # the datasets layer's copy of the protocol's limit
    src = tmp_path / "src"
    shutil.copytree(CORPUS / "broken" / "valid_base", src)
    ann = src / "test" / "_annotations.coco.json"
    doc = json.loads(ann.read_text())
    base = doc["annotations"][0]
    doc["annotations"] += [{**base, "id": 100 + i, "bbox": [1.0 + i % 40, 1.0 + i // 40, 2.0, 2.0], "area": 4.0}
                           for i in range(PROTOCOL_MAX_DET)]
    ann.write_text(json.dumps(doc))
    lines: list[str] = []
    rec = materialize_dataset(tmp_path / "home", "dense", SourceSpec(kind="local", path=str(src)),
                              tmp_path / "cache", log=lines.append)
    assert rec.manifest["splits"]["test"]["images_over_max_det"] == 1
    assert rec.manifest["splits"]["train"]["images_over_max_det"] == 0
    assert [ln for ln in lines if "WARNING" in ln] == [
        "dense: WARNING: test: 1 of 2 image(s) have more than 500 boxes (max 501): the protocol scores 500 "
        "detections per image, so recall on them stays below 1 whatever the model"]
