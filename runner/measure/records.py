"""What one timed request records, and the interface every provider's client implements."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from runner.core.errors import BadCompletion, describe

# Finish reasons that mean the model ended normally: OpenAI-compatible servers (vLLM, llama.cpp)
# and Bedrock's Converse stop reasons. Anything else (content_filter, guardrail_intervened,
# abort, error, ...) is an error, not a success.
NORMAL_FINISH_REASONS = frozenset(
    {"stop", "length", "tool_calls", "function_call", "end_turn", "max_tokens", "stop_sequence", "tool_use"}
)


@dataclass(frozen=True)
class ChatRequest:
    prompt: str
    max_tokens: int = 100
    temperature: float = 0.0
    # vLLM's `continuous_usage_stats`: every chunk carries the running token count, so the
    # tokens each chunk brought are known (others ignore it, and the count is estimated).
    usage_per_chunk: bool = False
    # The conversation before the prompt, as (role, content): the prompt is the last user turn.
    history: tuple[tuple[str, str], ...] = ()
    # Ask for exactly max_tokens (vLLM's `ignore_eos` and `min_tokens`; llama.cpp's `ignore_eos`),
    # on a path that can force it (catalog/serving.py); elsewhere the model chooses the length.
    force_length: bool = False
    # What the workload meant the prompt to be, in the server's tokens (None: not a length target).
    target_input_tokens: int | None = None

    def messages(self) -> list[dict[str, str]]:
        return [
            *({"role": role, "content": text} for role, text in self.history),
            {"role": "user", "content": self.prompt},
        ]

    def openai_body(self, model_id: str) -> dict[str, Any]:
        """The streamed chat-completions body, asking the server to report usage."""
        stream_options: dict[str, Any] = {"include_usage": True}
        if self.usage_per_chunk:
            stream_options["continuous_usage_stats"] = True
        body: dict[str, Any] = {
            "model": model_id,
            "messages": self.messages(),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": True,
            "stream_options": stream_options,
        }
        if self.force_length:
            body |= {"ignore_eos": True, "min_tokens": self.max_tokens}
        return body


@dataclass(frozen=True)
class Conversation:
    """A multi-turn session: each user prompt in turn, every answer carried into the next turn's
    history (so each turn's prompt holds the context so far), one record per turn."""

    prompts: tuple[str, ...]
    max_tokens: int
    force_length: bool = False
    target_input_tokens: int | None = None
    usage_per_chunk: bool = False

    def turn(self, index: int, history: tuple[tuple[str, str], ...]) -> ChatRequest:
        return ChatRequest(
            self.prompts[index],
            max_tokens=self.max_tokens,
            usage_per_chunk=self.usage_per_chunk,
            history=history,
            force_length=self.force_length,
            target_input_tokens=self.target_input_tokens if index == 0 else None,
        )


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
    # The server's own figures where it reports them (llama.cpp's `timings`; vLLM has none).
    server_timings: dict[str, Any] | None = None
    # False when the request went out on the connection the previous one used (None: not knowable).
    new_connection: bool | None = None
    # True when the reused connection turned out closed by the server and the request went again.
    stale_connection_retry: bool = False
    # Arrival time (s from the request start) of every chunk that carried output, and, where the
    # server reports a running count in each chunk, the completion tokens after that chunk.
    chunk_times: list[float] = field(default_factory=list)
    chunk_token_counts: list[int] | None = None
    # The load level this request ran in (bench sweeps), and when it was meant to go and went
    # (s from the level's start; open loop: a late send means the client fell behind).
    level: dict[str, Any] | None = None
    scheduled_s: float | None = None
    sent_s: float | None = None
    # True for the first request after idle on a path that scales from zero (serverless, async,
    # Custom Model Import): timed and kept, but summarised apart from the warm requests.
    cold_start: bool | None = None
    # A path's own stages in seconds (async: queued_s, leave_zero_s, work_s; import: not_ready_s).
    phases: dict[str, float] | None = None
    # The workload's targets: the prompt's tokens as meant, the output asked for, and whether the
    # path was told to produce exactly that many (False: the model chose the length).
    target_input_tokens: int | None = None
    target_output_tokens: int | None = None
    forced_length: bool | None = None
    # A conversation's index in its level and the turn within it (multi-turn workloads).
    session: int | None = None
    turn: int | None = None
    # The service-level objectives' verdict (runner/workloads/slo.py `judge`), set when the level ends.
    slo: dict[str, Any] | None = None

    def stamp(self, request: ChatRequest) -> None:
        """What the workload asked of this request, kept beside what the server counted."""
        self.target_input_tokens = request.target_input_tokens
        self.target_output_tokens = request.max_tokens
        self.forced_length = request.force_length

    @property
    def client_overhead_s(self) -> float | None:
        """End-to-end time the server's own prompt and decode times do not account for."""
        timings = self.server_timings or {}
        if not self.ok or self.e2e_s is None or "prompt_ms" not in timings or "predicted_ms" not in timings:
            return None
        return self.e2e_s - (timings["prompt_ms"] + timings["predicted_ms"]) / 1000

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
        data["client_overhead_s"] = self.client_overhead_s
        return data


def check_finish_reason(reason: str | None) -> None:
    if reason not in NORMAL_FINISH_REASONS:
        raise BadCompletion(f"finish reason {reason!r}: not a normal end of the answer")


def check_completion(record: RequestRecord, *, has_output: bool) -> None:
    """A complete response counts only with a normal finish reason and some output."""
    check_finish_reason(record.finish_reason)
    if not has_output:
        raise BadCompletion(f"empty completion: no text and no tool call (finish reason {record.finish_reason!r})")


class Stopwatch:
    """Monotonic times relative to the request start."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.start


class TimedClient(Protocol):
    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        """Send one streamed request and fill `record`; raises on faults."""

    def close(self) -> None: ...


# The survey's warm-up: a short generation, through the same path as the timed requests.
WARM_UP = ChatRequest(prompt="Hi", max_tokens=4)


def warm_up(client: TimedClient, backend: str) -> RequestRecord:
    """One untimed generation before the timed ones, the same for every provider: it opens the
    connection (and TLS, and an SSM tunnel stream) and wakes the server. Never raises."""
    record = RequestRecord(backend=backend, run=0)
    try:
        client.chat(WARM_UP, record)
    except Exception as error:
        record.ok = False
        record.error = describe(error)
    return record
