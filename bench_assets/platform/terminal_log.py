"""How a run's log reads on the terminal of a `bench` verb: progress lines, and failures without stack traces.

The full record of every failure (its stack trace included) stays in the Dagster event log, which the
UI shows; only the terminal copy is shortened. `bench --verbose` (or BENCH_VERBOSE=1) prints everything.
"""

from __future__ import annotations

import logging
import os
import sys

VERBOSE_ENV = "BENCH_VERBOSE"
_TERSE_EVENTS = ("STEP_FAILURE", "RUN_FAILURE")


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def terse(message: str) -> str | None:
    """The terminal form of one log message: None drops it; failures keep their first line only.

    Events are told apart by Dagster's message text (`... - STEP_FAILURE - ...`): a run failure's record
    carries no event object in its metadata, so the text is the one rule that covers both.
    """
    first = message.split("\n", 1)[0]
    if any(f" - {e} - " in first for e in _TERSE_EVENTS):
        return first
    if "Not executing." in message and "Dependencies for step" in message:
        return None  # every skipped check of a failed step would print one line of noise
    return message.split("\n\nStack Trace:", 1)[0]


class _TerseFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        short = terse(record.getMessage())
        if short is None:
            return False
        record.msg, record.args = short, None
        record.exc_info, record.exc_text, record.stack_info = None, None, None  # a run failure attaches its error
        return True


def terminal_logger_def():  # noqa: ANN201 (a dagster LoggerDefinition; dagster loads lazily)
    import dagster as dg

    @dg.logger(config_schema={"log_level": dg.Field(str, default_value="INFO"),
                              "verbose": dg.Field(bool, default_value=False)},
               description="The bench CLI's terminal log: no stack traces unless --verbose.")
    def bench_terminal(init_context: dg.InitLoggerContext) -> logging.Logger:
        cfg = init_context.logger_config
        logger = logging.Logger("dagster", level=cfg["log_level"])
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
        if not cfg["verbose"]:
            handler.addFilter(_TerseFilter())
        logger.addHandler(handler)
        return logger

    return bench_terminal
