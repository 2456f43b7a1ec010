"""A process the stand-ins recorded, named by its pid and its start time.

A pid alone may name another process by the time it is used: a run of the suite starts tens of
thousands of processes, and Linux hands the numbers out again once they pass pid_max (32768 by
default). A unit's supervisor that died minutes ago, or a container that exited, may have its
number taken by another test's server; signalling it by number would stop that one instead. So
each record keeps the start time from /proc/PID/stat too, and a signal goes only to the process
(or the group of the leader) that still has both.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def record(pid: int) -> str:
    """`PID START`, as the stand-ins write a process into their state."""
    return f"{pid} {start_time(pid) or 0}"


def parse(text: str) -> tuple[int, int] | None:
    """A record's pid and start time; None for an empty or unreadable one."""
    words = text.split()
    if len(words) != 2 or not all(w.isdigit() for w in words):
        return None
    return int(words[0]), int(words[1])


def running(pid: int, started: int) -> bool:
    """The recorded process itself still runs (not a zombie, not another under its number)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] != "Z" and int(fields[19]) == started


def signal_process(pid: int, started: int, sig: int) -> bool:
    """Signals the recorded process if it is still the one under its number; True if sent."""
    try:
        handle = os.pidfd_open(pid)  # held, the number cannot pass to another process meanwhile
    except OSError:
        return False
    try:
        if start_time(pid) != started:
            return False
        import signal

        signal.pidfd_send_signal(handle, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def signal_group(leader: int, started: int, sig: int) -> None:
    """Signals the group the recorded leader made, unless its number now names another process.
    (While any process of the group lives the number is the group's and cannot be handed out;
    once it names a process with another start time, the group is gone.)"""
    now = start_time(leader)
    if now is not None and now != started:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, sig)
