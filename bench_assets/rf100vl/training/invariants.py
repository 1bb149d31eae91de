"""Stack invariants: facts of the built model a recipe pins, checked by the training child before the first epoch.

The costliest silent failure in past campaigns: yolox-nano trained with BatchNorm eps 1e-5 and evaluated with 1e-3,
a headline of 0.36 published instead of 0.49. The training child measures the BatchNorm eps of the model it is about
to train and of the same weights built the way the prediction child builds them (`child/train.stack_facts`); a run
whose two builds differ, or whose eps is not the recipe's `invariants.batchnorm_eps`, fails before it trains.
"""

from __future__ import annotations

from typing import Any


def stack_problems(facts: dict[str, Any], batchnorm_eps: float | None) -> list[str]:
    """Why the measured stack breaks an invariant (empty when it holds). `facts`: `train_bn_eps` and `eval_bn_eps`,
    the sorted distinct eps of the BatchNorm layers of each build."""
    train, evaluation = facts["train_bn_eps"], facts["eval_bn_eps"]
    problems = []
    if train != evaluation:
        problems.append(f"BatchNorm eps differs between the model trained ({train}) and the model the predictions "
                        f"are made with ({evaluation}): scores would not be of the trained model")
    if batchnorm_eps is not None and any(abs(e - batchnorm_eps) > 1e-12 for e in train):
        problems.append(f"BatchNorm eps of the model is {train}, the recipe's invariants.batchnorm_eps is "
                        f"{batchnorm_eps}")
    return problems
