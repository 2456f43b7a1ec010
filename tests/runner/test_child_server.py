"""A child server whose chosen port was taken meanwhile is started again on another one."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from runner.core.errors import RunnerError
from runner.servers import child


def http_server(log_path):
    def spawn(port: int) -> subprocess.Popen[bytes]:
        with log_path.open("wb") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    return spawn


@pytest.fixture
def taken_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_port_taken_before_the_child_binds_it_is_replaced(tmp_path, taken_port, monkeypatch):
    offered = iter([taken_port, child.free_port()])
    monkeypatch.setattr(child, "free_port", lambda: next(offered))
    log = tmp_path / "server.log"
    process, port = child.start_on_a_free_port(http_server(log), "/", 30, log, "http.server")
    try:
        assert port != taken_port and process.poll() is None
    finally:
        child.stop_child(process)


def test_a_port_given_on_purpose_is_not_replaced(tmp_path, taken_port):
    log = tmp_path / "server.log"
    with pytest.raises(RunnerError, match=r"http\.server exited with 1: OSError: \[Errno 98\] Address already in use"):
        child.start_on_a_free_port(http_server(log), "/", 30, log, "http.server", port=taken_port)


def test_ctrl_c_as_the_child_is_made_stops_it(tmp_path):
    """A Ctrl-C (or a SIGTERM handed on as one) that lands as the child is made, before the caller
    holds it, still stops it: it runs in a session of its own, and nothing else would."""
    made: list[subprocess.Popen[bytes]] = []

    def spawn(port: int) -> subprocess.Popen[bytes]:
        made.append(
            subprocess.Popen(
                [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        signal.raise_signal(signal.SIGINT)
        return made[-1]

    try:
        with pytest.raises(KeyboardInterrupt):
            child.start_on_a_free_port(spawn, "/", 30, tmp_path / "server.log", "http.server")
        assert made[0].poll() is not None, "the child was left running"
    finally:
        made[0].kill()
        made[0].wait()
