"""Orchestration overhead and memory of one training partition (`rf100vl/checkpoint` through Dagster Pipes).

Targets: the Dagster step wall time of one training partition minus the training child's own wall time
is <= 10 s, and the process the Dagster step runs in stays under 500 MB RSS while the child trains.

Setup (in `--home`, default a fresh temp dir): the `mini-tiny` dataset is materialized through
`rf100vl_dataset_job`, and model `yolo9-t` is registered with a recipe written next to it: the smoke recipe
(recipes/rf100vl/smoke/yolo9.json, 160 px, batch 4) with `protocol.epochs = --epochs` (default 5).

Per repeat (`--repeat N`, default 1), on the same spec:

1. Baseline, "the child's own training time": the exact `TrainSpec` the asset would write (built with
   `training.plan_run` from a `TrainRequest` like the asset's, lane 0's environment, 1 thread) is written
   to a separate run dir and `python -m bench_assets.rf100vl.training.child.train SPEC.json` is run standalone;
   its wall is spawn to exit (`Popen` -> `wait`, monotonic clock).
2. One run of `rf100vl_train_job` on "mini-tiny|yolo9-t" with `force: true`, in a process of its own (ONE_RUN: the
   way a `bench campaign` run-pool worker executes a partition) as a subprocess (the
   Dagster step runs in that process: in-process executor). Every `--interval` s (0.1) the sampler reads
   VmRSS of that process and of its descendants (/proc/*/stat ppid), the training child being the
   descendant whose command line names `bench_assets.rf100vl.training.child.train`. Child process wall = its start
   (/proc/PID/stat starttime, 10 ms ticks) to the last sample that saw it (so it may be short by up to one
   interval, which counts against the overhead). The step wall is STEP_START -> STEP_SUCCESS of
   `rf100vl__checkpoint` in the run's event log (`DagsterInstance.all_logs`, DAGSTER_HOME=BENCH_HOME/dagster).

Reported per repeat: step wall, child process wall (and the child's own `wall_seconds` from result.json,
measured inside the child from `main()`), overhead = step wall - child process wall (the target), overhead
vs the standalone baseline child, ratio step/child, peak RSS of the step process while the child lived
(the target) and over the whole process, peak RSS of the child tree, and for information the whole-process
overhead (`one-run process` wall - child wall: Python start, Dagster and `definitions` import, instance
start, run creation before STEP_START; run events, instance disposal and interpreter exit after
STEP_SUCCESS). A timeline splits the overhead into before the child (step start -> child spawned)
and after it (child exit -> step success), with the step's own log lines as markers.

    export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
    .venv/bin/python benchmarks/orchestration_overhead.py --repeat 2 --timeline

Prints two markdown tables (time, memory) and one JSON line; exits 1 when the worst repeat's overhead exceeds
10 s or its step-process RSS exceeds 500 MB while the child trains. The machine should be otherwise idle: the
1-minute load average and any other `bench_assets.rf100vl.training.child` processes seen at the start of each
measurement are reported (the latter with a warning on stderr). Not a test: never run by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET_OVERHEAD_S = 10.0
TARGET_STEP_RSS_MB = 500.0
DATASET = "mini-tiny"
MODEL = "yolo9-t"
JOB = "rf100vl_train_job"  # bench_assets.rf100vl.defs.jobs.train_job.name
# One partition's run in a process of its own, as a run-pool worker executes it (`bench campaign`).
ONE_RUN = ("import json, sys; import dagster as dg; from bench_assets.cli.location import run_job; "
           "from bench_assets.platform.instance import open_instance; from bench_assets.rf100vl.defs.jobs import "
           "train_job; from resources.paths import bench_home_path; "
           "out = run_job(open_instance(bench_home_path()), train_job, run_config=json.loads(sys.argv[1]), "
           "partition_key=dg.MultiPartitionKey({'dataset': sys.argv[2], 'model': sys.argv[3]})); "
           "sys.exit(0 if out.success else 1)")
STEP = "rf100vl__checkpoint"
CHILD_MODULE = "bench_assets.rf100vl.training.child.train"
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# /proc sampling


def _boot_time() -> float:
    """Boot time on the `time.time()` clock, from /proc/uptime (/proc/stat's btime is truncated to whole
    seconds and drifts from the wall clock by tenths of a second, enough to misplace a child's start)."""
    return time.time() - float(Path("/proc/uptime").read_text().split()[0])


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, start time in clock ticks since boot) of a process, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), int(fields[19])


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process (its own threads, not its children)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        st = _stat(int(entry))
        if st is not None:
            children.setdefault(st[0], []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class Sampler(threading.Thread):
    """Samples the RSS of `root` and of its descendants every `interval` s until stopped."""

    def __init__(self, root: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.interval = interval
        self.stop = threading.Event()
        # t, root_mb, root_cpu_s, child_mb (training child tree), child_pids
        self.samples: list[dict[str, Any]] = []
        self.child_start: dict[int, float] = {}  # training child pid -> start (epoch s)
        self.child_last_seen: dict[int, float] = {}
        self.cmdlines: dict[int, str] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            t = time.time()
            root_mb = _rss_mb(self.root)
            if root_mb is None:
                break
            child_mb = 0.0
            child_pids = []
            trainer_pids = set()
            for pid in _descendants(self.root):
                cmd = self.cmdlines.get(pid) or _cmdline(pid)
                if cmd:
                    self.cmdlines[pid] = cmd
                if CHILD_MODULE in cmd:
                    trainer_pids.add(pid)
            # the training child's own descendants (dataloader workers, if any) count as the child
            tree = set(trainer_pids)
            for pid in trainer_pids:
                tree.update(_descendants(pid))
            for pid in sorted(tree):
                mb = _rss_mb(pid)
                if mb is None:
                    continue
                child_mb += mb
                child_pids.append(pid)
                if pid in trainer_pids:
                    if pid not in self.child_start:
                        st = _stat(pid)
                        self.child_start[pid] = _boot_time() + st[1] / CLK_TCK if st else t
                    self.child_last_seen[pid] = t
            self.samples.append({"t": t, "root_mb": root_mb, "root_cpu_s": _cpu_s(self.root) or 0.0,
                                 "child_mb": child_mb, "child_pids": child_pids})
            self.stop.wait(self.interval)


def _sample_standalone(proc: subprocess.Popen, interval: float, out: dict[str, float]) -> None:
    peak = 0.0
    while proc.poll() is None:
        tree = [proc.pid, *_descendants(proc.pid)]
        peak = max(peak, sum(_rss_mb(p) or 0.0 for p in tree))
        time.sleep(interval)
    out["peak_mb"] = peak


def foreign_children() -> list[int]:
    """Training/prediction children on this machine that this benchmark did not start (they skew the timing)."""
    mine = set(_descendants(os.getpid()))
    return [int(e) for e in os.listdir("/proc")
            if e.isdigit() and int(e) not in mine and "bench_assets.rf100vl.training.child" in _cmdline(int(e))]


def machine_state(what: str) -> dict[str, Any]:
    state = {"loadavg_1m": os.getloadavg()[0], "foreign_children": len(foreign_children())}
    if state["foreign_children"]:  # (the load average lags: our own previous child keeps it near 1 a while)
        print(f"warning: before {what}: {state['foreign_children']} other bench_assets children running "
              f"(load average {state['loadavg_1m']:.2f} on {os.cpu_count()} CPUs): timings are skewed",
              file=sys.stderr)
    return state


# ---------------------------------------------------------------------------------------------
# Setup


def write_recipe(path: Path, epochs: int) -> Path:
    from bench_assets.rf100vl.training.recipes import RECIPES_DIR

    doc = json.loads((RECIPES_DIR / "smoke" / "yolo9.json").read_text())
    doc["protocol"]["epochs"] = epochs
    path.write_text(json.dumps(doc, indent=1))
    return path


def setup(home: Path, epochs: int) -> tuple[Any, Path]:
    from bench_assets.cli.location import run_job
    from bench_assets.platform.instance import open_instance
    from bench_assets.rf100vl.datasets.sources import SourceSpec, register
    from bench_assets.rf100vl.datasets.store import current_version
    from bench_assets.rf100vl.defs.jobs import dataset_job
    from bench_assets.rf100vl.defs.partitions import register_model_partition, register_partitions
    from bench_assets.rf100vl.training.models import register_model

    instance = open_instance(home)  # also sets BENCH_HOME and DAGSTER_HOME for the subprocesses
    register(home / "sources", DATASET, SourceSpec(kind="mini", suites=["mini"]))
    register_partitions(instance, [DATASET])
    if current_version(home / "datasets", DATASET) is None:
        out = run_job(instance, dataset_job, partition_key=DATASET)
        if not out.success:
            raise SystemExit(f"dataset job failed: {out.errors}")
    recipe = write_recipe(home / f"bench-recipe-yolo9-e{epochs}.json", epochs)
    register_model(home, MODEL, str(recipe))
    register_model_partition(instance, MODEL)
    return instance, recipe


def lane0_env() -> dict[str, str]:
    from resources.lanes import lanes_from_env

    return lanes_from_env()[0].child_env()


# ---------------------------------------------------------------------------------------------
# Measurements


def _plan_spec(home: Path, runs_dir: Path) -> tuple[Path, Path]:
    from bench_assets.platform.fsutil import atomic_write_json
    from bench_assets.rf100vl.datasets.store import load_record
    from bench_assets.rf100vl.training.models import model_recipe
    from bench_assets.rf100vl.training.run_store import spec_path
    from bench_assets.rf100vl.training.runplan import variant_sequence
    from bench_assets.rf100vl.training.train_run import TrainRequest, plan_run
    from resources.lanes import lanes_from_env

    record = load_record(home / "datasets", DATASET)
    model, recipe = model_recipe(home, MODEL)
    lane = lanes_from_env()[0]
    req = TrainRequest(model=model, recipe=recipe, dataset=record, runs_dir=runs_dir, device=lane.device,
                       force=True, fault={}, lane=lane.index)
    variant = variant_sequence(recipe, model.size,
                               max(s["boxes_per_image_max"] for s in record.manifest["splits"].values()))[0]
    _, _, run_dir, spec = plan_run(req, variant)
    run_dir.mkdir(parents=True, exist_ok=True)
    spec = spec.model_copy(update={"resume": False})
    atomic_write_json(spec_path(run_dir), spec.model_dump())
    return spec_path(run_dir), run_dir


def baseline(home: Path, work: Path, rep: int, interval: float) -> dict[str, Any]:
    spec_path, run_dir = _plan_spec(home, work / f"baseline-{rep}")
    state = machine_state(f"standalone child {rep}")
    env = {**os.environ, **lane0_env()}
    env.pop("DAGSTER_PIPES_CONTEXT", None)
    env.pop("DAGSTER_PIPES_MESSAGES", None)
    peak: dict[str, float] = {}
    with open(run_dir / "child.log", "ab") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", CHILD_MODULE, str(spec_path)], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        watcher = threading.Thread(target=_sample_standalone, args=(proc, interval, peak), daemon=True)
        watcher.start()
        rc = proc.wait()
        wall = time.monotonic() - t0
        watcher.join()
    if rc != 0:
        raise SystemExit(f"standalone child exited {rc}; see {run_dir / 'child.log'}")
    result = json.loads((run_dir / "result.json").read_text())
    return {"wall_s": wall, "inner_wall_s": result["wall_seconds"], "peak_rss_mb": peak.get("peak_mb", 0.0),
            "epochs_done": result["epochs_done"], "run_dir": str(run_dir), "state": state}


def _run_ids(instance: Any) -> set[str]:
    import dagster as dg

    return {r.dagster_run.run_id for r in instance.get_run_records(dg.RunsFilter(job_name=JOB))}


def dagster_run(instance: Any, home: Path, work: Path, rep: int, interval: float) -> dict[str, Any]:
    before = _run_ids(instance)
    config = json.dumps({"ops": {STEP: {"config": {"force": True}}}})
    out_path = work / f"bench-exec-{rep}.log"
    state = machine_state(f"one-run process {rep}")
    with open(out_path, "wb") as out:
        t_start = time.time()
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", ONE_RUN, config, DATASET, MODEL], cwd=REPO,
                                env=os.environ.copy(), stdout=out, stderr=subprocess.STDOUT)
        sampler = Sampler(proc.pid, interval)
        sampler.start()
        rc = proc.wait()
        wall = time.monotonic() - t0
        sampler.stop.set()
        sampler.join()
    if rc != 0:
        raise SystemExit(f"one-run process exited {rc}; see {out_path}")
    new = _run_ids(instance) - before
    if len(new) != 1:
        raise SystemExit(f"expected one new {JOB} run, found {sorted(new)}")
    run_id = new.pop()
    if len(sampler.child_start) != 1:
        raise SystemExit(f"expected one training child, saw {sorted(sampler.child_start)}")
    (child_pid, c_start), = sampler.child_start.items()
    c_end = sampler.child_last_seen[child_pid]

    events = []
    for e in instance.all_logs(run_id):
        kind = e.dagster_event.event_type_value if e.dagster_event else "LOG"
        msg = e.user_message or ""
        events.append({"t": e.timestamp, "kind": kind, "step": e.step_key, "msg": msg.splitlines()[0][:110]
                       if msg else ""})
    first = {}
    for ev in events:
        if ev["step"] == STEP:
            first.setdefault(ev["kind"], ev["t"])
    s_start, s_end = first["STEP_START"], first.get("STEP_SUCCESS")
    if s_end is None:
        raise SystemExit(f"run {run_id}: no STEP_SUCCESS for {STEP}")
    runs = home / "runs" / MODEL / DATASET
    run_dir = runs / (runs / "CURRENT").read_text().strip()
    result = json.loads((run_dir / "result.json").read_text())
    during = [s for s in sampler.samples if s["child_pids"]]
    return {
        "run_id": run_id, "exec_wall_s": wall, "exec_start": t_start,
        "step_wall_s": s_end - s_start, "step_start": s_start, "step_end": s_end,
        "child_start": c_start, "child_end": c_end, "child_wall_s": c_end - c_start,
        "child_inner_wall_s": result["wall_seconds"], "epochs_done": result["epochs_done"],
        "step_rss_during_child_mb": max(s["root_mb"] for s in during),
        "step_rss_peak_mb": max(s["root_mb"] for s in sampler.samples),
        "step_rss_before_child_mb": max((s["root_mb"] for s in sampler.samples if s["t"] < c_start), default=0.0),
        "child_rss_peak_mb": max(s["child_mb"] for s in during),
        "step_cpu_during_child_s": during[-1]["root_cpu_s"] - during[0]["root_cpu_s"],
        "during_s": during[-1]["t"] - during[0]["t"],
        "samples": len(sampler.samples), "events": events, "log": str(out_path), "state": state,
    }


# ---------------------------------------------------------------------------------------------
# Report


def timeline(d: dict[str, Any]) -> list[str]:
    """Event log of the run relative to STEP_START, with the child's life marked."""
    t0 = d["step_start"]
    marks = [(d["exec_start"], "one-run process spawned"), (d["child_start"], "** training child spawned"),
             (d["child_end"], "** training child last seen alive")]
    marks += [(e["t"], f"{e['kind']:<26} {e['msg']}") for e in d["events"]
              if not (e["kind"] == "LOG" and e["msg"].startswith("epoch "))]
    return [f"{t - t0:+8.2f}s  {m}" for t, m in sorted(marks)]


def fmt(x: float, nd: int = 2) -> str:
    return f"{x:.{nd}f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, help="BENCH_HOME to use (default: a fresh temp dir)")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--interval", type=float, default=0.1, help="RSS sampling interval, s")
    ap.add_argument("--timeline", action="store_true", help="print each run's event timeline (stderr)")
    ap.add_argument("--keep", action="store_true", help="keep the temp BENCH_HOME (always kept with --home)")
    args = ap.parse_args(argv)

    for k, v in THREAD_ENV.items():
        os.environ.setdefault(k, v)
    temp = None if args.home else Path(tempfile.mkdtemp(prefix="bench-orch-"))
    home = (args.home or temp / "bench").resolve()
    work = home / "orchestration-bench"
    work.mkdir(parents=True, exist_ok=True)
    t = time.monotonic()
    instance, recipe = setup(home, args.epochs)
    print(f"setup: BENCH_HOME={home}, recipe {recipe} ({args.epochs} epochs), {time.monotonic() - t:.1f}s",
          file=sys.stderr)

    reps = []
    for rep in range(args.repeat):
        b = baseline(home, work, rep, args.interval)
        print(f"repeat {rep}: standalone child {b['wall_s']:.2f}s", file=sys.stderr)
        d = dagster_run(instance, home, work, rep, args.interval)
        print(f"repeat {rep}: one-run process {d['exec_wall_s']:.2f}s, step {d['step_wall_s']:.2f}s, "
              f"child {d['child_wall_s']:.2f}s", file=sys.stderr)
        reps.append((b, d))
        if args.timeline:
            print(f"\ntimeline of repeat {rep} (run {d['run_id']}), relative to STEP_START:", file=sys.stderr)
            print("\n".join(timeline(d)), file=sys.stderr)
    instance.dispose()
    if temp is not None and not args.keep:
        shutil.rmtree(temp, ignore_errors=True)

    rows = []
    for b, d in reps:
        rows.append({
            "standalone_child_s": b["wall_s"], "standalone_child_inner_s": b["inner_wall_s"],
            "standalone_child_rss_mb": b["peak_rss_mb"],
            "exec_wall_s": d["exec_wall_s"], "step_wall_s": d["step_wall_s"], "child_wall_s": d["child_wall_s"],
            "child_inner_s": d["child_inner_wall_s"],
            "overhead_s": d["step_wall_s"] - d["child_wall_s"],
            "overhead_vs_standalone_s": d["step_wall_s"] - b["wall_s"],
            "step_over_child": d["step_wall_s"] / d["child_wall_s"],
            "before_child_s": d["child_start"] - d["step_start"],
            "after_child_s": d["step_end"] - d["child_end"],
            "process_overhead_s": d["exec_wall_s"] - d["child_wall_s"],
            "exec_to_step_start_s": d["step_start"] - d["exec_start"],
            "step_end_to_exec_exit_s": d["exec_start"] + d["exec_wall_s"] - d["step_end"],
            "step_rss_during_child_mb": d["step_rss_during_child_mb"],
            "step_rss_peak_mb": d["step_rss_peak_mb"], "child_rss_peak_mb": d["child_rss_peak_mb"],
            "step_cpu_during_child_s": d["step_cpu_during_child_s"],
            "step_cpu_share_during_child": d["step_cpu_during_child_s"] / max(d["during_s"], 1e-9),
            "run_id": d["run_id"],
            "loadavg_1m_before": [round(b["state"]["loadavg_1m"], 2), round(d["state"]["loadavg_1m"], 2)],
            "foreign_children_before": [b["state"]["foreign_children"], d["state"]["foreign_children"]],
        })

    time_cols = [("standalone child s", "standalone_child_s", 2), ("step wall s", "step_wall_s", 2),
                 ("child wall s (in step)", "child_wall_s", 2), ("child inner s", "child_inner_s", 2),
                 ("**overhead s** (step - child)", "overhead_s", 2),
                 ("step - standalone s", "overhead_vs_standalone_s", 2), ("step / child", "step_over_child", 3),
                 ("before child s", "before_child_s", 2), ("after child s", "after_child_s", 2),
                 ("one-run process wall s", "exec_wall_s", 2), ("process overhead s", "process_overhead_s", 2)]
    mem_cols = [("**step RSS during child MB**", "step_rss_during_child_mb", 0),
                ("step RSS peak MB", "step_rss_peak_mb", 0),
                ("step CPU s during child", "step_cpu_during_child_s", 2),
                ("step CPU share during child", "step_cpu_share_during_child", 3),
                ("child RSS peak MB", "child_rss_peak_mb", 0),
                ("standalone child RSS peak MB", "standalone_child_rss_mb", 0)]
    for cols in (time_cols, mem_cols):
        print("| repeat | " + " | ".join(c[0] for c in cols) + " |")
        print("|---:|" + "---:|" * len(cols))
        for i, r in enumerate(rows):
            print(f"| {i} | " + " | ".join(fmt(r[k], nd) for _, k, nd in cols) + " |")
        if len(rows) > 1:
            print("| median | " + " | ".join(fmt(statistics.median(r[k] for r in rows), nd) for _, k, nd in cols)
                  + " |")
        print()

    worst_overhead = max(r["overhead_s"] for r in rows)
    worst_rss = max(r["step_rss_during_child_mb"] for r in rows)
    ok_time = worst_overhead <= TARGET_OVERHEAD_S
    ok_rss = worst_rss <= TARGET_STEP_RSS_MB
    print(f"{'PASS' if ok_time else 'FAIL'}: worst overhead {worst_overhead:.2f}s "
          f"(target <= {TARGET_OVERHEAD_S:g}s); "
          f"{'PASS' if ok_rss else 'FAIL'}: worst step-process RSS while the child trains {worst_rss:.0f} MB "
          f"(target <= {TARGET_STEP_RSS_MB:g} MB)")
    print(json.dumps({
        "benchmark": "orchestration_overhead", "epochs": args.epochs, "repeat": args.repeat,
        "interval_s": args.interval, "cpus": os.cpu_count(), "python": platform.python_version(),
        "target_overhead_s": TARGET_OVERHEAD_S, "target_step_rss_mb": TARGET_STEP_RSS_MB,
        "worst_overhead_s": round(worst_overhead, 3), "worst_step_rss_during_child_mb": round(worst_rss, 1),
        "pass": ok_time and ok_rss,
        "repeats": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
    }))
    return 0 if ok_time and ok_rss else 1


if __name__ == "__main__":
    sys.exit(main())
