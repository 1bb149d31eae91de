"""Launch a child process through Dagster Pipes with a wall-clock limit that kills its whole tree.

`PipesSubprocessClient` has no timeout, so the session is opened by hand: the child gets the Pipes
bootstrap environment, its log lines stream into the Dagster log as it runs, and on timeout (or
when the step itself is interrupted) the child's process group is SIGKILLed, so no dataloader
worker outlives it.
"""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg


@dataclass(frozen=True)
class ChildOutcome:
    returncode: int
    timed_out: bool
    wall_seconds: float
    custom_messages: list[Any]


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel SIGKILLs it when the step process dies, however it
    dies (SIGKILL included), so an orphan never keeps training on a lane that is already released."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_child(context: dg.AssetExecutionContext, module: str, spec_path: Path, *, env: dict[str, str],
              timeout_s: float, log_path: Path, extras: dict[str, Any] | None = None) -> ChildOutcome:
    """Run `python -m module spec_path` under Pipes; stdout/stderr go to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    timed_out = False
    with dg.open_pipes_session(context=context, context_injector=dg.PipesTempFileContextInjector(),
                               message_reader=dg.PipesTempFileMessageReader(), extras=extras or {}) as session:
        child_env = {**os.environ, **env, **session.get_bootstrap_env_vars()}
        with open(log_path, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", module, str(spec_path)], env=child_env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
            try:
                returncode = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_tree(proc)
                returncode = proc.returncode
            except BaseException:
                _kill_tree(proc)  # the step was interrupted: never leave a child training on a lane
                raise
        # any process the child left in its group (dataloader workers) goes with it
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    messages = list(session.get_custom_messages())
    return ChildOutcome(returncode=returncode, timed_out=timed_out, wall_seconds=time.monotonic() - start,
                        custom_messages=messages)


def log_tail(path: Path, lines: int = 30) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
