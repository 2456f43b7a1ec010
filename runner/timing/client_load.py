"""How busy the client itself was while a level ran, so that a level the client could not keep up
with is not taken for the server's figure.

Two readings per client process and level:

- the event loop's lag: a task on the level's loop sleeps `LAG_PERIOD_S` again and again and
  keeps how late each wake came (p50, p99, the most). Every chunk's time is taken on that loop,
  so a loop that runs its timers late stamps arrivals late and sends late: TTFT and ITL grow by
  the client's own delay.
- the process's CPU: user and system seconds (`time.process_time`, every thread) over the
  level's wall seconds, as a share of one core. The loop and its parsing run under one
  interpreter lock, so one Python client process is bound by one core however many it has.

A client saturated (`saturated`) when its loop ran more than `LAG_LIMIT_S` late on at least
`LATE_SHARE` of its wakes (and on `LATE_WAKES` at least): a client starved for its core is late on
most of them, a busy machine's one or two stalls in a level are not the client's limit. Or when,
over a level of at least `CPU_JUDGED_S`, it used at least `CPU_SHARE_LIMIT` of one core. Standard
library only (the in-region kit ships this folder).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field

# How often the loop's timer is set: a hundred readings a second, a few microseconds of work each.
LAG_PERIOD_S = 0.01
# Late by more than this and a wake counts as late: 50 ms is more than a token gap of a 20 tok/s
# stream and more than a typical TTFT objective's slack, so a loop that late on many wakes would
# report the client's delay as the server's latency.
LAG_LIMIT_S = 0.05
# The share of a level's wakes that must be late (its lag at p95 past the limit), and the fewest:
# a p99 over a short level's few dozen wakes is its slowest one or two, which a single stall of a
# busy machine sets; a starved client is late on a third of its wakes or more.
LATE_SHARE = 0.05
LATE_WAKES = 3
# At or above this share of one core the client has no headroom left (Locust warns at the same
# 90 %: "CPU usage above 90%! This may constrain your throughput and may even give inconsistent
# response time measurements").
CPU_SHARE_LIMIT = 0.9
# The shortest level whose CPU share is judged: over less, the first request's one-off work (the
# connection, the parser's start) is most of it.
CPU_JUDGED_S = 1.0


def _cpu_seconds() -> float:
    """This process's user and system CPU seconds, every thread (os.times' figures, finer grained)."""
    return time.process_time()


def _percentile(values: list[float], share: float) -> float:
    """Linear between the nearest ranks (as `runner.core.stats.percentile`); `values` sorted."""
    at = (len(values) - 1) * share
    low, high = math.floor(at), math.ceil(at)
    return values[low] + (values[high] - values[low]) * (at - low)


@dataclass
class ClientLoad:
    """One client process over one level: its loop's lag (milliseconds late, p50, p99, the most,
    over `lag_samples` wakes, `lag_late` of them later than `LAG_LIMIT_S`), its CPU seconds over
    the level's wall seconds and their share of one core, and which client it was (1 to K with
    `--clients K`; None: the only one)."""

    lag_p50_ms: float | None
    lag_p99_ms: float | None
    lag_max_ms: float | None
    lag_samples: int
    lag_late: int
    cpu_s: float
    wall_s: float
    cpu_share: float | None
    client: int | None = None

    @property
    def saturated(self) -> str | None:
        """Why this client, not the server, may have set the level's figures (None: it kept up)."""
        who = f"client {self.client}" if self.client is not None else "the client"
        if self.lag_late >= max(LATE_WAKES, LATE_SHARE * self.lag_samples):
            limit = f"{LAG_LIMIT_S * 1000:.0f} ms"
            p99 = f"; p99 {self.lag_p99_ms:.0f} ms" if self.lag_p99_ms is not None else ""
            return (
                f"{who}'s event loop ran more than {limit} late on {self.lag_late} of its {self.lag_samples} "
                f"wakes ({self.lag_late / self.lag_samples:.0%}{p99}; the limit is {LATE_SHARE:.0%} of them)"
            )
        judged = self.wall_s >= CPU_JUDGED_S
        if judged and self.cpu_share is not None and self.cpu_share >= CPU_SHARE_LIMIT:
            return f"{who} used {self.cpu_share:.0%} of a core (limit {CPU_SHARE_LIMIT:.0%})"
        return None


@dataclass
class LoopWatch:
    """Reads the running loop's lag and the process's CPU from `start()` until `stop()`."""

    period_s: float = LAG_PERIOD_S
    lags: list[float] = field(default_factory=list)
    _task: asyncio.Task | None = None
    _wall: float = 0.0
    _cpu: float = 0.0

    def start(self) -> None:
        self._wall, self._cpu = time.perf_counter(), _cpu_seconds()
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(self.period_s)
            self.lags.append(max(0.0, time.perf_counter() - before - self.period_s))

    def stop(self, client: int | None = None) -> ClientLoad:
        if self._task is not None:
            self._task.cancel()
        wall = time.perf_counter() - self._wall
        cpu = _cpu_seconds() - self._cpu
        lags = sorted(self.lags)
        ms = [_percentile(lags, share) * 1000 for share in (0.5, 0.99)] if lags else [None, None]
        return ClientLoad(
            lag_p50_ms=ms[0],
            lag_p99_ms=ms[1],
            lag_max_ms=lags[-1] * 1000 if lags else None,
            lag_samples=len(lags),
            lag_late=sum(1 for lag in lags if lag > LAG_LIMIT_S),
            cpu_s=cpu,
            wall_s=wall,
            cpu_share=cpu / wall if wall > 0 else None,
            client=client,
        )
