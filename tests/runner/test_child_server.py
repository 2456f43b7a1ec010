"""A child server whose chosen port was taken meanwhile is started again on another one."""

from __future__ import annotations

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
