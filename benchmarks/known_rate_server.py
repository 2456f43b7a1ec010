"""An OpenAI-compatible server that streams at a known rate, to measure benchmark clients against.

Every streamed chat completion: a role-only first chunk at once, the first token after its time
to first token, then one token at a time, a finish chunk and a usage chunk, `[DONE]`; HTTP/1.1
keep-alive with chunked bodies and TCP_NODELAY, as vLLM's server (uvicorn) sends them. asyncio,
one process, and a deep listen backlog: the default one overflows when 64 clients connect at once.

What a request costs is set, so every figure a client reports can be computed beforehand:
- its tokens are whitespace words: a message counts its words plus `TEMPLATE_TOKENS` (the chat
  template's share), and a prompt one more (its BOS). `POST /tokenize` answers as vLLM's does
  (`messages` or `prompt` in, `count` and `tokens` out) and the usage reports the same count;
- time to first token = `--ttft` + the prompt tokens it had to compute / `--prefill-rate` (with
  `--prefix-cache`, the leading words it has seen in an earlier prompt are not computed again);
- each later token after 1/`--rate` seconds, stretched by `--slowdown` for every other stream
  decoding at the same moment (1/rate × (1 + slowdown × (streams − 1)));
- at most `--max-running` requests at once: the rest wait, as a server's scheduler queues them;
- `max_tokens` tokens when the request says `ignore_eos`, else `--natural` of them (ending with
  `stop`) when that is fewer; `--deaf` ignores `ignore_eos`, as a server without it would;
- `GET /metrics` in vLLM's Prometheus names: requests running and waiting, KV cache usage
  (running over max-running), prefix-cache queries and hits.

`GET /stats` returns the truth per request (seconds from arrival to first token and to the last
byte, prompt tokens, cached tokens); `/stats/reset` clears it.

    python benchmarks/known_rate_server.py --port 8765 --ttft 0.1 --rate 100 --tokens 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
from dataclasses import dataclass

ROLE = {"role": "assistant", "content": ""}
TEMPLATE_TOKENS = 4
MODEL = "known-rate"


def chunk(delta: dict, finish: str | None = None) -> bytes:
    body = {
        "id": "cmpl-known",
        "object": "chat.completion.chunk",
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def framed(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def words(messages: list[dict]) -> list[str]:
    return [word for message in messages for word in str(message.get("content") or "").split()]


def count(messages: list[dict]) -> int:
    """The prompt's tokens: its words, the template's share per message, and the BOS."""
    return len(words(messages)) + TEMPLATE_TOKENS * len(messages) + 1


@dataclass
class Settings:
    ttft: float = 0.1
    rate: float = 100.0
    tokens: int = 100
    prefill_rate: float | None = None
    slowdown: float = 0.0
    max_running: int | None = None
    natural: int | None = None
    deaf: bool = False
    prefix_cache: bool = False
    max_model_len: int = 32768
    # A server with no tokenize endpoint (as SageMaker's /invocations or Bedrock): lengths must be
    # calibrated from the usage it reports.
    tokenize: bool = True


class KnownRate:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.gap = 1.0 / settings.rate
        # The truth, per request: seconds from the request's arrival to its first token's write,
        # and to its last byte (what a client should report, give or take the loopback).
        self.first_token_s: list[float] = []
        self.total_s: list[float] = []
        self.prompt_tokens: list[int] = []
        self.cached_tokens: list[int] = []
        self.decoding = 0
        self.running = 0
        self.waiting = 0
        self.slots = asyncio.Semaphore(settings.max_running) if settings.max_running else None
        self.seen: list[list[str]] = []
        self.prefix_queries = 0
        self.prefix_hits = 0

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
                    await self.completion(writer, json.loads(body or b"{}"), arrived)
                elif method == "POST" and path == "/tokenize" and self.settings.tokenize:
                    self.json(writer, self.tokenize(json.loads(body or b"{}")))
                elif path == "/metrics":
                    self.text(writer, self.metrics())
                elif path.startswith("/stats"):
                    self.json(writer, {"first_token_s": self.first_token_s, "total_s": self.total_s,
                                       "prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens})  # fmt: skip
                    if "reset" in path:
                        self.first_token_s, self.total_s, self.prompt_tokens, self.cached_tokens = [], [], [], []
                elif path.endswith("/models"):
                    self.json(writer, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                elif method == "POST":  # as FastAPI answers a path it has no route for (vLLM's server)
                    self.json(writer, {"detail": "Not Found"}, b"404 Not Found")
                else:
                    self.json(writer, {"status": "ok"})
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    def json(self, writer: asyncio.StreamWriter, payload: dict, status: bytes = b"200 OK") -> None:
        data = json.dumps(payload).encode()
        writer.write(
            b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (status, len(data), data)
        )

    def text(self, writer: asyncio.StreamWriter, body: str) -> None:
        data = body.encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))

    def tokenize(self, request: dict) -> dict:
        """vLLM's answer: the chat messages as the prompt (template and BOS), or a plain prompt."""
        n = count(request["messages"]) if "messages" in request else len(str(request.get("prompt", "")).split())
        return {"count": n, "tokens": list(range(n)), "max_model_len": self.settings.max_model_len}

    def metrics(self) -> str:
        running = self.running
        limit = self.settings.max_running or max(running, 1)
        lines = [
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{model_name="{MODEL}"}} {running}',
            "# TYPE vllm:num_requests_waiting gauge",
            f'vllm:num_requests_waiting{{model_name="{MODEL}"}} {self.waiting}',
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f'vllm:kv_cache_usage_perc{{model_name="{MODEL}"}} {running / limit}',
            "# TYPE vllm:prefix_cache_queries counter",
            f'vllm:prefix_cache_queries_total{{model_name="{MODEL}"}} {self.prefix_queries}',
            "# TYPE vllm:prefix_cache_hits counter",
            f'vllm:prefix_cache_hits_total{{model_name="{MODEL}"}} {self.prefix_hits}',
        ]
        return "\n".join(lines) + "\n"

    def cached(self, prompt: list[str]) -> int:
        """Leading words shared with an earlier prompt (with --prefix-cache), then remembered."""
        best = 0
        if self.settings.prefix_cache:
            for earlier in self.seen:
                shared = 0
                for a, b in zip(earlier, prompt, strict=False):
                    if a != b:
                        break
                    shared += 1
                best = max(best, shared)
            self.seen.append(prompt)
        return best

    async def completion(self, writer: asyncio.StreamWriter, request: dict, arrived: float) -> None:
        if self.slots is None:
            await self.stream(writer, request, arrived)
            return
        self.waiting += 1
        async with self.slots:
            self.waiting -= 1
            await self.stream(writer, request, arrived)

    async def stream(self, writer: asyncio.StreamWriter, request: dict, arrived: float) -> None:
        settings = self.settings
        self.running += 1
        try:
            messages = request.get("messages") or []
            prompt = count(messages)
            cached = self.cached(words(messages))
            self.prefix_queries += prompt
            self.prefix_hits += cached
            asked = int(request.get("max_tokens") or request.get("max_completion_tokens") or settings.tokens)
            tokens = min(asked, settings.tokens)
            forced = bool(request.get("ignore_eos")) and not settings.deaf
            if settings.natural is not None and not forced:
                tokens = min(tokens, settings.natural)
            finish = "length" if tokens == asked else "stop"
            start = time.perf_counter()  # after any wait for a slot: the queue is the server's time too
            ttft = settings.ttft + ((prompt - cached) / settings.prefill_rate if settings.prefill_rate else 0.0)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            writer.write(framed(chunk(ROLE)))
            await writer.drain()
            due = start + ttft
            self.decoding += 1
            try:
                for index in range(tokens):
                    delay = due - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    writer.write(framed(chunk({"content": " tok"})))
                    if index == 0:
                        self.first_token_s.append(time.perf_counter() - arrived)
                    await writer.drain()
                    # The next token's gap, stretched for every other stream decoding now.
                    due += self.gap * (1 + settings.slowdown * (self.decoding - 1))
            finally:
                self.decoding -= 1
            writer.write(framed(chunk({}, finish)))
            usage = {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}
            writer.write(
                framed(b"data: " + json.dumps({"id": "cmpl-known", "choices": [], "usage": usage}).encode() + b"\n\n")
            )
            writer.write(framed(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            self.total_s.append(time.perf_counter() - arrived)
            self.prompt_tokens.append(prompt)
            self.cached_tokens.append(cached)
        finally:
            self.running -= 1


async def serve(port: int, server: KnownRate, ready=None) -> None:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=4096)
    if ready is not None:
        ready(listener.sockets[0].getsockname()[1])
    async with listener:
        await listener.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--ttft", type=float, default=0.1)
    parser.add_argument("--rate", type=float, default=100.0, help="tokens per second per stream")
    parser.add_argument("--tokens", type=int, default=100, help="most output tokens of a request")
    parser.add_argument("--prefill-rate", type=float, help="prompt tokens computed per second (TTFT grows with it)")
    parser.add_argument("--slowdown", type=float, default=0.0, help="per-token stretch per other decoding stream")
    parser.add_argument("--max-running", type=int, help="requests at once; the rest wait")
    parser.add_argument("--natural", type=int, help="tokens of an answer not told to ignore its end")
    parser.add_argument("--deaf", action="store_true", help="ignore ignore_eos, as a server without it would")
    parser.add_argument("--prefix-cache", action="store_true", help="do not compute again a prefix seen before")
    args = parser.parse_args()
    settings = Settings(
        ttft=args.ttft,
        rate=args.rate,
        tokens=args.tokens,
        prefill_rate=args.prefill_rate,
        slowdown=args.slowdown,
        max_running=args.max_running,
        natural=args.natural,
        deaf=args.deaf,
        prefix_cache=args.prefix_cache,
    )

    async def run() -> None:
        await serve(args.port, KnownRate(settings), ready=lambda port: print(f"listening on {port}", flush=True))

    asyncio.run(run())


if __name__ == "__main__":
    main()
