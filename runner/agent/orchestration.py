"""Demo 2: an agent with one ask tool per backend and a scoreboard; every ask is the same fixed
question, timed in code, and the closing sentence is checked against the code's table."""

from __future__ import annotations

import re
from typing import Any

from strands.tools.decorator import tool

from runner.agent.limits import AgentLimits
from runner.agent.models import strands_model
from runner.agent.run import run_agent
from runner.core.agent_evidence import AgentFailure, AgentRun, OrchestratorAsk, OrchestratorRun, ScoreRow
from runner.core.backends import Backend
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord
from runner.core.stats import fmt, median
from runner.measure import ChatRequest, TimedClient, timed_client_for, warm_up

QUESTION = "What is the capital of France? Answer in one word."


ASK_MAX_TOKENS = 32


SYSTEM = (
    "You compare inference backends. Call every ask_ tool once, then call scoreboard, "
    "quote its table exactly as returned, and finish with one sentence naming the fastest backend."
)


def tool_name(backend: str) -> str:
    return "ask_" + re.sub(r"[^A-Za-z0-9_]", "_", backend)[:56]


class Harness:
    """Holds the code's measurements; the agent only sees what the tools return.

    Every ask sends the same fixed question, after one untimed warm-up per backend, and every
    ask is kept: the table summarises them, it does not keep only the last."""

    def __init__(self, backends: list[Backend], timeout_s: float) -> None:
        self.backends = backends
        self.timeout_s = timeout_s
        self.asks: list[OrchestratorAsk] = []
        self.warm_ups: list[RequestRecord] = []
        self.clients: dict[str, TimedClient] = {}

    def _client(self, backend: Backend) -> TimedClient:
        if backend.name not in self.clients:
            client = timed_client_for(backend, self.timeout_s)
            self.warm_ups.append(warm_up(client, backend.name))
            self.clients[backend.name] = client
        return self.clients[backend.name]

    def ask(self, backend: Backend) -> OrchestratorAsk:
        record = RequestRecord(backend=backend.name, run=len(self.asks) + 1)
        try:
            self._client(backend).chat(ChatRequest(prompt=QUESTION, max_tokens=ASK_MAX_TOKENS), record)
        except Exception as error:
            record.ok = False
            record.error = backend.explain(error)
        row = OrchestratorAsk(backend.title, " ".join(record.text.split())[:60], record)
        self.asks.append(row)
        return row

    def table(self) -> list[ScoreRow]:
        """One row per backend asked, from all its asks; sorted in code: measured rows by median
        seconds, then the rows with no measured ask."""
        rows = []
        for backend in self.backends:
            asks = [a for a in self.asks if a.request.backend == backend.name]
            if not asks:
                continue
            measured = [a for a in asks if a.request.ok]
            rows.append(
                ScoreRow(
                    backend=backend.name,
                    title=backend.title,
                    asks=len(asks),
                    measured=len(measured),
                    answer=measured[-1].answer if measured else "",
                    seconds=median(a.request.e2e_s for a in measured),
                    tokens_per_s=median(a.request.tokens_per_s for a in measured),
                    error=None if measured else asks[-1].request.error,
                )
            )
        return sorted(rows, key=lambda r: (r.seconds is None, r.seconds or 0))

    def markdown(self) -> str:
        lines = ["| Backend | Answer | Seconds | Tokens/s |", "|---|---|---|---|"]
        for row in self.table():
            seconds = fmt(row.seconds) if row.seconds is not None else "-"
            rate = fmt(row.tokens_per_s, 1) if row.tokens_per_s else "-"
            answer = row.answer if not row.error else f"error: {row.error}"
            lines.append(f"| {row.title} | {answer} | {seconds} | {rate} |")
        return "\n".join(lines)

    def tools(self) -> list[Any]:
        made = [self._ask_tool(backend) for backend in self.backends]

        @tool(name="scoreboard", description="Return the results table, sorted by seconds (fastest first).")
        def scoreboard() -> str:
            return self.markdown()

        made.append(scoreboard)
        return made

    def _ask_tool(self, backend: Backend):
        def ask() -> str:
            row = self.ask(backend)
            if row.request.error:
                return f"{backend.title} failed: {row.request.error}"
            return f"{backend.title} answered {row.answer!r} in {row.request.e2e_s:.3f} s"

        ask.__doc__ = f"Ask {backend.title} the benchmark question; returns its answer and the time it took."
        return tool(name=tool_name(backend.name))(ask)

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def split_closing(answer: str) -> tuple[str, str]:
    """(table part, closing sentence): the last non-table line of the agent's answer."""
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    prose = [line for line in lines if not line.startswith("|")]
    return "\n".join(line for line in lines if line.startswith("|")), (prose[-1] if prose else "")


