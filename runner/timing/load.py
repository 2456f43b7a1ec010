"""The load engine: a level's requests one at a time, closed loop (N requests always in flight) or
open loop (Poisson arrivals at a fixed mean rate, optionally capped in flight), with a fixed seed.

One engine for every client: a client whose `chat(request, record)` is a coroutine runs on one
event loop (`run_level_async`), a blocking one on threads that event loop hands out
(`run_level`). Records are made by the caller's `new_record(run)` (the runner's `RequestRecord`,
the in-region kit's own) and stamped here with when each request was meant to go and went.
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from .chat import BodyRequest, ChatRequest, Dialogue, History
from .client_load import ClientLoad, LoopWatch

CLOSED = "concurrency"
OPEN = "rate"
# The most connections a level opens ahead with an untimed warm-up each (an open-loop level
# without a cap may reach far more; the rest open on their first timed request).
MOST_WARM_UPS = 64

Request = ChatRequest | BodyRequest
Unit = Request | Dialogue
Explain = Callable[[BaseException], str]
NewRecord = Callable[[int], Any]


@dataclass(frozen=True)
class Part:
    """One client of several sending a level together (`--clients K`): its number from 1, how
    many, and when the level started on the wall clock (`time.time()`), the one start every
    client's send times count from."""

    number: int
    clients: int
    epoch: float | None = None

    def share(self, count: int) -> int:
        """This client's share of `count` split over K as evenly as whole numbers go."""
        return count // self.clients + (1 if self.number - 1 < count % self.clients else 0)


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class LoadLevel:
    mode: str
    value: float
    requests: int
    max_concurrency: int | None = None
    # A workload's prompt length at this level (a prompt-length sweep crosses lengths with levels).
    input_tokens: int | None = None

    @property
    def label(self) -> str:
        lead = f"{self.input_tokens} in, " if self.input_tokens else ""
        if self.mode == CLOSED:
            return f"{lead}{int(self.value)} at a time"
        cap = f", at most {self.max_concurrency}" if self.max_concurrency else ""
        return f"{lead}{self.value:g}/s{cap}"

    @property
    def in_flight(self) -> int:
        """Requests that may be in flight at once (threads and connections to provide)."""
        if self.mode == CLOSED:
            return int(self.value)
        return self.max_concurrency or self.requests

    def in_flight_of(self, part: Part | None) -> int:
        """What one client of several keeps in flight: its even share, the first ones one more."""
        return self.in_flight if part is None else part.share(self.in_flight)

    def indices(self, part: Part | None) -> range:
        """The requests one client of several sends: every K-th, from its own number on."""
        return range(self.requests) if part is None else range(part.number - 1, self.requests, part.clients)

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"label": self.label}


def freeze_heap() -> None:
    """Collect, then move every object alive now out of the collector's reach (`gc.freeze`), before
    a level is timed: a full collection walks every tracked object while holding the interpreter,
    so over a large heap (the boto3 and agent modules a runner has imported) it stops the loop
    that stamps each chunk for tenths of a second, and those requests' TTFT and ITL would carry
    the client's pause. What the level allocates is collected as usual. As `vllm bench serve`
    does before it sends (vLLM 0.30.0, vllm/benchmarks/serve.py calling
    vllm/utils/gc_utils.py `freeze_gc_heap`); AIPerf's timing workers also collect and freeze.
    Cheap once done: a later call walks only what is new."""
    gc.collect()  # every generation
    gc.freeze()


def poisson_offsets(rate: float, count: int, seed: int) -> list[float]:
    """Send times (s from the level start) of a Poisson process: exponential gaps of mean 1/rate."""
    rng = random.Random(seed)
    offsets, at = [], 0.0
    for _ in range(count):
        at += rng.expovariate(rate)
        offsets.append(at)
    return offsets


async def run_level_async(
    chat: Callable[[Request, Any], Awaitable[Any]],
    explain: Explain,
    level: LoadLevel,
    requests: list[Unit],
    seed: int,
    new_record: NewRecord,
    done: Callable[[], None] = _nothing,
    seconds: float | None = None,
    finished: list[Any] | None = None,
    loads: list[ClientLoad] | None = None,
    part: Part | None = None,
) -> list[Any]:
    """Every request of one level on one event loop. Closed loop: as many workers as requests in
    flight, each taking the next request. Open loop: sends at the seeded Poisson offsets, at most
    `max_concurrency` in flight (a late send is measured, not hidden). Request i is unit i modulo
    their number. A failed request is a record with its error, never dropped. A conversation
    (multi-turn) is one unit: its turns go one after another, each carrying the answers so far,
    a record each, ending at the first that fails. `done()` is called as each unit ends (the
    progress moves with every request). With a time limit (`seconds`) nothing is sent once it is
    over; what is in flight then finishes and is measured like any other request. Each record is
    also added to `finished` as its request ends, so a caller whose level is stopped midway
    still holds every request that finished. How busy the client was meanwhile (its loop's lag,
    its CPU: `client_load`) is added to `loads` as the level ends, stopped or not. One client of
    several (`part`, `--clients K`) sends every K-th request from its own number on, at the
    level's own send times, with its share of the requests in flight, and marks each record
    with its number (`client`)."""
    records: list[list[Any]] = [[] for _ in range(level.requests)]
    freeze_heap()
    watch = LoopWatch()
    watch.start()
    try:
        await _send_level(chat, explain, level, requests, seed, new_record, done, seconds, finished, part, records)
    finally:
        if loads is not None:
            loads.append(watch.stop(part.number if part else None))
    return [record for unit in records for record in unit]


