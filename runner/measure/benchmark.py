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
from collections.abc import Iterator

from runner.core.backends import BATCH_COMMAND, Backend
from runner.core.console import console
from runner.core.errors import backend_down
from runner.core.evidence import Evidence
from runner.core.records import RequestRecord
from runner.measure import ChatRequest, timed_client_for, warm_up
from runner.measure.load import (
    LoadLevel,
    Prompt,
    run_level,
    run_level_async,
    stopped_records,
)
from runner.measure.openai_async import AsyncOpenAIStreamClient, warm_up_async

# Connections opened ahead of a level (an open-loop level without a cap may reach far more).
WARM_CONNECTIONS_MAX = 64


def bench_backend(
    backend: Backend, request: ChatRequest, repeats: int, timeout_s: float, evidence: Evidence, advance
) -> None:
    """Warm one client, then time `repeats` requests; a backend that is down is not retried."""
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
            evidence.add_record(RequestRecord(backend=backend.name, run=run, error=line, level=level).to_json())
            advance()
        return
    try:
        warm = warm_up_once(client, backend)
        evidence.data["warm_up"].append(warm.to_json())
        if warm.error:
            # Warm-up failing is information, not a verdict: the timed request decides.
            console.print(f"[yellow]{backend.name}:[/yellow] warm-up failed: {warm.error}")
        skip_reason = None
        for run in range(1, repeats + 1):
            record = RequestRecord(backend=backend.name, run=run, level=level)
            if skip_reason:
                record.error = f"skipped after run 1: {skip_reason}"
            else:
                try:
                    client.chat(request, record)
                except Exception as error:
                    record.ok = False
                    record.error = backend.explain(error)
                    console.print(f"[red]{backend.name} run {run}:[/red] {record.error}")
                    if run == 1 and backend_down(error):
                        skip_reason = record.error
            evidence.add_record(record.to_json())
            advance()
    finally:
        client.close()


def skip_batch(backend: Backend, evidence: Evidence) -> None:
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
    evidence: Evidence,
    advance,
) -> None:
    """One warm-up, then every level in turn; a level's records are saved when it ends."""
    if not backend.timed_chat:
        skip_batch(backend, evidence)
        advance(sum(level.requests for level in levels))
        return
    requests = chat_requests(backend, prompts)
    if backend.speaks_openai and backend.base_url and not backend.blocked:
        asyncio.run(sweep_openai(backend, levels, requests, args, evidence, advance))
        return
    try:
        client = timed_client_for(backend, args.timeout, connections=max(level.in_flight for level in levels))
    except Exception as error:
        line = backend.explain(error)
        console.print(f"[red]{backend.name}:[/red] {line}")
        for level in levels:
            for run in range(1, level.requests + 1):
                evidence.data["records"].append(
                    RequestRecord(backend=backend.name, run=run, error=line, level=level.recorded()).to_json()
                )
            advance(level.requests)
        evidence.save()
        return
    try:
        warm = warm_up_once(client, backend)
        evidence.data["warm_up"].append(warm.to_json())
        for level in levels:
            with kept_if_stopped(backend, level, evidence, advance) as finished:
                records = run_level(client.chat, backend.explain, backend.name, level, requests, args.seed, finished)
            keep_level(backend, level, records, evidence, advance)
    finally:
        client.close()


async def sweep_openai(
    backend: Backend,
    levels: list[LoadLevel],
    requests: list[ChatRequest],
    args: argparse.Namespace,
    evidence: Evidence,
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
            # As many untimed warm-ups at once as the level keeps in flight: every connection it
            # will use is open before the first timed request (through an SSM port forward each
            # new connection is a new tunnel stream, which would land in time to first token).
            opening = min(level.in_flight, WARM_CONNECTIONS_MAX)
            warm = await asyncio.gather(*(warm_up_async(client, backend.name) for _ in range(opening)))
            for record in warm:
                record.level = level.recorded()
            evidence.data["warm_up"].extend(r.to_json() for r in warm)
            with kept_if_stopped(backend, level, evidence, advance) as finished:
                records = await run_level_async(
                    client.chat, backend.explain, backend.name, level, requests, args.seed, finished
                )
            keep_level(backend, level, records, evidence, advance)


@contextlib.contextmanager
def kept_if_stopped(backend: Backend, level: LoadLevel, evidence: Evidence, advance) -> Iterator[list[RequestRecord]]:
    """The list a level's requests go to as each finishes; a level stopped midway (Ctrl-C,
    SIGTERM, a fault) keeps them, marked stopped, before the stop goes on up."""
    finished: list[RequestRecord] = []
    try:
        yield finished
    except BaseException:
        kept = stopped_records(level, finished)
        console.print(f"[yellow]{backend.name} {level.label}:[/yellow] stopped; the {len(kept)} finished kept")
        keep_level(backend, level, kept, evidence, advance)
        raise


def keep_level(backend: Backend, level: LoadLevel, records: list[RequestRecord], evidence: Evidence, advance) -> None:
    evidence.data["records"].extend(r.to_json() for r in records)
    evidence.save()
    advance(level.requests)
    failed = sum(1 for r in records if not r.ok)
    if failed:
        first = next(r.error for r in records if r.error)
        console.print(f"[red]{backend.name} {level.label}:[/red] {failed} of {len(records)} failed; first: {first}")
