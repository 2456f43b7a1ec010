"""`aws` on an emulated host or build (`tests/host/bin/aws` runs it): the call handed to the AWS
CLI server (tests/host/aws_cli.py), which runs the real CLI in a child with this process's argv,
environment, folder and standard streams; this process forwards the signals it gets and exits as
the child did. Without a server (AWS_CLI_SERVER unset or not listening) it runs the real CLI
itself. Standard library only, run without site (`python3 -I -S`): it starts in milliseconds.
`hand_over` is the caller's side of that protocol for any such server (the hosts' stand-ins'
caller, stand_in_client.py, and the emulator's synth server's, tests/emulator/synth_client.py,
use it too).
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import struct
import sys

TYPE_CHECKING = False  # typing itself is not imported: this caller starts in milliseconds
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def real_cli() -> NoReturn:
    """The first `aws` on PATH that is not this shim (nor a link to it)."""
    shim = os.path.realpath(os.path.join(os.path.dirname(os.path.realpath(__file__)), "bin", "aws"))
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(folder or ".", "aws")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and os.path.realpath(candidate) != shim:
            os.execv(candidate, [candidate, *sys.argv[1:]])
    sys.stderr.write("aws: command not found\n")
    sys.exit(127)


def open_fds() -> list[int]:
    found = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            continue
        found.append(fd)
    return found


def hand_over(
    path: str | None, argv: list[str], fallback: Callable[[], NoReturn], module: str | None = None
) -> NoReturn:
    """The call to the server listening at `path`, or `fallback()` (which runs it here) when
    there is none; `module` names a host stand-in for the server to run instead of the CLI."""
    if not path:
        fallback()
    fds = open_fds()  # before the socket takes the number of one that is closed
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        fallback()
    umask = os.umask(0)
    os.umask(umask)
    # A signal ignored from the start stays ignored in an exec'd program: so it is in the call.
    ignored = [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN]
    request = {
        "argv": argv,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": umask,
        "fds": fds,
        "ignored": ignored,
    }
    if module is not None:
        request["module"] = module
    body = json.dumps(request).encode()
    message = struct.pack(">I", len(body)) + body
    sent = conn.sendmsg([message[:4096]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    # A short call may be over, and its connection closed, before this line runs: a send then (even
    # an empty one) is refused with EPIPE, while the answers are still there to read below.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if sent < len(message):
            conn.sendall(message[sent:])
    for fd in fds:  # the child has them now; ours would keep a pipe open
        if fd != 2:
            os.close(fd)

    def forward(signum, _frame):
        with contextlib.suppress(OSError):
            conn.sendall(b"signal %d\n" % signum)

    for signum in FORWARDED:
        if signum not in ignored:
            signal.signal(signum, forward)
    reader = conn.makefile("rb")
    for line in reader:
        answer = json.loads(line)
        if "exit" in answer:
            sys.stderr.flush()
            os._exit(answer["exit"])
        if "signal" in answer:
            signum = answer["signal"]
            signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
            os.kill(os.getpid(), signum)
            os._exit(128 + signum)
    os._exit(255)  # the server went away mid-call


def main() -> None:
    hand_over(os.environ.get("AWS_CLI_SERVER"), sys.argv[1:], real_cli)


if __name__ == "__main__":
    main()
