"""An OpenAI-compatible server that streams at a known rate, to measure benchmark clients against.

Every streamed chat completion: a role-only first chunk at once, the first token after
`--ttft` seconds, then one token every 1/`--rate` seconds on an absolute schedule (no drift),
a finish chunk and a usage chunk, `[DONE]`; HTTP/1.1 keep-alive with chunked bodies and
TCP_NODELAY, as vLLM's server (uvicorn) sends them. asyncio, one process, and a deep listen
backlog: the default one overflows when 64 clients connect at once. The truth a client should
report: time to first token `--ttft`, `--tokens` output tokens, and end to end
ttft + (tokens - 1) / rate per request.

    python benchmarks/known_rate_server.py --port 8765 --ttft 0.1 --rate 100 --tokens 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time

ROLE = {"role": "assistant", "content": ""}


def chunk(delta: dict, finish: str | None = None) -> bytes:
    body = {
        "id": "cmpl-known",
        "object": "chat.completion.chunk",
        "model": "known-rate",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def framed(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class KnownRate:
    def __init__(self, ttft: float, rate: float, tokens: int) -> None:
        self.ttft, self.gap, self.tokens = ttft, 1.0 / rate, tokens
        # The truth, per request: seconds from the request's arrival to its first token's write,
        # and to its last byte (what a client should report, give or take the loopback).
        self.first_token_s: list[float] = []
        self.total_s: list[float] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                if method == "POST" and path.endswith("/chat/completions"):
                    await self.stream(writer, json.loads(body or b"{}"), arrived)
                elif path.startswith("/stats"):
                    self.json(writer, {"first_token_s": self.first_token_s, "total_s": self.total_s})
                    if "reset" in path:
                        self.first_token_s, self.total_s = [], []
                elif path.endswith("/models"):
                    self.json(writer, {"object": "list", "data": [{"id": "known-rate", "object": "model"}]})
                else:
                    self.json(writer, {"status": "ok"})
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    def json(self, writer: asyncio.StreamWriter, payload: dict) -> None:
        data = json.dumps(payload).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data)
        )

    async def stream(self, writer: asyncio.StreamWriter, request: dict, arrived: float) -> None:
        tokens = min(int(request.get("max_tokens") or request.get("max_completion_tokens") or self.tokens), self.tokens)
        start = arrived
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(framed(chunk(ROLE)))
        await writer.drain()
        for index in range(tokens):
            delay = start + self.ttft + index * self.gap - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            writer.write(framed(chunk({"content": " tok"})))
            if index == 0:
                self.first_token_s.append(time.perf_counter() - start)
            await writer.drain()
        writer.write(framed(chunk({}, "length" if tokens == self.tokens else "stop")))
        usage = {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}
        writer.write(
            framed(b"data: " + json.dumps({"id": "cmpl-known", "choices": [], "usage": usage}).encode() + b"\n\n")
        )
        writer.write(framed(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        self.total_s.append(time.perf_counter() - start)


async def serve(port: int, server: KnownRate) -> None:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=4096)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--ttft", type=float, default=0.1)
    parser.add_argument("--rate", type=float, default=100.0, help="tokens per second per stream")
    parser.add_argument("--tokens", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(serve(args.port, KnownRate(args.ttft, args.rate, args.tokens)))


if __name__ == "__main__":
    main()
