"""Result files: one per (config, library), `augbench.results.v1`, runs appended as numbered repeats.

Each repeat embeds what defined it (the resolved config and its hash, library versions, thread settings,
hardware label, media hash, git state) and one entry per planned transform with a terminal status:
`ok`, `early_stopped`, `unsupported` (with the reason) or `error` (with the message).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bench_assets.platform.fsutil import atomic_write_json

SCHEMA = "augbench.results.v1"
TERMINAL = ("ok", "early_stopped", "unsupported", "error")


class CellRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    transform: str
    library: str
    status: Literal["ok", "early_stopped", "unsupported", "error"]
    reason: str | None = None
    throughputs: list[float] = []
    preflight_throughput: float | None = None
    summary: dict[str, Any] | None = None


class Repeat(BaseModel):
    model_config = ConfigDict(extra="allow")

    repeat: int = Field(ge=1)
    started: str
    finished: str
    config_sha256: str
    hardware: str
    versions: dict[str, str]
    threads: dict[str, Any]
    media_hash: str
    media_description: str = ""
    git: dict[str, Any] = {}
    cells: list[CellRecord]


class ResultFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["augbench.results.v1"] = Field(SCHEMA, alias="schema")
    config_name: str
    library: str
    config: dict[str, Any]
    repeats: list[Repeat] = []


def read_results(path: Path) -> ResultFile | None:
    if not path.exists():
        return None
    return ResultFile.model_validate_json(path.read_text())


def append_repeat(path: Path, config_name: str, library: str, config: dict[str, Any], repeat: dict[str, Any]) -> int:
    """Add a repeat (numbered after the last one) and write the file atomically; return its number."""
    current = read_results(path) or ResultFile(config_name=config_name, library=library, config=config)
    number = (current.repeats[-1].repeat + 1) if current.repeats else 1
    rep = Repeat.model_validate({**repeat, "repeat": number})
    doc = current.model_copy(update={"config": config, "repeats": [*current.repeats, rep]})
    atomic_write_json(path, json.loads(doc.model_dump_json(by_alias=True)))
    return number


def coverage_problems(planned: list[tuple[str, str]], repeat: Repeat) -> list[str]:
    """Every planned (transform, library) cell present exactly once with a terminal status, none `error`."""
    seen: dict[tuple[str, str], list[str]] = {}
    for c in repeat.cells:
        seen.setdefault((c.transform, c.library), []).append(c.status)
    problems = []
    for key in planned:
        statuses = seen.get(key)
        if not statuses:
            problems.append(f"{key[0]} / {key[1]}: missing from repeat {repeat.repeat}")
        elif len(statuses) > 1:
            problems.append(f"{key[0]} / {key[1]}: recorded {len(statuses)} times in repeat {repeat.repeat}")
        elif statuses[0] == "error":
            reason = next(c.reason for c in repeat.cells if (c.transform, c.library) == key)
            problems.append(f"{key[0]} / {key[1]}: error: {reason}")
    extra = sorted(set(seen) - set(planned))
    problems += [f"{t} / {lib}: not in the plan" for t, lib in extra]
    for c in repeat.cells:
        if c.status == "ok" and not c.throughputs:
            problems.append(f"{c.transform} / {c.library}: status ok without a timed run")
        if c.status == "early_stopped" and c.preflight_throughput is None:
            problems.append(f"{c.transform} / {c.library}: early_stopped without its preflight throughput")
        if c.status in ("unsupported", "error") and not c.reason:
            problems.append(f"{c.transform} / {c.library}: {c.status} without a reason")
    return problems
