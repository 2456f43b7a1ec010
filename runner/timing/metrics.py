"""A server's own Prometheus `/metrics`, read while a level runs: every half second, once before
the level's first request goes out (a counter's change is measured from a baseline that none of
the level is in) and once as it ends (a counter's change in its last moments, or the whole of a
level shorter than a period, still counts).

Only the lines of the figures asked for (`names`) are kept, as text: the runner parses them with
prometheus_client's own parser (runner/measure/server_metrics.py), whichever process read them.
A metrics hiccup never disturbs the level: the first one is kept as the sampler's `problem`.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterable

from .faults import first_line


def read_page(url: str, opener: urllib.request.OpenerDirector, timeout_s: float = 2.0) -> str:
    """The page at `url` as text (an HTTP error status raises)."""
    with opener.open(url, timeout=timeout_s) as response:
        return response.read().decode("utf-8", "replace")


def kept_lines(text: str, names: tuple[str, ...]) -> str:
    """The lines of `text` that give one of the figures named (their samples, not comments)."""
    return "\n".join(line for line in text.splitlines() if line.startswith(names))


class MetricsSampler:
    """Reads `url` every `every_s` while in use (a context manager, or `start` and `stop`);
    `readings` are [s from the start, the kept lines] in order. `opener`: how to reach it
    (urllib's default honours the environment's proxies; the in-region kit's reaches its loopback
    port directly)."""

    def __init__(
        self,
        url: str,
        names: Iterable[str],
        every_s: float = 0.5,
        opener: urllib.request.OpenerDirector | None = None,
    ) -> None:
        self.url, self.names, self.every_s = url, tuple(names), every_s
        self.opener = opener or urllib.request.build_opener()
        self.readings: list[list[float | str]] = []
        self.problem: str | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="metrics", daemon=True)
        self.started = time.perf_counter()

    def start(self) -> MetricsSampler:
        self.started = time.perf_counter()
        self.scrape()  # before the level's first request, not racing it in the thread
        self.thread.start()
        return self

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=5)

    def __enter__(self) -> MetricsSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def loop(self) -> None:
        while not self.done.wait(self.every_s):
            self.scrape()
        self.scrape()

    def scrape(self) -> None:
        try:
            text = read_page(self.url, self.opener)
        except Exception as error:  # a metrics hiccup never disturbs the level
            self.problem = self.problem or f"metrics at {self.url}: {type(error).__name__}: {first_line(error)}"
            return
        self.readings.append([round(time.perf_counter() - self.started, 3), kept_lines(text, self.names)])

    def to_json(self) -> dict[str, object]:
        return {"url": self.url, "samples": self.readings, "problem": self.problem}
