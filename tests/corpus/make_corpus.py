"""Regenerate the committed corpus of broken Roboflow-layout datasets and hostile tar archives.

Usage::

    python tests/corpus/make_corpus.py            # rewrite tests/corpus/{broken,tars,README.md} in place
    python tests/corpus/make_corpus.py --out DIR  # write the same tree elsewhere

Every broken dataset is the tiny valid base with exactly ONE defect applied, so an importer test can
assert that the defect (and nothing else) is reported. The output is byte-identical on every run:
fixed pixel data, fixed JSON formatting, fixed tar metadata and member order.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import shutil
import struct
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
BROKEN_DIR = "broken"
LINKS_DIR = "links"
TARS_DIR = "tars"
README = "README.md"

SPLITS = ("train", "valid", "test")
ANNOTATIONS_FILE = "_annotations.coco.json"
DATASET_NAME = "corpus-base"
IMAGE_SIZE = 48
EXPORT_DATE = "2024-01-15T12:00:00+00:00"
CLASSES = (("cat", (220, 40, 40)), ("dog", (40, 70, 220)))

# Two images per split; each box is (category_id, x, y, w, h). test needs >= 2 boxes for the
# duplicate-annotation-id case.
BOXES: dict[str, tuple[tuple[tuple[int, int, int, int, int], ...], ...]] = {
    "train": (((1, 4, 4, 16, 16), (2, 26, 20, 18, 20)), ((2, 10, 10, 24, 24),)),
    "valid": (((1, 6, 8, 20, 14),), ((1, 2, 2, 12, 12), (2, 28, 28, 16, 16))),
    "test": (((2, 12, 6, 22, 30),), ((1, 5, 25, 20, 20), (2, 30, 4, 14, 14))),
}

# Tar metadata pinned so archives are byte-identical regardless of who runs the script.
TAR_MTIME = 1_705_320_000
TAR_TOP = "good"

Files = dict[str, bytes]  # posix path relative to the dataset root -> content
Coco = dict[str, Any]

CASES: dict[str, str] = {
    "valid_base": "the clean base: 3 splits x 2 images, 2 classes + category-0 placeholder",
    "bad_json": "valid/_annotations.coco.json truncated mid-file (invalid JSON)",
    "missing_image": "train JSON lists an image whose file is absent",
    "truncated_image": "a test image file cut to half its bytes",
    "unreadable_image": "a train image file replaced by random bytes of the same length (not an image)",
    "bbox_outside": "a train bbox reaching 20 px beyond the image width",
    "bbox_nonpositive": "a valid bbox with width 0 (area 0)",
    "unknown_category": "a train annotation with category_id 99",
    "duplicate_image_id": "two train images share id 0 (the second image's boxes follow it)",
    "duplicate_annotation_id": "two test annotations share id 0",
    "empty_split": "test JSON has zero images and zero annotations (its image files are gone too)",
    "area_mismatch": "a train annotation whose area is 10x its bbox w*h",
    "unknown_image_ref": "a train annotation whose image_id (99) is not in images",
    "bbox_slightly_outside": "VALID: a train bbox 0.5 px past the right edge; clip it and count it, no error",
    "file_name_traversal": "a train image listed as ../../../../victim.png, its file moved out of the dataset "
                           "(path traversal: a naive importer reads and writes outside its folders)",
    "file_name_absolute": "a train image listed by the absolute path /etc/passwd",
    "file_name_other_split": "a train image listed as ../valid/<a valid image> ('..' into another split)",
    "file_name_subdir": "a train image listed as sub/<name>, its file in train/sub/ (subfolders are refused)",
    "deep_json": "train JSON with an info value nested 5,000 lists deep (RecursionError in a naive parser)",
    "bbox_string": "a train bbox written as strings [\"4\", \"4\", \"16\", \"16\"]",
    "image_id_string": "a train image id written as the string \"1\" (its boxes keep the integer 1)",
    "image_id_float": "a train annotation image_id written as the float 1.0",
    "image_bomb": "a 70-byte train PNG declaring 20000x20000 pixels (a decompression bomb), JSON size to match",
}

# Cases that need symbolic links (written by os.symlink; git stores them as links).
LINK_CASES: dict[str, str] = {
    "dir_symlink": "train/sub is a link to ../valid and a train image is listed as sub/<a valid image>",
    "image_symlink": "a train image file is a link to an image of the valid split (a link leaving its split)",
    "split_symlink": "the test split folder is a link to the valid folder",
}

TAR_CASES: dict[str, str] = {
    "good.tar": "the valid base under a top folder good/",
    "good_macos.tar": "good.tar plus macOS junk (__MACOSX/, .DS_Store, ._ AppleDouble) to drop",
    "dotdot.tar": "the valid base plus a member named ../escape.txt (path traversal)",
    "absolute.tar": "the valid base plus a member named /tmp/abs_escape.txt (absolute path)",
    "symlink.tar": "the valid base plus a symlink good/train/link.png -> /etc/passwd",
}


# ---------------------------------------------------------------- the valid base


def image_file_name(split: str, index: int) -> str:
    # Roboflow-style name; the hash-like suffix is fixed per image so names never move.
    number = SPLITS.index(split) * 2 + index
    return f"img_{number:04d}_png.rf.{number:04x}c0ffee0{number:05x}.png"


def render_image(boxes: tuple[tuple[int, int, int, int, int], ...]) -> bytes:
    pixels = np.full((IMAGE_SIZE, IMAGE_SIZE, 3), 128, dtype=np.uint8)
    for category_id, x, y, w, h in boxes:
        pixels[y : y + h, x : x + w] = CLASSES[category_id - 1][1]
    buffer = io.BytesIO()
    Image.fromarray(pixels, mode="RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def dump_coco(coco: Coco) -> bytes:
    # Indented so reviewers can read the defect in a diff.
    return (json.dumps(coco, indent=2) + "\n").encode("utf-8")


def split_coco(split: str) -> Coco:
    categories = [{"id": 0, "name": DATASET_NAME, "supercategory": "none"}]
    categories += [{"id": i, "name": n, "supercategory": DATASET_NAME} for i, (n, _) in enumerate(CLASSES, 1)]
    images, annotations = [], []
    for image_id, boxes in enumerate(BOXES[split]):
        images.append(
            {
                "id": image_id,
                "license": 1,
                "file_name": image_file_name(split, image_id),
                "height": IMAGE_SIZE,
                "width": IMAGE_SIZE,
                "date_captured": EXPORT_DATE,
            }
        )
        for category_id, x, y, w, h in boxes:
            annotations.append(_annotation(len(annotations), image_id, category_id, [x, y, w, h]))
    return {
        "info": {
            "year": "2024",
            "version": "1",
            "description": "Exported from roboflow.com",
            "contributor": "",
            "url": f"https://public.roboflow.com/object-detection/{DATASET_NAME}",
            "date_created": EXPORT_DATE,
        },
        "licenses": [{"id": 1, "url": "https://creativecommons.org/licenses/by/4.0/", "name": "CC BY 4.0"}],
        "categories": categories,
        "images": images,
        "annotations": annotations,
    }


def _annotation(annotation_id: int, image_id: int, category_id: int, bbox: list[float]) -> Coco:
    x, y, w, h = (float(v) for v in bbox)
    return {
        "id": annotation_id,
        "image_id": image_id,
        "category_id": category_id,
        "bbox": [x, y, w, h],
        "area": w * h,
        "segmentation": [],
        "iscrowd": 0,
    }


def base_files() -> Files:
    files: Files = {
        "README.dataset.txt": f"# {DATASET_NAME} > v1\nSynthetic corpus base\nLicense: CC BY 4.0\n".encode(),
        "README.roboflow.txt": f"{DATASET_NAME} - v1\nExported via roboflow.com (synthetic)\n".encode(),
    }
    for split in SPLITS:
        files[f"{split}/{ANNOTATIONS_FILE}"] = dump_coco(split_coco(split))
        for index, boxes in enumerate(BOXES[split]):
            files[f"{split}/{image_file_name(split, index)}"] = render_image(boxes)
    return files


# ---------------------------------------------------------------- one defect each


def load_coco(files: Files, split: str) -> Coco:
    return json.loads(files[f"{split}/{ANNOTATIONS_FILE}"])


def edit_coco(files: Files, split: str, edit: Callable[[Coco], None]) -> Files:
    out = dict(files)
    coco = copy.deepcopy(load_coco(files, split))
    edit(coco)
    out[f"{split}/{ANNOTATIONS_FILE}"] = dump_coco(coco)
    return out


def set_bbox(annotation: Coco, x: float, y: float, w: float, h: float) -> None:
    # Keep area == w*h so a bbox defect is not also an area defect.
    annotation["bbox"] = [float(x), float(y), float(w), float(h)]
    annotation["area"] = float(w) * float(h)


def bad_json(files: Files) -> Files:
    path = f"valid/{ANNOTATIONS_FILE}"
    return {**files, path: files[path][: len(files[path]) // 2]}


def missing_image(files: Files) -> Files:
    out = dict(files)
    del out[f"train/{image_file_name('train', 1)}"]
    return out


def truncated_image(files: Files) -> Files:
    path = f"test/{image_file_name('test', 0)}"
    return {**files, path: files[path][: len(files[path]) // 2]}


def unreadable_image(files: Files) -> Files:
    path = f"train/{image_file_name('train', 0)}"
    garbage = np.random.default_rng(404).bytes(len(files[path]))
    return {**files, path: garbage}


def bbox_outside(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        x, y, _, h = coco["annotations"][1]["bbox"]
        set_bbox(coco["annotations"][1], x, y, IMAGE_SIZE + 20 - x, h)

    return edit_coco(files, "train", edit)


def bbox_slightly_outside(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        x, y, _, h = coco["annotations"][1]["bbox"]
        set_bbox(coco["annotations"][1], x, y, IMAGE_SIZE + 0.5 - x, h)

    return edit_coco(files, "train", edit)


def bbox_nonpositive(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        x, y, _, h = coco["annotations"][0]["bbox"]
        set_bbox(coco["annotations"][0], x, y, 0.0, h)

    return edit_coco(files, "valid", edit)


def unknown_category(files: Files) -> Files:
    return edit_coco(files, "train", lambda coco: coco["annotations"][0].update(category_id=99))


def duplicate_image_id(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        old_id = coco["images"][1]["id"]
        coco["images"][1]["id"] = coco["images"][0]["id"]
        # Re-point the second image's boxes too, so the only defect is the shared id.
        for annotation in coco["annotations"]:
            if annotation["image_id"] == old_id:
                annotation["image_id"] = coco["images"][0]["id"]

    return edit_coco(files, "train", edit)


def duplicate_annotation_id(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        coco["annotations"][1]["id"] = coco["annotations"][0]["id"]

    return edit_coco(files, "test", edit)


def empty_split(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        coco["images"] = []
        coco["annotations"] = []

    out = edit_coco(files, "test", edit)
    # Drop the files as well: orphan images would be a second, different finding.
    for index in range(len(BOXES["test"])):
        del out[f"test/{image_file_name('test', index)}"]
    return out


def area_mismatch(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        _, _, w, h = coco["annotations"][0]["bbox"]
        coco["annotations"][0]["area"] = 10 * w * h

    return edit_coco(files, "train", edit)


def unknown_image_ref(files: Files) -> Files:
    return edit_coco(files, "train", lambda coco: coco["annotations"][0].update(image_id=99))


def _retarget_image(files: Files, file_name: str, keep_file: bool = False) -> Files:
    """Train image 0 listed under `file_name`; its own file removed unless `keep_file`."""
    own = image_file_name("train", 0)
    out = edit_coco(files, "train", lambda coco: coco["images"][0].update(file_name=file_name))
    if not keep_file:
        del out[f"train/{own}"]
    return out


def file_name_traversal(files: Files) -> Files:
    return _retarget_image(files, "../../../../victim.png")


def file_name_absolute(files: Files) -> Files:
    return _retarget_image(files, "/etc/passwd")


def file_name_other_split(files: Files) -> Files:
    return _retarget_image(files, f"../valid/{image_file_name('valid', 0)}")


def file_name_subdir(files: Files) -> Files:
    own = image_file_name("train", 0)
    out = _retarget_image(files, f"sub/{own}")
    out[f"train/sub/{own}"] = files[f"train/{own}"]
    return out


DEEP_JSON_LEVELS = 5_000


def deep_json(files: Files) -> Files:
    path = f"train/{ANNOTATIONS_FILE}"
    text = files[path].decode()
    nested = "[" * DEEP_JSON_LEVELS + "]" * DEEP_JSON_LEVELS
    return {**files, path: text.replace('"info": {', f'"deep": {nested},\n  "info": {{', 1).encode()}


def bbox_string(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        coco["annotations"][0]["bbox"] = [str(int(v)) for v in coco["annotations"][0]["bbox"]]

    return edit_coco(files, "train", edit)


def image_id_string(files: Files) -> Files:
    return edit_coco(files, "train", lambda coco: coco["images"][1].update(id=str(coco["images"][1]["id"])))


def image_id_float(files: Files) -> Files:
    def edit(coco: Coco) -> None:
        coco["annotations"][-1]["image_id"] = float(coco["annotations"][-1]["image_id"])

    return edit_coco(files, "train", edit)


BOMB_SIDE = 20_000


def _png_header_only(width: int, height: int) -> bytes:
    """A valid PNG structure (IHDR, empty IDAT, IEND) that declares `width` x `height` pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def image_bomb(files: Files) -> Files:
    out = edit_coco(files, "train", lambda coco: coco["images"][0].update(width=BOMB_SIDE, height=BOMB_SIDE))
    out[f"train/{image_file_name('train', 0)}"] = _png_header_only(BOMB_SIDE, BOMB_SIDE)
    return out


