"""Timed streaming chat against any OpenAI-compatible server (vLLM, llama.cpp, Neuron images)."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from runner.core.errors import TimedOut
from runner.core.tls import tls_context
from runner.measure.connections import ATTEMPTS, ConnectionLog
from runner.measure.records import ChatRequest, RequestRecord, Stopwatch
from runner.measure.sse import ChatStreamAccumulator, sse_lines

# What a request sent on a kept-alive connection the server already closed fails with.
STALE_CONNECTION_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class OpenAIStreamClient:
    """Keep-alive connections, reused by every request (one at a time: the same one).

    The response is always read to its end (past `[DONE]`): a response left unread closes its
    connection, and the next request would open a new one inside its time to first token
    (through an SSM port forward, a new tunnel stream)."""

    def __init__(self, base_url: str, model_id: str, *, timeout_s: float = 60.0, connections: int = 1) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = model_id
        self.timeout_s = timeout_s
        self.http = httpx.Client(
            timeout=httpx.Timeout(connect=5.0, read=timeout_s, write=10.0, pool=5.0),
            headers={"Authorization": "Bearer unused"},
            verify=tls_context(),
            limits=httpx.Limits(max_connections=max(connections, 10), max_keepalive_connections=max(connections, 10)),
        )
        self.log = ConnectionLog()

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        body = request.openai_body(self.model_id)
        stream = ChatStreamAccumulator(record)
        with contextlib.ExitStack() as stack:
            watch, response = self._send(stack, body, record)
            if response.status_code >= 400:
                response.read()
                response.raise_for_status()
            # Raw bytes split into lines here: httpx's text decoding and line splitting cost more
            # CPU per chunk than the rest of the client, and at 64 streams that CPU is the limit.
            for line in sse_lines(response.iter_raw()):
                at = watch.now()
                stream.feed_line(line.decode(), at)
                if at > self.timeout_s:
                    raise TimedOut(f"timed out: stream still open after {self.timeout_s:.0f} s")
        return stream.finish(watch.now())

    def _send(self, stack: contextlib.ExitStack, body: dict[str, Any], record: RequestRecord):
        """POST and wait for the response head; a stale kept-alive connection is resent once
        (runner/measure/connections.py)."""
        for attempt in ATTEMPTS:
            watch = Stopwatch()
            try:
                response = stack.enter_context(self.http.stream("POST", f"{self.base_url}/chat/completions", json=body))
            except STALE_CONNECTION_ERRORS:
                if self.log.resend(attempt, record):
                    continue
                raise
            self.log.note(response.extensions.get("network_stream"), record)
            return watch, response
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.http.close()
