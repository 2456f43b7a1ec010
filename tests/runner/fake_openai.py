"""A scripted OpenAI-compatible server on loopback, for exact grading and fault injection.

Each POST to /v1/chat/completions takes the next step of the script (the last step repeats).
It behaves like vLLM and llama.cpp on the wire: HTTP/1.1 keep-alive with a chunked SSE body,
a role-only first chunk, `finish_reason` then a separate usage chunk, `[DONE]`; a tool call
streamed as vLLM streams it (the call's id and name first, then its arguments in fragments); a
request's `max_tokens` honoured (the text cut there, finish reason `length`). It records which
connection each request came on (`connection_ids`), so reuse can be proved, and how many were in
flight at most (`max_in_flight`). Faults: HTTP errors, a hang, a stream cut (body ends without a
finish reason), a dropped connection (socket closed mid-body), malformed JSON, an empty body.

Closing like llama.cpp (which closes after every streamed response while it still advertises
keep-alive), without a timer: `close="after"` closes each connection right after its response;
`close="on-reuse"` serves one request per connection and closes a reused one as soon as the next
request arrives, before any byte of a response (what a client sees when it writes into a
connection the server has closed), so a client's resend is exercised deterministically.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.runner.loopback import LoopbackServer


@dataclass
class Step:
    kind: str = "text"  # text | tool | http_error | body | hang | cut | drop | malformed | empty
    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON arguments)
    status: int = 200
    error_body: str = ""
    usage: bool = True
    delay_s: float = 0.0
    # Seconds between the role-only first chunk and the first content chunk.
    first_token_delay_s: float = 0.0
    # Server-side token count when it differs from the number of content chunks.
    usage_tokens: int | None = None
    finish: str | None = None
    # llama.cpp reports its own timings in the usage chunk.
    timings: dict[str, float] | None = None
    # Close like llama.cpp (see the module docstring): "after" each response, or "on-reuse".
    close: str | None = None
    # Several words per content chunk (a server batching tokens), and the gap before each chunk
    # after the first content one.
    words_per_chunk: int = 1
    gap_s: float = 0.0
    # The answer held until the test sets this (an order of events fixed without a timer).
    hold_until: threading.Event | None = None
    # The prompt's tokens in the usage record (None: 12, whatever the prompt).
    prompt_tokens: int | None = None
    # The content type of an http_error's body, or of a `body` step (a whole body, not a stream:
    # `text` as given, with `status`, as a proxy or a server that ignores `stream` answers).
    content_type: str = "application/json"


# Characters of a tool call's arguments per streamed chunk.
ARGUMENT_FRAGMENT = 7


def text(value: str, **kw: Any) -> Step:
    return Step(kind="text", text=value, **kw)


def tool_call(name: str, arguments: dict[str, Any] | str) -> Step:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Step(kind="tool", tool_calls=[(name, raw)])


def counted_prompt(body: dict[str, Any]) -> int:
    """A prompt's tokens as a server with a word-level tokenizer and a 4-token chat template per
    message counts them, so a client calibrating from usage sees the count grow with the prompt."""
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content")
        words = " ".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content or "")
        total += 4 + len(words.split())
    return total


def vllm_validation_error(body: dict[str, Any]) -> dict[str, Any] | None:
    """vLLM's refusal (0.26 and later; these are 0.30's words) of what an agent without tools may
    send; tests/vllm checks it against a real vLLM."""
    if body.get("tools") == []:
        param = "tools"
        message = "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely."
    elif body.get("tool_choice") not in (None, "none") and not body.get("tools"):
        param = "tool_choice"
        message = "When using `tool_choice`, `tools` must be set."
    else:
        return None
    return {
        "error": {"message": f"{message} (parameter={param})", "type": "BadRequestError", "param": param, "code": 400}
    }


class FakeOpenAI(LoopbackServer):
    def __init__(self, script: list[Step] | None = None) -> None:
        self.script = list(script or [text("Paris")])
        self.requests: list[dict[str, Any]] = []
        self.connection_ids: list[int] = []
        # The status /health answers with; tests replace it to script readiness.
        self.health: Callable[[], int] = lambda: 200
        # What GET /v1/models lists (tests replace it: several models, none, a context).
        self.models: list[dict[str, Any]] = [{"id": "fake-model"}]
        self.paths: list[str] = []
        self.stop_event = threading.Event()
        self._connections = 0
        self._lock = threading.RLock()
        self._served: dict[int, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # As uvicorn (vLLM) does: each chunk leaves at once, not held by Nagle's algorithm.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.number: int | None = None

            @property
            def connection_id(self) -> int:
                """Connections are numbered by the first request that counts (a client's model list,
                asked for once at discovery on a connection of its own, does not)."""
                with server._lock:
                    if self.number is None:
                        server._connections += 1
                        self.number = server._connections
                    return self.number

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.paths.append(self.path)
                if self.path != "/v1/models":
                    server.connection_ids.append(self.connection_id)
                if self.path == "/health":
                    status = server.health()
                    self._json(status, {"status": "ok" if status == 200 else "loading"})
                elif self.path in ("/v1/models", "/ping"):
                    self._json(200, {"status": "ok", "data": server.models})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                step = server.script[0] if server.script else Step()
                with server._lock:
                    served = server._served.get(self.connection_id, 0)
                    server._served[self.connection_id] = served + 1
                if served and step.close == "on-reuse":
                    # A reused connection, closed before any byte of a response.
                    self.close_connection = True
                    return
                server.requests.append(body)
                server.paths.append(self.path)
                server.connection_ids.append(self.connection_id)
                refusal = vllm_validation_error(body)
                if refusal:
                    self._json(400, refusal)
                    return
                step = server.next_step()
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    server.respond(self, step, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(Handler)

    def next_step(self) -> Step:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def stopping(self) -> None:
        self.stop_event.set()  # a scripted hang ends with the server

    # --- responses -------------------------------------------------------------------------

    def respond(self, handler: BaseHTTPRequestHandler, step: Step, body: dict[str, Any]) -> None:
        if step.hold_until is not None:
            while not step.hold_until.wait(0.05) and not self.stop_event.is_set():
                pass
        if step.delay_s:
            time.sleep(step.delay_s)
        if step.kind in ("http_error", "body"):
            default = json.dumps({"error": {"message": "scripted failure"}}) if step.kind == "http_error" else ""
            data = (step.error_body or step.text or default).encode()
            handler.send_response(step.status)
            handler.send_header("content-type", step.content_type)
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        if step.kind == "hang":
            self.stop_event.wait(30)
            return
        if not body.get("stream"):
            self._non_stream(handler, step)
            return
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        continuous = bool((body.get("stream_options") or {}).get("continuous_usage_stats"))
        lines = self._stream_lines(step, continuous, body.get("max_tokens"))
        for index, line in enumerate(lines):
            if index == 1 and step.first_token_delay_s:
                time.sleep(step.first_token_delay_s)
            if step.gap_s and index >= 2 and '"content"' in line:
                time.sleep(step.gap_s)  # between content chunks only
            data = line.encode()
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()
        if step.kind == "drop":
            handler.close_connection = True  # no terminating chunk: the body is incomplete
            return
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
        if step.close == "after":
            handler.close_connection = True

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, running: int | None = None) -> str:
        payload: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if running is not None:  # vLLM's continuous_usage_stats: the running count in every chunk
            payload["usage"] = {"prompt_tokens": 12, "completion_tokens": running, "total_tokens": 12 + running}
        return f"data: {json.dumps(payload)}\n\n"

    def _stream_lines(self, step: Step, continuous: bool = False, max_tokens: int | None = None) -> list[str]:
        if step.kind == "empty":
            return []
        if step.kind == "malformed":
            # A garbled chunk mid-stream, the stream going on after it (after `gap_s`, so a client
            # that gives up on it has closed its connection before the body could end).
            garbled = "data: {not json\n\n"
            return [self._chunk({"role": "assistant", "content": "Pa"}), garbled, self._chunk({"content": "ris"})]
        lines = [self._chunk({"role": "assistant", "content": ""})]
        words = step.text.split(" ") if step.text else []
        cut = max_tokens is not None and len(words) > max_tokens
        words = words[:max_tokens] if cut else words
        size = step.words_per_chunk
        for start in range(0, len(words), size):
            piece = " ".join(words[start : start + size])
            running = min(start + size, len(words)) if continuous else None
            lines.append(self._chunk({"content": piece if start == 0 else " " + piece}, running=running))
        for index, (name, raw) in enumerate(step.tool_calls):
            # As vLLM streams a call: its id, type and name with empty arguments, then the arguments
            # in fragments (a client must join them).
            head = {
                "index": index,
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            lines.append(self._chunk({"tool_calls": [head]}))
            for start in range(0, len(raw), ARGUMENT_FRAGMENT):
                fragment = {"index": index, "function": {"arguments": raw[start : start + ARGUMENT_FRAGMENT]}}
                lines.append(self._chunk({"tool_calls": [fragment]}))
        if step.kind in ("cut", "drop"):
            return lines  # no finish_reason, no usage, no [DONE]
        finish = step.finish or ("tool_calls" if step.tool_calls else "length" if cut else "stop")
        lines.append(self._chunk({}, finish))
        if step.usage:
            tokens = step.usage_tokens if step.usage_tokens is not None else max(len(words), 1)
            if max_tokens is not None:
                tokens = min(tokens, max_tokens)
            prompt = step.prompt_tokens or 12
            usage = {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}
            final: dict[str, Any] = {"id": "chatcmpl-fake", "choices": [], "usage": usage}
            if step.timings:
                final["timings"] = step.timings
            lines.append(f"data: {json.dumps(final)}\n\n")
        lines.append("data: [DONE]\n\n")
        return lines

    def _non_stream(self, handler: BaseHTTPRequestHandler, step: Step) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": step.text}
        if step.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                for i, (n, a) in enumerate(step.tool_calls)
            ]
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if step.tool_calls else "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        }
        data = json.dumps(payload).encode()
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
