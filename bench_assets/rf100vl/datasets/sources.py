"""Where a dataset partition's raw data comes from, and fetching it into a staging folder.

A source spec is recorded per dataset under `BENCH_HOME/sources/<name>.json` when the dataset is
registered (by a suite, an import or the inbox sensor), so a later re-materialization from the UI
or a backfill knows where to look without run config. Kinds:
- `mini`: the embedded synthetic generator (no I/O beyond the staging folder);
- `local`: a directory in Roboflow layout or a tar of one;
- `hf`: a Hugging Face dataset repo of per-dataset tars plus `lock.json` (token from `HF_TOKEN`);
- `rf100vl`: the `rf100vl` package (needs `ROBOFLOW_API_KEY` and network).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from bench_assets.platform.archives import dataset_root, safe_extract
from bench_assets.platform.fsutil import atomic_write_json
from bench_assets.rf100vl.datasets.catalog import MINI_SUITE, catalog_entry

NAME_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")
SourceKind = Literal["mini", "local", "hf", "rf100vl"]


class SourceError(RuntimeError):
    """The data could not be fetched; the message says where and how to fix it."""


def check_dataset_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise ValueError(
            f"invalid dataset name {name!r}: use letters, digits, '-', '_' and '.' (not leading), at most 128 chars"
        )
    return name


class SourceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: SourceKind
    path: str | None = None  # local
    repo_id: str | None = None  # hf
    revision: str | None = None  # hf
    suites: list[str] = []
    # The Roboflow export these files are, as the person importing them states it ({"project_name",
    # "version_id"}; `parse_roboflow_version`): local and hf sources cannot know it themselves.
    roboflow: dict[str, Any] | None = None

    @field_validator("suites")
    @classmethod
    def _sorted_unique(cls, v: list[str]) -> list[str]:
        return sorted(set(v))

    def describe(self) -> dict[str, Any]:
        """What the lock records about the origin (never a token)."""
        ref = {"mini": "embedded generator", "local": self.path, "hf": self.repo_id, "rf100vl": "rf100vl package"}
        return {"kind": self.kind, "ref": ref[self.kind], "revision": self.revision}


def spec_path(sources_dir: Path, name: str) -> Path:
    return sources_dir / f"{check_dataset_name(name)}.json"


def read_spec(sources_dir: Path, name: str) -> SourceSpec | None:
    p = spec_path(sources_dir, name)
    return SourceSpec.model_validate_json(p.read_text()) if p.exists() else None


def write_spec(sources_dir: Path, name: str, spec: SourceSpec) -> None:
    atomic_write_json(spec_path(sources_dir, name), spec.model_dump())


def default_spec(name: str, hf_repo: str | None) -> SourceSpec:
    """Where a dataset with no recorded source comes from: mini names are generated, catalogue
    names come from the HF mirror when one is configured, else from the rf100vl package."""
    if name in MINI_SUITE:
        return SourceSpec(kind="mini", suites=["mini"])
    if catalog_entry(name) is not None:
        return SourceSpec(kind="hf", repo_id=hf_repo) if hf_repo else SourceSpec(kind="rf100vl")
    raise SourceError(
        f"dataset {name!r} has no recorded source and is neither a mini nor a catalogue dataset; "
        "import it with `bench datasets import PATH --name NAME`"
    )


def register(sources_dir: Path, name: str, spec: SourceSpec) -> SourceSpec:
    """Record `spec` for `name`, keeping suite memberships already recorded."""
    old = read_spec(sources_dir, name)
    if old is not None:
        spec = spec.model_copy(update={"suites": sorted(set(old.suites) | set(spec.suites))})
    write_spec(sources_dir, name, spec)
    return spec


def local_spec(path: str | Path, suites: list[str] | None = None,
               roboflow: dict[str, Any] | None = None) -> SourceSpec:
    p = Path(path).expanduser().resolve()
    if not p.exists():
        raise SourceError(f"{p}: no such file or directory; pass a Roboflow-layout folder or a tar of one")
    return SourceSpec(kind="local", path=str(p), suites=suites or [], roboflow=roboflow)


def parse_roboflow_version(text: str, dataset: str) -> dict[str, Any]:
    """`N` or `PROJECT/N` (the Roboflow project slug and its integer version an export came from) as the
    lock's `roboflow` block. A catalogue dataset's project defaults to the catalogue's and may not differ
    from it; any other dataset needs `PROJECT/N`."""
    project, _, number = text.strip().rpartition("/")
    entry = catalog_entry(dataset)
    hint = (f"pass the Roboflow version as N or PROJECT/N (the catalogue locks {entry.project_name}/"
            f"{entry.version_id})" if entry else "pass the Roboflow version as PROJECT/N")
    if not number.isdigit() or int(number) < 1:
        raise SourceError(f"dataset {dataset!r}: --roboflow-version {text!r} is not a positive integer version; "
                          f"{hint}")
    if not project:
        if entry is None:
            raise SourceError(f"dataset {dataset!r} is not in the RF100-VL catalogue, so --roboflow-version needs "
                              f"the project too; {hint}")
        project = entry.project_name
    if entry is not None and project != entry.project_name:
        raise SourceError(f"dataset {dataset!r}: --roboflow-version names project {project!r}, the catalogue's "
                          f"project is {entry.project_name!r}; {hint}")
    return {"project_name": project, "version_id": int(number)}


# ---------------------------------------------------------------------------------------------
# Fetching


@dataclass
class Fetched:
    root: Path  # folder holding train/valid/test
    source_version: str | None = None
    dropped_junk: list[str] = field(default_factory=list)
    roboflow: dict[str, Any] | None = None  # {"project_name", "version_id"} when the source is that exact export
    owned: bool = True  # True when root is our staging copy (files may be moved, not copied)


def redact(text: str, secrets: list[str | None]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text


def fetch(spec: SourceSpec, name: str, staging: Path, hf_cache: Path) -> Fetched:
    if spec.kind == "mini":
        from bench_assets.rf100vl.datasets.mini import generate_mini_dataset

        return Fetched(root=generate_mini_dataset(name, staging / name), source_version="mini-generator-v1")
    if spec.kind == "local":
        fetched = _fetch_local(Path(str(spec.path)), staging)
        fetched.roboflow = spec.roboflow
        return fetched
    if spec.kind == "hf":
        fetched = _fetch_hf(spec, name, staging, hf_cache)
        fetched.roboflow = spec.roboflow
        return fetched
    return _fetch_rf100vl(name, staging)


def _fetch_local(path: Path, staging: Path) -> Fetched:
    if path.is_dir():
        return Fetched(root=dataset_root(path), owned=False)
    if path.is_file():
        report = safe_extract(path, staging)
        return Fetched(root=dataset_root(staging), dropped_junk=report.dropped_junk)
    raise SourceError(f"{path}: no such file or directory; pass a Roboflow-layout folder or a tar of one")


def _fetch_hf(spec: SourceSpec, name: str, staging: Path, hf_cache: Path) -> Fetched:
    from bench_assets.rf100vl.datasets.hf_source import HFSourceError, fetch_hf_dataset

    if not spec.repo_id:
        raise SourceError(f"dataset {name!r}: hf source without repo_id; set BENCH_HF_REPO or re-register it")
    try:
        got = fetch_hf_dataset(spec.repo_id, name, hf_cache, revision=spec.revision)
    except HFSourceError as exc:
        raise SourceError(str(exc)) from None
    report = safe_extract(got.tar_path, staging)
    return Fetched(root=dataset_root(staging), source_version=str(got.version), dropped_junk=report.dropped_junk)


def _fetch_rf100vl(name: str, staging: Path) -> Fetched:
    key = os.environ.get("ROBOFLOW_API_KEY")
    if not key:
        raise SourceError(
            f"dataset {name!r}: the rf100vl package path needs ROBOFLOW_API_KEY in the environment; "
            "set it, or configure a Hugging Face mirror (BENCH_HF_REPO), or import a local copy"
        )
    try:
        import rf100vl  # noqa: F401  (optional dependency)
    except ImportError:
        raise SourceError(
            f"dataset {name!r}: the rf100vl package is not installed; `make rf100vl-package` installs it, "
            "or use a Hugging Face mirror or a local import"
        ) from None
    entry = catalog_entry(name)
    if entry is None:
        raise SourceError(f"dataset {name!r} is not in the RF100-VL catalogue; the rf100vl package path serves "
                          "catalogue datasets only (import other data with `bench datasets import PATH`)")
    try:
        dataset = _find_rf100vl_dataset(name, key)
        _download_locked_version(dataset, entry.project_name, entry.version_id, staging / name)
    except SourceError:
        raise
    except Exception as exc:  # the package raises requests/roboflow errors of many kinds
        msg = redact(f"{exc.__class__.__name__}: {exc}", [key])
        raise SourceError(
            f"dataset {name!r}: Roboflow could not be reached or refused the download ({msg}); "
            "check network access and ROBOFLOW_API_KEY, or use a Hugging Face mirror or a local import"
        ) from None
    return Fetched(root=dataset_root(staging / name), source_version=f"{entry.project_name}/{entry.version_id}",
                   roboflow={"project_name": entry.project_name, "version_id": entry.version_id})


def _download_locked_version(dataset: Any, project_name: str, version_id: int, path: Path) -> None:
    """Download exactly the locked version of the dataset's Roboflow project (the package's own `download`
    takes the latest), then apply the package's COCO clean-up (class 0 dropped, ids shifted)."""
    project_id = str(getattr(dataset.rf_project, "id", "") or "")
    slug = project_id.rsplit("/", 1)[-1]
    if slug != project_name:
        raise SourceError(f"dataset {dataset.name!r}: the rf100vl workspace serves project {slug!r}, the versions "
                          f"lock (data/rf100vl_versions.csv) says {project_name!r}; the published entries were "
                          "scored on the locked project, so this download would not be the same data")
    version = dataset.rf_project.version(version_id)
    version.download(model_format="coco", location=str(path), overwrite=True)
    dataset.clean_coco_dataset(str(path))


def _find_rf100vl_dataset(name: str, key: str) -> Any:
    import rf100vl

    for ds in rf100vl.get_rf100vl_projects(api_key=key):
        if ds.name == name:
            return ds
    raise SourceError(f"dataset {name!r} is not in the rf100vl package's project list")
