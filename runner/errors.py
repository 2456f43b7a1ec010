"""Expected faults become one clear line; only bugs keep their traceback."""

from __future__ import annotations

import json
import socket

import httpx

from catalog import CatalogError


class RunnerError(Exception):
    """An expected failure with a complete one-line message (bad input, missing outputs, ...)."""


def read_json_file(path, what: str, hint: str = ""):
    """Parse a JSON file the user pointed at; a missing or broken file is one line, not a traceback."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise RunnerError(f"{what} {path} does not exist{hint}") from None
    except json.JSONDecodeError as error:
        raise RunnerError(f"{what} {path} is not JSON: {error.msg} at line {error.lineno}") from None


class BackendFault(Exception):
    """A backend misbehaved: unreachable, HTTP error, timeout, malformed or cut stream."""


TRANSPORT_PREFIXES = (
    "unreachable",
    "timed out",
    "HTTP ",
    "connection dropped",
    "empty stream",
    "stream cut",
    "malformed",
)


def is_transport_fault(line: str | None) -> bool:
    """True when a described fault means the backend gave no usable answer at all."""
    return bool(line) and line.startswith(TRANSPORT_PREFIXES)


def describe(error: BaseException) -> str:
    """One line for an expected fault: what failed, in the user's terms."""
    if isinstance(error, RunnerError | CatalogError | BackendFault):
        return str(error)
    openai_line = _describe_openai(error)
    if openai_line:
        return openai_line
    if isinstance(error, httpx.ConnectError):
        return f"unreachable: {_first_line(error) or 'connection refused'}"
    if isinstance(error, httpx.TimeoutException):
        return f"timed out ({type(error).__name__})"
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code}: {_body_hint(error.response)}"
    if isinstance(error, httpx.RemoteProtocolError):
        return f"connection dropped mid-response: {_first_line(error)}"
    if isinstance(error, httpx.HTTPError):
        return f"{type(error).__name__}: {_first_line(error)}"
    if isinstance(error, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(error, json.JSONDecodeError):
        return f"malformed JSON from server ({error.msg})"
    name = type(error).__name__
    if name == "MaxTokensReachedException":
        return "hit the max-tokens limit before finishing (no final answer)"
    if name == "ContextWindowOverflowException":
        return f"context overflow: {_first_line(error)}"
    # Provider SDK errors (openai, botocore) carry useful text; keep their first line.
    return f"{name}: {_first_line(error)}"


def _describe_openai(error: BaseException) -> str | None:
    try:
        import openai
    except ImportError:
        return None
    if isinstance(error, openai.APITimeoutError):
        return "timed out waiting for the server"
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        return f"unreachable: {_first_line(cause) if cause else 'connection error'}"
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}: {_first_line(error)[:200]}"
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else ""


def _body_hint(response: httpx.Response) -> str:
    try:
        text = response.text
    except httpx.ResponseNotRead:
        return response.reason_phrase
    return " ".join(text.split())[:200] or response.reason_phrase