DEFECTS: dict[str, Callable[[Files], Files]] = {
    "valid_base": dict,
    "bad_json": bad_json,
    "missing_image": missing_image,
    "truncated_image": truncated_image,
    "unreadable_image": unreadable_image,
    "bbox_outside": bbox_outside,
    "bbox_nonpositive": bbox_nonpositive,
    "unknown_category": unknown_category,
    "duplicate_image_id": duplicate_image_id,
    "duplicate_annotation_id": duplicate_annotation_id,
    "empty_split": empty_split,
    "area_mismatch": area_mismatch,
    "unknown_image_ref": unknown_image_ref,
    "bbox_slightly_outside": bbox_slightly_outside,
    "file_name_traversal": file_name_traversal,
    "file_name_absolute": file_name_absolute,
    "file_name_other_split": file_name_other_split,
    "file_name_subdir": file_name_subdir,
    "deep_json": deep_json,
    "bbox_string": bbox_string,
    "image_id_string": image_id_string,
    "image_id_float": image_id_float,
    "image_bomb": image_bomb,
}

Links = dict[str, str]  # posix path of the link -> its (relative) target


def dir_symlink(files: Files) -> tuple[Files, Links]:
    return _retarget_image(files, f"sub/{image_file_name('valid', 0)}"), {"train/sub": "../valid"}


