"""The runner against a real vLLM: the engine behind g6, g5g and SageMaker, on loopback.

vLLM's CPU build serves the embedded model (converted from its GGUF) with the serving flags the
stacks write for the g6 server wherever they apply on a CPU. Its request validation, stream
shape, keep-alive and tool-call parser are the real ones.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from catalog import BackendKind, get_backend
from catalog.backends import OPEN_MODEL
from catalog.config import load_config, sagemaker_environment
from catalog.lanes import OPEN_LANE, in_lane
from runner import bench, check, counting, orchestrator
from runner.core.evidence import load
from runner.servers.llama_cpp import MODEL_ALIAS
from runner.servers.vllm import VLLM_PYTHON, cpu_serving_flags
from runner.vllm_local import SERVED_NAME
from tests.runner.fake_openai import FakeOpenAI, text, tool_call, vllm_validation_error

PARSE_HELPER = Path(__file__).with_name("parse_serve_args.py")
OCEAN = "Write a short paragraph about the ocean."


def common(tmp_path: Path, server, *flags: str) -> list[str]:
    return [
        "--no-aws",
        "--local",
        "never",
        "--results-dir",
        str(tmp_path),
        "--timeout",
        "120",
        "--endpoint",
        f"vllm={server.base_url},model={SERVED_NAME}",
        *flags,
    ]


def evidence_of(tmp_path: Path, command: str) -> dict:
    (path,) = tmp_path.glob(f"*/{command}-*.json")
    return load(path)


def test_the_server_runs_the_open_lanes_g6_flags_that_apply_on_a_cpu(vllm_server):
    """The lane's own flags, hermes parser included, as the g6 stack writes them in `-c lane=open`."""
    g6 = list(in_lane(get_backend("g6"), OPEN_LANE).serve_flags)
    assert g6[g6.index("--max-model-len") + 1] == "8192" and "--enable-auto-tool-choice" in g6
    assert [f for f in g6 if f not in ("--gpu-memory-utilization", "0.90")] == cpu_serving_flags("g6")
    assert cpu_serving_flags("g6") == [
        "--max-model-len",
        "8192",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]
    models = httpx.get(f"{vllm_server.base_url}/models", timeout=10).json()
    assert models["data"][0]["id"] == SERVED_NAME and models["data"][0]["max_model_len"] == 8192


