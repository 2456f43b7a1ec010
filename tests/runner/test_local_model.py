"""The real embedded backend: llama.cpp's server with Gemma 3 270M, on loopback.

It is a small BASE model: these tests check the harness (health, streaming, usage, timing,
stop by PID) and that grading records what happened; they do not expect good answers.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from runner import bench
from runner.agent import checks
from runner.agent.counting import count_once
from runner.core.backends import local_backend
from runner.core.evidence import load
from runner.core.records import RequestRecord
from runner.measure import ChatRequest, warm_up
from runner.measure.openai_sync import OpenAIStreamClient
from runner.servers.llama_cpp import MODEL_ALIAS, LocalServer, LocalServerConfig, ensure_model


def test_streamed_request_reports_server_usage_and_timings_on_one_connection(local_server):
    client = OpenAIStreamClient(local_server.base_url, MODEL_ALIAS)
    warm = warm_up(client, "local")
    records = [
        client.chat(ChatRequest("Write a short paragraph about the ocean.", max_tokens=32), RequestRecord("local", run))
        for run in (1, 2)
    ]
    client.close()
    assert warm.ok and warm.output_tokens <= 4
    for record in records:
        assert record.ok and record.token_source == "server"
        assert record.finish_reason in ("length", "stop")
        assert 1 <= record.output_tokens <= 32
        assert 0 < record.ttft_s < record.e2e_s
        assert record.tokens_per_s > 1
        # llama.cpp's own figures, kept beside the client's: same token count, less time.
        assert record.server_timings["predicted_n"] == record.output_tokens
        assert 0 < record.client_overhead_s < record.e2e_s
    # llama.cpp's server closes the connection after every streamed response (it still sends
    # `Keep-Alive: timeout=5, max=100`), so each request is on a new loopback connection and the
    # record says so. Non-streamed requests do reuse it. A server fix makes this fail: update the README.
    assert [warm.new_connection, *(r.new_connection for r in records)] == [True, True, True]


def test_greedy_decoding_is_repeatable(local_server):
    client = OpenAIStreamClient(local_server.base_url, MODEL_ALIAS)
    texts = {client.chat(ChatRequest("The sea is", max_tokens=16), RequestRecord("local", run)).text for run in (1, 2)}
    client.close()
    assert len(texts) == 1


def test_bench_on_the_embedded_model_writes_evidence(tmp_path, local_server):
    code = bench.run(
        [
            "--no-aws",
            "--local",
            "never",
            "--endpoint",
            f"local={local_server.base_url},model={MODEL_ALIAS}",
            "--repeats",
            "2",
            "--max-tokens",
            "24",
            "--results-dir",
            str(tmp_path),
        ]
    )
    assert code == 0
    (path,) = tmp_path.glob("*/bench-*.json")
    evidence = load(path)
    assert [r["ok"] for r in evidence["records"]] == [True, True]
    assert all(r["output_tokens"] <= 24 and r["token_source"] == "server" for r in evidence["records"])
    assert evidence["backends"][0]["catalog"]["name"] == "local"


def test_counting_grades_the_base_model_honestly(local_server):
    backend = local_backend(local_server.base_url, MODEL_ALIAS)
    record = count_once(backend, 1, argparse.Namespace(max_tokens=48, timeout=60.0, tools="filter", runs=1)).to_json()
    # The pinned base model under greedy decoding runs on to the token limit without a tool call:
    # one model call, reached, and graded as the failure it is (a changed model changes this).
    assert record["reached"] is True and record["model_calls"] == 1
    assert record["error"] == "hit the max-tokens limit before finishing (no final answer)"
    assert (record["no_tool_call"], record["filters_sent"], record["grading_route"]) == (True, [], "none")
    assert (record["finished"], record["passed"]) == (False, False)


def test_check_reaches_the_embedded_model(local_server):
    backend = local_backend(local_server.base_url, MODEL_ALIAS)
    args = argparse.Namespace(wait=5.0, max_tokens=32, timeout=60.0)
    (health,) = checks.wait_all([backend], args, aws=False).values()
    record = checks.check_backend(backend, health, args).to_json()
    assert record["health"]["healthy"] is True
    # Both checks ran against the real server: one model call each, cut by the token limit (a
    # base model), so neither passes.
    assert record["reached"] is True
    assert [record[part]["model_calls"] for part in ("plain", "tool")] == [1, 1]
    assert (record["plain_ok"], record["tool_ok"], record["tool_args_seen"]) == (False, False, [])


@pytest.mark.llama
def test_server_stops_by_pid(tmp_path):
    server = LocalServer(LocalServerConfig(threads=1)).start()
    pid = server.process.pid
    assert server.startup_s is not None and server.startup_s < 60
    server.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_model_is_assembled_once_and_a_corrupt_copy_is_rebuilt(tmp_path: Path):
    path = ensure_model(tmp_path)
    size = path.stat().st_size
    assert size > 200_000_000
    with path.open("r+b") as handle:
        handle.write(b"corrupt")
    assert ensure_model(tmp_path).stat().st_size == size
    with path.open("rb") as handle:
        assert handle.read(4) == b"GGUF"


def test_a_prompt_length_sweep_on_the_embedded_model_counts_forces_and_watches_it(tmp_path, local_server):
    """On the real llama.cpp server: prompts sized with its own tokenizer (plus its chat template,
    measured from its usage), output held at its length (ignore_eos), TTFT growing with the prompt
    (its prefill is real work on a CPU), and its /metrics sampled during each level."""
    code = bench.run(
        ["--no-aws", "--local", "never", "--endpoint", f"local={local_server.base_url},model={MODEL_ALIAS}",
         "--input-tokens", "32,512", "--output-tokens", "8", "--repeats", "2", "--results-dir", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    (path,) = tmp_path.glob("*/bench-*.json")
    evidence = load(path)
    records = evidence["records"]
    assert [r["ok"] for r in records] == [True] * 4
    info = evidence["workload_backends"]["local"]
    assert info["token_count"].startswith("the server's tokenizer (POST /tokenize), plus")
    assert info["forced_output_length"] is True and info["metrics"] == f"{local_server.base_url[:-3]}/metrics"
    for record in records:
        # Within 5 % of the asked length on the server's own count, and exactly 8 tokens out.
        assert abs(record["prompt_tokens"] / record["target_input_tokens"] - 1) <= 0.05, record
        assert (record["output_tokens"], record["finish_reason"]) == (8, "length"), record
    ttft = {n: sorted(r["ttft_s"] for r in records if r["target_input_tokens"] == n) for n in (32, 512)}
    assert min(ttft[512]) > max(ttft[32]), ttft
    sampled = [level["server_metrics"] for level in evidence["levels"]]
    assert len(sampled) == 2 and all(m["samples"] >= 1 for m in sampled), sampled
