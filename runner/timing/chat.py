"""What a timed request asks for (a chat request, a conversation, or a body built elsewhere),
what counts as a complete answer, and the warm-up every path sends first.

A record here is whatever the caller keeps a request's figures in: the runner's
`RequestRecord` (runner/core/records.py), the in-region kit's own. The measuring sets its
attributes by the record's field names and reads back only what it set.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .faults import BadCompletion, ContextOverflow, explain

# Finish reasons that mean the model ended normally: OpenAI-compatible servers (vLLM, llama.cpp)
# and Bedrock's Converse stop reasons. Anything else (content_filter, guardrail_intervened,
# abort, error, ...) is an error, not a success.
NORMAL_FINISH_REASONS = frozenset(
    {"stop", "length", "tool_calls", "function_call", "end_turn", "max_tokens", "stop_sequence", "tool_use"}
)
# What the workload asked of a request, kept on its record beside what the server counted.
STAMPED = ("target_input_tokens", "target_output_tokens", "forced_length")

History = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ChatRequest:
    prompt: str
    max_tokens: int = 100
    temperature: float = 0.0
    # vLLM's `continuous_usage_stats`: every chunk carries the running token count, so the
    # tokens each chunk brought are known (others ignore it, and the count is estimated).
    usage_per_chunk: bool = False
    # The conversation before the prompt, as (role, content): the prompt is the last user turn.
    history: History = ()
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

    def stamp(self, record: Any) -> None:
        """What the workload asked of this request, kept beside what the server counted."""
        record.target_input_tokens = self.target_input_tokens
        record.target_output_tokens = self.max_tokens
        record.forced_length = self.force_length

    def followed_by(self, answer: str) -> History:
        """The history of the next turn: this one's, its prompt and the answer."""
        return (*self.history, ("user", self.prompt), ("assistant", answer))


@dataclass(frozen=True)
class BodyRequest:
    """A request given as its chat-completions body, as another process built it (the in-region
    kit sends the runner's bodies as they are), with what the workload asked of it (`stamped`)."""

    body: dict[str, Any]
    stamped: dict[str, Any] = field(default_factory=dict)
    # The conversation before it, as (role, content): put before the body's own messages.
    history: History = ()

    @property
    def max_tokens(self) -> int | None:
        return self.body.get("max_tokens")

    def openai_body(self, model_id: str) -> dict[str, Any]:
        """The body as given (its own model), after the history so far."""
        history = [{"role": role, "content": text} for role, text in self.history]
        return dict(self.body, messages=[*history, *self.body["messages"]])

    def stamp(self, record: Any) -> None:
        for key in STAMPED:
            if key in self.stamped:
                setattr(record, key, self.stamped[key])

    def followed_by(self, answer: str) -> History:
        own = tuple((message["role"], message["content"]) for message in self.body["messages"])
        return (*self.history, *own, ("assistant", answer))


class Dialogue:
    """A multi-turn session: each turn in order after the answers so far, one record per turn."""

    @property
    def turns(self) -> int:
        raise NotImplementedError

    def turn(self, index: int, history: History) -> ChatRequest | BodyRequest:
        raise NotImplementedError


@dataclass(frozen=True)
class Conversation(Dialogue):
    """Each user prompt in turn, every answer carried into the next turn's history (so each turn's
    prompt holds the context so far)."""

    prompts: tuple[str, ...]
    max_tokens: int
    force_length: bool = False
    target_input_tokens: int | None = None
    usage_per_chunk: bool = False

    @property
    def turns(self) -> int:
        return len(self.prompts)

    def turn(self, index: int, history: History) -> ChatRequest:
        return ChatRequest(
            self.prompts[index],
            max_tokens=self.max_tokens,
            usage_per_chunk=self.usage_per_chunk,
            history=history,
            force_length=self.force_length,
            target_input_tokens=self.target_input_tokens if index == 0 else None,
        )


@dataclass(frozen=True)
class BodyConversation(Dialogue):
    """A conversation given as its turns' bodies, each holding only its own user message."""

    bodies: tuple[BodyRequest, ...]

    @property
    def turns(self) -> int:
        return len(self.bodies)

    def turn(self, index: int, history: History) -> BodyRequest:
        return replace(self.bodies[index], history=history)


def check_finish_reason(reason: str | None) -> None:
    if reason not in NORMAL_FINISH_REASONS:
        raise BadCompletion(f"finish reason {reason!r}: not a normal end of the answer")


def check_completion(record: Any, *, has_output: bool) -> None:
    """A complete response counts only with a normal finish reason and some output (and, where the
    server counted it, an output of at least one token)."""
    check_finish_reason(record.finish_reason)
    if not has_output:
        raise BadCompletion(f"empty completion: no text and no tool call (finish reason {record.finish_reason!r})")
    if record.token_source == "server" and record.output_tokens == 0:
        raise BadCompletion("impossible usage from the server: 0 output tokens for an answer with output")


def check_context(record: Any, max_tokens: int, context_tokens: int | None) -> None:
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


# The survey's warm-up: a short generation, through the same path as the timed requests.
WARM_UP = ChatRequest(prompt="Hi", max_tokens=4)

Chat = Callable[[Any, Any], Any]


def warm_up(
    chat: Chat, record: Any, explain: Callable[[BaseException], str] = explain, request: ChatRequest = WARM_UP
) -> Any:
    """One untimed generation before the timed ones, the same for every path: it opens the
    connection (and TLS, and an SSM tunnel stream) and wakes the server. Never raises: a failed
    warm-up is its record's error (the timed requests decide)."""
    try:
        chat(request, record)
    except Exception as error:
        record.ok, record.error = False, explain(error)
    return record


async def warm_up_async(
    chat: Callable[[Any, Any], Awaitable[Any]], record: Any, explain: Callable[[BaseException], str] = explain
) -> Any:
    """`warm_up` for a client whose `chat` is a coroutine."""
    try:
        await chat(WARM_UP, record)
    except Exception as error:
        record.ok, record.error = False, explain(error)
    return record
