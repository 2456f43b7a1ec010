"""The vLLM tier: a real vLLM (CPU build, the version the g6 and SageMaker servers pin) on loopback.

`scripts/setup_vllm.sh` (run by `make test`) installs it in `.venv-vllm`; the server starts once
per session (about 80 s with a warm compile cache, a few minutes the first time on a machine).
"""

from __future__ import annotations

import os
import platform

import pytest

SUPPORTED = platform.system() == "Linux" and platform.machine() == "x86_64"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/vllm/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.vllm)
            if not SUPPORTED:
                item.add_marker(pytest.mark.skip(reason="vLLM's CPU wheel exists for Linux x86_64 only"))


@pytest.fixture(scope="session")
def vllm_server():
    """Started once; `INFERENCE_VLLM_PORT` points the tier at a server already running on loopback
    (started with `runner.vllm_local`'s command line), to iterate without the start-up."""
    from runner.vllm_local import VllmServer

    server = VllmServer()
    if os.environ.get("INFERENCE_VLLM_PORT"):
        server.port = int(os.environ["INFERENCE_VLLM_PORT"])
        yield server
        return
    server.start()
    print(f"\nvLLM ready in {server.startup_s:.0f} s")
    yield server
    server.stop()
