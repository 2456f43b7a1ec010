"""The one OpenAI-compatible streaming client, for callers that block: the asyncio client
(runner/measure/openai_async.py) on an event loop of its own thread.

One protocol implementation serves one request at a time (the bench's single requests, the
quality set's plain items, `ask`, the in-process load engine's threads) and the load levels alike:
the same HTTP parsing, connection reuse and resend, fault types and timing. The stopwatch runs
inside the coroutine, so the hand-over between threads is outside every measured time.
"""

from __future__ import annotations

import asyncio
import threading

from runner.core.records import RequestRecord
from runner.measure.openai_async import AsyncOpenAIStreamClient
from runner.measure.records import ChatRequest


class OpenAIStreamClient:
    """Keep-alive connections, reused by every request (one at a time: the same one)."""

    def __init__(
        self,
        base_url: str,
        model_id: str,
        *,
        timeout_s: float = 60.0,
        connections: int = 1,
        context_tokens: int | None = None,
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="openai-client", daemon=True)
        self.thread.start()
        self.client = AsyncOpenAIStreamClient(
            base_url, model_id, timeout_s=timeout_s, connections=max(connections, 10), context_tokens=context_tokens
        )
        self.call(self.client.__aenter__())
        self.base_url, self.model_id, self.timeout_s = self.client.base_url, model_id, timeout_s

    @property
    def log(self):
        return self.client.log

    def call(self, coroutine):
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C while waiting: the request stops too
            raise

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        return self.call(self.client.chat(request, record))

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.call(self.client.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()
