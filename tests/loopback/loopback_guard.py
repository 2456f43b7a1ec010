"""Refuses and records every connection and name lookup off loopback, for the whole test suite.

Installed in the test process by `tests/conftest.py` (autouse: a test that tried fails) and, through
`sitecustomize.py` on `PYTHONPATH`, in every Python process a test starts (the CDK app, the runner,
the stand-in plugin), which append what they tried to the file `INFERENCE_LOOPBACK_LOG` names; the
session fails when it is not empty. Node (the CDK CLI) is outside it: its AWS endpoints point at
the emulator on loopback and its notices and telemetry are off.
"""

from __future__ import annotations

import ipaddress
import os
import socket

LOG_VARIABLE = "INFERENCE_LOOPBACK_LOG"


def is_loopback(host: object) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified  # 0.0.0.0 and :: are this machine too


class LoopbackGuard:
    """While installed, a connect or lookup off loopback raises and is kept in `attempts`."""

    def __init__(self, log_path: str | None = None) -> None:
        self.attempts: list[str] = []
        self.log_path = log_path
        self._real_connect = socket.socket.connect
        self._real_connect_ex = socket.socket.connect_ex
        self._real_getaddrinfo = socket.getaddrinfo

    def _refuse(self, what: str, error: type[OSError]) -> OSError:
        self.attempts.append(what)
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"pid {os.getpid()}: {what}\n")
        return error(f"test guard: no traffic off loopback ({what})")

    def install(self) -> LoopbackGuard:
        guard = self

        def connect(sock, address):
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
                raise guard._refuse(f"connect {address[0]}:{address[1]}", ConnectionRefusedError)
            return guard._real_connect(sock, address)

        def connect_ex(sock, address):
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
                guard._refuse(f"connect {address[0]}:{address[1]}", ConnectionRefusedError)
                return 111  # ECONNREFUSED
            return guard._real_connect_ex(sock, address)

        def getaddrinfo(host, *args, **kwargs):
            name = host.decode() if isinstance(host, bytes) else host
            if not is_loopback(name):
                raise guard._refuse(f"lookup {name}", socket.gaierror)
            return guard._real_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect
        socket.socket.connect_ex = connect_ex
        socket.getaddrinfo = getaddrinfo
        return self

    def uninstall(self) -> None:
        socket.socket.connect = self._real_connect
        socket.socket.connect_ex = self._real_connect_ex
        socket.getaddrinfo = self._real_getaddrinfo


def install_in_subprocess() -> None:
    """For `sitecustomize`: guard this process when a test session started it."""
    log_path = os.environ.get(LOG_VARIABLE)
    if log_path:
        LoopbackGuard(log_path).install()
