"""What scoring returns and raises: the metric names and backends, the input errors (each listing every problem
with the fix), `MaxDetCut`, `ScoreResult`, `ParityAudit` and `BothResult`. Pure; numpy only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

Backend = Literal["fast", "reference", "hotcoco", "faster-coco-eval"]


BACKENDS: tuple[str, ...] = ("fast", "reference", "hotcoco", "faster-coco-eval")


# backend -> the library that evaluates (`engine_version` names it with its version)
ENGINES: dict[str, str] = {"fast": "hotcoco", "reference": "pycocotools", "hotcoco": "hotcoco",
                           "faster-coco-eval": "faster-coco-eval", "_fast_coco": "faster-coco-eval"}


PARITY_ARRAYS: tuple[str, ...] = ("precision", "recall")  # what the metrics are read from; compared cell for cell


METRICS: tuple[str, ...] = (
    "mAP50_95",
    "mAP50",
    "mAP75",
    "mAP_small",
    "mAP_medium",
    "mAP_large",
    "AR1",
    "AR10",
    "AR100",
    "AR_small",
    "AR_medium",
    "AR_large",
    "AR_max_det",
)


HEADLINE = "mAP50_95"


DEFAULT_MAX_DET = 500


_EXAMPLES = 5


class _InputProblems(ValueError):
    """An input that cannot be scored; `problems` lists each finding (what, where, fix)."""

    what = "input"

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        if len(problems) == 1:  # one line, as `bench score` prints it
            super().__init__(f"{source}: invalid {self.what}: {problems[0]}")
            return
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: invalid {self.what} ({len(problems)} problem(s)):\n{lines}")


class PredictionsInvalid(_InputProblems):
    """The detections file breaks the protocol."""

    what = "predictions"


class GroundTruthInvalid(_InputProblems):
    """The ground-truth document cannot be scored against."""

    what = "ground truth"


class ScoreUndefined(ValueError):
    """The headline metric has no defined value (no ground-truth box to score against)."""


class InputUnreadable(ValueError):
    """A JSON input could not be read (bad gzip stream, bad JSON)."""


@dataclass(frozen=True)
class MaxDetCut:
    """Detections over `max_det`, as facts: `images` lists every image carrying more than `max_det`
    detections in total (the protocol's bound, all categories together) as {image_id, detections, cut},
    most cut first; `cut` counts the detections COCOeval never evaluates there (beyond the `max_det`
    highest-scoring of one (image, category), ties in file order; with max_det < 100, AR100 still reads up
    to 100). `images_over` = len(images), `detections_cut` = the sum of `cut`."""

    max_det: int
    images_over: int = 0
    detections_cut: int = 0
    images: list[dict[str, int]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"max_det": self.max_det, "images_over": self.images_over, "detections_cut": self.detections_cut,
                "images": [dict(i) for i in self.images]}

    def warning(self, source: str) -> str | None:
        """The line `warnings` carries when an image is over `max_det`; None when none is."""
        if not self.images_over:
            return None
        over = [f"image {i['image_id']}: {i['detections']}" for i in
                sorted(self.images, key=lambda i: (-i["detections"], i["image_id"]))]
        msg = (f"{source}: {self.images_over} image(s) carry more than max_det={self.max_det} detections, which "
               f"the protocol does not allow (most first: {_fmt_examples(over)}); scored as pycocotools scores "
               f"them: each (image, category) keeps its {self.max_det} highest-scoring detections (ties in file "
               "order), ")
        cut = [f"image {i['image_id']}: {i['cut']}" for i in self.images if i["cut"]]
        if not cut:
            return msg + "and no (image, category) has more, so every detection was evaluated"
        return msg + (f"so {self.detections_cut} detection(s) on {len(cut)} image(s) were not evaluated "
                      f"({_fmt_examples(cut)}); `bench score --strict` refuses such a file")


@dataclass(frozen=True)
class ScoreResult:
    metrics: dict[str, float | None]
    backend: str
    max_det: int
    num_images: int
    num_gt: int
    num_dets: int
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # scored, but worth a look (an empty list, > max_det)
    max_det_cut: MaxDetCut | None = None  # what was over max_det (None only on results built by hand)
    engine: str = ""  # the evaluating library and its version, e.g. "hotcoco 1.3.0"
    # the accumulated COCOeval arrays (precision, recall, scores) the metrics were read from; not serialised
    arrays: dict[str, np.ndarray] | None = field(default=None, repr=False, compare=False)

    @property
    def headline(self) -> float:
        value = self.metrics[HEADLINE]
        assert value is not None  # score() raises ScoreUndefined before building such a result
        return value

    def to_dict(self) -> dict[str, Any]:
        """Everything but `arrays`, as JSON-ready values."""
        cut = self.max_det_cut
        return {"metrics": dict(self.metrics), "backend": self.backend, "max_det": self.max_det,
                "num_images": self.num_images, "num_gt": self.num_gt, "num_dets": self.num_dets,
                "seconds": dict(self.seconds), "warnings": list(self.warnings),
                "max_det_cut": cut.to_dict() if isinstance(cut, MaxDetCut) else cut, "engine": self.engine}


@dataclass(frozen=True)
class ParityAudit:
    identical: int  # metrics with bit-identical values (or both undefined)
    total: int
    max_abs_deviation: float  # over the metrics defined in both results and the compared array cells
    differing: list[str]  # metrics and arrays (`PARITY_ARRAYS`) with a value differing by more than tol
    tol: float
    # per array compared: {"cells", "differing" (cells off by more than tol), "max_abs_deviation"}; empty when
    # a result carries no arrays
    arrays: dict[str, dict[str, Any]] = field(default_factory=dict)
    engines: dict[str, str] = field(default_factory=dict)  # backend -> "library version"

    @property
    def ok(self) -> bool:
        return not self.differing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BothResult:
    headline: ScoreResult  # the fast backend (hotcoco): what gets reported
    reference: ScoreResult
    audit: ParityAudit


def _fmt_examples(items: Sequence[Any]) -> str:
    shown = ", ".join(str(x) for x in items[:_EXAMPLES])
    more = f" (+{len(items) - _EXAMPLES} more)" if len(items) > _EXAMPLES else ""
    return f"{shown}{more}"
