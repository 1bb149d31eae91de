"""Agreement of our RGB micro medians with a published table of the AlbumentationsX benchmark.

Two published RGB micro CPU tables are committed as data, each with its provenance in a `.meta.json` beside it, and
chosen by name (`PUBLISHED`, default `DEFAULT_PUBLISHED`):

- `x86`: the paper's run on Linux x86_64 (Google Cloud c4-standard-16), `data/published_rgb_micro_cpu_x86.csv`;
- `macos`: the website's run on macOS arm64, `data/published_rgb_micro_cpu.csv`.

Absolute items/s depend on the machine, so what is compared is each library's speed relative to AlbumentationsX
on the same machine: for every library L other than albumentationsx and every transform that both sides measured
for L and for albumentationsx, r = items/s of L / items/s of albumentationsx, once from our medians (r_ours) and
once from the published ones (r_pub). Then:

- Spearman rank correlation of r_ours against r_pub over the transforms, per library L (ties get average ranks;
  undefined, reported as None, with fewer than MIN_PAIRS transforms or when either side is constant);
- same-winner share: the fraction of (transform, L) pairs where the faster of L and albumentationsx is the same in
  ours and in the published table (sign of log r equal; an exact tie only matches a tie), overall and per L;
- outliers: every (transform, L) where |log(r_ours / r_pub)| > log(OUTLIER_FACTOR), i.e. the ratios differ by more
  than 3x either way, joined with an explanation from `data/published_outliers.csv`
  (`transform,library,table,explanation`, library = L; table = the published table the explanation is about, x86 or
  macos, empty for one that holds for every table).

`passes` when every judged library (one with at least one pair) has a Spearman of at least SPEARMAN_GOAL, the overall
same-winner share is at least SAME_WINNER_GOAL, and every outlier has an explanation. A library with no pair at all
(not measured by us) is listed but not judged; with no pair at all nothing passes.

Pure: numpy and scipy only (no Dagster, no torch). Keys of measurement dicts are (library, transform).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench_assets.augbench.transform_specs import REFERENCE_LIBRARY

DATA = Path(__file__).resolve().parent / "data"
PUBLISHED: dict[str, tuple[Path, Path]] = {  # name: (medians CSV, provenance JSON)
    "x86": (DATA / "published_rgb_micro_cpu_x86.csv", DATA / "published_rgb_micro_cpu_x86.meta.json"),
    "macos": (DATA / "published_rgb_micro_cpu.csv", DATA / "published_rgb_micro_cpu.meta.json"),
}
DEFAULT_PUBLISHED = "x86"  # the paper's run, on x86 Linux like our machines
PUBLISHED_CSV, PUBLISHED_META = PUBLISHED[DEFAULT_PUBLISHED]  # the default table's files
OUTLIERS_CSV = DATA / "published_outliers.csv"

REFERENCE = REFERENCE_LIBRARY
LIBRARIES = ("albumentationsx", "torchvision", "kornia", "pillow")
SPEARMAN_GOAL = 0.85  # per library
SAME_WINNER_GOAL = 0.90  # overall
OUTLIER_FACTOR = 3.0  # r_ours / r_pub beyond this (or below its inverse) is an outlier
MIN_PAIRS = 3  # a rank correlation over fewer transforms says nothing

Key = tuple[str, str]  # (library, transform)


# ---------------------------------------------------------------------------------------------
# Data files


def _check_rate(value: Any, where: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: items/s {value!r} is not a number") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"{where}: items/s must be positive and finite, got {value!r}")
    return x


def _paths(table: str) -> tuple[Path, Path]:
    try:
        return PUBLISHED[table]
    except KeyError:
        raise ValueError(f"unknown published table {table!r} (one of {', '.join(PUBLISHED)})") from None


def load_published(path: Path | None = None, table: str = DEFAULT_PUBLISHED) -> dict[Key, float]:
    """{(library, transform): published median items/s} of the table named `table` (or of the CSV at `path`);
    refuses unknown libraries, duplicates, bad values."""
    path = path or _paths(table)[0]
    out: dict[Key, float] = {}
    with path.open(newline="") as f:
        for i, r in enumerate(csv.DictReader(f), start=2):
            where = f"{path.name} line {i}"
            lib, transform = (r.get("library") or "").strip(), (r.get("transform") or "").strip()
            if lib not in LIBRARIES:
                raise ValueError(f"{where}: unknown library {lib!r} (one of {', '.join(LIBRARIES)})")
            if not transform:
                raise ValueError(f"{where}: empty transform")
            if (lib, transform) in out:
                raise ValueError(f"{where}: {transform} / {lib} listed twice")
            out[(lib, transform)] = _check_rate(r.get("items_per_s"), where)
    return out


def load_meta(path: Path | None = None, table: str = DEFAULT_PUBLISHED) -> dict[str, Any]:
    """The provenance of a published table (repository, commit, paths, hardware, name mapping)."""
    return json.loads((path or _paths(table)[1]).read_text())


def load_explanations(path: Path | None = None, table: str = DEFAULT_PUBLISHED) -> dict[tuple[str, str], str]:
    """{(transform, library): explanation} from the outliers file for the published table `table`: its rows whose
    `table` is that name, and rows with an empty `table` (or a file without that column), which apply to every
    table; a row for the named table wins over an empty one. Empty explanations are ignored; an unknown table name
    or a (transform, library) listed twice for the same table is refused."""
    _paths(table)
    path = path or OUTLIERS_CSV
    general: dict[tuple[str, str], str] = {}
    specific: dict[tuple[str, str], str] = {}
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        for i, r in enumerate(csv.DictReader(f), start=2):
            where = f"{path.name} line {i}"
            name = (r.get("table") or "").strip()
            if name and name not in PUBLISHED:
                raise ValueError(f"{where}: unknown table {name!r} (one of {', '.join(PUBLISHED)}, or empty)")
            text = (r.get("explanation") or "").strip()
            if not text or name not in ("", table):
                continue
            key = ((r.get("transform") or "").strip(), (r.get("library") or "").strip())
            into = specific if name else general
            if key in into:
                raise ValueError(f"{where}: {key[0]} / {key[1]} explained twice for table {name or '(any)'}")
            into[key] = text
    return {**general, **specific}


# ---------------------------------------------------------------------------------------------
# Statistics


def spearman(x: Iterable[float], y: Iterable[float]) -> float | None:
    """Spearman's rho (Pearson correlation of average ranks); None with fewer than 2 points or a constant side."""
    a, b = np.asarray(list(x), dtype=float), np.asarray(list(y), dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"spearman: {a.size} values against {b.size}")
    if a.size < 2:
        return None
    from scipy.stats import rankdata  # here, not at import: scipy.stats takes about a second to import

    ra, rb = rankdata(a) - (a.size + 1) / 2, rankdata(b) - (b.size + 1) / 2
    den = math.sqrt(float(np.dot(ra, ra)) * float(np.dot(rb, rb)))
    if den == 0:
        return None
    return max(-1.0, min(1.0, float(np.dot(ra, rb)) / den))


# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True)
class Pair:
    """One (transform, library L) comparison against albumentationsx."""

    transform: str
    library: str
    ours: float  # L items/s (ours)
    ours_reference: float  # albumentationsx items/s (ours)
    published: float
    published_reference: float
    explanation: str | None = None

    @property
    def ratio_ours(self) -> float:
        return self.ours / self.ours_reference

    @property
    def ratio_published(self) -> float:
        return self.published / self.published_reference

    @property
    def log_gap(self) -> float:
        """ln(r_ours / r_pub): > 0 when L looks relatively faster here than in the published table."""
        return math.log(self.ratio_ours) - math.log(self.ratio_published)

    @property
    def factor(self) -> float:
        """How many times the two ratios differ (>= 1)."""
        return math.exp(abs(self.log_gap))

    @property
    def winner_ours(self) -> str:
        return _winner(self.ratio_ours, self.library)

    @property
    def winner_published(self) -> str:
        return _winner(self.ratio_published, self.library)

    @property
    def same_winner(self) -> bool:
        return self.winner_ours == self.winner_published

    @property
    def outlier(self) -> bool:
        return abs(self.log_gap) > math.log(OUTLIER_FACTOR)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio_ours": self.ratio_ours, "ratio_published": self.ratio_published,
                "factor": self.factor, "same_winner": self.same_winner, "outlier": self.outlier}


