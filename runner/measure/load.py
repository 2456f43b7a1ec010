"""Load levels for `runner.bench`: the levels planned from the flags, the prompts read from a
file, and the runner's records on the measuring core's load engine (runner/timing/load.py: closed
loop, open loop, one at a time, with a fixed seed).

Records of a level are kept in memory while it runs and written once it ends: rewriting the
evidence file after every record would hold the interpreter while other requests stream, and
the client must not be what slows a level down. A level stopped before its end (Ctrl-C, SIGTERM)
keeps every request that finished, handed over as each finishes (`finished`), under its level
marked stopped (`Level.stopped`); the requests still out are not records: they did not finish.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.core.errors import RunnerError
from runner.core.files import read_text_file
from runner.core.flags import finite
from runner.core.records import Level, RequestRecord
from runner.timing import load
from runner.timing.chat import ChatRequest, Conversation
from runner.timing.client_load import ClientLoad
from runner.timing.load import CLOSED, OPEN, Part, poisson_offsets  # noqa: F401 (the runner's names for the core's)


@dataclass(frozen=True)
class LoadLevel(load.LoadLevel):
    """A level as the runner plans it (the core's, runner/timing/load.py), recorded as its records keep it."""

    def recorded(self) -> Level:
        """The level as each of its requests' records keeps it."""
        return Level(**self.to_json())


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


def check_clients(clients: int, levels: list[LoadLevel], *, searched: bool = False) -> None:
    """`--clients K`: at least one process, and no more than any level given keeps in flight (a
    client with nothing to send measures nothing). A capacity search's own levels (`searched`)
    take at most as many clients as they keep in flight (`clients_at`)."""
    if clients < 1:
        raise RunnerError(f"--clients {clients}: at least 1 client process")
    if clients == 1 or (searched and not levels):
        return
    if not levels:
        raise RunnerError(f"--clients {clients}: spreads a load level over processes: give --concurrency or --rate")
    fewest = min(levels, key=lambda level: level.in_flight)
    if clients > fewest.in_flight:
        raise RunnerError(
            f"--clients {clients}: more client processes than the {fewest.in_flight} requests {fewest.label} "
            "keeps in flight"
        )


def clients_at(clients: int, level: LoadLevel) -> int:
    """The client processes a level goes over: `--clients`, at most one per request in flight."""
    return max(1, min(clients, level.in_flight))


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


def record_maker(backend: str, level: LoadLevel) -> Callable[[int], RequestRecord]:
    """The runner's record of request `run` of a level."""
    recorded = level.recorded()
    return lambda run: RequestRecord(backend=backend, run=run, level=recorded)


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
    loads: list[ClientLoad] | None = None,
    part: Part | None = None,
) -> list[RequestRecord]:
    """Every request of one level on one event loop, for a client whose `chat` is a coroutine (the
    core's engine, `load.run_level_async`, with the runner's records)."""
    new_record = record_maker(backend, level)
    return await load.run_level_async(
        chat,  # type: ignore[arg-type]
        explain,
        level,
        requests,  # type: ignore[arg-type]
        seed,
        new_record,
        done,
        seconds,
        finished,  # type: ignore[arg-type]
        loads,
        part,
    )


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
    loads: list[ClientLoad] | None = None,
) -> list[RequestRecord]:
    """The same engine for a client whose `chat` blocks (Bedrock and SageMaker through boto3): each
    request on a thread of a pool as wide as the level keeps in flight."""
    new_record = record_maker(backend, level)
    return load.run_level(chat, explain, level, requests, seed, new_record, done, seconds, finished, loads)  # type: ignore[arg-type]
