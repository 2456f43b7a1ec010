"""The benchmark's measuring: per backend one warm-up, then timed requests one at a time, or every
load level of a sweep (OpenAI-compatible servers on one event loop); a level's records are kept
when it ends, or, when it is stopped midway (Ctrl-C, SIGTERM), those of the requests that finished.

On a path that scales from zero (serverless, asynchronous, Custom Model Import: `Backend.cold_starts`)
the warm-up is the first request after idle, so it is a cold start: it is timed like any request
and kept under `warm_up` with `cold_start: true` (the async client says for itself whether the
endpoint was at zero), and the bench table shows it apart, never in the warm medians. A transform
job's model is not a timed chat: it is skipped here in one line (`python -m runner.batch`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable, Iterator

from runner.core.backends import BATCH_COMMAND, Backend
from runner.core.console import console
from runner.core.errors import TimedOut, Unreachable, as_fault
from runner.core.evidence import Evidence
from runner.core.readings import LevelReadings
from runner.core.records import RequestRecord
from runner.measure import ChatRequest, timed_client_for, warm_up
from runner.measure.bench_file import BenchFile
from runner.measure.load import (
    LoadLevel,
    Prompt,
    clients_at,
    run_level,
    run_level_async,
    stopped_records,
)
from runner.measure.openai_async import AsyncOpenAIStreamClient, warm_up_async
from runner.measure.spread import ClientJob, clients_for, spread_into
from runner.timing.client_load import ClientLoad
from runner.timing.load import one_at_a_time

# Connections opened ahead of a level (an open-loop level without a cap may reach far more).
WARM_CONNECTIONS_MAX = 64


def counting_timeouts(
    explain: Callable[[BaseException], str], evidence: Evidence[BenchFile]
) -> Callable[[BaseException], str]:
    """`explain`, also counting (under the evidence's `timed_out`) each request that ran past
    `--timeout`: counted here, where the fault is still typed, so the run can end with what to do."""

    def line(error: BaseException) -> str:
        if isinstance(as_fault(error), TimedOut):
            evidence.file.count_timeout()
        return explain(error)

    return line


def timeout_hint(evidence: BenchFile, timeout_s: float) -> str | None:
    """One line when requests ran past `--timeout`: a slow moment is not a dead server, and the
    flag that gives it more time (twice as much, as `make bench` takes it)."""
    count = evidence.timed_out or 0
    if not count:
        return None
    total = len(evidence.records)
    more = f"{timeout_s * 2:g}"
    return (
        f"{count} of {total} request{'s' if total != 1 else ''} timed out after {timeout_s:g} s: the server was "
        f"slower than --timeout, not down; give it more time with --timeout {more} "
        f'(make bench ARGS="--timeout {more}")'
    )


def bench_backend(
    backend: Backend,
    request: ChatRequest,
    repeats: int,
    timeout_s: float,
    evidence: Evidence[BenchFile],
    advance,
    seconds: float | None = None,
) -> None:
    """Warm one client, then time `repeats` requests, none sent after `seconds` (the level's time
    limit, when given). A backend that refuses the connection is not tried again; one that timed
    out is (a slow moment on a busy machine is not a dead server)."""
    level = LoadLevel("concurrency", 1, repeats).recorded()
    if not backend.timed_chat:
        skip_batch(backend, evidence)
        advance(repeats)
        return
    try:
        client = timed_client_for(backend, timeout_s)
    except Exception as error:
        line = backend.explain(error)
        console.print(f"[red]{backend.name}:[/red] {line}")
        for run in range(1, repeats + 1):
            evidence.add_record(RequestRecord(backend=backend.name, run=run, error=line, level=level))
            advance()
        return
    explain = counting_timeouts(backend.explain, evidence)
    try:
        warm = warm_up_once(client, backend)
        evidence.file.warm_up.append(warm)
        if warm.error:
            # Warm-up failing is information, not a verdict: the timed request decides.
            console.print(f"[yellow]{backend.name}:[/yellow] warm-up failed: {warm.error}")

        def kept(record: RequestRecord, failed: bool) -> None:
            if failed:
                console.print(f"[red]{backend.name} run {record.run}:[/red] {record.error}")
            evidence.add_record(record)
            advance()

        one_at_a_time(
            client.chat,
            explain,
            request,
            repeats,
            lambda run: RequestRecord(backend=backend.name, run=run, level=level),
            down=lambda error: isinstance(as_fault(error), Unreachable),
            seconds=seconds,
            kept=kept,
        )
    finally:
        client.close()


def skip_batch(backend: Backend, evidence: Evidence[BenchFile]) -> None:
    """A transform job's model: one line, no records (not an error)."""
    line = f"{backend.name}: measured by {BATCH_COMMAND} (a transform job, not a timed chat)"
    console.print(f"[dim]{line}[/dim]")
    evidence.notice(line)


COLD_ASSUMED = "cold_assumed"


def warm_up_once(client, backend: Backend) -> RequestRecord:
    """The survey's warm-up; on a path that scales from zero it is the cold start, timed and marked
    (unless the client knows better: an async endpoint that had an instance was not cold)."""
    warm = warm_up(client, backend.name)
    if backend.cold_starts and warm.cold_start is None:
        # The path does not say whether this request found it at zero (serverless): the first
        # request of the run is taken as the cold one, and the record says it was assumed.
        warm.cold_start = True
        warm.phases = (warm.phases or {}) | {COLD_ASSUMED: 1.0}
    return warm


def chat_requests(backend: Backend, prompts: list[Prompt]) -> list[ChatRequest]:
    """The prompts as requests. Servers that may be vLLM are asked for a running token count per
    chunk (`continuous_usage_stats`); others ignore the option and the count is estimated."""
    per_chunk = backend.supports.usage_per_chunk
    return [ChatRequest(p.text, max_tokens=p.max_tokens, usage_per_chunk=per_chunk) for p in prompts]


def sweep_backend(
    backend: Backend,
    levels: list[LoadLevel],
    prompts: list[Prompt],
    args: argparse.Namespace,
    evidence: Evidence[BenchFile],
    advance,
) -> None:
    """One warm-up, then every level in turn; a level's records are saved when it ends."""
    if not backend.timed_chat:
        skip_batch(backend, evidence)
        advance(sum(level.requests for level in levels))
        return
    requests = chat_requests(backend, prompts)
    clients = args.clients
    if clients > 1 and (why := clients_for(backend)):
        line = f"{backend.name}: measured on one client: {why}"
        console.print(f"[yellow]note:[/yellow] {line}")
        evidence.notice(line)
    if backend.speaks_openai and backend.base_url and not backend.blocked:
        if args.clients > 1:
            sweep_spread(backend, levels, requests, args, evidence, advance)
        else:
            asyncio.run(sweep_openai(backend, levels, requests, args, evidence, advance))
        return
    try:
        client = timed_client_for(backend, args.timeout, connections=max(level.in_flight for level in levels))
    except Exception as error:
        line = backend.explain(error)
        console.print(f"[red]{backend.name}:[/red] {line}")
        for level in levels:
            for run in range(1, level.requests + 1):
                evidence.file.records.append(
                    RequestRecord(backend=backend.name, run=run, error=line, level=level.recorded())
                )
            advance(level.requests)
        evidence.save()
        return
    try:
        warm = warm_up_once(client, backend)
        evidence.file.warm_up.append(warm)
        for level in levels:
            explain = counting_timeouts(backend.explain, evidence)
            loads: list[ClientLoad] = []
            with kept_if_stopped(backend, level, evidence, loads) as finished:
                records = run_level(
                    client.chat,
                    explain,
                    backend.name,
                    level,
                    requests,
                    args.seed,
                    advance,
                    args.level_seconds,
                    finished,
                    loads,
                )
            keep_level(backend, level, records, evidence, loads)
    finally:
        client.close()


async def sweep_openai(
    backend: Backend,
    levels: list[LoadLevel],
    requests: list[ChatRequest],
    args: argparse.Namespace,
    evidence: Evidence[BenchFile],
    advance,
) -> None:
    """The OpenAI-compatible path: every stream of a level on one event loop (see openai_async)."""
    connections = max(level.in_flight for level in levels)
    async with AsyncOpenAIStreamClient(
        backend.base_url,
        backend.model_id,
        timeout_s=args.timeout,
        connections=connections,
        context_tokens=backend.max_total_tokens,
    ) as client:
        for level in levels:
            loads: list[ClientLoad] = []
            # As many untimed warm-ups at once as the level keeps in flight: every connection it
            # will use is open before the first timed request (through an SSM port forward each
            # new connection is a new tunnel stream, which would land in time to first token).
            opening = min(level.in_flight, WARM_CONNECTIONS_MAX)
            warm = await asyncio.gather(*(warm_up_async(client, backend.name) for _ in range(opening)))
            for record in warm:
                record.level = level.recorded()
            evidence.file.warm_up.extend(warm)
            explain = counting_timeouts(backend.explain, evidence)
            with kept_if_stopped(backend, level, evidence, loads) as finished:
                records = await run_level_async(
                    client.chat,
                    explain,
                    backend.name,
                    level,
                    requests,
                    args.seed,
                    advance,
                    args.level_seconds,
                    finished,
                    loads,
                )
            keep_level(backend, level, records, evidence, loads)


def sweep_spread(
    backend: Backend,
    levels: list[LoadLevel],
    requests: list[ChatRequest],
    args: argparse.Namespace,
    evidence: Evidence[BenchFile],
    advance,
) -> None:
    """Every level over `--clients` processes (runner/measure/spread.py), each opening and warming
    its own connections; waited on outside any event loop, so Ctrl-C reaches the wait at once."""
    for level in levels:
        loads: list[ClientLoad] = []
        clients = clients_at(args.clients, level)
        job = ClientJob(backend, level, requests, args.seed, args.timeout, args.level_seconds, clients)
        with kept_if_stopped(backend, level, evidence, loads) as finished:
            records = spread_into(job, evidence, finished, loads, advance)
        keep_level(backend, level, records, evidence, loads)


@contextlib.contextmanager
def kept_if_stopped(
    backend: Backend, level: LoadLevel, evidence: Evidence[BenchFile], loads: list[ClientLoad]
) -> Iterator[list[RequestRecord]]:
    """The list a level's requests go to as each finishes; a level stopped midway (Ctrl-C,
    SIGTERM, a fault) keeps them, marked stopped, before the stop goes on up."""
    finished: list[RequestRecord] = []
    try:
        yield finished
    except BaseException:
        kept = stopped_records(level, finished)
        console.print(f"[yellow]{backend.name} {level.label}:[/yellow] stopped; the {len(kept)} finished kept")
        keep_level(backend, level, kept, evidence, loads)
        raise


def keep_level(
    backend: Backend,
    level: LoadLevel,
    records: list[RequestRecord],
    evidence: Evidence[BenchFile],
    loads: list[ClientLoad],
) -> None:
    """A level's records kept, with how busy each client process was meanwhile (under the level's
    label as its records have it: a stopped level's is marked)."""
    evidence.file.records.extend(records)
    label = records[0].label if records else level.label
    readings = LevelReadings(backend.name, label, level.recorded(), clients=loads or None)
    evidence.file.keep_level(readings)
    if readings.client_limit:
        console.print(
            f"[yellow]{backend.name} {level.label}:[/yellow] not the server's figure: {readings.client_limit}"
        )
    evidence.save()
    failed = sum(1 for r in records if not r.ok)
    if failed:
        first = next(r.error for r in records if r.error)
        console.print(f"[red]{backend.name} {level.label}:[/red] {failed} of {len(records)} failed; first: {first}")
