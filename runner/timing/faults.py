"""A backend's faults, typed, and an HTTP answer in one line: what a timed request that did not
count failed with, in the user's terms.

Callers decide on the class (`Unreachable`, `TimedOut`, ...), never on the words of a message;
`runner.core.errors` takes these classes as the runner's own and turns the libraries' exceptions
(httpx, openai, botocore, Strands) into them.
"""

from __future__ import annotations

import json
from typing import ClassVar


class BackendFault(Exception):
    """A backend misbehaved. `answered`: it produced an answer, but not one that counts."""

    answered: ClassVar[bool] = False


class Unreachable(BackendFault):
    """Nothing answered at the address (refused, reset before a response, no route)."""


class TimedOut(BackendFault):
    """The backend took longer than the request timeout."""


class HttpStatus(BackendFault):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class StreamFault(BackendFault):
    """The response stream was empty, malformed, cut or dropped, or carried an error event."""


class BadCompletion(BackendFault):
    """A complete response that is not a success: an abnormal finish reason, or no content at all."""

    answered = True


class ContextOverflow(BackendFault):
    """The prompt and output do not fit the server's context."""

    answered = True


def first_line(error: BaseException) -> str:
    """An exception's message, its first line only (at most 300 characters)."""
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else ""


def explain(error: BaseException) -> str:
    """One line for what a request failed with: a fault's own words, else the exception's kind and
    first line (a bug is a record too, never a lost run)."""
    if isinstance(error, BackendFault):
        return str(error)
    return f"{type(error).__name__}: {first_line(error)}"


def status_fault(status: int, body: str, reason: str = "", content_type: str = "") -> BackendFault:
    """An HTTP error status in one line (`http_line`), typed (a context overflow is its own fault)."""
    return line_fault(status, http_line(status, body, reason, content_type))


# How servers word a prompt their context cannot hold: vLLM ("maximum context length"), llama.cpp
# ("exceeds the available context size"), others ("context window", "too long").
CONTEXT_WORDS = ("context length", "context window", "context size", "too long")


def line_fault(status: int, line: str) -> BackendFault:
    """The fault of an HTTP error status already worded in one line."""
    lowered = line.lower()
    if status == 400 and any(words in lowered for words in CONTEXT_WORDS):
        return ContextOverflow(f"context overflow: {line}")
    return HttpStatus(line, status)


def http_line(status: int, body: str, reason: str = "", content_type: str = "") -> str:
    """An HTTP answer in one line: the message of a JSON error body (vLLM's `message`, OpenAI's and
    llama.cpp's `error.message`, FastAPI's `detail`), else the start of a text body; a page (HTML,
    as a proxy's 502 sends) is no message, so what it was and its size instead of its markup."""
    kind = content_type.split(";")[0].strip().lower()
    text = body.strip()
    if kind in ("text/html", "application/xhtml+xml") or text[:1] == "<":
        return (
            f"HTTP {status}{' ' + reason if reason else ''} ({kind or 'markup'} body, {size_text(len(body.encode()))})"
        )
    message = json_message(text)
    return f"HTTP {status}: {' '.join((message or text).split())[:200] or reason}"


def json_message(text: str) -> str | None:
    """The message of a JSON error body, or None when the text is not one."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    for value in (
        (error.get("message") if isinstance(error, dict) else error),
        data.get("message"),
        data.get("detail"),
    ):
        if isinstance(value, str) and value.strip():
            return value
    return None


def size_text(size: int) -> str:
    """`312 B`, `1.2 kB`, `3.4 MB`."""
    if size < 1000:
        return f"{size} B"
    return f"{size / 1000:.1f} kB" if size < 1_000_000 else f"{size / 1_000_000:.1f} MB"
