"""Edge cases of bench_assets/rf100vl/scoring.py that kill mutants the other tests let survive (issue 15,
docs/testing.md "Mutation testing")."""

from types import SimpleNamespace

import numpy as np
import pytest

from bench_assets.rf100vl import scoring

PARAMS = SimpleNamespace(maxDets=[1, 10, 100, 500], iouThrs=np.linspace(0.5, 0.95, 10),
                         areaRngLbl=["all", "small", "medium", "large"])
GOOD_P, GOOD_R = (10, 101, 2, 4, 4), (10, 2, 4, 4)  # [T, R, K, A, M] and [T, K, A, M]


@pytest.mark.parametrize(("p_shape", "r_shape"), [
    ((10, 101, 2, 4), GOOD_R),  # precision without the maxDets axis
    (GOOD_P, (10, 2, 4)),  # recall without it
    ((10, 101, 2, 4, 3), GOOD_R),  # precision read at three maxDets where the params name four
])
def test_read_metrics_refuses_an_evaluation_of_the_wrong_shape(p_shape: tuple, r_shape: tuple) -> None:
    acc = {"precision": np.full(p_shape, 0.5), "recall": np.full(r_shape, 0.5)}
    with pytest.raises(RuntimeError) as err:
        scoring.read_metrics(acc, PARAMS, 500)
    assert str(err.value) == (f"unexpected accumulated shapes: precision {p_shape}, recall {r_shape}, "
                              "maxDets [1, 10, 100, 500]")


def test_read_metrics_reads_a_well_formed_evaluation() -> None:
    precision = np.full(GOOD_P, 0.5)
    precision[..., 3] = 0.75  # at maxDets 500
    metrics = scoring.read_metrics({"precision": precision, "recall": np.full(GOOD_R, 0.25)}, PARAMS, 500)
    assert metrics["mAP50_95"] == metrics["mAP50"] == metrics["mAP_large"] == 0.75
    assert metrics["AR1"] == metrics["AR_max_det"] == 0.25