async def _send_level(
    chat: Callable[[Request, Any], Awaitable[Any]],
    explain: Explain,
    level: LoadLevel,
    requests: list[Unit],
    seed: int,
    new_record: NewRecord,
    done: Callable[[], None],
    seconds: float | None,
    finished: list[Any] | None,
    part: Part | None,
    records: list[list[Any]],
) -> None:
    started = time.perf_counter()
    if part is not None and part.epoch is not None:
        started -= time.time() - part.epoch

    def over() -> bool:
        return seconds is not None and time.perf_counter() - started >= seconds

    def start(index: int, scheduled: float | None) -> Any:
        """The record of request `index`, stamped with when it goes (s from the level start)."""
        record = new_record(index + 1)
        if part is not None:
            record.client = part.number
        record.scheduled_s = scheduled
        record.sent_s = time.perf_counter() - started
        records[index].append(record)
        return record

    async def send(request: Request, record: Any) -> bool:
        request.stamp(record)
        try:
            await chat(request, record)
        except Exception as error:
            record.ok, record.error = False, explain(error)
        if finished is not None:
            finished.append(record)
        return record.ok

    async def one(index: int, scheduled: float | None) -> None:
        try:
            await send_unit(index, scheduled)
        finally:
            done()

    async def send_unit(index: int, scheduled: float | None) -> None:
        unit = requests[index % len(requests)]
        if not isinstance(unit, Dialogue):
            await send(unit, start(index, scheduled))
            return
        history: History = ()
        for turn in range(unit.turns):
            record = start(index, scheduled if turn == 0 else None)
            record.session, record.turn = index, turn + 1
            request = unit.turn(turn, history)
            if not await send(request, record):
                break  # the conversation cannot go on without this turn's answer
            history = request.followed_by(record.text)

    mine = level.indices(part)
    if level.mode == CLOSED:
        pending = iter(mine)

        async def worker() -> None:
            for index in pending:
                if over():
                    return
                await one(index, None)

        await asyncio.gather(*(worker() for _ in range(level.in_flight_of(part))))
    else:
        slots = asyncio.Semaphore(level.in_flight_of(part))

        async def capped(index: int, offset: float) -> None:
            async with slots:
                await one(index, offset)

        tasks = []
        offsets = poisson_offsets(level.value, level.requests, seed)
        for index in mine:
            offset = offsets[index]
            if seconds is not None and offset >= seconds:
                break
            delay = started + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(capped(index, offset)))
        await asyncio.gather(*tasks)


def run_level(
    chat: Callable[[Request, Any], Any],
    explain: Explain,
    level: LoadLevel,
    requests: list[Unit],
    seed: int,
    new_record: NewRecord,
    done: Callable[[], None] = _nothing,
    seconds: float | None = None,
    finished: list[Any] | None = None,
    loads: list[ClientLoad] | None = None,
    part: Part | None = None,
) -> list[Any]:
    """The same engine for a client whose `chat` blocks (boto3's, http.client's): the event loop
    schedules, each request runs on a thread of a pool as wide as the level keeps in flight.
    Ctrl-C stops the level without waiting for the requests still out (what finished is in
    `finished`)."""
    pool = ThreadPoolExecutor(max_workers=level.in_flight_of(part), thread_name_prefix="level")

    async def engine() -> list[Any]:
        loop = asyncio.get_running_loop()

        async def chat_on_a_thread(request: Request, record: Any) -> Any:
            return await loop.run_in_executor(pool, chat, request, record)

        return await run_level_async(
            chat_on_a_thread, explain, level, requests, seed, new_record, done, seconds, finished, loads, part
        )

    try:
        return asyncio.run(engine())
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


SKIPPED = "skipped after run 1: "


def one_at_a_time(
    chat: Callable[[Request, Any], Any],
    explain: Explain,
    request: Request,
    count: int,
    new_record: NewRecord,
    *,
    down: Callable[[BaseException], bool],
    seconds: float | None = None,
    kept: Callable[[Any, bool], None] = lambda record, failed: None,
) -> list[Any]:
    """`count` timed requests one after another on a warmed client, none sent after `seconds`
    (when given). When the first fails with a fault after which the backend would fail the same
    way (`down`: it refused the connection), the rest are not sent but kept as skipped; one that
    timed out is not (a slow moment on a busy machine is not a dead server). `kept(record,
    failed)` is called as each record is made (`failed`: sent and failed)."""
    records: list[Any] = []
    skip: str | None = None
    freeze_heap()
    started = time.perf_counter()
    for run in range(1, count + 1):
        if seconds is not None and time.perf_counter() - started >= seconds:
            break
        record = new_record(run)
        record.sent_s = time.perf_counter() - started
        failed = False
        if skip:
            record.error = SKIPPED + skip
        else:
            try:
                chat(request, record)
            except Exception as error:
                record.ok, record.error, failed = False, explain(error), True
                if run == 1 and down(error):
                    skip = record.error
        records.append(record)
        kept(record, failed)
    return records
