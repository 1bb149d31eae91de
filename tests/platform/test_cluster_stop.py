"""How the cluster stops its process groups (`servers.stop_groups`, what `bench cluster down` and `rotate-secrets`
use), on plain `sleep` processes: an exited process not yet reaped (a zombie) is stopped, a group with one
member still running is not, several groups are signalled together, not one timeout after another, and a group
that has to be killed is named. A server `servers.spawn` starts stops on SIGTERM even when `bench` itself ignores
SIGINT and SIGTERM (a script's background job). What the cluster tests report when a stop had to kill
(`tests/platform/stop_report.py`) carries the warnings and each killed server's log tail."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench_assets.platform.cluster.layout import Proc
from bench_assets.platform.cluster.servers import (
    KILLED_AFTER_SIGTERM,
    group_has_running_member,
    running_members,
    spawn,
    stop_groups,
)
from bench_assets.platform.fsutil import proc_stat_fields
from tests.platform.stop_report import TAIL_LINES, killed_report


def _state(pid: int) -> str:
    return proc_stat_fields(Path(f"/proc/{pid}/stat").read_text())[0]


def _wait_for(check, timeout_s: float = 10.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_an_exited_leader_not_yet_reaped_is_stopped_a_running_member_is_not() -> None:
    zombie = subprocess.Popen(["sleep", "60"], start_new_session=True)
    zombie.kill()
    _wait_for(lambda: _state(zombie.pid) == "Z")
    os.killpg(zombie.pid, 0)  # the group still exists for the kernel: a probe by signal alone would wait for it
    assert not group_has_running_member(zombie.pid)
    zombie.wait()

    # The leader killed, its child still running (reparented): the group is not stopped.
    group = subprocess.Popen(["bash", "-c", "sleep 60 & wait"], start_new_session=True)
    _wait_for(lambda: any(_children(group.pid)))
    assert group_has_running_member(group.pid)
    group.kill()
    _wait_for(lambda: _state(group.pid) == "Z")
    assert group_has_running_member(group.pid)
    os.killpg(group.pid, signal.SIGKILL)
    _wait_for(lambda: not group_has_running_member(group.pid))
    group.wait()


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_groups_are_signalled_together_and_the_running_ones_returned(tmp_path: Path) -> None:
    """Two groups that ignore SIGTERM: both get it at once (the second does not wait for the first's timeout),
    both are killed after one timeout (stop_groups reaps its own children), and both are returned as
    having been running; a process already reaped is not."""
    procs = []
    for name in ("a", "b"):
        # Python, not a shell trap: a shell cannot trap a signal that was ignored when it started; this child sets
        # its own handler and unblocks the signal, whatever it inherited.
        child = (f"import signal, sys, time\n"
                 f"def term(*_):\n    open({str(tmp_path / (name + '.term'))!r}, 'w').write(repr(time.time()))\n"
                 f"signal.signal(signal.SIGTERM, term)\n"
                 f"signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGTERM}})\n"
                 f"open({str(tmp_path / (name + '.up'))!r}, 'w').close()\n"
                 f"while True:\n    time.sleep(0.05)\n")
        p = subprocess.Popen([sys.executable, "-c", child], start_new_session=True)
        procs.append(Proc(pid=p.pid, argv=["python"], log=str(tmp_path / f"{name}.log")))
    (tmp_path / "a.log").write_text("".join(f"a line {i}\n" for i in range(50)))  # b's log was never written
    done = subprocess.Popen(["true"], start_new_session=True)
    done.wait()
    _wait_for(lambda: all((tmp_path / f"{n}.up").exists() for n in ("a", "b")))

    timeout_s = 1.0  # the signals go out together: the two handlers run well within half of it
    started = time.monotonic()
    said: list[str] = []
    running = stop_groups([*procs, Proc(pid=done.pid, argv=["true"], log="")], timeout_s=timeout_s, say=said.append)
    assert running == procs
    assert time.monotonic() - started >= timeout_s  # TERM was trapped: the kill after the timeout ended them
    assert [line.split(" (pid ")[1].split(")")[0] for line in said] == [str(p.pid) for p in procs], said
    assert all(f"still running {timeout_s:.0f} s {KILLED_AFTER_SIGTERM}" in line for line in said), said
    for line, p in zip(said, procs, strict=True):  # the warning names the member that held on and its command
        assert f"still running: pid {p.pid} (" in line and f"{sys.executable} -c import signal" in line, line
    assert not any(group_has_running_member(p.pid) for p in procs)
    # What the cluster tests' failure then carries: the warnings and the last lines of each killed server's log.
    report = killed_report("\n".join(said)).splitlines()
    a_tail = report.index(f"--- {tmp_path / 'a.log'}:")
    assert report[:len(said)] == said and report[a_tail + 1:a_tail + 1 + TAIL_LINES] == [
        f"a line {i}" for i in range(50 - TAIL_LINES, 50)]
    assert report[report.index(f"--- {tmp_path / 'b.log'}:") + 1] == "(no log)"
    term = [float((tmp_path / f"{n}.term").read_text()) for n in ("a", "b")]
    assert abs(term[0] - term[1]) < timeout_s / 2, term  # one after the other would be a whole timeout apart


def test_a_command_name_with_spaces_and_parentheses_is_read_past(tmp_path: Path) -> None:
    """/proc/<pid>/stat puts the command name, as the process chose it, in parentheses: a name holding ") Z 1 7 "
    must not be read as the state and the group."""
    def entry(pid: int, name: str, state: str, pgrp: int) -> None:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({name}) {state} 1 {pgrp} {pgrp} 0 -1 4194560 0 0\n")

    entry(11, "evil) Z 1 7 (", "S", 9)  # running, group 9, its name claiming a zombie of group 7
    entry(12, "worker", "Z", 7)
    entry(13, "worker", "X", 7)  # dead: exited, like the zombie
    (tmp_path / "self").mkdir()  # not a pid: skipped
    assert group_has_running_member(9, proc=tmp_path)
    assert not group_has_running_member(7, proc=tmp_path)
    assert group_has_running_member(7, proc=tmp_path / "absent")  # no /proc to read: cannot tell, so running
    (tmp_path / "11" / "cmdline").write_bytes(b"dagster\0api\0grpc\0")
    (tmp_path / "11" / "wchan").write_text("do_epoll_wait")
    assert running_members(9, proc=tmp_path) == ["pid 11 (S, do_epoll_wait) dagster api grpc"]
    assert running_members(7, proc=tmp_path) == []


def _ignored(pid: int) -> set[int]:
    """The signals /proc says `pid` ignores (its SigIgn mask)."""
    mask = int(Path(f"/proc/{pid}/status").read_text().split("SigIgn:")[1].split()[0], 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


def test_a_server_started_by_a_bench_that_ignores_sigint_still_stops_on_sigterm(tmp_path: Path) -> None:
    """`bench cluster up &` in a script starts with SIGINT ignored, and an ignored signal stays ignored across exec. A
    Dagster server gives SIGTERM SIGINT's disposition as it starts (dagster/_utils/interrupts.py): the code server
    used to ignore SIGTERM too, and every `bench cluster down` or `rotate-secrets` waited out the 20 s timeout and
    killed it. The child below does what the Dagster server does; spawned here, it stops on SIGTERM at once."""
    up = tmp_path / "up"
    server = ("import signal, time\n"
              "signal.signal(signal.SIGTERM, signal.getsignal(signal.SIGINT))  # as a Dagster server starts\n"
              f"open({str(up)!r}, 'w').close()\n"
              "while True:\n    time.sleep(0.05)\n")
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for s in before:  # this process as a background job of a script starts (SIGTERM too, for good measure)
            signal.signal(s, signal.SIG_IGN)
        proc = spawn(tmp_path, "server", [sys.executable, "-c", server], dict(os.environ), tmp_path)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    _wait_for(up.exists)
    assert not _ignored(proc.pid) & {signal.SIGINT, signal.SIGTERM}, _ignored(proc.pid)
    said: list[str] = []
    timeout_s = 10.0
    started = time.monotonic()
    assert stop_groups([proc], timeout_s=timeout_s, say=said.append) == [proc]
    assert time.monotonic() - started < timeout_s / 2 and not said, said  # SIGTERM stopped it; nothing was killed
    assert not group_has_running_member(proc.pid)
