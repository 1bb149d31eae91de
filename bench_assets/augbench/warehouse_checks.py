"""augbench checks over the warehouse (pure queries; the Dagster shells are in check_assets.py).

- coverage: every planned cell of every registered config has a latest-repeat row with a terminal status;
  a missing or `error` cell fails and is listed (file existence is not coverage);
- consistency: inside one paper table (a config), every library's latest repeat was measured on the same
  hardware label, thread policy and media hash; a mix would compare numbers that are not comparable.
"""

from __future__ import annotations

from pathlib import Path

from bench_assets.platform.findings import Finding
from bench_assets.platform.warehouse import query


def coverage(warehouse: Path) -> Finding:
    rows = query(warehouse, """
        SELECT p.config, p.library, p.transform, p.planned_status, r.status, r.reason
        FROM augbench_planned p
        LEFT JOIN augbench_results r
               ON r.config = p.config AND r.library = p.library AND r.transform = p.transform AND r.is_latest
        ORDER BY p.config, p.library, p.transform""")
    if not rows:
        return Finding(True, "no augbench config registered yet")
    bad = [{"config": r["config"], "library": r["library"], "transform": r["transform"],
            "problem": "missing (never measured)" if r["status"] is None else f"error: {r['reason']}"}
           for r in rows if r["status"] is None or r["status"] == "error"]
    wrong = [{"config": r["config"], "library": r["library"], "transform": r["transform"],
              "problem": f"planned unsupported but recorded {r['status']}"}
             for r in rows if r["planned_status"] == "unsupported" and r["status"] not in (None, "unsupported")]
    bad += wrong
    per_config: dict[str, list[int]] = {}
    for r in rows:
        tally = per_config.setdefault(r["config"], [0, 0])
        tally[0] += 1
        tally[1] += r["status"] is not None and r["status"] != "error"
    summary = ", ".join(f"{c} {done}/{n}" for c, (n, done) in per_config.items())
    if bad:
        return Finding(False, f"{len(bad)} planned augbench cell(s) missing or in error ({summary}): " + "; ".join(
            f"{b['config']}/{b['library']}/{b['transform']}: {b['problem']}" for b in bad[:5])
            + (" ..." if len(bad) > 5 else ""), bad, {"coverage": summary})
    return Finding(True, f"every planned cell has a terminal status: {summary}", [], {"coverage": summary})


def consistency(warehouse: Path) -> Finding:
    rows = query(warehouse, """
        SELECT config, count(DISTINCT hardware) AS hardware_labels, count(DISTINCT threads) AS thread_policies,
               count(DISTINCT media_hash) AS media_hashes, list(DISTINCT hardware) AS hardware,
               list(DISTINCT threads) AS threads, list(DISTINCT media_hash) AS media
        FROM augbench_results WHERE is_latest GROUP BY config ORDER BY config""")
    bad = [r for r in rows if r["hardware_labels"] > 1 or r["thread_policies"] > 1 or r["media_hashes"] > 1]
    if bad:
        def what(r: dict) -> str:
            parts = []
            if r["hardware_labels"] > 1:
                parts.append(f"hardware {r['hardware']}")
            if r["thread_policies"] > 1:
                parts.append(f"thread policies {r['threads']}")
            if r["media_hashes"] > 1:
                parts.append(f"media {[m[:12] for m in r['media']]}")
            return f"{r['config']}: " + "; ".join(parts)

        return Finding(False, f"{len(bad)} paper table(s) mix measurement conditions: "
                       + " | ".join(what(r) for r in bad), bad)
    return Finding(True, f"{len(rows)} paper table(s), each measured on one hardware label, thread policy and media "
                   "set", [])
