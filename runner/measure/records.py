"""What a timed request asks for, and the interface every provider's client implements (what it
records is `runner.core.records.RequestRecord`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from runner.core.errors import BadCompletion, ContextOverflow, describe
from runner.core.records import RequestRecord

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


def stamp(record: RequestRecord, request: ChatRequest) -> None:
    """What the workload asked of this request, kept beside what the server counted."""
    record.target_input_tokens = request.target_input_tokens
    record.target_output_tokens = request.max_tokens
    record.forced_length = request.force_length


def check_finish_reason(reason: str | None) -> None:
    if reason not in NORMAL_FINISH_REASONS:
        raise BadCompletion(f"finish reason {reason!r}: not a normal end of the answer")


def check_completion(record: RequestRecord, *, has_output: bool) -> None:
    """A complete response counts only with a normal finish reason and some output (and, where the
    server counted it, an output of at least one token)."""
    check_finish_reason(record.finish_reason)
    if not has_output:
        raise BadCompletion(f"empty completion: no text and no tool call (finish reason {record.finish_reason!r})")
    if record.token_source == "server" and record.output_tokens == 0:
        raise BadCompletion("impossible usage from the server: 0 output tokens for an answer with output")


def check_context(record: RequestRecord, max_tokens: int, context_tokens: int | None) -> None:
    """A reply the model's context cut short is no success: the server stopped at `length` with
    fewer tokens than asked because the prompt and the output filled its context (llama.cpp stops
    so; vLLM refuses such a request before it starts). Its figures would be of a shorter request."""
    prompt, output = record.prompt_tokens, record.output_tokens
    if not context_tokens or prompt is None or output is None or record.finish_reason != "length":
        return
    if output < max_tokens and prompt + output >= context_tokens:
        raise ContextOverflow(
            f"cut short by the model's context: {prompt} prompt + {output} output tokens fill its "
            f"{context_tokens:,}, {max_tokens} output tokens asked"
        )


def usage_counts(usage: dict[str, Any], output_key: str, prompt_key: str) -> tuple[int, int | None]:
    """(output, prompt) tokens as a server's usage reports them, each a whole number of at least 0
    (the prompt's may be missing); anything else is an impossible usage, so the request is an error
    rather than a figure (a negative count once gave a negative tok/s, exit 0)."""
    return _count(usage, output_key), _count(usage, prompt_key) if usage.get(prompt_key) is not None else None


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    whole = isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer()
    if not whole or value < 0:  # type: ignore[operator]
        raise BadCompletion(
            f"impossible usage from the server: {key} {value!r} (a token count is a whole number, at least 0)"
        )
    return int(value)  # type: ignore[arg-type]


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