def image_symlink(files: Files) -> tuple[Files, Links]:
    own = image_file_name("train", 0)
    out = dict(files)
    del out[f"train/{own}"]
    return out, {f"train/{own}": f"../valid/{image_file_name('valid', 0)}"}


def split_symlink(files: Files) -> tuple[Files, Links]:
    out = {p: d for p, d in files.items() if not p.startswith("test/")}
    return out, {"test": "valid"}


LINK_DEFECTS: dict[str, Callable[[Files], tuple[Files, Links]]] = {
    "dir_symlink": dir_symlink,
    "image_symlink": image_symlink,
    "split_symlink": split_symlink,
}


# ---------------------------------------------------------------- tar archives


def _tar_info(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mtime = TAR_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o777 if kind == tarfile.SYMTYPE else 0o644
    return info


def _dirs_of(paths: list[str]) -> set[str]:
    dirs = set()
    for path in paths:
        parts = path.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return dirs


def build_tar(files: Files, symlinks: dict[str, str] | None = None) -> bytes:
    """Tar ``files`` (archive path -> bytes) plus ``symlinks`` (path -> target), sorted, fixed metadata."""
    symlinks = symlinks or {}
    members: dict[str, tarfile.TarInfo] = {}
    for directory in _dirs_of(list(files) + list(symlinks)):
        if directory not in ("", "..") and not directory.startswith("/"):
            members[directory] = _tar_info(directory, tarfile.DIRTYPE)
    for path, data in files.items():
        members[path] = _tar_info(path, size=len(data))
    for path, target in symlinks.items():
        members[path] = _tar_info(path, tarfile.SYMTYPE)
        members[path].linkname = target
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in sorted(members):
            data = files.get(name)
            archive.addfile(members[name], io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def tar_archives(base: Files) -> dict[str, bytes]:
    good = {f"{TAR_TOP}/{path}": data for path, data in base.items()}
    macos_junk = {
        "__MACOSX/good/._x": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ",
        "good/.DS_Store": b"\x00\x00\x00\x01Bud1" + bytes(24),
        "good/train/._img.png": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ",
    }
    return {
        "good.tar": build_tar(good),
        "good_macos.tar": build_tar({**good, **macos_junk}),
        "dotdot.tar": build_tar({**good, "../escape.txt": b"escaped via ..\n"}),
        "absolute.tar": build_tar({**good, "/tmp/abs_escape.txt": b"escaped via absolute path\n"}),
        "symlink.tar": build_tar(good, symlinks={"good/train/link.png": "/etc/passwd"}),
    }


# ---------------------------------------------------------------- output


def readme() -> str:
    lines = [
        "# Corpus of broken datasets",
        "",
        "Generated by `python tests/corpus/make_corpus.py`; do not edit by hand (rerun the script).",
        "Each `broken/<case>` is `broken/valid_base` with exactly one defect. Roboflow COCO layout,",
        f"{IMAGE_SIZE}x{IMAGE_SIZE} PNGs, 2 images per split, annotation ids from 0 per split.",
        "",
        "## broken/",
        "",
    ]
    lines += [f"- `{name}`: {text}" for name, text in CASES.items()]
    lines += ["", "## links/", "",
              "Cases with symbolic links (copy them with `shutil.copytree(..., symlinks=True)`).", ""]
    lines += [f"- `{name}`: {text}" for name, text in LINK_CASES.items()]
    lines += ["", "## tars/", ""]
    lines += [f"- `{name}`: {text}" for name, text in TAR_CASES.items()]
    return "\n".join(lines) + "\n"


def write_files(root: Path, files: Files, links: Links | None = None) -> None:
    for path in sorted(files):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[path])
    for path, dest in sorted((links or {}).items()):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).symlink_to(dest)


def make_corpus(out: Path = HERE) -> None:
    """Write broken/, links/, tars/ and README.md under ``out``, replacing any previous ones."""
    base = base_files()
    for sub in (BROKEN_DIR, LINKS_DIR, TARS_DIR):
        shutil.rmtree(out / sub, ignore_errors=True)
    for name, defect in DEFECTS.items():
        write_files(out / BROKEN_DIR / name, defect(base))
    for name, link_defect in LINK_DEFECTS.items():
        write_files(out / LINKS_DIR / name, *link_defect(base))
    write_files(out / TARS_DIR, tar_archives(base))
    (out / README).write_text(readme(), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="corpus root (default: next to this script)")
    args = parser.parse_args()
    make_corpus(args.out)


if __name__ == "__main__":
    main()
