"""Expected faults become one clear line; only bugs keep their traceback.

Faults are typed: callers decide on the class (`Unreachable`, `TimedOut`, ...), never on the
words of a message. `as_fault` turns the libraries' exceptions (httpx, openai, botocore,
Strands) into these types once, here.
"""

from __future__ import annotations

import json
import socket
from typing import ClassVar

import httpx

from catalog import CatalogError

# The measuring's faults and words are the runner's (runner/timing, which the in-region kit ships):
# imported by every caller from here.
from runner.timing.faults import (  # noqa: F401
    CONTEXT_WORDS,
    BackendFault,
    BadCompletion,
    ContextOverflow,
    HttpStatus,
    StreamFault,
    TimedOut,
    Unreachable,
    first_line,
    http_line,
    json_message,
    line_fault,
    size_text,
    status_fault,
)


class RunnerError(Exception):
    """An expected failure with a complete one-line message (bad input, missing outputs, ...)."""

    exit_status: ClassVar[int] = 2


class NotWritten(RunnerError):
    """What a run measured could not be written (a full disk): said in one line once its tables
    are printed, exit 1 (not bad input: the run itself went through)."""

    exit_status = 1


class ServiceError(BackendFault):
    """A managed service (Bedrock, SageMaker) refused or failed the call."""


class MaxTokensReached(BackendFault):
    """The model ran out of output tokens before it finished."""

    answered = True


# Faults after which the next request to the same backend would fail the same way.
BACKEND_DOWN = (Unreachable, TimedOut)


def as_fault(error: BaseException) -> BackendFault | None:
    """The typed fault behind `error` (following `raise ... from` chains), or None for a bug."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        fault = _classify(current)
        if fault is not None:
            return fault
        current = current.__cause__ or current.__context__
    return None


def describe(error: BaseException) -> str:
    """One line for an expected fault: what failed, in the user's terms."""
    if isinstance(error, RunnerError | CatalogError):
        return str(error)
    fault = as_fault(error)
    if fault is not None:
        return str(fault)
    return f"{type(error).__name__}: {first_line(error)}"


def gave_no_answer(error: BaseException) -> bool:
    """True when the backend gave no usable response at all (unreachable, HTTP error, broken stream)."""
    fault = as_fault(error)
    return fault is not None and not fault.answered


def backend_down(error: BaseException) -> bool:
    """True when retrying the same backend now is pointless (unreachable or timing out)."""
    return isinstance(as_fault(error), BACKEND_DOWN)


def _classify(error: BaseException) -> BackendFault | None:
    if isinstance(error, BackendFault):
        return error
    return _classify_openai(error) or _classify_http(error) or _classify_aws(error) or _classify_strands(error)


def _classify_http(error: BaseException) -> BackendFault | None:
    if isinstance(error, httpx.ConnectError):
        return Unreachable(f"unreachable: {first_line(error) or 'connection refused'}")
    if isinstance(error, httpx.TimeoutException):
        return TimedOut(f"timed out ({type(error).__name__})")
    if isinstance(error, httpx.HTTPStatusError):
        return _response_fault(error.response)
    if isinstance(error, httpx.RemoteProtocolError):
        return StreamFault(f"connection dropped mid-response: {first_line(error)}")
    if isinstance(error, httpx.HTTPError):
        return StreamFault(f"{type(error).__name__}: {first_line(error)}")
    if isinstance(error, ConnectionRefusedError):
        return Unreachable(f"unreachable: {first_line(error) or 'connection refused'}")
    if isinstance(error, socket.timeout | TimeoutError):
        return TimedOut("timed out")
    if isinstance(error, json.JSONDecodeError):
        return StreamFault(f"malformed JSON from server ({error.msg})")
    return None


def _response_fault(response: httpx.Response) -> BackendFault:
    try:
        body = response.text
    except httpx.ResponseNotRead:
        body = ""
    line = http_line(response.status_code, body, response.reason_phrase, response.headers.get("content-type", ""))
    return line_fault(response.status_code, line)


def _classify_openai(error: BaseException) -> BackendFault | None:
    try:
        import openai
    except ImportError:
        return None
    if isinstance(error, openai.APITimeoutError):
        return TimedOut("timed out waiting for the server")
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        return Unreachable(f"unreachable: {first_line(cause) if cause else 'connection error'}")
    if isinstance(error, openai.APIStatusError):
        # The SDK has read the body already: parsed (its `error` object where it has one), or text.
        body = error.body if isinstance(error.body, str) else json.dumps(error.body) if error.body else ""
        response = error.response
        line = http_line(error.status_code, body, response.reason_phrase, response.headers.get("content-type", ""))
        return line_fault(error.status_code, line)
    return None


def _classify_aws(error: BaseException) -> BackendFault | None:
    try:
        from botocore.exceptions import (
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            EventStreamError,
            ReadTimeoutError,
        )
    except ImportError:
        return None
    if isinstance(error, EventStreamError):
        # Raised by botocore while iterating a response stream: an exception event from the service.
        code, message = _aws_code_message(error)
        return StreamFault(f"stream error {code}: {message}")
    if isinstance(error, ClientError):
        code, message = _aws_code_message(error)
        if "context" in message.lower() and ("length" in message.lower() or "window" in message.lower()):
            return ContextOverflow(f"context overflow: {code}: {message}")
        return ServiceError(f"{code}: {message}")
    if isinstance(error, ReadTimeoutError | ConnectTimeoutError):
        return TimedOut(f"timed out ({type(error).__name__})")
    if isinstance(error, EndpointConnectionError):
        return Unreachable(f"unreachable: {first_line(error)}")
    return None


def _classify_strands(error: BaseException) -> BackendFault | None:
    try:
        from strands.types.exceptions import ContextWindowOverflowException, MaxTokensReachedException
    except ImportError:
        return None
    if isinstance(error, MaxTokensReachedException):
        return MaxTokensReached("hit the max-tokens limit before finishing (no final answer)")
    if isinstance(error, ContextWindowOverflowException):
        return ContextOverflow(f"context overflow: {first_line(error)}")
    return None


def aws_error_code(error: BaseException) -> str:
    """The AWS error code of a botocore ClientError (`NoSuchKey`, `ResourceNotFoundException`, …);
    "" for anything else."""
    response = getattr(error, "response", None)
    return str(response.get("Error", {}).get("Code") or "") if isinstance(response, dict) else ""


def _aws_code_message(error) -> tuple[str, str]:
    details = error.response.get("Error", {}) if isinstance(getattr(error, "response", None), dict) else {}
    code = details.get("Code") or type(error).__name__
    message = " ".join(str(details.get("Message") or "").split())[:200]
    return code, message
