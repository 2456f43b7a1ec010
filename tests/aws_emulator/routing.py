"""SageMaker's request routing across an endpoint's copies, as a loopback proxy in front of several
local OpenAI-compatible servers (one per copy): the fleet a test measures for real, against servers
whose speeds it sets.

What it copies, from the SageMaker API reference (`ProductionVariantRoutingConfig`,
`PrefixAwareRoutingConfig`, read 2026-12):
- `RoutingStrategy` is one of `LEAST_OUTSTANDING_REQUESTS` (to the copy with more capacity: here
  the fewest requests in flight, a tie drawn at random), `RANDOM` (a copy drawn at random) and
  `PREFIX_AWARE` (requests that share a prefix go to the same copy; when that copy's requests in
  flight reach `ConcurrencyThreshold`, to the copy with the fewest in flight). Any other value is
  refused, as is a `PrefixAwareRoutingConfig` with another strategy.
- `PrefixLength` is 1024 to 65536 and `ConcurrencyThreshold` 1 to 1024, both required with
  `PREFIX_AWARE`; on the OpenAI-compatible API the prefix is that many characters of the text of
  the messages (on InvokeEndpoint, of the body's bytes: `prefix_of_body`).
What it does not copy: which copy a prefix goes to is not documented; here it is the prefix's
sha256 modulo the copies serving (so a change of copy count moves prefixes, as rehashing would).
A refusal is the ValidationException message AWS gives for a value outside its range or list.

The copies serving can be set while it runs (`POST /fleet/copies {"copies": N}`, the first N of the
servers), as UpdateInferenceComponentRuntimeConfig sets an inference component's copy count.
`GET /fleet` says, per copy, the requests routed to it, in flight now and not answered (its server
gone). tests/aws_emulator/component_fleet.py puts it in front of an inference component.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

STRATEGIES = ("LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE")
PREFIX_LENGTH_RANGE = (1024, 65536)
CONCURRENCY_THRESHOLD_RANGE = (1, 1024)


class RoutingRefused(ValueError):
    """AWS's ValidationException for a routing configuration it does not take."""


@dataclass(frozen=True)
class RoutingConfig:
    strategy: str = "LEAST_OUTSTANDING_REQUESTS"
    prefix_length: int | None = None
    concurrency_threshold: int | None = None

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise RoutingRefused(
                f"1 validation error detected: Value '{self.strategy}' at 'routingConfig.routingStrategy' failed to "
                f"satisfy constraint: Member must satisfy enum value set: [{', '.join(STRATEGIES)}]"
            )
        prefix_aware = self.prefix_length is not None or self.concurrency_threshold is not None
        if self.strategy != "PREFIX_AWARE":
            if prefix_aware:
                raise RoutingRefused("PrefixAwareRoutingConfig is specified only when RoutingStrategy is PREFIX_AWARE")
            return
        for name, value, (low, high) in (
            ("prefixLength", self.prefix_length, PREFIX_LENGTH_RANGE),
            ("concurrencyThreshold", self.concurrency_threshold, CONCURRENCY_THRESHOLD_RANGE),
        ):
            if value is None:
                raise RoutingRefused(f"{name} is required when RoutingStrategy is PREFIX_AWARE")
            if not low <= value <= high:
                raise RoutingRefused(
                    f"1 validation error detected: Value '{value}' at 'prefixAwareRoutingConfig.{name}' failed to "
                    f"satisfy constraint: Member must have value {'greater' if value < low else 'less'} than or "
                    f"equal to {low if value < low else high}"
                )


def prefix_of_messages(request: dict, length: int) -> str:
    """The first `length` characters of the text content of a chat request's messages."""
    text = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            text.append(content)
        elif isinstance(content, list):
            text += [part.get("text", "") for part in content if isinstance(part, dict)]
    return "".join(text)[:length]


def prefix_of_body(body: bytes, length: int) -> bytes:
    """InvokeEndpoint's prefix: the first `length` bytes of the request body."""
    return body[:length]


@dataclass
class Copy:
    url: str
    in_flight: int = 0
    routed: int = 0
    # Requests it did not answer (its server gone: the connection refused or cut).
    failed: int = 0


