"""The client for OpenAI-compatible servers: asyncio and aiohttp, one event loop for every stream
in flight (callers that block use it through runner/measure/openai_sync.py).

Threads each running httpx held the interpreter lock in turn and parsed HTTP in Python: at 64
streams of 100 tokens/s on two cores the client itself became the limit. aiohttp parses HTTP in
C and one loop has no lock to fight over. Per request it keeps the single-stream client's rules:
the response is read to its end (past `[DONE]`) so its connection returns to the pool, a request
on a kept-alive connection the server had closed is sent once more and marked, each record says
whether its connection was new, and faults become the same typed faults.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import aiohttp

from runner.core.errors import StreamFault, TimedOut, Unreachable, describe, status_fault
from runner.core.records import RequestRecord
from runner.core.tls import tls_context
from runner.timing import chat
from runner.timing.chat import ChatRequest, Stopwatch
from runner.timing.connections import ATTEMPTS, ConnectionLog
from runner.timing.stream import StreamedBody

# A kept-alive connection the server closed since: the request never reached it.
STALE_CONNECTION_ERRORS = (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)


def connection_trace() -> aiohttp.TraceConfig:
    """aiohttp's own signals for whether a request opened a connection or reused one, written into
    the dict passed as the request's `trace_request_ctx` (the connection object itself is already
    released when a short response has been read, so it cannot be asked afterwards)."""

    async def opened(session: object, context: SimpleNamespace, params: object) -> None:
        context.trace_request_ctx["new_connection"] = True

    async def reused(session: object, context: SimpleNamespace, params: object) -> None:
        context.trace_request_ctx["new_connection"] = False

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(opened)
    trace.on_connection_reuseconn.append(reused)
    return trace


def os_error_text(error: OSError | None) -> str:
    """`[Errno 111] Connection refused`: the system's words, not asyncio's "Connect call failed"."""
    if error is None or not error.errno:
        return str(error or "")
    return f"[Errno {error.errno}] {os.strerror(error.errno)}"


class AsyncOpenAIStreamClient:
    def __init__(
        self,
        base_url: str,
        model_id: str,
        *,
        timeout_s: float = 60.0,
        connections: int = 1,
        context_tokens: int | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = model_id
        # The model's context (prompt and output), where known: a reply it cut short is a fault.
        self.context_tokens = context_tokens
        self.timeout_s = timeout_s
        self.connections = connections
        self.session: aiohttp.ClientSession | None = None
        self.log = ConnectionLog()

    async def __aenter__(self) -> AsyncOpenAIStreamClient:
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=max(self.connections, 1), enable_cleanup_closed=True, ssl=tls_context()
            ),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5.0, sock_read=self.timeout_s),
            headers={"Authorization": "Bearer unused"},
            trace_configs=[connection_trace()],
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session is not None:
            await self.session.close()

    async def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        try:
            return await self._chat(request, record)
        except aiohttp.ClientConnectorError as error:
            raise Unreachable(f"unreachable: {os_error_text(error.os_error) or error}") from error
        except aiohttp.ConnectionTimeoutError as error:
            raise TimedOut("timed out (ConnectTimeout)") from error
        except (TimeoutError, aiohttp.ServerTimeoutError) as error:
            raise TimedOut("timed out (ReadTimeout)") from error
        except aiohttp.ClientPayloadError as error:
            raise StreamFault(f"connection dropped mid-response: {error}") from error
        except aiohttp.ClientError as error:
            raise StreamFault(f"{type(error).__name__}: {error}") from error

    async def _chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        assert self.session is not None, "use the client as an async context manager"
        body = StreamedBody(record, self.timeout_s)
        for attempt in ATTEMPTS:
            watch = Stopwatch()
            connection: dict[str, bool] = {}
            try:
                response = await self.session.post(
                    f"{self.base_url}/chat/completions",
                    json=request.openai_body(self.model_id),
                    trace_request_ctx=connection,
                )
            except STALE_CONNECTION_ERRORS:
                if self.log.resend(attempt, record, reused=connection.get("new_connection") is False):
                    continue
                raise
            break
        async with response:
            self.log.note_known(connection.get("new_connection"), record)
            content_type = response.headers.get("content-type", "")
            if response.status >= 400:
                text = await response.text(errors="replace")
                raise status_fault(response.status, text, response.reason or "", content_type)
            try:
                # A chunk of the chunked body at a time, each timed as it is read (the shared
                # reading, runner/timing/stream.py, as the in-region kit's client reads them).
                async for part, _ in response.content.iter_chunks():
                    body.feed(part, watch.now())
            except BaseException:
                response.close()  # a response given up on closes its connection: never reused
                raise
        return body.end(
            watch.now(),
            response.status,
            content_type,
            max_tokens=request.max_tokens,
            context_tokens=self.context_tokens,
        )


async def warm_up_async(client: AsyncOpenAIStreamClient, backend: str) -> RequestRecord:
    """The same untimed "Hi" as every other warm-up; never raises."""
    return await chat.warm_up_async(client.chat, RequestRecord(backend=backend, run=0), describe)
