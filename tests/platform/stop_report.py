"""What the cluster tests add to a failure when a stop had to kill a server: the stop's output, then the last lines
of each killed server's log it names (the log is gone with the cluster's home once the teardown passes)."""

from __future__ import annotations

import re
from pathlib import Path

from bench_assets.platform.cluster.servers import KILLED_AFTER_SIGTERM

TAIL_LINES = 40


def killed_report(stdout: str) -> str:
    """`stdout` of a stop (`stop_groups`' warnings among it), with the last TAIL_LINES lines of each killed
    server's log; "(no log)" for a log that is not a file."""
    tails = []
    for log in re.findall(rf"{KILLED_AFTER_SIGTERM};.*its log: (\S+)", stdout):
        lines = Path(log).read_text(errors="replace").splitlines() if Path(log).is_file() else ["(no log)"]
        tails.append(f"--- {log}:\n" + "\n".join(lines[-TAIL_LINES:]))
    return "\n".join([stdout, *tails])
