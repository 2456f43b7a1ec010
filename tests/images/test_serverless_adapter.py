"""The serverless image's adapter (images/llama-serverless/sagemaker_adapter.py), run as itself on
loopback: SageMaker's /ping and /invocations in front of the embedded llama.cpp server, answers
streamed as they arrive, upstream errors kept, and `serve` tied to the life of its llama-server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from runner.core.tls import tls_context

ADAPTER = Path(__file__).resolve().parents[2] / "images" / "llama-serverless" / "sagemaker_adapter.py"
PROMPT = [{"role": "user", "content": "Write a short paragraph about the ocean."}]
# A stand-in llama-server: records its arguments, then exits with STUB_EXIT once `release` exists.
STUB = """\
import json, os, sys, time
from pathlib import Path
here = Path(__file__).parent
(here / "argv.json.partial").write_text(json.dumps(sys.argv[1:]))
(here / "argv.json.partial").rename(here / "argv.json")  # whole, or not there: the test polls for it
deadline = time.monotonic() + 30
while not (here / "release").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
sys.exit(int(os.environ.get("STUB_EXIT", "3")))
"""


@dataclass
class Adapter:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.strip()]


@contextmanager
def adapter(tmp_path: Path, upstream: str, *args: str, command: str = "proxy", **env: str) -> Iterator[Adapter]:
    """The adapter on an ephemeral loopback port, which it writes to a port file once bound."""
    run = tmp_path / f"adapter-{time.monotonic_ns()}"
    run.mkdir()
    port_file, log = run / "port", run / "adapter.log"
    argv = [sys.executable, str(ADAPTER), command, "--host", "127.0.0.1", "--port", "0"]
    argv += ["--port-file", str(port_file), "--upstream", upstream, *args]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=os.environ | env)
    try:
        deadline = time.monotonic() + 15
        while not port_file.exists():
            assert process.poll() is None, f"adapter exited with {process.returncode}: {log.read_text()}"
            assert time.monotonic() < deadline, f"adapter wrote no port file: {log.read_text()}"
            time.sleep(0.02)
        yield Adapter(f"http://127.0.0.1:{int(port_file.read_text())}", process, log)
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=60, trust_env=False, verify=tls_context()) as client:
        yield client


@pytest.fixture
def upstream(local_server) -> str:
    return f"http://127.0.0.1:{local_server.port}"


def test_ping_is_503_while_llama_server_is_down_and_200_once_it_answers(tmp_path, client, dead_url, upstream):
    with adapter(tmp_path, dead_url) as down:
        response = client.get(f"{down.url}/ping")
        assert response.status_code == 503
        assert "unreachable" in response.json()["error"]["message"]
    with adapter(tmp_path, upstream) as up:
        response = client.get(f"{up.url}/ping")
        assert response.status_code == 200, response.text
        assert response.json() == {"status": "ok"}


def test_invocations_without_stream_return_the_chat_completion(tmp_path, client, upstream):
    with adapter(tmp_path, upstream) as running:
        body = {"messages": PROMPT, "max_tokens": 8, "temperature": 0}
        response = client.post(f"{running.url}/invocations", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    completion = response.json()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"]["content"]
    assert completion["usage"]["completion_tokens"] > 0


def test_invocations_with_stream_relay_sse_as_it_arrives(tmp_path, client, upstream):
    body = {"messages": PROMPT, "max_tokens": 16, "temperature": 0, "stream": True}
    arrivals: list[tuple[float, str]] = []
    with (
        adapter(tmp_path, upstream) as running,
        client.stream("POST", f"{running.url}/invocations", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["transfer-encoding"] == "chunked"
        arrivals = [(time.monotonic(), line) for line in response.iter_lines() if line.strip()]
    assert all(line.startswith("data: ") for _, line in arrivals)
    assert arrivals[-1][1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for _, line in arrivals[:-1]]
    assert any(chunk["choices"][0]["delta"].get("content") for chunk in chunks)
    # Streamed, not buffered: the first token came well before the last (16 tokens take >= 0.2 s here).
    assert arrivals[-1][0] - arrivals[0][0] > 0.05


def test_an_upstream_http_error_keeps_its_status_and_comes_back_as_json(tmp_path, client, upstream):
    with adapter(tmp_path, upstream) as running:
        response = client.post(
            f"{running.url}/invocations", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        # Still serving after it.
        assert client.get(f"{running.url}/ping").status_code == 200
    assert response.status_code == 400
    assert response.json()["error"]["code"] == 400
    assert response.json()["error"]["message"]
    assert [line for line in running.lines() if "answered 400" in line], running.lines()


def test_an_unreachable_upstream_is_502(tmp_path, client, dead_url):
    with adapter(tmp_path, dead_url) as running:
        response = client.post(f"{running.url}/invocations", json={"messages": PROMPT})
    assert response.status_code == 502
    assert response.json()["error"]["type"] == "upstream_unreachable"
    assert len([line for line in running.lines() if "502" in line]) == 1, running.lines()


@pytest.fixture
def stub(tmp_path) -> Path:
    path = tmp_path / "llama-server"
    path.write_text(f"#!{sys.executable}\n{STUB}")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(("child_exit", "adapter_exit"), [(3, 3), (0, 1)])
def test_serve_starts_llama_server_and_exits_non_zero_when_it_dies(
    tmp_path, client, dead_url, stub, child_exit, adapter_exit
):
    args = ("--llama-server", str(stub), "--model", "/models/m.gguf", "--threads", "0")
    with adapter(tmp_path, dead_url, *args, command="serve", STUB_EXIT=str(child_exit)) as running:
        while not (tmp_path / "argv.json").exists():
            assert running.process.poll() is None, running.lines()
            time.sleep(0.02)
        argv = json.loads((tmp_path / "argv.json").read_text())
        # While llama-server loads (here: never answers), SageMaker's ping is refused.
        assert client.get(f"{running.url}/ping").status_code == 503
        (tmp_path / "release").touch()
        assert running.process.wait(timeout=10) == adapter_exit
    flags = dict(zip(argv[0::2], argv[1::2], strict=False))
    assert flags["--model"] == "/models/m.gguf"
    assert flags["--host"] == "127.0.0.1"
    assert flags["--port"] == dead_url.rsplit(":", 1)[1]
    assert flags["--ctx-size"] == "4096"
    assert int(flags["--threads"]) >= 1  # 0 asks for the container's CPUs
    assert argv[-1] == "--jinja"
    assert f"llama-server exited with {child_exit}" in running.log.read_text()


def test_serve_passes_sigterm_on_and_exits_zero(tmp_path, dead_url, stub):
    with adapter(tmp_path, dead_url, "--llama-server", str(stub), command="serve") as running:
        while not (tmp_path / "argv.json").exists():
            time.sleep(0.02)
        running.process.send_signal(signal.SIGTERM)
        assert running.process.wait(timeout=10) == 0
    assert "stopped" in running.log.read_text()


def test_the_proxy_ends_on_sigterm_however_soon_it_comes(tmp_path, dead_url):
    """SIGTERM at each moment of the proxy's start and while it serves: it always ends, within
    seconds (a handler that set an Event could land while the main thread held that Event's lock,
    and the process then never ended). Before Python reaches the adapter, the default action ends it."""
    for delay in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8):
        argv = [sys.executable, str(ADAPTER), "proxy", "--host", "127.0.0.1", "--port", "0", "--upstream", dead_url]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) in (0, -signal.SIGTERM), delay
