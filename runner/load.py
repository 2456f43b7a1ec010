"""Load levels for `runner.bench`: closed loop (N requests always in flight) and open loop
(Poisson arrivals at a fixed mean rate, optionally capped in flight), with a fixed seed.

Records of a level are kept in memory while it runs and written once it ends: rewriting the
evidence file after every record would hold the interpreter while other requests stream, and
the client must not be what slows a level down.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from runner.errors import RunnerError
from runner.latency import distribution, time_per_output_token, token_gaps
from runner.timing import ChatRequest, RequestRecord

CLOSED = "concurrency"
OPEN = "rate"


@dataclass(frozen=True)
class LoadLevel:
    mode: str
    value: float
    requests: int
    max_concurrency: int | None = None

    @property
    def label(self) -> str:
        if self.mode == CLOSED:
            return f"{int(self.value)} at a time"
        cap = f", at most {self.max_concurrency}" if self.max_concurrency else ""
        return f"{self.value:g}/s{cap}"

    @property
    def in_flight(self) -> int:
        """Requests that may be in flight at once (threads and connections to provide)."""
        if self.mode == CLOSED:
            return int(self.value)
        return self.max_concurrency or self.requests

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"label": self.label}


def parse_numbers(text: str, flag: str, *, integer: bool) -> list[float]:
    values = []
    for part in text.split(","):
        try:
            value = int(part) if integer else float(part)
        except ValueError:
            raise RunnerError(
                f"{flag} {text!r}: expected comma-separated {'whole ' if integer else ''}numbers"
            ) from None
        if value <= 0 or not math.isfinite(value):
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
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise RunnerError(f"--prompts {path}: {error.strerror or error}") from None
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
    record = RequestRecord(backend=backend, run=index + 1, level=level.to_json(), scheduled_s=scheduled)
    record.sent_s = time.perf_counter() - started
    return record


def run_level(
    chat: Callable[[ChatRequest, RequestRecord], Any],
    explain: Callable[[BaseException], str],
    backend: str,
    level: LoadLevel,
    requests: list[ChatRequest],
    seed: int,
    stop: threading.Event | None = None,
) -> list[RequestRecord]:
    """Every request of one level; a failed request is a record with its error, never dropped."""
    stop = stop or threading.Event()
    records: list[RequestRecord | None] = [None] * level.requests
    started = time.perf_counter()

    def one(index: int, scheduled: float | None) -> None:
        record = records[index] = start_record(backend, index, level, scheduled, started)
        try:
            chat(requests[index % len(requests)], record)
        except Exception as error:
            record.ok, record.error = False, explain(error)

    if level.mode == CLOSED:
        counter = iter(range(level.requests))
        lock = threading.Lock()

        def worker() -> None:
            while not stop.is_set():
                with lock:
                    index = next(counter, None)
                if index is None:
                    return
                one(index, None)

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(level.in_flight)]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)  # a short join keeps Ctrl-C deliverable
    else:
        offsets = poisson_offsets(level.value, level.requests, seed)
        with ThreadPoolExecutor(max_workers=level.in_flight, thread_name_prefix="open-loop") as pool:
            for index, offset in enumerate(offsets):
                delay = started + offset - time.perf_counter()
                if (delay > 0 and stop.wait(delay)) or stop.is_set():
                    break
                pool.submit(one, index, offset)
    return [r for r in records if r is not None]


async def run_level_async(
    chat: Callable[[ChatRequest, RequestRecord], Any],
    explain: Callable[[BaseException], str],
    backend: str,
    level: LoadLevel,
    requests: list[ChatRequest],
    seed: int,
) -> list[RequestRecord]:
    """`run_level` on one event loop, for a client whose `chat` is a coroutine."""
    import asyncio

    records: list[RequestRecord | None] = [None] * level.requests
    started = time.perf_counter()

    async def one(index: int, scheduled: float | None) -> None:
        record = records[index] = start_record(backend, index, level, scheduled, started)
        try:
            await chat(requests[index % len(requests)], record)
        except Exception as error:
            record.ok, record.error = False, explain(error)

    if level.mode == CLOSED:
        pending = iter(range(level.requests))

        async def worker() -> None:
            for index in pending:
                await one(index, None)

        await asyncio.gather(*(worker() for _ in range(level.in_flight)))
    else:
        slots = asyncio.Semaphore(level.in_flight)

        async def capped(index: int, offset: float) -> None:
            async with slots:
                await one(index, offset)

        tasks = []
        for index, offset in enumerate(poisson_offsets(level.value, level.requests, seed)):
            delay = started + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(capped(index, offset)))
        await asyncio.gather(*tasks)
    return [r for r in records if r is not None]


def level_groups(evidence: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in evidence.get("records", []):
        groups[(record["backend"], (record.get("level") or {}).get("label", "1 at a time"))].append(record)
    return groups


def level_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One backend at one level: counts, throughputs over the level's wall time, and latency
    distributions (time to first token, inter-token latency per token, time per output token,
    end-to-end)."""
    done = [r for r in records if r.get("ok")]
    sent = [r["sent_s"] for r in records if r.get("sent_s") is not None]
    ends = [r["sent_s"] + r["e2e_s"] for r in done if r.get("sent_s") is not None and r.get("e2e_s") is not None]
    duration = (max(ends) - min(sent)) if ends and sent else None
    output = sum(r.get("output_tokens") or 0 for r in done)
    gaps_values: list[float] = []
    gaps_weights: list[float] = []
    methods = set()
    for record in done:
        gaps = token_gaps(record)
        gaps_values += gaps.values
        gaps_weights += gaps.weights
        methods.add(gaps.method)
    late = [
        r["sent_s"] - r["scheduled_s"]
        for r in records
        if r.get("scheduled_s") is not None and r.get("sent_s") is not None
    ]
    return {
        "requests": len(records),
        "completed": len(done),
        "failed": len(records) - len(done),
        "duration_s": duration,
        "request_throughput": len(done) / duration if duration else None,
        "output_tok_s": output / duration if duration else None,
        "ttft_s": distribution([r["ttft_s"] for r in done if r.get("ttft_s") is not None]),
        "itl_s": distribution(gaps_values, gaps_weights),
        "itl_method": sorted(methods),
        "tpot_s": distribution([t for t in map(time_per_output_token, done) if t is not None]),
        "e2e_s": distribution([r["e2e_s"] for r in done]),
        "max_send_lag_s": max(late) if late else None,
        "first_error": next((r["error"] for r in records if r.get("error")), None),
    }
