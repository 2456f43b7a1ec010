"""Fixtures for every tier: loopback only, never real AWS."""

from __future__ import annotations

import os
import socket
import tempfile

import pytest

# No instance-metadata probes and no real credentials, ever.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
    os.environ.pop(name, None)
os.environ["AWS_CONFIG_FILE"] = os.devnull + ".missing"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull + ".missing"
# runner.forward's state file: never the project's own (a developer's open forwards stay theirs).
os.environ["INFERENCE_FORWARDS_FILE"] = os.path.join(tempfile.mkdtemp(prefix="forwards-"), "forwards.json")


@pytest.fixture
def dead_url() -> str:
    """A loopback URL where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def local_server():
    """The real embedded llama.cpp server, once per session."""
    from runner.local_server import LocalServer

    server = LocalServer().start()
    yield server
    server.stop()
