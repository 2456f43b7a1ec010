"""`runner.bench` on a workload: per backend, prompts of the workload's lengths built on the
backend's own tokenizer, every input length crossed with every load level, each level graded on
the objectives and watched through the server's own metrics; then, if asked, the most load it
carries within the objectives.

What a path cannot do is said once, as a line, and the run goes on: a path that cannot force the
output length lets the model choose (its records say so, and per-token figures use the real
count); a path without a tokenizer has its prompt lengths calibrated from its usage; a path
without metrics is measured without them. One backend failing never stops the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from runner.core.backends import Backend
from runner.core.console import console
from runner.core.errors import RunnerError, describe
from runner.core.evidence import Evidence
from runner.core.readings import AcceleratorReadings, LevelReadings, ServerMetrics
from runner.core.records import RequestRecord
from runner.figures.capacity import CapacityFound
from runner.figures.levels import LevelSummary, level_summary
from runner.measure import ChatRequest, timed_client_for
from runner.measure.bench_file import BenchFile, kept_metrics
from runner.measure.benchmark import counting_timeouts, skip_batch, warm_up_once
from runner.measure.capacity import Budget, find_capacity
from runner.measure.load import (
    CLOSED,
    OPEN,
    LoadLevel,
    clients_at,
    run_level,
    run_level_async,
    stopped_records,
)
from runner.measure.openai_async import AsyncOpenAIStreamClient, warm_up_async
from runner.measure.records import Conversation
from runner.measure.server_metrics import MetricsSampler, probe
from runner.measure.spread import ClientJob, clients_for, spread_into
from runner.measure.tokens import PromptCounter, counter_for, reply_counter, server_root
from runner.timing.client_load import ClientLoad
from runner.workloads import SURVEY_MAX_TOKENS, Turn, Workload, synthetic_turns
from runner.workloads.slo import Slo, judge
from runner.workloads.text import Fitter

Advance = Callable[..., Any]


@dataclass
class BenchPlan:
    workload: Workload
    slo: Slo
    # Load levels as given: closed-loop concurrencies, open-loop rates (empty: one at a time).
    concurrency: list[int] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    max_concurrency: int | None = None
    requests: int | None = None
    repeats: int = 5
    seed: int = 0
    timeout_s: float = 60.0
    # The most load within the objectives: None, or "concurrency" / "rate".
    find_capacity: str | None = None
    slo_share: float = 0.9
    budget: Budget = field(default_factory=Budget)
    metrics: bool = True
    # The output cap when no length is forced (--max-tokens), and where the capacity search starts.
    max_tokens: int = SURVEY_MAX_TOKENS
    search_start: float = 1.0
    # No request of a level sent after this many seconds (--level-seconds); None: no limit.
    level_seconds: float | None = None
    # Client processes each level is spread over (--clients).
    clients: int = 1

    def levels(self, input_tokens: int | None) -> list[LoadLevel]:
        levels = [
            LoadLevel(CLOSED, c, self.requests or max(4 * c, 4), input_tokens=input_tokens) for c in self.concurrency
        ]
        levels += [
            LoadLevel(OPEN, r, self.requests or max(8, round(10 * r)), self.max_concurrency, input_tokens=input_tokens)
            for r in self.rates
        ]
        if not levels and not self.find_capacity:
            levels = [LoadLevel(CLOSED, 1, self.requests or self.repeats, input_tokens=input_tokens)]
        return levels

    def level_at(self, value: float, input_tokens: int | None) -> LoadLevel:
        if self.find_capacity == "rate":
            requests = self.requests or max(8, round(10 * value))
            return LoadLevel(OPEN, value, requests, self.max_concurrency, input_tokens=input_tokens)
        count = int(value)
        return LoadLevel(CLOSED, count, self.requests or max(4 * count, 8), input_tokens=input_tokens)

    @property
    def total_requests(self) -> int:
        lengths = max(1, len(self.workload.input_tokens))
        return lengths * sum(level.requests for level in self.levels(None))


class BackendRun:
    """One backend's workload: its client, its count of tokens, its metrics, its levels."""

    def __init__(
        self, backend: Backend, plan: BenchPlan, evidence: Evidence[BenchFile], advance: Advance, row: str | None = None
    ) -> None:
        self.backend, self.plan, self.evidence, self.advance = backend, plan, evidence, advance
        # The row its records go under (the backend's name; `<name>@host` for its in-region row).
        self.row = row or backend.name
        self.supports = backend.supports
        self.force = self.supports.forced_output_length and plan.workload.output_tokens is not None
        self.counter: PromptCounter | None = None
        # A ShareGPT reply's length on the server's tokenizer (None: estimated), each counted once.
        self.reply_count: Callable[[str], int] | None = None
        self.reply_tokens: dict[str, int] = {}
        # Prompts built on the counter, cheaper by what it learns (runner/workloads/text.py Fitter).
        self.fitter: Fitter | None = None
        self.metrics_url: str | None = None
        # Requests built so far: the next request's text is seeded past them (no two alike).
        self.built = 0
        # The levels measured so far (their labels): a fault fails only the ones not yet measured.
        self.measured: set[str] = set()
        # How its workload was prepared, as the evidence keeps it (`workload_backends`).
        self.info = evidence.file.workload_backend(self.row)
        # The path every record of this row measured (the in-region row's), none by default.
        self.path: str | None = None

    def note(self, line: str) -> None:
        line = f"{self.row}: {line}"
        console.print(f"[yellow]note:[/yellow] {line}")
        self.evidence.notice(line)

    def run(self) -> None:
        backend, plan = self.backend, self.plan
        if not backend.timed_chat:
            skip_batch(backend, self.evidence)
            return
        in_flight = max([*plan.concurrency, *([plan.max_concurrency] if plan.max_concurrency else []), 1])
        try:
            client = timed_client_for(backend, plan.timeout_s, connections=in_flight)
        except Exception as error:
            self.fail_all(backend.explain(error))
            return
        try:
            self.prepare(client)
            self.measure_lengths(client)
        except Exception as error:  # one line for this backend; the others go on
            self.fail_all(str(error) if isinstance(error, RunnerError) else backend.explain(error))
        finally:
            client.close()

    def measure_lengths(self, client) -> None:
        """Every input length's levels, then, if asked, its capacity search; a length the model's
        context cannot hold is not sent."""
        plan = self.plan
        output = plan.workload.output_tokens or plan.max_tokens
        for length in plan.workload.input_tokens or [None]:
            too_long = length and plan.workload.beyond_context(length, self.backend.max_total_tokens, output)
            if too_long:
                self.not_sent(too_long)
                continue
            self.measure_levels(client, plan.levels(length))
            if plan.find_capacity:
                self.search(client, length)

    def not_sent(self, line: str) -> None:
        self.note(line)
        self.info.not_sent = [*(self.info.not_sent or []), line]

    def prepare(self, client) -> None:
        """What this path can do for the workload, each missing capability one line; the count of
        tokens the prompts are built on; the warm-up; where its metrics are."""
        backend, workload = self.backend, self.plan.workload
        if workload.output_tokens is not None and not self.force:
            self.note(self.supports.reason("forced_output_length"))
        self.info.forced_output_length = self.force
        if workload.synthetic:
            try:
                self.counter = counter_for(backend, client)
            except Exception as error:
                raise RunnerError(f"prompt lengths cannot be set: {describe(error)}") from None
            self.fitter = Fitter(self.counter.text)
            self.info.token_count = self.counter.method
            if not self.supports.tokenizer:
                self.note(self.supports.reason("tokenizer"))
        elif workload.output_tokens is None and any(turn.reply for turn in workload.fixed):
            self.reply_count = reply_counter(backend)
            if self.reply_count is None:
                self.note("output lengths estimated at 4/3 tokens a word of each reply: this path has no tokenizer")
            self.info.output_lengths = (
                "each reply's tokens on the server's tokenizer (POST /tokenize)"
                if self.reply_count
                else "each reply's words x 4/3 (no tokenizer)"
            )
        if self.plan.clients > 1 and (why := clients_for(backend)):
            self.note(f"measured on one client: {why}")
        warm = warm_up_once(client, backend)
        self.evidence.file.warm_up.append(warm)
        if not self.plan.metrics:
            return
        if self.supports.server_metrics and backend.base_url:
            url = f"{server_root(backend.base_url)}/metrics"
            why = probe(url)
            if why is None:
                self.metrics_url = url
            else:
                self.note(why)
        else:
            self.note(self.supports.reason("server_metrics"))
        self.info.metrics = self.metrics_url

    def requests_for(self, level: LoadLevel) -> list[ChatRequest | Conversation]:
        """As many distinct requests as the level sends (conversations count as one each)."""
        workload, count = self.plan.workload, level.requests
        output = workload.output_tokens or self.plan.max_tokens
        per_chunk = self.supports.usage_per_chunk
        if not workload.synthetic:
            # Taken on from where the last level stopped (a prompt comes round again only once
            # the whole dataset has been sent).
            first, self.built = self.built, self.built + count
            fixed = [workload.fixed[(first + i) % len(workload.fixed)] for i in range(count)]
            return [
                ChatRequest(
                    t.prompt,
                    max_tokens=workload.output_tokens or self.output_for(t),
                    history=t.history,
                    usage_per_chunk=per_chunk,
                    force_length=self.force,
                )
                for t in fixed
            ]
        assert self.fitter is not None and level.input_tokens is not None
        first, self.built = self.built, self.built + count
        if workload.turns > 1:
            turns = workload.turns
            seeds = [workload.seed * 7919 + session * turns + t + 1 for session in range(first, first + count)
                     for t in range(turns)]  # fmt: skip
            texts = [text for text, _ in self.fitter.fit_all([(level.input_tokens, seed, "") for seed in seeds])]
            return [
                Conversation(
                    tuple(texts[i : i + turns]), output, self.force, level.input_tokens, usage_per_chunk=per_chunk
                )
                for i in range(0, len(texts), turns)
            ]
        turns = synthetic_turns(workload, level.input_tokens, count, output, self.fitter, first)
        return [
            ChatRequest(
                t.prompt,
                max_tokens=t.max_tokens,
                usage_per_chunk=per_chunk,
                force_length=self.force,
                target_input_tokens=t.target_input_tokens,
            )
            for t in turns
        ]

    def output_for(self, turn: Turn) -> int:
        """A dataset prompt's output: its ShareGPT reply's tokens on the server's own tokenizer (as
        `vllm bench serve` counts them with its tokenizer), else the estimate it was read with."""
        if turn.reply is None or self.reply_count is None:
            return turn.max_tokens
        if turn.reply not in self.reply_tokens:
            self.reply_tokens[turn.reply] = max(1, self.reply_count(turn.reply))
        return self.reply_tokens[turn.reply]

    def measure_levels(self, client, levels: list[LoadLevel]) -> list[LevelSummary]:
        """Each level in turn (the in-region row sends them together); their summaries."""
        return [self.measure_level(client, level) for level in levels]

    def measure_level(self, client, level: LoadLevel) -> LevelSummary:
        """One level: its requests sent by the one load engine, the server watched meanwhile; its
        records graded and kept when it ends. Returns its summary. A level stopped midway (Ctrl-C,
        SIGTERM, a fault) keeps the requests that finished, marked stopped, and what was read of
        the server until then, before the stop goes on up."""
        requests = self.requests_for(level)
        sampler = MetricsSampler(self.metrics_url) if self.metrics_url else None
        finished: list[RequestRecord] = []
        loads: list[ClientLoad] = []
        stop: BaseException | None = None
        try:
            if sampler:
                sampler.__enter__()
            if self.spreads(level):
                records = self.spread_level(level, requests, finished, loads)
            elif self.backend.speaks_openai and self.backend.base_url:
                records = asyncio.run(self.openai_level(level, requests, finished, loads))
            else:
                records = run_level(
                    client.chat,
                    counting_timeouts(self.backend.explain, self.evidence),
                    self.backend.name,
                    level,
                    requests,
                    self.plan.seed,
                    self.advance,
                    self.plan.level_seconds,
                    finished,
                    loads,
                )
        except BaseException as error:
            stop, records = error, stopped_records(level, finished)
            console.print(f"[yellow]{self.row} {level.label}:[/yellow] stopped; the {len(records)} finished kept")
        finally:
            if sampler:
                sampler.__exit__(None, None, None)
        metrics = kept_metrics(sampler.summary(), sampler.samples) if sampler else None
        summary = self.keep_level(level, records, metrics, stopped=stop is not None, loads=loads)
        if stop is not None:
            raise stop
        return summary

    def spreads(self, level: LoadLevel) -> bool:
        """Whether this level goes over several client processes (`--clients K`)."""
        return clients_at(self.plan.clients, level) > 1 and clients_for(self.backend) is None

    def spread_level(
        self,
        level: LoadLevel,
        requests: list[ChatRequest | Conversation],
        finished: list[RequestRecord],
        loads: list[ClientLoad],
    ) -> list[RequestRecord]:
        """The level on `--clients` processes (runner/measure/spread.py), merged into one."""
        plan = self.plan
        clients = clients_at(plan.clients, level)
        job = ClientJob(self.backend, level, requests, plan.seed, plan.timeout_s, plan.level_seconds, clients)
        return spread_into(job, self.evidence, finished, loads, self.advance)

    def keep_level(
        self,
        level: LoadLevel,
        records: list[RequestRecord],
        metrics: ServerMetrics | None = None,
        accelerator: AcceleratorReadings | None = None,
        stopped: bool = False,
        loads: list[ClientLoad] | None = None,
    ) -> LevelSummary:
        """A measured level's records graded on the objectives and kept, with what was read of the
        server meanwhile (its metrics; on its own host, its accelerator); its summary. `stopped`:
        the level was stopped midway, and `records` are the requests that finished (their level
        says so)."""
        if self.plan.slo:
            for record in records:
                record.slo = judge(record, self.plan.slo)
        for record in records:
            record.path = self.path
        self.evidence.file.records.extend(records)
        label, stopped_after = level.label, None
        if stopped:
            # Under the stopped level's own label, as its records are (runner/core/records.py Level.stopped).
            marked = level.recorded().stopped(len(records))
            label, stopped_after = marked.label, marked.stopped_after
        readings = LevelReadings(self.row, label, level.recorded(), metrics, accelerator, stopped_after, loads or None)
        self.evidence.file.keep_level(readings)
        if readings.client_limit:
            console.print(
                f"[yellow]{self.row} {level.label}:[/yellow] not the server's figure: {readings.client_limit}"
            )
        self.measured.add(level.label)
        self.evidence.save()
        failed = [r for r in records if not r.ok]
        if failed:
            first = next((r.error for r in failed if r.error), None)
            console.print(
                f"[red]{self.row} {level.label}:[/red] {len(failed)} of {len(records)} failed; first: {first}"
            )
        return replace(level_summary(records, self.plan.slo), client_limit=readings.client_limit)

    async def openai_level(
        self,
        level: LoadLevel,
        requests: list[ChatRequest | Conversation],
        finished: list[RequestRecord],
        loads: list[ClientLoad],
    ) -> list[RequestRecord]:
        backend = self.backend
        async with AsyncOpenAIStreamClient(
            backend.base_url or "",
            backend.model_id,
            timeout_s=self.plan.timeout_s,
            connections=level.in_flight,
            context_tokens=backend.max_total_tokens,
        ) as client:
            warm = await asyncio.gather(*(warm_up_async(client, backend.name) for _ in range(min(level.in_flight, 64))))
            for record in warm:
                record.level = level.recorded()
            self.evidence.file.warm_up.extend(warm)
            explain = counting_timeouts(backend.explain, self.evidence)
            return await run_level_async(
                client.chat,
                explain,
                backend.name,
                level,
                requests,
                self.plan.seed,
                self.advance,
                self.plan.level_seconds,
                finished,
                loads,
            )

    def search(self, client, input_tokens: int | None) -> None:
        """The most load within the objectives, at this input length. A path that cannot judge an
        objective (no stream: no time to first token) is not searched: one line says why."""
        plan = self.plan
        unjudged = [key for key, _ in plan.slo.limits if key in ("ttft", "tpot")]
        if unjudged and not self.supports.streaming:
            self.note(
                f"capacity at {plan.slo.text}: not searched: {', '.join(unjudged)} cannot be judged here "
                f"({self.supports.reason('streaming')})"
            )
            return
        requests = plan.level_at(plan.search_start, input_tokens).requests
        if requests * (1 - plan.slo_share) < 1:
            self.note(
                f"a level of {requests} requests meets {plan.slo_share:.0%} only with none missed: one slow request "
                "fails it (--requests sets more)"
            )
        search = find_capacity(
            lambda value: self.measure_level(client, plan.level_at(value, input_tokens)),
            mode=plan.find_capacity or "concurrency",
            slo_share=plan.slo_share,
            start=plan.search_start,
            budget=plan.budget,
            requests_at=lambda value: plan.level_at(value, input_tokens).requests,
        )
        label = plan.level_at(search.capacity, input_tokens).label if search.capacity is not None else None
        found = search.found(self.row, input_tokens, label)
        self.keep_found(found)
        self.evidence.save()
        if found.capacity is None:
            self.note(f"capacity at {plan.slo.text}: none ({found.stopped})")
        else:
            console.print(f"{self.row}: capacity {found.capacity:g} {found.unit} at {plan.slo.text} ({found.stopped})")

    def keep_found(self, found: CapacityFound) -> None:
        """A search's answer, under the evidence's `capacity` (a fleet's copy counts keep theirs apart)."""
        self.evidence.file.keep_capacity(found)

    def fail_all(self, line: str) -> None:
        """Every request this backend would still have sent (levels already measured keep their
        records), as a record with the one line why not."""
        console.print(f"[red]{self.row}:[/red] {line}")
        self.evidence.notice(f"{self.row}: {line}")
        for length in self.plan.workload.input_tokens or [None]:
            for level in self.plan.levels(length) or [self.plan.level_at(1, length)]:
                if level.label in self.measured:
                    continue
                for run in range(1, level.requests + 1):
                    record = RequestRecord(backend=self.row, run=run, error=line, level=level.recorded())
                    record.path = self.path
                    self.evidence.file.records.append(record)
        self.evidence.save()


def bench_workload(backend: Backend, plan: BenchPlan, evidence: Evidence[BenchFile], advance: Advance) -> BackendRun:
    run = BackendRun(backend, plan, evidence, advance)
    run.run()
    return run
