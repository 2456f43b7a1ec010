"""Timed streaming chat against any OpenAI-compatible server (vLLM, llama.cpp, Neuron images)."""

from __future__ import annotations

import httpx

from runner.errors import BackendFault
from runner.timing.base import ChatRequest, RequestRecord, Stopwatch
from runner.timing.sse import ChatStreamAccumulator


class OpenAIStreamClient:
    def __init__(self, base_url: str, model_id: str, *, timeout_s: float = 60.0, health_url: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = model_id
        self.timeout_s = timeout_s
        self.health_url = health_url
        self.http = httpx.Client(
            timeout=httpx.Timeout(connect=5.0, read=timeout_s, write=10.0, pool=5.0),
            headers={"Authorization": "Bearer unused"},
        )

    def warm(self) -> None:
        """Open the keep-alive connection; any answer (even 404) means the socket is up."""
        self.http.get(self.health_url or f"{self.base_url}/models")

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        body = request.openai_body(self.model_id)
        watch = Stopwatch()
        stream = ChatStreamAccumulator(record)
        with self.http.stream("POST", f"{self.base_url}/chat/completions", json=body) as response:
            if response.status_code >= 400:
                response.read()
                response.raise_for_status()
            for line in response.iter_lines():
                stream.feed_line(line, watch.now())
                if watch.now() > self.timeout_s:
                    raise BackendFault(f"timed out: stream still open after {self.timeout_s:.0f} s")
                if stream.done:
                    break
        return stream.finish(watch.now())

    def close(self) -> None:
        self.http.close()