def _winner(ratio: float, library: str) -> str:
    return library if ratio > 1 else REFERENCE if ratio < 1 else "tie"


@dataclass(frozen=True)
class LibraryAgreement:
    library: str
    pairs: int
    spearman: float | None
    same_winner: float | None

    @property
    def judged(self) -> bool:
        return self.pairs > 0

    @property
    def meets_spearman(self) -> bool:
        return self.spearman is not None and self.spearman >= SPEARMAN_GOAL

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "judged": self.judged, "meets_spearman": self.meets_spearman}


@dataclass(frozen=True)
class Agreement:
    pairs: tuple[Pair, ...]
    libraries: tuple[LibraryAgreement, ...]
    same_winner: float | None  # overall share over every pair
    not_measured: tuple[Key, ...] = ()  # published (library, transform) cells without a median of ours
    not_published: tuple[Key, ...] = ()  # ours without a published counterpart (ignored)
    source: dict[str, Any] = field(default_factory=dict)
    table: str | None = None  # the published table (PUBLISHED) read by compare, None when given both inputs

    @property
    def outliers(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.outlier)

    @property
    def unexplained(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.outliers if not p.explanation)

    @property
    def judged_libraries(self) -> tuple[LibraryAgreement, ...]:
        return tuple(lib for lib in self.libraries if lib.judged)

    @property
    def checks(self) -> dict[str, bool]:
        judged = self.judged_libraries
        return {
            "compared at least one pair": bool(self.pairs),
            f"Spearman >= {SPEARMAN_GOAL:g} for every library": bool(judged)
            and all(lib.meets_spearman for lib in judged),
            f"same winner >= {SAME_WINNER_GOAL:.0%} overall": self.same_winner is not None
            and self.same_winner >= SAME_WINNER_GOAL,
            "every outlier explained": not self.unexplained,
        }

    @property
    def passes(self) -> bool:
        return all(self.checks.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "passes": self.passes, "checks": self.checks, "spearman_goal": SPEARMAN_GOAL,
            "same_winner_goal": SAME_WINNER_GOAL, "outlier_factor": OUTLIER_FACTOR, "reference": REFERENCE,
            "same_winner": self.same_winner, "pairs": len(self.pairs),
            "libraries": {lib.library: lib.to_dict() for lib in self.libraries},
            "outliers": [p.to_dict() for p in self.outliers],
            "unexplained": [[p.transform, p.library] for p in self.unexplained],
            "not_measured": [list(k) for k in self.not_measured],
            "not_published": [list(k) for k in self.not_published],
            "table": self.table, "source": self.source,
        }

    def markdown(self, details: bool = False) -> str:
        """Per-library table, outliers, verdict; with `details`, every compared pair."""
        lines = [f"| library vs {REFERENCE} | transforms | Spearman (goal >= {SPEARMAN_GOAL:g}) | same winner |",
                 "|---|---:|---:|---:|"]
        for lib in self.libraries:
            rho = "n/a" if lib.spearman is None else f"{lib.spearman:.3f}"
            if lib.judged:
                rho = f"**{rho}**" if lib.meets_spearman else f"{rho} (miss)"
            else:
                rho = "not measured"
            lines.append(f"| {lib.library} | {lib.pairs} | {rho} | {_share(lib.same_winner)} |")
        lines.append(f"| **all** | {len(self.pairs)} | | **{_share(self.same_winner)}** "
                     f"(goal >= {SAME_WINNER_GOAL:.0%}) |")
        out = ["\n".join(lines)]
        if self.outliers:
            rows = [f"Outliers: ratio to {REFERENCE} differs by more than {OUTLIER_FACTOR:g}x "
                    f"({len(self.outliers)}, {len(self.unexplained)} unexplained)\n",
                    "| transform | library | ours L/albx | published L/albx | ours / published | explanation |",
                    "|---|---|---:|---:|---:|---|"]
            for p in sorted(self.outliers, key=lambda p: -abs(p.log_gap)):
                rows.append(f"| {p.transform} | {p.library} | {_ratio(p.ratio_ours)} | {_ratio(p.ratio_published)} | "
                            f"{_ratio(math.exp(p.log_gap))} | {p.explanation or '**unexplained**'} |")
            out.append("\n".join(rows))
        else:
            out.append(f"No outliers (every ratio within {OUTLIER_FACTOR:g}x of the published one).")
        if details and self.pairs:
            rows = ["| transform | library | ours L/albx | published L/albx | ours / published | winner ours | "
                    "winner published |", "|---|---|---:|---:|---:|---|---|"]
            for p in self.pairs:
                mark = "" if p.same_winner else " (differs)"
                rows.append(f"| {p.transform} | {p.library} | {_ratio(p.ratio_ours)} | {_ratio(p.ratio_published)} "
                            f"| {_ratio(math.exp(p.log_gap))} | {p.winner_ours}{mark} | {p.winner_published} |")
            out.append("\n".join(rows))
        if self.not_measured:
            out.append(f"Published cells without a median of ours ({len(self.not_measured)}): "
                       + ", ".join(f"{t} / {lib}" for lib, t in self.not_measured))
        verdict = "PASS" if self.passes else "FAIL"
        out.append(f"**{verdict}**: " + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in self.checks.items()))
        return "\n\n".join(out)


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _ratio(x: float) -> str:
    return f"{x:.3g}"


