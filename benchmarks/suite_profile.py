"""Where the test suite's CPU goes: every process a pytest run starts (training children, Dagster code servers and
daemons, dbt, Celery workers, PostgreSQL, Redis, Chromium), its CPU seconds, and the test that started it.

`suite_time.py` says how long the suite takes; this says what to cut. It runs pytest (the Makefile's way, with the
selection given after `--`) with two recorders on:
- the kernel's process accounting (acct(2), so root only): one record per process that exits, with its pid, parent,
  command name and user + system CPU, whatever the process is (PostgreSQL and Chromium included) and however it was
  started (daemons reaped by init too);
- a `sitecustomize` put first on PYTHONPATH: every Python process writes one line when it starts (pid, parent, argv
  and `PYTEST_CURRENT_TEST`, which pytest sets in the worker's environment for the test running, so a child started
  by a test inherits the test's name).
Joined on pid, each Python process gets its argv and test; a process that is not Python (or started with a clean
environment) takes the test of its nearest recorded ancestor, else counts as "(unattributed)". The pytest workers
themselves are one row each (their CPU is every in-process test's). Python processes of other jobs on the machine
(a mutation run, say) are left out: they are neither recorded nor descendants of this run. Their other processes
are not told apart from this run's daemons that init reaped (PostgreSQL's), so both count as "(unattributed)":
profile on an otherwise idle machine, or read that row with care.

    sudo .venv/bin/python benchmarks/suite_profile.py -- tests/platform/test_cluster.py
    .venv/bin/python benchmarks/suite_profile.py --workers 2            # the whole suite, as make test

Writes `benchmarks/results/suite_profile.json` (or `--output`): CPU by test file, by test, by kind of process
(argv without paths and options: `bench train`, `dagster api grpc`, `dbt build`, `postgres`, ...), the slowest
single processes, and the run's wall and the machine's busy time. Not a test: never run by pytest.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _result import RESULTS, command, git_state, machine_facts, minutes, now, write_result
from suite_time import machine_busy_s, makefile_env, pytest_args

REPO = Path(__file__).resolve().parent.parent
OTHER_JOBS = {"mutmut"}  # Python run under another name: `make mutation`'s workers
EXECNET = "exec(eval(sys.stdin.readline()))"  # how pytest-xdist starts a worker (python -c ...)
AHZ = 100  # acct(2) v3 records CPU and elapsed time in ticks of 1/100 s

HOOK = '''\
import json, os, sys
_log = os.environ.get("SUITE_PROFILE_LOG")
if _log:
    try:
        _line = json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv if hasattr(sys, "argv") else [],
                            "orig_argv": getattr(sys, "orig_argv", []), "test": os.environ.get("PYTEST_CURRENT_TEST")})
        _fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(_fd, (_line + "\\n").encode())
        os.close(_fd)
    except Exception:
        pass
'''


def comp_t(v: int) -> float:
    """acct's 16-bit float: 13-bit mantissa, 3-bit base-8 exponent."""
    return float((v & 0x1FFF) << (3 * ((v >> 13) & 0x7)))


def read_pacct(path: Path) -> list[dict[str, Any]]:
    """struct acct_v3 (64 bytes): flag, version, tty, exitcode, uid, gid, pid, ppid, btime, etime (float),
    utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t), comm[16]."""
    fmt = "<BBHIIIIIIf8H16s"
    size = struct.calcsize(fmt)
    data = path.read_bytes()
    out = []
    for off in range(0, len(data) - size + 1, size):
        f = struct.unpack_from(fmt, data, off)
        if f[1] != 3:
            continue
        out.append({"pid": f[6], "ppid": f[7], "btime": f[8], "cpu_s": (comp_t(f[10]) + comp_t(f[11])) / AHZ,
                    "comm": f[18].split(b"\0")[0].decode(errors="replace")})
    return out


