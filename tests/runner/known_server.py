"""The known-rate server (benchmarks/known_rate_server.py) on loopback, in a thread of this process:
a server whose prefill rate, decode rate, per-stream slowdown, queue and prefix cache a test sets,
so every figure the benchmark reports can be computed in the test beforehand."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("known_rate_server", ROOT / "benchmarks" / "known_rate_server.py")
known = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = known  # its dataclasses look their module up there
spec.loader.exec_module(known)  # type: ignore[union-attr]

Settings = known.Settings
TEMPLATE_TOKENS = known.TEMPLATE_TOKENS


class Running:
    def __init__(self, url: str, server: Any, name: str = "known") -> None:
        self.url = url
        self.server = server
        self.name = name

    @property
    def endpoint(self) -> str:
        """The runner's --endpoint flag for it (a catalog name brings that backend's entry: its context)."""
        return f"{self.name}={self.url}/v1,model={known.MODEL}"

    def stats(self) -> dict[str, list[float]]:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=5) as response:
            return json.loads(response.read())


@contextmanager
def known_server(**settings: Any) -> Iterator[Running]:
    server = known.KnownRate(known.Settings(**settings))
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    port: list[int] = []
    stop: list[asyncio.Event] = []

    async def main() -> None:
        stop.append(asyncio.Event())
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, backlog=4096)
        port.append(listener.sockets[0].getsockname()[1])
        ready.set()
        async with listener:
            await stop[0].wait()
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:  # the connections' handlers: closed, not left pending
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), name="known-rate", daemon=True)
    thread.start()
    assert ready.wait(10), "the known-rate server did not start"
    try:
        yield Running(f"http://127.0.0.1:{port[0]}", server)
    finally:
        loop.call_soon_threadsafe(stop[0].set)
        thread.join(timeout=10)
        loop.close()