@dataclass
class Fleet:
    """The copies and the choice among them (no I/O: the proxy and tests call `choose`)."""

    urls: list[str]
    config: RoutingConfig = field(default_factory=RoutingConfig)
    copies: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        self.config.check()
        self.all = [Copy(url) for url in self.urls]
        self.serving = self.copies if self.copies is not None else len(self.all)
        self.set_copies(self.serving)
        self.rng = random.Random(self.seed)

    def set_copies(self, count: int) -> None:
        if not 1 <= count <= len(self.all):
            raise RoutingRefused(f"copy count {count}: this fleet has {len(self.all)} server(s)")
        self.serving = count

    def active(self) -> list[Copy]:
        return self.all[: self.serving]

    def least_outstanding(self) -> Copy:
        active = self.active()
        fewest = min(c.in_flight for c in active)
        return self.rng.choice([c for c in active if c.in_flight == fewest])

    def choose(self, prefix: str | bytes = "") -> Copy:
        active = self.active()
        strategy = self.config.strategy
        if strategy == "RANDOM":
            chosen = self.rng.choice(active)
        elif strategy == "PREFIX_AWARE":
            data = prefix.encode() if isinstance(prefix, str) else prefix
            chosen = active[int.from_bytes(hashlib.sha256(data).digest()[:8], "big") % len(active)]
            if chosen.in_flight >= (self.config.concurrency_threshold or 1):
                chosen = self.least_outstanding()
        else:
            chosen = self.least_outstanding()
        chosen.routed += 1
        return chosen

    def state(self) -> dict:
        return {
            "strategy": self.config.strategy,
            "copies": self.serving,
            "routed": [c.routed for c in self.all],
            "in_flight": [c.in_flight for c in self.all],
            "failed": [c.failed for c in self.all],
        }


class Proxy:
    """The loopback front: chat requests routed by the fleet and streamed back as they come; the
    rest (models, tokenize, health) answered by the first copy, which every copy would answer alike."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.session: aiohttp.ClientSession | None = None

    async def forward(self, request: web.Request) -> web.StreamResponse:
        assert self.session is not None
        if request.path == "/metrics":
            # An endpoint exposes no server metrics (one copy's would pass for the fleet's).
            return web.json_response({"detail": "Not Found"}, status=404)
        body = await request.read()
        copy = self.fleet.all[0]
        if request.method == "POST" and request.path.endswith("/chat/completions"):
            length = self.fleet.config.prefix_length or 0
            copy = self.fleet.choose(prefix_of_messages(json.loads(body or b"{}"), length))
        copy.in_flight += 1
        try:
            async with self.session.request(
                request.method, copy.url + request.path_qs, data=body, headers={"content-type": "application/json"}
            ) as upstream:
                response = web.StreamResponse(status=upstream.status)
                response.content_type = upstream.content_type
                await response.prepare(request)
                async for piece in upstream.content.iter_any():
                    await response.write(piece)
                await response.write_eof()
                return response
        except aiohttp.ClientError:
            copy.failed += 1
            raise
        finally:
            copy.in_flight -= 1

    async def fleet_state(self, request: web.Request) -> web.Response:
        return web.json_response(self.fleet.state())

    async def set_copies(self, request: web.Request) -> web.Response:
        try:
            self.fleet.set_copies(int((await request.json())["copies"]))
        except (RoutingRefused, KeyError, ValueError, TypeError) as error:
            return web.json_response({"__type": "ValidationException", "message": str(error)}, status=400)
        return web.json_response(self.fleet.state())

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/fleet", self.fleet_state)
        app.router.add_post("/fleet/copies", self.set_copies)
        app.router.add_route("*", "/{tail:.*}", self.forward)
        return app


@dataclass
class RunningFleet:
    url: str
    fleet: Fleet

    def endpoint(self, name: str, model: str) -> str:
        """The runner's --endpoint flag for the fleet."""
        return f"{name}={self.url}/v1,model={model}"


@contextmanager
def routed_fleet(
    urls: list[str], config: RoutingConfig, *, copies: int | None = None, seed: int = 0
) -> Iterator[RunningFleet]:
    """The proxy on a loopback port, in a thread of this process, for as long as the block runs."""
    fleet = Fleet(list(urls), config, copies, seed)
    proxy = Proxy(fleet)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    port: list[int] = []
    stop: list[asyncio.Event] = []

    async def main() -> None:
        stop.append(asyncio.Event())
        proxy.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), auto_decompress=False)
        runner = web.AppRunner(proxy.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
        await site.start()
        port.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        started.set()
        await stop[0].wait()
        await runner.cleanup()
        await proxy.session.close()

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), name="fleet-router", daemon=True)
    thread.start()
    assert started.wait(10), "the fleet's router did not start"
    try:
        yield RunningFleet(f"http://127.0.0.1:{port[0]}", fleet)
    finally:
        loop.call_soon_threadsafe(stop[0].set)
        thread.join(timeout=10)
        loop.close()