def set_accounting(path: Path | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    arg = None if path is None else str(path).encode()
    if libc.acct(arg) != 0:
        err = ctypes.get_errno()
        raise SystemExit(f"suite_profile: acct({path}) failed: {os.strerror(err)} (process accounting needs root)")


def kind(argv: list[str], comm: str) -> str:
    """`bench train`, `dagster api grpc`, `dbt build`, `pytest`: what a process was, without paths or options."""
    if not argv:
        return comm
    words = []
    rest = argv[1:] if Path(argv[0]).name.startswith("python") else argv
    if rest and rest[0] == "-c":  # multiprocessing's children: `from multiprocessing.spawn import spawn_main; ...`
        code = rest[1] if len(rest) > 1 else ""
        return "python -c " + code.split(";")[0].strip()[:60]
    if rest and rest[0] == "-m":
        rest = rest[1:]
    for a in rest:
        if a.startswith("-") or "=" in a:
            if words:
                break
            continue
        name = Path(a).name
        words.append(name.removesuffix(".py").removesuffix("__main__"))
        if len(words) == 3:
            break
    return " ".join(w for w in words if w) or comm


def test_of(current: str | None) -> str | None:
    """`tests/x.py::test_y (call)` -> `tests/x.py::test_y`."""
    return current.rsplit(" (", 1)[0] if current else None


def attribute(records: list[dict[str, Any]], started: list[dict[str, Any]], root_pid: int) -> list[dict[str, Any]]:
    """Each accounting record of this run with its argv kind and test; records of other jobs dropped."""
    by_pid = {s["pid"]: s for s in started}  # pid reuse within a run is rare; the last start wins
    parent = {r["pid"]: r["ppid"] for r in records}
    for s in started:
        parent.setdefault(s["pid"], s["ppid"])
    rows = []
    for r in records:
        s, pid, seen = by_pid.get(r["pid"]), r["pid"], set()
        test = test_of(s["test"]) if s else None
        ours = s is not None or pid == root_pid
        while not ours and pid in parent and pid not in seen:  # an unrecorded process: its nearest recorded ancestor
            seen.add(pid)
            pid = parent[pid]
            if pid == root_pid or pid in by_pid:
                ours = True
                test = test_of(by_pid[pid]["test"]) if pid in by_pid else None
        if not ours and (r["comm"].startswith("python") or r["comm"] in OTHER_JOBS):
            continue  # another job's Python (it never loaded the hook)
        argv = (s.get("orig_argv") or s.get("argv")) if s else []
        is_worker = s is not None and test is None and any(EXECNET in a for a in argv)
        rows.append({**r, "kind": "pytest worker" if is_worker else kind(argv, r["comm"]),
                     "test": test or ("(pytest worker)" if is_worker else "(unattributed)")})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def total(key: str, n: int) -> list[dict[str, Any]]:
        acc: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            acc[r[key]].append(r["cpu_s"])
        return sorted(({key: k, "cpu_s": round(sum(v), 1), "processes": len(v)} for k, v in acc.items()),
                      key=lambda x: -x["cpu_s"])[:n]

    for r in rows:
        r["file"] = r["test"].split("::")[0]
    biggest = sorted(rows, key=lambda r: -r["cpu_s"])[:25]
    return {"cpu_s": round(sum(r["cpu_s"] for r in rows), 1), "processes": len(rows),
            "by_file": total("file", 60), "by_test": total("test", 40), "by_kind": total("kind", 40),
            "biggest_processes": [{k: r[k] for k in ("kind", "test", "cpu_s", "comm")} for r in biggest]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--output", type=Path)
    ap.add_argument("selection", nargs="*", help="pytest arguments after --, e.g. -- tests/platform/test_cluster.py")
    args = ap.parse_args(argv)
    output = args.output or RESULTS / "suite_profile.json"

    started_at, facts = now(), machine_facts()
    with tempfile.TemporaryDirectory(prefix="suite-profile-") as tmp:
        hook, log, pacct = Path(tmp) / "hook", Path(tmp) / "started.jsonl", Path(tmp) / "pacct"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK)
        pacct.touch()
        env = makefile_env()
        env.update(SUITE_PROFILE_LOG=str(log),
                   PYTHONPATH=os.pathsep.join(p for p in (str(hook), env.get("PYTHONPATH")) if p))
        cmd = [*pytest_args(args.workers), *args.selection]
        set_accounting(pacct)
        busy0, t0 = machine_busy_s(), time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, cwd=REPO, env=env)
            code = proc.wait()
            time.sleep(5)  # daemons a test stopped at its end finish exiting (and get their record)
        finally:
            set_accounting(None)
        wall, busy1 = time.perf_counter() - t0, machine_busy_s()
        started = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
        rows = attribute(read_pacct(pacct), started, proc.pid)
    found = summarise(rows)
    doc = {"benchmark": "suite_profile", "date": started_at, "machine": facts, "command": command(),
           "git": git_state(), "pytest": cmd[1:], "pytest_exit_code": code, "wall": minutes(wall),
           "wall_s": round(wall, 1),
           "machine_busy_s": None if busy0 is None or busy1 is None else round(busy1 - busy0, 1), **found}
    write_result(output, doc)
    print(f"{found['processes']} processes, {found['cpu_s']:.0f} CPU s in {minutes(wall)} wall "
          f"(machine busy {doc['machine_busy_s']} s, other jobs included)")
    for title, key, name in (("by file", "by_file", "file"), ("by kind", "by_kind", "kind"),
                             ("by test", "by_test", "test")):
        print(f"\n{title}:")
        for row in found[key][:20]:
            print(f"  {row['cpu_s']:8.1f} s  {row['processes']:5d}  {row[name]}")
    return code


if __name__ == "__main__":
    sys.exit(main())
