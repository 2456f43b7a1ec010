"""`python -m runner.orchestrator` (demo 2): one agent asks every backend, code keeps score.

The agent (Bedrock by default; the embedded model without AWS) gets one `ask_<backend>` tool
per backend plus `scoreboard`. Each ask times its own request in code; the scoreboard sorts
in code. The evidence keeps the code's table and the agent's closing sentence apart, records
which backends the agent never asked, and flags a sentence that names a different winner.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from rich.console import Console
from rich.table import Table
from strands.tools.decorator import tool

from runner.agent_limits import AgentLimits
from runner.agent_run import run_agent
from runner.backends import Backend
from runner.errors import RunnerError, describe
from runner.models import strands_model
from runner.session import add_common_arguments, conclude, console, main_guard, run_session
from runner.timing import ChatRequest, RequestRecord, timed_client_for

QUESTION = "What is the capital of France? Answer in one word."
SYSTEM = (
    "You compare inference backends. Call every ask_ tool once with the question, then call scoreboard, "
    "quote its table exactly as returned, and finish with one sentence naming the fastest backend."
)


def tool_name(backend: str) -> str:
    return "ask_" + re.sub(r"[^A-Za-z0-9_]", "_", backend)[:56]


class Harness:
    """Holds the code's measurements; the agent only sees what the tools return."""

    def __init__(self, backends: list[Backend], timeout_s: float) -> None:
        self.backends = backends
        self.timeout_s = timeout_s
        self.rows: list[dict[str, Any]] = []
        self.clients: dict[str, Any] = {}

    def ask(self, backend: Backend, prompt: str) -> dict[str, Any]:
        record = RequestRecord(backend=backend.name, run=len(self.rows) + 1)
        try:
            client = self.clients.get(backend.name) or timed_client_for(backend, self.timeout_s)
            self.clients[backend.name] = client
            client.chat(ChatRequest(prompt=prompt or QUESTION, max_tokens=32), record)
        except Exception as error:
            record.error = describe(error)
        row = {
            "backend": backend.name,
            "title": backend.title,
            "answer": " ".join(record.text.split())[:60],
            "seconds": record.e2e_s,
            "tokens_per_s": record.tokens_per_s,
            "error": record.error,
        }
        self.rows.append(row)
        return row

    def table(self) -> list[dict[str, Any]]:
        """Sorted in code: answered rows by time, then failures; one row per backend (its last ask)."""
        latest = {row["backend"]: row for row in self.rows}
        return sorted(
            latest.values(), key=lambda r: (r["seconds"] is None or r["error"] is not None, r["seconds"] or 0)
        )

    def markdown(self) -> str:
        lines = ["| Backend | Answer | Seconds | Tokens/s |", "|---|---|---|---|"]
        for row in self.table():
            seconds = f"{row['seconds']:.3f}" if row["seconds"] is not None and not row["error"] else "-"
            rate = f"{row['tokens_per_s']:.1f}" if row["tokens_per_s"] else "-"
            answer = row["answer"] if not row["error"] else f"error: {row['error']}"
            lines.append(f"| {row['title']} | {answer} | {seconds} | {rate} |")
        return "\n".join(lines)

    def tools(self) -> list[Any]:
        made = []
        for backend in self.backends:
            made.append(self._ask_tool(backend))

        @tool(name="scoreboard", description="Return the results table, sorted by seconds (fastest first).")
        def scoreboard() -> str:
            return self.markdown()

        made.append(scoreboard)
        return made

    def _ask_tool(self, backend: Backend):
        def ask(prompt: str) -> str:
            row = self.ask(backend, prompt)
            if row["error"]:
                return f"{backend.title} failed: {row['error']}"
            return f"{backend.title} answered {row['answer']!r} in {row['seconds']:.3f} s"

        ask.__doc__ = f"Ask {backend.title} a question; returns its answer and the time it took.\n\nArgs:\n    prompt: the question"
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


