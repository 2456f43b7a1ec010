"""Accumulates an OpenAI chat-completions event stream (SSE `data:` lines) with arrival times."""

from __future__ import annotations

import json
from typing import Any

from runner.errors import BackendFault
from runner.timing.base import RequestRecord


class ChatStreamAccumulator:
    """Feed it lines as they arrive; `finish` checks the stream was complete."""

    def __init__(self, record: RequestRecord) -> None:
        self.record = record
        self.parts: list[str] = []
        self.done = False
        self.content_chunks = 0

    def feed_line(self, line: str, at: float) -> None:
        line = line.strip()
        if not line or line.startswith(":") or not line.startswith("data:"):
            return
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError:
            raise BackendFault(
                f"malformed stream: chunk {self.record.chunks + 1} is not JSON: {payload[:80]!r}"
            ) from None
        if not isinstance(chunk, dict):
            raise BackendFault(f"malformed stream: chunk {self.record.chunks + 1} is not an object")
        self.record.chunks += 1
        self.feed_chunk(chunk, at)

    def feed_chunk(self, chunk: dict[str, Any], at: float) -> None:
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise BackendFault(f"server error in stream: {str(message)[:200]}")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content") or ""
            if content or delta.get("tool_calls"):
                if self.record.ttft_s is None:
                    self.record.ttft_s = at
                self.content_chunks += 1
                self.parts.append(content)
            if choice.get("finish_reason"):
                self.record.finish_reason = choice["finish_reason"]
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
            self.record.output_tokens = int(usage["completion_tokens"])
            self.record.prompt_tokens = usage.get("prompt_tokens")
            self.record.token_source = "server"

    def finish(self, at: float) -> RequestRecord:
        record = self.record
        record.e2e_s = at
        record.text = "".join(self.parts)
        if record.chunks == 0:
            raise BackendFault("empty stream: no chunks before the connection closed")
        if record.finish_reason is None:
            raise BackendFault(f"stream cut: ended after {record.chunks} chunks without a finish reason")
        if record.output_tokens is None:
            # Marked fallback: one content chunk is usually one token, but not always.
            record.output_tokens = self.content_chunks
            record.token_source = "client-chunks"
        record.ok = True
        return record
