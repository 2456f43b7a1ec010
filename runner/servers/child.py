"""A model server in a child process: wait until its health URL answers, stop it by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from runner.core.errors import RunnerError
from runner.core.ports import free_port
from runner.core.tls import tls_context

# What a server's log says when the port it was given was taken meanwhile.
PORT_TAKEN = ("address already in use", "errno 98", "eaddrinuse", "couldn't bind", "bind failed")


def start_on_a_free_port(
    spawn: Callable[[int], subprocess.Popen[bytes]],
    health_path: str,
    timeout_s: float,
    log_path: Path,
    what: str,
    *,
    port: int = 0,
    poll_s: float = 0.1,
    group: bool = False,
    attempts: int = 3,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a child server on `port` (or a free one) and wait until it is healthy. A free port can
    be taken by another process between our choosing it and the child binding it: when the child
    exits saying so, it is started again on another free port (a port given on purpose is not).
    Whatever stops the wait (Ctrl-C, SIGTERM, a fault) stops the child first: it runs in a session
    of its own, so nothing else would."""
    deadline = time.monotonic() + timeout_s
    for attempt in range(1, attempts + 1):
        chosen = port or free_port()
        process: subprocess.Popen[bytes] | None = None
        try:
            with interrupts_held():
                process = spawn(chosen)
            wait_until_healthy(
                process,
                f"http://127.0.0.1:{chosen}{health_path}",
                deadline - time.monotonic(),
                log_path,
                what,
                poll_s=poll_s,
                group=group,
            )
        except RunnerError:
            stop_child(process, group=group)
            log = log_path.read_text(errors="replace").lower() if log_path.is_file() else ""
            if port or attempt == attempts or not any(words in log for words in PORT_TAKEN):
                raise
            continue
        except BaseException:
            stop_child(process, group=group)
            raise
        return process, chosen
    raise AssertionError("unreachable")


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C (and SIGTERM, which the commands hand on as one) held back while a child is made,
    then taken: one landing inside `subprocess.Popen`, after the fork, would leave the child
    running with nothing holding it to stop. Not held outside the main thread (no signal lands
    there)."""
    held: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and callable(previous):
            previous(signal.SIGINT, None)


def wait_until_healthy(
    process: subprocess.Popen[bytes],
    health_url: str,
    timeout_s: float,
    log_path: Path,
    what: str,
    *,
    poll_s: float = 0.1,
    group: bool = False,
) -> float:
    """Seconds until `health_url` answered 200. A child that exits, or never answers in time, is
    one line, and a child that is still running then is stopped first."""
    started = time.monotonic()
    with httpx.Client(timeout=2.0, verify=tls_context()) as client:
        while time.monotonic() < started + timeout_s:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
                raise RunnerError(f"{what} exited with {process.returncode}: {tail[0][:300]}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(health_url).status_code == 200:
                    return time.monotonic() - started
            time.sleep(poll_s)
    stop_child(process, group=group)
    raise RunnerError(f"{what} not healthy after {timeout_s:.0f} s (log: {log_path})")


def stop_child(process: subprocess.Popen[bytes] | None, *, group: bool = False, grace_s: float = 5.0) -> None:
    """SIGTERM (to its whole process group when `group`), then SIGKILL after `grace_s`. A group is
    waited for to the last of its processes (vLLM's API server leaves helpers that end after it,
    such as multiprocessing's resource tracker), so that nothing of it outlives the stop."""
    if process is None or (process.poll() is not None and not (group and group_running(process.pid))):
        return
    kill = os.killpg if group else os.kill
    with contextlib.suppress(ProcessLookupError):
        kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and (process.poll() is None or (group and group_running(process.pid))):
        time.sleep(0.05)
    if process.poll() is None or (group and group_running(process.pid)):
        with contextlib.suppress(ProcessLookupError):
            kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def group_running(leader: int) -> bool:
    """Whether a process of `leader`'s process group still runs (one that ended and awaits its
    parent's wait, a zombie, does not; without /proc, any process of the group counts)."""
    if not Path("/proc/self").is_dir():
        try:
            os.killpg(leader, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == leader and fields[0] != "Z":
            return True
    return False
