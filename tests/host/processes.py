"""A process the stand-ins recorded, named by its pid and its start time.

A pid alone may name another process by the time it is used: a run of the suite starts tens of
thousands of processes, and Linux hands the numbers out again once they pass pid_max (32768 by
default). A unit's supervisor that died minutes ago, or a container that exited, may have its
number taken by another test's server; signalling it by number would stop that one instead. So
each record keeps the start time from /proc/PID/stat too, and a signal goes only to the process
(or the group of the leader) that still has both; a group whose leader has gone is signalled
only in the members that carry the host's own marker in their environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state first), or None without the process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot), or None when there is no such process."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields else None


def process_group(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[2]) if fields else None


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
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z" and int(fields[19]) == started


def signal_checked(pid: int, sig: int, still_ours: Callable[[], bool]) -> bool:
    """Signals `pid` if `still_ours()` holds, asked with a pidfd held (the number cannot pass to
    another process between the question and the signal); True if sent."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if not still_ours():
            return False
        signal.pidfd_send_signal(handle, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def signal_process(pid: int, started: int, sig: int) -> bool:
    """Signals the recorded process if it is still the one under its number; True if sent."""
    return signal_checked(pid, sig, lambda: start_time(pid) == started)


def child_running(parent: int, command: str) -> tuple[int, int] | None:
    """A running child of `parent` whose command line holds `command`: its pid and start time."""
    for entry in Path("/proc").iterdir():
        fields = stat_fields(int(entry.name)) if entry.name.isdigit() else None
        if fields is None or int(fields[1]) != parent or fields[0] == "Z":
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if command in line:
            return int(entry.name), int(fields[19])
    return None


def group_members(leader: int) -> list[int]:
    """The processes whose process group is `leader`'s number."""
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and process_group(int(e.name)) == leader]


def carries(pid: int, marker: bytes) -> bool:
    """The process's environment holds `marker` (`NAME=value`) as one of its entries."""
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def carrying_prefix(prefix: str) -> list[int]:
    """The processes with an environment entry that starts with `prefix` (`NAME=value`)."""
    wanted = prefix.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(v.startswith(wanted) for v in variables):
            found.append(int(entry.name))
    return found


def signal_group(leader: int, started: int, sig: int, marker: str) -> None:
    """Signals the group the recorded leader made. With the leader there (the same start time) it
    is that group; when its number names another process the group is gone. When the leader has
    gone, the number may still be the group's (while any process of a group lives its number cannot
    be handed out) or, once those too had gone, another group's whose leader has also gone: then
    only the members that carry `marker` in their environment (the host's own) are signalled."""
    now = start_time(leader)
    if now is not None and now != started:
        return
    if now == started:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, sig)
        return
    for pid in group_members(leader):
        signal_checked(pid, sig, lambda pid=pid: carries(pid, marker.encode()) and process_group(pid) == leader)
