"""What a check found, as plain data (pure; no Dagster): the shape every warehouse check returns.

A `Finding` is pass/fail, a one-line description with the numbers, the offending rows (capped in metadata;
the description always carries the full count), facts for the metadata, and a severity.
`check_result` (check_results.py) turns a Finding into a Dagster AssetCheckResult.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_ROWS = 50  # offending rows kept in metadata; the description always has the full count


@dataclass
class Finding:
    passed: bool
    description: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    severity: str = "ERROR"  # WARN: not wrong, not finished (a campaign still has partitions in flight)

    def capped_rows(self) -> list[dict[str, Any]]:
        return self.rows[:MAX_ROWS]
