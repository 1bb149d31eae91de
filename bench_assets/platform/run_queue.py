"""The run coordinator of the product's instances: Dagster's queued run coordinator that gives a run queued without
`dagster/priority` the priority its family asks for, as it is queued.

`bench campaign` tags each run it launches with `dagster/priority`; a backfill launched from the UI, or a UI
materialization, queues its runs without that tag. A family that wants an order for those runs names a function in
its contribution (`FamilyContribution.run_priority`: a run's tags -> a priority, or None for runs it does not order)
and the instance templates list it under `priorities` (`resources/dagster.yaml`; the cluster's instance takes the
same block, `platform/cluster/layout.py`). `tests/report/test_composition_and_imports.py` holds the list to the
families' contributions. The tag is set before the daemon can dequeue the run (a sensor tagging queued runs
afterwards would race the 2 s dequeue loop).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dagster import Array, Field
from dagster._core.run_coordinator import QueuedRunCoordinator, SubmitRunContext

PRIORITY_TAG = "dagster/priority"
PRIORITIES_KEY = "priorities"

Priority = Callable[[Mapping[str, str]], "str | None"]

log = logging.getLogger(__name__)


def function_name(fn: Callable[..., Any]) -> str:
    """How the instance config names a priority function: `module:qualname`."""
    return f"{fn.__module__}:{fn.__qualname__}"


def resolve(name: str) -> Priority:
    module, _, attr = name.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def first_priority(tags: Mapping[str, str], priorities: Sequence[Priority]) -> str | None:
    """The priority a queued run should get: None when it has one already (an explicit priority is kept), else the
    first answer of the families' functions (None when none orders it)."""
    if PRIORITY_TAG in tags:
        return None
    for fn in priorities:
        answer = fn(tags)
        if answer is not None:
            return answer
    return None


class PriorityRunCoordinator(QueuedRunCoordinator):
    """Dagster's queued run coordinator (same config, plus `priorities`: the families' priority functions as
    `module:qualname`) that sets `dagster/priority` on runs queued without one."""

    def __init__(self, priorities: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._priority_names = tuple(priorities)
        self._priorities: tuple[Priority, ...] | None = None  # imported at the first submission, not at start-up

    @classmethod
    def config_type(cls):  # noqa: ANN206
        return {**super().config_type(), PRIORITIES_KEY: Field(Array(str), is_required=False, default_value=[])}

    @classmethod
    def from_config_value(cls, inst_data, config_value: Mapping[str, Any]):  # noqa: ANN001, ANN206
        rest = {k: v for k, v in config_value.items() if k != PRIORITIES_KEY}
        coordinator = super().from_config_value(inst_data, rest)
        coordinator._priority_names = tuple(config_value.get(PRIORITIES_KEY) or ())
        return coordinator

    @property
    def priority_names(self) -> tuple[str, ...]:
        return self._priority_names

    def submit_run(self, context: SubmitRunContext):  # noqa: ANN201
        run = context.dagster_run
        try:
            if self._priorities is None:
                self._priorities = tuple(resolve(n) for n in self._priority_names)
            priority = first_priority(run.tags, self._priorities)
        except Exception as exc:  # noqa: BLE001 - a priority is an optimisation: never refuse a run over it
            log.warning("no priority for run %s (%s): %s", run.run_id, run.tags.get("dagster/partition"), exc)
            priority = None
        if priority is not None:
            self._instance.add_run_tags(run.run_id, {PRIORITY_TAG: priority})
            run = self._instance.get_run_by_id(run.run_id) or run
            context = SubmitRunContext(run, context.workspace)
        return super().submit_run(context)
