"""Load levels for `runner.bench`: closed loop (N requests always in flight) and open loop
(Poisson arrivals at a fixed mean rate, optionally capped in flight), with a fixed seed.

Records of a level are kept in memory while it runs and written once it ends: rewriting the
evidence file after every record would hold the interpreter while other requests stream, and
the client must not be what slows a level down. A level stopped before its end (Ctrl-C, SIGTERM)
keeps every request that finished, handed over as each finishes (`finished`), under its level
marked stopped (`Level.stopped`); the requests still out are not records: they did not finish.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from runner.core.errors import RunnerError
from runner.core.files import read_text_file
from runner.core.flags import finite
from runner.core.records import Level, RequestRecord
from runner.measure import ChatRequest
from runner.measure.records import Conversation, stamp

CLOSED = "concurrency"
OPEN = "rate"


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"label": self.label}

    def recorded(self) -> Level:
        """The level as each of its requests' records keeps it."""
        return Level(self.mode, self.value, self.requests, self.max_concurrency, self.input_tokens, self.label)


def stopped_records(level: LoadLevel, finished: list[RequestRecord]) -> list[RequestRecord]:
    """What a stopped level keeps: the requests that finished, in the level's order, each under
    the level marked stopped after them (`Level.stopped`)."""
    marked = level.recorded().stopped(len(finished))
    kept = sorted(finished, key=lambda r: (r.run, r.turn or 0))
    for record in kept:
        record.level = marked
    return kept


def parse_numbers(text: str, flag: str, *, integer: bool) -> list[float]:
    values = []
    for part in text.split(","):
        try:
            value = int(part) if integer else float(part)
        except ValueError:
            raise RunnerError(
                f"{flag} {text!r}: expected comma-separated {'whole ' if integer else ''}numbers"
            ) from None
        finite(flag, value, text=repr(text))
        if value <= 0:
            raise RunnerError(f"{flag} {text!r}: every value must be above 0")
        values.append(value)
    return values


def plan_levels(
    concurrency: str | None, rate: str | None, requests: int | None, max_concurrency: int | None
) -> list[LoadLevel]:
    """The levels to run, in the order given. Default requests per level: four waves at a
    closed-loop level, ten seconds of arrivals (at least 8) at an open-loop one."""
    if requests is not None and requests < 1:
        raise RunnerError("--requests must be at least 1")
    if max_concurrency is not None and (max_concurrency < 1 or rate is None):
        raise RunnerError("--max-concurrency caps an open-loop level: give it with --rate, at least 1")
    levels = []
    for value in parse_numbers(concurrency, "--concurrency", integer=True) if concurrency else []:
        levels.append(LoadLevel(CLOSED, value, requests or max(4 * int(value), 4)))
    for value in parse_numbers(rate, "--rate", integer=False) if rate else []:
        levels.append(LoadLevel(OPEN, value, requests or max(8, math.ceil(10 * value)), max_concurrency))
    return levels


@dataclass(frozen=True)
class Prompt:
    text: str
    max_tokens: int


