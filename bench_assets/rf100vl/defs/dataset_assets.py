"""`rf100vl/catalog` and `rf100vl/dataset`: the thin Dagster shell around sources, verify and store."""

import base64
from collections import Counter
from pathlib import Path

import dagster as dg
from pydantic import Field

from bench_assets.platform.archives import UnsafeArchiveError
from bench_assets.platform.fsutil import DiskSpaceError
from bench_assets.rf100vl.datasets.catalog import BUILTIN_SUITES, DOMAINS, load_catalog, suite_members
from bench_assets.rf100vl.datasets.inbox import clear_refusal, write_refusal
from bench_assets.rf100vl.datasets.sources import (
    SourceError,
    default_spec,
    local_spec,
    parse_roboflow_version,
    read_spec,
    register,
)
from bench_assets.rf100vl.datasets.store import (
    PREVIEW_FILE,
    DatasetBlocked,
    DatasetRecord,
    materialize_dataset,
)
from bench_assets.rf100vl.datasets.verify import SPLITS, DatasetInvalid
from bench_assets.rf100vl.defs.partitions import dataset_partitions
from resources.bench_home import BenchHome


@dg.asset(key=["rf100vl", "catalog"], group_name="rf100vl", kinds={"csv"},
          description="The 100 RF100-VL datasets (domain, classes, images) and the built-in suites.")
def catalog() -> dg.MaterializeResult:
    cat = load_catalog()
    domains = Counter(e.domain for e in cat.values())
    return dg.MaterializeResult(metadata={
        "datasets": len(cat),
        "images": sum(e.num_images for e in cat.values()),
        "classes": sum(e.num_classes for e in cat.values()),
        "domains": dg.MetadataValue.md("\n".join(["| domain | datasets |", "|---|---|"]
                                                 + [f"| {d} | {domains[d]} |" for d in DOMAINS])),
        "suites": dg.MetadataValue.json({s: len(suite_members(s)) for s in BUILTIN_SUITES}),
    })


class DatasetConfig(dg.Config):
    source: str = Field(default="", description="Leave empty to fetch the dataset from its recorded source (the "
                        "catalogue's mirror, or the folder/tar it was imported from). A folder or .tar path imports "
                        "it from there and records it as the source for later runs.")
    suite: str = Field(default="", description="With `source`: a suite the imported dataset joins (optional).")
    roboflow_version: str = Field(default="", description="With `source`: the Roboflow export the files are, `N` or "
                                  "`PROJECT/N`; a catalogue dataset's submissions must use the catalogue's version.")
    deep_image_check: bool = Field(default=False, description="Decode every image (slow) instead of checking "
                                   "headers and sizes only.")


def _split_table(record: DatasetRecord) -> str:
    rows = ["| split | images | boxes | boxes/image mean | boxes/image max | classes | MP mean | MP max |",
            "|---|---|---|---|---|---|---|---|"]
    for s in SPLITS:
        st = record.manifest["splits"][s]
        rows.append(f"| {s} | {st['images']} | {st['annotations']} | {st['boxes_per_image_mean']} | "
                    f"{st['boxes_per_image_max']} | {st['classes_present']} | {st['megapixels_mean']} | "
                    f"{st['megapixels_max']} |")
    return "\n".join(rows)


def dataset_metadata(record: DatasetRecord) -> dict[str, dg.MetadataValue]:
    m = record.manifest
    splits = m["splits"]
    preview = base64.b64encode((record.path / PREVIEW_FILE).read_bytes()).decode()
    size = sum(f.stat().st_size for f in record.path.rglob("*") if f.is_file())
    meta: dict[str, dg.MetadataValue] = {
        "version": dg.MetadataValue.text(record.version),
        "new_version": dg.MetadataValue.bool(record.created),
        "source": dg.MetadataValue.json(m["source"]),
        "classes": dg.MetadataValue.int(m["num_classes"]),
        "class_names": dg.MetadataValue.text(", ".join(m["classes"])),
        "images": dg.MetadataValue.int(sum(splits[s]["images"] for s in SPLITS)),
        "boxes": dg.MetadataValue.int(sum(splits[s]["annotations"] for s in SPLITS)),
        "max_annotations_per_image": dg.MetadataValue.int(max(splits[s]["boxes_per_image_max"] for s in SPLITS)),
        "megapixels_max": dg.MetadataValue.float(max(splits[s]["megapixels_max"] for s in SPLITS)),
        "size_on_disk_mb": dg.MetadataValue.float(round(size / 1e6, 3)),
        "splits": dg.MetadataValue.md(_split_table(record)),
        "normalisations": dg.MetadataValue.json(m["normalisations"]),
        "dropped_junk_files": dg.MetadataValue.int(len(m["dropped_junk"])),
        # versions placed before this was recorded have no entry
        "dropped_unreferenced": dg.MetadataValue.json(m.get("dropped_unreferenced") or {}),
        "path": dg.MetadataValue.path(str(record.path)),
        "preview": dg.MetadataValue.md(f"![samples with boxes](data:image/jpeg;base64,{preview})"),
    }
    for s in SPLITS:
        meta[f"{s}_images"] = dg.MetadataValue.int(splits[s]["images"])
        meta[f"{s}_boxes_per_image_mean"] = dg.MetadataValue.float(splits[s]["boxes_per_image_mean"])
    return meta


def _inbox_entry(home: BenchHome, source: str) -> Path | None:
    """The inbox entry an import came from (None for any other source)."""
    if not source:
        return None
    entry = Path(source)
    return entry if entry.parent.resolve() == home.inbox_dir.resolve() else None


@dg.asset(key=["rf100vl", "dataset"], group_name="rf100vl", partitions_def=dataset_partitions,
          deps=[catalog], kinds={"coco"},
          description="A verified, normalised, version-locked dataset (datasets/NAME/VERSION/), made CURRENT "
                      "only when its blocking checks pass.")
def dataset(context: dg.AssetExecutionContext, config: DatasetConfig, home: BenchHome) -> dg.MaterializeResult:
    name = context.partition_key
    inbox_entry = _inbox_entry(home, config.source)
    try:
        if config.roboflow_version and not config.source:
            raise SourceError(f"dataset {name!r}: roboflow_version describes the files of an import; set source "
                              "(the folder or tar) too, or leave roboflow_version empty")
        roboflow = parse_roboflow_version(config.roboflow_version, name) if config.roboflow_version else None
        spec = (local_spec(config.source, [config.suite] if config.suite else [], roboflow)
                if config.source else None)
        if spec is not None:
            spec = register(home.sources_dir, name, spec)
        else:
            spec = read_spec(home.sources_dir, name) or default_spec(name, home.hf_mirror)
        record = materialize_dataset(home.path, name, spec, home.hf_cache_dir, log=context.log.info,
                                     deep=config.deep_image_check)
    except (DatasetInvalid, DatasetBlocked, DiskSpaceError, SourceError, UnsafeArchiveError, ValueError) as exc:
        if inbox_entry is not None:
            write_refusal(inbox_entry, str(exc))
        raise dg.Failure(description=str(exc), metadata={"dataset": name, "error": exc.__class__.__name__},
                         allow_retries=False) from None
    if inbox_entry is not None:
        clear_refusal(inbox_entry)
    return dg.MaterializeResult(metadata=dataset_metadata(record), data_version=dg.DataVersion(record.version))
