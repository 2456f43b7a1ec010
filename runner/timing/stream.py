"""OpenAI chat-completions event streams (SSE `data:` lines): framing, accumulation, end checks,
and a streamed body read as its parts arrive, whatever HTTP library delivers them.

The end checks live here once and serve every client (the runner's aiohttp client, the in-region
kit's http.client one, SageMaker's and Bedrock's event streams) and the agent's model
(`runner.agent.models`), so a stream cut looks the same wherever it happens.

`streaming_text_to(callback)`: while it holds, every accumulator made in this context hands each
piece of text to `callback` as it arrives (`runner.ask` prints the answer so); outside it nothing
changes, and the figures are the same either way.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from .chat import check_completion, check_context, usage_counts
from .faults import StreamFault, TimedOut, http_line, size_text


def check_stream_end(chunks: int, finish_reason: str | None) -> None:
    """A stream that closed before any chunk, or without a finish reason, is a fault, not a short answer."""
    if chunks == 0:
        raise StreamFault("empty stream: no chunks before the connection closed")
    if finish_reason is None:
        raise StreamFault(f"stream cut: ended after {chunks} chunks without a finish reason")


class BodyHead:
    """The size and first bytes of a response body, to say what came back when it was not an
    event stream (a text/plain or JSON answer to a streamed request is not an "empty stream")."""

    KEEP = 2000

    def __init__(self) -> None:
        self.size = 0
        self.head = b""

    def feed(self, part: bytes) -> None:
        self.size += len(part)
        if len(self.head) < self.KEEP:
            self.head += part[: self.KEEP - len(self.head)]

    def not_a_stream(self, status: int, content_type: str) -> str:
        """One line: the status, the kind of body and its size, and its message or first words."""
        kind = content_type.split(";")[0].strip() or "untyped"
        body = http_line(status, self.head.decode("utf-8", "replace"), "", content_type)
        said = body.partition(": ")[2] if ": " in body else ""
        return f"not an event stream: HTTP {status}, {kind} ({size_text(self.size)})" + (
            f": {said[:120]!r}" if said else ""
        )


class LineSplitter:
    """Whole lines out of byte parts split anywhere (a network read, a SageMaker PayloadPart event),
    `\\n` removed: the one line framing of every stream reader, blocking or not."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, part: bytes) -> list[bytes]:
        self.buffer += part
        *lines, self.buffer = self.buffer.split(b"\n")
        return lines

    def rest(self) -> list[bytes]:
        """What is left after the stream closed (a last line without its newline)."""
        rest, self.buffer = self.buffer, b""
        return [rest] if rest else []


def sse_lines(parts: Iterable[bytes]) -> Iterator[bytes]:
    """Whole lines from byte parts split anywhere (see LineSplitter)."""
    splitter = LineSplitter()
    for part in parts:
        yield from splitter.feed(part)
    yield from splitter.rest()


TextCallback = Callable[[str], None]
_text_listener: ContextVar[TextCallback | None] = ContextVar("text_listener", default=None)


@contextlib.contextmanager
def streaming_text_to(callback: TextCallback) -> Iterator[None]:
    """Every accumulator made inside hands each piece of text to `callback` as it arrives."""
    token = _text_listener.set(callback)
    try:
        yield
    finally:
        _text_listener.reset(token)


