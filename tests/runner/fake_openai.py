"""A scripted OpenAI-compatible server on loopback, for exact grading and fault injection.

Each POST to /v1/chat/completions takes the next step of the script (the last step repeats).
Steps replay the real API's shapes: SSE chunks with `delta`, `finish_reason`, a usage chunk,
`[DONE]`; or faults: HTTP errors, a hang, a stream cut mid-way, malformed JSON, an empty body.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    kind: str = "text"  # text | tool | http_error | hang | cut | malformed | empty
    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON arguments)
    status: int = 200
    error_body: str = ""
    usage: bool = True
    delay_s: float = 0.0


def text(value: str, **kw: Any) -> Step:
    return Step(kind="text", text=value, **kw)


def tool_call(name: str, arguments: dict[str, Any] | str) -> Step:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Step(kind="tool", tool_calls=[(name, raw)])


class FakeOpenAI:
    def __init__(self, script: list[Step] | None = None) -> None:
        self.script = list(script or [text("Paris")])
        self.requests: list[dict[str, Any]] = []
        self.stop_event = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path in ("/health", "/v1/models", "/ping"):
                    self._json(200, {"status": "ok", "data": [{"id": "fake-model"}]})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                step = server.next_step()
                server.respond(self, step, body)

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def next_step(self) -> Step:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- responses -------------------------------------------------------------------------

    def respond(self, handler: BaseHTTPRequestHandler, step: Step, body: dict[str, Any]) -> None:
        if step.delay_s:
            time.sleep(step.delay_s)
        if step.kind == "http_error":
            data = (step.error_body or json.dumps({"error": {"message": "scripted failure"}})).encode()
            handler.send_response(step.status)
            handler.send_header("content-type", "application/json")
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
        handler.send_header("connection", "close")
        handler.end_headers()
        for line in self._stream_lines(step):
            handler.wfile.write(line.encode())
            handler.wfile.flush()
        handler.close_connection = True

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> str:
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(payload)}\n\n"

    def _stream_lines(self, step: Step) -> list[str]:
        if step.kind == "empty":
            return []
        if step.kind == "malformed":
            return [self._chunk({"role": "assistant", "content": "Pa"}), "data: {not json\n\n"]
        lines = [self._chunk({"role": "assistant", "content": ""})]
        words = step.text.split(" ") if step.text else []
        for i, word in enumerate(words):
            lines.append(self._chunk({"content": word if i == 0 else " " + word}))
        for index, (name, raw) in enumerate(step.tool_calls):
            lines.append(
                self._chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": f"call_{index}",
                                "type": "function",
                                "function": {"name": name, "arguments": raw},
                            }
                        ]
                    }
                )
            )
        if step.kind == "cut":
            return lines  # no finish_reason, no usage, no [DONE]
        lines.append(self._chunk({}, "tool_calls" if step.tool_calls else "stop"))
        if step.usage:
            usage = {
                "prompt_tokens": 12,
                "completion_tokens": max(len(words), 1),
                "total_tokens": 12 + max(len(words), 1),
            }
            lines.append(f"data: {json.dumps({'id': 'chatcmpl-fake', 'choices': [], 'usage': usage})}\n\n")
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