# ---------------------------------------------------------------------------------------------
# Comparison


def compare(ours: Mapping[Key, float], published: Mapping[Key, float] | None = None,
            explanations: Mapping[tuple[str, str], str] | None = None,
            source: dict[str, Any] | None = None, table: str = DEFAULT_PUBLISHED) -> Agreement:
    """Compare our medians {(library, transform): items/s} with the published ones (default: the committed CSV of
    the published table `table`) and the outlier explanations {(transform, library): text} (default: the committed
    outliers CSV's rows for that table). `published` / `explanations` given override what `table` names."""
    _paths(table)
    read_table = published is None or explanations is None
    published = load_published(table=table) if published is None else published
    explanations = load_explanations(table=table) if explanations is None else explanations
    for (lib, transform), v in ours.items():
        _check_rate(v, f"ours {transform} / {lib}")
    pairs: list[Pair] = []
    libs = [lib for lib in LIBRARIES if lib != REFERENCE]
    libs += sorted({lib for lib, _ in published} - set(LIBRARIES))
    transforms = list(dict.fromkeys(t for _, t in published))
    for lib in libs:
        for t in transforms:
            keys = ((lib, t), (REFERENCE, t))
            if all(k in published for k in keys) and all(k in ours for k in keys):
                pairs.append(Pair(t, lib, ours[(lib, t)], ours[(REFERENCE, t)], published[(lib, t)],
                                  published[(REFERENCE, t)], explanations.get((t, lib))))
    per_lib = []
    for lib in libs:
        mine = [p for p in pairs if p.library == lib]
        if not mine and not any(k[0] == lib for k in published):
            continue
        rho = spearman([p.ratio_ours for p in mine], [p.ratio_published for p in mine]) if len(mine) >= MIN_PAIRS \
            else None
        per_lib.append(LibraryAgreement(lib, len(mine), rho, _mean(p.same_winner for p in mine)))
    return Agreement(
        pairs=tuple(pairs), libraries=tuple(per_lib), same_winner=_mean(p.same_winner for p in pairs),
        not_measured=tuple(k for k in published if k not in ours),
        not_published=tuple(sorted(k for k in ours if k not in published)),
        source=dict(source or {}), table=table if read_table else None,
    )


def _mean(flags: Iterable[bool]) -> float | None:
    xs = list(flags)
    return sum(xs) / len(xs) if xs else None