def named_backends(sentence: str, backends: list[Backend]) -> list[str]:
    """Backends the sentence names, in the order it names them (by name or title)."""
    lowered = sentence.lower()
    hits = []
    for backend in backends:
        positions = [lowered.find(term.lower()) for term in (backend.title, backend.name) if term]
        positions = [p for p in positions if p >= 0 and _starts_word(lowered, p)]
        if positions:
            hits.append((min(positions), backend.name))
    return [name for _, name in sorted(hits)]


def _starts_word(text: str, position: int) -> bool:
    before = text[position - 1] if position > 0 else " "
    return not before.isalnum()


def winner_check(sentence: str, table: list[ScoreRow], backends: list[Backend]) -> tuple[str | None, list[str], bool]:
    """The table's winner, the backends the sentence names (first named first), and whether it
    names another one first."""
    winner = next((row.backend for row in table if row.seconds is not None), None)
    named = named_backends(sentence, backends)
    return winner, named, bool(named) and winner is not None and named[0] != winner


def pick_agent(backends: list[Backend], wanted: str | None) -> Backend:
    by_name = {b.name: b for b in backends}
    if wanted:
        if wanted not in by_name:
            raise RunnerError(f"--agent {wanted!r} is not among the backends found: {', '.join(by_name)}")
        return by_name[wanted]
    # The default its serving row ranks highest (Bedrock, then the embedded model), else the first
    # tool-capable one.
    ranked = sorted((b for b in backends if b.supports.agent_default), key=lambda b: -b.supports.agent_default)
    if ranked:
        return ranked[0]
    tool_capable = [b for b in backends if b.supports_tools]
    if not tool_capable:
        raise RunnerError("no tool-capable backend to drive the agent; pass --agent NAME")
    return tool_capable[0]


def asks_measured(runs: list[OrchestratorRun]) -> bool:
    """An ask counts only when it was timed to a complete answer; an error in milliseconds is not one."""
    return any(ask.request.ok for run in runs for ask in run.asks)


def orchestrate_once(backends: list[Backend], agent_backend: Backend, run_number: int, args) -> OrchestratorRun:
    harness = Harness(backends, args.timeout)
    try:
        model = strands_model(agent_backend, max_tokens=args.max_tokens, timeout_s=args.timeout)
        limits = AgentLimits(max_model_calls=len(backends) + 4, max_tool_calls=2 * len(backends) + 2)
        result = run_agent(
            model, f"Question for every backend: {QUESTION}", tools=harness.tools(), system_prompt=SYSTEM, limits=limits
        )
        agent_run: AgentRun | AgentFailure = result
    except Exception as error:
        agent_run = AgentFailure(ok=False, error=agent_backend.explain(error))
    finally:
        harness.close()
    asked = {ask.request.backend for ask in harness.asks}
    table = harness.table()
    quoted_table, closing = split_closing(agent_run.answer)
    winner, named, different = winner_check(closing, table, backends)
    record = OrchestratorRun(
        run=run_number,
        agent_backend=agent_backend.name,
        agent=agent_run,
        table=table,
        table_markdown=harness.markdown(),
        asks=harness.asks,
        warm_ups=harness.warm_ups,
        never_asked=[b.name for b in backends if b.name not in asked],
        agent_table=quoted_table,
        closing_sentence=closing,
        table_winner=winner,
        sentence_names=named,
        sentence_names_different_winner=different,
    )
    console.print(
        f"run {run_number}: {len(harness.asks)} asks; never asked: {', '.join(record.never_asked) or 'none'}"
        + (f"  [red]{agent_run.error}[/red]" if agent_run.error else "")
    )
    return record
