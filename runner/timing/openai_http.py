"""Timed streaming chat against any OpenAI-compatible server (vLLM, llama.cpp, Neuron images)."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import httpx

from runner.errors import TimedOut
from runner.timing.base import ChatRequest, RequestRecord, Stopwatch
from runner.timing.sse import ChatStreamAccumulator, sse_lines

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
            limits=httpx.Limits(max_connections=max(connections, 10), max_keepalive_connections=max(connections, 10)),
        )
        # Every connection used so far, held (not their ids) so a new one can never be mistaken
        # for an old one; under concurrent load the pool hands out any of them.
        self._seen_streams: list[Any] = []
        self._lock = threading.Lock()

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
        """POST and wait for the response head. A kept-alive connection the server has closed since
        (llama.cpp closes after every streamed response while it still advertises keep-alive)
        fails before any byte of a response: that request never reached the server, so it is
        sent once more on a new connection, with a new stopwatch, and the record says so."""
        for attempt in (1, 2):
            watch = Stopwatch()
            try:
                response = stack.enter_context(self.http.stream("POST", f"{self.base_url}/chat/completions", json=body))
            except STALE_CONNECTION_ERRORS:
                if attempt == 2 or not self._seen_streams:
                    raise
                record.stale_connection_retry = True
                continue
            self._note_connection(response, record)
            return watch, response
        raise AssertionError("unreachable")

    def _note_connection(self, response: httpx.Response, record: RequestRecord) -> None:
        network_stream = response.extensions.get("network_stream")
        if network_stream is None:
            return
        with self._lock:
            record.new_connection = not any(seen is network_stream for seen in self._seen_streams)
            if record.new_connection:
                self._seen_streams.append(network_stream)

    def close(self) -> None:
        self.http.close()
