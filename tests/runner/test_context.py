"""The model's context, known to the runner for the embedded model as for every other backend: a
length past it is one line and is not sent, and a reply it cut short is not counted as a success
(llama.cpp stops a reply at its context with finish reason `length`: 4,090 tokens in and 64 asked
came back as 6 tokens, counted a success)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from catalog import get_backend
from runner import bench
from runner.cli import session
from runner.cli.options import CommonOptions
from runner.servers.llama_cpp import MODEL_ALIAS, LocalServerConfig
from tests.runner.fake_openai import FakeOpenAI, text

CONTEXT = 4096


def run_bench(tmp_path: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    code = bench.run(["--no-aws", "--local", "never", "--results-dir", str(tmp_path), *argv])
    (path,) = tmp_path.glob("*/bench-*.json")
    return code, json.loads(path.read_text())


class StubServer:
    """What discovery reads of a started embedded server, without starting one."""

    def __init__(self, config: LocalServerConfig) -> None:
        self.config, self.base_url, self.startup_s = config, "http://127.0.0.1:9/v1", 0.0

    def start(self) -> StubServer:
        return self

    def stop(self) -> None:
        pass


def test_the_embedded_backend_carries_the_context_its_server_is_started_with(monkeypatch):
    monkeypatch.setattr(session, "LocalServer", StubServer)
    discovery = session.discover(CommonOptions(local="always", aws=False))
    (local,) = discovery.backends
    assert local.name == "local"
    assert local.max_total_tokens == LocalServerConfig().context_tokens == get_backend("local").max_total_tokens
    assert local.max_total_tokens == CONTEXT


def test_the_embedded_servers_own_context_is_the_one_the_runner_checks(local_server):
    """llama.cpp says its context in its model list (`meta.n_ctx`): the catalog's figure is the same."""
    models = httpx.get(f"{local_server.base_url}/models", timeout=30).json()
    assert [m["meta"]["n_ctx"] for m in models["data"]] == [get_backend("local").max_total_tokens]


def test_a_length_past_the_embedded_context_is_one_line_and_not_sent(local_server, tmp_path, capsys):
    endpoint = f"local={local_server.base_url},model={MODEL_ALIAS}"
    code, evidence = run_bench(
        tmp_path, "--endpoint", endpoint, "--input-tokens", "4090", "--output-tokens", "64", "--repeats", "1"
    )
    assert code == 1  # nothing measured
    assert evidence["records"] == []
    line = "4090 input tokens: up to 4090 in + 64 out is more than its context of 4096 tokens; not sent (shorter lengths, or a backend whose context holds them)"
    assert evidence["workload_backends"]["local"]["not_sent"] == [line]
    assert capsys.readouterr().err.count(line) == 1


def test_a_preset_past_the_embedded_context_is_one_line_and_not_sent(local_server, tmp_path, capsys):
    """The rag preset (4,096 ± 512 tokens in, 512 out) cannot be held by a 4,096-token context."""
    endpoint = f"local={local_server.base_url},model={MODEL_ALIAS}"
    code, evidence = run_bench(tmp_path, "--endpoint", endpoint, "--workload", "rag", "--requests", "2")
    assert code == 1 and evidence["records"] == []
    (line,) = evidence["workload_backends"]["local"]["not_sent"]
    assert (
        line
        == "4096 input tokens: up to 5632 in + 512 out is more than its context of 4096 tokens; not sent (shorter lengths, or a backend whose context holds them)"
    )
    err = capsys.readouterr().err
    assert err.count(line) == 1 and "HTTP 400" not in err


def test_a_reply_the_context_cut_short_is_not_a_success(tmp_path):
    """A server that stops at its context as llama.cpp does (finish reason `length`, 6 tokens of the
    64 asked, 4,090 + 6 filling its 4,096): an error on the record, not a short success. inf2's
    catalog context is 4,096."""
    cut = text("one two three four five six", prompt_tokens=4090, finish="length")
    with FakeOpenAI([text("Hi"), cut]) as server:
        code, evidence = run_bench(
            tmp_path, "--endpoint", f"inf2={server.url}/v1,model=m", "--max-tokens", "64", "--repeats", "2"
        )
    assert code == 1
    cut_short = "cut short by the model's context: 4090 prompt + 6 output tokens fill its 4,096, 64 output tokens asked"
    assert [r["error"] for r in evidence["records"]] == [cut_short] * 2
    assert all(r["ok"] is False and r["tokens_per_s"] is None for r in evidence["records"])


def test_a_reply_that_stops_short_within_the_context_is_still_a_success(tmp_path):
    """The model ending on its own (`stop`), or at the tokens asked, is a success at any length."""
    with FakeOpenAI([text("Hi"), text("one two three", prompt_tokens=4090)]) as server:
        code, evidence = run_bench(
            tmp_path, "--endpoint", f"inf2={server.url}/v1,model=m", "--max-tokens", "64", "--repeats", "2"
        )
    assert code == 0 and all(r["ok"] and r["output_tokens"] == 3 for r in evidence["records"])
