"""The vLLM tier: a real vLLM (CPU build, the version the g6 and SageMaker servers pin) on loopback.

`scripts/setup_vllm.sh` (run by `make test`) installs it in `.venv-vllm`; the server is started
once per test run, in the background, as the run begins (`tests/vllm/background.py`). On Linux
x86_64 a missing environment or a server that cannot start FAILS every test of the tier, with the
reason; elsewhere (no CPU wheel) the tier skips.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.vllm.background import PORT_ENV, STATE_ENV, SUPPORTED


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/vllm/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.vllm)
            if not SUPPORTED:
                item.add_marker(pytest.mark.skip(reason="vLLM's CPU wheel exists for Linux x86_64 only"))


@pytest.fixture(scope="session")
def vllm_environment() -> Path:
    from runner.servers.vllm import VLLM_PYTHON

    if not VLLM_PYTHON.exists():
        pytest.fail(
            f"the vLLM tier's environment is missing ({VLLM_PYTHON}): run scripts/setup_vllm.sh (make test does)"
        )
    return VLLM_PYTHON


def wait_for_state(path: Path, timeout_s: float = 1200) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file():
            return json.loads(path.read_text())
        time.sleep(0.5)
    return {"error": f"the background vLLM server gave no state in {timeout_s:.0f} s"}


@pytest.fixture(scope="session")
def vllm_server(vllm_environment):
    """The run's one server: the background one (tests/vllm/background.py), or the one
    `INFERENCE_VLLM_PORT` names (started with `python -m runner.vllm_local`), or, when neither
    exists (this conftest's tests run alone under another runner), one started here."""
    from runner.servers.vllm import VllmServer

    server = VllmServer()
    if os.environ.get(PORT_ENV):
        server.port = int(os.environ[PORT_ENV])
        yield server
        return
    if os.environ.get(STATE_ENV):
        state = wait_for_state(Path(os.environ[STATE_ENV]))
        if "error" in state:
            pytest.fail(f"the vLLM server did not start: {state['error']}")
        server.port = int(state["port"])
        yield server
        return
    server.start()
    yield server
    server.stop()
