"""A `Finding` as Dagster shows it: pass/fail, severity, the description, offending rows and facts as metadata."""

from __future__ import annotations

import dagster as dg

from bench_assets.platform.findings import Finding


def check_result(finding: Finding) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=finding.passed,
        severity=dg.AssetCheckSeverity(finding.severity),
        description=finding.description[:2000],
        metadata={
            "offending_rows": dg.MetadataValue.json(finding.capped_rows()),
            "offending_count": dg.MetadataValue.int(len(finding.rows) if not finding.passed else 0),
            **{k: dg.MetadataValue.json(v) if isinstance(v, dict | list) else dg.MetadataValue.text(str(v))
               for k, v in finding.facts.items()},
        },
    )