class ChatStreamAccumulator:
    """Feed it lines as they arrive; `finish` checks the stream was complete. `on_text` (else the
    `streaming_text_to` callback of this context, if any) gets each piece of text as it arrives.
    A stream starts its record's stream figures afresh (no chunk, no first token yet)."""

    def __init__(self, record: Any, on_text: TextCallback | None = None) -> None:
        self.record = record
        self.on_text = on_text if on_text is not None else _text_listener.get()
        self.parts: list[str] = []
        self.done_at: float | None = None
        self.content_chunks = 0
        self.has_output = False
        self.usage: dict[str, Any] | None = None
        record.chunks, record.ttft_s, record.finish_reason = 0, None, None
        record.chunk_times, record.chunk_token_counts = [], None
        record.output_tokens, record.prompt_tokens, record.token_source = None, None, None

    @property
    def done(self) -> bool:
        return self.done_at is not None

    def feed_line(self, line: str, at: float) -> None:
        line = line.strip()
        if self.done or not line.startswith("data:"):
            return  # blank lines, SSE comments and anything after [DONE]
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            self.done_at = at
            return
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError:
            raise StreamFault(
                f"malformed stream: chunk {self.record.chunks + 1} is not JSON: {payload[:80]!r}"
            ) from None
        if not isinstance(chunk, dict):
            raise StreamFault(f"malformed stream: chunk {self.record.chunks + 1} is not an object")
        self.record.chunks += 1
        self.feed_chunk(chunk, at)

    def feed_chunk(self, chunk: dict[str, Any], at: float) -> None:
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise StreamFault(f"server error in stream: {str(message)[:200]}")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content") or ""
            # A role-only first chunk carries no token: time to first token waits for content.
            if content or delta.get("tool_calls"):
                if self.record.ttft_s is None:
                    self.record.ttft_s = at
                self.content_chunks += 1
                self.has_output = True
                self.parts.append(content)
                self.record.chunk_times.append(at)
                self._note_running_count(chunk.get("usage"))
                if content and self.on_text is not None:
                    self.on_text(content)
            if choice.get("finish_reason"):
                self.record.finish_reason = choice["finish_reason"]
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
            self.usage = usage  # checked once the stream is read to its end (finish)
        if isinstance(chunk.get("timings"), dict):
            self.record.server_timings = chunk["timings"]

    def _note_running_count(self, usage: Any) -> None:
        """vLLM's continuous usage: the completion tokens so far, in every content chunk."""
        counts = self.record.chunk_token_counts
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            if counts is None and len(self.record.chunk_times) == 1:
                self.record.chunk_token_counts = counts = []
            if counts is not None:
                counts.append(usage["completion_tokens"])
        elif counts is not None:
            self.record.chunk_token_counts = None  # a chunk without the count: no exact split

    def finish(self, at: float, *, max_tokens: int | None = None, context_tokens: int | None = None) -> Any:
        """Close the record at [DONE] (or the end of the body when the server sends none); with the
        output asked for and the model's context, a reply the context cut short is a fault."""
        record = self.record
        record.e2e_s = self.done_at if self.done_at is not None else at
        record.text = "".join(self.parts)
        check_stream_end(record.chunks, record.finish_reason)
        if self.usage is not None:
            record.output_tokens, record.prompt_tokens = usage_counts(self.usage, "completion_tokens", "prompt_tokens")
            record.token_source = "server"
        if record.output_tokens is None:
            # Marked fallback: one content chunk is usually one token, but not always.
            record.output_tokens = self.content_chunks
            record.token_source = "client-chunks"
        check_completion(record, has_output=self.has_output)
        if max_tokens is not None:
            check_context(record, max_tokens, context_tokens)
        record.ok = True
        return record


class StreamedBody:
    """A streamed response's body as its parts arrive, for a client of any HTTP library: each part
    timed on arrival (parts that came in one read are not merged into one moment), its lines to
    the accumulator, its first bytes kept to say what came back when it was not an event stream,
    and a stream still open past the timeout a fault."""

    def __init__(self, record: Any, timeout_s: float) -> None:
        self.stream = ChatStreamAccumulator(record)
        self.lines = LineSplitter()
        self.head = BodyHead()
        self.timeout_s = timeout_s

    def feed(self, part: bytes, at: float) -> None:
        self.head.feed(part)
        for line in self.lines.feed(part):
            self.stream.feed_line(line.decode("utf-8", "replace"), at)
        if at > self.timeout_s:
            raise TimedOut(f"timed out: stream still open after {self.timeout_s:.0f} s")

    def end(
        self,
        at: float,
        status: int,
        content_type: str,
        *,
        max_tokens: int | None = None,
        context_tokens: int | None = None,
    ) -> Any:
        """The body read to its end: the record checked and closed (see ChatStreamAccumulator.finish)."""
        for line in self.lines.rest():
            self.stream.feed_line(line.decode("utf-8", "replace"), at)
        if self.stream.record.chunks == 0 and self.head.size and "event-stream" not in content_type:
            raise StreamFault(self.head.not_a_stream(status, content_type))
        return self.stream.finish(at, max_tokens=max_tokens, context_tokens=context_tokens)
