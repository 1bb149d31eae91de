"""A tiny code location for the run-pool tests: one op that records when it ran, then sleeps, fails, or kills
the process running it (a worker lost mid-run)."""

import json
import os
import signal
import time
from pathlib import Path

import dagster as dg


class StepConfig(dg.Config):
    log: str
    label: str
    action: str = "sleep"  # sleep | fail | die
    seconds: float = 0.3


@dg.op
def step(config: StepConfig) -> None:
    start = time.time()
    if config.action == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(config.seconds)
    with open(config.log, "a") as fh:
        fh.write(json.dumps({"label": config.label, "pid": os.getpid(), "start": start, "end": time.time()}) + "\n")
    if config.action == "fail":
        raise dg.Failure(f"{config.label} failed on purpose")


@dg.job
def pool_job() -> None:
    step()


def load() -> dg.Definitions:
    return dg.Definitions(jobs=[pool_job])


def read_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