def winner_check(sentence: str, table: list[dict[str, Any]], backends: list[Backend]) -> dict[str, Any]:
    winner = next((row["backend"] for row in table if not row["error"] and row["seconds"] is not None), None)
    named = named_backends(sentence, backends)
    return {
        "table_winner": winner,
        "sentence_names": named,
        "sentence_names_different_winner": bool(named) and winner is not None and named[0] != winner,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.orchestrator", description=__doc__.splitlines()[0])
    parser.add_argument("--agent", help="backend whose model drives the agent (default: bedrock, else local)")
    parser.add_argument("--runs", type=int, default=1, help="orchestrator runs (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=512, help="per agent model call (default: %(default)s)")
    add_common_arguments(parser)
    return parser


def pick_agent(backends: list[Backend], wanted: str | None) -> Backend:
    by_name = {b.name: b for b in backends}
    if wanted:
        if wanted not in by_name:
            raise RunnerError(f"--agent {wanted!r} is not among the backends found: {', '.join(by_name)}")
        return by_name[wanted]
    for name in ("bedrock", "local"):
        if name in by_name:
            return by_name[name]
    tool_capable = [b for b in backends if b.supports_tools]
    if not tool_capable:
        raise RunnerError("no tool-capable backend to drive the agent; pass --agent NAME")
    return tool_capable[0]


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    interrupted = False
    with run_session("orchestrator", args, {"question": QUESTION, "runs": args.runs}) as (discovery, evidence):
        agent_backend = pick_agent(discovery.backends, args.agent)
        evidence.data["config"]["agent_backend"] = agent_backend.name
        try:
            for run_number in range(1, args.runs + 1):
                evidence.add_record(orchestrate_once(discovery.backends, agent_backend, run_number, args))
        except KeyboardInterrupt:
            interrupted = True
        measured = any(row["seconds"] is not None for r in evidence.data["records"] for row in r["table"])
        return conclude(evidence, interrupted=interrupted, measured=measured)


def orchestrate_once(backends: list[Backend], agent_backend: Backend, run_number: int, args) -> dict[str, Any]:
    harness = Harness(backends, args.timeout)
    try:
        model = strands_model(agent_backend, max_tokens=args.max_tokens, timeout_s=args.timeout)
        limits = AgentLimits(max_model_calls=len(backends) + 4, max_tool_calls=2 * len(backends) + 2)
        result = run_agent(
            model, f"Question for every backend: {QUESTION}", tools=harness.tools(), system_prompt=SYSTEM, limits=limits
        )
        agent_run = result.to_json()
    except Exception as error:
        agent_run = {"ok": False, "error": describe(error), "answer": "", "tool_calls": []}
    finally:
        harness.close()
    asked = {row["backend"] for row in harness.rows}
    table = harness.table()
    quoted_table, closing = split_closing(agent_run.get("answer", ""))
    record = {
        "run": run_number,
        "agent_backend": agent_backend.name,
        "agent": agent_run,
        "table": table,
        "table_markdown": harness.markdown(),
        "asks": harness.rows,
        "never_asked": [b.name for b in backends if b.name not in asked],
        "agent_table": quoted_table,
        "closing_sentence": closing,
        **winner_check(closing, table, backends),
    }
    console.print(
        f"run {run_number}: {len(harness.rows)} asks; never asked: {', '.join(record['never_asked']) or 'none'}"
        + (f"  [red]{agent_run.get('error')}[/red]" if agent_run.get("error") else "")
    )
    return record


def orchestrator_report(evidence: dict[str, Any], out: Console) -> None:
    for record in evidence["records"]:
        table = Table(
            title=f"orchestrator run {record['run']} (agent: {record['agent_backend']}); table computed in code"
        )
        for column in ("backend", "answer", "seconds", "tokens/s", "error"):
            table.add_column(column)
        for row in record["table"]:
            table.add_row(
                row["backend"],
                row["answer"],
                f"{row['seconds']:.3f}" if row["seconds"] is not None and not row["error"] else "-",
                f"{row['tokens_per_s']:.1f}" if row["tokens_per_s"] else "-",
                row["error"] or "",
            )
        out.print(table)
        out.print(f"agent's closing sentence: {record['closing_sentence'] or '(none)'}")
        out.print(
            f"harness: {len(record['asks'])} backend calls; not asked by the agent: {', '.join(record['never_asked']) or 'none'}"
        )
        if record["sentence_names_different_winner"]:
            out.print(
                f"[yellow]flag: the sentence names {record['sentence_names'][0]} first; the table's winner is {record['table_winner']}[/yellow]"
            )
        if record["agent"].get("error"):
            out.print(f"[red]agent error: {record['agent']['error']}[/red]")


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
