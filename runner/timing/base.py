"""What one timed request records, and the interface every provider's client implements."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class ChatRequest:
    prompt: str
    max_tokens: int = 100
    temperature: float = 0.0

    def openai_body(self, model_id: str) -> dict[str, Any]:
        """The streamed chat-completions body, asking the server to report usage."""
        return {
            "model": model_id,
            "messages": [{"role": "user", "content": self.prompt}],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }


@dataclass
class RequestRecord:
    """One request's raw figures; derived rates are computed here, once, from the raw times."""

    backend: str
    run: int
    ok: bool = False
    error: str | None = None
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))
    ttft_s: float | None = None
    e2e_s: float | None = None
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    token_source: str | None = None
    finish_reason: str | None = None
    text: str = ""
    chunks: int = 0

    @property
    def tokens_per_s(self) -> float | None:
        """Output tokens over end-to-end time (network and prompt included), as the survey reports."""
        if not self.ok or not self.output_tokens or not self.e2e_s:
            return None
        return self.output_tokens / self.e2e_s

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Tokens after the first over the time after the first token: the server's decode rate."""
        if not self.ok or not self.output_tokens or self.output_tokens < 2 or self.ttft_s is None or not self.e2e_s:
            return None
        span = self.e2e_s - self.ttft_s
        return (self.output_tokens - 1) / span if span > 0 else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["tokens_per_s"] = self.tokens_per_s
        data["decode_tokens_per_s"] = self.decode_tokens_per_s
        return data


class Stopwatch:
    """Monotonic times relative to the request start."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.start


class TimedClient(Protocol):
    def warm(self) -> None:
        """Open the connection (and TLS) before timing anything."""

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        """Send one streamed request and fill `record`; raises on faults."""

    def close(self) -> None: ...