def test_real_vllm_refuses_an_empty_tools_array_as_the_fake_does(vllm_server):
    body = {"model": SERVED_NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    for bad in ({"tools": []}, {"tool_choice": "auto"}):
        response = httpx.post(f"{vllm_server.base_url}/chat/completions", json=body | bad, timeout=60)
        assert response.status_code == 400
        # The scripted server replays the same refusal, word for word.
        assert response.json() == vllm_validation_error(body | bad)


def test_check_plain_answer_is_accepted_and_answered_by_vllm(tmp_path, vllm_server):
    # Strands' OpenAIModel sends `tools: []` for an agent without tools, and vLLM answers HTTP 400
    # to that, so the plain answer failed on every vLLM backend. Now vLLM takes the request and
    # answers it. The embedded BASE model never ends its turn (it repeats the prompt until the
    # token limit), so the run ends on the model's limit, not on the request: a model that stops
    # passes, as the scripted server with vLLM's validation shows (tests/runner/test_check_command.py).
    check.run(common(tmp_path, vllm_server, "--max-tokens", "16"))
    (record,) = evidence_of(tmp_path, "check")["records"]
    plain = record["plain"]
    assert record["health"]["healthy"] is True and plain["reached"] is True, plain
    assert plain["answer"] and plain["model_calls"] == 1
    assert plain["error"] in (None, "hit the max-tokens limit before finishing (no final answer)"), plain
    assert record["tool"]["reached"] is True, record["tool"]


def test_bench_on_vllm_reuses_one_connection_and_reads_vllms_stream(tmp_path, vllm_server):
    code = bench.run(common(tmp_path, vllm_server, "--repeats", "3", "--max-tokens", "32"))
    evidence = evidence_of(tmp_path, "bench")
    records = evidence["records"]
    assert code == 0 and [r["ok"] for r in records] == [True, True, True], records
    for record in records:
        assert record["token_source"] == "server" and 1 <= record["output_tokens"] <= 32
        assert record["finish_reason"] in ("length", "stop")
        assert record["server_timings"] is None  # vLLM reports none
        # role-only first chunk, content, a finish chunk, then a usage-only chunk
        assert record["chunks"] >= 3 and 0 < record["ttft_s"] < record["e2e_s"]
    # uvicorn keeps the connection alive: the warm-up's connection serves every timed request.
    assert evidence["warm_up"][0]["new_connection"] is True
    assert [r["new_connection"] for r in records] == [False, False, False]
    assert len({r["text"] for r in records}) == 1  # greedy: the same text every time


def test_counting_with_a_forced_tool_goes_through_vllms_parser(tmp_path, vllm_server):
    # Two model calls are all the claim needs: the forced tool call, then the answer after its result.
    # 96 tokens: schema-constrained JSON may carry whitespace, and 32 once cut the call short.
    counting.run(
        common(tmp_path, vllm_server, "--runs", "1", "--force-tool", "--max-tokens", "96", "--max-model-calls", "2")
    )
    (record,) = evidence_of(tmp_path, "counting")["records"]
    # The first call had to be count_ids: vLLM produced it (constrained to the tool's schema),
    # Strands ran it, and the grade reports the filter it executed.
    first = record["tool_calls_requested"][0]
    assert first["name"] == "count_ids"
    op, value = first["input"]["op"], first["input"]["value"]
    assert record["filters_sent"][0] == f"id {op} {value}"
    # The grade says "right filter" exactly when that filter selects the ids the question asks for.
    compare = {">=": int.__ge__, ">": int.__gt__, "<=": int.__le__, "<": int.__lt__, "==": int.__eq__}[op]
    chosen = {i for i in (0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13) if compare(i, value)}
    assert record["right_filter"] is (chosen == {20, 21, 22, 23, 10, 11, 12, 13})


def test_orchestrator_times_asks_to_vllm(tmp_path, vllm_server):
    script = [tool_call("ask_vllm", {}), tool_call("scoreboard", {}), text("vllm was the fastest.")]
    with FakeOpenAI(script) as agent:
        code = orchestrator.run(
            [*common(tmp_path, vllm_server), "--endpoint", f"agent={agent.url}", "--agent", "agent"]
        )
    (record,) = evidence_of(tmp_path, "orchestrator")["records"]
    (ask,) = record["asks"]
    assert ask["ok"] is True and ask["token_source"] == "server", ask
    assert record["table"][0]["measured"] == 1 and code == 0


def rendered_prompt_tokens(vllm_url: str, llama_root: str, messages: list[dict]) -> tuple[list[int], list[int]]:
    vllm = httpx.post(
        f"{vllm_url}/tokenize",
        json={"model": SERVED_NAME, "messages": messages, "add_generation_prompt": True},
        timeout=30,
    ).json()["tokens"]
    prompt = httpx.post(f"{llama_root}/apply-template", json={"messages": messages}, timeout=30).json()["prompt"]
    llama = httpx.post(f"{llama_root}/tokenize", json={"content": prompt, "add_special": True}, timeout=30).json()
    return vllm, llama["tokens"]


def test_both_engines_render_the_same_prompt_bos_included(vllm_server, local_server):
    llama_root = local_server.base_url.removesuffix("/v1")
    for messages in (
        [{"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": OCEAN}],
    ):
        vllm_tokens, llama_tokens = rendered_prompt_tokens(vllm_server.root_url, llama_root, messages)
        assert vllm_tokens[0] == 2, "the prompt must start with <bos> (id 2)"
        assert vllm_tokens == llama_tokens


def agreeing_prefix(a: list, b: list) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def test_greedy_text_agrees_across_engines(vllm_server, local_server, record_property):
    # llama.cpp runs Q4_K_M, vLLM the bf16 dequantization of the same file: the first words agree.
    body = {"messages": [{"role": "user", "content": OCEAN}], "max_tokens": 24, "temperature": 0}
    vllm = httpx.post(
        f"{vllm_server.base_url}/chat/completions", json=body | {"model": SERVED_NAME}, timeout=120
    ).json()["choices"][0]["message"]["content"]
    llama = httpx.post(
        f"{local_server.base_url}/chat/completions", json=body | {"model": MODEL_ALIAS}, timeout=120
    ).json()["choices"][0]["message"]["content"]

    def tokens(text: str) -> list[int]:
        return httpx.post(
            f"{vllm_server.root_url}/tokenize",
            json={"model": SERVED_NAME, "prompt": text, "add_special_tokens": False},
            timeout=30,
        ).json()["tokens"]

    words = agreeing_prefix(vllm.split(), llama.split())
    same_tokens = agreeing_prefix(tokens(vllm), tokens(llama))
    record_property("parity_words_agreeing", words)
    record_property("parity_tokens_agreeing", same_tokens)
    print(f"\nparity: {same_tokens} tokens, {words} words agree; vLLM {vllm[:70]!r}; llama.cpp {llama[:70]!r}")
    assert words >= 4 and same_tokens >= 4, (vllm, llama)


def stack_command_lines(context: dict | None = None, prefix: str = "") -> list[dict]:
    """Every vLLM server's command line as the stacks write it, from the app's own config."""
    cases = []
    for stack in load_config(context or {}, {}).stacks:
        for backend in stack.backends:
            spec = backend.spec
            name = prefix + spec.name
            if spec.kind is BackendKind.EC2_VLLM:
                cases.append({"name": name, "style": "serve", "argv": [spec.model_id, *spec.serve_flags]})
            elif spec.kind in (BackendKind.SAGEMAKER, BackendKind.SAGEMAKER_ASYNC, BackendKind.SAGEMAKER_BATCH):
                # The DLC's entrypoint: --port 8080, then each SM_VLLM_KEY=value as --key [value].
                argv = ["--port", "8080"]
                for key, value in sagemaker_environment(spec.serve_flags, spec.model_id).items():
                    argv.append("--" + key.removeprefix("SM_VLLM_").lower().replace("_", "-"))
                    if value:
                        argv.append(value)
                cases.append({"name": name, "style": "api_server", "argv": argv})
    return cases


def parse_with_vllm(cases: list[dict]) -> dict[str, dict]:
    result = subprocess.run(
        [str(VLLM_PYTHON), str(PARSE_HELPER)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return {r["name"]: r for r in json.loads(result.stdout.strip().splitlines()[-1])}


OPEN_OPTIONS = {"lane": "open", "backends": "g6,g5g,sagemaker,sagemaker-async,sagemaker-batch"}


def test_every_vllm_servers_flags_parse_with_vllms_own_parser(vllm_environment):
    survey, open_lane = stack_command_lines(), stack_command_lines(OPEN_OPTIONS, "open/")
    cases = survey + open_lane
    assert {c["name"] for c in survey} == {"g6", "g5g", "sagemaker"}
    assert {c["name"] for c in open_lane} == {f"open/{n}" for n in OPEN_OPTIONS["backends"].split(",")}
    controls = [
        {"name": "misspelled", "style": "serve", "argv": ["m", "--max-model-lenn", "8192"]},
        {
            "name": "unknown parser",
            "style": "serve",
            "argv": ["m", "--enable-auto-tool-choice", "--tool-call-parser", "gemma5"],
        },
    ]
    results = parse_with_vllm(cases + controls)
    for case in cases:
        assert results[case["name"]]["ok"], results[case["name"]]
    assert results["g6"]["parsed"]["model"] == get_backend("g6").model_id
    assert results["g6"]["parsed"]["tool_call_parser"] == "gemma4"
    assert results["g6"]["parsed"]["gpu_memory_utilization"] == 0.9
    assert results["g5g"]["parsed"]["dtype"] == "float16"
    # The open lane: one model and vLLM's hermes parser on every vLLM path (the DLC's model is its env).
    for case in open_lane:
        parsed = results[case["name"]]["parsed"]
        assert (parsed["model"], parsed["tool_call_parser"]) == (OPEN_MODEL, "hermes"), case["name"]
    sagemaker = results["sagemaker"]["parsed"]
    assert sagemaker["enable_auto_tool_choice"] is True and sagemaker["max_model_len"] == 8192
    assert sagemaker["port"] == 8080
    # The parser is strict enough to catch what a deploy would otherwise find first.
    assert results["misspelled"]["ok"] is False and "--max-model-lenn" in results["misspelled"]["error"]
    assert results["unknown parser"]["ok"] is False and "gemma5" in results["unknown parser"]["error"]


def test_a_workload_on_vllm_uses_its_tokenizer_its_ignore_eos_and_its_metrics(tmp_path, vllm_server):
    """The workload path against the real server the g6 stack runs: prompts sized on vLLM's own
    /tokenize (with the chat messages), output forced by ignore_eos and min_tokens, a shared prefix
    that vLLM's prefix cache serves (its own counters say so), TTFT growing with the prompt. The
    prefix spans several of vLLM's KV blocks: only whole blocks are cached."""
    code = bench.run(
        common(tmp_path, vllm_server, "--input-tokens", "448,1024", "--output-tokens", "8", "--repeats", "3",
               "--prefix-tokens", "384")
    )  # fmt: skip
    evidence = evidence_of(tmp_path, "bench")
    records = evidence["records"]
    assert code == 0 and all(r["ok"] for r in records), records
    info = evidence["workload_backends"]["vllm"]
    assert info["token_count"] == "the server's tokenizer (POST /tokenize with the chat messages)"
    for record in records:
        # vLLM counted what its tokenizer said: the asked length, or the closest below it that
        # whole words reach (a word is one or two tokens).
        assert record["target_input_tokens"] - 2 <= record["prompt_tokens"] <= record["target_input_tokens"], record
        assert (record["output_tokens"], record["forced_length"]) == (8, True), record
    ttft = {n: sorted(r["ttft_s"] for r in records if r["target_input_tokens"] == n) for n in (448, 1024)}
    # Medians: one request stalled by a busy machine must not decide the claim (min against max did).
    assert ttft[1024][1] > ttft[448][1], ttft
    # Every request after the first shares the 384-token prefix: vLLM's own counters show the hits.
    metrics = [level["server_metrics"] for level in evidence["levels"]]
    assert all(m["samples"] >= 1 for m in metrics), metrics
    assert sum(m.get("prefix_cache_hits_delta") or 0 for m in metrics) >= 256, metrics