def read_prompts(path: Path, default_max_tokens: int) -> list[Prompt]:
    """JSON lines `{"prompt": "...", "max_tokens": N}` (max_tokens optional); one bad line stops it."""
    lines = read_text_file(path, "--prompts").splitlines()
    prompts = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise RunnerError(f"--prompts {path} line {number}: not JSON ({error.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get("prompt"), str) or not item["prompt"]:
            raise RunnerError(f'--prompts {path} line {number}: expected {{"prompt": "...", "max_tokens": N}}')
        max_tokens = item.get("max_tokens", default_max_tokens)
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise RunnerError(f"--prompts {path} line {number}: max_tokens must be a whole number above 0")
        prompts.append(Prompt(item["prompt"], max_tokens))
    if not prompts:
        raise RunnerError(f"--prompts {path}: no prompt in the file")
    return prompts


def poisson_offsets(rate: float, count: int, seed: int) -> list[float]:
    """Send times (s from the level start) of a Poisson process: exponential gaps of mean 1/rate."""
    rng = random.Random(seed)
    offsets, at = [], 0.0
    for _ in range(count):
        at += rng.expovariate(rate)
        offsets.append(at)
    return offsets


def start_record(backend: str, index: int, level: LoadLevel, scheduled: float | None, started: float) -> RequestRecord:
    """The record of request `index` of a level, stamped with when it goes (s from the level start)."""
    record = RequestRecord(backend=backend, run=index + 1, level=level.recorded(), scheduled_s=scheduled)
    record.sent_s = time.perf_counter() - started
    return record


async def run_level_async(
    chat: Callable[[ChatRequest, RequestRecord], Any],
    explain: Callable[[BaseException], str],
    backend: str,
    level: LoadLevel,
    requests: list[ChatRequest | Conversation],
    seed: int,
    done: Callable[[], None] = lambda: None,
    seconds: float | None = None,
    finished: list[RequestRecord] | None = None,
) -> list[RequestRecord]:
    """Every request of one level on one event loop, for a client whose `chat` is a coroutine
    (the one load engine: `run_level` runs blocking clients through it). Closed loop: as many
    workers as requests in flight, each taking the next request. Open loop: sends at the seeded
    Poisson offsets, at most `max_concurrency` in flight (a late send is measured, not hidden).
    A failed request is a record with its error, never dropped. A conversation (multi-turn) is
    one unit: its turns go one after another, each carrying the answers so far, a record each.
    `done()` is called as each unit ends (the progress moves with every request). With a time
    limit (`seconds`, `--level-seconds`) nothing is sent once it is over; what is in flight then
    finishes and is measured like any other request. Each record is also added to `finished` as
    its request ends, so a caller whose level is stopped midway still holds every request that
    finished."""
    records: list[list[RequestRecord]] = [[] for _ in range(level.requests)]
    started = time.perf_counter()

    def over() -> bool:
        return seconds is not None and time.perf_counter() - started >= seconds

    async def send(request: ChatRequest, record: RequestRecord) -> bool:
        stamp(record, request)
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
        if not isinstance(unit, Conversation):
            record = start_record(backend, index, level, scheduled, started)
            records[index].append(record)
            await send(unit, record)
            return
        history: tuple[tuple[str, str], ...] = ()
        for turn in range(len(unit.prompts)):
            record = start_record(backend, index, level, scheduled if turn == 0 else None, started)
            record.session, record.turn = index, turn + 1
            records[index].append(record)
            request = unit.turn(turn, history)
            if not await send(request, record):
                break  # the conversation cannot go on without this turn's answer
            history = (*request.history, ("user", request.prompt), ("assistant", record.text))

    if level.mode == CLOSED:
        pending = iter(range(level.requests))

        async def worker() -> None:
            for index in pending:
                if over():
                    return
                await one(index, None)

        await asyncio.gather(*(worker() for _ in range(level.in_flight)))
    else:
        slots = asyncio.Semaphore(level.in_flight)

        async def capped(index: int, offset: float) -> None:
            async with slots:
                await one(index, offset)

        tasks = []
        for index, offset in enumerate(poisson_offsets(level.value, level.requests, seed)):
            if seconds is not None and offset >= seconds:
                break
            delay = started + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(capped(index, offset)))
        await asyncio.gather(*tasks)
    return [record for unit in records for record in unit]


def run_level(
    chat: Callable[[ChatRequest, RequestRecord], Any],
    explain: Callable[[BaseException], str],
    backend: str,
    level: LoadLevel,
    requests: list[ChatRequest | Conversation],
    seed: int,
    done: Callable[[], None] = lambda: None,
    seconds: float | None = None,
    finished: list[RequestRecord] | None = None,
) -> list[RequestRecord]:
    """The same engine for a client whose `chat` blocks (Bedrock and SageMaker through boto3):
    the event loop schedules, each request runs on a thread of a pool as wide as the level keeps
    in flight. Ctrl-C stops the level without waiting for the requests still out (what finished
    is in `finished`)."""
    pool = ThreadPoolExecutor(max_workers=level.in_flight, thread_name_prefix="level")

    async def engine() -> list[RequestRecord]:
        loop = asyncio.get_running_loop()

        async def chat_on_a_thread(request: ChatRequest, record: RequestRecord) -> Any:
            return await loop.run_in_executor(pool, chat, request, record)

        return await run_level_async(chat_on_a_thread, explain, backend, level, requests, seed, done, seconds, finished)

    try:
        return asyncio.run(engine())
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
