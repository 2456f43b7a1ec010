"""One level sent by several client processes (`bench --clients K`), for when one client process is
not enough: each runs the same load engine (runner/timing/load.py) on its own event loop and
core, with its share of the level (`Part`: every K-th request, at the level's own send times,
with its share of the requests in flight), and their records come back as one level, each
saying which client sent it, with each client's loop lag and CPU.

The processes are spawned (not forked: the runner has threads by then), open and warm their own
connections, then meet at a barrier and take one start on the wall clock, so the send times and
the level's wall time are counted from the same instant in every process. They ignore Ctrl-C:
the runner stops them (a shared flag), and each hands back the requests that finished, which the
level keeps like any stopped level's. One that cannot start is one line for the level.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from runner.core.backends import Backend
from runner.core.errors import RunnerError, TimedOut, as_fault, describe
from runner.core.evidence import Evidence
from runner.core.records import RequestRecord
from runner.measure.bench_file import BenchFile
from runner.measure.load import LoadLevel, Part, run_level_async
from runner.measure.openai_async import AsyncOpenAIStreamClient, warm_up_async
from runner.measure.records import ChatRequest, Conversation
from runner.timing.client_load import ClientLoad
from runner.timing.load import MOST_WARM_UPS

# How long a client waits for the others to be warm before the level starts without it.
MEET_S = 120.0
# How long a stopped client has to hand back what finished.
HAND_BACK_S = 30.0
# What a client says that met a barrier another could not reach: the other's line is the one to show.
WAITED = "another client could not start"


def clients_for(backend: Backend) -> str | None:
    """Why this backend's levels cannot be spread over client processes (None: they can): the
    spreading covers the OpenAI-compatible servers' one-loop client; a client that blocks on
    threads (boto3's) stays in one process."""
    if backend.speaks_openai and backend.base_url and not backend.blocked:
        return None
    return "--clients spreads an OpenAI-compatible server's levels; this path's client runs in one process"


@dataclass(frozen=True)
class ClientJob:
    """What every client process needs for its part of one level (picklable: it is sent to each)."""

    backend: Backend
    level: LoadLevel
    requests: list[ChatRequest | Conversation]
    seed: int
    timeout_s: float
    seconds: float | None
    clients: int


@dataclass
class ClientResult:
    """What one client process hands back: its records (those that finished, when stopped), its
    warm-ups, its loop lag and CPU, how many of its requests ran past the timeout, and the line
    why it could not run its part (None: it did)."""

    records: list[RequestRecord] = field(default_factory=list)
    warm_up: list[RequestRecord] = field(default_factory=list)
    load: ClientLoad | None = None
    timed_out: int = 0
    problem: str | None = None


@dataclass
class Spread:
    """The level as the clients together sent it: one set of records in the level's order, every
    client's loop lag and CPU, their warm-ups and timeouts."""

    records: list[RequestRecord]
    loads: list[ClientLoad]
    warm_up: list[RequestRecord]
    timed_out: int


# The child's share of what the parent made: the stop flag, the barrier, the shared start.
_shared: dict[str, Any] = {}


def _child_starts(stop: Any, barrier: Any, epoch: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides when its clients stop
    _shared.update(stop=stop, barrier=barrier, epoch=epoch)


def run_part(job: ClientJob, number: int) -> ClientResult:
    """In a client process: its part of the level, on its own loop; stopped by the runner's flag."""
    result = ClientResult()
    try:
        asyncio.run(_part(job, number, result))
    except threading.BrokenBarrierError:
        result.problem = WAITED
    except Exception as error:
        result.problem = f"client {number}: {describe(error)}"
        barrier = _shared.get("barrier")
        if barrier is not None:
            barrier.abort()
    return result


async def _part(job: ClientJob, number: int, result: ClientResult) -> None:
    backend, level = job.backend, job.level
    part = Part(number, job.clients)
    in_flight = level.in_flight_of(part)
    async with AsyncOpenAIStreamClient(
        backend.base_url or "",
        backend.model_id,
        timeout_s=job.timeout_s,
        connections=in_flight,
        context_tokens=backend.max_total_tokens,
    ) as client:
        warm = [warm_up_async(client, backend.name) for _ in range(min(in_flight, MOST_WARM_UPS))]
        result.warm_up = list(await asyncio.gather(*warm))
        await asyncio.get_running_loop().run_in_executor(None, _shared["barrier"].wait, MEET_S)
        epoch = _shared["epoch"]
        with epoch.get_lock():
            if not epoch.value:
                epoch.value = time.time()
            part = Part(number, job.clients, epoch.value)

        def explain(error: BaseException) -> str:
            if isinstance(as_fault(error), TimedOut):
                result.timed_out += 1
            return backend.explain(error)

        loads: list[ClientLoad] = []
        level_task = asyncio.ensure_future(
            run_level_async(
                client.chat,
                explain,
                backend.name,
                level,
                job.requests,
                job.seed,
                seconds=job.seconds,
                finished=result.records,
                loads=loads,
                part=part,
            )
        )
        _stop_when_told(level_task)
        with contextlib.suppress(asyncio.CancelledError):  # stopped: `records` holds what finished
            result.records = await level_task
        result.load = loads[0] if loads else None


def _stop_when_told(task: asyncio.Future) -> None:
    """Cancel the level's task once the runner sets the stop flag (watched from a thread: a flag,
    not a multiprocessing Event, whose wait with a timeout can leave its `set` waiting forever)."""
    loop = asyncio.get_running_loop()
    stop = _shared["stop"]

    def watch() -> None:
        while not task.done():
            if stop.value:
                loop.call_soon_threadsafe(task.cancel)
                return
            time.sleep(0.05)

    threading.Thread(target=watch, name="client-stop", daemon=True).start()


def spread_level(job: ClientJob, finished: list[RequestRecord]) -> Spread:
    """The level on `job.clients` processes, merged. Stopped (Ctrl-C, SIGTERM), the clients are
    told to stop and what they finished goes to `finished` before the stop goes on up; a client
    that could not run its part is one line (RunnerError), what the others finished in
    `finished`."""
    context = multiprocessing.get_context("spawn")
    stop, barrier, epoch = context.Value("b", 0), context.Barrier(job.clients), context.Value("d", 0.0)
    with ProcessPoolExecutor(
        job.clients, mp_context=context, initializer=_child_starts, initargs=(stop, barrier, epoch)
    ) as pool:
        futures = [pool.submit(run_part, job, number) for number in range(1, job.clients + 1)]
        try:
            results = [future.result() for future in futures]
        except BaseException:
            stop.value = 1
            for future in futures:
                try:
                    finished.extend(future.result(timeout=HAND_BACK_S).records)
                except Exception:  # a client that cannot hand back has nothing to keep
                    continue
            raise
    records = sorted((r for result in results for r in result.records), key=lambda r: (r.run, r.turn or 0))
    problems = [result.problem for result in results if result.problem]
    if problems:
        finished.extend(records)
        raise RunnerError(next((p for p in problems if p != WAITED), problems[0]))
    return Spread(
        records=records,
        loads=[result.load for result in results if result.load is not None],
        warm_up=[r for result in results for r in result.warm_up],
        timed_out=sum(result.timed_out for result in results),
    )


def spread_into(
    job: ClientJob,
    evidence: Evidence[BenchFile],
    finished: list[RequestRecord],
    loads: list[ClientLoad],
    advance: Any,
) -> list[RequestRecord]:
    """`spread_level`, its warm-ups (under the level) and timeouts kept in the evidence, every
    client's loop lag and CPU added to `loads`, the progress moved by the units sent; the records."""
    spread = spread_level(job, finished)
    for record in spread.warm_up:
        record.level = job.level.recorded()
    evidence.file.warm_up.extend(spread.warm_up)
    for _ in range(spread.timed_out):
        evidence.file.count_timeout()
    loads.extend(spread.loads)
    advance(len({(r.session, r.run) for r in spread.records}))
    return spread.records
