"""A prompt's length as the backend counts it, to build prompts of a chosen length on its own
tokenizer.

- A server with a tokenizer endpoint counts it itself: vLLM's `POST /tokenize` takes the chat
  messages and applies the chat template (`count`); llama.cpp's takes plain `content`
  (`tokens`), so the template's own tokens are measured once and added.
- Elsewhere the length is calibrated from the usage the path reports: two probes of one output
  token each (a short and a long passage) give tokens per word and the template's share, and the
  count is predicted from those. A level whose counted prompts miss their target by more than 5 %
  says so (runner/render/bench.py), so a poor prediction is never silent.

Every count keeps how it was made (`PromptCounter.method`), written to the evidence.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from runner.core.backends import Backend
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord
from runner.core.tls import tls_context
from runner.measure.records import ChatRequest, TimedClient
from runner.workloads.text import OPENING, passage

Messages = list[dict[str, str]]


class PromptCounter:
    """`count(messages)`: the prompt tokens the backend's usage will report for these messages."""

    def __init__(self, count: Callable[[Messages], int], method: str) -> None:
        self._count = count
        self.method = method
        self.calls = 0

    def __call__(self, messages: Messages) -> int:
        self.calls += 1
        return self._count(messages)

    def text(self, text: str) -> int:
        """The count of one user message holding `text` (what a single-turn prompt is)."""
        return self([{"role": "user", "content": text}])


def server_root(base_url: str) -> str:
    """The server's root for its own endpoints (/tokenize, /metrics) from the OpenAI base URL."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def probe(client: TimedClient, backend: str, text: str) -> int:
    """The prompt tokens the path's usage reports for one user message of `text` (one output token)."""
    record = RequestRecord(backend=backend, run=0)
    client.chat(ChatRequest(text, max_tokens=1), record)
    if not record.prompt_tokens:
        raise RunnerError(f"{backend}: its usage reports no prompt tokens: prompt lengths cannot be calibrated")
    return int(record.prompt_tokens)


def vllm_counter(http: httpx.Client, root: str, model: str) -> Callable[[Messages], int] | None:
    """vLLM's /tokenize on chat messages (the chat template applied), or None when it has none."""

    def count(messages: Messages) -> int:
        response = http.post(
            f"{root}/tokenize", json={"model": model, "messages": messages, "add_generation_prompt": True}
        )
        response.raise_for_status()
        return int(response.json()["count"])

    try:
        count([{"role": "user", "content": "Hi"}])
    except (httpx.HTTPError, KeyError, ValueError):
        return None
    return count


def llama_counter(http: httpx.Client, root: str) -> Callable[[str], int] | None:
    """llama.cpp's /tokenize on plain text (`content` -> `tokens`), or None when it has none."""

    def count(text: str) -> int:
        response = http.post(f"{root}/tokenize", json={"content": text})
        response.raise_for_status()
        return len(response.json()["tokens"])

    try:
        count("Hi")
    except (httpx.HTTPError, KeyError, ValueError, TypeError):
        return None
    return count


def reply_counter(backend: Backend, timeout_s: float = 30.0) -> Callable[[str], int] | None:
    """The server's count of a plain text, the tokens a model would write for it (no chat template,
    no special tokens): vLLM's /tokenize with `prompt` and `add_special_tokens` false, llama.cpp's
    with `content`; None where the path has no tokenizer endpoint."""
    if not (backend.supports.tokenizer and backend.base_url):
        return None
    root = server_root(backend.base_url)
    http = httpx.Client(timeout=httpx.Timeout(timeout_s), verify=tls_context())

    def vllm(text: str) -> int:
        body = {"model": backend.model_id, "prompt": text, "add_special_tokens": False}
        response = http.post(f"{root}/tokenize", json=body)
        response.raise_for_status()
        return int(response.json()["count"])

    for count in (vllm, llama_counter(http, root)):
        try:
            if count is not None and count("Hi") >= 1:
                return count
        except (httpx.HTTPError, KeyError, ValueError, TypeError):
            continue
    http.close()
    return None


def joined(messages: Messages) -> str:
    return "\n".join(m["content"] for m in messages)


def counter_for(backend: Backend, client: TimedClient, timeout_s: float = 30.0) -> PromptCounter:
    """The best count this backend offers: its server's tokenizer, else a calibration from usage."""
    if backend.supports.tokenizer and backend.base_url:
        root = server_root(backend.base_url)
        http = httpx.Client(timeout=httpx.Timeout(timeout_s), verify=tls_context())
        counted = vllm_counter(http, root, backend.model_id)
        if counted is not None:
            return PromptCounter(counted, "the server's tokenizer (POST /tokenize with the chat messages)")
        plain = llama_counter(http, root)
        if plain is not None:
            sample = "The harbour wakes before the town does."
            overhead = probe(client, backend.name, sample) - plain(sample)
            return PromptCounter(
                lambda messages: plain(joined(messages)) + overhead * len(messages),
                f"the server's tokenizer (POST /tokenize), plus {overhead} tokens of chat template per message "
                "(measured from its usage)",
            )
        http.close()
    return calibrated(backend, client)


def calibrated(backend: Backend, client: TimedClient) -> PromptCounter:
    """Tokens predicted from words, fitted on two probes of the path's own usage."""
    short_words, long_words = 20, 400
    short = probe(client, backend.name, OPENING.format(index=1) + passage(short_words, 1))
    long = probe(client, backend.name, OPENING.format(index=2) + passage(long_words, 2))
    per_word = (long - short) / (long_words - short_words)
    if per_word <= 0:
        raise RunnerError(f"{backend.name}: its usage does not grow with the prompt ({short} then {long} tokens)")
    fixed = short - per_word * (short_words + 2)

    def count(messages: Messages) -> int:
        words = sum(len(m["content"].split()) for m in messages)
        return max(1, round(fixed * len(messages) + per_word * words))

    return PromptCounter(
        count,
        f"calibrated from the path's usage ({per_word:.3f} tokens a word, {fixed:.0f} of template; "
        "this path has no tokenizer endpoint)",
    )
