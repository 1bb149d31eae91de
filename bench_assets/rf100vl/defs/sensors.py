"""The inbox sensor: a dataset folder or tar dropped into BENCH_HOME/inbox/ registers a partition
and requests its import run.

A refused entry (a name that is not a dataset name, or an import that failed) gets a marker file
`<name>.refused.txt` beside it with the reason, where the person who dropped it looks; the sensor
also logs a WARNING in its evaluation. The marker goes away when the entry imports.
"""

import hashlib
import time
from pathlib import Path

import dagster as dg

from bench_assets.platform.automation import sensor_interval_s
from bench_assets.rf100vl.datasets.inbox import TAR_SUFFIXES, inbox_name, refusal_marker, write_refusal
from bench_assets.rf100vl.datasets.sources import NAME_RE
from bench_assets.rf100vl.defs.jobs import DATASET_OP, dataset_job
from bench_assets.rf100vl.defs.partitions import DATASET_PARTITIONS_NAME
from resources.bench_home import BenchHome

SETTLE_SECONDS = 10.0  # a folder still being copied in changes; wait until it has been quiet this long


def fingerprint(path: Path) -> tuple[str, float]:
    """(content fingerprint from names, sizes and mtimes; newest mtime) of a file or folder."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    newest = 0.0
    for f in files:
        st = f.stat()
        newest = max(newest, st.st_mtime)
        h.update(f"{f.relative_to(path.parent)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16], newest


def inbox_requests(inbox: Path, known: set[str], now: float, settle: float = SETTLE_SECONDS
                   ) -> tuple[list[str], list[dg.RunRequest], list[str]]:
    """(new partition names, run requests, skipped-with-reason lines) for the inbox's settled entries.

    `skipped` lines starting with "refused" are refusals (a marker file is written beside the entry).
    """
    new, runs, skipped = [], [], []
    if not inbox.is_dir():
        return new, runs, skipped
    for entry in sorted(inbox.iterdir()):
        if entry.name.startswith(".") or not (entry.is_dir() or entry.name.endswith(TAR_SUFFIXES)):
            continue
        name = inbox_name(entry)
        if not NAME_RE.match(name):
            reason = (f"{name!r} is not a valid dataset name: use letters, digits, '-', '_' and '.' (not leading), "
                      "at most 128 characters; rename the entry")
            write_refusal(entry, reason)
            skipped.append(f"refused {entry.name}: {reason} (see {refusal_marker(entry).name})")
            continue
        fp, newest = fingerprint(entry)
        if now - newest < settle:
            skipped.append(f"{entry.name}: still changing, waiting {settle:g}s for it to settle")
            continue
        if name not in known and name not in new:
            new.append(name)
        runs.append(dg.RunRequest(
            run_key=f"{name}:{fp}", partition_key=name,
            run_config={"ops": {DATASET_OP: {"config": {"source": str(entry), "suite": "inbox"}}}},
            tags={"bench/source": "inbox"}))
    return new, runs, skipped


@dg.sensor(job=dataset_job, minimum_interval_seconds=sensor_interval_s(15),
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Registers and imports every dataset folder or tar dropped into BENCH_HOME/inbox/.")
def inbox_sensor(context: dg.SensorEvaluationContext, home: BenchHome) -> dg.SensorResult:
    known = set(context.instance.get_dynamic_partitions(DATASET_PARTITIONS_NAME))
    new, runs, skipped = inbox_requests(home.inbox_dir, known, time.time())
    for line in skipped:
        (context.log.warning if line.startswith("refused") else context.log.info)(line)
    return dg.SensorResult(
        run_requests=runs,
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest(DATASET_PARTITIONS_NAME, new)] if new else [],
    )
